// Every optimizer x remat policy x microbatch count builds a verified step
// whose loss output is the forward's loss on the full batch and whose new
// weights do not depend on the remat policy.
#include <gtest/gtest.h>

#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/training/training_step.h"
#include "gradient_check.h"
#include "test_models.h"

namespace podsim::compiler::testing {
namespace {

TEST(Combinations, OptimizerRematMicrobatches) {
  Module full_batch = two_layer_mlp(DType::kF64, 4);
  std::vector<Literal> args = default_args(full_batch);
  const double loss = evaluate(full_batch, args).scalar_value();
  for (OptimizerKind opt : {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdafactor}) {
    for (int64_t m : {1, 2}) {
      std::optional<Literal> first;
      for (RematKind remat : {RematKind::kNone, RematKind::kSelective, RematKind::kFull}) {
        TrainingStepOptions options;
        options.optimizer.kind = opt;
        options.remat = remat;
        options.remat_policy = remat == RematKind::kSelective ? "save_dots" : "";
        options.microbatches = m;
        TrainingStep step = build_training_step(two_layer_mlp(DType::kF64, 4 / m), options);
        verify_module(step.module);
        std::vector<Literal> step_args = args;
        const Computation& entry = step.module.entry();
        std::vector<InstrId> params = entry.parameters();
        for (size_t k = args.size(); k < params.size(); ++k)
          step_args.push_back(Literal(entry.instr(params[k]).shape));
        Literal r = evaluate(step.module, step_args);
        // Mean of microbatch means = full mean, up to f64 rounding.
        EXPECT_NEAR(r.element(0).scalar_value(), loss, 1e-12);
        // Remat clones compute the same f64 values: bit-identical steps.
        if (!first)
          first = r;
        else
          EXPECT_EQ(*first, r);
      }
    }
  }
}

}  // namespace
}  // namespace podsim::compiler::testing
