// Weight-update sharding on a mesh {x: 2, y: 4}: which replicated axes a
// weight's update is further split over, and what build_training_step
// annotates.
#include <gtest/gtest.h>

#include "compiler/ir/verifier.h"
#include "compiler/sharding/sharding_util.h"
#include "compiler/training/training_step.h"
#include "compiler/training/weight_update_sharding.h"
#include "gradient_check.h"

namespace podsim::compiler::testing {
namespace {

using Axes = std::vector<std::optional<std::string>>;

DeviceMesh mesh24() { return DeviceMesh({{"x", 2}, {"y", 4}}); }

Sharding update_of(std::vector<int64_t> dims, const DimsMapping& weight) {
  DeviceMesh mesh = mesh24();
  auto s = weight_update_sharding(mesh_split(static_cast<int64_t>(dims.size()), mesh, weight), dims,
                                  mesh);
  EXPECT_TRUE(s.has_value());
  return *s;
}

TEST(WeightUpdateSharding, ReplicatedAxisGoesToTheDimWithTheLargestShard) {
  DeviceMesh mesh = mesh24();
  // [8,16] split {-, y}: x is replicated; per-device extents 8 (dim 0) vs
  // 16/4 = 4 (dim 1) -> x goes to dim 0: {x},{y} = devices [2,4] in mesh order.
  Sharding s = update_of({8, 16}, {{}, {"y"}});
  EXPECT_EQ(s, mesh_split(2, mesh, DimsMapping{{"x"}, {"y"}}));
  EXPECT_EQ(s.to_string(), "{devices=[2,4]<=[8]}");
}

TEST(WeightUpdateSharding, TiesGoToTheLowerDimAndAxesAppendMinorMost) {
  // [16,4] split {y, -}: x replicated; extents 16/4 = 4 and 4 tie -> dim 0,
  // appended after y: dim 0 over (y, x), tile index y*2 + x, device x*4 + y.
  Sharding s = update_of({16, 4}, {{"y"}, {}});
  EXPECT_EQ(s, mesh_split(2, mesh24(), DimsMapping{{"y", "x"}, {}}));
  EXPECT_EQ(s.to_string(), "{devices=[8,1]<=[2,4]T(1,0)}");
}

TEST(WeightUpdateSharding, FullyReplicatedWeightIsSplitOverEveryAxisThatDivides) {
  // [6,4] replicated: x (2) -> dim 0 (extent 6 > 4); y (4): 6 % (2*4) != 0,
  // 4 % 4 == 0 -> dim 1.
  EXPECT_EQ(update_of({6, 4}, {{}, {}}), mesh_split(2, mesh24(), DimsMapping{{"x"}, {"y"}}));
  // [3,5]: no axis divides either dim -> stays replicated.
  EXPECT_TRUE(update_of({3, 5}, {{}, {}}).is_replicated());
  // [4,6] split {x, -}: y (4) would need 4 % (2*4) == 0 or 6 % 4 == 0 -> stays.
  EXPECT_EQ(update_of({4, 6}, {{"x"}, {}}), mesh_split(2, mesh24(), DimsMapping{{"x"}, {}}));
}

TEST(WeightUpdateSharding, NoMeshSplitGivesNothing) {
  EXPECT_FALSE(weight_update_sharding(Sharding::maximal(3), std::vector<int64_t>{8, 8}, mesh24())
                   .has_value());
}

TEST(WeightUpdateSharding, TrainingStepAnnotatesGradientsSlotsAndNewWeights) {
  DeviceMesh mesh = mesh24();
  ForwardBuilder f;
  InstrId w = f.param(Shape(DType::kF32, {8, 16}), "w");
  InstrId x = f.input(Shape(DType::kF32, {8, 16}), "x");
  Sharding weight_sharding = mesh_split(2, mesh, DimsMapping{{}, {"y"}});
  f.b.set_sharding(w, weight_sharding.to_string());
  InstrId loss = training::reduce_sum_all(f.b, f.reducers, f.b.binary(Opcode::kMultiply, w, x));
  f.module.set_entry(f.module.add_computation(std::move(f.b).build(loss)));

  TrainingStepOptions options;  // Adafactor, factored: slots v_row [8], v_col [16]
  options.mesh = mesh;
  TrainingStep step = build_training_step(f.module, options);
  verify_module(step.module);
  const Computation& entry = step.module.entry();
  Sharding update = mesh_split(2, mesh, DimsMapping{{"x"}, {"y"}});
  std::vector<InstrId> params = entry.parameters();
  // v_row [8]: the update's dim-1 tiling (y) becomes replication.
  EXPECT_EQ(parse_sharding(*entry.instr(params[2]).sharding),
            mesh_split(1, mesh, DimsMapping{{"x"}}));
  // v_col [16]: dim 0's x becomes replication.
  EXPECT_EQ(parse_sharding(*entry.instr(params[3]).sharding),
            mesh_split(1, mesh, DimsMapping{{"y"}}));
  // The gradient enters the optimizer through a Sharding annotation with the
  // update sharding; the new weight leaves through one with the weight's.
  int gradient_annotations = 0;
  for (const Instruction& in : entry.instructions()) {
    if (in.opcode != Opcode::kCustomCall || !in.sharding) continue;
    if (parse_sharding(*in.sharding) == update) ++gradient_annotations;
  }
  EXPECT_EQ(gradient_annotations, 1);
  const Instruction& new_weight = entry.instr(entry.root_instr().operand(1));
  ASSERT_EQ(new_weight.opcode, Opcode::kCustomCall);
  EXPECT_EQ(parse_sharding(*new_weight.sharding), weight_sharding);
  // Every optimizer op of the weight's shape computes in the update sharding.
  int update_ops = 0;
  for (const Instruction& in : entry.instructions())
    if (training::starts_with(in.op_name, "opt/w") && in.shape == Shape(DType::kF32, {8, 16}) &&
        in.opcode != Opcode::kCustomCall) {
      ASSERT_TRUE(in.sharding.has_value()) << in.name;
      EXPECT_EQ(parse_sharding(*in.sharding), update) << in.name;
      ++update_ops;
    }
  EXPECT_GT(update_ops, 4);

  options.weight_update_sharding = false;
  TrainingStep plain = build_training_step(f.module, options);
  const Computation& pe = plain.module.entry();
  EXPECT_EQ(parse_sharding(*pe.instr(pe.parameters()[2]).sharding),
            mesh_split(1, mesh, DimsMapping{{}}));
  EXPECT_NE(pe.instr(pe.root_instr().operand(1)).opcode, Opcode::kCustomCall);
}

}  // namespace
}  // namespace podsim::compiler::testing
