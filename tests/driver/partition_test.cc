// partition_workload (driver/partition.h): the input (HLO file or workload
// forward model), the device count and the refusals before the compiler.
#include "driver/partition.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "tests/test_files.h"

namespace podsim::driver {
namespace {

namespace fs = std::filesystem;

const auto kNoNote = [](const std::string&) {};

TEST(Partition, MeshDeviceCountIsTheProduct) {
  EXPECT_EQ(mesh_device_count("x=4,y=2"), 8);
  EXPECT_EQ(mesh_device_count("x=3"), 3);
  EXPECT_THROW(mesh_device_count("x=0"), UserError);
}

TEST(Partition, HloModuleWithMatchingMeshIsPartitionedAndVerified) {
  PartitionJob job;
  job.input = test_files::source_path("tests/fixtures/hlo/dot_matmul_sharded.hlo");
  job.mesh = "x=4";
  job.request.verify = true;
  const compiler::PartitionResult result = partition_workload(job, kNoNote);
  EXPECT_TRUE(result.verify_ok);
  EXPECT_EQ(result.module.num_partitions(), 4);
  job.mesh = "x=8";  // the module says num_partitions=4
  EXPECT_THROW(partition_workload(job, kNoNote), UserError);
}

TEST(Partition, RefusesFlagsThatDoNotApply) {
  PartitionJob hlo;
  hlo.input = test_files::source_path("tests/fixtures/hlo/dot_matmul_sharded.hlo");
  hlo.overrides = {"model.layers=2"};
  EXPECT_THROW(partition_workload(hlo, kNoNote), UserError);
  hlo.overrides.clear();
  hlo.mode = compiler::ModuleMode::kAsIs;
  EXPECT_THROW(partition_workload(hlo, kNoNote), UserError);
  PartitionJob yaml;
  yaml.input = test_files::source_path("workloads/small.yaml");
  yaml.mesh = "x=4";
  EXPECT_THROW(partition_workload(yaml, kNoNote), UserError);
}

TEST(Partition, APerDeviceModuleIsRefusedUnlessForced) {
  PartitionJob job;
  job.input = test_files::source_path("tests/fixtures/hlo/spmd_partitioned.hlo");
  EXPECT_THROW(partition_workload(job, kNoNote), UserError);
}

TEST(Partition, PropagateOnlyWidensASmallMeshToTheNamedDevicesWithANote) {
  const fs::path file =
      fs::temp_directory_path() / ("podsim_partition_test_" + std::to_string(getpid()) + ".hlo");
  std::ofstream(file) << "HloModule m\n\nENTRY %main (p: f32[16,8]) -> f32[16,8] {\n"
                         "  %p = f32[16,8]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}\n"
                         "  ROOT %n = f32[16,8]{1,0} negate(f32[16,8]{1,0} %p)\n}\n";
  PartitionJob job;
  job.input = file.string();
  job.mesh = "x=2";
  job.request.propagate_only = true;
  std::vector<std::string> notes;
  const compiler::PartitionResult result =
      partition_workload(job, [&](const std::string& line) { notes.push_back(line); });
  fs::remove(file);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("device ids up to 3"), std::string::npos) << notes[0];
  EXPECT_EQ(result.module.num_partitions(), 4);
}

TEST(Partition, WorkloadForwardModelOnItsOwnMesh) {
  PartitionJob job;
  job.input = test_files::source_path("workloads/small.yaml");
  const compiler::PartitionResult result = partition_workload(job, kNoNote);
  EXPECT_EQ(result.module.num_partitions(), 8);  // small.yaml: mesh.axes {x: 2, y: 4}
  EXPECT_FALSE(result.verified);
}

// Two slices (mesh.dcn {data: 2}; device = 8 data + 4 x + y): the FFN's
// hidden dim split over data x y makes its output a partial sum over data
// x y that the activations want split over y only: a reduce-scatter over y
// inside each slice, then an all-reduce of the shard across the slices
// ({d, d + 8}); the forward still matches the reference interpreter.
TEST(Partition, TwoSliceWorkloadSplitsAPartialSumOverDataAndYAndVerifies) {
  PartitionJob job;
  job.input = test_files::source_path("workloads/small.yaml");
  job.overrides = {"mesh.dcn={data: 2}", "model.global_batch=16",
                   "sharding.ffn_hidden=[x, null, [data, y]]", "sharding.ffn_in=[null, [data, y]]",
                   "sharding.ffn_out=[[data, y], null]"};
  job.request.verify = true;
  const compiler::PartitionResult result = partition_workload(job, kNoNote);
  ASSERT_EQ(result.module.num_partitions(), 16);
  EXPECT_TRUE(result.verified);
  EXPECT_TRUE(result.verify_ok);
  int64_t splits = 0;
  const compiler::Computation& entry = result.module.entry();
  for (const compiler::Instruction& in : entry.instructions()) {
    if (in.opcode != compiler::Opcode::kAllReduce) continue;
    const compiler::Instruction& operand = entry.instr(in.operands[0]);
    if (operand.opcode != compiler::Opcode::kReduceScatter) continue;
    EXPECT_EQ(operand.attrs.replica_groups.expand(16)[1], (std::vector<int64_t>{4, 5, 6, 7}));
    for (const auto& group : in.attrs.replica_groups.expand(16))
      EXPECT_EQ(group, (std::vector<int64_t>{group[0], group[0] + 8}));
    ++splits;
  }
  EXPECT_EQ(splits, 2);  // the FFN output of each of the 2 layers
}

}  // namespace
}  // namespace podsim::driver
