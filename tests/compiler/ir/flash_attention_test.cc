// The fused attention calls' IR pieces (compiler/ir/flash_attention.h):
// backend_config text both ways, the kernel's block grid (closed forms) and
// the builders' result shapes.
#include "compiler/ir/flash_attention.h"

#include <cmath>

#include <gtest/gtest.h>

#include "common/error.h"

namespace podsim::compiler {
namespace {

Instruction call_with(std::string config) {
  Instruction in;
  in.opcode = Opcode::kCustomCall;
  in.attrs.custom_call_target = std::string(kFlashAttentionTarget);
  in.attrs.backend_config = std::move(config);
  return in;
}

TEST(FlashAttentionConfig, RoundTripsThroughBackendConfig) {
  FlashAttentionConfig c{.causal = true, .block_q = 256, .block_k = 128, .scale = 0.125};
  EXPECT_EQ(flash_config(call_with(flash_config_text(c))), c);
  FlashAttentionConfig plain;
  EXPECT_EQ(flash_config_text(plain), R"({"causal":false,"block_q":512,"block_k":512})");
  EXPECT_EQ(flash_config(call_with(flash_config_text(plain))), plain);
}

TEST(FlashAttentionConfig, MissingKeysTakeTheDefaults) {
  EXPECT_EQ(flash_config(call_with("{}")), FlashAttentionConfig{});
  EXPECT_EQ(flash_config(call_with(R"({ "causal" : true })")).causal, true);
}

TEST(FlashAttentionConfig, MalformedValuesAreUserErrors) {
  EXPECT_THROW(flash_config(call_with(R"({"causal":yes})")), UserError);
  EXPECT_THROW(flash_config(call_with(R"({"block_q":0})")), UserError);
  EXPECT_THROW(flash_config(call_with(R"({"block_k":12x})")), UserError);
  EXPECT_THROW(flash_config(call_with(R"({"scale":"big"})")), UserError);
}

TEST(FlashAttentionConfig, ScaleDefaultsToOneOverSqrtD) {
  EXPECT_DOUBLE_EQ(flash_scale({}, 64), 0.125);
  EXPECT_DOUBLE_EQ(flash_scale({.scale = 2.0}, 64), 2.0);
}

TEST(FlashBlocks, CausalSquareBlocksRunTheLowerTriangle) {
  // L = T = 4096, b = 512: nb = 8 per side, nb (nb + 1) / 2 = 36 of 64 blocks.
  const FlashBlocks causal = flash_blocks(4096, 4096, {.causal = true});
  EXPECT_EQ(causal.q_blocks, 8);
  EXPECT_EQ(causal.kv_blocks, 8);
  EXPECT_EQ(causal.computed, 36);
  EXPECT_EQ(flash_blocks(4096, 4096, {}).computed, 64);
}

TEST(FlashBlocks, CausalWithUnequalBlocks) {
  // L = T = 1024, b_q = 512, b_k = 256: q block 0 (queries 0..511) sees kv
  // blocks 0, 1; q block 1 (512..1023) all 4: 6 of 8.
  EXPECT_EQ(flash_blocks(1024, 1024, {.causal = true, .block_q = 512, .block_k = 256}).computed,
            6);
}

TEST(FlashBlocks, ShortSequencesAreOneBlock) {
  EXPECT_EQ(flash_blocks(8, 8, {.causal = true}).computed, 1);
}

TEST(FlashBatchHeadDims, ArraysAndLse) {
  EXPECT_EQ(flash_batch_head_dims(4), (std::array<int64_t, 2>{0, 2}));
  EXPECT_EQ(flash_batch_head_dims(3), (std::array<int64_t, 2>{0, 1}));
}

TEST(FlashAttentionBuilders, ResultShapes) {
  Module m("m");
  ComputationBuilder b("main", &m);
  const Shape q(DType::kBF16, {2, 16, 4, 8});
  const Shape kv(DType::kBF16, {2, 32, 4, 8});
  InstrId pq = b.parameter(0, q, "q");
  InstrId pk = b.parameter(1, kv, "k");
  InstrId pv = b.parameter(2, kv, "v");
  const FlashAttentionOutputs f = flash_attention(b, pq, pk, pv, {.causal = true});
  EXPECT_EQ(b.shape(f.out), q);
  EXPECT_EQ(b.shape(f.lse), Shape(DType::kF32, {2, 4, 16}));
  const Instruction& call = b.computation().instr(b.computation().instr(f.out).operand(0));
  EXPECT_TRUE(is_flash_attention(call));
  EXPECT_TRUE(flash_config(call).causal);
  const FlashAttentionGrads g = flash_attention_bwd(b, pq, pk, pv, f.out, f.lse, f.out, {});
  EXPECT_EQ(b.shape(g.dq), q);
  EXPECT_EQ(b.shape(g.dk), kv);
  EXPECT_EQ(b.shape(g.dv), kv);
  EXPECT_TRUE(is_flash_attention_bwd(
      b.computation().instr(b.computation().instr(g.dv).operand(0))));
}

TEST(FlashAttentionFlops, CausalCountsTheComputedBlocks) {
  // B = 1, N = 2, L = T = 4096, D = 128, b = 512 causal: 36 blocks per head,
  // forward 2 x (2 x 512 x 512 x 128) per block: 2 x 36 x 2 x 2 x 512^2 x 128.
  Module m("m");
  ComputationBuilder b("main", &m);
  const Shape qkv(DType::kBF16, {1, 4096, 2, 128});
  InstrId q = b.parameter(0, qkv, "q");
  const FlashAttentionOutputs f = flash_attention(b, q, q, q, {.causal = true});
  const FlashAttentionGrads g = flash_attention_bwd(b, q, q, q, f.out, f.lse, f.out, {.causal = true});
  const Computation& c = b.computation();
  const double block = 2.0 * 512 * 512 * 128;
  EXPECT_DOUBLE_EQ(flash_attention_flops(c.instr(c.instr(f.out).operand(0)), c), 2 * 36 * 2 * block);
  EXPECT_DOUBLE_EQ(flash_attention_flops(c.instr(c.instr(g.dq).operand(0)), c), 2 * 36 * 5 * block);
  EXPECT_DOUBLE_EQ(flash_attention_flops(c.instr(q), c), 0);
}

}  // namespace
}  // namespace podsim::compiler
