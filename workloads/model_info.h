// Model-level facts from a ModelSpec in closed form: the layer plan the
// builders follow, the exact trainable parameter count and the model FLOPs.
//
// Parameters (docs/reference/measurements.md#dense-model-and-parameter-count; reproduces the
// published GSPMD totals exactly):
//   P = L (g M H + 4 M N D) + V M + 2 M L + M  (+ 32 N L relative bias)
//       (+ S M learned positions), g = 3 for gated GELU, 2 for GELU/ReLU.
// MoE layers replace g M H by E g M H + M E (experts + gating weights).
// model.kv_heads = K: 4 M N D becomes 2 M N D + 2 M K D (Wk, Wv [M, K, D]);
// model.qk_norm adds 2 D per attention; model.block = parallel has one
// layer-norm scale per layer (M L instead of 2 M L). docs/models.md.
// encoder_decoder: L counts both stacks (L/2 each); decoder layers add a
// cross attention (4 M N D) with its own layer-norm scale (M), and each stack
// ends in its own final layer-norm scale (M). The embedding is shared by the
// encoder input, the decoder input and the softmax.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "workloads/model_builder.h"

namespace podsim::workloads {

struct LayerPlan {
  int64_t index = 0;             // 0..layers-1 over both stacks
  bool encoder = false;          // encoder layer: no causal mask, no cross attention
  bool cross_attention = false;  // decoder layer of an encoder-decoder model
  bool moe = false;              // the FFN is a GShard MoE layer
};

// One entry per layer. MoE layers: the moe_every-th, 2*moe_every-th, ...
// layer of each stack (GShard: every other layer for moe_every = 2).
// UserError at `where` for an odd layer count of an encoder-decoder model.
std::vector<LayerPlan> plan_layers(const ModelSpec& model, const SourceLocation& where = {});

// Matrices of one (dense or expert) FFN: 3 for gated_gelu, else 2.
int64_t ffn_matrix_count(FfnKind ffn);

struct ParameterCount {
  int64_t total = 0;             // every trainable weight
  int64_t activated = 0;         // per token: each MoE layer counts top_k experts, not E
  int64_t attention_blocks = 0;  // self + cross attentions over all layers
};

ParameterCount count_parameters(const ModelSpec& model, const SourceLocation& where = {});

// ModelInfo of a dense or MoE transformer. model_flops_per_step =
//   6 x activated params x tokens + 12 x attention_blocks x S x N x D x tokens
// (PaLM, Chowdhery et al. 2022, appendix B: 6N + 12 L H Q T per token, forward
// plus backward, no rematerialization). Using the activated parameters makes
// the MoE count the FLOPs a token really meets (top_k experts per MoE layer);
// for encoder_decoder both stacks see `tokens` tokens (source length = target
// length = seq_len), so 6 x P x tokens still holds.
ModelInfo transformer_model_info(const ModelSpec& model, const SourceLocation& where = {});

}  // namespace podsim::workloads
