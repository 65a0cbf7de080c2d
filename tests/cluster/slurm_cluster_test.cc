// `podsim sweep --slurm` against a running one-node Slurm cluster
// (scripts/slurm-local.sh, started and stopped around these tests by
// tests/cluster/cluster_fixture.sh): the merged table is the local run's byte
// for byte, a cancelled task's points are error rows naming the task and its
// state until --resume reruns it alone, and bad input submits nothing. Skipped
// when the fixture could not start a cluster (no root).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/cli_test_util.h"

namespace podsim {
namespace {

namespace fs = std::filesystem;
using cli_test::fresh_dir;
using cli_test::read_file;
using cli_test::source_path;
using cli_test::detail::capture_stdout;

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `command` in a shell, stdout and stderr apart.
Outcome shell(const std::string& command, const fs::path& dir) {
  Outcome r;
  const fs::path err = dir / "stderr.txt";
  r.out = capture_stdout(command + " 2>" + err.string(), r.exit_code);
  r.err = read_file(err);
  return r;
}

Outcome podsim(const std::string& args, const fs::path& dir) {
  return shell(std::string(PODSIM_BINARY) + " " + args, dir);
}

class SlurmCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* conf = std::getenv("SLURM_CONF");
    if (!conf || !fs::exists(conf))
      GTEST_SKIP() << "no local cluster (cluster_fixture.sh start needs root)";
    dir_ = fresh_dir(std::string("slurm_") +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // Rows of a CSV by line (sweep tables quote no newline).
  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream s(text);
    std::string line;
    while (std::getline(s, line)) out.push_back(line);
    return out;
  }
  fs::path dir_;
};

// The shipped what-if sweep: 10 points (5 ICI rates x 2 HBM rates) of the
// 128B model on 128 cores; 4 tasks hold points {0,4,8}, {1,5,9}, {2,6}, {3,7}.
const std::string kSweep = "sweeps/what_if_128b.yaml";

TEST_F(SlurmCluster, MergedTableIsTheLocalRunsAndACancelledTaskIsErrorRowsUntilResumed) {
  const std::string sweep = source_path(kSweep);
  const fs::path local = dir_ / "local.csv";
  const fs::path merged = dir_ / "slurm.csv";
  ASSERT_EQ(podsim("sweep " + sweep + " -j 2 -o " + local.string(), dir_).exit_code, 0);
  const Outcome slurm = podsim("sweep " + sweep + " --slurm --tasks 4 -o " + merged.string(), dir_);
  ASSERT_EQ(slurm.exit_code, 0) << slurm.err;
  EXPECT_EQ(read_file(merged), read_file(local));

  // Again without waiting; the first task is cancelled while it runs (its first
  // answer needs a compile, seconds), then merge waits for the other three.
  const fs::path cancelled = dir_ / "cancelled.csv";
  const Outcome submitted =
      podsim("sweep " + sweep + " --slurm --tasks 4 --no-wait -o " + cancelled.string(), dir_);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = lines(submitted.out).at(0);
  bool running = false;
  for (int i = 0; i < 600 && !running; ++i) {  // up to 2 minutes for the task to start
    running = shell("squeue -h -j " + job + "_1 -o %T", dir_).out.starts_with("RUNNING");
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(running);
  ASSERT_EQ(shell("scancel " + job + "_1", dir_).exit_code, 0);
  const fs::path results = dir_ / "cancelled.slurm";
  const Outcome merge =
      podsim("sweep merge " + results.string() + " -o " + cancelled.string(), dir_);
  EXPECT_EQ(merge.exit_code, 1) << merge.err;  // some rows are errors
  EXPECT_NE(merge.err.find("resubmit only them: podsim sweep " + sweep + " --slurm --resume"),
            std::string::npos)
      << merge.err;
  // Every point has its row: the header and 10 points. The first task's (points 0, 4,
  // 8) are errors naming the task, its job and Slurm's state; the others are
  // the local run's rows.
  const std::vector<std::string> rows = lines(read_file(cancelled));
  const std::vector<std::string> local_rows = lines(read_file(local));
  ASSERT_EQ(rows.size(), 11u);
  EXPECT_EQ(rows[0], local_rows[0]);
  for (size_t p = 0; p < 10; ++p) {
    const std::string& row = rows[p + 1];
    if (p % 4 == 0) {
      EXPECT_TRUE(row.starts_with(std::to_string(p) + ",")) << row;
      EXPECT_NE(
          row.find(",error,Slurm job " + job + "_1 (shard 1/4): CANCELLED; no shard table (log: " +
                   (results / "task-1.log").string() + ")"),
          std::string::npos)
          << row;
    } else {
      EXPECT_EQ(row, local_rows[p + 1]);
    }
  }
  // --resume submits the first task alone; the table is whole, the local one again.
  const Outcome resumed =
      podsim("sweep " + sweep + " --slurm --resume -o " + cancelled.string(), dir_);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("(tasks 1 of 4)"), std::string::npos) << resumed.err;
  EXPECT_EQ(read_file(cancelled), read_file(local));
}

TEST_F(SlurmCluster, BadInputSubmitsNothingAndExitsTwo) {
  const std::string sweep = source_path(kSweep);
  const std::string before = shell("squeue -h -o %i", dir_).out;

  const Outcome partition = podsim(
      "sweep " + sweep + " --slurm --partition nosuch -o " + (dir_ / "a.csv").string(), dir_);
  EXPECT_EQ(partition.exit_code, 2);
  EXPECT_NE(partition.err.find("this cluster has no partition 'nosuch'"), std::string::npos)
      << partition.err;
  EXPECT_NE(partition.err.find("its partitions: local"), std::string::npos) << partition.err;

  // No sbatch on PATH (PATH emptied for podsim alone).
  const Outcome no_sbatch =
      shell("env PATH=/nonexistent " + std::string(PODSIM_BINARY) + " sweep " + sweep +
                " --slurm -o " + (dir_ / "b.csv").string(),
            dir_);
  EXPECT_EQ(no_sbatch.exit_code, 2);
  EXPECT_NE(no_sbatch.err.find("--slurm needs sbatch, which is not on PATH"), std::string::npos)
      << no_sbatch.err;

  // A results folder under a plain file cannot be made.
  std::ofstream(dir_ / "file") << "x";
  const Outcome folder =
      podsim("sweep " + sweep + " --slurm -o " + (dir_ / "file" / "c.csv").string(), dir_);
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_NE(folder.err.find("cannot make the results folder"), std::string::npos) << folder.err;

  EXPECT_EQ(shell("squeue -h -o %i", dir_).out, before);  // no job submitted
  EXPECT_FALSE(fs::exists(dir_ / "a.slurm"));
  EXPECT_FALSE(fs::exists(dir_ / "b.slurm"));
}

}  // namespace
}  // namespace podsim
