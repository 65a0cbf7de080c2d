// The training step's passes are linear in the model size: instruction
// counts grow by the same amount for every added layer, and a 128-layer
// step builds (its wall time is printed, never asserted).
#include <gtest/gtest.h>

#include <chrono>

#include "compiler/training/training_step.h"
#include "test_models.h"

namespace podsim::compiler::testing {
namespace {

int64_t step_size(int64_t layers, RematKind remat) {
  TrainingStepOptions options;
  options.remat = remat;
  return build_training_step(mlp_stack(DType::kF32, 4, layers), options).module.entry().size();
}

TEST(Scale, InstructionCountIsAffineInLayers) {
  for (RematKind remat : {RematKind::kNone, RematKind::kFull}) {
    int64_t a = step_size(8, remat), b = step_size(16, remat), c = step_size(32, remat);
    // Every layer adds the same ops (forward, backward, optimizer, recompute):
    // count(L) = base + L * per_layer, so the differences scale with L.
    EXPECT_EQ(c - b, 2 * (b - a));
    EXPECT_GT(b, a);
  }
}

TEST(Scale, HundredTwentyEightLayersBuild) {
  auto start = std::chrono::steady_clock::now();
  TrainingStepOptions options;
  options.remat = RematKind::kFull;
  TrainingStep step = build_training_step(mlp_stack(DType::kF32, 4, 128), options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("128-layer training step: %d instructions in %.3f s\n", step.module.entry().size(),
              seconds);
  EXPECT_GT(step.recomputed_instructions, 0);
}

}  // namespace
}  // namespace podsim::compiler::testing
