// Sweep, merge, regress and calibrate commands (cli/sweep_commands.h): option
// handling, the stderr progress bar, and gnuplot for --plot.
#include "cli/sweep_commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "studies/calibration.h"
#include "studies/calibration_fit.h"
#include "common/files.h"
#include "common/progress.h"
#include "studies/regress.h"
#include "studies/sweep.h"
#include "reports/sweep_plot.h"
#include "studies/sweep_runner.h"
#include "common/csv.h"
#include "reports/flat_fields.h"

namespace podsim::cli {

namespace {

std::string binary_or_self(const std::string& binary) {
  return binary.empty() ? driver::current_executable() : binary;
}

// The shipped baselines folder (studies/regress.h), or a UserError naming the flag.
std::string shipped_baselines(const char* flag) {
  const std::string dir =
      studies::find_baselines_dir(driver::current_executable(), std::filesystem::current_path().string());
  if (dir.empty())
    throw UserError("no reports/baselines folder here or in the source tree of this podsim",
                    fmt::format("run from the podsim repository, or pass {}", flag));
  return dir;
}

// A progress bar with ETA on stderr, redrawn in place on a terminal, one
// line per finished point otherwise (logs of batch jobs stay readable).
class ProgressBar {
 public:
  explicit ProgressBar(std::string label) : label_(std::move(label)), start_(std::chrono::steady_clock::now()) {}
  void operator()(int done, int total) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::string text = fmt::format("{} {}", label_, podsim::progress_bar_text(done, total, elapsed));
    if (tty_) fmt::print(stderr, "\r{}{}", text, done == total ? "\n" : "");
    else fmt::print(stderr, "{}\n", text);
    std::fflush(stderr);
  }

 private:
  std::string label_;
  std::chrono::steady_clock::time_point start_;
  bool tty_ = isatty(fileno(stderr)) != 0;
};


bool gnuplot_installed() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

// --plot's checks, before any point runs: a table to read, gnuplot present,
// metrics that are report fields.
void check_plot_request(const SweepCommandOptions& o, const std::vector<std::string>& metrics) {
  const SourceLocation where{"--plot " + o.plot, 0, 0};
  if (!o.plot.ends_with(".svg") && !o.plot.ends_with(".png"))
    throw UserError(where, "--plot writes an .svg or .png file", "e.g. --plot results.svg");
  if (o.output.empty() || o.output == "-")
    throw UserError(where, "--plot reads the results table, which goes to stdout here", "add -o results.csv");
  if (!gnuplot_installed())
    throw UserError(where, "--plot needs gnuplot, which is not on PATH; nothing was run",
                    "install it (apt-get install gnuplot-nox), or drop --plot and plot the CSV yourself");
  reports::check_plot_metrics(metrics, reports::report_columns());
}

reports::SweepPlotAxes plot_axes(const studies::SweepSpec& spec) {
  reports::SweepPlotAxes axes{spec.name, {}};
  for (const studies::SweepAxis& axis : spec.axes) axes.axis_keys.push_back(axis.keys.front());
  return axes;
}

// Draws the table with gnuplot; false (script kept for a look) when gnuplot fails.
bool plot_sweep(const studies::SweepSpec& spec, const std::string& csv_path, const std::string& plot_path,
                const std::vector<std::string>& metrics) {
  std::vector<std::vector<std::string>> rows =
      podsim::parse_csv(podsim::read_file_text(csv_path, "sweep table"), csv_path);
  const std::string script = reports::sweep_gnuplot_script(plot_axes(spec), rows, metrics, plot_path);
  const std::string script_path = plot_path + ".gp";
  podsim::write_file_atomically(script_path, script);
  const int rc = std::system(fmt::format("gnuplot '{}'", script_path).c_str());
  if (rc != 0) {
    fmt::print(stderr, "podsim sweep: gnuplot failed; the script is in {}\n", script_path);
    return false;
  }
  std::filesystem::remove(script_path);
  return true;
}

}  // namespace

int sweep_command(const SweepCommandOptions& o) {
  studies::SweepSpec spec = studies::load_sweep(o.sweep_file);
  std::vector<studies::SweepPoint> points = studies::expand_sweep(spec);
  if (!o.shard.empty()) points = studies::select_shard(points, studies::parse_shard(o.shard));
  if (o.jobs < 1) throw UserError(fmt::format("-j must be at least 1, not {}", o.jobs));
  const std::vector<std::string> metrics =
      o.plot_metrics.empty() ? std::vector<std::string>{"step_time_s"} : o.plot_metrics;
  if (!o.plot.empty()) check_plot_request(o, metrics);
  else if (!o.plot_metrics.empty())
    throw UserError(SourceLocation{"--plot-metric " + o.plot_metrics.front(), 0, 0},
                    "--plot-metric chooses what --plot draws", "add --plot results.svg");
  ProgressBar bar("sweep " + spec.name);
  studies::ChildRunOptions children;
  children.podsim_binary = binary_or_self(o.podsim_binary);
  children.jobs = o.jobs;
  children.timeout_seconds = o.timeout_seconds;
  children.on_progress = [&bar](int done, int total) { bar(done, total); };
  studies::SweepRunStats stats;
  std::vector<studies::PointResult> results = studies::run_sweep_points(spec, points, children, &stats);
  int failed = 0;
  for (const auto& r : results) failed += r.ok ? 0 : 1;
  podsim::write_file_atomically(o.output, studies::sweep_csv(spec, results, reports::report_columns()));
  if (!o.jsonl.empty()) podsim::write_file_atomically(o.jsonl, studies::sweep_json_lines(spec, results));
  const bool plotted = o.plot.empty() || plot_sweep(spec, o.output, o.plot, metrics);
  fmt::print(stderr, "sweep {}: {} point(s), {} failed; children: {} run --serve (points sharing a compile), {} one-point\n",
             spec.name, results.size(), failed, stats.serve_children, stats.point_children);
  return failed == 0 && plotted ? 0 : 1;
}

int sweep_merge_command(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty()) throw UserError("sweep merge needs at least one CSV", "podsim sweep merge A.csv B.csv -o out.csv");
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& path : inputs) files.emplace_back(path, podsim::read_file_text(path, "sweep table"));
  podsim::write_file_atomically(output, studies::merge_sweep_csvs(files));
  return 0;
}

int regress_command(const RegressCommandOptions& o) {
  studies::RegressOptions options;
  options.baselines_dir = o.baselines_dir.empty() ? shipped_baselines("--baselines DIR") : o.baselines_dir;
  options.update = o.update;
  options.children.podsim_binary = binary_or_self(o.podsim_binary);
  options.children.jobs = std::max(1, o.jobs);
  ProgressBar bar("regress");
  options.children.on_progress = [&bar](int done, int total) { bar(done, total); };
  studies::RegressResult result = studies::run_regress(options);
  fmt::print("{}", o.all_rows ? studies::regress_table(result.comparisons, true) : result.table);
  if (o.update) fmt::print("regress: baselines in {} rewritten from this run\n", options.baselines_dir);
  return result.regressed ? 1 : 0;
}

int calibrate_command(const CalibrateCommandOptions& o) {
  std::string file = o.measured_file.empty()
                         ? (std::filesystem::path(shipped_baselines("--measured FILE")) / "measured.yaml").string()
                         : o.measured_file;
  studies::MeasuredSet set = studies::load_measured(file);
  studies::ChildRunOptions children;
  children.podsim_binary = binary_or_self(o.podsim_binary);
  children.jobs = std::max(1, o.jobs);
  if (o.fit) {
    studies::FitOptions fit;
    fit.podsim_binary = children.podsim_binary;
    fit.max_evaluations = o.max_evaluations;
    fit.on_progress = [](const std::string& news) {
      fmt::print(stderr, "{}\n", news);
      std::fflush(stderr);
    };
    // After each search: an ETA from the searches so far, and the page as far
    // as it goes (a stopped fit leaves what it found).
    const auto start = std::chrono::steady_clock::now();
    const bool to_file = !o.output.empty() && o.output != "-";
    fit.on_search_done = [&](const studies::FitResult& partial) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      fmt::print(stderr, "fit searches {}\n",
                 podsim::progress_bar_text(partial.searches, partial.searches_planned, elapsed));
      if (to_file && partial.searches < partial.searches_planned) {
        podsim::write_file_atomically(o.output, studies::fit_markdown(set, partial));
        fmt::print(stderr, "fit: partial results in {}\n", o.output);
      }
      std::fflush(stderr);
    };
    studies::FitResult result = studies::fit_calibration(set, fit);
    podsim::write_file_atomically(o.output, studies::fit_markdown(set, result));
    return 0;
  }
  ProgressBar bar("calibrate");
  children.on_progress = [&bar](int done, int total) { bar(done, total); };
  studies::CalibrationResult result = studies::run_calibration(set, children);
  podsim::write_file_atomically(o.output, studies::calibration_markdown(set, result.rows, result.checks));
  return 0;
}

}  // namespace podsim::cli
