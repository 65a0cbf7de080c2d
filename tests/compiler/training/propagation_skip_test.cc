// Sharding propagation on whole training steps with and without the sweeps'
// skipping of unchanged rules (compiler/propagation/propagation.cc): the
// skip must leave every sharding and the sweep and change counts as they
// are. Training steps are the big graphs the skip is for: forward, reverse
// sweep (recomputed with remat full), gradient sums over microbatches and
// the optimizer with weight-update sharding.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "compiler/propagation/propagation.h"
#include "compiler/sharding/mesh.h"
#include "compiler/training/ir_helpers.h"
#include "compiler/training/training_step.h"
#include "gradient_check.h"

namespace podsim::compiler::testing {
namespace {

// Three residual MLP layers on x [8, 4] on a [x=2, y=4] mesh: weights
// split on the hidden dim over y, activations on the batch over x; only the
// parameters are annotated, everything else is propagated.
Module sharded_mlp_forward(const DeviceMesh& mesh) {
  const DType t = DType::kF32;
  const int64_t batch = 8, d = 4, hidden = 8;
  ForwardBuilder f;
  auto& b = f.b;
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  InstrId x = f.input(Shape(t, {batch, d}), "x");
  b.set_sharding(x, mesh_split(2, mesh, DimsMapping{{"x"}, {}}).to_string());
  for (int l = 0; l < 3; ++l) {
    InstrId w_in = f.param(Shape(t, {d, hidden}), fmt::format("layer_{}/w_in", l));
    InstrId w_out = f.param(Shape(t, {hidden, d}), fmt::format("layer_{}/w_out", l));
    InstrId scale = f.param(Shape(t, {d}), fmt::format("layer_{}/scale", l));
    b.set_sharding(w_in, mesh_split(2, mesh, DimsMapping{{}, {"y"}}).to_string());
    b.set_sharding(w_out, mesh_split(2, mesh, DimsMapping{{"y"}, {}}).to_string());
    b.set_op_name_scope(fmt::format("fwd/layer_{}/ffn", l));
    InstrId h = b.dot(x, w_in, mm);
    InstrId a = b.binary(Opcode::kMultiply, b.unary(Opcode::kTanh, h), h);
    InstrId y =
        b.binary(Opcode::kMultiply, b.dot(a, w_out, mm), b.broadcast(scale, {batch, d}, {1}));
    x = b.binary(Opcode::kAdd, x, y);
  }
  b.set_op_name_scope("fwd/loss");
  InstrId sum = training::reduce_sum_all(b, f.reducers, b.binary(Opcode::kMultiply, x, x));
  InstrId loss =
      b.binary(Opcode::kMultiply, sum, b.scalar_constant(t, 1.0 / static_cast<double>(batch * d)));
  f.module.set_entry(f.module.add_computation(std::move(b).build(loss)));
  return f.module;
}

struct StepCase {
  const char* name;
  OptimizerKind optimizer;
  RematKind remat;
  int64_t microbatches;
};

class PropagationSkipOnTrainingSteps : public ::testing::TestWithParam<StepCase> {};

TEST_P(PropagationSkipOnTrainingSteps, SameShardingsSweepsAndChanges) {
  const DeviceMesh mesh({{"x", 2}, {"y", 4}});
  TrainingStepOptions options;
  options.optimizer.kind = GetParam().optimizer;
  options.remat = GetParam().remat;
  options.microbatches = GetParam().microbatches;
  options.mesh = mesh;
  const Module step = build_training_step(sharded_mlp_forward(mesh), options).module;

  Module skipping = step, full = step;
  PropagationOptions skip_options, full_options;
  skip_options.num_devices = full_options.num_devices = 8;
  full_options.rerun_every_rule = true;
  const PropagationStats a = propagate_shardings(skipping, skip_options);
  const PropagationStats b = propagate_shardings(full, full_options);
  EXPECT_EQ(a.sweeps, b.sweeps);
  EXPECT_EQ(a.changes, b.changes);
  EXPECT_GT(b.changes, 0);
  const Computation& ca = skipping.entry();
  const Computation& cb = full.entry();
  ASSERT_EQ(ca.size(), cb.size());
  for (InstrId i = 0; i < ca.size(); ++i)
    EXPECT_EQ(ca.instr(i).sharding, cb.instr(i).sharding) << ca.instr(i).name;
}

INSTANTIATE_TEST_SUITE_P(
    Steps, PropagationSkipOnTrainingSteps,
    ::testing::Values(StepCase{"sgd_none", OptimizerKind::kSgd, RematKind::kNone, 1},
                      StepCase{"adam_full_2mb", OptimizerKind::kAdam, RematKind::kFull, 2},
                      StepCase{"adafactor_none_2mb", OptimizerKind::kAdafactor, RematKind::kNone,
                               2},
                      StepCase{"adafactor_full", OptimizerKind::kAdafactor, RematKind::kFull, 1}),
    [](const ::testing::TestParamInfo<StepCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace podsim::compiler::testing
