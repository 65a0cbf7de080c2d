// PropagationState: reachability, users, control-flow groups.
#include "compiler/propagation/propagation_state.h"

#include <set>

namespace podsim::compiler::propagation {

PropagationState::PropagationState(const Module& module) : module_(module) {
  const size_t n = static_cast<size_t>(module.computation_count());
  shardings_.resize(n);
  provided_.resize(n);
  changed_at_.resize(n);
  users_.resize(n);
  callers_.resize(n);
  // Computations reachable from the entry through while, call and
  // conditional (reduce and collective bodies are scalar functions and are
  // never partitioned).
  std::vector<CompId> stack{module.entry_id()};
  std::set<CompId> seen{module.entry_id()};
  while (!stack.empty()) {
    CompId c = stack.back();
    stack.pop_back();
    reachable_.push_back(c);
    const Computation& comp = module.computation(c);
    for (InstrId i = 0; i < comp.size(); ++i) {
      const Instruction& in = comp.instr(i);
      if (in.opcode != Opcode::kWhile && in.opcode != Opcode::kCall &&
          in.opcode != Opcode::kConditional)
        continue;
      for (CompId callee : in.called) {
        if (!callers_[idx(callee)]) callers_[idx(callee)] = CallSite{c, i};
        if (seen.insert(callee).second) stack.push_back(callee);
      }
    }
  }
  for (CompId c : reachable_) {
    const Computation& comp = module.computation(c);
    shardings_[idx(c)].resize(static_cast<size_t>(comp.size()));
    provided_[idx(c)].assign(static_cast<size_t>(comp.size()), false);
    changed_at_[idx(c)].assign(static_cast<size_t>(comp.size()), 0);
    users_[idx(c)].emplace(comp);
  }
  for (CompId c : reachable_) {
    const Computation& comp = module.computation(c);
    for (InstrId i = 0; i < comp.size(); ++i) {
      const Instruction& in = comp.instr(i);
      if (in.opcode == Opcode::kWhile) {
        const Computation& cond = module.computation(in.while_condition());
        const Computation& body = module.computation(in.while_body());
        add_group({{c, i},
                   {in.while_body(), body.parameters().at(0)},
                   {in.while_body(), body.root()},
                   {in.while_condition(), cond.parameters().at(0)}});
      } else if (in.opcode == Opcode::kCall) {
        add_group({{c, i}, {in.to_apply(), module.computation(in.to_apply()).root()}});
      } else if (in.opcode == Opcode::kConditional) {
        // The result and every branch root agree.
        std::vector<ValueRef> members{{c, i}};
        for (CompId branch : in.called)
          members.push_back({branch, module.computation(branch).root()});
        add_group(std::move(members));
      }
    }
  }
}

void PropagationState::add_group(std::vector<ValueRef> members) {
  // Merge with existing groups of any member (a body root may also be the
  // root of a nested call, ...).
  std::set<int> existing;
  for (const auto& m : members)
    if (auto it = group_of_.find(m); it != group_of_.end()) existing.insert(it->second);
  std::vector<ValueRef> all = members;
  for (int g : existing) {
    for (const auto& m : groups_[static_cast<size_t>(g)]) all.push_back(m);
    groups_[static_cast<size_t>(g)].clear();
  }
  std::set<ValueRef> unique(all.begin(), all.end());
  int id = static_cast<int>(groups_.size());
  groups_.emplace_back(unique.begin(), unique.end());
  for (const auto& m : unique) group_of_[m] = id;
}

void PropagationState::set_provided(ValueRef r, Sharding s) {
  shardings_[idx(r.comp)][idx(r.instr)] = std::move(s);
  provided_[idx(r.comp)][idx(r.instr)] = true;
  stamp(r);
}

void PropagationState::freeze(ValueRef r) {
  provided_[idx(r.comp)][idx(r.instr)] = true;
  stamp(r);
}

void PropagationState::set(ValueRef r, const Sharding& s) {
  auto it = group_of_.find(r);
  if (it == group_of_.end()) {
    shardings_[idx(r.comp)][idx(r.instr)] = s;
    stamp(r);
    return;
  }
  for (const auto& m : groups_[static_cast<size_t>(it->second)]) {
    if (provided(m)) continue;
    shardings_[idx(m.comp)][idx(m.instr)] = s;
    stamp(m);
  }
}

void PropagationState::sync_provided_groups() {
  for (const auto& group : groups_) {
    const ValueRef* source = nullptr;
    for (const auto& m : group)
      if (provided(m)) {
        source = &m;
        break;
      }
    if (!source || !sharding(*source)) continue;
    Sharding s = *sharding(*source);
    for (const auto& m : group) {
      if (provided(m)) continue;
      set_provided(m, s);
    }
  }
}

}  // namespace podsim::compiler::propagation
