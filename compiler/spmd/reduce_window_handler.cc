// Reduce-window handler (docs/reference/gspmd.md#per-op-partitioning, #windowed-input-resharding):
// the operand takes the result's sharding; on every tiled dim with a real window (size, stride or
// padding) the input halos are exchanged with the neighbours, positions outside the input filled
// with the init value (the padding value of reduce-window), and the local reduce-window runs
// without padding there. Dims with a trivial window stay local. Base dilation on a tiled dim, or
// halos beyond the cap, take the default action.
#include "compiler/spmd/spmd_handlers.h"
#include "compiler/spmd/windowed_input.h"

namespace podsim::compiler {
namespace {

bool is_trivial(const WindowDim& w) {
  return w.size == 1 && w.stride == 1 && w.pad_low == 0 && w.pad_high == 0 && w.base_dilation == 1;
}

}  // namespace

PartitionedValue handle_reduce_window(SpmdContext& context, const HandlerInput& in) {
  if (in.operands.size() != 2 || in.original.shape.is_tuple()) return handle_default(context, in);
  const PartitionedValue init = reshard(context, in.operands[1], Sharding::replicated());
  const auto& window = in.original.attrs.window;
  std::vector<WindowedDim> dims;
  for (size_t d = 0; d < window.size(); ++d)
    if (!is_trivial(window[d]))
      dims.push_back(WindowedDim{static_cast<int64_t>(d),
                                 in.original.shape.dim(static_cast<int>(d)), window[d]});
  PartitionedValue planned{in.operands[0].id, in.operands[0].base_shape, in.target};
  auto requests = plan_windowed_input(planned, dims, init.id);
  if (!requests) return handle_default(context, in);

  const PartitionedValue operand = reshard(context, in.operands[0], in.target);
  InstrId input = reshard_as_windowed_input(context, operand, *requests);
  Instruction local = in.original;
  for (const WindowRequest& r : *requests) {
    local.attrs.window[static_cast<size_t>(r.dim)].pad_low = 0;
    local.attrs.window[static_cast<size_t>(r.dim)].pad_high = 0;
  }
  InstrId result = clone_with_operands(context, local, {input, init.id});
  return PartitionedValue{result, in.original.shape, in.target};
}

}  // namespace podsim::compiler
