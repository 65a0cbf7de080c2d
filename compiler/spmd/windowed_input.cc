// Windowed input requests and their halo exchanges; formulas in windowed_input.h.
#include "compiler/spmd/windowed_input.h"

#include <algorithm>

namespace podsim::compiler {

std::optional<std::vector<WindowRequest>> plan_windowed_input(const PartitionedValue& operand,
                                                              std::span<const WindowedDim> dims,
                                                              InstrId fill) {
  std::vector<WindowRequest> requests;
  for (const WindowedDim& wd : dims) {
    const int64_t n = tile_count(operand.sharding, wd.operand_dim);
    if (n == 1) continue;
    const WindowDim& w = wd.window;
    if (w.base_dilation != 1) return std::nullopt;
    const int64_t os = ceil_div(wd.out_extent, n);
    const int64_t reach = (w.size - 1) * w.window_dilation + 1;  // dilated window extent
    WindowRequest r;
    r.dim = wd.operand_dim;
    r.width = (os - 1) * w.stride + reach;
    r.fill = fill;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t start = j * os * w.stride - w.pad_low;
      // Outputs of tile j that exist: the rest is the result's padding.
      const int64_t valid = std::clamp<int64_t>(wd.out_extent - j * os, 0, os);
      r.start.push_back(start);
      r.needed_limit.push_back(valid > 0 ? start + (valid - 1) * w.stride + reach : start);
    }
    if (!plan_halo(operand, r)) return std::nullopt;
    requests.push_back(std::move(r));
  }
  return requests;
}

InstrId reshard_as_windowed_input(SpmdContext& context, const PartitionedValue& operand,
                                  std::span<const WindowRequest> requests) {
  InstrId local = operand.id;
  for (const WindowRequest& r : requests) local = exchange_halo(context, operand, local, r);
  return local;
}

}  // namespace podsim::compiler
