// Marker forwarding + dead-code elimination (cleanup.h): one backward
// marking pass from the root and one rebuild pass per computation, O(n).
#include "compiler/backend/cleanup.h"

#include <vector>

namespace podsim::compiler {
namespace {

// A custom-call of `target` that only restates its operand's value.
bool is_marker(const Computation& comp, const Instruction& instr, const char* target) {
  return instr.opcode == Opcode::kCustomCall && instr.attrs.custom_call_target == target &&
         instr.operand_count() == 1 && comp.instr(instr.operand(0)).shape == instr.shape;
}

// Forwards the markers of `target` to their operands; with remove_dead also
// drops every instruction whose value reaches no root.
CleanupStats clean_computation(Computation& comp, const char* target, bool remove_dead) {
  CleanupStats stats;
  const int n = comp.size();
  if (n == 0 || comp.root() == kNoId) return stats;
  // resolved[i]: the instruction whose value i stands for (through markers).
  std::vector<InstrId> resolved(static_cast<size_t>(n));
  std::vector<bool> marker(static_cast<size_t>(n), false);
  for (InstrId id = 0; id < n; ++id) {
    const Instruction& instr = comp.instr(id);
    marker[static_cast<size_t>(id)] = is_marker(comp, instr, target);
    resolved[static_cast<size_t>(id)] =
        marker[static_cast<size_t>(id)] ? resolved[static_cast<size_t>(instr.operand(0))] : id;
  }
  std::vector<bool> live(static_cast<size_t>(n), false);
  live[static_cast<size_t>(resolved[static_cast<size_t>(comp.root())])] = true;
  if (!remove_dead)
    for (InstrId id = 0; id < n; ++id)
      live[static_cast<size_t>(id)] = !marker[static_cast<size_t>(id)];
  for (InstrId id = n - 1; id >= 0 && remove_dead; --id) {
    const Instruction& instr = comp.instr(id);
    if (instr.opcode == Opcode::kParameter) live[static_cast<size_t>(id)] = true;
    if (!live[static_cast<size_t>(id)]) continue;
    for (InstrId op : instr.operands)
      live[static_cast<size_t>(resolved[static_cast<size_t>(op)])] = true;
  }
  // Compaction in place: a kept instruction only moves down (its new id is
  // at most its old one), so no second instruction vector is allocated.
  std::vector<InstrId> new_id(static_cast<size_t>(n), kNoId);
  std::vector<Instruction>& instructions = comp.mutable_instructions();
  InstrId kept = 0;
  for (InstrId id = 0; id < n; ++id) {
    Instruction& instr = instructions[static_cast<size_t>(id)];
    if (!live[static_cast<size_t>(id)]) {
      if (marker[static_cast<size_t>(id)])
        ++stats.markers_removed;
      else
        ++stats.dead_instructions_removed;
      continue;
    }
    for (InstrId& op : instr.operands)
      op = new_id[static_cast<size_t>(resolved[static_cast<size_t>(op)])];
    new_id[static_cast<size_t>(id)] = kept;
    if (kept != id) instructions[static_cast<size_t>(kept)] = std::move(instr);
    ++kept;
  }
  const InstrId root = new_id[static_cast<size_t>(resolved[static_cast<size_t>(comp.root())])];
  instructions.erase(instructions.begin() + kept, instructions.end());
  comp.set_root(root);
  return stats;
}

}  // namespace

std::vector<bool> control_computations(const Module& module) {
  std::vector<bool> control(static_cast<size_t>(module.computation_count()), false);
  if (module.entry_id() == kNoId) return control;
  std::vector<CompId> work{module.entry_id()};
  control[static_cast<size_t>(module.entry_id())] = true;
  while (!work.empty()) {
    CompId c = work.back();
    work.pop_back();
    for (const Instruction& instr : module.computation(c).instructions()) {
      if (instr.opcode != Opcode::kWhile && instr.opcode != Opcode::kCall) continue;
      for (CompId callee : instr.called)
        if (callee != kNoId && !control[static_cast<size_t>(callee)]) {
          control[static_cast<size_t>(callee)] = true;
          work.push_back(callee);
        }
    }
  }
  return control;
}

CleanupStats remove_markers_and_dead_code(Module& module) {
  CleanupStats total;
  const std::vector<bool> control = control_computations(module);
  for (CompId c = 0; c < module.computation_count(); ++c) {
    if (!control[static_cast<size_t>(c)]) continue;
    CleanupStats s =
        clean_computation(module.mutable_computation(c), "Sharding", /*remove_dead=*/true);
    total.markers_removed += s.markers_removed;
    total.dead_instructions_removed += s.dead_instructions_removed;
  }
  return total;
}

int64_t remove_stop_gradients(Module& module) {
  int64_t removed = 0;
  const std::vector<bool> control = control_computations(module);
  for (CompId c = 0; c < module.computation_count(); ++c)
    if (control[static_cast<size_t>(c)])
      removed += clean_computation(module.mutable_computation(c), kStopGradientTarget,
                                   /*remove_dead=*/false)
                     .markers_removed;
  return removed;
}

}  // namespace podsim::compiler
