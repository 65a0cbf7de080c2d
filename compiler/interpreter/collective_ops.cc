// Collectives over the lock-step lanes (lane d is partition d). Groups come
// from ReplicaGroups::expand(num_devices) (explicit or iota form); every
// device must be in exactly one group. Semantics (XLA):
//   all-reduce:       every member gets the combiner fold of all members'
//                     values, in group order (variadic operands -> tuple);
//   all-gather:       concatenation along dimensions[0] in group order;
//   reduce-scatter:   all-reduce, then member i keeps chunk i of dimensions[0];
//   all-to-all:       array form splits dimensions[0] into group_size chunks,
//                     chunk i goes to member i, received chunks concatenated in
//                     sender order; tuple form sends operand i to member i;
//   collective-permute: target gets the source's value, non-targets zeros;
//   collective-broadcast: every member gets the group's first member's value.
#include "compiler/interpreter/collective_ops.h"

#include <algorithm>

#include <fmt/format.h>

namespace podsim::compiler::interp {

namespace {

using Groups = std::vector<std::vector<int64_t>>;

// Product of dims in [begin, end).
int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

// Row-major concatenation: for each outer index (dims before `dim`), the
// parts' contiguous blocks follow each other.
Literal concat_along(const std::vector<const Literal*>& parts, int64_t dim,
                     const Shape& out_shape) {
  Literal out(out_shape);
  const auto& dims = out_shape.dims();
  const auto d = static_cast<size_t>(dim);
  const int64_t outer = product(dims, 0, d);
  const int64_t inner = product(dims, d + 1, dims.size());
  auto dst = out.mutable_values().begin();
  for (int64_t o = 0; o < outer; ++o) {
    for (const Literal* part : parts) {
      const int64_t block = part->shape().dim(static_cast<int>(dim)) * inner;
      auto src = part->values().begin() + o * block;
      dst = std::copy(src, src + block, dst);
    }
  }
  return out;
}

// Splits `dim` into `count` equal chunks.
std::vector<Literal> split_along(const Literal& value, int64_t dim, int64_t count) {
  std::vector<int64_t> piece_dims = value.shape().dims();
  const auto d = static_cast<size_t>(dim);
  piece_dims[d] /= count;
  const Shape piece_shape(value.shape().dtype(), piece_dims);
  const int64_t outer = product(piece_dims, 0, d);
  const int64_t block = product(piece_dims, d, piece_dims.size());
  std::vector<Literal> pieces(static_cast<size_t>(count), Literal(piece_shape));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < count; ++c) {
      auto src = value.values().begin() + (o * count + c) * block;
      std::copy(src, src + block,
                pieces[static_cast<size_t>(c)].mutable_values().begin() + o * block);
    }
  return pieces;
}

// XLA's group modes: a collective without channel_id or
// use_global_device_ids is cross-replica; the interpreter's lanes are the
// partitions of one replica, so with replica_groups={} each partition is
// its own group. (Explicit groups without a channel id are read as
// partition ids, a lenient reading of a module XLA would reject with one
// replica.)
bool cross_replica_only(const Instruction& instr, const Module& module) {
  return !instr.attrs.channel_id && !instr.attrs.use_global_device_ids &&
         instr.attrs.replica_groups.is_all_devices() && module.replica_count() <= 1 &&
         module.num_partitions() > 1;
}

Groups device_groups(const Instruction& instr, int64_t num_devices, const Module& module) {
  if (cross_replica_only(instr, module)) {
    Groups singles;
    for (int64_t d = 0; d < num_devices; ++d) singles.push_back({d});
    return singles;
  }
  const ReplicaGroups& rg = instr.attrs.replica_groups;
  if (rg.iota && rg.explicit_groups.empty()) {
    // expand() relies on a consistent iota form; check it first.
    int64_t total = 1;
    for (int64_t d : rg.iota->reshape_dims) total *= d;
    std::vector<int64_t> perm = rg.iota->transpose_perm;
    std::sort(perm.begin(), perm.end());
    bool perm_ok = perm.empty() || perm.size() == rg.iota->reshape_dims.size();
    for (size_t i = 0; perm_ok && i < perm.size(); ++i)
      perm_ok = perm[i] == static_cast<int64_t>(i);
    if (total != rg.iota->num_groups * rg.iota->group_size || !perm_ok)
      fail(instr, "iota replica groups: reshape dims or transpose do not match the group sizes");
  }
  Groups groups = rg.expand(num_devices);
  std::vector<int> seen(static_cast<size_t>(num_devices), 0);
  for (const auto& g : groups) {
    if (g.empty() || g.size() != groups[0].size())
      fail(instr, "replica groups must be non-empty and of equal size");
    for (int64_t d : g) {
      if (d < 0 || d >= num_devices)
        fail(instr,
             fmt::format("device {} in replica groups, but only {} devices", d, num_devices));
      if (seen[static_cast<size_t>(d)]++)
        fail(instr, fmt::format("device {} is in two replica groups", d));
    }
  }
  for (int64_t d = 0; d < num_devices; ++d)
    if (!seen[static_cast<size_t>(d)])
      fail(instr, fmt::format("device {} is in no replica group", d));
  return groups;
}

const Literal& array_operand(const Instruction& instr, const std::vector<Operands>& ops,
                             int64_t device, size_t i) {
  const auto& lane = ops[static_cast<size_t>(device)];
  if (i >= lane.size() || lane[i]->is_tuple()) fail(instr, "operand must be an array");
  return *lane[i];
}

int64_t split_dimension(const Instruction& instr, const Literal& operand) {
  if (instr.attrs.dimensions.size() != 1) fail(instr, "needs exactly one dimension");
  const int64_t dim = instr.attrs.dimensions[0];
  if (dim < 0 || dim >= operand.shape().rank()) fail(instr, "dimension out of range");
  return dim;
}

// Element-wise fold of operand i over the group members, in group order.
Literal fold_group(const Instruction& instr, const std::vector<Operands>& ops,
                   const std::vector<int64_t>& group, size_t i, const ScalarFunction& combine) {
  Literal acc = array_operand(instr, ops, group[0], i);
  for (size_t m = 1; m < group.size(); ++m) {
    const Literal& v = array_operand(instr, ops, group[m], i);
    if (v.shape().dims() != acc.shape().dims())
      fail(instr, "group members' operands differ in shape");
    auto& a = acc.mutable_values();
    for (size_t e = 0; e < a.size(); ++e) a[e] = combine.apply(a[e], v.values()[e]);
  }
  return acc;
}

std::vector<Literal> all_reduce(const Instruction& instr, const std::vector<Operands>& ops,
                                const CollectiveContext& ctx) {
  const Groups groups = device_groups(instr, ctx.num_devices, ctx.module);
  check_combiner(instr, ctx.module, instr.to_apply(), 1);
  const size_t count = ops[0].size();
  std::vector<std::vector<Literal>> leaves(static_cast<size_t>(ctx.num_devices));
  for (const auto& group : groups) {
    const ScalarFunction& combine = ctx.combiner(instr.to_apply(), group[0]);
    for (size_t i = 0; i < count; ++i) {
      Literal reduced = fold_group(instr, ops, group, i, combine);
      for (int64_t d : group) leaves[static_cast<size_t>(d)].push_back(reduced);
    }
  }
  std::vector<Literal> results;
  for (auto& l : leaves)
    results.push_back(count == 1 ? std::move(l[0]) : Literal::tuple(std::move(l)));
  return results;
}

std::vector<Literal> all_gather(const Instruction& instr, const std::vector<Operands>& ops,
                                const CollectiveContext& ctx) {
  const Groups groups = device_groups(instr, ctx.num_devices, ctx.module);
  std::vector<Literal> results(static_cast<size_t>(ctx.num_devices));
  for (const auto& group : groups) {
    std::vector<const Literal*> parts;
    for (int64_t d : group) parts.push_back(&array_operand(instr, ops, d, 0));
    const int64_t dim = split_dimension(instr, *parts[0]);
    std::vector<int64_t> out_dims = parts[0]->shape().dims();
    out_dims[static_cast<size_t>(dim)] *= static_cast<int64_t>(group.size());
    for (const Literal* p : parts)
      if (p->shape().dims() != parts[0]->shape().dims())
        fail(instr, "group members' operands differ in shape");
    Literal gathered;
    if (is_complex(instr.shape.dtype())) {
      // As real (real, imag) pairs: a trailing dim of 2 after the gathered one.
      auto pairs_shape = [](std::vector<int64_t> dims) {
        dims.push_back(2);
        return Shape(DType::kF64, std::move(dims));
      };
      std::vector<Literal> real;
      for (const Literal* p : parts) real.emplace_back(pairs_shape(p->shape().dims()), p->values());
      std::vector<const Literal*> real_parts;
      for (const Literal& r : real) real_parts.push_back(&r);
      Literal g = concat_along(real_parts, dim, pairs_shape(out_dims));
      gathered = Literal(Shape(instr.shape.dtype(), out_dims), std::move(g.mutable_values()));
    } else {
      gathered = concat_along(parts, dim, Shape(instr.shape.dtype(), out_dims));
    }
    for (int64_t d : group) results[static_cast<size_t>(d)] = gathered;
  }
  return results;
}

std::vector<Literal> reduce_scatter(const Instruction& instr, const std::vector<Operands>& ops,
                                    const CollectiveContext& ctx) {
  const Groups groups = device_groups(instr, ctx.num_devices, ctx.module);
  check_combiner(instr, ctx.module, instr.to_apply(), 1);
  std::vector<Literal> results(static_cast<size_t>(ctx.num_devices));
  for (const auto& group : groups) {
    const ScalarFunction& combine = ctx.combiner(instr.to_apply(), group[0]);
    Literal reduced = fold_group(instr, ops, group, 0, combine);
    const int64_t dim = split_dimension(instr, reduced);
    const auto size = static_cast<int64_t>(group.size());
    if (reduced.shape().dim(static_cast<int>(dim)) % size != 0)
      fail(instr, fmt::format("dimension of size {} does not split into {} chunks",
                              reduced.shape().dim(static_cast<int>(dim)), size));
    auto chunks = split_along(reduced, dim, size);
    for (size_t m = 0; m < group.size(); ++m)
      results[static_cast<size_t>(group[m])] = std::move(chunks[m]);
  }
  return results;
}

std::vector<Literal> all_to_all(const Instruction& instr, const std::vector<Operands>& ops,
                                const CollectiveContext& ctx) {
  const Groups groups = device_groups(instr, ctx.num_devices, ctx.module);
  std::vector<Literal> results(static_cast<size_t>(ctx.num_devices));
  for (const auto& group : groups) {
    const size_t size = group.size();
    if (instr.attrs.dimensions.empty()) {
      // Tuple form: operand i of every member goes to member i.
      for (size_t j = 0; j < size; ++j) {
        std::vector<Literal> received;
        for (int64_t sender : group) {
          if (ops[static_cast<size_t>(sender)].size() != size)
            fail(instr, "tuple all-to-all needs one operand per member");
          received.push_back(*ops[static_cast<size_t>(sender)][j]);
        }
        results[static_cast<size_t>(group[j])] = Literal::tuple(std::move(received));
      }
      continue;
    }
    const int64_t dim = split_dimension(instr, array_operand(instr, ops, group[0], 0));
    std::vector<std::vector<Literal>> chunks;  // chunks[sender][receiver]
    for (int64_t sender : group) {
      const Literal& v = array_operand(instr, ops, sender, 0);
      if (v.shape().dims() != array_operand(instr, ops, group[0], 0).shape().dims())
        fail(instr, "group members' operands differ in shape");
      if (v.shape().dim(static_cast<int>(dim)) % static_cast<int64_t>(size) != 0)
        fail(instr, "split dimension does not divide by the group size");
      chunks.push_back(split_along(v, dim, static_cast<int64_t>(size)));
    }
    for (size_t r = 0; r < size; ++r) {
      std::vector<const Literal*> parts;
      for (size_t s = 0; s < size; ++s) parts.push_back(&chunks[s][r]);
      std::vector<int64_t> out_dims = parts[0]->shape().dims();
      out_dims[static_cast<size_t>(dim)] *= static_cast<int64_t>(size);
      results[static_cast<size_t>(group[r])] =
          concat_along(parts, dim, Shape(instr.shape.dtype(), out_dims));
    }
  }
  return results;
}

std::vector<Literal> collective_permute(const Instruction& instr, const std::vector<Operands>& ops,
                                        const CollectiveContext& ctx) {
  std::vector<Literal> results(static_cast<size_t>(ctx.num_devices), Literal(instr.shape));
  std::vector<bool> targeted(static_cast<size_t>(ctx.num_devices), false);
  for (const auto& [source, target] : instr.attrs.source_target_pairs) {
    if (source < 0 || source >= ctx.num_devices || target < 0 || target >= ctx.num_devices)
      fail(instr, fmt::format("pair {{{},{}}} names a device outside 0..{}", source, target,
                              ctx.num_devices - 1));
    if (targeted[static_cast<size_t>(target)])
      fail(instr, fmt::format("device {} is the target of two pairs", target));
    targeted[static_cast<size_t>(target)] = true;
    results[static_cast<size_t>(target)] = array_operand(instr, ops, source, 0);
  }
  return results;
}

// collective-broadcast: every member gets the group's first member's value.
std::vector<Literal> collective_broadcast(const Instruction& instr,
                                          const std::vector<Operands>& ops,
                                          const CollectiveContext& ctx) {
  const Groups groups = device_groups(instr, ctx.num_devices, ctx.module);
  std::vector<Literal> results(static_cast<size_t>(ctx.num_devices));
  for (const auto& group : groups)
    for (int64_t d : group)
      results[static_cast<size_t>(d)] = array_operand(instr, ops, group[0], 0);
  return results;
}

// ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets,
// recv_sizes): sender i sends rows [input_offsets[k], + send_sizes[k]) of its
// input (dim 0) to member k of its group, where they land at rows
// [output_offsets[k], ...) of k's output buffer (offsets are the sender's);
// rows nothing lands on keep the receiver's output operand.
std::vector<Literal> ragged_all_to_all(const Instruction& instr, const std::vector<Operands>& ops,
                                       const CollectiveContext& ctx) {
  const Groups groups = device_groups(instr, ctx.num_devices, ctx.module);
  std::vector<Literal> results(static_cast<size_t>(ctx.num_devices));
  for (int64_t d = 0; d < ctx.num_devices; ++d) {
    if (ops[static_cast<size_t>(d)].size() != 6) fail(instr, "takes 6 operands");
    results[static_cast<size_t>(d)] = array_operand(instr, ops, d, 1);
  }
  for (const auto& group : groups) {
    for (int64_t sender : group) {
      const Literal& input = array_operand(instr, ops, sender, 0);
      if (is_complex(input.shape().dtype())) fail(instr, "complex values are not supported");
      const Literal& in_offsets = array_operand(instr, ops, sender, 2);
      const Literal& sizes = array_operand(instr, ops, sender, 3);
      const Literal& out_offsets = array_operand(instr, ops, sender, 4);
      if (in_offsets.values().size() != group.size() || sizes.values().size() != group.size() ||
          out_offsets.values().size() != group.size())
        fail(instr,
             fmt::format("offsets and sizes need one entry per group member ({})", group.size()));
      if (input.shape().rank() < 1) fail(instr, "input must have a leading dimension");
      const int64_t row = input.shape().num_elements() / std::max<int64_t>(1, input.shape().dim(0));
      for (size_t k = 0; k < group.size(); ++k) {
        Literal& out = results[static_cast<size_t>(group[k])];
        const auto from = static_cast<int64_t>(in_offsets.values()[k]);
        const auto count = static_cast<int64_t>(sizes.values()[k]);
        const auto to = static_cast<int64_t>(out_offsets.values()[k]);
        if (count < 0 || from < 0 || to < 0 || from + count > input.shape().dim(0) ||
            out.shape().rank() < 1 || to + count > out.shape().dim(0) ||
            out.shape().num_elements() / std::max<int64_t>(1, out.shape().dim(0)) != row)
          fail(instr,
               fmt::format(
                   "device {} sends rows [{}, {}) to rows [{}, {}) of device {}: out of range",
                   sender, from, from + count, to, to + count, group[k]));
        std::copy_n(input.values().begin() + from * row, count * row,
                    out.mutable_values().begin() + to * row);
      }
    }
  }
  return results;
}

}  // namespace

std::vector<Literal> evaluate_collective(const Instruction& instr,
                                         const std::vector<Operands>& operands_per_lane,
                                         const CollectiveContext& context) {
  if (static_cast<int64_t>(context.partition_ids.size()) != context.num_devices)
    fail(instr,
         "collectives are not allowed inside per-device computations (reduce/scatter bodies)");
  if (operands_per_lane.empty() || operands_per_lane[0].empty())
    fail(instr, "collective without operands");
  // Several operands (XLA's combined collectives): all-gather, reduce-scatter,
  // collective-permute and collective-broadcast act on each operand alone and
  // return the tuple of the results (all-reduce and tuple all-to-all take
  // their operands together).
  const size_t count = operands_per_lane[0].size();
  const bool per_operand =
      instr.opcode == Opcode::kAllGather || instr.opcode == Opcode::kReduceScatter ||
      instr.opcode == Opcode::kCollectivePermute || instr.opcode == Opcode::kCollectiveBroadcast;
  if (per_operand && count > 1) {
    if (!instr.shape.is_tuple() || instr.shape.tuple_shapes().size() != count)
      fail(instr, fmt::format("{} operands but the result is not a tuple of {}", count, count));
    std::vector<std::vector<Literal>> leaves(operands_per_lane.size());
    for (size_t i = 0; i < count; ++i) {
      Instruction one = instr;
      one.operands = {instr.operands[i]};
      one.shape = instr.shape.tuple_shape(static_cast<int>(i));
      std::vector<Operands> ops_i;
      for (const Operands& lane : operands_per_lane) {
        if (lane.size() != count) fail(instr, "devices disagree on the operand count");
        ops_i.push_back(Operands{lane[i]});
      }
      std::vector<Literal> out = evaluate_collective(one, ops_i, context);
      for (size_t l = 0; l < out.size(); ++l) leaves[l].push_back(std::move(out[l]));
    }
    std::vector<Literal> results;
    for (auto& l : leaves) results.push_back(Literal::tuple(std::move(l)));
    return results;
  }
  switch (instr.opcode) {
    case Opcode::kAllReduce:
      return all_reduce(instr, operands_per_lane, context);
    case Opcode::kAllGather:
      return all_gather(instr, operands_per_lane, context);
    case Opcode::kReduceScatter:
      return reduce_scatter(instr, operands_per_lane, context);
    case Opcode::kAllToAll:
      return all_to_all(instr, operands_per_lane, context);
    case Opcode::kCollectivePermute:
      return collective_permute(instr, operands_per_lane, context);
    case Opcode::kCollectiveBroadcast:
      return collective_broadcast(instr, operands_per_lane, context);
    case Opcode::kRaggedAllToAll:
      return ragged_all_to_all(instr, operands_per_lane, context);
    default:
      fail(instr, "not a collective");
  }
}

}  // namespace podsim::compiler::interp
