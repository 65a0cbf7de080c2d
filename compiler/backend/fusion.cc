// Fusion planning (fusion.h). Consumers are visited from the last instruction to the first (XLA's
// reverse post order); each group grows through a max-heap of candidate producers, so every user
// of a candidate that can join has joined before it is examined: O(E log E) in all.
// docs/compiler-backend.md#fusion-algorithm
#include "compiler/backend/fusion.h"

#include <algorithm>
#include <queue>

namespace podsim::compiler {

bool is_loop_fusible(Opcode op) {
  if (is_elementwise(op)) return true;  // unary (incl. convert, copy), binary, select, clamp
  switch (op) {
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kPad:
    case Opcode::kConcatenate:
    case Opcode::kReverse:
    case Opcode::kDynamicSlice:
    case Opcode::kIota:
    case Opcode::kConstant:
      return true;
    default:
      return false;
  }
}

bool is_free_to_recompute(Opcode op) {
  return op == Opcode::kBroadcast || op == Opcode::kIota || op == Opcode::kConstant;
}

// XLA's "expensive" elementwise ops (transcendentals, divide, power,
// remainder): recomputing them in every consumer costs real VPU work, so
// XLA's instruction fusion never duplicates them.
bool is_expensive_elementwise(Opcode op) {
  return is_transcendental(op) || op == Opcode::kRemainder;
}

bool is_cheap_to_duplicate(Opcode op) {
  return is_loop_fusible(op) && !is_expensive_elementwise(op);
}

bool is_window_read(Opcode op) { return op == Opcode::kSlice || op == Opcode::kDynamicSlice; }

namespace {

bool is_dot_like(Opcode op) { return op == Opcode::kDot || op == Opcode::kConvolution; }

// Can this instruction be a fusion member that reads other members?
bool can_absorb_producers(const Instruction& instr) {
  if (!instr.shape.is_array()) return false;
  return is_loop_fusible(instr.opcode) || instr.opcode == Opcode::kReduce ||
         is_dot_like(instr.opcode);
}

bool can_be_fused_producer(const Instruction& instr) {
  return instr.shape.is_array() && is_loop_fusible(instr.opcode);
}

class FusionPlanner {
 public:
  explicit FusionPlanner(const Computation& c) : comp_(c), users_(c) {
    plan_.group_of.assign(static_cast<size_t>(c.size()), -1);
    reads_collective_.assign(static_cast<size_t>(c.size()), false);
    restricted_.assign(static_cast<size_t>(c.size()), false);
    for (InstrId id = 0; id < c.size(); ++id)
      for (InstrId op : c.instr(id).operands)
        if (is_collective(c.instr(op).opcode)) reads_collective_[static_cast<size_t>(id)] = true;
    mark_duplicable();
  }

  FusionPlan run() {
    form_output_fusions();
    for (InstrId id = comp_.size() - 1; id >= 0; --id) {
      int32_t g = group(id);
      if (g >= 0) {
        if (plan_.groups[static_cast<size_t>(g)].members.back() == id)
          grow(g);  // output fusion root
        continue;
      }
      // A broadcast/iota/constant is not worth a kernel of its own, and a
      // duplicable op is recomputed inside its users' kernels
      // (duplicate_cheap_producers).
      const Instruction& instr = comp_.instr(id);
      if (!can_absorb_producers(instr) || is_free_to_recompute(instr.opcode) || duplicable(id))
        continue;
      int32_t fresh = new_group({id});
      grow(fresh);
      // A kernel of one op stays a group when a duplicated producer will
      // join it; otherwise it is just the op.
      if (plan_.groups[static_cast<size_t>(fresh)].members.size() == 1 && !has_deferred_operand(id))
        drop_last_group(id);
    }
    duplicate_cheap_producers();
    form_multi_output_fusions();
    for (FusionGroup& g : plan_.groups) std::sort(g.members.begin(), g.members.end());
    return std::move(plan_);
  }

  const std::vector<bool>& duplicable_ops() const { return duplicable_; }

 private:
  int32_t group(InstrId id) const { return plan_.group_of[static_cast<size_t>(id)]; }
  std::span<const InstrId> users(InstrId id) const { return users_[id]; }

  int32_t new_group(std::vector<InstrId> members) {
    auto g = static_cast<int32_t>(plan_.groups.size());
    for (InstrId m : members) plan_.group_of[static_cast<size_t>(m)] = g;
    plan_.groups.push_back(FusionGroup{std::move(members)});
    return g;
  }
  void drop_last_group(InstrId only_member) {
    plan_.groups.pop_back();
    plan_.group_of[static_cast<size_t>(only_member)] = -1;
  }

  // dot/convolution -> single-user elementwise consumers, in a chain.
  void form_output_fusions() {
    for (InstrId id = 0; id < comp_.size(); ++id) {
      if (!is_dot_like(comp_.instr(id).opcode) || !comp_.instr(id).shape.is_array()) continue;
      std::vector<InstrId> chain{id};
      InstrId tail = id;
      while (users(tail).size() == 1 && tail != comp_.root()) {
        InstrId next = users(tail)[0];
        const Instruction& consumer = comp_.instr(next);
        // A consumer already in another dot's chain (add(add(acc, dotA),
        // dotB): the outer add joins dotA's chain, dotB's stops before it)
        // stays there: an op belongs to one group.
        if (!consumer.shape.is_array() || reads_collective(next) || group(next) >= 0) break;
        // The chain's result written in place into a buffer (a windowed
        // einsum's output shard): the update is the chain, the DUS the root.
        if (writes_update_in_place(consumer, tail)) {
          chain.push_back(next);
          break;
        }
        if (!is_elementwise(consumer.opcode)) break;
        chain.push_back(next);
        tail = next;
      }
      if (chain.size() > 1) new_group(std::move(chain));
    }
  }

  // A dynamic-update-slice whose update (operand 1, and only that operand) is `update`.
  bool writes_update_in_place(const Instruction& consumer, InstrId update) const {
    if (consumer.opcode != Opcode::kDynamicUpdateSlice || consumer.operand(1) != update)
      return false;
    for (int i = 0; i < consumer.operand_count(); ++i)
      if (i != 1 && consumer.operand(i) == update) return false;
    return true;
  }

  // Absorbs producers of group g's members while every user of the producer
  // is already in g. Candidates come out highest id first.
  void grow(int32_t g) {
    std::priority_queue<InstrId> candidates;
    for (InstrId m : plan_.groups[static_cast<size_t>(g)].members) push_operands(m, candidates);
    InstrId last_seen = kNoId;
    while (!candidates.empty()) {
      InstrId p = candidates.top();
      candidates.pop();
      if (p == last_seen) continue;  // an operand reached through several members
      last_seen = p;
      const Instruction& producer = comp_.instr(p);
      if (group(p) >= 0 || !can_be_fused_producer(producer) || p == comp_.root() ||
          reads_collective(p))
        continue;
      bool all_users_inside =
          std::all_of(users(p).begin(), users(p).end(), [&](InstrId u) { return group(u) == g; });
      if (!all_users_inside) continue;
      plan_.group_of[static_cast<size_t>(p)] = g;
      plan_.groups[static_cast<size_t>(g)].members.push_back(p);
      if (is_window_read(producer.opcode))
        restricted_[static_cast<size_t>(p)] = std::any_of(
            users(p).begin(), users(p).end(), [&](InstrId u) { return waits_for_collective(u); });
      push_operands(p, candidates);
    }
  }

  void push_operands(InstrId member, std::priority_queue<InstrId>& candidates) const {
    const Instruction& instr = comp_.instr(member);
    if (!can_absorb_producers(instr)) return;
    const bool waits = waits_for_collective(member);
    for (InstrId op : instr.operands) {
      const Opcode producer = comp_.instr(op).opcode;
      // A slice is its consumer's operand read at other addresses, with no
      // work of its own to overlap with a collective: a collective reader
      // may take it (as XLA fuses a windowed einsum's dynamic-slice into
      // the dot); grow() then restricts what the slice itself absorbs.
      if (!waits || is_free_to_recompute(producer) || is_window_read(producer)) candidates.push(op);
    }
  }

  // ---- duplication (XLA's instruction fusion duplicates a producer into
  // every consumer kernel when it is not expensive and every user can fuse
  // it) ----
  // May `user` take `producer` into its kernel? (static: what push_operands
  // allows a member to absorb)
  bool absorbs(InstrId user, Opcode producer) const {
    if (!can_absorb_producers(comp_.instr(user))) return false;
    const bool waits = reads_collective(user) || restricted_if_fused_[static_cast<size_t>(user)];
    return !waits || is_free_to_recompute(producer) || is_window_read(producer);
  }

  // duplicable_[p]: p is cheap, not the root, reads no collective (broadcast/iota/constant may),
  // every user can absorb it, and a kernel that recomputes it reads at most p's bytes. Operands
  // first, so a chain of such ops is recomputed whole. docs/compiler-backend.md#duplicable-ops
  void mark_duplicable() {
    const auto n = static_cast<size_t>(comp_.size());
    restricted_if_fused_.assign(n, false);
    for (InstrId id = comp_.size() - 1; id >= 0; --id) {
      if (!is_window_read(comp_.instr(id).opcode)) continue;
      restricted_if_fused_[static_cast<size_t>(id)] =
          std::any_of(users(id).begin(), users(id).end(), [&](InstrId u) {
            return reads_collective(u) || restricted_if_fused_[static_cast<size_t>(u)];
          });
    }
    duplicable_.assign(n, false);
    std::vector<double> reads_through(n, 0);
    for (InstrId id = 0; id < comp_.size(); ++id) {
      const Instruction& instr = comp_.instr(id);
      if (!can_be_fused_producer(instr) || !is_cheap_to_duplicate(instr.opcode) ||
          id == comp_.root())
        continue;
      if ((reads_collective(id) && !is_free_to_recompute(instr.opcode)) || users(id).empty())
        continue;
      if (!std::all_of(users(id).begin(), users(id).end(),
                       [&](InstrId u) { return absorbs(u, instr.opcode); }))
        continue;
      const auto own = static_cast<double>(instr.shape.byte_size());
      double reads = 0;
      for (int i = 0; i < instr.operand_count(); ++i) {
        const InstrId q = instr.operand(i);
        const Shape& qs = comp_.instr(q).shape;
        if (qs.is_array() && qs.rank() == 0) continue;
        if (std::find(instr.operands.begin(), instr.operands.begin() + i, q) !=
            instr.operands.begin() + i)
          continue;
        double r = duplicable_[static_cast<size_t>(q)] ? reads_through[static_cast<size_t>(q)]
                                                       : static_cast<double>(qs.byte_size());
        if (i == 0 && is_window_read(instr.opcode)) r = std::min(r, own);
        reads += r;
      }
      reads_through[static_cast<size_t>(id)] = reads;
      duplicable_[static_cast<size_t>(id)] =
          is_free_to_recompute(instr.opcode) || (instr.shape.rank() > 0 && reads <= own);
    }
  }
  bool duplicable(InstrId id) const { return duplicable_[static_cast<size_t>(id)]; }
  // Reads a duplicable op that no group has absorbed (yet): it will be
  // recomputed inside this op's kernel.
  bool has_deferred_operand(InstrId id) const {
    const auto& ops = comp_.instr(id).operands;
    return std::any_of(ops.begin(), ops.end(),
                       [&](InstrId q) { return duplicable(q) && group(q) < 0; });
  }

  // ---- multi-output fusion (XLA's producer-consumer multi-output fusion): a reduce's kernel also
  // computes and writes the loop kernel result p it reduces, so p is read from HBM once less.
  // Conditions: docs/compiler-backend.md#multi-output-fusion
  void form_multi_output_fusions() {
    const auto n = static_cast<size_t>(comp_.size());
    std::vector<int32_t> memberships(n, 0);
    for (const FusionGroup& g : plan_.groups)
      for (InstrId m : g.members) ++memberships[static_cast<size_t>(m)];
    auto recomputed = [&](InstrId m) { return memberships[static_cast<size_t>(m)] > 1; };
    auto root_of = [](const FusionGroup& g) {
      return *std::max_element(g.members.begin(), g.members.end());
    };
    auto any_waits = [&](const FusionGroup& g) {
      return std::any_of(g.members.begin(), g.members.end(),
                         [&](InstrId m) { return waits_for_collective(m); });
    };
    bool merged_any = false;
    for (size_t ri = 0; ri < plan_.groups.size(); ++ri) {
      if (plan_.groups[ri].members.empty()) continue;
      const InstrId root = root_of(plan_.groups[ri]);
      const Instruction& reduce = comp_.instr(root);
      if (reduce.opcode != Opcode::kReduce || !reduce.shape.is_array() ||
          any_waits(plan_.groups[ri]))
        continue;
      const std::vector<int64_t>& loop_dims = comp_.instr(reduce.operand(0)).shape.dims();
      const auto consumer = static_cast<int32_t>(ri);
      for (bool merged = true; merged;) {
        merged = false;
        for (InstrId m : plan_.groups[ri].members) {
          for (InstrId p : comp_.instr(m).operands) {
            const int32_t pg = group(p);
            if (pg == consumer || recomputed(p) || duplicable(p) || p == comp_.root()) continue;
            const Instruction& pi = comp_.instr(p);
            if (!is_elementwise(pi.opcode) || !pi.shape.is_array() || pi.shape.dims() != loop_dims)
              continue;
            // The loop kernel: p's group, or p alone when it is unfused.
            if (pg >= 0) {
              const FusionGroup& producer = plan_.groups[static_cast<size_t>(pg)];
              if (root_of(producer) != p || any_waits(producer) ||
                  std::any_of(producer.members.begin(), producer.members.end(),
                              [&](InstrId x) { return !is_loop_fusible(comp_.instr(x).opcode); }))
                continue;
            } else if (waits_for_collective(p)) {
              continue;
            }
            const bool readers_ok = std::all_of(users(p).begin(), users(p).end(), [&](InstrId u) {
              return !recomputed(u) && (group(u) == consumer || u > root);
            });
            if (!readers_ok || !keeps_inputs_lifetimes(p, pg)) continue;
            if (pg >= 0) {
              absorb_group(plan_.groups[static_cast<size_t>(pg)], consumer, memberships);
            } else {
              plan_.groups[ri].members.push_back(p);
              plan_.group_of[static_cast<size_t>(p)] = consumer;
              memberships[static_cast<size_t>(p)] = 1;
            }
            merged = merged_any = true;
            break;
          }
          if (merged) break;
        }
      }
    }
    if (merged_any) drop_empty_groups();
  }

  // The merged kernel runs at the reduce's place, not at p's. That is
  // only harmless when p's kernel frees no more than it writes: the inputs
  // it reads last (no reader after p; parameters live throughout) sum to
  // at most p's bytes. Otherwise it is a kernel the schedule runs early to
  // end bigger values' lives, e.g. compare(logits, max) of a backward pass
  // that turns the f32 logits into a 4x smaller mask: merged into the
  // backward reduce that reads the mask, it would keep the logits alive.
  bool keeps_inputs_lifetimes(InstrId p, int32_t producer_group) const {
    std::vector<InstrId> kernel = {p};
    if (producer_group >= 0) kernel = plan_.groups[static_cast<size_t>(producer_group)].members;
    std::vector<InstrId> freed;
    for (InstrId m : kernel) {
      for (InstrId input : comp_.instr(m).operands) {
        if (std::find(kernel.begin(), kernel.end(), input) != kernel.end()) continue;
        if (comp_.instr(input).opcode == Opcode::kParameter) continue;
        const auto readers = users(input);
        if (std::all_of(readers.begin(), readers.end(), [&](InstrId u) { return u <= p; }))
          freed.push_back(input);
      }
    }
    std::sort(freed.begin(), freed.end());
    freed.erase(std::unique(freed.begin(), freed.end()), freed.end());
    int64_t freed_bytes = 0;
    for (InstrId input : freed) freed_bytes += comp_.instr(input).shape.byte_size();
    return freed_bytes <= comp_.instr(p).shape.byte_size();
  }

  // Moves every member of `from` into group `into` (a member recomputed in
  // both is listed once).
  void absorb_group(FusionGroup& from, int32_t into, std::vector<int32_t>& memberships) {
    auto& target = plan_.groups[static_cast<size_t>(into)].members;
    const auto from_index = static_cast<int32_t>(&from - plan_.groups.data());
    for (InstrId m : from.members) {
      const auto sm = static_cast<size_t>(m);
      if (std::find(target.begin(), target.end(), m) != target.end()) {
        --memberships[sm];
      } else {
        target.push_back(m);
      }
      if (plan_.group_of[sm] == from_index) plan_.group_of[sm] = into;
    }
    from.members.clear();
  }

  void drop_empty_groups() {
    std::vector<int32_t> new_index(plan_.groups.size(), -1);
    std::vector<FusionGroup> kept;
    for (size_t g = 0; g < plan_.groups.size(); ++g) {
      if (plan_.groups[g].members.empty()) continue;
      new_index[g] = static_cast<int32_t>(kept.size());
      kept.push_back(std::move(plan_.groups[g]));
    }
    plan_.groups = std::move(kept);
    for (int32_t& g : plan_.group_of)
      if (g >= 0) g = new_index[static_cast<size_t>(g)];
  }

  // A kernel reading a collective result waits for the collective: it is
  // never fused as a producer and absorbs only cheap producers, so
  // independent work stays in kernels of its own that can run while the
  // collective is in flight (the scheduler places them there).
  bool reads_collective(InstrId id) const { return reads_collective_[static_cast<size_t>(id)]; }
  // Reads a collective, or is a slice absorbed into a kernel that does.
  bool waits_for_collective(InstrId id) const {
    return reads_collective(id) || restricted_[static_cast<size_t>(id)];
  }

  // Duplicable ops no group absorbed whole (their users are in several
  // groups) are recomputed inside each of their users' groups. Reverse id
  // order, so a duplicable operand (a constant under a broadcast) follows
  // its user into all its groups. A duplicable op with a user in no group
  // (a broadcast kept for a tuple) cannot be recomputed there: a
  // broadcast/iota/constant stays an unfused op, anything else becomes a
  // kernel of its own.
  void duplicate_cheap_producers() {
    std::vector<std::vector<int32_t>> groups_containing(static_cast<size_t>(comp_.size()));
    for (InstrId id = 0; id < comp_.size(); ++id)
      if (group(id) >= 0) groups_containing[static_cast<size_t>(id)] = {group(id)};
    for (InstrId id = comp_.size() - 1; id >= 0; --id) {
      const Instruction& instr = comp_.instr(id);
      if (group(id) >= 0 || !duplicable(id)) continue;
      std::vector<int32_t> user_groups;
      bool all_users_fused = true;
      for (InstrId u : users(id)) {
        const auto& ug = groups_containing[static_cast<size_t>(u)];
        if (ug.empty()) {
          all_users_fused = false;
          break;
        }
        user_groups.insert(user_groups.end(), ug.begin(), ug.end());
      }
      if (!all_users_fused) {
        if (is_free_to_recompute(instr.opcode)) continue;
        int32_t own = new_group({id});
        grow(own);
        if (plan_.groups[static_cast<size_t>(own)].members.size() == 1) {
          drop_last_group(id);
          continue;
        }
        for (InstrId m : plan_.groups[static_cast<size_t>(own)].members)
          groups_containing[static_cast<size_t>(m)] = {own};
        continue;
      }
      std::sort(user_groups.begin(), user_groups.end());
      user_groups.erase(std::unique(user_groups.begin(), user_groups.end()), user_groups.end());
      // group_of names the group of the first (lowest-id) user (its
      // group_of when that user is duplicated too).
      InstrId first_user = *std::min_element(users(id).begin(), users(id).end());
      plan_.group_of[static_cast<size_t>(id)] = group(first_user);
      for (int32_t ug : user_groups) plan_.groups[static_cast<size_t>(ug)].members.push_back(id);
      groups_containing[static_cast<size_t>(id)] = std::move(user_groups);
    }
  }

  const Computation& comp_;
  UserLists users_;
  std::vector<bool> reads_collective_;
  std::vector<bool> restricted_;           // window reads pulled into a collective reader's kernel
  std::vector<bool> restricted_if_fused_;  // window reads with a user that waits for a collective
  std::vector<bool> duplicable_;           // mark_duplicable
  FusionPlan plan_;
};

}  // namespace

FusionPlan plan_fusion(const Computation& computation) { return FusionPlanner(computation).run(); }

std::vector<bool> duplicable_ops(const Computation& computation) {
  return FusionPlanner(computation).duplicable_ops();
}

std::vector<bool> duplicated_members(const FusionPlan& plan, int instruction_count) {
  std::vector<int32_t> memberships(static_cast<size_t>(instruction_count), 0);
  for (const FusionGroup& g : plan.groups)
    for (InstrId m : g.members) ++memberships[static_cast<size_t>(m)];
  std::vector<bool> duplicated(static_cast<size_t>(instruction_count), false);
  for (size_t i = 0; i < memberships.size(); ++i) duplicated[i] = memberships[i] > 1;
  return duplicated;
}

}  // namespace podsim::compiler
