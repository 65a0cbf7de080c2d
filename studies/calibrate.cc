// `podsim calibrate` (studies/calibrate.h).
#include "studies/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/files.h"
#include "common/progress.h"
#include "studies/calibration.h"
#include "studies/calibration_markdown.h"
#include "studies/fit.h"
#include "studies/regress.h"

namespace podsim::studies {

namespace {

int fit(const MeasuredSet& set, const CalibrateRequest& r, const std::string& podsim_binary) {
  FitOptions options;
  options.podsim_binary = podsim_binary;
  options.max_evaluations = r.max_evaluations;
  // News and the searches' bar as lines: a fit runs for a long time, its log
  // is read afterwards.
  ProgressLine progress(stderr, 0, ProgressStyle::kLines);
  options.on_progress = [&progress](const std::string& news) { progress.note(news); };
  // After each search: an ETA from the searches so far, and the page as far
  // as it goes.
  const bool to_file = !r.output.empty() && r.output != "-";
  options.on_search_done = [&](const FitResult& partial) {
    progress.update("fit searches", partial.searches, partial.searches_planned);
    if (to_file && partial.searches < partial.searches_planned) {
      write_file_atomically(r.output, fit_markdown(set, partial));
      progress.note(fmt::format("fit: partial results in {}", r.output));
    }
  };
  const FitResult result = fit_calibration(set, options);
  write_file_atomically(r.output, fit_markdown(set, result));
  return 0;
}

}  // namespace

int calibrate(const CalibrateRequest& r) {
  const std::string file =
      r.measured_file.empty()
          ? (std::filesystem::path(shipped_baselines_dir("--measured FILE")) / "measured.yaml")
                .string()
          : r.measured_file;
  const MeasuredSet set = load_measured(file);
  ChildRunOptions children;
  children.podsim_binary = r.podsim_binary.empty() ? driver::current_executable() : r.podsim_binary;
  children.jobs = std::max(1, r.jobs);
  if (r.fit) return fit(set, r, children.podsim_binary);
  ProgressLine progress(stderr, 0, progress_style_of(stderr));
  children.on_progress = [&progress](int done, int total) {
    progress.update("calibrate", done, total);
  };
  const CalibrationResult result = run_calibration(set, children);
  progress.finish();
  write_file_atomically(r.output, calibration_markdown(set, result.rows, result.checks));
  return 0;
}

}  // namespace podsim::studies
