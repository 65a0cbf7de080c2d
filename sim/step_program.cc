// Flattening of the per-device schedule into steps (see step_program.h).
#include "sim/step_program.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <fmt/format.h>
#include <unordered_map>

#include "common/error.h"
#include "compiler/pipeline/compile.h"

namespace podsim::sim {

using compiler::CompId;
using compiler::Computation;
using compiler::Instruction;
using compiler::InstrId;
using compiler::Opcode;

namespace {

// The collectives a value reads through free ops (ordinals, ascending,
// distinct); per element for tuples, so a get-tuple-element of loop state
// only waits for its element's collectives.
using Ordinals = std::vector<int32_t>;

struct Pending {
  Ordinals reads;
  std::vector<Pending> elements;
};

void add_reads(Ordinals& into, const Ordinals& more) {
  if (more.empty()) return;
  if (into.empty()) {
    into = more;
    return;
  }
  Ordinals both;
  both.reserve(into.size() + more.size());
  std::set_union(into.begin(), into.end(), more.begin(), more.end(), std::back_inserter(both));
  into = std::move(both);
}

Pending merged(Ordinals reads) { return Pending{std::move(reads), {}}; }

class Flattener {
 public:
  explicit Flattener(const FlattenInputs& in) : in_(in), module_(in.program.module) {}

  StepProgram run() {
    flatten(module_.entry_id(), {});
    return std::move(out_);
  }

 private:
  const std::vector<InstrId>& order_of(CompId comp) {
    const auto& schedule = in_.program.schedule;
    if (static_cast<size_t>(comp) < schedule.size() && !schedule[static_cast<size_t>(comp)].empty())
      return schedule[static_cast<size_t>(comp)];
    auto& order = default_order_[comp];
    if (order.empty()) {
      order.resize(static_cast<size_t>(module_.computation(comp).size()));
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<InstrId>(i);
    }
    return order;
  }

  std::optional<int64_t> trip_count(CompId comp, InstrId id) {
    const auto key = (static_cast<int64_t>(comp) << 32) | static_cast<uint32_t>(id);
    auto it = trips_.find(key);
    if (it != trips_.end()) return it->second;
    const auto trips = compiler::known_trip_count(module_, module_.computation(comp).instr(id));
    trips_.emplace(key, trips);
    return trips;
  }

  const compiler::FusionPlan* fusion_of(CompId comp) const {
    const auto& fusion = in_.program.fusion;
    if (static_cast<size_t>(comp) >= fusion.size()) return nullptr;
    const auto& plan = fusion[static_cast<size_t>(comp)];
    if (plan.group_of.size() != static_cast<size_t>(module_.computation(comp).size())) return nullptr;
    return &plan;
  }

  int32_t op_index(CompId comp, InstrId id, const compiler::FusionGroup* group) {
    const auto key = (static_cast<int64_t>(comp) << 32) | static_cast<uint32_t>(id);
    auto it = op_of_.find(key);
    if (it != op_of_.end()) return it->second;
    const Computation& c = module_.computation(comp);
    const Instruction& instr = c.instr(id);
    OpInfo info;
    info.name = instr.name;
    info.op_name = instr.op_name;
    info.opcode = group ? "fusion" : std::string(compiler::opcode_name(instr.opcode));
    info.shape = instr.shape.to_string(false);
    if (group) info.cost = in_.costs.fusion(c, *group);
    else if (classify(instr) == OpClass::kCollective) {
      info.collective = in_.collectives.spec_of(c, instr);
      info.collective_kind = std::string(compiler::opcode_name(collective_opcode(instr)));
    }
    else info.cost = in_.costs.instruction(c, instr);
    const auto index = static_cast<int32_t>(out_.ops.size());
    out_.ops.push_back(std::move(info));
    op_of_.emplace(key, index);
    return index;
  }

  void emit(int32_t op, const Ordinals& reads, bool collective) {
    if (static_cast<int64_t>(out_.steps.size()) >= in_.max_steps ||
        out_.waits.size() + reads.size() > std::numeric_limits<uint32_t>::max())
      throw UserError(fmt::format("the flattened program exceeds {} steps (while loops unrolled)", in_.max_steps),
                      "reduce the trip counts or the number of layers");
    Step step;
    step.op = op;
    step.collective = collective;
    step.wait_begin = static_cast<uint32_t>(out_.waits.size());
    out_.waits.insert(out_.waits.end(), reads.begin(), reads.end());
    step.wait_end = static_cast<uint32_t>(out_.waits.size());
    if (step.collective) out_.collective_steps.push_back(static_cast<int32_t>(out_.steps.size()));
    else out_.total_compute_s += out_.ops[static_cast<size_t>(step.op)].cost.seconds;
    out_.steps.push_back(step);
  }

  Pending flatten(CompId comp, const std::vector<Pending>& params) {
    const Computation& c = module_.computation(comp);
    const compiler::FusionPlan* fusion = fusion_of(comp);
    std::vector<Pending> pending(static_cast<size_t>(c.size()));
    auto reads_of = [&](InstrId id) -> const Ordinals& { return pending[static_cast<size_t>(id)].reads; };
    auto operand_reads = [&](const Instruction& instr, Ordinals& into) {
      for (InstrId op : instr.operands) add_reads(into, reads_of(op));
    };
    auto operands_read = [&](const Instruction& instr) {
      Ordinals reads;
      operand_reads(instr, reads);
      return reads;
    };
    for (InstrId id : order_of(comp)) {
      const Instruction& instr = c.instr(id);
      Pending& mine = pending[static_cast<size_t>(id)];
      const int32_t group_index = fusion ? fusion->group_of[static_cast<size_t>(id)] : -1;
      if (group_index >= 0) {
        const auto& group = fusion->groups[static_cast<size_t>(group_index)];
        if (group.members.empty() || group.members.back() != id) continue;  // runs at its root
        Ordinals reads;
        for (InstrId member : group.members) operand_reads(c.instr(member), reads);
        emit(op_index(comp, id, &group), reads, false);
        continue;
      }
      switch (instr.opcode) {
        case Opcode::kParameter: {
          const auto n = static_cast<size_t>(instr.attrs.parameter_number);
          if (n < params.size()) mine = params[n];
          break;
        }
        case Opcode::kTuple:
          for (InstrId op : instr.operands) mine.elements.push_back(pending[static_cast<size_t>(op)]);
          mine.reads = operands_read(instr);
          break;
        case Opcode::kGetTupleElement: {
          const Pending& tuple = pending[static_cast<size_t>(instr.operand(0))];
          const auto index = static_cast<size_t>(instr.attrs.tuple_index);
          mine = index < tuple.elements.size() ? tuple.elements[index] : merged(tuple.reads);
          break;
        }
        case Opcode::kWhile: {
          Pending state = pending[static_cast<size_t>(instr.operand(0))];
          const std::optional<int64_t> trips = trip_count(comp, id);
          if (!trips) ++out_.unknown_trip_counts;
          for (int64_t i = 0; i < trips.value_or(1); ++i) state = flatten(instr.while_body(), {state});
          mine = std::move(state);
          break;
        }
        case Opcode::kCall: {
          std::vector<Pending> args;
          for (InstrId op : instr.operands) args.push_back(pending[static_cast<size_t>(op)]);
          mine = flatten(instr.to_apply(), args);
          break;
        }
        case Opcode::kConditional: {
          // The branch taken is a run-time value: the first one runs (the
          // pred form's true branch), counted in conditionals_first_branch.
          ++out_.conditionals_first_branch;
          if (instr.called.empty() || instr.operand_count() < 2) break;
          mine = flatten(instr.called.front(), {pending[static_cast<size_t>(instr.operand(1))]});
          add_reads(mine.reads, reads_of(instr.operand(0)));
          break;
        }
        default:
          switch (classify(instr)) {
            case OpClass::kFree: mine = merged(operands_read(instr)); break;
            case OpClass::kCollective:
              emit(op_index(comp, id, nullptr), operands_read(instr), true);
              mine = merged({static_cast<int32_t>(out_.collective_steps.size()) - 1});
              break;
            default: emit(op_index(comp, id, nullptr), operands_read(instr), false); break;
          }
      }
    }
    return c.root() == compiler::kNoId ? Pending{} : pending[static_cast<size_t>(c.root())];
  }

  const FlattenInputs& in_;
  const compiler::Module& module_;
  StepProgram out_;
  std::unordered_map<int64_t, int32_t> op_of_;
  std::unordered_map<int64_t, std::optional<int64_t>> trips_;
  std::unordered_map<CompId, std::vector<InstrId>> default_order_;
};

}  // namespace

StepProgram flatten_program(const FlattenInputs& inputs) { return Flattener(inputs).run(); }

}  // namespace podsim::sim
