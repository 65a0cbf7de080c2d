// gather and scatter (docs/reference/gspmd.md#gather-and-scatter).
// gather:
//   trivially-sliced operand dims tiled (an embedding table [V,M] tiled on V,
//     slice size 1): indices replicated, clamped globally to [0, D - size] as
//     XLA does, shifted by the tile's offset; rows whose index falls outside
//     this tile are zeroed after the local gather; the partial results are
//     summed over the V tile groups (reduce_scatter_partial: a
//     reduce-scatter when the target tiles another dim over those groups).
//   otherwise (operand pass-through, index pass-through): one output sharding
//     is chosen (the target, else the operand's pass-through tiling mapped to
//     the output, else the indices' batch tiling), restricted to output dims
//     a local gather can produce; operand and indices take the matching
//     shardings and the local gather yields the result tile.
// scatter:
//   index pass-through (indices tiled on batch dims, combiner add/multiply/
//     max/min): each device scatters its updates into a buffer of the
//     combiner's identity (padded indices set to -1 so they are skipped), the
//     buffers are combined over the index tile groups and then with the
//     operand: scatter(op, i, u) = op (+) scatter(identity, i, u).
//   otherwise the operand keeps the target's tiling of pass-through (whole
//     window) and trivially-sliced dims; indices are replicated and shifted
//     into the tile (globally out-of-range ones set to -1: skipped, as XLA
//     skips them), updates replicated on scatter dims: purely local.
// The dim maps (pass-through, index batch dims) are compiler/ir/op_dims.h's.
#include <algorithm>
#include <limits>

#include "compiler/ir/op_dims.h"
#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {
namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Index tensor split into its components along index_vector_dim (implicit
// trailing dim when ivd == rank) and put back together.
struct IndexComponents {
  int64_t vector_dim = 0;
  bool implicit = false;
  std::vector<InstrId> components;  // each of the batch shape with the vector dim kept as 1
};

IndexComponents split_indices(SpmdContext& context, InstrId indices, int64_t vector_dim,
                              int64_t count) {
  auto& b = context.builder();
  IndexComponents c;
  c.vector_dim = vector_dim;
  const Shape shape = b.shape(indices);
  c.implicit = vector_dim == shape.rank();
  if (c.implicit) {
    c.components.push_back(indices);
    return c;
  }
  for (int64_t k = 0; k < count; ++k) {
    std::vector<SliceDim> slice;
    for (int d = 0; d < shape.rank(); ++d)
      slice.push_back(d == vector_dim ? SliceDim{k, k + 1, 1} : SliceDim{0, shape.dim(d), 1});
    c.components.push_back(b.slice(indices, std::move(slice)));
  }
  return c;
}

InstrId join_indices(SpmdContext& context, const IndexComponents& c) {
  if (c.implicit || c.components.size() == 1) return c.components[0];
  return context.builder().concatenate(c.components, c.vector_dim);
}

// Drops the kept vector dim (extent 1) of a component: the batch shape.
InstrId batch_shaped(SpmdContext& context, const IndexComponents& c, InstrId x) {
  if (c.implicit) return x;
  std::vector<int64_t> dims = context.builder().shape(x).dims();
  dims.erase(dims.begin() + c.vector_dim);
  return context.builder().reshape(x, dims);
}

InstrId splat(SpmdContext& context, double value, InstrId like) {
  auto& b = context.builder();
  const Shape shape = b.shape(like);
  return b.broadcast(b.scalar_constant(shape.dtype(), value), shape.dims(), {});
}

InstrId in_range(SpmdContext& context, InstrId x, double lo, double hi) {
  auto& b = context.builder();
  return b.binary(Opcode::kAnd, b.compare(x, splat(context, lo, x), ComparisonDirection::kGe),
                  b.compare(x, splat(context, hi, x), ComparisonDirection::kLe));
}

InstrId as_s32(SpmdContext& context, InstrId x) {
  auto& b = context.builder();
  return b.shape(x).dtype() == DType::kS32 ? x : b.convert(x, DType::kS32);
}

// ---- gather ----

std::vector<int64_t> local_slice_sizes(const std::vector<int64_t>& sizes,
                                       const std::vector<int64_t>& passthrough,
                                       const Sharding& operand_sharding, const Shape& local) {
  std::vector<int64_t> out = sizes;
  for (int64_t d : passthrough)
    if (tile_count(operand_sharding, d) > 1)
      out[static_cast<size_t>(d)] = local.dim(static_cast<int>(d));
  return out;
}

PartitionedValue gather_trivial_slices(SpmdContext& context, const HandlerInput& in,
                                       const GatherDimMap& l,
                                       const std::vector<int64_t>& trivial_tiled) {
  auto& b = context.builder();
  const GatherDims& g = in.original.attrs.gather;
  const auto& sizes = in.original.attrs.gather_slice_sizes;
  const PartitionedValue& operand = in.operands[0];
  const Shape& out = in.original.shape;
  std::vector<int64_t> keep = l.operand_passthrough;
  keep.insert(keep.end(), trivial_tiled.begin(), trivial_tiled.end());
  const Sharding layout = partially_replicate_on_all_dims_except(operand.sharding, keep);
  PartitionedValue table = reshard(context, operand, layout);
  const Shape table_local = context.local_shape(table.id);
  InstrId indices = as_s32(context, reshard(context, in.operands[1], Sharding::replicated()).id);
  IndexComponents c = split_indices(context, indices, g.index_vector_dim,
                                    static_cast<int64_t>(g.start_index_map.size()));
  InstrId valid = kNoId;
  for (size_t k = 0; k < g.start_index_map.size(); ++k) {
    const int64_t d = g.start_index_map[k];
    if (!contains(trivial_tiled, d)) continue;
    const int64_t dim_size = operand.base_shape.dim(static_cast<int>(d));
    InstrId& x = c.components[k];
    x = b.clamp(context.zero(DType::kS32), x,
                b.scalar_constant(DType::kS32,
                                  static_cast<double>(dim_size - sizes[static_cast<size_t>(d)])));
    const Shape shape = b.shape(x);
    x = b.binary(Opcode::kSubtract, x,
                 b.broadcast(context.partition_offset(layout, operand.base_shape.dims(), d),
                             shape.dims(), {}));
    InstrId ok =
        in_range(context, x, 0, static_cast<double>(table_local.dim(static_cast<int>(d)) - 1));
    valid = valid == kNoId ? ok : b.binary(Opcode::kAnd, valid, ok);
  }
  InstrId gathered = b.gather(table.id, join_indices(context, c), g,
                              local_slice_sizes(sizes, l.operand_passthrough, layout, table_local));
  const Shape local = b.shape(gathered);
  InstrId mask = b.broadcast(batch_shaped(context, c, valid), local.dims(), l.out_batch);
  InstrId masked =
      b.select(mask, gathered, b.broadcast(context.zero(out.dtype()), local.dims(), {}));
  PartialValue partial;
  partial.id = masked;
  partial.base_shape = out;
  partial.sharding = propagate_along_dims_and_replicate_others(
      layout, DimCorrespondence{l.operand_passthrough, l.out_passthrough, out.rank()});
  partial.groups = context.groups_along_tile_dims(layout, trivial_tiled);
  partial.reducer = context.scalar_reducer(Opcode::kAdd, out.dtype());
  return reduce_scatter_partial(context, partial, in.target);
}

PartitionedValue gather_passthrough(SpmdContext& context, const HandlerInput& in,
                                    const GatherDimMap& l) {
  const GatherDims& g = in.original.attrs.gather;
  const PartitionedValue& operand = in.operands[0];
  const PartitionedValue& indices = in.operands[1];
  const Shape& out = in.original.shape;
  std::vector<int64_t> supported = l.out_batch;
  supported.insert(supported.end(), l.out_passthrough.begin(), l.out_passthrough.end());
  const Sharding candidates[] = {
      in.target,
      propagate_along_dims_and_replicate_others(
          operand.sharding,
          DimCorrespondence{l.operand_passthrough, l.out_passthrough, out.rank()}),
      propagate_along_dims_and_replicate_others(
          indices.sharding, DimCorrespondence{l.index_batch, l.out_batch, out.rank()}),
  };
  Sharding chosen = Sharding::replicated();
  for (const Sharding& candidate : candidates) {
    Sharding restricted = partially_replicate_on_all_dims_except(candidate, supported);
    if (!restricted.is_replicated()) {
      chosen = restricted;
      break;
    }
  }
  PartitionedValue table = reshard(
      context, operand,
      propagate_along_dims_and_replicate_others(
          chosen,
          DimCorrespondence{l.out_passthrough, l.operand_passthrough, operand.base_shape.rank()}));
  PartitionedValue index = reshard(
      context, indices,
      propagate_along_dims_and_replicate_others(
          chosen, DimCorrespondence{l.out_batch, l.index_batch, indices.base_shape.rank()}));
  InstrId gathered = context.builder().gather(
      table.id, index.id, g,
      local_slice_sizes(in.original.attrs.gather_slice_sizes, l.operand_passthrough, table.sharding,
                        context.local_shape(table.id)));
  return reshard(context, PartitionedValue{gathered, out, chosen}, in.target);
}

// ---- scatter ----

struct Combiner {
  Opcode op = Opcode::kAdd;
  double identity = 0;
};

// add / multiply / maximum / minimum of the two parameters (max/min on floats).
std::optional<Combiner> reducible_combiner(const Module& module, CompId to_apply, DType dtype) {
  const Computation& c = module.computation(to_apply);
  const Instruction& root = c.root_instr();
  if (root.operand_count() != 2) return std::nullopt;
  for (InstrId operand : root.operands)
    if (c.instr(operand).opcode != Opcode::kParameter) return std::nullopt;
  const bool is_float =
      dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16 || dtype == DType::kF64;
  const double inf = std::numeric_limits<double>::infinity();
  switch (root.opcode) {
    case Opcode::kAdd:
      return Combiner{Opcode::kAdd, 0};
    case Opcode::kMultiply:
      return Combiner{Opcode::kMultiply, 1};
    case Opcode::kMaximum:
      return is_float ? std::optional<Combiner>(Combiner{Opcode::kMaximum, -inf}) : std::nullopt;
    case Opcode::kMinimum:
      return is_float ? std::optional<Combiner>(Combiner{Opcode::kMinimum, inf}) : std::nullopt;
    default:
      return std::nullopt;
  }
}

PartitionedValue scatter_index_passthrough(SpmdContext& context, const HandlerInput& in,
                                           const ScatterDimMap& l, const Combiner& combiner) {
  auto& b = context.builder();
  const ScatterDims& s = in.original.attrs.scatter;
  const Shape& out = in.original.shape;
  const PartitionedValue& indices = in.operands[1];
  const Sharding index_sharding =
      partially_replicate_on_all_dims_except(indices.sharding, l.index_batch);
  PartitionedValue index = reshard(context, indices, index_sharding);
  PartitionedValue update = reshard(
      context, in.operands[2],
      propagate_along_dims_and_replicate_others(
          index_sharding,
          DimCorrespondence{l.index_batch, l.update_scatter, in.operands[2].base_shape.rank()}));
  PartitionedValue index32{as_s32(context, index.id), indices.base_shape, index_sharding};
  std::vector<int64_t> tiled_batch;
  for (int64_t d : l.index_batch)
    if (tile_count(index_sharding, d) > 1) tiled_batch.push_back(d);
  InstrId masked = context.mask_padding(index32, tiled_batch, b.scalar_constant(DType::kS32, -1));
  InstrId buffer = b.broadcast(b.scalar_constant(out.dtype(), combiner.identity), out.dims(), {});
  InstrId partial = b.scatter(buffer, masked, update.id, s, in.original.to_apply());
  PartialValue p{partial, out, Sharding::replicated(),
                 context.groups_along_tile_dims(index_sharding, tiled_batch),
                 in.original.to_apply()};
  PartitionedValue combined = reduce_scatter_partial(context, p, in.target);
  PartitionedValue operand = reshard(context, in.operands[0], in.target);
  return PartitionedValue{b.binary(combiner.op, operand.id, combined.id), out, in.target};
}

PartitionedValue scatter_operand_owned(SpmdContext& context, const HandlerInput& in,
                                       const ScatterDimMap& l) {
  auto& b = context.builder();
  const ScatterDims& s = in.original.attrs.scatter;
  const Shape& out = in.original.shape;
  std::vector<int64_t> keep = l.operand_passthrough;
  keep.insert(keep.end(), l.unit_window.begin(), l.unit_window.end());
  const Sharding layout = partially_replicate_on_all_dims_except(in.target, keep);
  PartitionedValue operand = reshard(context, in.operands[0], layout);
  PartitionedValue update =
      reshard(context, in.operands[2],
              propagate_along_dims_and_replicate_others(
                  layout, DimCorrespondence{l.operand_passthrough, l.update_passthrough,
                                            in.operands[2].base_shape.rank()}));
  InstrId indices = as_s32(context, reshard(context, in.operands[1], Sharding::replicated()).id);
  IndexComponents c = split_indices(context, indices, s.index_vector_dim,
                                    static_cast<int64_t>(s.scatter_dims_to_operand_dims.size()));
  for (size_t k = 0; k < s.scatter_dims_to_operand_dims.size(); ++k) {
    const int64_t d = s.scatter_dims_to_operand_dims[k];
    if (!contains(l.unit_window, d) || tile_count(layout, d) == 1) continue;
    InstrId& x = c.components[k];
    const Shape shape = b.shape(x);
    // Globally valid starts are [0, D - 1] (window extent 1); others must stay skipped.
    InstrId valid = in_range(context, x, 0, static_cast<double>(out.dim(static_cast<int>(d)) - 1));
    InstrId shifted =
        b.binary(Opcode::kSubtract, x,
                 b.broadcast(context.partition_offset(layout, out.dims(), d), shape.dims(), {}));
    x = b.select(valid, shifted, splat(context, -1, x));
  }
  InstrId result =
      b.scatter(operand.id, join_indices(context, c), update.id, s, in.original.to_apply());
  return reshard(context, PartitionedValue{result, out, layout}, in.target);
}

}  // namespace

PartitionedValue handle_gather(SpmdContext& context, const HandlerInput& in) {
  const GatherDims& g = in.original.attrs.gather;
  if (!g.operand_batching_dims.empty() || in.operands.size() != 2)
    return handle_default(context, in);
  const GatherDimMap l =
      gather_dim_map(in.original, in.operands[0].base_shape, in.operands[1].base_shape);
  std::vector<int64_t> trivial_tiled;
  for (int64_t d : g.start_index_map)
    if (in.original.attrs.gather_slice_sizes[static_cast<size_t>(d)] == 1 &&
        tile_count(in.operands[0].sharding, d) > 1 && !contains(trivial_tiled, d))
      trivial_tiled.push_back(d);
  if (!trivial_tiled.empty()) return gather_trivial_slices(context, in, l, trivial_tiled);
  return gather_passthrough(context, in, l);
}

PartitionedValue handle_scatter(SpmdContext& context, const HandlerInput& in) {
  const ScatterDims& s = in.original.attrs.scatter;
  if (!s.input_batching_dims.empty() || in.operands.size() != 3 || in.original.shape.is_tuple())
    return handle_default(context, in);
  const ScatterDimMap l = scatter_dim_map(in.original, in.operands[0].base_shape,
                                          in.operands[1].base_shape, in.operands[2].base_shape);
  bool indices_tiled = false;
  for (int64_t d : l.index_batch) indices_tiled |= tile_count(in.operands[1].sharding, d) > 1;
  if (indices_tiled) {
    if (auto combiner =
            reducible_combiner(context.module(), in.original.to_apply(), in.original.shape.dtype()))
      return scatter_index_passthrough(context, in, l, *combiner);
  }
  return scatter_operand_owned(context, in, l);
}

}  // namespace podsim::compiler
