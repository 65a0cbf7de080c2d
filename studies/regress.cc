// Regression baselines: parsing, comparison, update, the change table and the
// runner (studies/regress.h).
#include "studies/regress.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/files.h"
#include "common/progress.h"
#include "common/yaml_reader.h"

namespace podsim::studies {

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

std::string number_text(double v) { return fmt::format("{}", v); }

}  // namespace

// A baseline is JSON, read as the YAML it also is (one reader for every
// input file): errors get positions and unknown keys a guess.
Baseline parse_baseline(const std::string& json_text, const std::string& file_name) {
  const yaml::Document doc = yaml::Document::parse(json_text, file_name);
  return yaml::guarded(file_name, "a baseline is a JSON object of plain keys", [&] {
    const YAML::Node& root = doc.root();
    if (!root.IsMap()) doc.fail(root, "a baseline must be a JSON object");
    yaml::MapReader top(doc, root, "", "baseline key");
    Baseline b;
    b.file = file_name;
    const YAML::Node workload = top.get("workload");
    const YAML::Node overrides = top.get("overrides");
    const YAML::Node fidelity = top.get("fidelity");
    const YAML::Node metrics = top.get("metrics");
    top.finish();
    // A quoted scalar is a JSON string; a plain one a number, true/false or null.
    const auto is_string = [](const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; };
    if (!workload || !is_string(workload))
      doc.fail(workload ? workload : root, "the baseline has no \"workload\" path",
               "add \"workload\": \"../../workloads/small.yaml\"");
    b.workload = workload.Scalar();
    fs::path base = fs::path(file_name).parent_path();
    b.workload_path = fs::path(b.workload).is_absolute()
                          ? b.workload
                          : (base / b.workload).lexically_normal().string();
    if (overrides) {
      if (!overrides.IsSequence())
        doc.fail(overrides, "\"overrides\" must be a list of \"key=value\" strings");
      for (const YAML::Node& o : overrides) {
        if (!is_string(o) || o.Scalar().find('=') == std::string::npos)
          doc.fail(o, "\"overrides\" must be a list of \"key=value\" strings");
        b.overrides.push_back(o.Scalar());
      }
    }
    if (fidelity) {
      if (!is_string(fidelity) || (fidelity.Scalar() != "fast" && fidelity.Scalar() != "full"))
        doc.fail(fidelity, "\"fidelity\" must be \"fast\" or \"full\"");
      b.fidelity = fidelity.Scalar();
    }
    if (!metrics || !metrics.IsMap() || metrics.size() == 0)
      doc.fail(metrics ? metrics : root, "the baseline has no \"metrics\"",
               "add e.g. \"metrics\": {\"step_time_s\": {\"value\": 1.0, \"rel_tol\": 0.01}}");
    const yaml::MapReader metrics_keys(doc, metrics, "metrics");
    for (const yaml::MapReader::Entry& e : metrics_keys.entries()) {
      const std::string& name = e.key;
      if (!e.value.IsMap() || !e.value["value"])
        doc.fail(e.value, fmt::format("metric '{}' needs an object with a \"value\"", name));
      yaml::MapReader m(doc, e.value, "metrics." + name);
      MetricBaseline metric;
      metric.name = name;
      const YAML::Node v = m.get("value");
      const std::optional<double> number =
          v.IsScalar() && !is_string(v) ? yaml::parse_double(v.Scalar()) : std::nullopt;
      if (number) {
        metric.number = *number;
        metric.text = number_text(*metric.number);
      } else if (v.IsScalar() && !is_string(v) && (v.Scalar() == "true" || v.Scalar() == "false")) {
        metric.text = v.Scalar();
      } else if (is_string(v)) {
        metric.text = v.Scalar();
      } else {
        doc.fail(v,
                 fmt::format("metric '{}': \"value\" must be a number, boolean or string", name));
      }
      for (const char* key : {"rel_tol", "abs_tol"}) {
        const YAML::Node tol = m.get(key);
        if (!tol) continue;
        const std::optional<double> t =
            tol.IsScalar() && !is_string(tol) ? yaml::parse_double(tol.Scalar()) : std::nullopt;
        if (!t || !(*t >= 0))
          doc.fail(tol, fmt::format("metric '{}': \"{}\" must be a number >= 0", name, key));
        (std::string(key) == "rel_tol" ? metric.rel_tol : metric.abs_tol) = *t;
      }
      m.finish();
      b.metrics.push_back(metric);
    }
    return b;
  });
}

Baseline load_baseline(const std::string& path) {
  return parse_baseline(read_file_text(path, "baseline file"), path);
}

std::string find_baselines_dir(const std::string& executable, const std::string& cwd) {
  std::error_code ec;
  const fs::path here = fs::path(cwd) / "reports" / "baselines";
  if (fs::is_directory(here, ec)) return here.string();
  if (executable.empty()) return "";
  for (fs::path dir = fs::path(executable).parent_path(); !dir.empty(); dir = dir.parent_path()) {
    const fs::path candidate = dir / "reports" / "baselines";
    if (fs::is_directory(candidate, ec)) return candidate.lexically_normal().string();
    if (dir == dir.parent_path()) break;
  }
  return "";
}

std::vector<std::string> baseline_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw UserError(SourceLocation{dir, 0, 0}, "the baselines folder does not exist",
                    "pass --baselines DIR (default reports/baselines)");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".json")
      files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw UserError(SourceLocation{dir, 0, 0}, "the baselines folder holds no *.json baseline");
  return files;
}

std::string baseline_json(const Baseline& b) {
  ordered_json j;
  j["workload"] = b.workload;
  j["overrides"] = b.overrides;
  j["fidelity"] = b.fidelity;
  ordered_json metrics = ordered_json::object();
  for (const MetricBaseline& m : b.metrics) {
    ordered_json one;
    if (m.number)
      one["value"] = *m.number;
    else if (m.text == "true" || m.text == "false")
      one["value"] = m.text == "true";
    else
      one["value"] = m.text;
    if (m.number) {
      one["rel_tol"] = m.rel_tol;
      if (m.abs_tol > 0) one["abs_tol"] = m.abs_tol;
    }
    metrics[m.name] = one;
  }
  j["metrics"] = metrics;
  return j.dump(2) + "\n";
}

bool BaselineComparison::passed() const {
  return run_ok && std::all_of(metrics.begin(), metrics.end(),
                               [](const MetricComparison& m) { return m.within_tolerance; });
}

BaselineComparison compare_with_baseline(const Baseline& baseline, const JobOutcome& run) {
  BaselineComparison c;
  c.file = baseline.file;
  c.run_ok = run.ok;
  c.error = run.error;
  if (!run.ok) return c;
  for (const MetricBaseline& m : baseline.metrics) {
    MetricComparison mc;
    mc.name = m.name;
    mc.expected = m.text;
    const std::optional<std::string> actual = run.metrics.text(m.name);
    if (!actual) {
      mc.actual = "(missing)";
      mc.within_tolerance = false;
      c.metrics.push_back(mc);
      continue;
    }
    mc.actual = *actual;
    std::optional<double> value = run.metrics.number(m.name);
    if (m.number && value) {
      mc.numeric = true;
      mc.actual = number_text(*value);  // as the baseline writes numbers: 19193856, not 19193856.0
      double diff = *value - *m.number;
      mc.relative_change = *m.number != 0 ? diff / std::abs(*m.number) : (diff == 0 ? 0 : INFINITY);
      mc.within_tolerance = std::abs(diff) <= std::max(m.rel_tol * std::abs(*m.number), m.abs_tol);
    } else {
      mc.within_tolerance = !m.number && *actual == m.text;
    }
    c.metrics.push_back(mc);
  }
  return c;
}

Baseline updated_baseline(const Baseline& baseline, const JobOutcome& run) {
  if (!run.ok)
    throw UserError(SourceLocation{baseline.file, 0, 0},
                    fmt::format("cannot update: the run failed: {}", run.error));
  Baseline b = baseline;
  for (MetricBaseline& m : b.metrics) {
    const std::optional<std::string> actual = run.metrics.text(m.name);
    if (!actual)
      throw UserError(SourceLocation{baseline.file, 0, 0},
                      fmt::format("cannot update: the report has no field '{}'", m.name),
                      "metric names are the columns of `podsim run --format csv`");
    m.number = run.metrics.number(m.name);
    m.text = m.number ? number_text(*m.number) : *actual;
  }
  return b;
}

namespace {

// The status of a metric out of its tolerance: which way it moved, in the
// words of what it measures (a shorter step is faster, not a regression).
std::string change_status(const MetricComparison& m) {
  if (!m.numeric || !std::isfinite(m.relative_change) || m.relative_change == 0) return "CHANGED";
  const bool up = m.relative_change > 0;
  const std::string& n = m.name;
  if (n == "step_time_s" || n.starts_with("time_breakdown_s.") || n.starts_with("time_by_"))
    return n == "step_time_s" ? (up ? "CHANGED: slower" : "CHANGED: faster")
                              : (up ? "CHANGED: longer" : "CHANGED: shorter");
  if (n == "tokens_per_second") return up ? "CHANGED: faster" : "CHANGED: slower";
  if (n == "peak_memory_bytes" || n.starts_with("memory_breakdown_bytes."))
    return up ? "CHANGED: more memory" : "CHANGED: less memory";
  return up ? "CHANGED: higher" : "CHANGED: lower";
}

}  // namespace

std::string regress_table(const std::vector<BaselineComparison>& comparisons, bool all_rows) {
  std::vector<std::array<std::string, 6>> rows;
  rows.push_back({"baseline", "metric", "expected", "actual", "change", "status"});
  int failed = 0;
  for (const BaselineComparison& c : comparisons) {
    std::string name = fs::path(c.file).filename().string();
    if (!c.passed()) ++failed;
    if (!c.run_ok) {
      rows.push_back({name, "(run)", "", "", "", "ERROR: " + c.error});
      continue;
    }
    for (const MetricComparison& m : c.metrics) {
      if (m.within_tolerance && !all_rows) continue;
      std::string change;
      if (m.numeric ? m.relative_change != 0 : m.actual != m.expected)
        change = m.numeric && std::isfinite(m.relative_change)
                     ? fmt::format("{:+.3f}%", 100 * m.relative_change)
                     : "changed";
      rows.push_back({name, m.name, m.expected, m.actual, change,
                      m.within_tolerance ? "ok" : change_status(m)});
    }
  }
  std::string out;
  if (rows.size() > 1) {
    std::array<size_t, 6> width{};
    for (const auto& r : rows)
      for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    for (const auto& r : rows) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) line += fmt::format("{:<{}}  ", r[i], width[i]);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
  }
  out += fmt::format("regress: {} baseline(s), {} passed, {} failed\n", comparisons.size(),
                     comparisons.size() - static_cast<size_t>(failed), failed);
  return out;
}

RegressResult run_regress(const RegressOptions& options) {
  std::vector<Baseline> baselines;
  for (const std::string& file : baseline_files(options.baselines_dir))
    baselines.push_back(load_baseline(file));
  std::vector<RunJob> jobs;
  for (const Baseline& b : baselines)
    jobs.push_back(RunJob{b.workload_path, b.overrides, b.fidelity});
  std::vector<JobOutcome> outcomes = run_jobs(jobs, options.children);
  RegressResult result;
  for (size_t i = 0; i < baselines.size(); ++i) {
    result.comparisons.push_back(compare_with_baseline(baselines[i], outcomes[i]));
    if (!result.comparisons.back().passed()) result.regressed = true;
    if (options.update && outcomes[i].ok)
      write_file_atomically(baselines[i].file,
                            baseline_json(updated_baseline(baselines[i], outcomes[i])));
  }
  result.table = regress_table(result.comparisons, false);
  return result;
}

std::string shipped_baselines_dir(const std::string& flag) {
  const std::string dir =
      find_baselines_dir(driver::current_executable(), fs::current_path().string());
  if (dir.empty())
    throw UserError("no reports/baselines folder here or in the source tree of this podsim",
                    fmt::format("run from the podsim repository, or pass {}", flag));
  return dir;
}

int regress(const RegressRequest& r) {
  RegressOptions options;
  options.baselines_dir =
      r.baselines_dir.empty() ? shipped_baselines_dir("--baselines DIR") : r.baselines_dir;
  options.update = r.update;
  options.children.podsim_binary =
      r.podsim_binary.empty() ? driver::current_executable() : r.podsim_binary;
  options.children.jobs = std::max(1, r.jobs);
  ProgressLine progress(stderr, 0, progress_style_of(stderr));
  options.children.on_progress = [&progress](int done, int total) {
    progress.update("regress", done, total);
  };
  RegressResult result = run_regress(options);
  progress.finish();
  fmt::print("{}", r.all_rows ? regress_table(result.comparisons, true) : result.table);
  if (r.update)
    fmt::print("regress: baselines in {} rewritten from this run\n", options.baselines_dir);
  return result.regressed ? 1 : 0;
}

}  // namespace podsim::studies
