// The fused attention custom calls, as the Pallas TPU flash-attention kernel
// runs them: "podsim.flash_attention" (q, k, v) -> (o, lse) and
// "podsim.flash_attention_bwd" (q, k, v, o, lse, do) -> (dq, dk, dv).
// Layout: q, o, do, dq [B, L, N, D]; k, v, dk, dv [B, T, N, D]; lse [B, N, L]
// f32 (the per-row log-sum-exp of the scaled scores). backend_config is JSON:
// {"causal":true,"block_q":512,"block_k":512,"scale":0.125} (scale absent =
// 1/sqrt(D)). Semantics, sharding rule and cost: docs/compiler.md#flash-attention.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "compiler/ir/builder.h"

namespace podsim::compiler {

inline constexpr std::string_view kFlashAttentionTarget = "podsim.flash_attention";
inline constexpr std::string_view kFlashAttentionBwdTarget = "podsim.flash_attention_bwd";

struct FlashAttentionConfig {
  bool causal = false;  // key j is visible to query i iff j <= i
  int64_t block_q = 512;
  int64_t block_k = 512;
  double scale = 0;  // 0: 1/sqrt(D)
  bool operator==(const FlashAttentionConfig&) const = default;
};

bool is_flash_attention(const Instruction& instr);      // the forward call
bool is_flash_attention_bwd(const Instruction& instr);  // the backward call

// The backend_config text of `config`, and back (UserError at the
// instruction's location for a malformed config or block size < 1).
std::string flash_config_text(const FlashAttentionConfig& config);
FlashAttentionConfig flash_config(const Instruction& instr);
// The scale the kernel applies to q k^T for head dim `head_dim`.
double flash_scale(const FlashAttentionConfig& config, int64_t head_dim);

// The kernel's grid over one (batch, head): q blocks, kv blocks and the
// blocks it computes (all of them; causal: those with a key at or before
// their last query, nb (nb + 1) / 2 of nb^2 for equal square blocks).
struct FlashBlocks {
  int64_t q_blocks = 0;
  int64_t kv_blocks = 0;
  int64_t computed = 0;
};
FlashBlocks flash_blocks(int64_t q_length, int64_t kv_length, const FlashAttentionConfig& config);

// One flash call's grid as the kernel runs it, read from its q [B, L, N, D]
// and k [B, T, N, D] operands: the blocks (each at most as long as its
// sequence) and how many (batch, head) pairs run the grid; nullopt for any
// other instruction or operands of another shape.
struct FlashGeometry {
  FlashAttentionConfig config;
  FlashBlocks blocks;
  int64_t batch_heads = 0;  // B x N
  int64_t block_q = 0, block_k = 0, head_dim = 0;
};
std::optional<FlashGeometry> flash_geometry(const Instruction& instr,
                                            const Computation& computation);

// The kernel's matmul FLOPs (2 per multiply-accumulate) over its computed
// blocks: 2 block matmuls each forward (q k^T, p v), 5 backward (q k^T again,
// do v^T, p^T do, ds k, ds^T q), each b_q x b_k x D per (batch, head); 0 for
// other instructions.
double flash_attention_flops(const Instruction& instr, const Computation& computation);

// The batch and head dims of a flash operand or result: {0, 2} of the
// [B, L, N, D] arrays, {0, 1} of lse [B, N, L].
std::array<int64_t, 2> flash_batch_head_dims(int64_t rank);

// Builders: the call and the get-tuple-elements of its results.
struct FlashAttentionOutputs {
  InstrId out = kNoId;
  InstrId lse = kNoId;
};
FlashAttentionOutputs flash_attention(ComputationBuilder& b, InstrId q, InstrId k, InstrId v,
                                      const FlashAttentionConfig& config);
struct FlashAttentionGrads {
  InstrId dq = kNoId;
  InstrId dk = kNoId;
  InstrId dv = kNoId;
};
FlashAttentionGrads flash_attention_bwd(ComputationBuilder& b, InstrId q, InstrId k, InstrId v,
                                        InstrId out, InstrId lse, InstrId d_out,
                                        const FlashAttentionConfig& config);

}  // namespace podsim::compiler
