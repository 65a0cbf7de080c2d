// Child `podsim run`s (studies/job_runner.h): children's stdout and stderr
// go to files in a private temporary folder, polled with waitpid(WNOHANG) so
// the parent can redraw its progress line while children run.
#include "studies/job_runner.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "common/files.h"

namespace podsim::studies {

using driver::child_failure_text;
using driver::ChildStreams;
using driver::require_executable;
using driver::ScratchDir;
using driver::spawn_child;

namespace {

struct Running {
  pid_t pid = 0;
  size_t job = 0;
  std::filesystem::path out;
  std::filesystem::path err;
  std::chrono::steady_clock::time_point start;
  bool killed = false;  // by the timeout
};

pid_t spawn(const std::string& binary, const RunJob& job, const Running& files) {
  std::vector<std::string> args = {binary, "run",        job.workload_path, "--format",
                                   "csv",  "--fidelity", job.fidelity};
  for (const std::string& o : job.overrides) {
    args.push_back("--set");
    args.push_back(o);
  }
  return spawn_child(std::move(args), ChildStreams{.stdout_path = files.out.string(),
                                                   .stderr_path = files.err.string()});
}

JobOutcome outcome_of(int status, const Running& r) {
  JobOutcome outcome;
  outcome.error = child_failure_text(status, read_text_file(r.err));
  if (!outcome.error.empty()) return outcome;
  outcome.metrics = reports::FlatReport::from_csv(read_text_file(r.out));
  if (outcome.metrics.empty()) {
    outcome.error = "the child printed no report table";
    return outcome;
  }
  outcome.ok = true;
  return outcome;
}

}  // namespace

std::vector<JobOutcome> run_jobs(const std::vector<RunJob>& jobs, const ChildRunOptions& options) {
  std::vector<JobOutcome> outcomes(jobs.size());
  if (jobs.empty()) return outcomes;
  require_executable(options.podsim_binary);
  const ScratchDir scratch("podsim-sweep", "the sweep's children");
  const std::filesystem::path& dir = scratch.path();
  int parallel = std::max(1, options.jobs);
  std::vector<Running> running;
  size_t next = 0;
  int done = 0;
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && static_cast<int>(running.size()) < parallel) {
      Running r;
      r.job = next;
      r.out = dir / fmt::format("{}.out", next);
      r.err = dir / fmt::format("{}.err", next);
      r.pid = spawn(options.podsim_binary, jobs[next], r);
      r.start = std::chrono::steady_clock::now();
      running.push_back(r);
      ++next;
    }
    bool reaped = false;
    for (size_t i = 0; i < running.size();) {
      int status = 0;
      pid_t got = waitpid(running[i].pid, &status, WNOHANG);
      if (got == running[i].pid) {
        outcomes[running[i].job] = outcome_of(status, running[i]);
        if (running[i].killed)
          outcomes[running[i].job].error =
              fmt::format("timed out after {:g} s (killed)", options.timeout_seconds);
        running.erase(running.begin() + static_cast<long>(i));
        ++done;
        reaped = true;
        if (options.on_progress) options.on_progress(done, static_cast<int>(jobs.size()));
      } else {
        double age =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - running[i].start)
                .count();
        if (options.timeout_seconds > 0 && age > options.timeout_seconds && !running[i].killed) {
          kill(running[i].pid, SIGKILL);
          running[i].killed = true;
        }
        ++i;
      }
    }
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return outcomes;
}

}  // namespace podsim::studies
