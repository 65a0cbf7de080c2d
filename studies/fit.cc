// Fitting the physical parameters of the hardware model to the measured
// numbers, with leave-one-out (studies/fit.h).
#include "studies/fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>

#include "common/error.h"
#include "driver/run_workload.h"
#include "driver/workload_server.h"

namespace podsim::studies {

using driver::HardwareVariant;
using driver::JobOutcome;
using driver::workload_hardware;
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
    for (const MeasuredPoint& p : set.points)
      point_server_.push_back(workload_index(workloads_, p.workload_path));
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
          std::none_of(missing.begin(), missing.end(),
                       [&](const HardwareVariant& m) { return key_of(m) == key; }))
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
      if (it != workloads_.end())
        out.push_back(check_row(c, cache_.at(key)[static_cast<size_t>(it - workloads_.begin())]));
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
    const hw::HardwareConfig hardware =
        workload_hardware(workloads::load_workload(point.workload_path));
    const std::string text = hw::hardware_value_text(hardware, p.key);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(v))
      throw UserError(SourceLocation{set.file, 0, 0},
                      fmt::format("'{}' is '{}', not a number to fit", p.key, text),
                      "fit numeric hardware keys (rates, latencies, efficiencies, cycle counts)");
    if (std::isnan(value)) {
      value = v;
      first_workload = point.workload;
    } else if (v != value) {
      throw UserError(SourceLocation{set.file, 0, 0},
                      fmt::format("'{}' is {:g} in the hardware of {} but {:g} in that of {}",
                                  p.key, value, first_workload, v, point.workload),
                      "a fit sets one value for every config: fit points that share the parameter");
    }
  }
  return value;
}

}  // namespace

double fit_value_at(const FitParameter& p, double u) {
  return p.low * std::pow(p.high / p.low, clamp_unit(u));
}

double fit_unit_of(const FitParameter& p, double value) {
  return clamp_unit(std::log(std::clamp(value, p.low, p.high) / p.low) / std::log(p.high / p.low));
}

FitResult fit_calibration(const MeasuredSet& set, const FitOptions& options) {
  if (set.fit.empty())
    throw UserError(SourceLocation{set.file, 0, 0},
                    "the measured-numbers file lists no parameter under 'fit:'",
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
  result.max_evaluations = options.max_evaluations;
  auto search_done = [&] {
    ++done;
    result.searches = done;
    result.variants_simulated = evaluator.variants_simulated();
    if (options.on_search_done) options.on_search_done(result);
  };
  evaluator.on_batch = [&] {
    if (options.on_progress)
      options.on_progress(fmt::format("fit: {} of {} searches done, {} variants simulated", done,
                                      searches, evaluator.variants_simulated()));
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
  for (size_t i = 0; i < set.points.size(); ++i)
    ran[i] = at_start[i].ok && set.points[i].inconsistent.empty();
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
  for (size_t k = 0; k < n; ++k)
    result.fitted_values.push_back(fit_value_at(set.fit[k], all.best[k]));
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
      for (size_t k = 0; k < n; ++k)
        row.left_out_values.push_back(fit_value_at(set.fit[k], loo.best[k]));
      search_done();
    }
  }
  result.searches = done;
  result.variants_simulated = evaluator.variants_simulated();
  return result;
}

}  // namespace podsim::studies
