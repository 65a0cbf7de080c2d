// Running a sweep's points and writing its tables (studies/sweep.h).
#include "studies/sweep.h"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <regex>

#include "common/csv.h"
#include "common/error.h"
#include "common/files.h"
#include "common/progress.h"
#include "driver/run_workload.h"
#include "driver/workload_server.h"
#include "reports/flat_report.h"
#include "reports/sweep_plot.h"
#include "studies/gnuplot.h"
#include "workloads/workload.h"

namespace podsim::studies {

using driver::require_executable;
using driver::WorkloadServer;

std::vector<CompileGroup> group_by_compile(const SweepSpec& spec,
                                           const std::vector<SweepPoint>& points) {
  constexpr std::string_view kHardware = "hardware.";
  std::vector<CompileGroup> groups;
  std::map<std::vector<std::string>, size_t> group_of;  // compile overrides -> index in groups
  for (size_t i = 0; i < points.size(); ++i) {
    const std::vector<std::string> overrides = points[i].overrides(spec);
    // A whole-preset `hardware=...` override is applied in order with the
    // hardware.* keys by `run --set`: such a point keeps them all in --set.
    const bool preset = std::any_of(overrides.begin(), overrides.end(), [](const std::string& o) {
      return o.starts_with("hardware=");
    });
    std::vector<std::string> compile;
    std::vector<std::pair<std::string, std::string>> variant;
    for (const std::string& o : overrides) {
      const size_t eq = o.find('=');
      // A serve line is whitespace-separated words: a value with a space stays in --set.
      const bool serve_word = !preset && o.starts_with(kHardware) && eq != std::string::npos &&
                              eq > kHardware.size() &&
                              o.find_first_of(" \t\r\n") == std::string::npos;
      if (serve_word)
        variant.emplace_back(o.substr(kHardware.size(), eq - kHardware.size()), o.substr(eq + 1));
      else
        compile.push_back(o);
    }
    // Groups keep the order of their first point; the index keeps this linear in the points.
    const auto [found, added] = group_of.try_emplace(compile, groups.size());
    if (added) groups.push_back(CompileGroup{compile, {}, {}});
    CompileGroup& group = groups[found->second];
    group.points.push_back(i);
    group.variants.push_back(std::move(variant));
  }
  return groups;
}

std::vector<CompileGroup> split_for_jobs(std::vector<CompileGroup> groups, size_t jobs) {
  std::vector<size_t> parts(groups.size(), 1);
  for (size_t total = groups.size(); total < jobs; ++total) {
    size_t best = groups.size();
    for (size_t g = 0; g < groups.size(); ++g)
      if (groups[g].points.size() >= 2 * (parts[g] + 1) &&
          (best == groups.size() ||
           groups[g].points.size() * parts[best] > groups[best].points.size() * parts[g]))
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

namespace {

// One compile group being answered by its `run --serve` child.
struct Serving {
  std::unique_ptr<WorkloadServer> server;
  size_t group = 0;
  size_t answered = 0;
  std::chrono::steady_clock::time_point since;  // start, or the last answer
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::vector<PointResult> run_sweep_points(const SweepSpec& spec,
                                          const std::vector<SweepPoint>& points,
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
    if (groups[g].points.size() >= 2)
      to_serve.push_back(g);
    else
      alone.insert(alone.end(), groups[g].points.begin(), groups[g].points.end());
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
      const bool ready =
          s.server->buffered_answer() || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
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
    std::erase_if(serving,
                  [&](const Serving& s) { return s.answered == groups[s.group].points.size(); });
  }
  std::sort(alone.begin(), alone.end());
  std::vector<RunJob> jobs;
  for (size_t p : alone)
    jobs.push_back(RunJob{spec.base_workload, points[p].overrides(spec), fidelity});
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

namespace {

// --plot's checks, before any point runs: a table to read, gnuplot present,
// metrics that are report fields.
void check_plot_request(const SweepRequest& r, const std::vector<std::string>& metrics) {
  const SourceLocation where{"--plot " + r.plot, 0, 0};
  if (!r.plot.ends_with(".svg") && !r.plot.ends_with(".png"))
    throw UserError(where, "--plot writes an .svg or .png file", "e.g. --plot results.svg");
  if (r.output.empty() || r.output == "-")
    throw UserError(where, "--plot reads the results table, which goes to stdout here",
                    "add -o results.csv");
  if (!gnuplot_installed())
    throw UserError(
        where, "--plot needs gnuplot, which is not on PATH; nothing was run",
        "install it (apt-get install gnuplot-nox), or drop --plot and plot the CSV yourself");
  reports::check_plot_metrics(metrics, reports::report_columns());
}

// Draws the table with gnuplot; false (script kept for a look) when gnuplot fails.
bool plot_sweep(const SweepSpec& spec, const std::string& csv_path, const std::string& plot_path,
                const std::vector<std::string>& metrics) {
  const reports::SweepPlotAxes axes = sweep_plot_axes(spec, shipped_measured_file());
  const std::vector<std::vector<std::string>> rows =
      parse_csv(read_file_text(csv_path, "sweep table"), csv_path);
  const std::string script_path = plot_path + ".gp";
  if (run_gnuplot(reports::sweep_gnuplot_script(axes, rows, metrics, plot_path), script_path))
    return true;
  fmt::print(stderr, "podsim sweep: gnuplot failed; the script is in {}\n", script_path);
  return false;
}

}  // namespace

void check_sweep_keys(const SweepSpec& spec, const std::vector<SweepPoint>& points) {
  if (points.empty()) return;
  try {
    const workloads::Workload workload =
        workloads::load_workload(spec.base_workload, points.front().overrides(spec));
    driver::workload_hardware(workload);
  } catch (const UserError& e) {
    if (!e.message().starts_with("unknown ")) return;
    for (const auto& [key, where] : spec.key_locations)
      if (e.location().file.starts_with("--set " + key + "="))
        throw UserError(
            where,
            fmt::format("{} (a key of the base workload {})", e.message(), spec.base_workload),
            std::regex_replace(e.hint(), std::regex("--set ([^=]+)=[^?]*\\?"), "'$1'?"));
  }
}

int run_sweep(const SweepRequest& r) {
  SweepSpec spec = load_sweep(r.sweep_file);
  std::vector<SweepPoint> points = expand_sweep(spec);
  if (!r.shard.empty()) points = select_shard(points, parse_shard(r.shard));
  if (r.jobs < 1) throw UserError(fmt::format("-j must be at least 1, not {}", r.jobs));
  const std::vector<std::string> metrics =
      r.plot_metrics.empty() ? std::vector<std::string>{"step_time_s"} : r.plot_metrics;
  if (!r.plot.empty())
    check_plot_request(r, metrics);
  else if (!r.plot_metrics.empty())
    throw UserError(SourceLocation{"--plot-metric " + r.plot_metrics.front(), 0, 0},
                    "--plot-metric chooses what --plot draws", "add --plot results.svg");
  check_sweep_keys(spec, points);
  ProgressLine progress(stderr, 0, progress_style_of(stderr));
  const std::string label = "sweep " + spec.name;
  ChildRunOptions children;
  children.podsim_binary = r.podsim_binary.empty() ? driver::current_executable() : r.podsim_binary;
  children.jobs = r.jobs;
  children.timeout_seconds = r.timeout_seconds;
  children.on_progress = [&](int done, int total) { progress.update(label, done, total); };
  SweepRunStats stats;
  std::vector<PointResult> results = run_sweep_points(spec, points, children, &stats);
  progress.finish();
  int failed = 0;
  for (const auto& result : results) failed += result.ok ? 0 : 1;
  write_file_atomically(r.output, sweep_csv(spec, results, reports::report_columns()));
  if (!r.jsonl.empty()) write_file_atomically(r.jsonl, sweep_json_lines(spec, results));
  const bool plotted = r.plot.empty() || plot_sweep(spec, r.output, r.plot, metrics);
  fmt::print(stderr,
             "sweep {}: {} point(s), {} failed; children: {} run --serve (points sharing a "
             "compile), {} one-point\n",
             spec.name, results.size(), failed, stats.serve_children, stats.point_children);
  return failed == 0 && plotted ? 0 : 1;
}

int merge_sweep_files(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty())
    throw UserError("sweep merge needs at least one CSV",
                    "podsim sweep merge A.csv B.csv -o out.csv");
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& path : inputs)
    files.emplace_back(path, read_file_text(path, "sweep table"));
  write_file_atomically(output, merge_sweep_csvs(files));
  return 0;
}

}  // namespace podsim::studies
