// build_training_step: forward copies (one per microbatch) + reverse sweep, gradient
// accumulation, weight-update sharding and the optimizer, as one entry computation (op_name
// contract: training_step.h). Microbatch k is the strided rows k, k+M, ...; its backward is
// seeded with 1/M (the loss is a batch mean). Why: docs/compiler.md#microbatches
#include "compiler/training/training_step.h"

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/training/autodiff.h"
#include "compiler/training/ir_helpers.h"
#include "compiler/training/optimizers.h"
#include "compiler/training/pipelined_forward.h"
#include "compiler/training/weight_update_sharding.h"

namespace podsim::compiler {

using training::annotate_sharding;
using training::starts_with;

namespace {

enum class ParamRole { kWeight, kInput, kOther };

struct ParamInfo {
  InstrId source_id = kNoId;
  ParamRole role = ParamRole::kOther;
  std::string tensor;  // op_name without "param/" / "input/"
};

struct WeightPlan {
  size_t param = 0;                  // index into the parameter list
  std::optional<Sharding> sharding;  // the weight's own
  std::optional<Sharding> update;    // optimizer ops and slots (like or finer)
  std::vector<OptimizerSlot> slots;
  std::vector<InstrId> slot_params;
};

std::string text_of(const std::optional<Sharding>& s) { return s ? s->to_string() : std::string(); }

Sharding slot_sharding(const Sharding& update, const OptimizerSlot& slot, int64_t weight_rank) {
  switch (slot.layout) {
    case SlotLayout::kLikeWeight:
      return update;
    case SlotLayout::kRowStats:
      return sharding_without_dim(update, weight_rank - 1);
    case SlotLayout::kColumnStats:
      return sharding_without_dim(update, weight_rank - 2);
  }
  return update;
}

void check_contract(const Computation& entry, const TrainingStepOptions& options,
                    std::vector<ParamInfo>& params) {
  const Instruction& root = entry.root_instr();
  if (!root.shape.is_array() || root.shape.rank() != 0 || !is_floating(root.shape.dtype()))
    throw UserError(
        root.location,
        fmt::format("training step: the forward root '{}' must be a scalar floating loss, not {}",
                    root.name, root.shape.to_string(false)),
        "end the forward graph with the scalar f32 loss");
  bool any_weight = false;
  for (InstrId p : entry.parameters()) {
    const Instruction& in = entry.instr(p);
    ParamInfo info;
    info.source_id = p;
    if (starts_with(in.op_name, "param/")) {
      info.role = ParamRole::kWeight;
      info.tensor = in.op_name.substr(6);
      if (!in.shape.is_array() || !is_floating(in.shape.dtype()))
        throw UserError(in.location,
                        fmt::format("training step: weight '{}' must be a floating array", in.name),
                        "");
      any_weight = true;
    } else if (starts_with(in.op_name, "input/")) {
      info.role = ParamRole::kInput;
      info.tensor = in.op_name.substr(6);
      if (options.microbatches > 1 && options.pipeline_stages == 1 &&
          (!in.shape.is_array() || in.shape.rank() == 0))
        throw UserError(
            in.location,
            fmt::format(
                "training step: input '{}' {} has no batch dim 0 to split into microbatches",
                in.name, in.shape.to_string(false)),
            "");
    }
    params.push_back(info);
  }
  if (!any_weight)
    throw UserError(root.location,
                    "training step: the forward module has no \"param/\" parameters (weights)",
                    "name trainable parameters with op_name \"param/<tensor>\"");
  if (options.microbatches < 1 || options.pipeline_stages < 1)
    throw UserError({}, "training step: microbatches and pipeline_stages must be >= 1", "");
}

}  // namespace

TrainingStep build_training_step(const Module& forward, const TrainingStepOptions& options) {
  const Computation& source = forward.entry();
  std::vector<ParamInfo> params;
  check_contract(source, options, params);
  if (options.pipeline_stages > 1) check_pipelined_forward(forward, options.pipeline_stages);
  // A pipelined forward already splits its inputs into microbatches.
  const int64_t microbatches = options.pipeline_stages > 1 ? 1 : options.microbatches;

  Module module = forward.copy_emptying(forward.entry_id());  // the entry is rebuilt below
  training::ReducerCache reducers(&module);
  ComputationBuilder b(source.name(), &module);
  std::vector<InstrId> param_ids;
  for (const ParamInfo& p : params) {
    Instruction param = source.instr(p.source_id);
    if (p.role == ParamRole::kInput && microbatches > 1) {  // the full batch: M microbatches
      std::vector<int64_t> dims = param.shape.dims();
      dims[0] *= microbatches;
      param.shape.set_dims(std::move(dims));
    }
    param_ids.push_back(b.add(std::move(param)));
  }

  // Optimizer slot parameters, numbered after the forward's.
  int64_t next_number = static_cast<int64_t>(params.size());
  std::vector<WeightPlan> weights;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].role != ParamRole::kWeight) continue;
    const Instruction& in = source.instr(params[i].source_id);
    WeightPlan plan;
    plan.param = i;
    if (in.sharding) plan.sharding = parse_sharding(*in.sharding, in.location);
    plan.update = plan.sharding;
    if (options.weight_update_sharding && plan.sharding && options.mesh &&
        !plan.sharding->is_tuple())
      if (auto finer = weight_update_sharding(*plan.sharding, in.shape.dims(), *options.mesh))
        plan.update = finer;
    plan.slots = optimizer_slots(options.optimizer, in.shape);
    for (const OptimizerSlot& slot : plan.slots) {
      InstrId sp = b.parameter(next_number++, slot.shape,
                               fmt::format("opt_state.{}.{}", params[i].tensor, slot.name));
      b.set_op_name(sp, fmt::format("opt_state/{}/{}", params[i].tensor, slot.name));
      if (plan.update)
        b.set_sharding(sp, slot_sharding(*plan.update, slot, in.shape.rank()).to_string());
      plan.slot_params.push_back(sp);
    }
    weights.push_back(std::move(plan));
  }
  InstrId step_param = kNoId;
  if (optimizer_needs_step(options.optimizer)) {
    step_param = b.parameter(next_number++, Shape::scalar(DType::kF32), "opt_state.global.step");
    b.set_op_name(step_param, "opt_state/global/step");
  }

  // Forward + backward per microbatch; gradients summed.
  TrainingStep step;
  const Shape& loss_shape = source.root_instr().shape;
  InstrId loss = kNoId;
  std::vector<InstrId> grad_sum(params.size(), kNoId);
  for (int64_t k = 0; k < microbatches; ++k) {
    std::vector<InstrId> values = param_ids;
    if (microbatches > 1) {
      for (size_t i = 0; i < params.size(); ++i) {
        if (params[i].role != ParamRole::kInput) continue;
        const Instruction& in = source.instr(params[i].source_id);
        b.set_op_name_scope(in.op_name);
        std::vector<SliceDim> window;
        for (int d = 0; d < in.shape.rank(); ++d)
          window.push_back(d == 0 ? SliceDim{k, in.shape.dim(0) * microbatches, microbatches}
                                  : SliceDim{0, in.shape.dim(d), 1});
        values[i] = b.slice(param_ids[i], window);
      }
    }
    b.set_op_name_scope("");
    ForwardCopy forward_copy = copy_forward(b, module, source, values);
    const std::vector<InstrId>& map = forward_copy.map;
    b.set_op_name_scope("bwd/seed");
    GradientRequest request;
    request.source = &source;
    request.forward_map = &map;
    request.loops = &forward_copy.loops;
    request.root_adjoint = training::filled(b, loss_shape, 1.0 / static_cast<double>(microbatches));
    request.remat = RematChoice{options.remat, options.remat_policy};
    for (const ParamInfo& p : params) {
      size_t number = static_cast<size_t>(source.instr(p.source_id).attrs.parameter_number);
      if (request.wrt_parameters.size() <= number) request.wrt_parameters.resize(number + 1, false);
      request.wrt_parameters[number] = p.role == ParamRole::kWeight;
    }
    GradientResult grads = emit_gradients(b, reducers, request);
    step.recomputed_flops += grads.recomputed_flops;
    step.recomputed_instructions += grads.recomputed_instructions;
    b.set_op_name_scope("bwd/accumulate");
    InstrId microbatch_loss = map[static_cast<size_t>(source.root())];
    loss = loss == kNoId ? microbatch_loss : b.binary(Opcode::kAdd, loss, microbatch_loss);
    for (const WeightPlan& w : weights) {
      size_t number =
          static_cast<size_t>(source.instr(params[w.param].source_id).attrs.parameter_number);
      InstrId g =
          number < grads.parameter_adjoints.size() ? grads.parameter_adjoints[number] : kNoId;
      if (g == kNoId) continue;
      InstrId& sum = grad_sum[w.param];
      sum = sum == kNoId ? g : b.binary(Opcode::kAdd, sum, g);
    }
  }
  if (microbatches > 1)
    loss = b.binary(Opcode::kMultiply, loss,
                    b.scalar_constant(loss_shape.dtype(), 1.0 / static_cast<double>(microbatches)));

  // Optimizer, one weight at a time.
  std::vector<InstrId> new_weights, new_slots;
  for (const WeightPlan& w : weights) {
    const ParamInfo& p = params[w.param];
    const Shape& shape = source.instr(p.source_id).shape;
    b.set_op_name_scope(fmt::format("opt/{}", p.tensor));
    const std::string update_text = text_of(w.update);
    InstrId g = grad_sum[w.param] != kNoId ? grad_sum[w.param] : training::filled(b, shape, 0.0);
    // The gradient arrives in the update sharding: with weight-update
    // sharding the partial sums are reduce-scattered, not all-reduced.
    g = annotate_sharding(b, g, update_text);
    OptimizerInputs inputs{param_ids[w.param], g, w.slot_params, step_param};
    const InstrId first = b.size();
    OptimizerUpdate update = emit_optimizer_update(b, reducers, options.optimizer, inputs);
    if (!update_text.empty()) {
      for (InstrId id = first; id < b.size(); ++id) {
        Instruction& in = b.mutable_instr(id);
        if (!in.sharding && in.shape == shape) in.sharding = update_text;
      }
      for (size_t s = 0; s < update.new_slots.size(); ++s)
        b.mutable_instr(update.new_slots[s]).sharding =
            slot_sharding(*w.update, w.slots[s], shape.rank()).to_string();
    }
    InstrId new_weight = update.new_weight;
    if (w.update && w.sharding && !(*w.update == *w.sharding))
      new_weight = annotate_sharding(b, new_weight, w.sharding->to_string());
    new_weights.push_back(new_weight);
    new_slots.insert(new_slots.end(), update.new_slots.begin(), update.new_slots.end());
  }
  if (step_param != kNoId) {
    b.set_op_name_scope("opt/global/step");
    new_slots.push_back(b.binary(Opcode::kAdd, step_param, b.scalar_constant(DType::kF32, 1)));
  }
  b.set_op_name_scope("");
  std::vector<InstrId> outputs{loss};
  outputs.insert(outputs.end(), new_weights.begin(), new_weights.end());
  outputs.insert(outputs.end(), new_slots.begin(), new_slots.end());
  InstrId root = b.tuple(outputs);
  Computation built = std::move(b).build(root);
  training::make_names_unique(built);
  module.mutable_computation(module.entry_id()) = std::move(built);
  step.module = std::move(module);
  return step;
}

}  // namespace podsim::compiler
