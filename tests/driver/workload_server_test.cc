// The client half of `podsim run --serve` (driver/workload_server.h) against
// a stand-in server (a shell script speaking the protocol): the command
// line, answers in request order, the header sent once and again when the
// columns change, a rejected variant, a server that dies. The real server is
// tested in tests/cli/calibrate_fit_cli_test.cc.
#include "driver/workload_server.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/files.h"

namespace podsim::driver {
namespace {

namespace fs = std::filesystem;

// Answers each request line: "error: ..." for a line naming "bad", an exit
// with a message for "die", else a report row (its header first when the
// columns change) whose `request` column echoes the line; a line naming
// "wide" has one more column. It writes its arguments to "args".
const char* kFakeServer = R"(#!/bin/sh
echo "$*" > "$(dirname "$0")/args"
hdr=""
while read -r line; do
  case "$line" in
    *bad*) echo "error: unknown hardware key 'bad'"; continue;;
    *die*) echo "server dying" >&2; exit 3;;
    *wide*) h="workload,hardware,fidelity,request,extra"; row="$2,tpuv3,fast,$line,1";;
    *) h="workload,hardware,fidelity,request"; row="$2,tpuv3,fast,$line";;
  esac
  if [ "$h" != "$hdr" ]; then echo "$h"; hdr="$h"; fi
  echo "$row"
done
)";

class WorkloadServerProtocol : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file_atomically(binary(), kFakeServer);
    fs::permissions(binary(), fs::perms::owner_all);
  }
  std::string binary() const { return (scratch_.path() / "podsim").string(); }
  std::string args() const { return read_text_file(scratch_.path() / "args"); }

 private:
  ScratchDir scratch_{"podsim-test-server", "the test"};
};

TEST_F(WorkloadServerProtocol, AnswersInRequestOrderAsReports) {
  WorkloadServer server(binary(), "w.yaml", {"--set", "model.layers=2"});
  EXPECT_EQ(server.workload_path(), "w.yaml");
  server.send({});
  server.send({{"core.op_overhead_s", "2e-6"}, {"ici.link_efficiency", "0.5"}});
  const JobOutcome first = server.receive();
  const JobOutcome second = server.receive();
  ASSERT_TRUE(first.ok) << first.error;
  ASSERT_TRUE(second.ok) << second.error;
  EXPECT_EQ(
      first.metrics,
      (reports::FlatReport{
          {"workload", "w.yaml"}, {"hardware", "tpuv3"}, {"fidelity", "fast"}, {"request", ""}}));
  EXPECT_EQ(second.metrics.text("request"),
            "hardware.core.op_overhead_s=2e-6 hardware.ici.link_efficiency=0.5");
  EXPECT_EQ(args(), "run w.yaml --format csv --serve --set model.layers=2\n");
  EXPECT_FALSE(server.ended());
}

TEST_F(WorkloadServerProtocol, ANewHeaderChangesTheColumnsAndARejectedVariantIsAnErrorAnswer) {
  WorkloadServer server(binary(), "w.yaml");
  server.send({{"wide", "1"}});
  server.send({{"bad", "1"}});
  server.send({{"core.x", "1"}});
  const JobOutcome wide = server.receive();
  ASSERT_TRUE(wide.ok) << wide.error;
  EXPECT_EQ(wide.metrics.text("extra"), "1");
  const JobOutcome bad = server.receive();
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.error, "unknown hardware key 'bad'");
  const JobOutcome narrow = server.receive();
  ASSERT_TRUE(narrow.ok) << narrow.error;
  EXPECT_FALSE(narrow.metrics.text("extra").has_value());
  EXPECT_EQ(narrow.metrics.text("request"), "hardware.core.x=1");
}

TEST_F(WorkloadServerProtocol, AServerThatDiesAnswersWhyEveryTime) {
  WorkloadServer server(binary(), "w.yaml");
  server.send({{"die", "1"}});
  const JobOutcome died = server.receive();
  EXPECT_FALSE(died.ok);
  EXPECT_EQ(died.error, "exit code 3: server dying");
  EXPECT_TRUE(server.ended());
  server.send({});  // no SIGPIPE: the send fails quietly
  EXPECT_EQ(server.receive().error, died.error);
}

TEST_F(WorkloadServerProtocol, AKilledServerSaysWhy) {
  WorkloadServer server(binary(), "w.yaml");
  server.kill_child("timed out");
  EXPECT_TRUE(server.ended());
  EXPECT_EQ(server.receive().error, "timed out");
}

}  // namespace
}  // namespace podsim::driver
