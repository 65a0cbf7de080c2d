// Bad-input catalogue (issue 9): one test per class of bad input a user can
// hand podsim. Each must give ONE clear message naming file:line:column where
// there is one, exit code 2 (never a crash or an abort), and leave no partial
// output file behind. Positions are counted by hand in the test texts.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

Result run(const std::string& args) {
  const std::string cmd = std::string(PODSIM_BINARY) + " " + args + " 2>&1";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;  // a signal (abort, segfault) is -1
  return r;
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("podsim_bad_input_" + std::string(
        ::testing::UnitTest::GetInstance()->current_test_info()->name()));
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
  void expect_partition_error(const std::string& file, const std::string& where, const std::string& what) {
    const Result r = run("partition " + file + " -o " + out_.string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(where), std::string::npos) << "want " << where << " in:\n" << r.output;
    EXPECT_NE(r.output.find(what), std::string::npos) << "want '" << what << "' in:\n" << r.output;
    EXPECT_FALSE(fs::exists(out_));
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
  const std::string f = write("bad.hlo",
                              "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[5] parameter(1)\n"
                              "  ROOT c = f32[4] add(a, b)\n}\n");
  expect_partition_error(f, "bad.hlo:5:", "dims differ");
}

TEST_F(BadInput, HloUnknownOpcode) {
  // "  ROOT n = f32[4] frobnicate(p)": the opcode starts at column 19.
  const std::string f = write("bad.hlo", "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] frobnicate(p)\n}\n");
  expect_partition_error(f, "bad.hlo:4:19", "unknown opcode 'frobnicate'");
}

TEST_F(BadInput, HloDanglingOperand) {
  const std::string f = write("bad.hlo", "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(q)\n}\n");
  expect_partition_error(f, "bad.hlo:4:", "q");
}

TEST_F(BadInput, HloCyclicGraph) {
  const std::string f = write("bad.hlo",
                              "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  a = f32[4] add(p, b)\n"
                              "  b = f32[4] negate(a)\n  ROOT r = f32[4] add(a, b)\n}\n");
  expect_partition_error(f, "bad.hlo:", "cycl");
}

TEST_F(BadInput, HloShardingDeviceOutOfRange) {
  // num_partitions=2 but the tile assignment names device 7.
  const std::string f = write("bad.hlo",
                              "HloModule m, num_partitions=2\nENTRY e {\n"
                              "  p = f32[4] parameter(0), sharding={devices=[2]0,7}\n  ROOT n = f32[4] negate(p)\n}\n");
  const Result r = run("partition " + f + " -o " + out_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.hlo:3:"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(BadInput, HloImpossibleSharding) {
  // A 2-way tiling on a rank-1 value written with two tile dims.
  const std::string f = write("bad.hlo",
                              "HloModule m, num_partitions=4\nENTRY e {\n"
                              "  p = f32[4] parameter(0), sharding={devices=[2,2]<=[4]}\n  ROOT n = f32[4] negate(p)\n}\n");
  const Result r = run("partition " + f + " -o " + out_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.hlo:3:"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(BadInput, HloAbsurdlyLargeShapeIsAnErrorNotAnOverflow) {
  // 2^40 x 2^40 elements overflows int64 bytes (x4): rejected with a
  // message, not wrapped into a small or negative size.
  const std::string f = write("bad.hlo",
                              "HloModule m\nENTRY e {\n  p = f32[1099511627776,1099511627776] parameter(0)\n"
                              "  ROOT n = f32[1099511627776,1099511627776] negate(p)\n}\n");
  const Result r = run("partition " + f + " --propagate-only -o " + out_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.hlo:3:7"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("larger than 2^60 bytes"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(BadInput, MissingFile) {
  const Result r = run("partition " + (dir_ / "nope.hlo").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nope.hlo"), std::string::npos) << r.output;
}

TEST_F(BadInput, UnknownHardwarePreset) {
  const Result r = run("hardware show tpuv9");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("tpuv9"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tpuv3"), std::string::npos) << "the hint lists the presets:\n" << r.output;
}

TEST_F(BadInput, MalformedHardwareYaml) {
  const std::string f = write("hw.yaml", "base: tpuv3\nici:\n  link_bandwidth: [1, \n");
  const Result r = run("hardware show " + f);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("hw.yaml:"), std::string::npos) << r.output;
}

TEST_F(BadInput, NegativeHardwareValue) {
  // "  link_bandwidth: -5" on line 3, the value at column 19.
  const std::string f = write("hw.yaml", "base: tpuv3\nici:\n  link_bandwidth: -5\n");
  const Result r = run("hardware show " + f);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("hw.yaml:3:19"), std::string::npos) << r.output;
}

}  // namespace
