// Windowed einsum (gspmd-algorithms.md 3.5, "collective matmul"): instead of
// all-gathering operand W along dim d (p tiles of t = ceil(D/p)), keep W's
// shard and rotate it round the ring of its p-device group. Device at group
// position q holds chunk c = (q + i) mod p at step i (every step it receives
// from position q + 1), so after p - 1 collective-permutes it has seen every
// chunk, exactly the bytes of the all-gather, each permute overlappable with
// the previous step's dot. Per step, for chunk c at offset c*t:
//   d contracting: acc += dot(dynamic-slice(other, c*t along its dim, t), chunk)
//                  (other padded with zeros to p*t, chunk padding masked to 0)
//   d free:        acc = dynamic-update-slice(acc, dot(other, chunk), c*t on
//                  the result dim), acc padded to p*t and sliced to D after.
// Step 0 runs before the loop; the loop is a counted while (i = 0 .. p-2,
// the pattern known_trip_count recognises) so the program does not grow
// with p.
#include <cassert>

#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/dot_handler.h"
#include "compiler/spmd/halo_exchange.h"

namespace podsim::compiler {
namespace {

// Loop state elements.
enum : size_t { kOther = 0, kChunk = 1, kAcc = 2, kPosition = 3 };

struct StepParams {
  const WindowedDot& w;
  int64_t p = 1;       // ring length
  int64_t t = 1;       // chunk extent
  int64_t extent = 1;  // logical D of the windowed dim
};

InstrId broadcast_scalar(ComputationBuilder& b, InstrId scalar, const std::vector<int64_t>& dims) {
  return b.broadcast(scalar, dims, {});
}

// acc after consuming `chunk` = chunk c of the windowed operand.
InstrId emit_step(ComputationBuilder& b, const StepParams& s, InstrId other, InstrId chunk, InstrId acc,
                  InstrId c) {
  const WindowedDot& w = s.w;
  const InstrId offset = b.binary(Opcode::kMultiply, c, b.scalar_constant(DType::kS32, static_cast<double>(s.t)));
  const InstrId zero_index = b.scalar_constant(DType::kS32, 0);
  auto starts_at = [&](const Shape& shape, int64_t dim) {
    std::vector<InstrId> starts(static_cast<size_t>(shape.rank()), zero_index);
    starts[static_cast<size_t>(dim)] = offset;
    return starts;
  };
  auto local_dot = [&](InstrId windowed_piece, InstrId other_piece) {
    Instruction copy = *w.original;
    copy.name.clear();
    copy.sharding.reset();
    copy.operands = w.windowed_side == 0 ? std::vector<InstrId>{windowed_piece, other_piece}
                                         : std::vector<InstrId>{other_piece, windowed_piece};
    return b.add_inferred(std::move(copy));
  };
  if (w.other_dim >= 0) {
    InstrId piece = chunk;
    if (s.extent % s.p != 0) {  // zero the chunk's padding: position c*t + k >= D
      const Shape shape = b.shape(chunk);
      InstrId position = b.binary(Opcode::kAdd, b.iota(Shape(DType::kS32, shape.dims()), w.windowed_dim),
                                  broadcast_scalar(b, offset, shape.dims()));
      InstrId limit = broadcast_scalar(b, b.scalar_constant(DType::kS32, static_cast<double>(s.extent)), shape.dims());
      InstrId valid = b.compare(position, limit, ComparisonDirection::kLt);
      InstrId zero = broadcast_scalar(b, b.scalar_constant(shape.dtype(), 0), shape.dims());
      piece = b.select(valid, chunk, zero);
    }
    const Shape other_shape = b.shape(other);
    std::vector<int64_t> sizes = other_shape.dims();
    sizes[static_cast<size_t>(w.other_dim)] = s.t;
    InstrId other_piece = b.dynamic_slice(other, starts_at(other_shape, w.other_dim), sizes);
    return b.binary(Opcode::kAdd, acc, local_dot(piece, other_piece));
  }
  InstrId block = local_dot(chunk, other);
  return b.dynamic_update_slice(acc, block, starts_at(b.shape(acc), w.out_dim));
}

}  // namespace

std::vector<int64_t> infer_local_dims(SpmdContext& context, const Instruction& original, const Shape& lhs,
                                      const Shape& rhs) {
  ComputationBuilder scratch("shape_probe", &context.module());
  Instruction copy = original;
  copy.name.clear();
  copy.sharding.reset();
  copy.operands = {scratch.parameter(0, lhs), scratch.parameter(1, rhs)};
  return scratch.shape(scratch.add_inferred(std::move(copy))).dims();
}

std::vector<std::pair<int64_t, int64_t>> ring_pairs(const SpmdContext& context, const ReplicaGroups& groups) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const auto& group : groups.expand(context.num_devices()))
    for (size_t j = 0; j < group.size(); ++j) pairs.emplace_back(group[(j + 1) % group.size()], group[j]);
  return pairs;
}

// State = (elements..., counter i = 0); condition i < trips; body: i + 1
// (the pattern known_trip_count derives) and the step's new elements.
std::vector<InstrId> emit_counted_loop(SpmdContext& context, std::vector<InstrId> elements, int64_t trips,
                                       const LoopStep& step) {
  auto& b = context.builder();
  const size_t counter = elements.size();
  elements.push_back(b.scalar_constant(DType::kS32, 0));
  InstrId init = b.tuple(elements);
  const Shape state_shape = b.shape(init);

  ComputationBuilder body("windowed_einsum_body", &context.module());
  body.set_op_name_scope(b.op_name_scope());
  InstrId state = body.parameter(0, state_shape, "state");
  std::vector<InstrId> e;
  for (size_t k = 0; k <= counter; ++k) e.push_back(body.get_tuple_element(state, static_cast<int64_t>(k)));
  InstrId next = body.binary(Opcode::kAdd, e[counter], body.scalar_constant(DType::kS32, 1));
  std::vector<InstrId> updated = step(body, e, next);
  updated.push_back(next);
  InstrId root = body.tuple(updated);
  CompId body_id = context.module().add_computation(std::move(body).build(root));

  ComputationBuilder cond("windowed_einsum_condition", &context.module());
  cond.set_op_name_scope(b.op_name_scope());
  InstrId i = cond.get_tuple_element(cond.parameter(0, state_shape, "state"), static_cast<int64_t>(counter));
  InstrId go = cond.compare(i, cond.scalar_constant(DType::kS32, static_cast<double>(trips)), ComparisonDirection::kLt);
  CompId cond_id = context.module().add_computation(std::move(cond).build(go));

  InstrId loop = b.while_loop(init, cond_id, body_id);
  std::vector<InstrId> out;
  for (size_t k = 0; k < counter; ++k) out.push_back(b.get_tuple_element(loop, static_cast<int64_t>(k)));
  return out;
}

InstrId emit_windowed_dot(SpmdContext& context, const WindowedDot& w) {
  auto& b = context.builder();
  const PartitionedValue& value = w.windowed;
  const int64_t p = tile_count(value.sharding, w.windowed_dim);
  const int64_t extent = value.base_shape.dim(static_cast<int>(w.windowed_dim));
  const StepParams s{w, p, ceil_div(extent, p), extent};
  const DType out_type = w.original->shape.dtype();

  // The other operand padded to p*t on the contracting dim (zeros).
  InstrId other = w.other_local;
  if (w.other_dim >= 0) {
    const Shape shape = b.shape(other);
    const int64_t have = shape.dim(static_cast<int>(w.other_dim));
    if (have != p * s.t) {
      std::vector<PadDim> padding(static_cast<size_t>(shape.rank()));
      padding[static_cast<size_t>(w.other_dim)].high = p * s.t - have;
      other = b.pad(other, context.zero(shape.dtype()), std::move(padding));
    }
  }
  // Accumulator: the local result's shape (free case: p*t on out_dim).
  const InstrId position = per_tile_scalar(context, value.sharding, w.windowed_dim, [](int64_t j) { return j; });
  // Shape of one step's dot: the other operand (t on its contracting dim)
  // against one chunk.
  Shape other_piece = b.shape(other);
  if (w.other_dim >= 0) other_piece = Shape(other_piece.dtype(), [&] {
    auto dims = other_piece.dims();
    dims[static_cast<size_t>(w.other_dim)] = s.t;
    return dims;
  }());
  std::vector<int64_t> acc_dims = w.windowed_side == 0
                                      ? infer_local_dims(context, *w.original, b.shape(value.id), other_piece)
                                      : infer_local_dims(context, *w.original, other_piece, b.shape(value.id));
  if (w.out_dim >= 0) acc_dims[static_cast<size_t>(w.out_dim)] = p * s.t;
  InstrId acc = b.broadcast(context.zero(out_type), acc_dims, {});
  acc = emit_step(b, s, other, value.id, acc, position);

  // Loop state (other, chunk, acc, q); per iteration the chunk moves one
  // position round the ring, then the step consumes it.
  const auto pairs = ring_pairs(context, context.groups_along_tile_dims(value.sharding, std::vector<int64_t>{w.windowed_dim}));
  const std::vector<InstrId> out = emit_counted_loop(
      context, {other, value.id, acc, position}, p - 1,
      [&](ComputationBuilder& body, const std::vector<InstrId>& e, InstrId next) {
        InstrId chunk = body.collective_permute(e[kChunk], pairs);
        InstrId c = body.binary(Opcode::kRemainder, body.binary(Opcode::kAdd, e[kPosition], next),
                                body.scalar_constant(DType::kS32, static_cast<double>(p)));
        return std::vector<InstrId>{e[kOther], chunk, emit_step(body, s, e[kOther], chunk, e[kAcc], c), e[kPosition]};
      });
  acc = out[kAcc];
  if (w.out_dim >= 0 && p * s.t != extent) {
    const Shape shape = b.shape(acc);
    std::vector<SliceDim> slice;
    for (int d = 0; d < shape.rank(); ++d) slice.push_back(SliceDim{0, d == w.out_dim ? extent : shape.dim(d), 1});
    acc = b.slice(acc, std::move(slice));
  }
  return acc;
}

}  // namespace podsim::compiler
