// Building blocks of the dense and MoE Transformers (internal to workloads/):
// embedding, self/cross attention, dense and MoE FFN, softmax cross-entropy.
// Each block adds its weights as "param/<layer>/<block>/<tensor>" and its ops
// under "fwd/<layer>/<block>" scopes, with the shardings of the YAML names.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "workloads/model_graph.h"
#include "workloads/model_info.h"
#include "workloads/sharding_table.h"
#include "workloads/workload.h"

namespace podsim::workloads {

struct TransformerContext {
  ModelGraph& graph;
  const ModelSpec& spec;
  const ShardingTable& shardings;
  int64_t batch = 0;  // B: sequences in this step
  int64_t seq = 0;    // L: tokens per sequence (keys T = L)
};

// Per-stack attention inputs shared by its layers (computed once).
struct AttentionExtras {
  std::optional<InstrId> causal_mask;       // pred [L, T], true where key <= query
  std::optional<InstrId> relative_buckets;  // one-hot [L, T, 32] (activation dtype)
  // position: rotary: cos and signed sin of each (position, head-dim) angle,
  // [L, D] in the activation dtype (Su et al. 2021, RoFormer).
  std::optional<InstrId> rotary_cos, rotary_sin;
};

// Shared inputs of a stack: the causal mask (decoder) and the T5 relative
// position buckets (position: relative), under scope "<stack>/attention_setup".
AttentionExtras attention_extras(TransformerContext& ctx, const std::string& stack, bool causal);

// T5 relative position bucket ids, s32 [length, length] indexed (query, key):
// causal 32 buckets of max(query - key, 0); bidirectional 16 per direction.
InstrId relative_bucket_ids(ModelGraph& graph, int64_t length, bool causal);

// Tokens [B, L] (s32) -> one-hot matmul with the shared embedding [V, M]
// (+ learned positions [L, M] when position is learned) -> [B, L, M].
InstrId embed(TransformerContext& ctx, InstrId tokens, InstrId embedding,
              std::optional<InstrId> positions);

// Pre-layer-norm residual self attention: x + Wo(attend(LN(x))).
InstrId self_attention_block(TransformerContext& ctx, const std::string& layer, InstrId x,
                             const AttentionExtras& extras);
// Pre-layer-norm residual cross attention of x over `memory` [B, L, M].
InstrId cross_attention_block(TransformerContext& ctx, const std::string& layer, InstrId x,
                              InstrId memory);
// Pre-layer-norm residual FFN with the spec's activation (gated GELU uses
// wi_0, wi_1, wo; GELU/ReLU wi, wo).
InstrId dense_ffn_block(TransformerContext& ctx, const std::string& layer, InstrId x);
// Pre-layer-norm residual GShard MoE FFN (moe_layer.cc).
InstrId moe_ffn_block(TransformerContext& ctx, const std::string& layer, InstrId x);

// Runs `layers` over x [B, L, M] (each: annotated input, self attention,
// cross attention over `memory` when the plan says so, dense or MoE FFN),
// scoped "fwd/layer_<index>/...".
InstrId run_layers(TransformerContext& ctx, const std::vector<LayerPlan>& layers, InstrId x,
                   const AttentionExtras& extras, std::optional<InstrId> memory);

// Mean softmax cross-entropy (f32 scalar) of logits = x [B,L,M] . embedding^T
// against targets [B, L] (s32).
InstrId softmax_cross_entropy(TransformerContext& ctx, InstrId x, InstrId embedding,
                              InstrId targets);

// The layer-norm scale weight [M], sharded like the activations' M dim.
InstrId norm_scale(TransformerContext& ctx, const std::string& name);
// The model's norm (spec.norm: rms or layer) of x with a new scale weight
// named `scale_name`.
InstrId normalize(TransformerContext& ctx, InstrId x, const std::string& scale_name);

}  // namespace podsim::workloads
