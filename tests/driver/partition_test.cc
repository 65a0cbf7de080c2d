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

}  // namespace
}  // namespace podsim::driver
