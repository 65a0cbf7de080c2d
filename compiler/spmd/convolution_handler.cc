// Convolution handler (docs/reference/gspmd.md#convolution):
//  * output tiled on spatial dims: the input (lhs) takes the output's tiling
//    of batch and spatial dims, the kernel (rhs) that of the output feature
//    dim; halos of the input are exchanged with the neighbours (zero fill,
//    which is the convolution's padding value) and the local convolution runs
//    without padding on those dims (windowed_input.h);
//  * otherwise the spatial dims stay whole and batch / input feature /
//    output feature are dot dims (lhs-only / contracting / rhs-only), so the
//    dot strategies (dot_strategies.h) choose.
// Feature-grouped convolutions shard the group dim like a batch dim (tile
// counts dividing the group count); batch-grouped ones, grouped ones with a
// spatially tiled output and base dilation on a tiled spatial dim take the
// default action.
#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/dot_handler.h"
#include "compiler/spmd/windowed_input.h"

namespace podsim::compiler {
namespace {

std::optional<PartitionedValue> spatially_tiled_convolution(SpmdContext& context,
                                                            const HandlerInput& in) {
  const ConvDims& c = in.original.attrs.conv;
  const PartitionedValue& lhs = in.operands[0];
  const PartitionedValue& rhs = in.operands[1];
  DimCorrespondence to_lhs{{c.output_batch}, {c.input_batch}, lhs.base_shape.rank()};
  for (size_t i = 0; i < c.output_spatial.size(); ++i) {
    to_lhs.source_dims.push_back(c.output_spatial[i]);
    to_lhs.target_dims.push_back(c.input_spatial[i]);
  }
  const Sharding lhs_needed = propagate_along_dims_and_replicate_others(in.target, to_lhs);
  const Sharding rhs_needed = propagate_along_dims_and_replicate_others(
      in.target,
      DimCorrespondence{{c.output_feature}, {c.kernel_output_feature}, rhs.base_shape.rank()});
  // Plan on a value carrying the needed sharding (ids are not read by planning).
  PartitionedValue planned{lhs.id, lhs.base_shape, lhs_needed};
  std::vector<WindowedDim> dims;
  for (size_t i = 0; i < c.input_spatial.size(); ++i)
    dims.push_back(WindowedDim{c.input_spatial[i],
                               in.original.shape.dim(static_cast<int>(c.output_spatial[i])),
                               in.original.attrs.window[i]});
  auto requests = plan_windowed_input(planned, dims, context.zero(lhs.base_shape.dtype()));
  if (!requests) return std::nullopt;

  const PartitionedValue lhs_local = reshard(context, lhs, lhs_needed);
  const PartitionedValue rhs_local = reshard(context, rhs, rhs_needed);
  InstrId input = reshard_as_windowed_input(context, lhs_local, *requests);
  Instruction local = in.original;
  for (size_t i = 0; i < c.input_spatial.size(); ++i) {
    if (tile_count(lhs_needed, c.input_spatial[i]) == 1) continue;
    local.attrs.window[i].pad_low = 0;
    local.attrs.window[i].pad_high = 0;
  }
  InstrId result = clone_with_operands(context, local, {input, rhs_local.id});
  return PartitionedValue{result, in.original.shape, in.target};
}

}  // namespace

PartitionedValue handle_convolution(SpmdContext& context, const HandlerInput& in) {
  const Instruction& conv = in.original;
  if (in.operands.size() != 2 || conv.attrs.batch_group_count != 1)
    return handle_default(context, in);
  bool spatial_output = false;
  for (int64_t d : conv.attrs.conv.output_spatial) spatial_output |= tile_count(in.target, d) > 1;
  if (spatial_output) {
    if (conv.attrs.feature_group_count != 1) return handle_default(context, in);
    if (auto result = spatially_tiled_convolution(context, in)) return *result;
    return handle_default(context, in);
  }
  return partition_einsum(
      context, in,
      einsum_of_convolution(conv, in.operands[0].base_shape, in.operands[1].base_shape));
}

}  // namespace podsim::compiler
