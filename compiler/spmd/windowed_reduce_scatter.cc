// Windowed einsum, reduce-scatter form (docs/reference/gspmd.md#windowed-einsum): both operands
// contracting-sharded p ways, the result scattered p ways on a free dim e. Instead of the full
// partial result and a reduce-scatter, each step computes one block and adds it to the running
// sum received from the neighbour; after p - 1 permutes position q holds block q fully summed.
// Block schedule, overlap and the bidirectional form:
// docs/compiler.md#windowed-einsum-reduce-scatter-form
#include "compiler/spmd/dot_handler.h"
#include "compiler/spmd/halo_exchange.h"

namespace podsim::compiler {
namespace {

// Running sums of one part of the blocks.
struct SumStream {
  int64_t offset = 0;     // start inside a block along e
  int64_t extent = 0;     // its extent along e
  int64_t direction = 1;  // +1: block (q + i + 1) mod p; -1: (q - i - 1) mod p
};

}  // namespace

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
    padding[static_cast<size_t>(w.sliced_dim)].high =
        p * t - sliced_shape.dim(static_cast<int>(w.sliced_dim));
    sliced = b.pad(sliced, context.zero(sliced_shape.dtype()), std::move(padding));
  }
  // Group position q: the tile index of out_dim under the target.
  const InstrId position =
      per_tile_scalar(context, w.target, w.out_dim, [](int64_t j) { return j; });

  std::vector<SumStream> streams;
  if (w.bidirectional && t >= 2) {
    const int64_t h = ceil_div(t, 2);
    streams = {SumStream{0, h, +1}, SumStream{h, t - h, -1}};
  } else {
    streams = {SumStream{0, t, +1}};
  }
  const size_t n = streams.size();

  // Partial of a stream's part of block c: local dot with the sliced operand
  // cut at c*t + offset.
  auto block = [&](ComputationBuilder& builder, InstrId lhs, InstrId rhs, InstrId c,
                   const SumStream& stream) {
    InstrId ops[2] = {lhs, rhs};
    const Shape shape = builder.shape(ops[w.sliced_side]);
    std::vector<InstrId> starts(static_cast<size_t>(shape.rank()),
                                builder.scalar_constant(DType::kS32, 0));
    InstrId start = builder.binary(Opcode::kMultiply, c,
                                   builder.scalar_constant(DType::kS32, static_cast<double>(t)));
    if (stream.offset != 0)
      start =
          builder.binary(Opcode::kAdd, start,
                         builder.scalar_constant(DType::kS32, static_cast<double>(stream.offset)));
    starts[static_cast<size_t>(w.sliced_dim)] = start;
    std::vector<int64_t> sizes = shape.dims();
    sizes[static_cast<size_t>(w.sliced_dim)] = stream.extent;
    ops[w.sliced_side] =
        builder.dynamic_slice(ops[w.sliced_side], std::move(starts), std::move(sizes));
    Instruction copy = *w.original;
    copy.name.clear();
    copy.sharding.reset();
    copy.operands = {ops[0], ops[1]};
    return builder.add_inferred(std::move(copy));
  };
  // Block of step i: (q + i + 1) mod p, or (q - i - 1) mod p = (q + p - 1 - i)
  // mod p (non-negative for 0 <= i < p).
  auto block_index = [&](ComputationBuilder& builder, InstrId q, InstrId i, int64_t direction) {
    const InstrId one = builder.scalar_constant(DType::kS32, 1);
    const InstrId ring = builder.scalar_constant(DType::kS32, static_cast<double>(p));
    InstrId moved =
        direction > 0
            ? builder.binary(Opcode::kAdd, builder.binary(Opcode::kAdd, q, i), one)
            : builder.binary(
                  Opcode::kSubtract,
                  builder.binary(Opcode::kSubtract, builder.binary(Opcode::kAdd, q, ring), one), i);
    return builder.binary(Opcode::kRemainder, moved, ring);
  };

  // Step 0 before the loop, steps 1 .. p-1 inside: permute the sums on and,
  // meanwhile, compute this step's blocks; then add.
  std::vector<InstrId> init{operands[0], operands[1]};
  for (const SumStream& stream : streams)
    init.push_back(block(
        b, operands[0], operands[1],
        block_index(b, position, b.scalar_constant(DType::kS32, 0), stream.direction), stream));
  init.push_back(position);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> pairs;
  for (const SumStream& stream : streams)
    pairs.push_back(ring_pairs(context, w.groups, stream.direction));
  enum : size_t { kLhs = 0, kRhs = 1, kFirstSum = 2 };
  const size_t position_index = kFirstSum + n;
  const std::vector<InstrId> out = emit_counted_loop(
      context, init, p - 1,
      [&](ComputationBuilder& body, const std::vector<InstrId>& e, InstrId next) {
        std::vector<InstrId> received;
        for (size_t k = 0; k < n; ++k)
          received.push_back(body.collective_permute(e[kFirstSum + k], pairs[k]));
        std::vector<InstrId> updated{e[kLhs], e[kRhs]};
        for (size_t k = 0; k < n; ++k) {
          InstrId partial =
              block(body, e[kLhs], e[kRhs],
                    block_index(body, e[position_index], next, streams[k].direction), streams[k]);
          updated.push_back(body.binary(Opcode::kAdd, received[k], partial));
        }
        updated.push_back(e[position_index]);
        return updated;
      });
  if (n == 1) return out[kFirstSum];
  return b.concatenate({out[kFirstSum], out[kFirstSum + 1]}, w.out_dim);
}

}  // namespace podsim::compiler
