// The --serve loop (driver/serve.h) on string streams: one CSV table of
// answers, an error line for a bad request, in request order.
#include "driver/serve.h"

#include <gtest/gtest.h>

#include <sstream>

#include "common/error.h"
#include "reports/formats.h"
#include "tests/test_files.h"

namespace podsim::driver {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Serve, ParsesHardwareWords) {
  EXPECT_EQ(
      parse_serve_line("  hardware.core.op_overhead_s=2e-6 hardware.ici.link_efficiency=0.8 "),
      (std::vector<std::pair<std::string, std::string>>{{"core.op_overhead_s", "2e-6"},
                                                        {"ici.link_efficiency", "0.8"}}));
  EXPECT_TRUE(parse_serve_line("").empty());
  EXPECT_THROW(parse_serve_line("model.layers=2"), UserError);
  EXPECT_THROW(parse_serve_line("hardware.core.op_overhead_s"), UserError);
}

TEST(Serve, AnswersEachLineAsOneCsvTable) {
  RunRequest request;
  request.workload_path = test_files::source_path("workloads/small.yaml");
  std::istringstream in("\nhardware.core.op_overhead_s=2e-6\nmodel.layers=2\n");
  std::ostringstream out;
  serve_workload(request, false, in, out);
  const std::vector<std::string> answers = lines_of(out.str());

  // The blank line is the workload's own run; the variant is the run with that --set.
  const std::vector<std::string> own =
      lines_of(reports::format_report(run_workload(request).report, reports::Format::kCsv));
  RunRequest slower = request;
  slower.overrides = {"hardware.core.op_overhead_s=2e-6"};
  const std::vector<std::string> variant =
      lines_of(reports::format_report(run_workload(slower).report, reports::Format::kCsv));
  ASSERT_EQ(own.size(), 2u);
  ASSERT_EQ(answers.size(), 4u) << out.str();
  EXPECT_EQ(answers[0], own[0]);  // the header once
  EXPECT_EQ(answers[1], own[1]);
  EXPECT_EQ(answers[2], variant[1]);
  EXPECT_NE(answers[1], answers[2]);
  EXPECT_TRUE(answers[3].starts_with("error: ")) << answers[3];
  EXPECT_NE(answers[3].find("hardware.<key>=<value>"), std::string::npos) << answers[3];
}

}  // namespace
}  // namespace podsim::driver
