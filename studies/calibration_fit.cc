// Fitting the physical parameters of the hardware model to the measured
// numbers, with leave-one-out (studies/calibration_fit.h).
#include "studies/calibration_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>

#include "common/error.h"
#include "driver/run_workload.h"
#include "driver/workload_server.h"

namespace podsim::studies {

using driver::HardwareVariant;
using driver::workload_hardware;
using driver::JobOutcome;
using driver::WorkloadServer;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

double clamp_unit(double u) { return std::clamp(u, 0.0, 1.0); }

// Mean |ln(predicted / measured)| over the points `use` selects: symmetric
// in over- and under-prediction, and a point off by x2 weighs as much as one
// off by /2. +inf when one of them failed.
double objective(const std::vector<CalibrationRow>& rows, const std::vector<bool>& use) {
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!use[i]) continue;
    if (!rows[i].ok) return kInfinity;
    sum += std::abs(std::log(rows[i].predicted / rows[i].point.measured));
    ++n;
  }
  return n > 0 ? sum / n : kInfinity;
}

// The workloads of the points, each served by one child, and every variant
// simulated so far (a search revisits points; leave-one-out searches share
// most of theirs).
class FitEvaluator {
 public:
  FitEvaluator(const MeasuredSet& set, const FitOptions& options) : set_(set) {
    for (const MeasuredPoint& p : set.points) point_server_.push_back(workload_index(workloads_, p.workload_path));
    for (const std::string& w : workloads_)
      servers_.push_back(std::make_unique<WorkloadServer>(options.podsim_binary, w));
  }

  // Rows of every point for each parameter vector (unit coordinates).
  std::vector<std::vector<CalibrationRow>> rows(const std::vector<std::vector<double>>& units) {
    std::vector<std::string> keys;
    std::vector<HardwareVariant> missing;
    for (const auto& u : units) {
      HardwareVariant v = variant_of(u);
      std::string key = key_of(v);
      keys.push_back(key);
      if (!cache_.contains(key) &&
          std::none_of(missing.begin(), missing.end(), [&](const HardwareVariant& m) { return key_of(m) == key; }))
        missing.push_back(v);
    }
    simulate(missing);
    std::vector<std::vector<CalibrationRow>> out;
    for (const std::string& key : keys) {
      const std::vector<JobOutcome>& outcomes = cache_.at(key);
      std::vector<CalibrationRow> rows;
      for (size_t p = 0; p < set_.points.size(); ++p)
        rows.push_back(calibration_row(set_.points[p], outcomes[point_server_[p]]));
      out.push_back(std::move(rows));
    }
    return out;
  }

  // The checks whose workload is a point's, at one parameter vector (others
  // would need a server of their own).
  std::vector<CheckRow> checks(const std::vector<double>& u) {
    const std::string key = key_of(variant_of(u));
    if (!cache_.contains(key)) rows({u});
    std::vector<CheckRow> out;
    for (const MeasuredCheck& c : set_.checks) {
      auto it = std::find(workloads_.begin(), workloads_.end(), c.workload_path);
      if (it != workloads_.end()) out.push_back(check_row(c, cache_.at(key)[static_cast<size_t>(it - workloads_.begin())]));
    }
    return out;
  }

  int variants_simulated() const { return static_cast<int>(cache_.size()); }

  std::function<void()> on_batch;  // after each batch of new variants

 private:
  HardwareVariant variant_of(const std::vector<double>& u) const {
    HardwareVariant v;
    for (size_t k = 0; k < set_.fit.size(); ++k)
      v.emplace_back(set_.fit[k].key, fmt::format("{:.6g}", fit_value_at(set_.fit[k], u[k])));
    return v;
  }

  static std::string key_of(const HardwareVariant& v) {
    std::string key;
    for (const auto& [k, value] : v) key += k + "=" + value + " ";
    return key;
  }

  // All servers work at the same time (they are alive anyway, and a fast
  // workload's server does not wait for a slow one's): each gets a chunk of
  // variants queued in its socket, then the answers are read. A chunk's
  // requests (a few kB) always fit the socket buffer, so a server blocked on
  // writing answers the caller has not read yet never blocks the caller's
  // sends.
  void simulate(const std::vector<HardwareVariant>& variants) {
    if (variants.empty()) return;
    constexpr size_t kChunk = 16;
    std::vector<std::vector<JobOutcome>> outcomes(servers_.size());
    for (size_t first = 0; first < variants.size(); first += kChunk) {
      const size_t last = std::min(variants.size(), first + kChunk);
      for (auto& server : servers_)
        for (size_t i = first; i < last; ++i) server->send(variants[i]);
      for (size_t s = 0; s < servers_.size(); ++s)
        for (size_t i = first; i < last; ++i) outcomes[s].push_back(servers_[s]->receive());
    }
    for (size_t i = 0; i < variants.size(); ++i) {
      std::vector<JobOutcome> per_server;
      for (auto& o : outcomes) per_server.push_back(std::move(o[i]));
      cache_.emplace(key_of(variants[i]), std::move(per_server));
    }
    if (on_batch) on_batch();
  }

  const MeasuredSet& set_;
  std::vector<std::string> workloads_;
  std::vector<size_t> point_server_;  // per point: index into workloads_ / servers_
  std::vector<std::unique_ptr<WorkloadServer>> servers_;
  std::map<std::string, std::vector<JobOutcome>> cache_;  // variant -> per server
};

// The preset value of a fitted key, the same in every point's hardware.
double preset_value(const MeasuredSet& set, const FitParameter& p) {
  double value = NAN;
  std::string first_workload;
  for (const MeasuredPoint& point : set.points) {
    const hw::HardwareConfig hardware = workload_hardware(workloads::load_workload(point.workload_path));
    const std::string text = hw::hardware_value_text(hardware, p.key);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(v))
      throw UserError(SourceLocation{set.file, 0, 0}, fmt::format("'{}' is '{}', not a number to fit", p.key, text),
                      "fit numeric hardware keys (rates, latencies, efficiencies, cycle counts)");
    if (std::isnan(value)) {
      value = v;
      first_workload = point.workload;
    } else if (v != value) {
      throw UserError(SourceLocation{set.file, 0, 0},
                      fmt::format("'{}' is {:g} in the hardware of {} but {:g} in that of {}", p.key, value,
                                  first_workload, v, point.workload),
                      "a fit sets one value for every config: fit points that share the parameter");
    }
  }
  return value;
}

std::string percent(double relative) { return fmt::format("{:+.1f}%", 100 * relative); }

std::string row_cells(const CalibrationRow& r) {
  if (!r.ok) return "failed | -";
  return fmt::format("{} | {}", value_text(r.predicted), percent(r.relative_error));
}

std::string check_cell(const CheckRow& r) {
  return r.ok ? fmt::format("{}, {}", value_text(r.predicted), check_verdict(r)) : "failed";
}

struct Summary {
  int ran = 0, within = 0;
  double mean_abs = 0;
};

template <class RowOf>
Summary summarize_rows(const std::vector<FitPointRow>& points, RowOf row_of) {
  Summary s;
  for (const FitPointRow& p : points) {
    const CalibrationRow* r = row_of(p);
    if (!r || !r->ok || !r->point.inconsistent.empty()) continue;
    ++s.ran;
    s.mean_abs += std::abs(r->relative_error);
    if (std::abs(r->relative_error) <= kCalibrationTolerance) ++s.within;
  }
  if (s.ran > 0) s.mean_abs /= s.ran;
  return s;
}

}  // namespace

double fit_value_at(const FitParameter& p, double u) { return p.low * std::pow(p.high / p.low, clamp_unit(u)); }

double fit_unit_of(const FitParameter& p, double value) {
  return clamp_unit(std::log(std::clamp(value, p.low, p.high) / p.low) / std::log(p.high / p.low));
}

CompassSearchResult compass_search(const BatchObjective& evaluate, std::vector<double> start, double step,
                                   double min_step, int max_evaluations) {
  CompassSearchResult result;
  for (double& u : start) u = clamp_unit(u);
  result.best = start;
  result.value = evaluate({start}).at(0);
  result.evaluations = 1;
  while (step >= min_step && result.evaluations < max_evaluations && !start.empty()) {
    std::vector<std::vector<double>> polls;
    for (size_t k = 0; k < result.best.size(); ++k)
      for (double sign : {-1.0, 1.0}) {
        std::vector<double> y = result.best;
        y[k] = clamp_unit(y[k] + sign * step);
        if (y != result.best && std::find(polls.begin(), polls.end(), y) == polls.end()) polls.push_back(y);
      }
    std::vector<double> values = evaluate(polls);
    result.evaluations += static_cast<int>(polls.size());
    ++result.iterations;
    size_t best = 0;
    for (size_t i = 1; i < values.size(); ++i)
      if (values[i] < values[best]) best = i;
    // Sufficient decrease: a relative 1e-9 below the incumbent, so rounding
    // noise does not keep the step from shrinking.
    if (!values.empty() && values[best] < result.value - 1e-9 * std::max(1.0, std::abs(result.value))) {
      result.best = polls[best];
      result.value = values[best];
    } else {
      step /= 2;
    }
  }
  return result;
}

FitResult fit_calibration(const MeasuredSet& set, const FitOptions& options) {
  if (set.fit.empty())
    throw UserError(SourceLocation{set.file, 0, 0}, "the measured-numbers file lists no parameter under 'fit:'",
                    "add fit: - key: core.op_overhead_s, range: [low, high], why: ...");
  const size_t n = set.fit.size();
  FitResult result;
  std::vector<double> start(n);
  for (size_t k = 0; k < n; ++k) {
    result.preset_values.push_back(preset_value(set, set.fit[k]));
    start[k] = fit_unit_of(set.fit[k], result.preset_values[k]);
    result.start_values.push_back(fit_value_at(set.fit[k], start[k]));
  }

  FitEvaluator evaluator(set, options);
  const int searches = 1 + (options.leave_one_out ? static_cast<int>(set.points.size()) : 0);
  int done = 0;  // searches finished
  result.searches_planned = searches;
  auto search_done = [&] {
    ++done;
    result.searches = done;
    result.variants_simulated = evaluator.variants_simulated();
    if (options.on_search_done) options.on_search_done(result);
  };
  evaluator.on_batch = [&] {
    if (options.on_progress)
      options.on_progress(fmt::format("fit: {} of {} searches done, {} variants simulated", done, searches,
                                      evaluator.variants_simulated()));
  };

  // The preset, then each parameter alone at its range's ends.
  std::vector<std::vector<double>> probes{start};
  for (size_t k = 0; k < n; ++k)
    for (double end : {0.0, 1.0}) {
      probes.push_back(start);
      probes.back()[k] = end;
    }
  std::vector<std::vector<CalibrationRow>> probe_rows = evaluator.rows(probes);
  const std::vector<CalibrationRow>& at_start = probe_rows[0];
  for (size_t k = 0; k < n; ++k) {
    FitSensitivity s;
    for (size_t i = 0; i < set.points.size(); ++i) {
      auto relative = [&](const CalibrationRow& r) {
        return r.ok && at_start[i].ok ? r.predicted / at_start[i].predicted - 1 : NAN;
      };
      s.at_low.push_back(relative(probe_rows[1 + 2 * k][i]));
      s.at_high.push_back(relative(probe_rows[2 + 2 * k][i]));
    }
    result.sensitivity.push_back(std::move(s));
  }

  // Points that fail at the preset, or are marked inconsistent, stay out of
  // every fit (their rows say why).
  std::vector<bool> ran(set.points.size());
  for (size_t i = 0; i < set.points.size(); ++i) ran[i] = at_start[i].ok && set.points[i].inconsistent.empty();
  auto search = [&](const std::vector<bool>& use) {
    BatchObjective f = [&](const std::vector<std::vector<double>>& units) {
      std::vector<double> values;
      for (const auto& rows : evaluator.rows(units)) values.push_back(objective(rows, use));
      return values;
    };
    return compass_search(f, start, 0.25, options.min_step, options.max_evaluations);
  };

  CompassSearchResult all = search(ran);
  const std::vector<CalibrationRow> fitted_rows = evaluator.rows({all.best})[0];
  for (size_t k = 0; k < n; ++k) result.fitted_values.push_back(fit_value_at(set.fit[k], all.best[k]));
  result.checks_start = evaluator.checks(start);
  result.checks_fitted = evaluator.checks(all.best);
  result.start_objective = objective(at_start, ran);
  result.fitted_objective = all.value;
  for (size_t i = 0; i < set.points.size(); ++i) {
    FitPointRow row;
    row.start = at_start[i];
    row.fitted = fitted_rows[i];
    result.points.push_back(std::move(row));
  }
  search_done();

  if (options.leave_one_out) {
    for (size_t i = 0; i < set.points.size(); ++i) {
      std::vector<bool> others = ran;
      others[i] = false;
      if (!ran[i] || std::none_of(others.begin(), others.end(), [](bool b) { return b; })) {
        search_done();
        continue;
      }
      CompassSearchResult loo = search(others);
      FitPointRow& row = result.points[i];
      row.left_out_ran = true;
      row.left_out = evaluator.rows({loo.best})[0][i];
      for (size_t k = 0; k < n; ++k) row.left_out_values.push_back(fit_value_at(set.fit[k], loo.best[k]));
      search_done();
    }
  }
  result.searches = done;
  result.variants_simulated = evaluator.variants_simulated();
  return result;
}

std::string fit_markdown(const MeasuredSet& set, const FitResult& r) {
  std::string out = "# Calibration fit: what the measurements ask of the physical parameters\n\n";
  if (r.searches < r.searches_planned)
    out += fmt::format("**Partial**: {} of {} searches done (the fit is running or was stopped); a left-out "
                       "column of `-` has not run yet.\n\n",
                       r.searches, r.searches_planned);
  out += "Generated by `podsim calibrate --fit -o docs/calibration-fit.md` (fast fidelity) from\n";
  out += fmt::format("`{}`. The fit moves only the hardware parameters listed under `fit:` there,\n",
                     std::filesystem::path(set.file).filename().string());
  out += "each within the range physics allows, one value for every config (no per-workload factor), to\n";
  out += "minimise the mean |ln(predicted / measured)| (compass search, Kolda, Lewis & Torczon 2003, steps\n";
  out += "in ratios of the range). *Left out*: each config predicted by a fit to the other configs only,\n";
  out += "i.e. what the fitted model is worth on a configuration it was not tuned on. The presets are\n";
  out += "not changed by this command.\n\n";

  out += "## Parameters\n\n| parameter | range | preset | fitted on all configs | why this range |\n|---|---|---|---|---|\n";
  for (size_t k = 0; k < set.fit.size(); ++k) {
    const FitParameter& p = set.fit[k];
    // A preset outside the range starts the search at the nearer end.
    const bool inside = r.preset_values[k] >= p.low && r.preset_values[k] <= p.high;
    const std::string preset = inside ? fmt::format("{:g}", r.preset_values[k])
                                      : fmt::format("{:g} (start {:g})", r.preset_values[k], r.start_values[k]);
    out += fmt::format("| `{}` | {:g} to {:g} | {} | {:.3g} | {} |\n", p.key, p.low, p.high, preset,
                       r.fitted_values[k], p.why);
  }

  out += "\n## Predictions\n\n";
  out += "| config | measured | preset | error | fitted | error | left out | error |\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  for (const FitPointRow& p : r.points) {
    out += fmt::format("| {} | {} | {} | {} | {} |\n", p.start.point.config, value_text(p.start.point.measured),
                       row_cells(p.start),
                       row_cells(p.fitted), p.left_out_ran ? row_cells(p.left_out) : "- | -");
  }
  auto line = [&](const char* what, const Summary& s) {
    return fmt::format("- {}: mean |error| {:.1f}% over {} configs, {} within {:.0f}%\n", what, 100 * s.mean_abs,
                       s.ran, s.within, 100 * kCalibrationTolerance);
  };
  out += "\n";
  out += line("preset", summarize_rows(r.points, [](const FitPointRow& p) { return &p.start; }));
  out += line("fitted on all configs", summarize_rows(r.points, [](const FitPointRow& p) { return &p.fitted; }));
  out += line("left out (each predicted by a fit to the others)",
              summarize_rows(r.points, [](const FitPointRow& p) { return p.left_out_ran ? &p.left_out : nullptr; }));
  out += fmt::format("- objective (mean |ln(predicted / measured)|): preset {:.4f}, fitted {:.4f}; {} variants "
                     "simulated in {} searches\n",
                     r.start_objective, r.fitted_objective, r.variants_simulated, r.searches);

  if (!r.checks_start.empty()) {
    out += "\n## Other measured numbers, not fitted\n\n";
    out += "The checks of the measured-numbers file on the configs above (docs/calibration.md), at the\n";
    out += "preset and at the values fitted on all configs: a fit that meets the throughputs by moving a\n";
    out += "number it should not shows here.\n\n";
    out += "| config | quantity | measured | preset | fitted |\n|---|---|---|---|---|\n";
    for (size_t i = 0; i < r.checks_start.size() && i < r.checks_fitted.size(); ++i) {
      const MeasuredCheck& c = r.checks_start[i].check;
      out += fmt::format("| {} | {} | {} | {} | {} |\n", c.config, c.quantity, measured_text(c),
                         check_cell(r.checks_start[i]), check_cell(r.checks_fitted[i]));
    }
  }

  out += "\n## Pull of each parameter\n\n";
  out += "Change of each config's prediction with one parameter at the low / high end of its range and the\n";
  out += "others at the preset. A parameter that moves every config alike cannot close a gap between them.\n\n";
  out += "| parameter |";
  std::string rule = "|---|";
  for (const FitPointRow& p : r.points) {
    out += fmt::format(" {} |", p.start.point.config);
    rule += "---|";
  }
  out += "\n" + rule + "\n";
  auto cell = [](double v) { return std::isnan(v) ? std::string("failed") : percent(v); };
  for (size_t k = 0; k < set.fit.size(); ++k) {
    out += fmt::format("| `{}` |", set.fit[k].key);
    for (size_t i = 0; i < r.points.size(); ++i)
      out += fmt::format(" {} / {} |", cell(r.sensitivity[k].at_low[i]), cell(r.sensitivity[k].at_high[i]));
    out += "\n";
  }

  bool any_left_out = std::any_of(r.points.begin(), r.points.end(), [](const FitPointRow& p) { return p.left_out_ran; });
  if (any_left_out) {
    out += "\n## Values fitted without each config\n\n| left out |";
    std::string loo_rule = "|---|";
    for (const FitParameter& p : set.fit) {
      out += fmt::format(" `{}` |", p.key);
      loo_rule += "---|";
    }
    out += "\n" + loo_rule + "\n";
    for (const FitPointRow& p : r.points) {
      if (!p.left_out_ran) continue;
      out += fmt::format("| {} |", p.start.point.config);
      for (double v : p.left_out_values) out += fmt::format(" {:.3g} |", v);
      out += "\n";
    }
  }
  return out;
}

}  // namespace podsim::studies
