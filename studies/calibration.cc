// Calibration against the measured numbers of docs/reference/measurements.md
// (studies/calibration.h).
#include "studies/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/did_you_mean.h"
#include "common/error.h"
#include "common/files.h"
#include "common/yaml_reader.h"
#include "hw_models/config.h"
#include "reports/flat_report.h"
#include "workloads/workload.h"

namespace podsim::studies {

using reports::report_columns;

namespace {

using yaml::Document;
using yaml::MapReader;

std::string required_string(const Document& doc, MapReader& map, const YAML::Node& node,
                            const std::string& key) {
  YAML::Node n = map.get(key);
  if (!n || !n.IsScalar()) doc.fail(node, fmt::format("this entry needs '{}'", key));
  return n.Scalar();
}

double number_at(const Document& doc, const YAML::Node& node, const std::string& what) {
  const std::string text = node.IsScalar() ? node.Scalar() : "";
  const std::optional<double> v = yaml::parse_double(text);
  if (!v || !std::isfinite(*v))
    doc.fail(node, fmt::format("'{}' must be a number, not '{}'", what, text));
  return *v;
}

// A measured value: the divisor of the relative error, so > 0.
double measured_value(const Document& doc, const YAML::Node& node) {
  const double v = number_at(doc, node, "measured");
  if (!(v > 0)) doc.fail(node, fmt::format("'measured' must be > 0, not {}", v));
  return v;
}

// config, workload and the workload's path resolved against `base`, common
// to points and checks.
template <class Measured>
void read_config_and_workload(const Document& doc, MapReader& map, const YAML::Node& node,
                              const std::filesystem::path& base, Measured& m) {
  m.config = required_string(doc, map, node, "config");
  m.workload = required_string(doc, map, node, "workload");
  m.workload_path = std::filesystem::path(m.workload).is_absolute()
                        ? m.workload
                        : (base / m.workload).lexically_normal().string();
  if (const YAML::Node source = map.get("source"); source && source.IsScalar())
    m.source = source.Scalar();
}

MeasuredCheck parse_check(const Document& doc, const YAML::Node& c,
                          const std::filesystem::path& base) {
  if (!c.IsMap()) doc.fail(c, "each check must be a mapping");
  MapReader r(doc, c, "checks");
  MeasuredCheck m;
  read_config_and_workload(doc, r, c, base, m);
  m.quantity = required_string(doc, r, c, "quantity");
  m.field = required_string(doc, r, c, "field");
  const std::vector<std::string> columns = report_columns();
  if (std::find(columns.begin(), columns.end(), m.field) == columns.end())
    doc.fail(c["field"], fmt::format("'{}' is not a report field", m.field),
             "use a column of `podsim run --format csv`, e.g. time_by_pass_s.recompute or mfu");
  if (const YAML::Node per_step = r.get("per_step")) {
    if (!per_step.IsScalar() || (per_step.Scalar() != "true" && per_step.Scalar() != "false"))
      doc.fail(per_step, "'per_step' must be true or false");
    m.per_step = per_step.Scalar() == "true";
  }
  if (r.get("chose")) m.chose = required_string(doc, r, c, "chose");
  const YAML::Node measured = r.get("measured"), at_least = r.get("at_least"),
                   range = r.get("range");
  r.finish();
  const int given = (measured ? 1 : 0) + (at_least ? 1 : 0) + (range ? 1 : 0);
  if (given != 1)
    doc.fail(c, fmt::format("check '{}' needs exactly one of measured, at_least, range", m.config),
             "measured: 0.28 | at_least: 0.85 | range: [0.50, 0.62]");
  if (measured) {
    m.kind = MeasuredCheck::Kind::kValue;
    m.measured = measured_value(doc, measured);
  } else if (at_least) {
    m.kind = MeasuredCheck::Kind::kAtLeast;
    m.measured = number_at(doc, at_least, "at_least");
  } else {
    if (!range.IsSequence() || range.size() != 2) doc.fail(range, "'range' must be [low, high]");
    m.kind = MeasuredCheck::Kind::kRange;
    m.low = number_at(doc, range[0], "range");
    m.high = number_at(doc, range[1], "range");
    if (!(m.low <= m.high)) doc.fail(range, "'range' must have low <= high");
  }
  return m;
}

FitParameter parse_fit_parameter(const Document& doc, const YAML::Node& f) {
  if (!f.IsMap()) doc.fail(f, "each fit entry must be a mapping");
  MapReader r(doc, f, "fit");
  FitParameter p;
  p.key = required_string(doc, r, f, "key");
  const std::vector<std::string> keys = hw::hardware_keys();
  if (std::find(keys.begin(), keys.end(), p.key) == keys.end()) {
    const std::string guess = closest(p.key, keys);
    doc.fail(f["key"], fmt::format("'{}' is not a hardware key", p.key),
             guess.empty()
                 ? "use a key `podsim hardware show tpuv3` prints, e.g. core.op_overhead_s"
                 : fmt::format("did you mean '{}'?", guess));
  }
  const YAML::Node range = r.get("range");
  if (!range || !range.IsSequence() || range.size() != 2)
    doc.fail(range ? range : f,
             fmt::format("fit parameter '{}' needs 'range: [low, high]'", p.key));
  p.low = number_at(doc, range[0], "range");
  p.high = number_at(doc, range[1], "range");
  // The search steps in ratios (studies/compass_search.h), so both ends are > 0.
  if (!(p.low > 0 && p.low < p.high))
    doc.fail(range, fmt::format("fit range of '{}' must have 0 < low < high", p.key));
  p.why = required_string(doc, r, f, "why");
  r.finish();
  return p;
}

// A published TFLOP/s row: flop_rule, tflops_per_chip, mfu and chips; the
// rule's FLOPs per token come from the workload's model.
PublishedThroughput read_published(const Document& doc, MapReader& r, const YAML::Node& p,
                                   const MeasuredPoint& m, const YAML::Node& rule) {
  if (m.metric != "tokens_per_second")
    doc.fail(p["metric"], "a row with 'flop_rule' compares tokens_per_second",
             "set metric: tokens_per_second (the table's TFLOP/s becomes tokens/s by its rule)");
  if (r.get("measured"))
    doc.fail(p["measured"], "a row with 'flop_rule' derives 'measured' from tflops_per_chip",
             "remove 'measured'");
  PublishedThroughput t;
  t.rule = yaml::read_choice(doc, rule, "flop_rule", flop_rule_names());
  t.tflops_per_chip = number_at(doc, r.require("tflops_per_chip"), "tflops_per_chip");
  t.mfu = number_at(doc, r.require("mfu"), "mfu");
  const double chips = number_at(doc, r.require("chips"), "chips");
  if (!(t.tflops_per_chip > 0)) doc.fail(p["tflops_per_chip"], "'tflops_per_chip' must be > 0");
  if (!(t.mfu > 0 && t.mfu <= 1)) doc.fail(p["mfu"], "'mfu' must be in (0, 1]");
  if (!(chips >= 1 && chips == std::floor(chips)))
    doc.fail(p["chips"], "'chips' must be a whole number >= 1");
  t.chips = static_cast<int64_t>(chips);
  const workloads::Workload w = workloads::load_workload(m.workload_path);
  t.flops_per_token = flops_per_token(t.rule, w.model);
  if (!(t.flops_per_token > 0))
    doc.fail(p["workload"], fmt::format("the model of '{}' has no FLOPs by rule '{}'", m.workload,
                                        flop_rule_names().name(t.rule)));
  return t;
}

// The field as a number, NaN when the report has none.
double field_number(const JobOutcome& run, const std::string& name) {
  return run.metrics.number(name).value_or(NAN);
}

TimeSplit time_split(const JobOutcome& run, double step_time_s) {
  TimeSplit t;
  t.hardware = run.metrics.text("hardware").value_or("");
  auto share = [&](const char* field) { return field_number(run, field) / step_time_s; };
  t.mxu_bound = share("time_breakdown_s.mxu_bound");
  t.vpu_bound = share("time_breakdown_s.vpu_bound");
  t.memory_bound = share("time_breakdown_s.memory_bound");
  t.overhead = share("time_breakdown_s.overhead");
  t.exposed_communication = share("time_breakdown_s.exposed_communication");
  t.forward = share("time_by_pass_s.forward");
  t.recompute = share("time_by_pass_s.recompute");
  t.backward = share("time_by_pass_s.backward");
  t.hfu = field_number(run, "hfu");
  t.peak_memory_bytes = field_number(run, "peak_memory_bytes");
  t.hbm_capacity_bytes = field_number(run, "hbm_capacity_bytes");
  return t;
}

}  // namespace

MeasuredSet parse_measured(const std::string& yaml_text, const std::string& file_name) {
  const Document doc = Document::parse(yaml_text, file_name);
  return yaml::guarded(file_name, "keys are plain words", [&] {
    const YAML::Node& root = doc.root();
    if (!root.IsMap())
      throw UserError(SourceLocation{file_name, 1, 1},
                      "the measured-numbers file must be a mapping");
    MapReader top(doc, root, "", "key");
    MeasuredSet set;
    set.file = file_name;
    if (const YAML::Node source = top.get("source"); source && source.IsScalar())
      set.source = source.Scalar();
    if (const YAML::Node notes = top.get("notes"); notes && notes.IsScalar())
      set.notes = notes.Scalar();
    const YAML::Node points = top.get("points");
    const YAML::Node checks = top.get("checks");
    const YAML::Node fit = top.get("fit");
    top.finish();
    if (!points || !points.IsSequence() || points.size() == 0)
      doc.fail(root, "the measured-numbers file has no 'points' list");
    const std::filesystem::path base = std::filesystem::path(file_name).parent_path();
    for (const YAML::Node& p : points) {
      if (!p.IsMap()) doc.fail(p, "each calibration point must be a mapping");
      MapReader r(doc, p, "points");
      MeasuredPoint m;
      read_config_and_workload(doc, r, p, base, m);
      m.metric = required_string(doc, r, p, "metric");
      if (m.metric != "tokens_per_second" && m.metric != "steps_per_second" && m.metric != "mfu")
        doc.fail(p["metric"], fmt::format("unknown metric '{}'", m.metric),
                 "use tokens_per_second, steps_per_second or mfu");
      if (r.get("inconsistent")) m.inconsistent = required_string(doc, r, p, "inconsistent");
      if (const YAML::Node rule = r.get("flop_rule")) {
        m.published = read_published(doc, r, p, m, rule);
        m.measured = m.published->tflops_per_chip * 1e12 * static_cast<double>(m.published->chips) /
                     m.published->flops_per_token;
      } else {
        required_string(doc, r, p, "measured");
        m.measured = measured_value(doc, p["measured"]);
      }
      r.finish();
      set.points.push_back(m);
    }
    if (checks) {
      if (!checks.IsSequence()) doc.fail(checks, "'checks' must be a list");
      for (const YAML::Node& c : checks) set.checks.push_back(parse_check(doc, c, base));
    }
    if (fit) {
      if (!fit.IsSequence()) doc.fail(fit, "'fit' must be a list");
      for (const YAML::Node& f : fit) {
        FitParameter p = parse_fit_parameter(doc, f);
        for (const FitParameter& q : set.fit)
          if (q.key == p.key) doc.fail(f, fmt::format("fit parameter '{}' is listed twice", p.key));
        set.fit.push_back(p);
      }
    }
    return set;
  });
}

MeasuredSet load_measured(const std::string& path) {
  return parse_measured(read_file_text(path, "measured-numbers file"), path);
}

CalibrationRow calibration_row(const MeasuredPoint& point, const JobOutcome& run) {
  CalibrationRow row;
  row.point = point;
  if (!run.ok) {
    row.error = run.error;
    return row;
  }
  row.step_time_s = field_number(run, "step_time_s");
  row.mfu = field_number(run, "mfu");
  row.split = time_split(run, row.step_time_s);
  row.predicted =
      point.metric == "steps_per_second" ? 1.0 / row.step_time_s : field_number(run, point.metric);
  if (!std::isfinite(row.predicted) || row.predicted <= 0) {
    row.error = "the report has no usable step time / throughput";
    return row;
  }
  row.ok = true;
  row.relative_error = row.predicted / point.measured - 1.0;
  if (point.published) {
    row.predicted_tflops_per_chip = row.predicted * point.published->flops_per_token /
                                    static_cast<double>(point.published->chips) / 1e12;
    row.predicted_published_mfu = point.published->mfu * (1.0 + row.relative_error);
  }
  return row;
}

CheckRow check_row(const MeasuredCheck& check, const JobOutcome& run) {
  CheckRow row;
  row.check = check;
  if (!run.ok) {
    row.error = run.error;
    return row;
  }
  double value = field_number(run, check.field);
  if (check.per_step) value /= field_number(run, "step_time_s");
  if (!std::isfinite(value)) {
    row.error = fmt::format("the report has no usable '{}'", check.field);
    return row;
  }
  row.ok = true;
  row.predicted = value;
  switch (check.kind) {
    case MeasuredCheck::Kind::kValue:
      row.relative_error = value / check.measured - 1.0;
      row.holds = std::abs(row.relative_error) <= kCalibrationTolerance;
      break;
    case MeasuredCheck::Kind::kAtLeast:
      row.holds = value >= check.measured;
      break;
    case MeasuredCheck::Kind::kRange:
      row.holds = value >= check.low && value <= check.high;
      break;
  }
  return row;
}

size_t workload_index(std::vector<std::string>& workloads, const std::string& path) {
  auto it = std::find(workloads.begin(), workloads.end(), path);
  if (it != workloads.end()) return static_cast<size_t>(it - workloads.begin());
  workloads.push_back(path);
  return workloads.size() - 1;
}

CalibrationResult run_calibration(const MeasuredSet& set, const ChildRunOptions& options) {
  // Each workload runs once, however many points and checks read it.
  std::vector<std::string> workloads;
  std::vector<size_t> point_jobs, check_jobs;
  for (const MeasuredPoint& p : set.points)
    point_jobs.push_back(workload_index(workloads, p.workload_path));
  for (const MeasuredCheck& c : set.checks)
    check_jobs.push_back(workload_index(workloads, c.workload_path));
  std::vector<RunJob> jobs;
  for (const std::string& w : workloads) jobs.push_back(RunJob{w, {}, "fast"});
  std::vector<JobOutcome> outcomes = run_jobs(jobs, options);
  CalibrationResult result;
  for (size_t i = 0; i < set.points.size(); ++i)
    result.rows.push_back(calibration_row(set.points[i], outcomes[point_jobs[i]]));
  for (size_t i = 0; i < set.checks.size(); ++i)
    result.checks.push_back(check_row(set.checks[i], outcomes[check_jobs[i]]));
  return result;
}

}  // namespace podsim::studies
