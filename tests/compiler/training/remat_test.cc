// Remat policies on a tiny attention layer: which dots each policy saves and the FLOPs the
// backward pass recomputes, against closed forms.
#include "compiler/training/remat.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/verifier.h"
#include "compiler/training/autodiff.h"
#include "compiler/training/ir_helpers.h"
#include "compiler/training/training_step.h"
#include "gradient_check.h"

namespace podsim::compiler {
namespace {

constexpr int64_t kB = 2, kL = 4, kM = 8;

// One layer ("fwd/layer_0/attn") on x [B=2, L=4, M=8] with weights wq, wk, wo [8, 8]:
//   q = x wq, k = x wk          dots without batch dims           2 x (2*4*8*8) MACs
//   s = q k^T per b             batch dim b (B), contracts M      2*4*4*8 MACs
//   p = tanh(s)
//   c = p k per b               batch dim b, contracts L          2*4*8*4 MACs
//   y = x + c wo                (y is the layer's output: a checkpoint)
// loss = sum((y - target)^2) ("fwd/loss").
Module attention_layer(DType t) {
  Module m("attention");
  training::ReducerCache reducers(&m);
  ComputationBuilder b("main", &m);
  int64_t number = 0;
  auto param = [&](Shape s, const std::string& name, const std::string& role) {
    InstrId p = b.parameter(number++, std::move(s), name);
    b.set_op_name(p, role + "/" + name);
    return p;
  };
  const InstrId wq = param(Shape(t, {kM, kM}), "wq", "param");
  const InstrId wk = param(Shape(t, {kM, kM}), "wk", "param");
  const InstrId wo = param(Shape(t, {kM, kM}), "wo", "param");
  const InstrId x = param(Shape(t, {kB, kL, kM}), "x", "input");
  const InstrId target = param(Shape(t, {kB, kL, kM}), "target", "input");
  b.set_op_name_scope("fwd/layer_0/attn");
  DotDims project;  // [B, L, M] x [M, M]: no batch dims
  project.lhs_contracting = {2};
  project.rhs_contracting = {0};
  const InstrId q = b.dot(x, wq, project);
  const InstrId k = b.dot(x, wk, project);
  DotDims scores;  // [B, L, M] x [B, T, M] -> [B, L, T]
  scores.lhs_batch = {0};
  scores.rhs_batch = {0};
  scores.lhs_contracting = {2};
  scores.rhs_contracting = {2};
  const InstrId p = b.unary(Opcode::kTanh, b.dot(q, k, scores));
  DotDims context;  // [B, L, T] x [B, T, M] -> [B, L, M]
  context.lhs_batch = {0};
  context.rhs_batch = {0};
  context.lhs_contracting = {2};
  context.rhs_contracting = {1};
  const InstrId c = b.dot(p, k, context);
  const InstrId y = b.binary(Opcode::kAdd, x, b.dot(c, wo, project));
  b.set_op_name_scope("fwd/loss");
  const InstrId diff = b.binary(Opcode::kSubtract, y, target);
  const InstrId loss =
      training::reduce_sum_all(b, reducers, b.binary(Opcode::kMultiply, diff, diff));
  m.set_entry(m.add_computation(std::move(b).build(loss)));
  return m;
}

double recomputed_flops(RematKind kind, const std::string& policy) {
  TrainingStepOptions options;
  options.remat = kind;
  options.remat_policy = policy;
  return build_training_step(attention_layer(DType::kF32), options).recomputed_flops;
}

TEST(Remat, MinimalSavesOnlyDotsWithoutBatchDims) {
  // FLOPs are 2 per MAC. The backward reads c (for wo's gradient), p and k
  // (c's), q and k (s's); so full recomputes q, k, s and c, 2 x 512 + 2 x 256
  // MACs = 3072 FLOPs; save_dots recomputes only tanh (0 FLOPs); minimal
  // keeps q and k (no batch dims: the activations' B is not a dot batch dim)
  // and recomputes s and c, 2 x 256 MACs = 1024 FLOPs.
  const double project = 2.0 * kB * kL * kM * kM;  // 1024
  const double batched = 2.0 * kB * kL * kL * kM;  // 512 (s and c alike)
  EXPECT_EQ(recomputed_flops(RematKind::kNone, ""), 0.0);
  EXPECT_EQ(recomputed_flops(RematKind::kSelective, "save_dots"), 0.0);
  EXPECT_EQ(recomputed_flops(RematKind::kSelective, "minimal"), 2 * batched);
  EXPECT_EQ(recomputed_flops(RematKind::kFull, ""), 2 * project + 2 * batched);
}

TEST(Remat, MinimalGivesTheSameGradients) {
  // Recomputed ops are clones of the same f64 ops on the same inputs: bit-identical gradients,
  // and they match finite differences.
  const Module forward = attention_layer(DType::kF64);
  const std::vector<Literal> args = testing::default_args(forward);
  const Module none = build_gradient_module(forward, {RematKind::kNone, ""});
  const Module minimal = build_gradient_module(forward, {RematKind::kSelective, "minimal"});
  verify_module(minimal);
  EXPECT_EQ(evaluate(none, args), evaluate(minimal, args));
  testing::check_gradients(forward, args, 1e-6, {RematKind::kSelective, "minimal"});
}

TEST(Remat, PoliciesAndTheAutoLadder) {
  EXPECT_EQ(selective_remat_policies(), (std::vector<std::string>{"save_dots", "minimal"}));
  // remat "auto" keeps its ladder: minimal is only chosen by name.
  std::vector<std::string> ladder;
  for (const RematChoice& c : remat_choices_by_recompute()) ladder.push_back(c.name());
  EXPECT_EQ(ladder, (std::vector<std::string>{"none", "save_dots", "full"}));
}

}  // namespace
}  // namespace podsim::compiler
