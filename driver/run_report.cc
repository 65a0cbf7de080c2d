// `podsim run`'s report and trace writing (driver/run_report.h).
#include "driver/run_report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "common/error.h"
#include "common/files.h"
#include "common/progress.h"
#include "reports/trace.h"

namespace podsim::driver {

namespace {

std::string megabytes(double bytes) { return fmt::format("{:.3g} MB", bytes / 1e6); }

}  // namespace

void write_run_outputs(const RunResult& result, sim::Fidelity fidelity, const RunOutputs& outputs) {
  reports::FormatOptions format_options;
  format_options.wall_times = outputs.wall_times;
  // Table and markdown reports carry the wall-time line; json/csv keep their
  // bytes deterministic, so a full run says it on stderr.
  if (fidelity == sim::Fidelity::kFull &&
      (outputs.format == reports::Format::kJson || outputs.format == reports::Format::kCsv) &&
      !outputs.wall_times)
    fmt::print(stderr, "podsim: wall time: compile {:.2f} s, simulate {:.2f} s\n",
               result.report.compile_wall_s, result.report.simulate_wall_s);
  std::string text = reports::format_report(result.report, outputs.format, format_options);
  if (outputs.trace) {
    const std::string& path = outputs.trace->path;
    const sim::Timeline& t = result.timeline;
    if (t.trace_over_limit) {
      const double estimate =
          static_cast<double>(t.trace_events_seen) * reports::kTraceBytesPerItem;
      throw UserError(
          SourceLocation{"--trace " + path, 0, 0},
          fmt::format(
              "the trace would hold {} events (about {}) in its window on {} device(s), over "
              "the {} limit; nothing was written",
              t.trace_events_seen, megabytes(estimate), t.traced_devices.size(),
              megabytes(static_cast<double>(t.trace_selection.max_events) *
                        reports::kTraceBytesPerItem)),
          "narrow --trace-window (ms of the step), trace fewer devices with --trace-devices "
          "(a list or sample:N), or raise --trace-limit (e.g. 200MB; 0 = none)");
    }
    const int64_t bytes =
        reports::write_trace_file(path, t, result.report.workload, outputs.trace->limit_bytes);
    if (t.trace_cut_s >= 0)
      fmt::print(stderr,
                 "trace: {} holds the step's first {:.6g} ms of {:.6g} ms ({}, the --trace-limit); "
                 "choose the part "
                 "with --trace-window A:B (ms), fewer devices with --trace-devices, or raise "
                 "--trace-limit\n",
                 path, t.trace_cut_s * 1e3, t.step_time_s * 1e3,
                 megabytes(static_cast<double>(bytes)));
  }
  podsim::write_file_atomically(outputs.output, text);
}

void run_and_write(RunRequest request, const RunOutputs& outputs) {
  request.record_trace = outputs.trace.has_value();
  if (outputs.trace) request.trace = outputs.trace->selection;
  // Progress with ETA: on a terminal redrawn in place after 1 s; a full
  // fidelity run into a log (minutes on a pod) prints a line per 10% once it
  // has run 10 s, so short runs and fast sweep children stay silent.
  const bool tty = isatty(fileno(stderr)) != 0;
  const bool full = request.fidelity == sim::Fidelity::kFull;
  podsim::ProgressLine progress(
      stderr, tty ? 1.0 : 10.0,
      tty ? podsim::ProgressStyle::kInPlace : podsim::ProgressStyle::kLines);
  if (tty || full)
    request.progress = [&progress](const std::string& stage, double fraction) {
      progress.update(stage, fraction);
    };
  const RunResult result = run_workload(request);
  progress.finish();
  write_run_outputs(result, request.fidelity, outputs);
}

}  // namespace podsim::driver
