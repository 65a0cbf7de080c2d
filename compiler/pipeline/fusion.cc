// Fusion planning (fusion.h). Consumers are visited from the last
// instruction to the first, as XLA's instruction fusion visits them in
// reverse post order; each group grows through a max-heap of candidate
// producers (highest id first), so every user of a candidate that can join
// the group has joined before the candidate is examined. Each operand edge
// is examined at most once per group: O(E log E) in all.
#include "compiler/pipeline/fusion.h"

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

bool is_cheap_to_duplicate(Opcode op) {
  return op == Opcode::kBroadcast || op == Opcode::kIota || op == Opcode::kConstant;
}

bool is_window_read(Opcode op) { return op == Opcode::kSlice || op == Opcode::kDynamicSlice; }

namespace {

bool is_dot_like(Opcode op) { return op == Opcode::kDot || op == Opcode::kConvolution; }

// Can this instruction be a fusion member that reads other members?
bool can_absorb_producers(const Instruction& instr) {
  if (!instr.shape.is_array()) return false;
  return is_loop_fusible(instr.opcode) || instr.opcode == Opcode::kReduce || is_dot_like(instr.opcode);
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
  }

  FusionPlan run() {
    form_output_fusions();
    for (InstrId id = comp_.size() - 1; id >= 0; --id) {
      int32_t g = group(id);
      if (g >= 0) {
        if (plan_.groups[static_cast<size_t>(g)].members.back() == id) grow(g);  // output fusion root
        continue;
      }
      // A broadcast/iota/constant is not worth a kernel of its own: it is
      // recomputed inside its users' kernels (duplicate_cheap_producers).
      if (!can_absorb_producers(comp_.instr(id)) || is_cheap_to_duplicate(comp_.instr(id).opcode)) continue;
      int32_t fresh = new_group({id});
      grow(fresh);
      if (plan_.groups[static_cast<size_t>(fresh)].members.size() == 1) drop_last_group(id);
    }
    duplicate_cheap_producers();
    for (FusionGroup& g : plan_.groups) std::sort(g.members.begin(), g.members.end());
    return std::move(plan_);
  }

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
    if (consumer.opcode != Opcode::kDynamicUpdateSlice || consumer.operand(1) != update) return false;
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
      if (group(p) >= 0 || !can_be_fused_producer(producer) || p == comp_.root() || reads_collective(p)) continue;
      bool all_users_inside = std::all_of(users(p).begin(), users(p).end(), [&](InstrId u) { return group(u) == g; });
      if (!all_users_inside) continue;
      plan_.group_of[static_cast<size_t>(p)] = g;
      plan_.groups[static_cast<size_t>(g)].members.push_back(p);
      if (is_window_read(producer.opcode))
        restricted_[static_cast<size_t>(p)] =
            std::any_of(users(p).begin(), users(p).end(), [&](InstrId u) { return waits_for_collective(u); });
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
      if (!waits || is_cheap_to_duplicate(producer) || is_window_read(producer)) candidates.push(op);
    }
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

  // Broadcast/iota/constant whose users are all fused (in any groups) are
  // recomputed inside each of those groups. Reverse id order, so a constant
  // under a duplicated broadcast follows the broadcast into all its groups.
  void duplicate_cheap_producers() {
    std::vector<std::vector<int32_t>> groups_containing(static_cast<size_t>(comp_.size()));
    for (InstrId id = 0; id < comp_.size(); ++id)
      if (group(id) >= 0) groups_containing[static_cast<size_t>(id)] = {group(id)};
    for (InstrId id = comp_.size() - 1; id >= 0; --id) {
      const Instruction& instr = comp_.instr(id);
      if (group(id) >= 0 || !is_cheap_to_duplicate(instr.opcode) || !can_be_fused_producer(instr)) continue;
      if (users(id).empty() || id == comp_.root()) continue;
      std::vector<int32_t> user_groups;
      bool all_users_fused = true;
      for (InstrId u : users(id)) {
        const auto& ug = groups_containing[static_cast<size_t>(u)];
        if (ug.empty() || !can_absorb_producers(comp_.instr(u))) {
          all_users_fused = false;
          break;
        }
        user_groups.insert(user_groups.end(), ug.begin(), ug.end());
      }
      if (!all_users_fused) continue;
      std::sort(user_groups.begin(), user_groups.end());
      user_groups.erase(std::unique(user_groups.begin(), user_groups.end()), user_groups.end());
      // group_of names the group of the first (lowest-id) user.
      InstrId first_user = *std::min_element(users(id).begin(), users(id).end());
      plan_.group_of[static_cast<size_t>(id)] = groups_containing[static_cast<size_t>(first_user)].front();
      for (int32_t ug : user_groups) plan_.groups[static_cast<size_t>(ug)].members.push_back(id);
      groups_containing[static_cast<size_t>(id)] = std::move(user_groups);
    }
  }

  const Computation& comp_;
  UserLists users_;
  std::vector<bool> reads_collective_;
  std::vector<bool> restricted_;  // window reads pulled into a collective reader's kernel
  FusionPlan plan_;
};

}  // namespace

FusionPlan plan_fusion(const Computation& computation) { return FusionPlanner(computation).run(); }

std::vector<bool> duplicated_members(const FusionPlan& plan, int instruction_count) {
  std::vector<int32_t> memberships(static_cast<size_t>(instruction_count), 0);
  for (const FusionGroup& g : plan.groups)
    for (InstrId m : g.members) ++memberships[static_cast<size_t>(m)];
  std::vector<bool> duplicated(static_cast<size_t>(instruction_count), false);
  for (size_t i = 0; i < memberships.size(); ++i) duplicated[i] = memberships[i] > 1;
  return duplicated;
}

}  // namespace podsim::compiler
