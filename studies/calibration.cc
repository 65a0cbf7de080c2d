// Calibration against the measured numbers of docs/reference/measurements.md
// (studies/calibration.h).
#include "studies/calibration.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "hw_models/config.h"
#include "reports/flat_report.h"

namespace podsim::studies {

using reports::report_columns;

namespace {

SourceLocation where(const std::string& file, const YAML::Node& node) {
  YAML::Mark m = node.Mark();
  if (m.line < 0) return SourceLocation{file, 0, 0};
  return SourceLocation{file, m.line + 1, m.column + 1};
}

std::string required_string(const std::string& file, const YAML::Node& map, const std::string& key) {
  YAML::Node n = map[key];
  if (!n || !n.IsScalar()) throw UserError(where(file, map), fmt::format("this entry needs '{}'", key));
  return n.as<std::string>();
}

double number_at(const std::string& file, const YAML::Node& node, const std::string& what) {
  std::string text = node.IsScalar() ? node.as<std::string>() : "";
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0' || !std::isfinite(v))
    throw UserError(where(file, node), fmt::format("'{}' must be a number, not '{}'", what, text));
  return v;
}

// A measured value: the divisor of the relative error, so > 0.
double measured_value(const std::string& file, const YAML::Node& node) {
  const double v = number_at(file, node, "measured");
  if (!(v > 0)) throw UserError(where(file, node), fmt::format("'measured' must be > 0, not {}", v));
  return v;
}

// config, workload and the workload's path resolved against `base`, common
// to points and checks.
template <class Measured>
void read_config_and_workload(const std::string& file, const YAML::Node& node, const std::filesystem::path& base,
                              Measured& m) {
  m.config = required_string(file, node, "config");
  m.workload = required_string(file, node, "workload");
  m.workload_path = std::filesystem::path(m.workload).is_absolute()
                        ? m.workload
                        : (base / m.workload).lexically_normal().string();
  if (node["source"] && node["source"].IsScalar()) m.source = node["source"].as<std::string>();
}

MeasuredCheck parse_check(const std::string& file, const YAML::Node& c, const std::filesystem::path& base) {
  if (!c.IsMap()) throw UserError(where(file, c), "each check must be a mapping");
  MeasuredCheck m;
  read_config_and_workload(file, c, base, m);
  m.quantity = required_string(file, c, "quantity");
  m.field = required_string(file, c, "field");
  const std::vector<std::string> columns = report_columns();
  if (std::find(columns.begin(), columns.end(), m.field) == columns.end())
    throw UserError(where(file, c["field"]), fmt::format("'{}' is not a report field", m.field),
                    "use a column of `podsim run --format csv`, e.g. time_by_pass_s.recompute or mfu");
  if (c["per_step"]) {
    if (!c["per_step"].IsScalar() || (c["per_step"].as<std::string>() != "true" && c["per_step"].as<std::string>() != "false"))
      throw UserError(where(file, c["per_step"]), "'per_step' must be true or false");
    m.per_step = c["per_step"].as<std::string>() == "true";
  }
  const int given = (c["measured"] ? 1 : 0) + (c["at_least"] ? 1 : 0) + (c["range"] ? 1 : 0);
  if (given != 1)
    throw UserError(where(file, c), fmt::format("check '{}' needs exactly one of measured, at_least, range", m.config),
                    "measured: 0.28 | at_least: 0.85 | range: [0.50, 0.62]");
  if (c["measured"]) {
    m.kind = MeasuredCheck::Kind::kValue;
    m.measured = measured_value(file, c["measured"]);
  } else if (c["at_least"]) {
    m.kind = MeasuredCheck::Kind::kAtLeast;
    m.measured = number_at(file, c["at_least"], "at_least");
  } else {
    YAML::Node r = c["range"];
    if (!r.IsSequence() || r.size() != 2) throw UserError(where(file, r), "'range' must be [low, high]");
    m.kind = MeasuredCheck::Kind::kRange;
    m.low = number_at(file, r[0], "range");
    m.high = number_at(file, r[1], "range");
    if (!(m.low <= m.high)) throw UserError(where(file, r), "'range' must have low <= high");
  }
  return m;
}

FitParameter parse_fit_parameter(const std::string& file, const YAML::Node& f) {
  if (!f.IsMap()) throw UserError(where(file, f), "each fit entry must be a mapping");
  FitParameter p;
  p.key = required_string(file, f, "key");
  const std::vector<std::string> keys = hw::hardware_keys();
  if (std::find(keys.begin(), keys.end(), p.key) == keys.end())
    throw UserError(where(file, f["key"]), fmt::format("'{}' is not a hardware key", p.key),
                    "use a key `podsim hardware show tpuv3` prints, e.g. core.op_overhead_s");
  YAML::Node r = f["range"];
  if (!r || !r.IsSequence() || r.size() != 2)
    throw UserError(where(file, r ? r : f), fmt::format("fit parameter '{}' needs 'range: [low, high]'", p.key));
  p.low = number_at(file, r[0], "range");
  p.high = number_at(file, r[1], "range");
  // The search steps in ratios (calibration_fit.h), so both ends are > 0.
  if (!(p.low > 0 && p.low < p.high))
    throw UserError(where(file, r), fmt::format("fit range of '{}' must have 0 < low < high", p.key));
  p.why = required_string(file, f, "why");
  return p;
}

// The field as a number, NaN when the report has none.
double field_number(const JobOutcome& run, const std::string& name) { return run.metrics.number(name).value_or(NAN); }

}  // namespace

MeasuredSet parse_measured(const std::string& yaml_text, const std::string& file_name) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw UserError(SourceLocation{file_name, e.mark.line + 1, e.mark.column + 1}, e.msg);
  }
  if (!root.IsMap()) throw UserError(SourceLocation{file_name, 1, 1}, "the measured-numbers file must be a mapping");
  MeasuredSet set;
  set.file = file_name;
  if (root["source"] && root["source"].IsScalar()) set.source = root["source"].as<std::string>();
  if (root["notes"] && root["notes"].IsScalar()) set.notes = root["notes"].as<std::string>();
  YAML::Node points = root["points"];
  if (!points || !points.IsSequence() || points.size() == 0)
    throw UserError(where(file_name, root), "the measured-numbers file has no 'points' list");
  std::filesystem::path base = std::filesystem::path(file_name).parent_path();
  for (const YAML::Node& p : points) {
    if (!p.IsMap()) throw UserError(where(file_name, p), "each calibration point must be a mapping");
    MeasuredPoint m;
    read_config_and_workload(file_name, p, base, m);
    m.metric = required_string(file_name, p, "metric");
    if (m.metric != "tokens_per_second" && m.metric != "steps_per_second" && m.metric != "mfu")
      throw UserError(where(file_name, p["metric"]), fmt::format("unknown metric '{}'", m.metric),
                      "use tokens_per_second, steps_per_second or mfu");
    if (YAML::Node why = p["inconsistent"]) m.inconsistent = required_string(file_name, p, "inconsistent");
    required_string(file_name, p, "measured");
    m.measured = measured_value(file_name, p["measured"]);
    set.points.push_back(m);
  }
  if (YAML::Node checks = root["checks"]) {
    if (!checks.IsSequence()) throw UserError(where(file_name, checks), "'checks' must be a list");
    for (const YAML::Node& c : checks) set.checks.push_back(parse_check(file_name, c, base));
  }
  if (YAML::Node fit = root["fit"]) {
    if (!fit.IsSequence()) throw UserError(where(file_name, fit), "'fit' must be a list");
    for (const YAML::Node& f : fit) {
      FitParameter p = parse_fit_parameter(file_name, f);
      for (const FitParameter& q : set.fit)
        if (q.key == p.key)
          throw UserError(where(file_name, f), fmt::format("fit parameter '{}' is listed twice", p.key));
      set.fit.push_back(p);
    }
  }
  return set;
}

MeasuredSet load_measured(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(SourceLocation{path, 0, 0}, "cannot read the measured-numbers file");
  std::stringstream s;
  s << in.rdbuf();
  return parse_measured(s.str(), path);
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
  row.predicted = point.metric == "steps_per_second" ? 1.0 / row.step_time_s : field_number(run, point.metric);
  if (!std::isfinite(row.predicted) || row.predicted <= 0) {
    row.error = "the report has no usable step time / throughput";
    return row;
  }
  row.ok = true;
  row.relative_error = row.predicted / point.measured - 1.0;
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
    case MeasuredCheck::Kind::kAtLeast: row.holds = value >= check.measured; break;
    case MeasuredCheck::Kind::kRange: row.holds = value >= check.low && value <= check.high; break;
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
  for (const MeasuredPoint& p : set.points) point_jobs.push_back(workload_index(workloads, p.workload_path));
  for (const MeasuredCheck& c : set.checks) check_jobs.push_back(workload_index(workloads, c.workload_path));
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
