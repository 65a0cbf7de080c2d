// Each optimizer's update against a hand-computed value on tiny tensors.
// Forward: loss = sum(w * x) (f32), so d loss / d w = x exactly.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/training/optimizers.h"
#include "compiler/training/training_step.h"
#include "gradient_check.h"

namespace podsim::compiler::testing {
namespace {

// The registry names every OptimizerKind once, in the order users see them,
// and its defaults are the documented ones (Adam: Kingma & Ba's 0.9, 0.999,
// 1e-8; AdamW: optax.adamw's, the same plus weight decay 1e-4; Adafactor: no
// first moment).
TEST(OptimizerRegistry, NamesEachKindOnceWithItsDefaults) {
  ASSERT_EQ(optimizers().size(), 4u);
  EXPECT_EQ(optimizers()[0].name, "sgd");
  EXPECT_EQ(optimizers()[1].name, "adam");
  EXPECT_EQ(optimizers()[2].name, "adamw");
  EXPECT_EQ(optimizers()[3].name, "adafactor");
  const OptimizerOptions adamw = optimizer_defaults(OptimizerKind::kAdamW);
  EXPECT_EQ(adamw.beta1, 0.9);
  EXPECT_EQ(adamw.beta2, 0.999);
  EXPECT_EQ(adamw.epsilon, 1e-8);
  EXPECT_EQ(adamw.weight_decay, 1e-4);
  EXPECT_EQ(optimizer_defaults(OptimizerKind::kAdam).weight_decay, 0.0);
  for (const OptimizerEntry& e : optimizers()) EXPECT_EQ(optimizer_defaults(e.kind).kind, e.kind);
  EXPECT_EQ(optimizer_defaults(OptimizerKind::kAdam).beta1, 0.9);
  EXPECT_EQ(optimizer_defaults(OptimizerKind::kAdam).beta2, 0.999);
  EXPECT_EQ(optimizer_defaults(OptimizerKind::kAdam).epsilon, 1e-8);
  EXPECT_EQ(optimizer_defaults(OptimizerKind::kAdafactor).beta1, 0.0);
}

const DType F32 = DType::kF32;

Module linear_loss(const Shape& shape) {
  ForwardBuilder f;
  InstrId w = f.param(shape, "w");
  InstrId x = f.input(shape, "x");
  InstrId loss = training::reduce_sum_all(f.b, f.reducers, f.b.binary(Opcode::kMultiply, w, x));
  f.module.set_entry(f.module.add_computation(std::move(f.b).build(loss)));
  return f.module;
}

// f32 results of a few operations: relative error ~ few x 2^-24 ~ 1e-6.
constexpr double kTol = 1e-5;

TEST(Optimizer, SgdUpdate) {
  TrainingStepOptions options;
  options.optimizer.kind = OptimizerKind::kSgd;
  options.optimizer.learning_rate = 0.1;
  TrainingStep step = build_training_step(linear_loss(Shape(F32, {2})), options);
  verify_module(step.module);
  EXPECT_EQ(step.module.entry().parameters().size(), 2u);  // no slots
  Literal r = evaluate(step.module,
                       {Literal(Shape(F32, {2}), {1, 2}), Literal(Shape(F32, {2}), {0.5, -1})});
  ASSERT_EQ(r.elements().size(), 2u);
  EXPECT_DOUBLE_EQ(r.element(0).scalar_value(), 1 * 0.5 + 2 * -1.0);
  // w' = w - 0.1 g = [1 - 0.05, 2 + 0.1]
  EXPECT_TRUE(compare_literals(Literal(Shape(F32, {2}), {0.95, 2.1}), r.element(1), kTol).ok);
}

// One Adam-family step (lr 0.1, b1 0.9, b2 0.99, eps 1e-8) of w = 1 with
// g = x = 0.5 from m = 0.1, v = 0.2 at step 1; checks the moments and the step
// count and returns the new weight.
double adam_family_step(OptimizerKind kind, double weight_decay) {
  TrainingStepOptions options;
  options.optimizer.kind = kind;
  options.optimizer.learning_rate = 0.1;
  options.optimizer.beta1 = 0.9;
  options.optimizer.beta2 = 0.99;
  options.optimizer.epsilon = 1e-8;
  options.optimizer.weight_decay = weight_decay;
  TrainingStep step = build_training_step(linear_loss(Shape(F32, {1})), options);
  verify_module(step.module);
  // Parameters: w, x, m, v, step.
  EXPECT_EQ(step.module.entry().parameters().size(), 5u);
  Literal r = evaluate(step.module, {Literal(Shape(F32, {1}), {1}), Literal(Shape(F32, {1}), {0.5}),
                                     Literal(Shape(F32, {1}), {0.1}),
                                     Literal(Shape(F32, {1}), {0.2}), Literal::scalar(F32, 1)});
  // t = 2: m' = 0.9*0.1 + 0.1*0.5 = 0.14; v' = 0.99*0.2 + 0.01*0.25 = 0.2005
  // (the moments never see the weight decay).
  EXPECT_NEAR(r.element(2).values()[0], 0.14, kTol);
  EXPECT_NEAR(r.element(3).values()[0], 0.2005, kTol);
  EXPECT_EQ(r.element(4).scalar_value(), 2.0);
  return r.element(1).values()[0];
}

TEST(Optimizer, AdamUpdateWithBiasCorrection) {
  // w' = 1 - 0.1 * (0.14 / (1 - 0.9^2)) / (sqrt(0.2005 / (1 - 0.99^2)) + 1e-8)
  double expected = 1 - 0.1 * (0.14 / 0.19) / (std::sqrt(0.2005 / 0.0199) + 1e-8);
  EXPECT_NEAR(adam_family_step(OptimizerKind::kAdam, 0.5), expected, kTol);  // Adam ignores wd
}

TEST(Optimizer, AdamWDecaysTheWeightApartFromTheMoments) {
  // Adam's direction plus the decay wd w = 0.5 * 1 inside the learning-rate
  // step (Loshchilov & Hutter 2019):
  // w' = 1 - 0.1 * ((0.14 / 0.19) / (sqrt(0.2005 / 0.0199) + 1e-8) + 0.5 * 1)
  double expected = 1 - 0.1 * ((0.14 / 0.19) / (std::sqrt(0.2005 / 0.0199) + 1e-8) + 0.5);
  EXPECT_NEAR(adam_family_step(OptimizerKind::kAdamW, 0.5), expected, kTol);
}

TEST(Optimizer, AdafactorFactoredWithClipping) {
  TrainingStepOptions options;  // Adafactor, beta1 = 0, factored, clipping 1
  options.optimizer.learning_rate = 0.1;
  TrainingStep step = build_training_step(linear_loss(Shape(F32, {2, 2})), options);
  verify_module(step.module);
  ASSERT_EQ(step.module.entry().parameters().size(), 4u);  // w, x, v_row [2], v_col [2]
  Literal w(Shape(F32, {2, 2}), {0, 0, 0, 0});
  Literal g(Shape(F32, {2, 2}), {1, 2, 3, 4});
  Literal zero2(Shape(F32, {2}), {0, 0});
  Literal r = evaluate(step.module, {w, g, zero2, zero2});
  // g^2 = [[1,4],[9,16]]; R' = 0.01 * row means [2.5, 12.5] = [0.025, 0.125];
  // C' = 0.01 * column means [5, 10] = [0.05, 0.1]; mean(R') = 0.075;
  // V = R'_i C'_j / 0.075 = [[1/60, 1/30], [1/12, 1/6]];
  // u^2 = g^2 / V = [[60, 120], [108, 96]]; RMS(u) = sqrt(384 / 4) = sqrt(96);
  // clipped u = u / sqrt(96); w' = -0.1 * sqrt(u^2 / 96).
  std::vector<double> u2{60, 120, 108, 96};
  Literal expected(Shape(F32, {2, 2}));
  for (size_t k = 0; k < 4; ++k) expected.mutable_values()[k] = -0.1 * std::sqrt(u2[k] / 96);
  Comparison c = compare_literals(expected, r.element(1), kTol);
  EXPECT_TRUE(c.ok) << c.first_mismatch;
  EXPECT_TRUE(compare_literals(Literal(Shape(F32, {2}), {0.025, 0.125}), r.element(2), kTol).ok);
  EXPECT_TRUE(compare_literals(Literal(Shape(F32, {2}), {0.05, 0.1}), r.element(3), kTol).ok);
}

TEST(Optimizer, AdafactorUnfactoredWithMomentumNoClipping) {
  TrainingStepOptions options;
  options.optimizer.learning_rate = 0.5;
  options.optimizer.beta1 = 0.5;
  options.optimizer.beta2 = 0.75;
  options.optimizer.clipping_threshold = 0;
  options.optimizer.factored = false;
  TrainingStep step = build_training_step(linear_loss(Shape(F32, {2})), options);
  // Parameters: w, x, m, v.
  ASSERT_EQ(step.module.entry().parameters().size(), 4u);
  Literal r = evaluate(step.module,
                       {Literal(Shape(F32, {2}), {1, 1}), Literal(Shape(F32, {2}), {2, -1}),
                        Literal(Shape(F32, {2}), {0.5, 0.5}), Literal(Shape(F32, {2}), {4, 1})});
  // v' = 0.75 v + 0.25 g^2 = [3 + 1, 0.75 + 0.25] = [4, 1]; u = g / sqrt(v') = [1, -1]
  // m' = 0.5 m + 0.5 u = [0.75, -0.25]; w' = w - 0.5 m' = [0.625, 1.125]
  EXPECT_TRUE(compare_literals(Literal(Shape(F32, {2}), {0.625, 1.125}), r.element(1), kTol).ok);
  EXPECT_TRUE(compare_literals(Literal(Shape(F32, {2}), {0.75, -0.25}), r.element(2), kTol).ok);
  EXPECT_TRUE(compare_literals(Literal(Shape(F32, {2}), {4, 1}), r.element(3), kTol).ok);
}

TEST(Optimizer, SlotParametersFollowTheOpNameContract) {
  TrainingStepOptions options;
  options.optimizer.kind = OptimizerKind::kAdam;
  TrainingStep step = build_training_step(linear_loss(Shape(F32, {3, 2})), options);
  const Computation& entry = step.module.entry();
  std::vector<InstrId> p = entry.parameters();
  EXPECT_EQ(entry.instr(p[2]).op_name, "opt_state/w/m");
  EXPECT_EQ(entry.instr(p[3]).op_name, "opt_state/w/v");
  EXPECT_EQ(entry.instr(p[4]).op_name, "opt_state/global/step");
  int opt_ops = 0, bwd_ops = 0;
  for (const Instruction& in : entry.instructions()) {
    opt_ops += training::starts_with(in.op_name, "opt/w");
    bwd_ops += training::starts_with(in.op_name, "bwd/");
  }
  EXPECT_GT(opt_ops, 5);
  EXPECT_GT(bwd_ops, 0);
}

}  // namespace
}  // namespace podsim::compiler::testing
