// Closed-form parameter and FLOP counts (formulas in model_info.h).
#include "workloads/model_info.h"

#include <fmt/format.h>

namespace podsim::workloads {

std::vector<LayerPlan> plan_layers(const ModelSpec& model, const SourceLocation& where) {
  const bool moe = model.kind == ModelKind::kMoeTransformer;
  const bool encoder_decoder = moe && model.structure == ModelStructure::kEncoderDecoder;
  if (encoder_decoder && model.layers % 2 != 0) {
    // The workload reader rejects this at model.layers first; a ModelSpec
    // from code has no position but the caller's `where`.
    const auto layers = model.key_locations.find("model.layers");
    throw UserError(
        layers != model.key_locations.end() ? layers->second : where,
        fmt::format("an encoder_decoder model needs an even layer count, got {}", model.layers),
        "model.layers counts both stacks (layers/2 encoder + layers/2 decoder)");
  }
  const int64_t per_stack = encoder_decoder ? model.layers / 2 : model.layers;
  std::vector<LayerPlan> plan;
  for (int64_t i = 0; i < model.layers; ++i) {
    LayerPlan layer;
    layer.index = i;
    layer.encoder = encoder_decoder && i < per_stack;
    layer.cross_attention = encoder_decoder && i >= per_stack;
    const int64_t in_stack = i % per_stack;
    layer.moe = moe && model.moe_every > 0 && (in_stack + 1) % model.moe_every == 0;
    plan.push_back(layer);
  }
  return plan;
}

int64_t ffn_matrix_count(FfnKind ffn) { return ffn == FfnKind::kGatedGelu ? 3 : 2; }

ParameterCount count_parameters(const ModelSpec& m, const SourceLocation& where) {
  const int64_t g = ffn_matrix_count(m.ffn);
  // Wq, Wo [M, N, D]; Wk, Wv [M, K, D]; qk_norm: a [D] scale for q and k.
  const int64_t attention = 2 * m.model_dim * (m.heads + m.kv_head_count()) * m.head_dim +
                            (m.qk_norm ? 2 * m.head_dim : 0);
  const int64_t layer_norms = m.block == BlockKind::kParallel ? 1 : 2;  // pre-norm scales [M]
  const int64_t dense_ffn = g * m.model_dim * m.ffn_dim;
  const int64_t relative_bias =
      m.position == PositionKind::kRelative ? 32 * m.heads : 0;  // 32 buckets x N
  ParameterCount count;
  int64_t stacks = 1;
  for (const LayerPlan& layer : plan_layers(m, where)) {
    int64_t shared = attention + layer_norms * m.model_dim + relative_bias;
    count.attention_blocks += 1;
    if (layer.cross_attention) {
      shared += attention + m.model_dim;
      count.attention_blocks += 1;
    }
    if (layer.encoder) stacks = 2;
    count.total += shared;
    count.activated += shared;
    if (layer.moe) {
      const int64_t gating = m.model_dim * m.experts;
      count.total += m.experts * dense_ffn + gating;
      count.activated += m.top_k * dense_ffn + gating;
    } else {
      count.total += dense_ffn;
      count.activated += dense_ffn;
    }
  }
  int64_t embeddings =
      m.vocab * m.model_dim + stacks * m.model_dim;  // shared table + final norm(s)
  if (m.position == PositionKind::kLearned) embeddings += m.seq_len * m.model_dim;
  if (!m.tied_embedding) embeddings += m.vocab * m.model_dim;  // separate output table
  count.total += embeddings;
  count.activated += embeddings;
  return count;
}

ModelInfo transformer_model_info(const ModelSpec& m, const SourceLocation& where) {
  ParameterCount count = count_parameters(m, where);
  ModelInfo info;
  info.parameters = count.total;
  info.activated_parameters = count.activated;
  info.layers = m.layers;
  info.tokens_per_step = m.global_batch * m.seq_len;
  const double tokens = static_cast<double>(info.tokens_per_step);
  const double attention_per_token = 12.0 * static_cast<double>(count.attention_blocks) *
                                     static_cast<double>(m.seq_len) * static_cast<double>(m.heads) *
                                     static_cast<double>(m.head_dim);
  info.model_flops_per_step =
      6.0 * static_cast<double>(count.activated) * tokens + attention_per_token * tokens;
  return info;
}

}  // namespace podsim::workloads
