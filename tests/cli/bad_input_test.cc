// Bad-input catalogue: one test per class of bad input a user can
// hand podsim. Each must give ONE clear message naming file:line:column where
// there is one, exit code 2 (never a crash or an abort), and leave no partial
// output file behind. Positions are counted by hand in the test texts.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_test_util.h"

namespace {

namespace fs = std::filesystem;

using Result = podsim::cli_test::MergedRun;
using podsim::cli_test::run_merged;

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("podsim_bad_input_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_);
    out_ = dir_ / "out.txt";
    fs::remove(out_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  // `podsim partition FILE -o out`: exit 2, the message names `where`
  // (e.g. "bad.hlo:4:17") and contains `what`, and out.txt is not written.
  void expect_partition_error(const std::string& file, const std::string& where,
                              const std::string& what) {
    const Result r = run_merged("partition " + file + " -o " + out_.string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(where), std::string::npos) << "want " << where << " in:\n" << r.output;
    EXPECT_NE(r.output.find(what), std::string::npos) << "want '" << what << "' in:\n" << r.output;
    EXPECT_FALSE(fs::exists(out_));
  }

  // workloads/small.yaml with the line `from` (e.g. "  layers: 2") replaced
  // by `to`, written as bad.yaml; `line` receives its 1-based line number.
  std::string small_with(const std::string& from, const std::string& to, int& line) {
    std::string yaml =
        podsim::cli_test::read_file(podsim::cli_test::source_path("workloads/small.yaml"));
    const size_t at = yaml.find(from + "\n");
    EXPECT_NE(at, std::string::npos) << from;
    if (at == std::string::npos) return write("bad.yaml", yaml);
    yaml.replace(at, from.size(), to);
    line = 1 + static_cast<int>(
                   std::count(yaml.begin(), yaml.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    return write("bad.yaml", yaml);
  }

  // `podsim run FILE -o out --trace trace`: exit 2, the message names
  // `where` and contains `what` and a hint, and neither file is written.
  void expect_run_error(const std::string& file, const std::string& where,
                        const std::string& what) {
    const fs::path trace = dir_ / "trace.json";
    const Result r = run_merged("run " + file + " --format json -o " + out_.string() + " --trace " +
                                trace.string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(where), std::string::npos) << "want " << where << " in:\n" << r.output;
    EXPECT_NE(r.output.find(what), std::string::npos) << "want '" << what << "' in:\n" << r.output;
    EXPECT_NE(r.output.find("hint:"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out_));
    EXPECT_FALSE(fs::exists(trace));
  }

  fs::path dir_;
  fs::path out_;
};

TEST_F(BadInput, HloSyntaxError) {
  // Line 3: "  p = f32[4 parameter(0)": the ']' is missing; the parser stops at
  // column 14, the 'p' of "parameter" where it expected ',' or ']'.
  const std::string f = write("bad.hlo", "HloModule m\nENTRY e {\n  p = f32[4 parameter(0)\n}\n");
  expect_partition_error(f, "bad.hlo:3:", "expected");
}

TEST_F(BadInput, HloShapeMismatch) {
  // add of f32[4] and f32[5]: the declared shape cannot be inferred.
  const std::string f =
      write("bad.hlo",
            "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[5] parameter(1)\n"
            "  ROOT c = f32[4] add(a, b)\n}\n");
  expect_partition_error(f, "bad.hlo:5:", "dims differ");
}

TEST_F(BadInput, HloUnknownOpcode) {
  // "  ROOT n = f32[4] frobnicate(p)": the opcode starts at column 19.
  const std::string f = write(
      "bad.hlo",
      "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] frobnicate(p)\n}\n");
  expect_partition_error(f, "bad.hlo:4:19", "unknown opcode 'frobnicate'");
}

TEST_F(BadInput, HloDanglingOperand) {
  const std::string f =
      write("bad.hlo",
            "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(q)\n}\n");
  expect_partition_error(f, "bad.hlo:4:", "q");
}

TEST_F(BadInput, HloCyclicGraph) {
  const std::string f =
      write("bad.hlo",
            "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  a = f32[4] add(p, b)\n"
            "  b = f32[4] negate(a)\n  ROOT r = f32[4] add(a, b)\n}\n");
  expect_partition_error(f, "bad.hlo:", "cycl");
}

TEST_F(BadInput, HloShardingDeviceOutOfRange) {
  // num_partitions=2 but the tile assignment names device 7.
  const std::string f = write(
      "bad.hlo",
      "HloModule m, num_partitions=2\nENTRY e {\n"
      "  p = f32[4] parameter(0), sharding={devices=[2]0,7}\n  ROOT n = f32[4] negate(p)\n}\n");
  expect_partition_error(f, "bad.hlo:3:", "device 7 is out of range");
  // A negative id and a maximal sharding on a missing device, the same way.
  expect_partition_error(write("neg.hlo",
                               "HloModule m, num_partitions=2\nENTRY e {\n"
                               "  p = f32[4] parameter(0), sharding={devices=[2]0,-1}\n"
                               "  ROOT n = f32[4] negate(p)\n}\n"),
                         "neg.hlo:3:", "device -1 is out of range");
  expect_partition_error(write("max.hlo",
                               "HloModule m, num_partitions=2\nENTRY e {\n"
                               "  p = f32[4] parameter(0), sharding={maximal device=5}\n"
                               "  ROOT n = f32[4] negate(p)\n}\n"),
                         "max.hlo:3:", "device 5 is out of range");
}

TEST_F(BadInput, HloImpossibleSharding) {
  // A 2-way tiling on a rank-1 value written with two tile dims.
  const std::string f = write(
      "bad.hlo",
      "HloModule m, num_partitions=4\nENTRY e {\n"
      "  p = f32[4] parameter(0), sharding={devices=[2,2]<=[4]}\n  ROOT n = f32[4] negate(p)\n}\n");
  const Result r = run_merged("partition " + f + " -o " + out_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.hlo:3:"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(BadInput, HloAbsurdlyLargeShapeIsAnErrorNotAnOverflow) {
  // 2^40 x 2^40 elements overflows int64 bytes (x4): rejected with a
  // message, not wrapped into a small or negative size.
  const std::string f =
      write("bad.hlo",
            "HloModule m\nENTRY e {\n  p = f32[1099511627776,1099511627776] parameter(0)\n"
            "  ROOT n = f32[1099511627776,1099511627776] negate(p)\n}\n");
  const Result r = run_merged("partition " + f + " --propagate-only -o " + out_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.hlo:3:7"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("larger than 2^60 bytes"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(BadInput, MissingFile) {
  const Result r = run_merged("partition " + (dir_ / "nope.hlo").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nope.hlo"), std::string::npos) << r.output;
}

TEST_F(BadInput, UnknownHardwarePreset) {
  const Result r = run_merged("hardware show tpuv9");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("tpuv9"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tpuv3"), std::string::npos) << "the hint lists the presets:\n"
                                                       << r.output;
}

TEST_F(BadInput, MalformedHardwareYaml) {
  const std::string f = write("hw.yaml", "base: tpuv3\nici:\n  link_bandwidth: [1, \n");
  const Result r = run_merged("hardware show " + f);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("hw.yaml:"), std::string::npos) << r.output;
}

TEST_F(BadInput, NegativeHardwareValue) {
  // "  link_bandwidth: -5" on line 3, the value at column 19.
  const std::string f = write("hw.yaml", "base: tpuv3\nici:\n  link_bandwidth: -5\n");
  const Result r = run_merged("hardware show " + f);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("hw.yaml:3:19"), std::string::npos) << r.output;
}

TEST_F(BadInput, SweepJobsOutOfRangeIsOneReadableLine) {
  // CLI11's PositiveNumber used to print its bound as a 300-digit number.
  const Result r = run_merged("sweep " + write("s.yaml", "name: s\n") + " -j 0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("not in range 1 to 4096"), std::string::npos) << r.output;
  EXPECT_LT(r.output.size(), 200u) << r.output;
}

// `podsim run` end to end (gaps the catalogue above left).

TEST_F(BadInput, RunModelTooLargeForHbmIsAReportNotAnError) {
  // small.yaml with d = 2^16, f = 2^18, 64 heads of 1024: weights per layer
  // 4 d (h hd) + 3 d f = 4 x 2^32 + 3 x 2^34 = 2^34 x 4 = 68.7e9, two layers
  // 137e9 f32 parameters = 550 GB. Even spread over all 8 devices that is
  // 68.7 GB per device, over a v3 core's 16 GiB: a report saying so, exit 0.
  const std::string sets =
      " --set model.model_dim=65536 --set model.ffn_dim=262144 --set model.heads=64 --set "
      "model.head_dim=1024";
  const std::string small = std::string(PODSIM_SOURCE_DIR) + "/workloads/small.yaml";
  const Result json = run_merged("run " + small + sets + " --format json -o " + out_.string());
  ASSERT_EQ(json.exit_code, 0) << json.output;
  std::ifstream in(out_);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_FALSE(j["fits_in_memory"].get<bool>());
  const double params = j["parameters"].get<double>();
  EXPECT_GE(params, 2 * 68.7e9);
  EXPECT_GE(j["memory_breakdown_bytes"]["parameters"].get<double>(), params * 4 / 8 * (1 - 1e-9));
  EXPECT_GT(j["peak_memory_bytes"].get<double>(), j["hbm_capacity_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(j["hbm_capacity_bytes"].get<double>(), 17179869184.0);  // 16 GiB
  const Result table = run_merged("run " + small + sets);
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("DOES NOT FIT"), std::string::npos) << table.output;
}

TEST_F(BadInput, RunAbsurdModelDimExits2AtTheKey) {
  // [global_batch, seq_len, model_dim] = 8 x 16 x 10^15 elements > 2^50.
  int line = 0;
  const std::string f = small_with("  model_dim: 32", "  model_dim: 1000000000000000", line);
  expect_run_error(f, "bad.yaml:" + std::to_string(line) + ":14",
                   "too large");  // value after "  model_dim: "
}

TEST_F(BadInput, RunAbsurdLayerCountExits2AtTheKeyWithoutHanging) {
  int line = 0;
  const std::string f = small_with("  layers: 2", "  layers: 9223372036854775807", line);
  expect_run_error(f, "bad.yaml:" + std::to_string(line) + ":11",
                   "more than the 1024");  // after "  layers: "
}

TEST_F(BadInput, RunHugeGlobalBatchExits2AtTheKey) {
  // 2^62 x 16 x 32 overflows int64: reported, not wrapped into a small size.
  int line = 0;
  const std::string f =
      small_with("  global_batch: 8", "  global_batch: 4611686018427387904", line);
  expect_run_error(f, "bad.yaml:" + std::to_string(line) + ":17",
                   "more than 2^63");  // after "  global_batch: "
}

TEST_F(BadInput, RunHugeMeshExits2) {
  // 2^32 x 2^32 devices: int64 wraps to 0 without a check.
  int line = 0;
  const std::string f =
      small_with("  axes: {x: 2, y: 4}", "  axes: {x: 4294967296, y: 4294967296}", line);
  expect_run_error(f, "bad.yaml:" + std::to_string(line) + ":", "more than 1048576 devices");
}

TEST_F(BadInput, RunMeshThatTheHardwareCannotPlaceExits2AtTheMesh) {
  // One chip with 8 devices holds the 8 devices, but a tpuv3 chip has two:
  // the topology rejects the slice, and the error points at mesh.physical
  // (its value starts after "  physical: ", column 13).
  int line = 0;
  const std::string f = small_with("  physical: [2, 2, 2]", "  physical: [1, 1, 8]", line);
  expect_run_error(f, "bad.yaml:" + std::to_string(line) + ":13",
                   "uses 8 devices per chip; tpuv3 has 2");
}

TEST_F(BadInput, RunTokensNotDivisibleByTheExpertsAxisExits2) {
  // An MoE layer splits the tokens into one group per device of the experts'
  // mesh axis (y, 4 devices): 2 x 5 = 10 tokens do not split into 4 groups.
  const std::string f =
      write("moe.yaml",
            "name: moe\nhardware: tpuv3\nmesh:\n  axes: {x: 2, y: 4}\n  physical: [2, 2, 2]\n"
            "model:\n  kind: moe_transformer\n  layers: 2\n  model_dim: 32\n  ffn_dim: 64\n"
            "  heads: 4\n  head_dim: 8\n  vocab: 64\n  seq_len: 5\n  global_batch: 2\n"
            "  experts: 4\nsharding:\n  activations: [x, null, y]\n  experts: [y]\n");
  // The reader reports this at the key at fault (position asserted in
  // RunTokensNotDivisibleByTheExpertsAxisExits2AtTheAxis); here the numbers
  // and the hint name what to change.
  expect_run_error(f, "10 tokens", "do not split into 4 groups");
  // The same model with 2 x 8 = 16 tokens runs.
  const Result ok = run_merged("run " + f + " --set model.seq_len=8 --format json");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

}  // namespace

// Input-validation leftovers: hardware plausibility bounds and positioned
// model-structure errors.

namespace {

TEST_F(BadInput, RunAbsurdHardwareOverrideExits2NamingTheFlag) {
  // A 1e300 Hz clock used to pass (only > 0 was checked) and give a
  // nonsense MFU; now it is out of the plausible [1e6, 1e11] Hz.
  const std::string small = std::string(PODSIM_SOURCE_DIR) + "/workloads/small.yaml";
  const fs::path trace = dir_ / "trace.json";
  const Result r =
      run_merged("run " + small + " --set hardware.core.clock_hz=1e300 --format json -o " +
                 out_.string() + " --trace " + trace.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--set hardware.core.clock_hz=1e300"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[1e+06, 1e+11] Hz"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("hint:"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out_));
  EXPECT_FALSE(fs::exists(trace));
  // NaN and infinity too.
  EXPECT_EQ(run_merged("run " + small + " --set hardware.ici.link_bandwidth=.nan").exit_code, 2);
  EXPECT_EQ(run_merged("run " + small + " --set hardware.hbm.capacity_bytes=.inf").exit_code, 2);
}

TEST_F(BadInput, HardwareFileValueBeyondItsRangeHasLineColumn) {
  // "  capacity_bytes: 1e30" on line 3: the value at column 19.
  const std::string f = write("hw.yaml", "base: tpuv3\nhbm:\n  capacity_bytes: 1e30\n");
  const Result r = run_merged("hardware show " + f);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("hw.yaml:3:19"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[2^20, 2^50] bytes"), std::string::npos) << r.output;
}

TEST_F(BadInput, RunTokensNotDivisibleByTheExpertsAxisExits2AtTheAxis) {
  // As RunTokensNotDivisibleByTheExpertsAxisExits2, now with the position:
  // "  experts: [y]" is line 19, the axis at column 13.
  const std::string f =
      write("moe.yaml",
            "name: moe\nhardware: tpuv3\nmesh:\n  axes: {x: 2, y: 4}\n  physical: [2, 2, 2]\n"
            "model:\n  kind: moe_transformer\n  layers: 2\n  model_dim: 32\n  ffn_dim: 64\n"
            "  heads: 4\n  head_dim: 8\n  vocab: 64\n  seq_len: 5\n  global_batch: 2\n"
            "  experts: 4\nsharding:\n  activations: [x, null, y]\n  experts: [y]\n");
  expect_run_error(f, "moe.yaml:19:13", "do not split into 4 groups");
  // A group size that does not divide the 10 tokens: at the flag.
  const Result r = run_merged("run " + f + " --set model.group_size=3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--set model.group_size=3"), std::string::npos) << r.output;
}

// Multi-slice input: a DCN axis also inside the slice (at its name), slices on a preset without
// a DCN bandwidth (TPU v3, or one set to 0), an HLO device count that does not split into whole
// slices. Each exits 2 with a hint.
TEST_F(BadInput, DcnAxisInsideTheSliceTooExits2AtTheAxis) {
  int line = 0;
  const std::string f =
      small_with("  axes: {x: 2, y: 4}", "  axes: {x: 2, y: 4}\n  dcn: {x: 2}", line);
  expect_run_error(f, "bad.yaml:" + std::to_string(line + 1) + ":9",
                   "mesh axis 'x' is in both mesh.axes and mesh.dcn");
}

TEST_F(BadInput, SlicesWithoutDcnBandwidthExit2) {
  int line = 0;
  const std::string f =
      small_with("  axes: {x: 2, y: 4}", "  axes: {x: 2, y: 4}\n  dcn: {data: 2}", line);
  expect_run_error(f, "dcn.bandwidth_per_chip", "slices need the data-centre network");
  const Result r = run_merged("run " + podsim::cli_test::source_path("workloads/small.yaml") +
                              " --set mesh.dcn.data=2 --set hardware.dcn.bandwidth_per_chip=0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("dcn.bandwidth_per_chip = 0"), std::string::npos) << r.output;
}

// The Slurm options mean nothing without --slurm: refused before any point runs.
TEST_F(BadInput, SlurmOptionsWithoutSlurmExit2) {
  for (const std::string option : {"--tasks 4", "--partition debug", "--no-wait", "--resume"}) {
    const Result r = run_merged("sweep " +
                                podsim::cli_test::source_path("sweeps/what_if_128b.yaml") + " " +
                                option + " -o /tmp/podsim_never_written.csv");
    EXPECT_EQ(r.exit_code, 2) << option << ": " << r.output;
    EXPECT_NE(r.output.find("are options of --slurm"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("add --slurm"), std::string::npos) << r.output;
  }
}

TEST_F(BadInput, HloDevicesNotSplittingIntoSlicesExit2) {
  const Result r =
      run_merged("run " + podsim::cli_test::source_path("tests/fixtures/hlo/all_reduce_iota.hlo") +
                 " --slices 3 --hardware tpuv4");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("do not split into 3 whole slices"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("hint:"), std::string::npos) << r.output;
}

}  // namespace
