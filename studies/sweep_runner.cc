// Child-process runner for sweeps, regressions and calibration
// (studies/sweep_runner.h). POSIX fork/exec; children's stdout and stderr go
// to files in a private temporary folder, polled with waitpid(WNOHANG) so the
// parent can redraw its progress line while children run.
#include "studies/sweep_runner.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "reports/formats.h"
#include "common/progress.h"
#include "driver/workload_server.h"
#include "common/files.h"
#include "reports/flat_fields.h"

namespace podsim::studies {

using driver::ChildStreams;
using driver::ScratchDir;
using driver::require_executable;
using driver::WorkloadServer;
using driver::child_failure_text;
using driver::spawn_child;
using reports::parse_report_csv;

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
  std::vector<std::string> args = {binary, "run", job.workload_path, "--format", "csv", "--fidelity", job.fidelity};
  for (const std::string& o : job.overrides) {
    args.push_back("--set");
    args.push_back(o);
  }
  return spawn_child(std::move(args), ChildStreams{.stdout_path = files.out.string(), .stderr_path = files.err.string()});
}

JobOutcome outcome_of(int status, const Running& r) {
  JobOutcome outcome;
  outcome.error = child_failure_text(status, read_text_file(r.err));
  if (!outcome.error.empty()) return outcome;
  outcome.metrics = parse_report_csv(read_text_file(r.out));
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
          outcomes[running[i].job].error = fmt::format("timed out after {:g} s (killed)", options.timeout_seconds);
        running.erase(running.begin() + static_cast<long>(i));
        ++done;
        reaped = true;
        if (options.on_progress) options.on_progress(done, static_cast<int>(jobs.size()));
      } else {
        double age = std::chrono::duration<double>(std::chrono::steady_clock::now() - running[i].start).count();
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

std::vector<CompileGroup> group_by_compile(const SweepSpec& spec, const std::vector<SweepPoint>& points) {
  constexpr std::string_view kHardware = "hardware.";
  std::vector<CompileGroup> groups;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::vector<std::string> overrides = points[i].overrides(spec);
    // A whole-preset `hardware=...` override is applied in order with the
    // hardware.* keys by `run --set`: such a point keeps them all in --set.
    const bool preset = std::any_of(overrides.begin(), overrides.end(),
                                    [](const std::string& o) { return o.starts_with("hardware="); });
    std::vector<std::string> compile;
    std::vector<std::pair<std::string, std::string>> variant;
    for (const std::string& o : overrides) {
      const size_t eq = o.find('=');
      // A serve line is whitespace-separated words: a value with a space stays in --set.
      const bool serve_word = !preset && o.starts_with(kHardware) && eq != std::string::npos &&
                              eq > kHardware.size() && o.find_first_of(" \t\r\n") == std::string::npos;
      if (serve_word) variant.emplace_back(o.substr(kHardware.size(), eq - kHardware.size()), o.substr(eq + 1));
      else compile.push_back(o);
    }
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const CompileGroup& g) { return g.compile_overrides == compile; });
    if (it == groups.end()) {
      groups.push_back(CompileGroup{compile, {}, {}});
      it = groups.end() - 1;
    }
    it->points.push_back(i);
    it->variants.push_back(std::move(variant));
  }
  return groups;
}

namespace {

// One compile group being answered by its `run --serve` child.
struct Serving {
  std::unique_ptr<WorkloadServer> server;
  size_t group = 0;
  size_t answered = 0;
  std::chrono::steady_clock::time_point since;  // start, or the last answer
};

// Fewer groups than -j leave cores idle: the largest groups are cut into
// contiguous parts (neighbours in the grid tend to share a variant program
// in the server's cache) of at least two points, until there are `jobs`.
std::vector<CompileGroup> split_for_jobs(std::vector<CompileGroup> groups, size_t jobs) {
  std::vector<size_t> parts(groups.size(), 1);
  for (size_t total = groups.size(); total < jobs; ++total) {
    size_t best = groups.size();
    for (size_t g = 0; g < groups.size(); ++g)
      if (groups[g].points.size() >= 2 * (parts[g] + 1) &&
          (best == groups.size() || groups[g].points.size() * parts[best] > groups[best].points.size() * parts[g]))
        best = g;
    if (best == groups.size()) break;
    ++parts[best];
  }
  std::vector<CompileGroup> split;
  for (size_t g = 0; g < groups.size(); ++g) {
    const size_t n = groups[g].points.size();
    for (size_t k = 0; k < parts[g]; ++k) {
      CompileGroup part{groups[g].compile_overrides, {}, {}};
      for (size_t i = n * k / parts[g]; i < n * (k + 1) / parts[g]; ++i) {
        part.points.push_back(groups[g].points[i]);
        part.variants.push_back(groups[g].variants[i]);
      }
      split.push_back(std::move(part));
    }
  }
  return split;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::vector<PointResult> run_sweep_points(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                                          const ChildRunOptions& options, SweepRunStats* stats) {
  const std::string fidelity = "fast";
  std::vector<PointResult> results(points.size());
  for (size_t i = 0; i < points.size(); ++i) results[i].point = points[i];
  SweepRunStats counted;
  const int total = static_cast<int>(points.size());
  int done = 0;
  auto finished_one = [&] {
    ++done;
    if (options.on_progress) options.on_progress(done, total);
  };
  const size_t parallel = static_cast<size_t>(std::max(1, options.jobs));
  const std::vector<CompileGroup> groups = split_for_jobs(group_by_compile(spec, points), parallel);
  std::vector<size_t> alone;  // points run as one-point children
  std::vector<size_t> to_serve;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].points.size() >= 2) to_serve.push_back(g);
    else alone.insert(alone.end(), groups[g].points.begin(), groups[g].points.end());
  }
  if (!to_serve.empty()) require_executable(options.podsim_binary);
  std::vector<Serving> serving;
  size_t next = 0;
  while (next < to_serve.size() || !serving.empty()) {
    while (next < to_serve.size() && serving.size() < parallel) {
      const CompileGroup& g = groups[to_serve[next]];
      std::vector<std::string> args = {"--fidelity", fidelity};
      for (const std::string& o : g.compile_overrides) {
        args.push_back("--set");
        args.push_back(o);
      }
      Serving s;
      s.server = std::make_unique<WorkloadServer>(options.podsim_binary, spec.base_workload, args);
      s.group = to_serve[next];
      s.since = std::chrono::steady_clock::now();
      for (const auto& variant : g.variants) s.server->send(variant);
      ++counted.serve_children;
      serving.push_back(std::move(s));
      ++next;
    }
    std::vector<pollfd> fds;
    bool buffered = false;
    for (const Serving& s : serving) {
      buffered = buffered || s.server->buffered_answer();
      fds.push_back(pollfd{s.server->socket(), POLLIN, 0});
    }
    if (!buffered) poll(fds.data(), fds.size(), 50);
    for (size_t i = 0; i < serving.size(); ++i) {
      Serving& s = serving[i];
      const CompileGroup& g = groups[s.group];
      const bool ready = s.server->buffered_answer() || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
      if (ready) {
        JobOutcome answer = s.server->receive();
        const size_t p = g.points[s.answered++];
        if (answer.ok) {
          results[p].ok = true;
          results[p].metrics = std::move(answer.metrics);
          finished_one();
        } else {
          // A rejected variant or a dead server: the point runs alone, so its
          // error row is a plain `podsim run`'s; after a death, so do the rest.
          alone.push_back(p);
          if (s.server->ended())
            while (s.answered < g.points.size()) alone.push_back(g.points[s.answered++]);
        }
        s.since = std::chrono::steady_clock::now();
      } else if (options.timeout_seconds > 0 && seconds_since(s.since) > options.timeout_seconds) {
        s.server->kill_child("timed out");
        while (s.answered < g.points.size()) alone.push_back(g.points[s.answered++]);
      }
    }
    std::erase_if(serving, [&](const Serving& s) { return s.answered == groups[s.group].points.size(); });
  }
  std::sort(alone.begin(), alone.end());
  std::vector<RunJob> jobs;
  for (size_t p : alone) jobs.push_back(RunJob{spec.base_workload, points[p].overrides(spec), fidelity});
  counted.point_children = static_cast<int>(jobs.size());
  ChildRunOptions alone_options = options;
  const int done_before = done;
  alone_options.on_progress = [&](int alone_done, int) {
    done = done_before + alone_done;
    if (options.on_progress) options.on_progress(done, total);
  };
  std::vector<JobOutcome> outcomes = run_jobs(jobs, alone_options);
  for (size_t k = 0; k < alone.size(); ++k) {
    PointResult& r = results[alone[k]];
    r.ok = outcomes[k].ok;
    r.error = outcomes[k].error;
    r.metrics = std::move(outcomes[k].metrics);
  }
  if (stats) *stats = counted;
  return results;
}

}  // namespace podsim::studies
