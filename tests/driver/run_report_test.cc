// write_run_outputs (driver/run_report.h): the report written whole, and a
// trace window over the limit refused before anything is written.
#include "driver/run_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/error.h"
#include "tests/test_files.h"

namespace podsim::driver {
namespace {

namespace fs = std::filesystem;

class RunReport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("podsim_run_report_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    request_.workload_path = test_files::source_path("workloads/small.yaml");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  RunRequest request_;
};

TEST_F(RunReport, WritesTheReportInTheFormatAsked) {
  const RunResult result = run_workload(request_);
  RunOutputs outputs;
  outputs.format = reports::Format::kCsv;
  outputs.output = (dir_ / "report.csv").string();
  write_run_outputs(result, sim::Fidelity::kFast, outputs);
  EXPECT_EQ(test_files::read_file(outputs.output),
            reports::format_report(result.report, reports::Format::kCsv));
}

TEST_F(RunReport, ATraceWindowOverTheLimitWritesNothing) {
  // The whole step as the window with room for one event: small.yaml's
  // step has many kernels, so the window holds more than the limit.
  RunOutputs outputs;
  outputs.output = (dir_ / "report.txt").string();
  outputs.trace = parse_trace_flags({(dir_ / "trace.json").string(), "", "0:", "400"});
  ASSERT_EQ(outputs.trace->selection.max_events, 1);
  EXPECT_THROW(run_and_write(request_, outputs), UserError);
  EXPECT_FALSE(fs::exists(outputs.output));
  EXPECT_FALSE(fs::exists(outputs.trace->path));
}

TEST_F(RunReport, ATraceWithinTheLimitIsWrittenBesideTheReport) {
  RunOutputs outputs;
  outputs.output = (dir_ / "report.txt").string();
  outputs.trace = parse_trace_flags({(dir_ / "trace.json").string(), "", "", ""});
  run_and_write(request_, outputs);
  EXPECT_TRUE(fs::exists(outputs.output));
  EXPECT_NE(test_files::read_file(outputs.trace->path).find("traceEvents"), std::string::npos);
}

}  // namespace
}  // namespace podsim::driver
