// run_pipelined_stack (see pipelined_stack.h): builds the stage body with its
// own ModelGraph, stacks the weights it asked for, and emits the pipeline.
#include "workloads/pipelined_stack.h"

#include <fmt/format.h>

#include "compiler/training/pipelined_forward.h"

namespace podsim::workloads {

namespace {

void check_request(const TransformerContext& ctx, const PipelinedStackRequest& r) {
  const ModelSpec& m = ctx.spec;
  if (m.kind != ModelKind::kDenseTransformer)
    throw UserError(
        r.where,
        fmt::format("training.pipeline_stages = {} is built for dense_transformer models only, "
                    "model.kind is {}",
                    r.stages, name_of(m.kind)),
        "set training.pipeline_stages: 1 (MoE layers are not pipelined)");
  if (m.layers % r.stages != 0)
    throw UserError(
        r.where,
        fmt::format("model.layers ({}) does not divide into training.pipeline_stages ({})",
                    m.layers, r.stages),
        "every stage runs the same number of layers: pick a stage count that divides model.layers");
  const std::optional<std::string> stage_axis = ctx.shardings.axis_of("stage", 0);
  if (!stage_axis)
    throw UserError(
        r.where,
        fmt::format("training.pipeline_stages = {} needs the mesh axis of the stages", r.stages),
        "add 'stage: [<mesh axis>]' to the sharding section (an axis of size dividing the stages)");
  const int64_t axis = ctx.shardings.axis_size(stage_axis);
  if (r.stages % axis != 0)
    throw UserError(
        r.where,
        fmt::format(
            "the stage axis '{}' has {} devices, which do not divide training.pipeline_stages ({})",
            *stage_axis, axis, r.stages),
        "use a stage axis whose size divides the stage count (usually equal to it)");
}

}  // namespace

InstrId run_pipelined_stack(TransformerContext& ctx, InstrId x, const PipelinedStackRequest& r) {
  check_request(ctx, r);
  ModelGraph& g = ctx.graph;
  const ModelSpec& m = ctx.spec;
  const int64_t microbatch = ctx.batch / r.microbatches;
  const int64_t layers_per_stage = m.layers / r.stages;

  // One stage: layers 0 .. layers/S - 1 on a microbatch [mb, L, M].
  compiler::Module& module = g.module();
  ModelGraph body(module, g.activation_dtype(), g.param_dtype(), "stage_body");
  TransformerContext stage{body, m, ctx.shardings, microbatch, ctx.seq};
  InstrId activation = body.argument(
      "activation", compiler::Shape(g.activation_dtype(), {microbatch, ctx.seq, m.model_dim}));
  AttentionExtras extras = attention_extras(stage, "stage", stage.spec.causal);
  std::vector<LayerPlan> plan;
  for (int64_t j = 0; j < layers_per_stage; ++j) plan.push_back(LayerPlan{j, false, false, false});
  InstrId out = run_layers(stage, plan, activation, extras, std::nullopt);
  const compiler::CompId body_id = body.build_computation(out);

  // Stage-stacked weights [S, ...] in the body's parameter order.
  std::vector<InstrId> stacked;
  for (const WeightRecord& w : body.weights()) {
    std::vector<int64_t> dims{r.stages};
    dims.insert(dims.end(), w.dims.begin(), w.dims.end());
    const auto sharding =
        ctx.shardings.stacked_sharding(w.sharding, static_cast<int64_t>(w.dims.size()));
    stacked.push_back(g.weight_parameter("stage/" + w.name, dims, sharding));
  }

  compiler::PipelineRequest request;
  request.stages = r.stages;
  request.microbatches = r.microbatches;
  request.stage_body = body_id;
  request.inputs = x;
  request.stacked_weights = std::move(stacked);
  // State [S, mb, L, M]: stages over the stage axis, the rest as activations.
  request.state_sharding =
      ctx.shardings.stacked_sharding(ctx.shardings.sharding("activations"), 3).value_or("");
  return compiler::emit_pipeline(g.builder(), module, request);
}

}  // namespace podsim::workloads
