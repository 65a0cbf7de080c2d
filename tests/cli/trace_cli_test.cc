// `podsim run --trace` with --trace-devices, --trace-window and
// --trace-limit through the executable: a window over the limit is refused
// (exit 2, the estimate, a hint naming the flags, no file written); without
// a window the trace keeps the step's first part under the limit; bad flag
// values exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/cli/cli_test_util.h"

namespace {

namespace fs = std::filesystem;

using Result = podsim::cli_test::SplitRun;
using podsim::cli_test::fresh_dir;
using podsim::cli_test::run_split;
using podsim::cli_test::source_path;

const std::string kSmall = source_path("workloads/small.yaml");

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TraceCli, WindowOverTheLimitIsRefusedWithTheEstimateAndAHint) {
  const fs::path dir = fresh_dir("trace_refuse");
  const fs::path trace = dir / "t.json";
  // The whole step of small.yaml in full fidelity holds hundreds of items,
  // over a 4 kB limit (10 items at 400 B): refused before the simulation.
  const Result r = run_split("run " + kSmall + " --fidelity full --trace " + trace.string() +
                             " --trace-window 0: --trace-limit 4kB");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;  // no report either: written whole or not at all
  EXPECT_TRUE(contains(r.err, "the trace would hold at least")) << r.err;
  EXPECT_TRUE(contains(r.err, "nothing was simulated")) << r.err;
  EXPECT_TRUE(contains(r.err, " MB")) << r.err;
  for (const char* flag : {"--trace-window", "--trace-devices", "--trace-limit"})
    EXPECT_TRUE(contains(r.err, flag)) << flag << " missing in:\n" << r.err;
  EXPECT_FALSE(fs::exists(trace));
  EXPECT_TRUE(fs::is_empty(dir));  // no temp file either
}

TEST(TraceCli, APartOfTheStepOverTheLimitIsRefusedAfterTheRunBeforeWriting) {
  const fs::path dir = fresh_dir("trace_refuse_part");
  const fs::path trace = dir / "t.json";
  // 0 to 1000 s: the whole step, but a bounded window is counted by the run.
  const Result r = run_split("run " + kSmall + " --fidelity full --trace " + trace.string() +
                             " --trace-window 0:1000000 --trace-limit 4kB");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(contains(r.err, "the trace would hold")) << r.err;
  EXPECT_TRUE(contains(r.err, "nothing was written")) << r.err;
  EXPECT_TRUE(contains(r.err, "--trace-devices")) << r.err;
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(TraceCli, WithoutAWindowTheTraceIsCutAtTheLimitAndSaysSo) {
  const fs::path dir = fresh_dir("trace_cut");
  const fs::path trace = dir / "t.json";
  const Result r = run_split("run " + kSmall + " --fidelity full --format csv --trace " +
                             trace.string() + " --trace-limit 40kB");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "--trace-window")) << r.err;
  ASSERT_TRUE(fs::exists(trace));
  EXPECT_LE(fs::file_size(trace), 40'000u);
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(trace));
  EXPECT_TRUE(j["otherData"].contains("note"));
  EXPECT_LT(j["otherData"]["window_ms"][1].get<double>(),
            j["otherData"]["step_time_s"].get<double>() * 1e3);
}

TEST(TraceCli, DevicesAndWindowSelectWhatIsWritten) {
  const fs::path dir = fresh_dir("trace_select");
  const fs::path trace = dir / "t.json";
  const Result r = run_split("run " + kSmall + " --fidelity full --format csv --trace " +
                             trace.string() + " --trace-devices 1,6 --trace-window 0:1000000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(trace));
  EXPECT_EQ(j["otherData"]["traced_devices"], nlohmann::json::array({1, 6}));
  bool flow = false;
  for (const auto& e : j["traceEvents"]) {
    if (e.contains("pid")) {
      EXPECT_TRUE(e["pid"] == 1 || e["pid"] == 6) << e;
    }
    flow = flow || e["ph"] == "s";
  }
  EXPECT_TRUE(flow);  // the two devices share collectives (all 8 take part in some)
}

TEST(TraceCli, BadValuesAndFlagsWithoutTraceExit2) {
  const fs::path trace = fresh_dir("trace_bad") / "t.json";
  const std::string to = " --trace " + trace.string();
  const std::vector<std::string> cases = {
      " --trace-window 0:50",  // no --trace
      to + " --trace-window 50",
      to + " --trace-window 9:3",
      to + " --trace-devices x,1",
      to + " --trace-devices sample:0",
      to + " --trace-limit lots",
      to + " --fidelity full --trace-devices 8",  // small.yaml: devices 0..7
      to + " --trace-devices 3",                  // fast mode simulates device 0 alone
      " --format csv --serve --trace-window 0:5 </dev/null"};
  for (const std::string& args : cases) {
    const Result r = run_split("run " + kSmall + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "hint")) << args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(trace)) << args;
  }
}

}  // namespace
