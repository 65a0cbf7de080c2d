// Windowed input resharding (docs/reference/gspmd.md#windowed-input-resharding
// ReshardAsWindowedInput, simplified to no base dilation): a window op (convolution on its spatial
// dims, reduce-window) whose output is tiled n ways on a dim gives tile j the
// output windows [j*os, (j+1)*os), os = ceil(O/n). They read the input range
//   start(j) = j*os*stride - pad_low,
//   width    = (os-1)*stride + (size-1)*window_dilation + 1,
// which exchange_halo (halo_exchange.h) assembles from neighbour shards,
// filling positions outside [0, D) (the op's padding and uneven tails) with
// the op's pad value. The local op then runs with no padding on that dim and
// yields exactly os outputs there.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "compiler/spmd/halo_exchange.h"

namespace podsim::compiler {

struct WindowedDim {
  int64_t operand_dim = 0;  // dim of the (tiled) operand
  int64_t out_extent = 0;   // logical output extent O of that dim
  WindowDim window;
};

// Requests for every dim of `dims` tiled in `operand`; nullopt when one needs
// base dilation or a halo wider than the cap of plan_halo.
std::optional<std::vector<WindowRequest>> plan_windowed_input(const PartitionedValue& operand,
                                                              std::span<const WindowedDim> dims,
                                                              InstrId fill);

// Exchanges the halos of `requests` one dim after another; returns the local
// input of the windowed op.
InstrId reshard_as_windowed_input(SpmdContext& context, const PartitionedValue& operand,
                                  std::span<const WindowRequest> requests);

}  // namespace podsim::compiler
