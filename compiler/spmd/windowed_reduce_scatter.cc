// Windowed einsum, reduce-scatter form (gspmd-algorithms.md 3.5): both
// operands contracting-sharded p ways, the result scattered p ways on a free
// dim e (t = ceil(E/p) per block). Instead of the full local partial result
// and a reduce-scatter, device at group position q computes only one block
// per step and passes the running sum on: at step i it adds its partial of
// block c_i(q) = (q + i + 1) mod p to the sum it received from position
// q + 1 (which held block c_{i-1}(q + 1) = c_i(q)). After p - 1 permutes
// (the reduce-scatter's bytes) position q holds block c_{p-1}(q) = q, fully
// summed, which is its tile of the target. A block is the local dot with
// the operand carrying e's label dynamic-sliced to [c*t, c*t + t) (padded
// to p*t with zeros first).
#include "compiler/spmd/dot_handler.h"
#include "compiler/spmd/halo_exchange.h"

namespace podsim::compiler {

InstrId emit_windowed_reduce_scatter(SpmdContext& context, const WindowedReduceScatter& w) {
  auto& b = context.builder();
  const int64_t p = w.groups.group_size(context.num_devices());
  const int64_t extent = w.base_shape.dim(static_cast<int>(w.out_dim));
  const int64_t t = ceil_div(extent, p);

  InstrId operands[2] = {w.lhs, w.rhs};
  InstrId& sliced = operands[w.sliced_side];
  const Shape sliced_shape = b.shape(sliced);
  if (sliced_shape.dim(static_cast<int>(w.sliced_dim)) != p * t) {
    std::vector<PadDim> padding(static_cast<size_t>(sliced_shape.rank()));
    padding[static_cast<size_t>(w.sliced_dim)].high = p * t - sliced_shape.dim(static_cast<int>(w.sliced_dim));
    sliced = b.pad(sliced, context.zero(sliced_shape.dtype()), std::move(padding));
  }
  // Group position q: the tile index of out_dim under the target.
  const InstrId position = per_tile_scalar(context, w.target, w.out_dim, [](int64_t j) { return j; });

  // Partial of block c: local dot with the sliced operand cut at c*t.
  auto block = [&](ComputationBuilder& builder, InstrId lhs, InstrId rhs, InstrId c) {
    InstrId ops[2] = {lhs, rhs};
    const Shape shape = builder.shape(ops[w.sliced_side]);
    std::vector<InstrId> starts(static_cast<size_t>(shape.rank()), builder.scalar_constant(DType::kS32, 0));
    starts[static_cast<size_t>(w.sliced_dim)] =
        builder.binary(Opcode::kMultiply, c, builder.scalar_constant(DType::kS32, static_cast<double>(t)));
    std::vector<int64_t> sizes = shape.dims();
    sizes[static_cast<size_t>(w.sliced_dim)] = t;
    ops[w.sliced_side] = builder.dynamic_slice(ops[w.sliced_side], std::move(starts), std::move(sizes));
    Instruction copy = *w.original;
    copy.name.clear();
    copy.sharding.reset();
    copy.operands = {ops[0], ops[1]};
    return builder.add_inferred(std::move(copy));
  };
  auto block_index = [&](ComputationBuilder& builder, InstrId q, InstrId i) {
    InstrId shifted = builder.binary(Opcode::kAdd, builder.binary(Opcode::kAdd, q, i), builder.scalar_constant(DType::kS32, 1));
    return builder.binary(Opcode::kRemainder, shifted, builder.scalar_constant(DType::kS32, static_cast<double>(p)));
  };

  // Step 0 before the loop, steps 1 .. p-1 inside: permute the sum, add.
  InstrId sum = block(b, operands[0], operands[1], block_index(b, position, b.scalar_constant(DType::kS32, 0)));
  const auto pairs = ring_pairs(context, w.groups);
  enum : size_t { kLhs = 0, kRhs = 1, kSum = 2, kPosition = 3 };
  const std::vector<InstrId> out = emit_counted_loop(
      context, {operands[0], operands[1], sum, position}, p - 1,
      [&](ComputationBuilder& body, const std::vector<InstrId>& e, InstrId next) {
        InstrId received = body.collective_permute(e[kSum], pairs);
        InstrId added = body.binary(Opcode::kAdd, received, block(body, e[kLhs], e[kRhs], block_index(body, e[kPosition], next)));
        return std::vector<InstrId>{e[kLhs], e[kRhs], added, e[kPosition]};
      });
  return out[kSum];
}

}  // namespace podsim::compiler
