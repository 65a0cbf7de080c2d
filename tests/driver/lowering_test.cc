// Workload -> compiler and hardware options: the optimizer from its registry,
// each remat choice, and the mesh placement (typed in, typed out).
#include "driver/lowering.h"

#include <gtest/gtest.h>

#include "compiler/training/optimizers.h"
#include "tests/test_files.h"

namespace podsim::driver {
namespace {

using podsim::test_files::source_path;

workloads::BuiltModel empty_model(const workloads::Workload& w) {
  std::vector<compiler::MeshAxis> axes;
  for (const auto& [name, size] : w.mesh.axes) axes.push_back({name, size});
  return workloads::BuiltModel{compiler::Module{}, compiler::DeviceMesh(axes), {}};
}

compiler::CompileOptions lowered(const std::vector<std::string>& sets,
                                 const hw::HardwareConfig& hardware) {
  const workloads::Workload w = workloads::load_workload(source_path("workloads/small.yaml"), sets);
  return compile_options(w, empty_model(w), hardware);
}

// Each optimizer name lowers to its registry defaults: Adam with Kingma &
// Ba's 0.9 / 0.999 / 1e-8, Adafactor without a first moment (beta1 0).
TEST(Lowering, OptimizerComesFromTheRegistry) {
  const hw::HardwareConfig tpuv3 = hw::load_hardware("tpuv3");
  const compiler::OptimizerOptions adam =
      lowered({"training.optimizer=adam"}, tpuv3).training->optimizer;
  EXPECT_EQ(adam.kind, compiler::OptimizerKind::kAdam);
  EXPECT_EQ(adam.beta1, 0.9);
  EXPECT_EQ(adam.beta2, 0.999);
  EXPECT_EQ(adam.epsilon, 1e-8);
  const compiler::OptimizerOptions adafactor =
      lowered({"training.optimizer=adafactor"}, tpuv3).training->optimizer;
  EXPECT_EQ(adafactor.kind, compiler::OptimizerKind::kAdafactor);
  EXPECT_EQ(adafactor.beta1, 0.0);
  EXPECT_EQ(lowered({"training.optimizer=sgd"}, tpuv3).training->optimizer.kind,
            compiler::OptimizerKind::kSgd);
  const compiler::OptimizerOptions adamw =
      lowered({"training.optimizer=adamw"}, tpuv3).training->optimizer;
  EXPECT_EQ(adamw.kind, compiler::OptimizerKind::kAdamW);
  EXPECT_EQ(adamw.weight_decay, 1e-4);
  EXPECT_FALSE(lowered({"training.enabled=false"}, tpuv3).training.has_value());
}

// none / full map one to one; auto asks the compiler to fit the device's HBM
// (tpuv3: 16 GiB per core); a policy name is a selective remat with it.
TEST(Lowering, RematChoices) {
  const hw::HardwareConfig tpuv3 = hw::load_hardware("tpuv3");
  EXPECT_EQ(lowered({"training.remat=none"}, tpuv3).training->remat, compiler::RematKind::kNone);
  EXPECT_EQ(lowered({"training.remat=full"}, tpuv3).training->remat, compiler::RematKind::kFull);
  const compiler::CompileOptions automatic = lowered({"training.remat=auto"}, tpuv3);
  EXPECT_TRUE(automatic.remat_auto);
  EXPECT_EQ(automatic.hbm_budget_bytes, static_cast<int64_t>(tpuv3.hbm.capacity_bytes));
  EXPECT_EQ(automatic.training->remat, compiler::RematKind::kNone);
  const compiler::CompileOptions selective = lowered({"training.remat=save_dots"}, tpuv3);
  EXPECT_FALSE(selective.remat_auto);
  EXPECT_EQ(selective.training->remat, compiler::RematKind::kSelective);
  EXPECT_EQ(selective.training->remat_policy, "save_dots");
  EXPECT_EQ(lowered({"training.remat=minimal"}, tpuv3).training->remat_policy, "minimal");
}

// compiler.async_collectives (a set of opcodes) and collective_fusion reach the compile options.
TEST(Lowering, CollectiveExecutionReachesTheCompileOptions) {
  const hw::HardwareConfig tpuv3 = hw::load_hardware("tpuv3");
  EXPECT_EQ(lowered({}, tpuv3).collectives.async, compiler::CollectiveExecution{}.async);
  const compiler::CompileOptions v4 =
      lowered({"compiler.async_collectives=[all-gather, collective-permute]"}, tpuv3);
  EXPECT_EQ(v4.collectives.async,
            (std::set<compiler::Opcode>{compiler::Opcode::kAllGather,
                                        compiler::Opcode::kCollectivePermute}));
  EXPECT_FALSE(v4.collectives.is_async(compiler::Opcode::kAllReduce));
  EXPECT_TRUE(v4.collectives.fusion);  // default: collective fusion on
  EXPECT_FALSE(lowered({"compiler.collective_fusion=false"}, tpuv3).collectives.fusion);
}

TEST(Lowering, MeshLayoutKeepsShapeOrderAndDevices) {
  workloads::MeshSpec mesh;
  mesh.axes = {{"x", 2}, {"y", 2}};
  mesh.physical = {2, 1, 2};
  mesh.order = hw::PlacementOrder::kExplicit;
  mesh.explicit_devices = {3, 2, 1, 0};
  const hw::MeshLayout layout = mesh_layout(mesh);
  EXPECT_EQ(layout.mesh_shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(layout.physical, (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(layout.order, hw::PlacementOrder::kExplicit);
  EXPECT_EQ(layout.explicit_devices, (std::vector<int64_t>{3, 2, 1, 0}));
}

}  // namespace
}  // namespace podsim::driver
