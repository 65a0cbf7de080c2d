// Lock-step evaluator (see evaluator.h).
#include "compiler/interpreter/evaluator.h"

#include <fmt/format.h>

#include "compiler/interpreter/collective_ops.h"
#include "compiler/interpreter/local_ops.h"

namespace podsim::compiler::interp {

namespace {

// Index of the last instruction using each instruction (-1 if unused), after
// checking that operands precede their users.
std::vector<InstrId> last_uses(const Computation& comp) {
  std::vector<InstrId> last(static_cast<size_t>(comp.size()), -1);
  for (InstrId i = 0; i < comp.size(); ++i) {
    const Instruction& in = comp.instr(i);
    for (InstrId op : in.operands) {
      if (op < 0 || op >= i) fail(in, "operand is not defined before its use");
      last[static_cast<size_t>(op)] = i;
    }
  }
  return last;
}

}  // namespace

const ScalarFunction& Evaluator::combiner(CompId computation, int64_t partition_id) {
  auto& slot = combiners_[{computation, partition_id}];
  if (!slot) slot = std::make_unique<ScalarFunction>(module_, computation, partition_id, this);
  return *slot;
}

Literal Evaluator::run_single(CompId computation, std::vector<Literal> args, int64_t partition_id) {
  std::vector<std::vector<Literal>> lane_args;
  lane_args.push_back(std::move(args));
  return std::move(run(computation, std::move(lane_args), {partition_id})[0]);
}

std::vector<Literal> Evaluator::evaluate_while(const Instruction& instr, std::vector<Literal> state,
                                               const std::vector<int64_t>& partition_ids) {
  if (instr.called.size() != 2) fail(instr, "while needs a condition and a body");
  for (int64_t trip = 0;; ++trip) {
    if (trip >= kMaxWhileIterations)
      fail(instr, fmt::format("did not terminate within {} iterations", kMaxWhileIterations));
    std::vector<std::vector<Literal>> cond_args;
    for (const Literal& s : state) cond_args.push_back({s});
    const std::vector<Literal> cond = run(instr.while_condition(), std::move(cond_args), partition_ids);
    bool first = false;
    for (size_t l = 0; l < cond.size(); ++l) {
      if (cond[l].is_tuple() || !cond[l].shape().is_scalar() || cond[l].shape().dtype() != DType::kPred)
        fail(instr, "condition must return a pred scalar");
      const bool value = cond[l].values()[0] != 0.0;
      if (l == 0) first = value;
      if (value != first)
        fail(instr, fmt::format("devices disagree on while condition (device {}: {}, device {}: {})",
                                partition_ids[0], first, partition_ids[l], value));
    }
    if (!first) return state;
    std::vector<std::vector<Literal>> body_args;
    for (Literal& s : state) {
      body_args.emplace_back();
      body_args.back().push_back(std::move(s));
    }
    state = run(instr.while_body(), std::move(body_args), partition_ids);
  }
}

std::vector<Literal> Evaluator::run(CompId computation, std::vector<std::vector<Literal>> args,
                                    const std::vector<int64_t>& partition_ids) {
  if (computation < 0 || computation >= module_.computation_count())
    throw UserError(fmt::format("called computation id {} does not exist", computation));
  const Computation& comp = module_.computation(computation);
  if (comp.root() < 0 || comp.root() >= comp.size())
    throw UserError(fmt::format("computation '{}' has no root", comp.name()));
  const size_t lanes = partition_ids.size();
  const size_t num_params = comp.parameters().size();
  for (const auto& lane_args : args)
    if (lane_args.size() != num_params)
      throw UserError(fmt::format("computation '{}' takes {} arguments, got {}", comp.name(), num_params,
                                  lane_args.size()));
  const std::vector<InstrId> last_use = last_uses(comp);
  std::vector<std::vector<Literal>> values(lanes, std::vector<Literal>(static_cast<size_t>(comp.size())));
  std::vector<bool> parameter_taken(num_params, false);
  Operands operands;

  for (InstrId i = 0; i < comp.size(); ++i) {
    const Instruction& in = comp.instr(i);
    const auto ui = static_cast<size_t>(i);
    auto lane_operands = [&](size_t l) {
      operands.clear();
      for (InstrId op : in.operands) operands.push_back(&values[l][static_cast<size_t>(op)]);
      return operands;
    };
    if (in.opcode == Opcode::kParameter) {
      const int64_t number = in.attrs.parameter_number;
      if (number < 0 || number >= static_cast<int64_t>(num_params) || parameter_taken[static_cast<size_t>(number)])
        fail(in, "parameter number out of range or repeated");
      parameter_taken[static_cast<size_t>(number)] = true;
      for (size_t l = 0; l < lanes; ++l) {
        Literal& arg = args[l][static_cast<size_t>(number)];
        if (!(arg.shape() == in.shape))
          throw UserError(in.location, fmt::format("argument {} of '{}' has shape {}, parameter '{}' expects {}",
                                                   number, comp.name(), arg.shape().to_string(false), in.name,
                                                   in.shape.to_string(false)));
        values[l][ui] = std::move(arg);
      }
    } else if (in.opcode == Opcode::kWhile) {
      if (in.operands.size() != 1) fail(in, "while takes one operand");
      std::vector<Literal> init;
      for (size_t l = 0; l < lanes; ++l) init.push_back(values[l][static_cast<size_t>(in.operand(0))]);
      auto results = evaluate_while(in, std::move(init), partition_ids);
      for (size_t l = 0; l < lanes; ++l) values[l][ui] = std::move(results[l]);
    } else if (in.opcode == Opcode::kCall) {
      std::vector<std::vector<Literal>> call_args(lanes);
      for (size_t l = 0; l < lanes; ++l)
        for (InstrId op : in.operands) call_args[l].push_back(values[l][static_cast<size_t>(op)]);
      auto results = run(in.to_apply(), std::move(call_args), partition_ids);
      for (size_t l = 0; l < lanes; ++l) values[l][ui] = std::move(results[l]);
    } else if (is_collective(in.opcode)) {
      std::vector<Operands> per_lane;
      for (size_t l = 0; l < lanes; ++l) per_lane.push_back(lane_operands(l));
      const CollectiveContext context{module_, num_devices_, partition_ids,
                                      [this](CompId c, int64_t pid) -> const ScalarFunction& { return combiner(c, pid); }};
      auto results = evaluate_collective(in, per_lane, context);
      for (size_t l = 0; l < lanes; ++l) values[l][ui] = std::move(results[l]);
    } else {
      for (size_t l = 0; l < lanes; ++l) {
        const int64_t pid = partition_ids[l];
        const OpContext context{module_, pid,
                                [this, pid](CompId c) -> const ScalarFunction& { return combiner(c, pid); }};
        values[l][ui] = evaluate_local_op(in, lane_operands(l), context);
      }
    }
    for (size_t l = 0; l < lanes; ++l)
      if (!(values[l][ui].shape() == in.shape))
        fail(in, fmt::format("evaluates to shape {} but is declared {}", values[l][ui].shape().to_string(false),
                             in.shape.to_string(false)));
    // Free operands that have no later use.
    for (InstrId op : in.operands)
      if (last_use[static_cast<size_t>(op)] == i && op != comp.root())
        for (size_t l = 0; l < lanes; ++l) values[l][static_cast<size_t>(op)] = Literal();
  }
  std::vector<Literal> roots;
  for (size_t l = 0; l < lanes; ++l) roots.push_back(std::move(values[l][static_cast<size_t>(comp.root())]));
  return roots;
}

}  // namespace podsim::compiler::interp
