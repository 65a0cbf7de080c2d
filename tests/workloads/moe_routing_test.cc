// GShard group sizes and top-2 routing with capacity, evaluated in the
// interpreter on hand-picked gates.
#include <gtest/gtest.h>

#include "common/error.h"
#include "compiler/interpreter/interpreter.h"
#include "workloads/moe_routing.h"

namespace podsim::workloads {
namespace {

using compiler::DType;
using compiler::Literal;
using compiler::Shape;

ModelSpec gshard_moe(int64_t experts) {
  ModelSpec m;
  m.kind = ModelKind::kMoeTransformer;
  m.experts = experts;
  m.top_k = 2;
  m.capacity_factor = 1.0;
  return m;
}

TEST(MoeDims, GShardCapacityIsTwoSOverE) {
  // MoE(2048E): 4096 x 1024 tokens over 2048 groups -> S = 2048, C = 2 x 2048 / 2048 = 2.
  MoeDims big = moe_dims(gshard_moe(2048), 4096 * 1024, 2048);
  EXPECT_EQ(big.groups, 2048);
  EXPECT_EQ(big.group_size, 2048);
  EXPECT_EQ(big.capacity, 2);
  // MoE(128E): 1024 x 1024 tokens over 128 groups -> S = 8192, C = 2 x 8192 / 128 = 128.
  MoeDims small = moe_dims(gshard_moe(128), 1024 * 1024, 128);
  EXPECT_EQ(small.group_size, 8192);
  EXPECT_EQ(small.capacity, 128);
  // An explicit group size: 64 tokens in groups of 16 -> G = 4; C = ceil(2 x 16 / 5) = 7.
  ModelSpec m = gshard_moe(5);
  m.group_size = 16;
  MoeDims given = moe_dims(m, 64, 1);
  EXPECT_EQ(given.groups, 4);
  EXPECT_EQ(given.capacity, 7);
  m.group_size = 24;
  EXPECT_THROW(moe_dims(m, 64, 1), UserError);
}

TEST(MoeRouting, TopTwoWithCapacityDropsLateTokens) {
  // One group of S = 4 tokens, E = 2 experts, capacity C = 2.
  compiler::Module module("routing");
  ModelGraph g(module, DType::kF32, DType::kF32);
  InstrId gates = g.input("gates", Shape(DType::kF32, {1, 4, 2}), std::nullopt);
  MoeRouting r = top_k_routing(g, gates, 2, MoeDims{1, 4, 2});
  g.finish(g.builder().tuple({r.combine, r.dispatch}), "routing");
  // Gates: tokens 0-2 prefer expert 0 (0.75 / 0.25), token 3 expert 1.
  Literal in(Shape(DType::kF32, {1, 4, 2}), {0.75, 0.25, 0.75, 0.25, 0.75, 0.25, 0.25, 0.75});
  Literal out = compiler::evaluate(module, {in});
  const Literal& combine = out.element(0);
  const Literal& dispatch = out.element(1);
  // First choice: expert 0 takes tokens 0, 1 (slots 0, 1); token 2 is past
  // C = 2 and dropped; expert 1 takes token 3 (slot 0).
  // Second choice: expert 1 already holds 1 token, so token 0 lands in slot
  // 1; tokens 1, 2 would be slots 2, 3: dropped. Token 3's second expert 0
  // is full (slot 2): dropped. Each token's two gates sum to 1, so the
  // normalized weights are the gates themselves.
  std::vector<double> expected(4 * 2 * 2, 0.0);
  auto at = [](int s, int e, int c) { return static_cast<size_t>((s * 2 + e) * 2 + c); };
  expected[at(0, 0, 0)] = 0.75;
  expected[at(0, 1, 1)] = 0.25;
  expected[at(1, 0, 1)] = 0.75;
  expected[at(3, 1, 0)] = 0.75;
  ASSERT_EQ(combine.values().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_DOUBLE_EQ(combine.values()[i], expected[i]) << i;
    EXPECT_EQ(dispatch.values()[i], expected[i] > 0 ? 1.0 : 0.0) << i;
  }
}

}  // namespace
}  // namespace podsim::workloads
