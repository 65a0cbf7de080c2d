// The 2-layer MLP: finite-difference gradients, remat equivalence and cost,
// microbatching equals the full batch.
#include <gtest/gtest.h>

#include "common/error.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/training/remat.h"
#include "compiler/training/training_step.h"
#include "gradient_check.h"
#include "test_models.h"

namespace podsim::compiler::testing {
namespace {

TEST(ModelTraining, TwoLayerMlpGradientsMatchFiniteDifferences) {
  Module m = two_layer_mlp(DType::kF64);
  check_gradients(m, default_args(m));
}

// Gradients (elements 1.. of the gradient module's tuple) under a policy.
struct RematRun {
  Literal result;
  Module module;
};
RematRun run_with(const Module& forward, RematChoice choice) {
  Module g = build_gradient_module(forward, choice);
  verify_module(g);
  return {evaluate(g, default_args(forward)), g};
}

int count_prefix(const Module& m, std::string_view prefix) {
  int n = 0;
  for (const Instruction& in : m.entry().instructions())
    n += training::starts_with(in.op_name, prefix);
  return n;
}

TEST(ModelTraining, RematPoliciesGiveIdenticalGradientsWithMoreRecompute) {
  Module forward = two_layer_mlp(DType::kF64);
  RematRun none = run_with(forward, {RematKind::kNone, ""});
  RematRun dots = run_with(forward, {RematKind::kSelective, "save_dots"});
  RematRun full = run_with(forward, {RematKind::kFull, ""});
  // Recomputed ops are clones of the same f64 ops on the same inputs: the
  // results are bit-identical.
  EXPECT_EQ(none.result, dots.result);
  EXPECT_EQ(none.result, full.result);
  int none_ops = count_prefix(none.module, "recompute/");
  int dots_ops = count_prefix(dots.module, "recompute/");
  int full_ops = count_prefix(full.module, "recompute/");
  EXPECT_EQ(none_ops, 0);
  EXPECT_GT(dots_ops, 0);
  EXPECT_GT(full_ops, dots_ops);  // full also recomputes the first matmul of each layer
}

TEST(ModelTraining, RecomputedFlopsCountOnlyRecomputedMatmuls) {
  Module forward = two_layer_mlp(DType::kF32);
  TrainingStepOptions options;
  options.remat = RematKind::kFull;
  TrainingStep full = build_training_step(forward, options);
  // Per layer the backward reads h = x W_in (tanh' and the product), a (for
  // dW_out) and r = x + y (the norm's r*r and r*inv); none is a checkpoint,
  // so both dots are recomputed: 2 dots x 2 * batch * d * hidden
  // = 2 x 2 * 4 * 8 * 16 = 2048 FLOPs per layer, 2 layers.
  EXPECT_DOUBLE_EQ(full.recomputed_flops, 2 * 2048.0);
  options.remat = RematKind::kSelective;
  options.remat_policy = "save_dots";
  TrainingStep dots = build_training_step(forward, options);
  EXPECT_DOUBLE_EQ(dots.recomputed_flops, 0.0);
  EXPECT_GT(dots.recomputed_instructions, 0);
  EXPECT_GT(full.recomputed_instructions, dots.recomputed_instructions);
  options.remat_policy = "save_everything_please";
  EXPECT_THROW(build_training_step(forward, options), UserError);
}

TEST(ModelTraining, RematChoicesAreOrderedByRecompute) {
  std::vector<RematChoice> choices = remat_choices_by_recompute();
  ASSERT_EQ(choices.size(), 3u);
  EXPECT_EQ(choices[0].name(), "none");
  EXPECT_EQ(choices[1].name(), "save_dots");
  EXPECT_EQ(choices[2].name(), "full");
}

TEST(ModelTraining, MicrobatchingEqualsFullBatchGradient) {
  Module forward = two_layer_mlp(DType::kF64, 4);
  TrainingStepOptions options;
  options.optimizer.kind = OptimizerKind::kSgd;
  options.optimizer.learning_rate = 1.0;  // new weight = w - gradient
  std::vector<Literal> args = default_args(forward);
  options.microbatches = 1;
  TrainingStep one = build_training_step(forward, options);
  Literal full = evaluate(one.module, args);
  for (int64_t m : {2, 4}) {
    // The forward is built for one microbatch of 4 / m rows; the step's
    // inputs take the full batch of 4.
    options.microbatches = m;
    TrainingStep split = build_training_step(two_layer_mlp(DType::kF64, 4 / m), options);
    EXPECT_EQ(split.module.entry().instr(split.module.entry().parameters()[6]).shape,
              Shape(DType::kF64, {4, 8}));
    verify_module(split.module);
    Literal r = evaluate(split.module, args);
    // Same terms summed in another order: f64 rounding only (~1e-16 relative).
    Comparison c = compare_literals(full, r, 1e-12);
    EXPECT_TRUE(c.ok) << m << " microbatches: " << c.first_mismatch;
  }
}

TEST(ModelTraining, ContractViolationsAreUserErrors) {
  ForwardBuilder f;
  InstrId x = f.input(Shape(DType::kF32, {2}), "x");
  Module no_weights = f.finish(x);
  EXPECT_THROW(build_training_step(no_weights, {}), UserError);
  ForwardBuilder g;
  InstrId w = g.param(Shape(DType::kF32, {2}), "w");
  g.module.set_entry(g.module.add_computation(std::move(g.b).build(w)));  // root not a scalar
  EXPECT_THROW(build_training_step(g.module, {}), UserError);
}

}  // namespace
}  // namespace podsim::compiler::testing
