// Microbatches (training.microbatches = M > 1): build_model emits the forward
// of ONE microbatch (global_batch / M rows, training_step.h), ModelInfo stays
// per global step, and build_training_step turns the microbatch forward back
// into a step whose inputs hold the global batch.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/training/training_step.h"
#include "workloads/model_builder.h"

namespace podsim::workloads {
namespace {

std::string source(const std::string& relative) {
  return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

// Shape of the entry parameter with this op_name (empty dims if absent).
std::vector<int64_t> parameter_dims(const compiler::Module& module, const std::string& op_name) {
  for (compiler::InstrId p : module.entry().parameters())
    if (module.entry().instr(p).op_name == op_name) return module.entry().instr(p).shape.dims();
  ADD_FAILURE() << "no parameter " << op_name;
  return {};
}

TEST(Microbatches, ForwardIsBuiltForOneMicrobatch) {
  // small.yaml: global_batch 8, seq_len 16; M = 4 -> 8 / 4 = 2 rows.
  BuiltModel model =
      build_model(load_workload(source("workloads/small.yaml"), {"training.microbatches=4"}));
  EXPECT_EQ(parameter_dims(model.module, "input/tokens"), (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(parameter_dims(model.module, "input/targets"), (std::vector<int64_t>{2, 16}));
}

TEST(Microbatches, ModelInfoStaysPerGlobalStep) {
  BuiltModel one = build_model(load_workload(source("workloads/small.yaml")));
  BuiltModel four =
      build_model(load_workload(source("workloads/small.yaml"), {"training.microbatches=4"}));
  // tokens_per_step = global_batch x seq_len = 8 x 16 = 128 whatever M is.
  EXPECT_EQ(four.info.tokens_per_step, 128);
  EXPECT_EQ(four.info.tokens_per_step, one.info.tokens_per_step);
  EXPECT_DOUBLE_EQ(four.info.model_flops_per_step, one.info.model_flops_per_step);
  EXPECT_EQ(four.info.parameters, one.info.parameters);
}

TEST(Microbatches, InferenceForwardKeepsTheGlobalBatch) {
  // training.enabled = false: no training step splits the batch, so the
  // forward sees all 8 rows.
  BuiltModel model = build_model(load_workload(
      source("workloads/small.yaml"), {"training.microbatches=4", "training.enabled=false"}));
  EXPECT_EQ(parameter_dims(model.module, "input/tokens"), (std::vector<int64_t>{8, 16}));
}

TEST(Microbatches, TrainingStepInputsHoldTheGlobalBatch) {
  // The step multiplies the forward's batch (2) by M (4) on dim 0: 8 rows,
  // the YAML's global_batch, so `podsim run` feeds the full batch.
  Workload w = load_workload(source("workloads/small.yaml"), {"training.microbatches=4"});
  BuiltModel model = build_model(w);
  compiler::TrainingStepOptions options;
  options.optimizer.kind = compiler::OptimizerKind::kSgd;
  options.microbatches = w.training.microbatches;
  options.mesh = model.mesh;
  compiler::TrainingStep step = compiler::build_training_step(model.module, options);
  EXPECT_EQ(parameter_dims(step.module, "input/tokens"), (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(parameter_dims(step.module, "input/targets"), (std::vector<int64_t>{8, 16}));
}

TEST(Microbatches, MoeGroupsFollowTheMicrobatchTokens) {
  // moe_37b_128 with batch 8 x seq 16 = 128 tokens per step; M = 2 gives 64
  // tokens per forward, which do not split into groups of 128.
  try {
    build_model(load_workload(source("workloads/moe_37b_128.yaml"),
                              {"model.global_batch=8", "model.seq_len=16", "model.group_size=128",
                               "training.microbatches=2", "model.layers=4"}));
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("does not divide the 64 tokens of a forward"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace podsim::workloads
