// A sweep as a Slurm array job (studies/slurm.h) against a fake cluster: a
// CommandRunner that answers sbatch/sinfo/squeue/sacct and "runs" the tasks
// by writing their shard tables. The real cluster is tests/cluster/.
#include "studies/slurm.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "common/error.h"
#include "common/files.h"
#include "reports/flat_report.h"
#include "studies/sweep_spec.h"
#include "tests/test_files.h"

namespace podsim::studies {
namespace {

namespace fs = std::filesystem;

// A cluster of one partition "batch": sbatch takes job 42 (then 43, ...);
// each squeue call advances the submitted tasks one step (PENDING ->
// RUNNING -> ended); a task in `fail` ends CANCELLED without a table, the
// others write theirs and end COMPLETED.
class FakeCluster : public CommandRunner {
 public:
  FakeCluster(SweepSpec spec, std::string dir) : spec_(std::move(spec)), dir_(std::move(dir)) {}

  std::set<std::string> missing_programs;
  std::set<int> fail;
  std::vector<std::vector<std::string>> calls;
  int sleeps = 0;

  CommandResult run(const std::vector<std::string>& argv) override {
    calls.push_back(argv);
    const std::string& program = argv.front();
    if (program == "sinfo") return {0, "batch\ndebug\n", ""};
    if (program == "sbatch") {
      const int job = next_job_++;
      for (const std::string& a : argv)
        if (a.starts_with("--array="))
          for (int t : expand(a.substr(8))) {
            steps_[t] = 0;
            job_[t] = job;
          }
      total_tasks_ = std::max(total_tasks_, static_cast<int>(steps_.size()));
      return {0, std::to_string(job) + "\n", ""};
    }
    if (program == "squeue") {
      const std::string job = argv[4];
      std::string out;
      for (auto& [task, step] : steps_) {
        if (std::to_string(job_[task]) != job) continue;
        if (step == 2) finish(task);
        const char* state = step == 0          ? "PENDING"
                            : step == 1        ? "RUNNING"
                            : fail.count(task) ? "CANCELLED"
                                               : "COMPLETED";
        out += std::to_string(task) + "|" + state + "\n";
        step = std::min(step + 1, 3);
      }
      return {0, out, ""};
    }
    return {127, "", program + ": not found"};  // sacct: no accounting here
  }
  bool on_path(const std::string& program) const override {
    return !missing_programs.count(program) && program != "sacct";
  }
  void sleep(double) override { ++sleeps; }

  // What task `task` of `tasks` writes: its points, each ok, no metrics.
  static std::vector<PointResult> ok_results(const std::vector<SweepPoint>& points) {
    std::vector<PointResult> out;
    for (const SweepPoint& p : points) out.push_back(PointResult{p, true, "", {}});
    return out;
  }

 private:
  static std::vector<int> expand(const std::string& ranges) {
    std::vector<int> out;
    size_t start = 0;
    while (start < ranges.size()) {
      size_t comma = ranges.find(',', start);
      if (comma == std::string::npos) comma = ranges.size();
      const std::string part = ranges.substr(start, comma - start);
      const size_t dash = part.find('-');
      const int first = std::stoi(part.substr(0, dash));
      const int last = dash == std::string::npos ? first : std::stoi(part.substr(dash + 1));
      for (int t = first; t <= last; ++t) out.push_back(t);
      start = comma + 1;
    }
    return out;
  }
  void finish(int task) {
    if (fail.count(task)) return;
    // The tasks count is the record's, which the first sbatch's array gives.
    const std::vector<SweepPoint> points =
        select_shard(expand_sweep(spec_), ShardSpec{task, total_tasks_});
    write_file_atomically(dir_ + "/shard-" + std::to_string(task) + ".csv",
                          sweep_csv(spec_, ok_results(points), reports::report_columns()));
  }

  SweepSpec spec_;
  std::string dir_;
  int next_job_ = 42;
  int total_tasks_ = 0;
  std::map<int, int> steps_;
  std::map<int, int> job_;
};

class SlurmSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("podsim_slurm_test_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    sweep_ = (root_ / "layers.yaml").string();
    // Five points: model.layers 1..5 of the small workload.
    write_file_atomically(sweep_,
                          "name: layers\nbase: " + test_files::source_path("workloads/small.yaml") +
                              "\ngrid:\n  model.layers: [1, 2, 3, 4, 5]\n");
    spec_ = load_sweep(sweep_);
  }
  void TearDown() override { fs::remove_all(root_); }

  SlurmSweepRequest request(int tasks) const {
    SlurmSweepRequest r;
    r.sweep_file = sweep_;
    r.output = (root_ / "out.csv").string();
    r.tasks = tasks;
    r.podsim_binary = "/bin/true";
    return r;
  }
  std::string dir() const { return (root_ / "out.slurm").string(); }
  static bool submitted(const FakeCluster& c) {
    for (const auto& call : c.calls)
      if (call.front() == "sbatch") return true;
    return false;
  }

  fs::path root_;
  std::string sweep_;
  SweepSpec spec_;
};

TEST(SlurmText, ArrayRangesJoinRunsOfConsecutiveTasks) {
  EXPECT_EQ(array_ranges({1, 2, 3, 5, 7, 8}), "1-3,5,7-8");
  EXPECT_EQ(array_ranges({4}), "4");
}

TEST(SlurmText, SqueueAndSacctStatesPerArrayTask) {
  // squeue -r lists each task; a pending range ("3-4%2") stands for each of its tasks.
  EXPECT_EQ(parse_squeue_states("1|RUNNING\n3-4%2|PENDING\n2|CANCELLED\n"),
            (std::map<int, std::string>{
                {1, "RUNNING"}, {2, "CANCELLED"}, {3, "PENDING"}, {4, "PENDING"}}));
  // sacct names a task "<job>_<task>" and a cancel "CANCELLED by <uid>"; another job's line is
  // skipped.
  EXPECT_EQ(parse_sacct_states(
                "12_1|COMPLETED\n12_2|CANCELLED by 0\n13_3|FAILED\n12_[4-5]|PENDING\n", "12"),
            (std::map<int, std::string>{
                {1, "COMPLETED"}, {2, "CANCELLED"}, {4, "PENDING"}, {5, "PENDING"}}));
}

TEST(SlurmText, ResultsFolderSitsNextToTheOutput) {
  EXPECT_EQ(slurm_results_dir("/x/out.csv"), "/x/out.slurm");
  EXPECT_EQ(slurm_results_dir("/x/table"), "/x/table.slurm");
}

TEST(SlurmText, ScriptRunsShardIOfNAndKeepsAShardWhosePointsFailed) {
  SlurmScript s;
  s.job_name = "podsim-layers";
  s.podsim_binary = "/opt/pod sim/podsim";  // a space: quoted for bash
  s.sweep_file = "/s/it's.yaml";            // a quote too
  s.results_dir = "/r/out.slurm";
  s.tasks = 4;
  s.jobs = 2;
  s.partition = "batch";
  s.time_limit = "0:10:00";
  s.sbatch_args = {"--account=lab"};
  const std::string text = slurm_array_script(s);
  EXPECT_TRUE(text.starts_with("#!/bin/bash\n"));
  for (const char* line :
       {"#SBATCH --array=1-4\n", "#SBATCH --output=/r/out.slurm/task-%a.log\n",
        "#SBATCH --partition=batch\n", "#SBATCH --time=0:10:00\n", "#SBATCH --cpus-per-task=2\n",
        "#SBATCH --account=lab\n",
        "'/opt/pod sim/podsim' sweep '/s/it'\\''s.yaml' --shard \"$i/4\" -j 2 -o "
        "'/r/out.slurm/shard-'\"$i\".csv\n",
        // podsim sweep's exit 1 (a point's error row) with a table is not a task failure.
        "if [ \"$status\" -eq 1 ] && [ -f '/r/out.slurm/shard-'\"$i\".csv ]; then exit 0; fi\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST_F(SlurmSweepTest, AllTasksDoneMergesToTheWholeSweepsTable) {
  FakeCluster cluster(spec_, dir());
  EXPECT_EQ(run_sweep_on_slurm(request(2), cluster), 0);
  // The merge of shards 1/2 (points 0, 2, 4) and 2/2 (points 1, 3) is the
  // table of all five points in order, byte for byte.
  EXPECT_EQ(
      test_files::read_file(root_ / "out.csv"),
      sweep_csv(spec_, FakeCluster::ok_results(expand_sweep(spec_)), reports::report_columns()));
  // squeue: pending, running, ended = three polls, a sleep between each.
  EXPECT_EQ(cluster.sleeps, 2);
  EXPECT_NE(test_files::read_file(dir() + "/job.sh").find("#SBATCH --array=1-2"),
            std::string::npos);
}

TEST_F(SlurmSweepTest, ACancelledTaskLeavesErrorRowsAndResumeResubmitsOnlyIt) {
  FakeCluster cluster(spec_, dir());
  cluster.fail = {2};
  EXPECT_EQ(run_sweep_on_slurm(request(2), cluster), 1);
  std::vector<PointResult> expected = FakeCluster::ok_results(expand_sweep(spec_));
  // The second of 2 tasks held points 1 and 3 (index % 2 == 1).
  for (size_t p : {1, 3}) {
    expected[p].ok = false;
    expected[p].error =
        "Slurm job 42_2 (shard 2/2): CANCELLED; no shard table (log: " + dir() + "/task-2.log)";
  }
  EXPECT_EQ(test_files::read_file(root_ / "out.csv"),
            sweep_csv(spec_, expected, reports::report_columns()));

  // --resume submits the second task alone (job 43) and the table is whole again.
  cluster.fail.clear();
  cluster.calls.clear();
  SlurmSweepRequest again = request(0);  // --resume alone: the job's 2 tasks
  again.resume = true;
  EXPECT_EQ(run_sweep_on_slurm(again, cluster), 0);
  std::vector<std::vector<std::string>> sbatch;
  for (const auto& call : cluster.calls)
    if (call.front() == "sbatch") sbatch.push_back(call);
  ASSERT_EQ(sbatch.size(), 1u);
  EXPECT_EQ(sbatch[0][2], "--array=2");
  EXPECT_EQ(
      test_files::read_file(root_ / "out.csv"),
      sweep_csv(spec_, FakeCluster::ok_results(expand_sweep(spec_)), reports::report_columns()));
}

TEST_F(SlurmSweepTest, NoWaitPrintsTheJobAndMergeFinishesIt) {
  FakeCluster cluster(spec_, dir());
  cluster.fail = {1};
  SlurmSweepRequest r = request(2);
  r.wait = false;
  EXPECT_EQ(run_sweep_on_slurm(r, cluster), 0);
  EXPECT_FALSE(fs::exists(root_ / "out.csv"));
  EXPECT_EQ(finish_slurm_sweep(dir(), (root_ / "out.csv").string(), cluster, 0), 1);
  const std::string table = test_files::read_file(root_ / "out.csv");
  EXPECT_NE(table.find("Slurm job 42_1 (shard 1/2): CANCELLED"), std::string::npos) << table;
}

TEST_F(SlurmSweepTest, NoSbatchOnPathIsAUserErrorBeforeAnythingIsSubmitted) {
  FakeCluster cluster(spec_, dir());
  cluster.missing_programs = {"sbatch"};
  try {
    run_sweep_on_slurm(request(2), cluster);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("needs sbatch, which is not on PATH"), std::string::npos);
    EXPECT_NE(e.hint().find("scripts/slurm-local.sh start"), std::string::npos);
  }
  EXPECT_TRUE(cluster.calls.empty());
}

TEST_F(SlurmSweepTest, AnUnknownPartitionIsAUserErrorNamingTheClustersPartitions) {
  FakeCluster cluster(spec_, dir());
  SlurmSweepRequest r = request(2);
  r.partition = "gpu";
  try {
    run_sweep_on_slurm(r, cluster);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("no partition 'gpu'"), std::string::npos);
    EXPECT_NE(e.hint().find("batch, debug"), std::string::npos);
  }
  EXPECT_FALSE(submitted(cluster));
  r.partition = "debug";  // one it has
  EXPECT_EQ(run_sweep_on_slurm(r, cluster), 0);
}

TEST_F(SlurmSweepTest, AResultsFolderThatCannotBeMadeIsAUserError) {
  FakeCluster cluster(spec_, dir());
  write_file_atomically((root_ / "file").string(), "x");
  SlurmSweepRequest r = request(2);
  r.output = (root_ / "file" / "out.csv").string();  // its folder would be under a file
  EXPECT_THROW(run_sweep_on_slurm(r, cluster), UserError);
  EXPECT_FALSE(submitted(cluster));
}

TEST_F(SlurmSweepTest, MoreTasksThanPointsRunOnePointEach) {
  FakeCluster cluster(spec_, dir());
  EXPECT_EQ(run_sweep_on_slurm(request(9), cluster), 0);
  EXPECT_NE(test_files::read_file(dir() + "/job.sh").find("#SBATCH --array=1-5\n"),
            std::string::npos);
}

}  // namespace
}  // namespace podsim::studies
