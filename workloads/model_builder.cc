// build_model: dispatch on model.kind; the dense / MoE Transformer assembly
// (decoder_only or encoder_decoder stacks of the blocks in
// transformer_blocks.h). The HLO kind is in hlo_model.cc.
#include "workloads/model_builder.h"

#include <fmt/format.h>

#include "compiler/ir/verifier.h"
#include "workloads/hlo_model.h"
#include "workloads/model_info.h"
#include "workloads/pipelined_stack.h"
#include "workloads/scanned_layers.h"
#include "workloads/transformer_blocks.h"

namespace podsim::workloads {

using compiler::Opcode;
using compiler::Shape;

namespace {

compiler::DeviceMesh make_mesh(const Workload& workload) {
  std::vector<compiler::MeshAxis> axes;
  for (const auto& [name, size] : workload.mesh.logical_axes()) axes.push_back({name, size});
  // Logical device ids are row-major over the axes; `mesh.order` is where they
  // land on the physical cores (hw_models placement), not a relabelling here.
  return compiler::DeviceMesh(std::move(axes), std::nullopt,
                              SourceLocation{workload.source_file, 0, 0});
}

InstrId final_norm(TransformerContext& ctx, const std::string& name, InstrId x) {
  ctx.graph.set_scope(name);
  x = ctx.graph.annotate(x, ctx.shardings.sharding("activations"));
  return normalize(ctx, x, name + "/scale");
}

// Rows of the batch the built forward sees. With gradient accumulation
// (training.microbatches = M > 1) build_training_step wants the forward of
// ONE microbatch, global_batch / M rows, and gives the step's "input/"
// parameters M times that batch itself (training_step.h). A pipelined
// forward splits the full batch itself (pipelined_forward.h), and a forward
// (inference) step is not split: both see global_batch.
int64_t forward_batch(const Workload& workload) {
  const TrainingSpec& t = workload.training;
  if (!t.enabled || t.pipeline_stages > 1) return workload.model.global_batch;
  return workload.model.global_batch / t.microbatches;  // divisibility checked by the YAML reader
}

compiler::Module build_transformer(const Workload& workload, const ShardingTable& table,
                                   const std::vector<LayerPlan>& plan) {
  const ModelSpec& m = workload.model;
  compiler::Module module(workload.name);
  ModelGraph g(module, m.dtypes.activations, m.dtypes.params);
  const int64_t batch = forward_batch(workload);
  TransformerContext ctx{g, m, table, batch, m.seq_len};

  std::optional<std::string> token_sharding;
  if (table.mapping("activations"))
    token_sharding =
        table.sharding_of({table.axis_of("activations", 0), table.axis_of("activations", 1)});
  const Shape token_shape(DType::kS32, {batch, m.seq_len});
  InstrId tokens = g.input("tokens", token_shape, token_sharding);
  InstrId targets = g.input("targets", token_shape, token_sharding);
  g.set_scope("embedding");
  InstrId embedding =
      g.weight("embedding/token", {m.vocab, m.model_dim}, table.sharding("embedding"));
  std::optional<InstrId> positions;
  if (m.position == PositionKind::kLearned) {
    std::optional<std::string> sharding;
    if (table.mapping("activations"))
      sharding =
          table.sharding_of({table.axis_of("activations", 1), table.axis_of("activations", 2)});
    positions = g.weight("embedding/position", {m.seq_len, m.model_dim}, sharding);
  }

  const SourceLocation where{workload.source_file, 0, 0};
  std::vector<LayerPlan> encoder, decoder;
  for (const LayerPlan& layer : plan) (layer.encoder ? encoder : decoder).push_back(layer);
  std::optional<InstrId> memory;
  InstrId decoder_tokens = tokens;
  if (!encoder.empty()) {
    AttentionExtras extras = attention_extras(ctx, "encoder", /*causal=*/false);
    g.set_scope("encoder/embedding");
    InstrId x = embed(ctx, tokens, embedding, positions);
    x = m.layer_loop == LayerLoop::kScan
            ? run_scanned_layers(ctx, encoder, x, extras, std::nullopt, where)
            : run_layers(ctx, encoder, x, extras, std::nullopt);
    memory = final_norm(ctx, "encoder/final_norm", x);
    // Teacher forcing: the decoder reads the targets shifted right by one,
    // with token 0 as the start token.
    g.set_scope("decoder/shift_targets");
    InstrId head = g.builder().slice(targets, {{0, batch, 1}, {0, m.seq_len - 1, 1}});
    InstrId start = g.full(0, {batch, 1}, DType::kS32);
    decoder_tokens = g.builder().concatenate({start, head}, 1);
  }
  const TrainingSpec& t = workload.training;
  InstrId x;
  if (t.pipeline_stages > 1) {
    if (m.layer_loop == LayerLoop::kScan)
      throw UserError(
          where, "model.layer_loop = scan with training.pipeline_stages > 1",
          "a pipelined stack already stacks its stages' weights: set model.layer_loop: unrolled");
    // GSPMD pipelining: the decoder layers run as S stage-stacked stages
    // (pipelined_stack.h); embedding and loss stay outside the pipeline.
    g.set_scope("embedding");
    x = embed(ctx, decoder_tokens, embedding, positions);
    x = run_pipelined_stack(ctx, x,
                            PipelinedStackRequest{t.pipeline_stages, t.microbatches, where});
  } else {
    const bool causal = m.structure == ModelStructure::kEncoderDecoder || m.causal;
    AttentionExtras extras = attention_extras(ctx, "decoder", causal);
    g.set_scope("embedding");
    x = embed(ctx, decoder_tokens, embedding, positions);
    x = m.layer_loop == LayerLoop::kScan
            ? run_scanned_layers(ctx, decoder, x, extras, memory, where)
            : run_layers(ctx, decoder, x, extras, memory);
  }
  x = final_norm(ctx, "final_norm", x);
  g.set_scope("embedding");
  InstrId output_table = m.tied_embedding ? embedding
                                          : g.weight("embedding/logits", {m.vocab, m.model_dim},
                                                     table.sharding("embedding"));
  InstrId loss = softmax_cross_entropy(ctx, x, output_table, targets);
  g.finish(loss, workload.name);
  module.set_num_partitions(workload.mesh.device_count());
  return module;
}

}  // namespace

BuiltModel build_model(const Workload& workload) {
  const SourceLocation where{workload.source_file, 0, 0};
  compiler::DeviceMesh mesh = make_mesh(workload);
  if (workload.model.kind == ModelKind::kHlo) return build_hlo_model(workload, std::move(mesh));
  ShardingTable table(workload, mesh);
  std::vector<LayerPlan> plan = plan_layers(workload.model, where);
  compiler::Module module = build_transformer(workload, table, plan);
  compiler::verify_module(module);
  return BuiltModel{std::move(module), std::move(mesh),
                    transformer_model_info(workload.model, where)};
}

}  // namespace podsim::workloads
