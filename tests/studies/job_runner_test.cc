// Child `podsim run`s (studies/job_runner.h) with stand-in podsim scripts:
// the command line, the report read back, outcomes in job order whatever
// order the children end in, progress, and a child that crashes, hangs or
// prints no table.
#include "studies/job_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "common/error.h"
#include "common/files.h"

namespace podsim::studies {
namespace {

namespace fs = std::filesystem;

void write_executable(const fs::path& path, const std::string& text) {
  write_file_atomically(path.string(), text);
  fs::permissions(path, fs::perms::owner_all);
}

// A stand-in podsim: prints a report table whose `args` column is its
// command line; a workload named slow.yaml answers after the others.
const char* kFakePodsim = R"(#!/bin/sh
case "$2" in *slow*) sleep 0.3;; esac
echo "workload,args"
echo "$2,\"$*\""
)";

TEST(RunJobs, EachJobIsOnePodsimRunAndItsTableIsTheOutcome) {
  const driver::ScratchDir scratch("podsim-test-jobs", "the test");
  const fs::path fake = scratch.path() / "podsim";
  write_executable(fake, kFakePodsim);
  ChildRunOptions o;
  o.podsim_binary = fake.string();
  o.jobs = 2;
  std::vector<std::pair<int, int>> progress;
  o.on_progress = [&progress](int done, int total) { progress.emplace_back(done, total); };
  const std::vector<JobOutcome> out =
      run_jobs({RunJob{"slow.yaml", {"model.layers=2", "training.remat=none"}, "full"},
                RunJob{"b.yaml", {}, "fast"}, RunJob{"c.yaml", {}, "fast"}},
               o);
  ASSERT_EQ(out.size(), 3u);
  for (const JobOutcome& outcome : out) ASSERT_TRUE(outcome.ok) << outcome.error;
  // In job order, though slow.yaml ended last.
  EXPECT_EQ(out[0].metrics,
            (reports::FlatReport{{"workload", "slow.yaml"},
                                 {"args",
                                  "run slow.yaml --format csv --fidelity full --set "
                                  "model.layers=2 --set training.remat=none"}}));
  EXPECT_EQ(out[1].metrics.text("args"), "run b.yaml --format csv --fidelity fast");
  EXPECT_EQ(out[2].metrics.text("workload"), "c.yaml");
  EXPECT_EQ(progress, (std::vector<std::pair<int, int>>{{1, 3}, {2, 3}, {3, 3}}));
}

TEST(RunJobs, AChildWithoutATableFailsAndNoJobsRunNothing) {
  const driver::ScratchDir scratch("podsim-test-jobs", "the test");
  const fs::path fake = scratch.path() / "podsim";
  write_executable(fake, "#!/bin/sh\necho 'not a table'\n");
  ChildRunOptions o;
  o.podsim_binary = fake.string();
  const std::vector<JobOutcome> out = run_jobs({RunJob{"w.yaml", {}, "fast"}}, o);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].ok);
  EXPECT_EQ(out[0].error, "the child printed no report table");
  o.podsim_binary = "/nonexistent/podsim";  // not even checked: nothing to run
  EXPECT_TRUE(run_jobs({}, o).empty());
  EXPECT_THROW(run_jobs({RunJob{"w.yaml", {}, "fast"}}, o), UserError);
}

TEST(RunJobs, CrashingChildBecomesAnErrorNotACrash) {
  // A stand-in "podsim" that dies of SIGSEGV, as a crashing SystemC run would.
  const driver::ScratchDir scratch("podsim-test-jobs", "the test");
  const fs::path& dir = scratch.path();
  fs::path fake = dir / "podsim";
  write_executable(fake, "#!/bin/sh\necho 'about to crash' >&2\nkill -SEGV $$\n");
  ChildRunOptions o;
  o.podsim_binary = fake.string();
  std::vector<JobOutcome> out = run_jobs({RunJob{"w.yaml", {}, "fast"}}, o);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].ok);
  EXPECT_NE(out[0].error.find("signal 11"), std::string::npos) << out[0].error;
  EXPECT_NE(out[0].error.find("about to crash"), std::string::npos) << out[0].error;
}

TEST(RunJobs, HungChildIsKilledAfterTheTimeout) {
  const driver::ScratchDir scratch("podsim-test-jobs", "the test");
  const fs::path& dir = scratch.path();
  fs::path fake = dir / "podsim";
  write_executable(fake, "#!/bin/sh\nexec sleep 30\n");
  ChildRunOptions o;
  o.podsim_binary = fake.string();
  o.timeout_seconds = 0.3;
  auto start = std::chrono::steady_clock::now();
  std::vector<JobOutcome> out = run_jobs({RunJob{"w.yaml", {}, "fast"}}, o);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].ok);
  EXPECT_NE(out[0].error.find("timed out after 0.3 s"), std::string::npos) << out[0].error;
  EXPECT_LT(waited, 20.0);  // killed, not waited for the 30 s sleep
}

}  // namespace
}  // namespace podsim::studies
