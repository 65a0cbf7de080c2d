// Windowed einsum, all-gather form (docs/reference/gspmd.md#windowed-einsum, "collective
// matmul"): instead of all-gathering operand W along dim d (p tiles of t = ceil(D/p)), keep W's
// shard and rotate it round its p-device ring; device q holds chunk (q + i) mod p at step i and
// multiplies it while a collective-permute sends it on, so the permute hides behind the dot.
// Steps 0 .. p-2 run in a counted while loop, the last after it: p dots, p - 1 permutes (the
// all-gather's bytes). Per-step ops and the bidirectional form:
// docs/compiler.md#windowed-einsum-all-gather-form
#include <cassert>

#include <fmt/format.h>

#include "compiler/ir/trip_count.h"
#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/dot_handler.h"
#include "compiler/spmd/halo_exchange.h"

namespace podsim::compiler {
namespace {

struct StepParams {
  const WindowedDot& w;
  int64_t p = 1;       // ring length
  int64_t t = 1;       // chunk extent
  int64_t extent = 1;  // logical D of the windowed dim
};

// One part of the shard that travels round the ring.
struct Stream {
  InstrId init = kNoId;   // the piece this device holds at step 0
  int64_t offset = 0;     // its start inside a chunk along the windowed dim
  int64_t direction = 1;  // +1: held chunk (q + i) mod p; -1: (q - i) mod p
};

InstrId broadcast_scalar(ComputationBuilder& b, InstrId scalar, const std::vector<int64_t>& dims) {
  return b.broadcast(scalar, dims, {});
}

// One held piece of a step: the part at `offset` (inside a chunk) of
// chunk c of the windowed operand.
struct HeldPiece {
  InstrId piece = kNoId;
  InstrId c = kNoId;
  int64_t offset = 0;
};

// acc after consuming the step's pieces. Contracting: the pieces (and the
// other operand's matching slices) are concatenated on the contracted dims
// and multiplied by ONE dot, so a bidirectional step is one kernel as a
// one-way step is (and no two dots' output fusions meet in one add).
InstrId emit_step(ComputationBuilder& b, const StepParams& s, InstrId other,
                  const std::vector<HeldPiece>& pieces, InstrId acc) {
  const WindowedDot& w = s.w;
  const InstrId zero_index = b.scalar_constant(DType::kS32, 0);
  auto start_of = [&](const HeldPiece& held) {
    InstrId offset = b.binary(Opcode::kMultiply, held.c,
                              b.scalar_constant(DType::kS32, static_cast<double>(s.t)));
    if (held.offset != 0)
      offset = b.binary(Opcode::kAdd, offset,
                        b.scalar_constant(DType::kS32, static_cast<double>(held.offset)));
    return offset;
  };
  auto starts_at = [&](const Shape& shape, int64_t dim, InstrId offset) {
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
    std::vector<InstrId> masked_pieces, other_pieces;
    for (const HeldPiece& held : pieces) {
      const InstrId offset = start_of(held);
      InstrId masked = held.piece;
      const Shape shape = b.shape(held.piece);
      if (s.extent % s.p != 0) {  // zero the chunk's padding: position c*t + o + k >= D
        InstrId position =
            b.binary(Opcode::kAdd, b.iota(Shape(DType::kS32, shape.dims()), w.windowed_dim),
                     broadcast_scalar(b, offset, shape.dims()));
        InstrId limit = broadcast_scalar(
            b, b.scalar_constant(DType::kS32, static_cast<double>(s.extent)), shape.dims());
        InstrId valid = b.compare(position, limit, ComparisonDirection::kLt);
        InstrId zero = broadcast_scalar(b, b.scalar_constant(shape.dtype(), 0), shape.dims());
        masked = b.select(valid, held.piece, zero);
      }
      const Shape other_shape = b.shape(other);
      std::vector<int64_t> sizes = other_shape.dims();
      sizes[static_cast<size_t>(w.other_dim)] = shape.dim(static_cast<int>(w.windowed_dim));
      masked_pieces.push_back(masked);
      other_pieces.push_back(
          b.dynamic_slice(other, starts_at(other_shape, w.other_dim, offset), sizes));
    }
    const InstrId piece =
        masked_pieces.size() == 1 ? masked_pieces[0] : b.concatenate(masked_pieces, w.windowed_dim);
    const InstrId other_piece =
        other_pieces.size() == 1 ? other_pieces[0] : b.concatenate(other_pieces, w.other_dim);
    return b.binary(Opcode::kAdd, acc, local_dot(piece, other_piece));
  }
  for (const HeldPiece& held : pieces) {
    InstrId block = local_dot(held.piece, other);
    acc = b.dynamic_update_slice(acc, block, starts_at(b.shape(acc), w.out_dim, start_of(held)));
  }
  return acc;
}

// Chunk held at step i by position q: (q + direction * i) mod p, for
// 0 <= i < p (so q - i + p > 0 needs no further wrap).
InstrId held_chunk(ComputationBuilder& b, InstrId q, InstrId i, int64_t direction, int64_t p) {
  const InstrId ring = b.scalar_constant(DType::kS32, static_cast<double>(p));
  const InstrId moved = direction > 0
                            ? b.binary(Opcode::kAdd, q, i)
                            : b.binary(Opcode::kSubtract, b.binary(Opcode::kAdd, q, ring), i);
  return b.binary(Opcode::kRemainder, moved, ring);
}

}  // namespace

std::vector<int64_t> infer_local_dims(SpmdContext& context, const Instruction& original,
                                      const Shape& lhs, const Shape& rhs) {
  ComputationBuilder scratch("shape_probe", &context.module());
  Instruction copy = original;
  copy.name.clear();
  copy.sharding.reset();
  copy.operands = {scratch.parameter(0, lhs), scratch.parameter(1, rhs)};
  return scratch.shape(scratch.add_inferred(std::move(copy))).dims();
}

std::vector<std::pair<int64_t, int64_t>> ring_pairs(const SpmdContext& context,
                                                    const ReplicaGroups& groups,
                                                    int64_t direction) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const auto& group : groups.expand(context.num_devices()))
    for (size_t j = 0; j < group.size(); ++j) {
      const int64_t next = group[(j + 1) % group.size()];
      if (direction > 0)
        pairs.emplace_back(next, group[j]);
      else
        pairs.emplace_back(group[j], next);
    }
  return pairs;
}

// State = (elements..., counter i = 0); condition i < trips; body: i + 1
// (the pattern known_trip_count derives) and the step's new elements.
std::vector<InstrId> emit_counted_loop(SpmdContext& context, std::vector<InstrId> elements,
                                       int64_t trips, const LoopStep& step) {
  auto& b = context.builder();
  const size_t counter = elements.size();
  elements.push_back(b.scalar_constant(DType::kS32, 0));
  InstrId init = b.tuple(elements);
  const Shape state_shape = b.shape(init);

  // Unique names (suffix = the body's computation id), so the printed module
  // parses back.
  const int suffix = context.module().computation_count();
  ComputationBuilder body(fmt::format("windowed_einsum_body.{}", suffix), &context.module());
  body.set_op_name_scope(b.op_name_scope());
  InstrId state = body.parameter(0, state_shape, "state");
  std::vector<InstrId> e;
  for (size_t k = 0; k <= counter; ++k)
    e.push_back(body.get_tuple_element(state, static_cast<int64_t>(k)));
  InstrId next = body.binary(Opcode::kAdd, e[counter], body.scalar_constant(DType::kS32, 1));
  std::vector<InstrId> updated = step(body, e, next);
  updated.push_back(next);
  InstrId root = body.tuple(updated);
  CompId body_id = context.module().add_computation(std::move(body).build(root));

  ComputationBuilder cond(fmt::format("windowed_einsum_condition.{}", suffix), &context.module());
  cond.set_op_name_scope(b.op_name_scope());
  InstrId i = cond.get_tuple_element(cond.parameter(0, state_shape, "state"),
                                     static_cast<int64_t>(counter));
  InstrId go = cond.compare(i, cond.scalar_constant(DType::kS32, static_cast<double>(trips)),
                            ComparisonDirection::kLt);
  CompId cond_id = context.module().add_computation(std::move(cond).build(go));

  InstrId loop = b.while_loop(init, cond_id, body_id);
  std::vector<InstrId> out;
  for (size_t k = 0; k < counter; ++k)
    out.push_back(b.get_tuple_element(loop, static_cast<int64_t>(k)));
  return out;
}

InstrId emit_windowed_dot(SpmdContext& context, const WindowedDot& w) {
  auto& b = context.builder();
  const PartitionedValue& value = w.windowed;
  const int64_t p = tile_count(value.sharding, w.windowed_dim);
  assert(p >= 2);
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
  // Accumulator: the local result's shape (free case: p*t on out_dim), as
  // one chunk's dot against the other operand cut to t on its contracting
  // dim would give it.
  Shape other_piece = b.shape(other);
  if (w.other_dim >= 0) {
    std::vector<int64_t> dims = other_piece.dims();
    dims[static_cast<size_t>(w.other_dim)] = s.t;
    other_piece = Shape(other_piece.dtype(), dims);
  }
  std::vector<int64_t> acc_dims =
      w.windowed_side == 0 ? infer_local_dims(context, *w.original, b.shape(value.id), other_piece)
                           : infer_local_dims(context, *w.original, other_piece, b.shape(value.id));
  if (w.out_dim >= 0) acc_dims[static_cast<size_t>(w.out_dim)] = p * s.t;
  const InstrId acc = b.broadcast(context.zero(out_type), acc_dims, {});

  // The streams: the whole shard one way, or its two halves both ways.
  std::vector<Stream> streams;
  if (w.bidirectional && s.t >= 2) {
    const int64_t h = ceil_div(s.t, 2);
    streams.push_back(Stream{slice_along(b, value.id, w.windowed_dim, 0, h), 0, +1});
    streams.push_back(Stream{slice_along(b, value.id, w.windowed_dim, h, s.t), h, -1});
  } else {
    streams.push_back(Stream{value.id, 0, +1});
  }
  const size_t n = streams.size();
  const ReplicaGroups groups =
      context.groups_along_tile_dims(value.sharding, std::vector<int64_t>{w.windowed_dim});
  std::vector<std::vector<std::pair<int64_t, int64_t>>> pairs;
  for (const Stream& stream : streams)
    pairs.push_back(ring_pairs(context, groups, stream.direction));

  // Loop state (other, pieces..., acc, q). Step i (i = 0 .. p-2): permute
  // every held piece on and, meanwhile, multiply the held pieces.
  const InstrId position =
      per_tile_scalar(context, value.sharding, w.windowed_dim, [](int64_t j) { return j; });
  std::vector<InstrId> init{other};
  for (const Stream& stream : streams) init.push_back(stream.init);
  init.push_back(acc);
  init.push_back(position);
  const size_t acc_index = 1 + n, position_index = 2 + n;
  const std::vector<InstrId> out = emit_counted_loop(
      context, init, p - 1,
      [&](ComputationBuilder& body, const std::vector<InstrId>& e, InstrId /*next*/) {
        const InstrId i = e.back();
        std::vector<InstrId> updated{e[0]};
        for (size_t k = 0; k < n; ++k)
          updated.push_back(body.collective_permute(e[1 + k], pairs[k]));
        std::vector<HeldPiece> held;
        for (size_t k = 0; k < n; ++k)
          held.push_back(HeldPiece{e[1 + k],
                                   held_chunk(body, e[position_index], i, streams[k].direction, p),
                                   streams[k].offset});
        updated.push_back(emit_step(body, s, e[0], held, e[acc_index]));
        updated.push_back(e[position_index]);
        return updated;
      });

  // Step p-1 after the loop: chunk (q + direction * (p-1)) mod p, computed
  // as in the loop (the same instructions for every p).
  const InstrId last = b.scalar_constant(DType::kS32, static_cast<double>(p - 1));
  std::vector<HeldPiece> held;
  for (size_t k = 0; k < n; ++k)
    held.push_back(HeldPiece{out[1 + k],
                             held_chunk(b, out[position_index], last, streams[k].direction, p),
                             streams[k].offset});
  InstrId result = emit_step(b, s, out[0], held, out[acc_index]);
  if (w.out_dim >= 0 && p * s.t != extent) result = slice_along(b, result, w.out_dim, 0, extent);
  return result;
}

}  // namespace podsim::compiler
