// Closed-form parameter and FLOP counts (workloads/model_info.h) against the
// published totals (docs/reference/measurements.md) and hand derivations on tiny specs.
#include <gtest/gtest.h>

#include "common/error.h"
#include "workloads/model_info.h"

namespace podsim::workloads {
namespace {

ModelSpec dense(int64_t layers, int64_t model, int64_t ffn, int64_t heads) {
  ModelSpec m;
  m.kind = ModelKind::kDenseTransformer;
  m.layers = layers;
  m.model_dim = model;
  m.ffn_dim = ffn;
  m.heads = heads;
  m.head_dim = 128;
  m.vocab = 32000;
  m.seq_len = 1024;
  m.global_batch = 1;
  return m;
}

TEST(ParameterCount, Dense128BMatchesPublishedTotal) {
  EXPECT_EQ(count_parameters(dense(64, 8192, 65536, 128)).total, 137'702'416'384);
}

TEST(ParameterCount, Dense1TMatchesPublishedTotal) {
  EXPECT_EQ(count_parameters(dense(128, 16384, 131072, 256)).total, 1'100'041'175'040);
}

TEST(ParameterCount, Gpt175BConfigMatchesPublishedTotal) {
  // GELU FFN (g = 2), learned S x M positions with S = 2048, no relative bias.
  ModelSpec m = dense(96, 12288, 49152, 96);
  m.ffn = FfnKind::kGelu;
  m.position = PositionKind::kLearned;
  m.seq_len = 2048;
  EXPECT_EQ(count_parameters(m).total, 174'366'928'896);
}

ModelSpec gshard(int64_t experts, int64_t layers) {
  ModelSpec m = dense(layers, 1024, 8192, 16);
  m.kind = ModelKind::kMoeTransformer;
  m.structure = ModelStructure::kEncoderDecoder;
  m.ffn = FfnKind::kRelu;
  m.experts = experts;
  return m;
}

TEST(ParameterCount, GShardMoeNearPublishedTotals) {
  // GShard's totals are rounded ("600B", "37B", "1T"); the expert weights
  // alone are 18 MoE layers x E x 2 x 1024 x 8192 = E x 301,989,888, i.e.
  // 618.5B for 2048 experts and 38.7B for 128, so within 7% is the claim.
  EXPECT_NEAR(static_cast<double>(count_parameters(gshard(2048, 36)).total), 600e9, 0.07 * 600e9);
  EXPECT_NEAR(static_cast<double>(count_parameters(gshard(128, 36)).total), 37e9, 0.07 * 37e9);
  EXPECT_NEAR(static_cast<double>(count_parameters(gshard(2048, 60)).total), 1e12, 0.07 * 1e12);
}

// L=2, M=4, H=8, N=2, D=2, V=10, gated (g=3), relative bias:
// P = 2 (3*4*8 + 4*4*2*2) + 10*4 + 2*4*2 + 4 + 32*2*2 = 320 + 40 + 16 + 4 + 128 = 508.
ModelSpec tiny_dense() {
  ModelSpec m;
  m.layers = 2;
  m.model_dim = 4;
  m.ffn_dim = 8;
  m.heads = 2;
  m.head_dim = 2;
  m.vocab = 10;
  m.seq_len = 3;
  m.global_batch = 2;
  return m;
}

TEST(ParameterCount, TinyDenseByHand) { EXPECT_EQ(count_parameters(tiny_dense()).total, 508); }

TEST(ParameterCount, UntiedEmbeddingAddsTheOutputTable) {
  // 508 + a separate V x M = 10 x 4 output table = 548; rotary positions
  // have no weights and drop the 32 x 2 x 2 = 128 relative-bias scalars: 420.
  ModelSpec m = tiny_dense();
  m.tied_embedding = false;
  EXPECT_EQ(count_parameters(m).total, 548);
  m.position = PositionKind::kRotary;
  EXPECT_EQ(count_parameters(m).total, 420);
}

TEST(ParameterCount, GroupedQueryAttentionCountsKvProjectionsOfKHeads) {
  // kv_heads K = 1 of N = 2: per layer 2 M N D + 2 M K D = 32 + 16 = 48
  // instead of 64: 508 - 2 x 16 = 476.
  ModelSpec m = tiny_dense();
  m.kv_heads = 1;
  EXPECT_EQ(count_parameters(m).total, 476);
  m.kv_heads = 2;  // = heads: multi-head attention
  EXPECT_EQ(count_parameters(m).total, 508);
}

TEST(ParameterCount, ParallelBlockHasOneNormPerLayerAndQkNormTwoHeadDimScales) {
  // Parallel: one [M] pre-norm per layer, 508 - 2 x 4 = 500; qk_norm: a [D]
  // scale for q and one for k per attention, 500 + 2 x 2 x 2 = 508.
  ModelSpec m = tiny_dense();
  m.block = BlockKind::kParallel;
  EXPECT_EQ(count_parameters(m).total, 500);
  m.qk_norm = true;
  EXPECT_EQ(count_parameters(m).total, 508);
}

TEST(ParameterCount, HeadsTimesHeadDimMayDifferFromModelDim) {
  // N D = 4 x 8 = 32 != M = 4: attention 4 M N D = 512 per layer;
  // P = 2 (3*4*8 + 512 + 2*4 + 32*4) + 10*4 + 4 = 2 x 744 + 44 = 1532.
  ModelSpec m = tiny_dense();
  m.heads = 4;
  m.head_dim = 8;
  EXPECT_EQ(count_parameters(m).total, 1532);
}

TEST(ParameterCount, MaxText22BOf2023) {
  // MaxText's 2023 22B decoder: 48 layers, emb 6144, 24 heads x 256, ReLU
  // MLP 24576 (2 matrices), vocab 32768 tied, query/key layer norms, T5
  // relative bias (32 buckets x heads per layer), parallel block:
  // P = 48 (4 M N D + 2 M H) + V M + 48 (M + 2 D + 32 N) + M
  //   = 48 x 452,984,832 + 201,326,592 + 48 x 7,424 + 6,144 = 21,944,961,024.
  ModelSpec m = dense(48, 6144, 24576, 24);
  m.head_dim = 256;
  m.vocab = 32768;
  m.ffn = FfnKind::kRelu;
  m.norm = NormKind::kLayer;
  m.qk_norm = true;
  m.block = BlockKind::kParallel;
  EXPECT_EQ(count_parameters(m).total, 21'944'961'024);
}

TEST(ParameterCount, Llama2_70BWithGroupedQueryAttention) {
  // Llama 2 70B: 80 layers, M 8192, 64 heads x 128, 8 K/V heads, SwiGLU
  // 28672 (3 matrices), vocab 32000 untied, RMS norms, rotary:
  // P = 80 (2 M N D + 2 M K D + 3 M H + 2 M) + 2 V M + M
  //   = 80 x 855,654,400 + 524,288,000 + 8,192 = 68,976,648,192 (the published 70B count).
  ModelSpec m = dense(80, 8192, 28672, 64);
  m.kv_heads = 8;
  m.position = PositionKind::kRotary;
  m.tied_embedding = false;
  EXPECT_EQ(count_parameters(m).total, 68'976'648'192);
}

TEST(ModelFlops, DenseIsSixPTokensPlusAttention) {
  // tokens = 2 x 3 = 6; 6 P tokens = 6 * 508 * 6 = 18288;
  // attention = 12 x 2 blocks x S=3 x N=2 x D=2 x 6 tokens = 1728.
  ModelInfo info = transformer_model_info(tiny_dense());
  EXPECT_EQ(info.tokens_per_step, 6);
  EXPECT_EQ(info.parameters, 508);
  EXPECT_EQ(info.activated_parameters, 508);
  EXPECT_DOUBLE_EQ(info.model_flops_per_step, 18288.0 + 1728.0);
}

TEST(ModelFlops, GroupedQueryAttentionKeepsTheQueryHeadsInTheAttentionTerm) {
  // kv_heads 1: 6 P tokens = 6 x 476 x 6 = 17136; the score and context
  // matmuls still run per query head: 12 x 2 x 3 x 2 x 2 x 6 = 1728.
  ModelSpec m = tiny_dense();
  m.kv_heads = 1;
  EXPECT_DOUBLE_EQ(transformer_model_info(m).model_flops_per_step, 17136.0 + 1728.0);
}

TEST(ParameterCount, MoeCountsExpertsInTotalAndTopKInActivated) {
  // decoder_only, L=2, moe_every=2: layer 1 is MoE. ReLU (g=2), E=4, k=2.
  // Per layer: attention 4*4*2*2 = 64, norms 2*4 = 8, relative 32*2 = 64 -> 136.
  // Layer 0 FFN 2*4*8 = 64; layer 1: experts 4*64 + gating 4*4 = 272,
  // activated 2*64 + 16 = 144. Embedding 10*4 + final norm 4 = 44.
  ModelSpec m = tiny_dense();
  m.kind = ModelKind::kMoeTransformer;
  m.ffn = FfnKind::kRelu;
  m.experts = 4;
  ParameterCount count = count_parameters(m);
  EXPECT_EQ(count.total, 2 * 136 + 64 + 272 + 44);
  EXPECT_EQ(count.activated, 2 * 136 + 64 + 144 + 44);
  EXPECT_EQ(count.attention_blocks, 2);
}

TEST(LayerPlan, EncoderDecoderSplitsStacksAndPlacesMoeEveryOtherLayer) {
  ModelSpec m = tiny_dense();
  m.kind = ModelKind::kMoeTransformer;
  m.structure = ModelStructure::kEncoderDecoder;
  m.layers = 4;
  m.experts = 4;
  std::vector<LayerPlan> plan = plan_layers(m);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_TRUE(plan[0].encoder && plan[1].encoder);
  EXPECT_TRUE(!plan[2].encoder && plan[2].cross_attention && plan[3].cross_attention);
  EXPECT_FALSE(plan[0].moe);
  EXPECT_TRUE(plan[1].moe);
  EXPECT_FALSE(plan[2].moe);
  EXPECT_TRUE(plan[3].moe);
  // Two self + two cross attentions.
  EXPECT_EQ(count_parameters(m).attention_blocks, 6);
  // FLOPs use the activated count: layers 1, 3 are MoE (E = 4, k = 2, gated
  // GELU g = 3, M = 4, H = 8: 96 per expert): each activates 2 x 96 of its 4 x 96.
  ModelInfo info = transformer_model_info(m);
  EXPECT_EQ(info.parameters - info.activated_parameters, 2 * (4 - 2) * 96);
  m.layers = 5;
  EXPECT_THROW(plan_layers(m), UserError);
}

}  // namespace
}  // namespace podsim::workloads
