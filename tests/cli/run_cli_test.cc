// `podsim run` end to end through the executable: error paths (exit 2,
// file:line:column, no partial output files) and a real run of
// workloads/small.yaml in every format, with a trace.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_test_util.h"

namespace {

namespace fs = std::filesystem;

using Result = podsim::cli_test::SplitRun;
using podsim::cli_test::fresh_dir;
using podsim::cli_test::read_file;
using podsim::cli_test::run_split;

using podsim::cli_test::source_path;

size_t files_in(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(RunCli, BadYamlReportsFileLineColumnExits2AndWritesNoFiles) {
  fs::path dir = fresh_dir("bad_yaml");
  fs::path bad = dir / "bad.yaml";
  // small.yaml with one bad value: "layers: two".
  std::string yaml = read_file(source_path("workloads/small.yaml"));
  size_t at = yaml.find("  layers: 2\n");
  ASSERT_NE(at, std::string::npos);
  yaml.replace(at, 11, "  layers: two");
  int line = 1 + static_cast<int>(std::count(yaml.begin(),
                                             yaml.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  std::ofstream(bad) << yaml;
  Result r = run_split("run " + bad.string() + " -o " + (dir / "r.json").string() + " --trace " +
                       (dir / "t.json").string() + " --format json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(bad.string() + ":" + std::to_string(line) + ":"), std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(files_in(dir), 1u);  // only bad.yaml: no report, no trace, no temp files
}

TEST(RunCli, MissingWorkloadFileExits2) {
  Result r = run_split("run /no/such/workload.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/no/such/workload.yaml"), std::string::npos) << r.err;
}

TEST(RunCli, BadOverrideExits2) {
  Result r = run_split("run " + source_path("workloads/small.yaml") + " --set model.no_such_key=3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no_such_key"), std::string::npos) << r.err;
}

TEST(RunCli, FullRunOverTheTimeLimitIsRefusedWithTheEstimate) {
  // 256 devices in full fidelity take far more than 1 ms to simulate: the
  // estimate after the first 2 % of the run is over the limit.
  Result r = run_split("run " + source_path("workloads/maxtext_16b_v5e_256.yaml") +
                       " --fidelity full --time-limit 0.001");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("would take about"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--fidelity fast"), std::string::npos) << r.err;
  // Without the limit the same run completes.
  EXPECT_EQ(run_split("run " + source_path("workloads/maxtext_16b_v5e_256.yaml") +
                      " --fidelity full --format csv")
                .exit_code,
            0);
}

TEST(RunCli, UnknownFormatIsRejectedByTheArgumentParser) {
  Result r = run_split("run " + source_path("workloads/small.yaml") + " --format yaml");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(RunCli, SmallWorkloadJsonReportAndTrace) {
  fs::path dir = fresh_dir("small");
  fs::path trace = dir / "small.trace.json";
  Result r = run_split("run " + source_path("workloads/small.yaml") + " --format json --trace " +
                       trace.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["workload"], "small");
  EXPECT_EQ(j["devices"].get<int64_t>(), 8);  // mesh {x: 2, y: 4}
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
  // small.yaml: global_batch 8 x seq_len 16 = 128 tokens per step.
  EXPECT_DOUBLE_EQ(j["tokens_per_second"].get<double>() * j["step_time_s"].get<double>(), 128.0);
  EXPECT_GT(j["mfu"].get<double>(), 0);
  EXPECT_LE(j["mfu"].get<double>(),
            j["hfu"].get<double>() * (1 + 1e-9));  // remat/padding only add FLOPs
  EXPECT_TRUE(j["fits_in_memory"].get<bool>());
  nlohmann::json t = nlohmann::json::parse(std::ifstream(trace));
  int complete = 0;
  for (const auto& e : t["traceEvents"]) complete += e["ph"] == "X";
  EXPECT_GT(complete, 0);
  EXPECT_EQ(files_in(dir), 1u);  // the trace, no temp file
}

TEST(RunCli, SmallWorkloadEveryFormatAndOutputFile) {
  fs::path dir = fresh_dir("formats");
  Result table = run_split("run " + source_path("workloads/small.yaml"));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("MFU"), std::string::npos) << table.out;
  Result csv = run_split("run " + source_path("workloads/small.yaml") + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 2);
  Result md = run_split("run " + source_path("workloads/small.yaml") + " --format markdown -o " +
                        (dir / "r.md").string());
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_TRUE(md.out.empty());
  std::ifstream in(dir / "r.md");
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "## small on tpuv3");
}

}  // namespace

namespace {

// A per-device program as XLA's SPMD partitioner writes it: the entry named
// "*_spmd", an all-gather over 4 devices (no num_partitions in the header).
constexpr const char* kPerDeviceModule = R"(HloModule per_device
ENTRY %main.7_spmd (p: f32[256,128], w: f32[128,512]) -> f32[1024,512] {
  %p = f32[256,128]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  %w = f32[128,512]{1,0} parameter(1), sharding={replicated}
  %g = f32[1024,128]{1,0} all-gather(%p), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  ROOT %d = f32[1024,512]{1,0} dot(%g, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

// The same computation before partitioning: shardings only.
constexpr const char* kGlobalModule = R"(HloModule global
ENTRY %main (p: f32[1024,128], w: f32[128,512]) -> f32[1024,512] {
  %p = f32[1024,128]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  %w = f32[128,512]{1,0} parameter(1), sharding={replicated}
  ROOT %d = f32[1024,512]{1,0} dot(%p, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
})";

fs::path write_module(const fs::path& dir, const std::string& name, const char* text) {
  const fs::path file = dir / name;
  std::ofstream(file) << text;
  return file;
}

TEST(RunHloCli, PerDeviceModuleRunsAsIsWithItsOwnCollectives) {
  const fs::path dir = fresh_dir("run_hlo_as_is");
  const fs::path file = write_module(dir, "m.hlo", kPerDeviceModule);
  const Result r = run_split("run " + file.string() + " --format json --tokens 1024");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "as-is");
  EXPECT_EQ(j["devices"], 4);  // from the replica groups
  // The per-device dot is 1024 x 128 x 512 MACs on each of 4 devices.
  EXPECT_DOUBLE_EQ(j["model_flops_per_step"].get<double>(), 4 * 2.0 * 1024 * 128 * 512);
  EXPECT_EQ(j["tokens_per_step"], 1024);
  // The module's one all-gather, run once and counted once.
  EXPECT_EQ(j["collectives"]["all-gather"]["count"], 1);
  EXPECT_EQ(j["collectives"]["all-gather"]["static_count"], 1);
  // 1024 x 128 f32 gathered: 512 KiB per device.
  EXPECT_DOUBLE_EQ(j["collectives"]["all-gather"]["bytes"].get<double>(), 1024.0 * 128 * 4);
  // The table says how it ran on its first line.
  const Result table = run_split("run " + file.string());
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.substr(0, table.out.find('\n')).find("run as-is"), std::string::npos)
      << table.out;
  // An HLO module does not say which entry parameters are weights: the count
  // is labelled as what it is. p and w: 1024 x 128 + 128 x 512 = 196608 floats.
  EXPECT_NE(table.out.find("entry float elements"), std::string::npos) << table.out;
  EXPECT_EQ(j["parameters"], 1024 * 128 + 128 * 512);
}

TEST(RunHloCli, GlobalModuleIsPartitionedOverTheDevicesItsShardingsName) {
  const fs::path dir = fresh_dir("run_hlo_partition");
  const fs::path file = write_module(dir, "g.hlo", kGlobalModule);
  const Result r = run_split("run " + file.string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "partition");
  EXPECT_EQ(j["devices"], 4);
  // --mode as-is on the global module runs it on one device's view: 4
  // devices each doing the whole dot.
  const Result forced =
      run_split("run " + file.string() + " --format json --mode as-is --mesh x=4");
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(nlohmann::json::parse(forced.out)["mode"], "as-is");
}

TEST(RunHloCli, PartitionRefusesAModuleXlaAlreadyPartitioned) {
  const fs::path dir = fresh_dir("partition_refuses");
  const fs::path file = write_module(dir, "m.hlo", kPerDeviceModule);
  const Result r = run_split("partition " + file.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("already one per-device program"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("main.7_spmd"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--mode partition"), std::string::npos) << r.err;
}

TEST(RunHloCli, WorkloadKeysAndMismatchedMeshAreUserErrors) {
  const fs::path dir = fresh_dir("run_hlo_errors");
  const fs::path file = write_module(dir, "m.hlo", kPerDeviceModule);
  Result r = run_split("run " + file.string() + " --set model.layers=2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("hardware keys only"), std::string::npos) << r.err;
  r = run_split("run " + file.string() + " --mesh x=3");
  EXPECT_EQ(r.exit_code, 2) << r.err;  // 3 devices cannot hold replica group {0,1,2,3}
  r = run_split("run " + source_path("workloads/small.yaml") + " --mesh x=4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("applies to an HLO module"), std::string::npos) << r.err;
}

TEST(RunHloCli, HostOffloadedValuesAreNamedInTheReport) {
  // A scheduled per-device program that parks a 1 MiB activation on the host
  // and brings it back: the note names the offloaded bytes (1024 x 256 f32 =
  // 1048576), and the two transfers take at least 2 x 1 MiB over the host
  // link (15.75e9 B/s per chip, shared by TPUv3's 2 devices: 7.875e9 B/s).
  const fs::path dir = fresh_dir("run_hlo_offload");
  const fs::path file =
      write_module(dir, "o.hlo", R"(HloModule offload, is_scheduled=true, num_partitions=2
ENTRY %main (x: f32[1024,256]) -> f32[1024,256] {
  %x = f32[1024,256]{1,0} parameter(0)
  %h = f32[1024,256]{1,0} custom-call(%x), custom_call_target="MoveToHost"
  %d = f32[1024,256]{1,0} custom-call(%h), custom_call_target="MoveToDevice"
  ROOT %n = f32[1024,256]{1,0} negate(%d)
})");
  const Result r = run_split("run " + file.string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "as-is");
  bool named = false;
  for (const auto& note : j["notes"])
    named |= note.get<std::string>().find("1 value(s) offloaded to host memory (1048576 bytes") !=
             std::string::npos;
  EXPECT_TRUE(named) << j["notes"].dump();
  EXPECT_GE(j["step_time_s"].get<double>(), 2 * 1048576.0 / 7.875e9);
}

}  // namespace
