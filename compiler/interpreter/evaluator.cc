// Lock-step evaluator (see evaluator.h).
#include "compiler/interpreter/evaluator.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "compiler/interpreter/collective_ops.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/interpreter/local_ops.h"
#include "compiler/interpreter/manual_conversion_ops.h"
#include "compiler/sharding/sharding.h"
#include "compiler/sharding/sharding_util.h"

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

// The k-th infeed's value on `device`: the seeded value of the
// instruction's shape. A partitioned program's per-shard infeed (its
// global_sharding tiles the data evenly, spmd/custom_call_handler.cc) gets
// its device's tile of the seeded value of the global shape, which is what
// the original program's infeed gets whole.
Literal infeed_value(const Instruction& in, int64_t device, uint64_t seed) {
  if (in.global_sharding.empty() || !in.shape.is_tuple() || in.shape.tuple_shapes().size() != 2 ||
      !in.shape.tuple_shape(0).is_array())
    return random_literal(in.shape, seed);
  const Sharding sharding = parse_sharding(in.global_sharding);
  if (!sharding.is_tuple() || sharding.tuple_elements().empty() ||
      !sharding.tuple_elements()[0].is_tiled())
    return random_literal(in.shape, seed);
  const Sharding& data = sharding.tuple_elements()[0];
  const Shape& local = in.shape.tuple_shape(0);
  std::vector<int64_t> global;
  for (int d = 0; d < local.rank(); ++d)
    global.push_back(local.dim(d) * data.tile_assignment().dim(d));
  const Literal whole =
      random_literal(Shape::tuple({Shape(local.dtype(), global), in.shape.tuple_shape(1)}), seed);
  const ShardRegion region = shard_region(data, global, device);
  Instruction slice;
  slice.opcode = Opcode::kSlice;
  slice.name = in.name;
  slice.shape = local;
  for (int d = 0; d < local.rank(); ++d)
    slice.attrs.slice.push_back(
        SliceDim{region.offsets[static_cast<size_t>(d)], region.limits[static_cast<size_t>(d)], 1});
  return Literal::tuple({eval_slice(slice, whole.element(0)), whole.element(1)});
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
    const std::vector<Literal> cond =
        run(instr.while_condition(), std::move(cond_args), partition_ids);
    bool first = false;
    for (size_t l = 0; l < cond.size(); ++l) {
      if (cond[l].is_tuple() || !cond[l].shape().is_scalar() ||
          cond[l].shape().dtype() != DType::kPred)
        fail(instr, "condition must return a pred scalar");
      const bool value = cond[l].values()[0] != 0.0;
      if (l == 0) first = value;
      if (value != first)
        fail(instr,
             fmt::format("devices disagree on while condition (device {}: {}, device {}: {})",
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

std::vector<Literal> Evaluator::evaluate_plain(const Instruction& in,
                                               const std::vector<Operands>& per_lane,
                                               const std::vector<int64_t>& partition_ids) {
  std::vector<Literal> results;
  if (is_collective(in.opcode)) {
    const CollectiveContext context{
        module_, num_devices_, partition_ids,
        [this](CompId c, int64_t pid) -> const ScalarFunction& { return combiner(c, pid); }};
    return evaluate_collective(in, per_lane, context);
  }
  if (in.opcode == Opcode::kCopy && per_lane.size() == partition_ids.size() && !per_lane.empty() &&
      per_lane[0].size() == 1 && per_lane[0][0]->is_tuple()) {
    for (const Operands& lane : per_lane) results.push_back(*lane[0]);  // copy of a whole tuple
    return results;
  }
  for (size_t l = 0; l < partition_ids.size(); ++l) {
    const int64_t pid = partition_ids[l];
    const OpContext context{
        module_, pid, [this, pid](CompId c) -> const ScalarFunction& { return combiner(c, pid); }};
    results.push_back(evaluate_local_op(in, per_lane[l], context));
  }
  return results;
}

// conditional(pred, true_operand, false_operand) runs called[0] when true;
// conditional(index, operands...) runs branch index, an index outside
// [0, N) runs the last branch. Lanes that agree run in lock-step (so the
// branch may hold collectives); lanes that disagree run one by one.
std::vector<Literal> Evaluator::evaluate_conditional(const Instruction& in,
                                                     const std::vector<Operands>& per_lane,
                                                     const std::vector<int64_t>& partition_ids) {
  const auto branches = static_cast<int64_t>(in.called.size());
  if (branches < 1 || in.operand_count() != branches + 1)
    fail(in,
         fmt::format(
             "has {} branches and {} operands, expected one operand per branch after the selector",
             branches, in.operand_count()));
  const size_t lanes = partition_ids.size();
  std::vector<int64_t> choice(lanes);
  for (size_t l = 0; l < lanes; ++l) {
    const Literal& selector = *per_lane[l][0];
    if (selector.is_tuple() || !selector.shape().is_scalar())
      fail(in, "the branch selector must be a scalar");
    const double v = selector.values()[0];
    if (selector.shape().dtype() == DType::kPred) {
      if (branches != 2) fail(in, "a pred selector needs two branches");
      choice[l] = v != 0.0 ? 0 : 1;
    } else {
      choice[l] =
          v < 0 || v >= static_cast<double>(branches) ? branches - 1 : static_cast<int64_t>(v);
    }
  }
  auto branch_args = [&](size_t l) {
    const auto b = static_cast<size_t>(choice[l]);
    return std::vector<Literal>{*per_lane[l][b + 1]};
  };
  if (std::all_of(choice.begin(), choice.end(), [&](int64_t c) { return c == choice[0]; })) {
    std::vector<std::vector<Literal>> args;
    for (size_t l = 0; l < lanes; ++l) args.push_back(branch_args(l));
    return run(in.called[static_cast<size_t>(choice[0])], std::move(args), partition_ids);
  }
  std::vector<Literal> results;
  for (size_t l = 0; l < lanes; ++l)
    results.push_back(
        run_single(in.called[static_cast<size_t>(choice[l])], branch_args(l), partition_ids[l]));
  return results;
}

// XLA's asynchronous pairs. A start computes what its wrapped op computes
// and returns it in XLA's start shape: an array (all-reduce-start), or a
// tuple whose element 1 is the result and element 0 the operand(s)
// (all-gather-, collective-permute-, async-start), or (result, operand,
// context) for copy-start; context elements are zero. update passes its
// operand through; done extracts the result.
std::vector<Literal> Evaluator::evaluate_async(const Instruction& in,
                                               const std::vector<Operands>& per_lane,
                                               const std::vector<int64_t>& partition_ids) {
  const size_t lanes = partition_ids.size();
  const bool is_copy = in.opcode == Opcode::kCopyStart || in.opcode == Opcode::kCopyDone;
  const size_t result_index = is_copy ? 0 : 1;
  std::vector<Literal> results;
  if (!is_async_start(in.opcode)) {  // update / done
    for (size_t l = 0; l < lanes; ++l) {
      if (per_lane[l].size() != 1) fail(in, "takes one operand");
      const Literal& v = *per_lane[l][0];
      if (in.opcode == Opcode::kAsyncUpdate || !v.is_tuple()) {
        results.push_back(v);
      } else {
        if (v.elements().size() <= result_index) fail(in, "operand is not a start's tuple");
        results.push_back(v.element(static_cast<int>(result_index)));
      }
    }
    return results;
  }
  // The wrapped op's result shape inside the start's shape.
  const bool tuple_form = in.shape.is_tuple();
  if (tuple_form && in.shape.tuple_shapes().size() <= result_index)
    fail(in, "start tuple has no result element");
  const Shape result_shape =
      tuple_form ? in.shape.tuple_shape(static_cast<int>(result_index)) : in.shape;
  std::vector<Literal> wrapped_results;
  const std::optional<Opcode> wrapped_op =
      in.opcode == Opcode::kAsyncStart ? in.attrs.async_wrapped : async_wrapped_opcode(in.opcode);
  if (wrapped_op && *wrapped_op != Opcode::kCall) {  // call-start runs its to_apply below
    Instruction wrapped = in;
    wrapped.opcode = *wrapped_op;
    wrapped.shape = result_shape;
    wrapped_results = evaluate_plain(wrapped, per_lane, partition_ids);
  } else {
    if (in.called.empty()) fail(in, "names no wrapped op or computation");
    std::vector<std::vector<Literal>> args(lanes);
    for (size_t l = 0; l < lanes; ++l)
      for (const Literal* op : per_lane[l]) args[l].push_back(*op);
    wrapped_results = run(in.to_apply(), std::move(args), partition_ids);
  }
  for (size_t l = 0; l < lanes; ++l) {
    if (!tuple_form) {
      results.push_back(std::move(wrapped_results[l]));
      continue;
    }
    Literal start(in.shape);
    auto& elements = start.mutable_elements();
    elements[result_index] = std::move(wrapped_results[l]);
    const size_t operand_index = is_copy ? 1 : 0;
    if (elements.size() > operand_index) {
      if (per_lane[l].size() == 1) {
        elements[operand_index] = *per_lane[l][0];
      } else {
        std::vector<Literal> ops;
        for (const Literal* op : per_lane[l]) ops.push_back(*op);
        elements[operand_index] = Literal::tuple(std::move(ops));
      }
    }
    results.push_back(std::move(start));
  }
  return results;
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
      throw UserError(fmt::format("computation '{}' takes {} arguments, got {}", comp.name(),
                                  num_params, lane_args.size()));
  const std::vector<InstrId> last_use = last_uses(comp);
  std::vector<std::vector<Literal>> values(lanes,
                                           std::vector<Literal>(static_cast<size_t>(comp.size())));
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
      if (number < 0 || number >= static_cast<int64_t>(num_params) ||
          parameter_taken[static_cast<size_t>(number)])
        fail(in, "parameter number out of range or repeated");
      parameter_taken[static_cast<size_t>(number)] = true;
      for (size_t l = 0; l < lanes; ++l) {
        Literal& arg = args[l][static_cast<size_t>(number)];
        if (!(arg.shape() == in.shape))
          throw UserError(in.location,
                          fmt::format("argument {} of '{}' has shape {}, parameter '{}' expects {}",
                                      number, comp.name(), arg.shape().to_string(false), in.name,
                                      in.shape.to_string(false)));
        values[l][ui] = std::move(arg);
      }
    } else if (in.opcode == Opcode::kWhile) {
      if (in.operands.size() != 1) fail(in, "while takes one operand");
      std::vector<Literal> init;
      for (size_t l = 0; l < lanes; ++l)
        init.push_back(values[l][static_cast<size_t>(in.operand(0))]);
      auto results = evaluate_while(in, std::move(init), partition_ids);
      for (size_t l = 0; l < lanes; ++l) values[l][ui] = std::move(results[l]);
    } else if (in.opcode == Opcode::kCall || in.opcode == Opcode::kFusion) {
      std::vector<std::vector<Literal>> call_args(lanes);
      for (size_t l = 0; l < lanes; ++l)
        for (InstrId op : in.operands) call_args[l].push_back(values[l][static_cast<size_t>(op)]);
      auto results = run(in.to_apply(), std::move(call_args), partition_ids);
      for (size_t l = 0; l < lanes; ++l) values[l][ui] = std::move(results[l]);
    } else if (in.opcode == Opcode::kConditional) {
      std::vector<Operands> per_lane;
      for (size_t l = 0; l < lanes; ++l) per_lane.push_back(lane_operands(l));
      auto results = evaluate_conditional(in, per_lane, partition_ids);
      for (size_t l = 0; l < lanes; ++l) values[l][ui] = std::move(results[l]);
    } else if (is_async_start(in.opcode) || is_async_done(in.opcode) ||
               in.opcode == Opcode::kAsyncUpdate) {
      std::vector<Operands> per_lane;
      for (size_t l = 0; l < lanes; ++l) per_lane.push_back(lane_operands(l));
      auto results = evaluate_async(in, per_lane, partition_ids);
      for (size_t l = 0; l < lanes; ++l) values[l][ui] = std::move(results[l]);
    } else if (in.opcode == Opcode::kInfeed) {
      // The host's data: a seeded value, the k-th infeed a device runs
      // getting stream kInfeedSeed + k on every device (its tile of it
      // when the infeed is per shard).
      for (size_t l = 0; l < lanes; ++l)
        values[l][ui] =
            infeed_value(in, partition_ids[l], kInfeedSeed + infeeds_taken_[partition_ids[l]]++);
    } else if (is_manual_conversion(in) && in.operands.size() == 1 &&
               !(comp.instr(in.operand(0)).shape == in.shape)) {
      std::vector<Operands> per_lane;
      for (size_t l = 0; l < lanes; ++l) per_lane.push_back(lane_operands(l));
      auto results = eval_manual_conversion(in, comp.instr(in.operand(0)), per_lane, partition_ids);
      for (size_t l = 0; l < lanes; ++l) values[l][ui] = std::move(results[l]);
    } else {
      std::vector<Operands> per_lane;
      for (size_t l = 0; l < lanes; ++l) per_lane.push_back(lane_operands(l));
      auto results = evaluate_plain(in, per_lane, partition_ids);
      for (size_t l = 0; l < lanes; ++l) values[l][ui] = std::move(results[l]);
    }
    for (size_t l = 0; l < lanes; ++l)
      if (!(values[l][ui].shape() == in.shape))
        fail(in, fmt::format("evaluates to shape {} but is declared {}",
                             values[l][ui].shape().to_string(false), in.shape.to_string(false)));
    // Free operands that have no later use.
    for (InstrId op : in.operands)
      if (last_use[static_cast<size_t>(op)] == i && op != comp.root())
        for (size_t l = 0; l < lanes; ++l) values[l][static_cast<size_t>(op)] = Literal();
  }
  std::vector<Literal> roots;
  for (size_t l = 0; l < lanes; ++l)
    roots.push_back(std::move(values[l][static_cast<size_t>(comp.root())]));
  return roots;
}

}  // namespace podsim::compiler::interp
