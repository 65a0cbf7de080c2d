// The markdown pages of `podsim calibrate` and `podsim calibrate --fit`
// (studies/calibration_markdown.h).
#include "studies/calibration_markdown.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace podsim::studies {

namespace {

std::string without_pipes(std::string text) {
  for (char& c : text)
    if (c == '|') c = '/';
  return text;
}

std::string checks_markdown(const std::vector<CheckRow>& checks) {
  std::string out = "\n## Other measured numbers\n\n";
  out +=
      "The other numbers the sources give (docs/reference/measurements.md), each a field of the "
      "run's report (`podsim run --format csv`;\n";
  out +=
      "\"/ step\" divides it by the step time). A value holds within the same 15%, a bound or "
      "range when met.\n\n";
  out +=
      "| config | quantity | report field | measured | predicted | verdict "
      "|\n|---|---|---|---|---|---|\n";
  int held = 0, ran = 0, counted = 0;
  for (const CheckRow& r : checks) {
    const MeasuredCheck& c = r.check;
    std::string field = fmt::format("`{}`{}", c.field, c.per_step ? " / step" : "");
    if (!r.ok) {
      out +=
          fmt::format("| {} | {} | {} | {} | failed | {} |\n", c.config, without_pipes(c.quantity),
                      field, measured_text(c), without_pipes(r.error));
      continue;
    }
    ++ran;
    const std::string verdict =
        c.chose.empty()
            ? check_verdict(r)
            : fmt::format("{}; chose {}, not counted", check_verdict(r), without_pipes(c.chose));
    if (c.chose.empty()) {
      ++counted;
      if (r.holds) ++held;
    }
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", c.config, without_pipes(c.quantity),
                       field, measured_text(c), value_text(r.predicted), verdict);
  }
  out += fmt::format(
      "\n{} of {} checks ran; {} of the {} independent ones hold (a check that chose a parameter "
      "is shown, not counted).\n",
      ran, checks.size(), held, counted);
  return out;
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
    if (std::abs(r->relative_error) <= kCalibrationRowLimit) ++s.within;
  }
  if (s.ran > 0) s.mean_abs /= s.ran;
  return s;
}

}  // namespace

std::string measured_text(const MeasuredCheck& c) {
  switch (c.kind) {
    case MeasuredCheck::Kind::kValue:
      return value_text(c.measured);
    case MeasuredCheck::Kind::kAtLeast:
      return ">= " + value_text(c.measured);
    case MeasuredCheck::Kind::kRange:
      return fmt::format("{} to {}", value_text(c.low), value_text(c.high));
  }
  return "";
}

std::string check_verdict(const CheckRow& r) {
  if (!r.ok) return "failed";
  if (r.check.kind == MeasuredCheck::Kind::kValue)
    return fmt::format("{:+.1f}%{}", 100 * r.relative_error, r.holds ? "" : " (outside 15%)");
  return r.holds ? "holds" : "does not hold";
}

namespace {

// The published TFLOP/s rows in their tables' own units (flop_rules.h).
std::string published_markdown(const std::vector<CalibrationRow>& rows) {
  std::string out;
  for (const CalibrationRow& r : rows) {
    if (!r.point.published) continue;
    const PublishedThroughput& t = *r.point.published;
    if (out.empty())
      out =
          "\nRows from published TFLOP/s-per-chip tables: each table counted model FLOPs by its "
          "own "
          "rule (docs/reference/measurements.md#flop-rules); measured tokens/s = TFLOP/s x chips / "
          "FLOPs per token, and podsim's tokens/s is turned back into the table's units.\n\n"
          "| config | FLOP rule | FLOPs per token | chips | TFLOP/s per chip measured | "
          "predicted | MFU measured | predicted |\n|---|---|---|---|---|---|---|---|\n";
    out += fmt::format("| {} | {} | {:.4g} | {} | {} | {} | {:.1f}% | {} |\n", r.point.config,
                       flop_rule_names().name(t.rule), t.flops_per_token, t.chips,
                       value_text(t.tflops_per_chip),
                       r.ok ? value_text(r.predicted_tflops_per_chip) : "failed", 100 * t.mfu,
                       r.ok ? fmt::format("{:.1f}%", 100 * r.predicted_published_mfu) : "failed");
  }
  return out;
}

// Where each row's step goes in podsim (shares of its step), HFU, and the
// peak memory against the device's HBM: the measured runs all fit.
std::string time_split_markdown(const std::vector<CalibrationRow>& rows) {
  std::string out =
      "\n## Where the time goes\n\nEach row's step as podsim splits it (shares of the step; "
      "`podsim run W.yaml` prints the same split with the ops behind it). HFU counts every "
      "executed FLOP (recomputation included); \"measured HFU\" is podsim's HFU / (1 + "
      "error), what the measured throughput implies if podsim's FLOP count is right.\n\n"
      "| config | hardware | MXU-bound | VPU-bound | memory-bound | exposed comm | forward / "
      "recompute / backward | HFU | measured HFU | peak memory / HBM |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  auto pct = [](double v) { return fmt::format("{:.0f}%", 100 * v); };
  for (const CalibrationRow& r : rows) {
    if (!r.ok) continue;
    const TimeSplit& t = r.split;
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} / {} / {} | {:.1f}% | {:.1f}% | {:.1f} / {:.1f} GiB "
        "|\n",
        r.point.config, t.hardware, pct(t.mxu_bound), pct(t.vpu_bound), pct(t.memory_bound),
        pct(t.exposed_communication), pct(t.forward), pct(t.recompute), pct(t.backward),
        100 * t.hfu, 100 * t.hfu / (1 + r.relative_error), t.peak_memory_bytes / (1 << 30),
        t.hbm_capacity_bytes / (1 << 30));
  }
  return out;
}

// The rows by hardware generation: how many, how many within the row bar,
// their mean |error| and signed range, and each generation's share of the
// mean |error| over all target rows (its summed |error| / all target rows).
std::string by_generation_markdown(const std::vector<CalibrationRow>& rows) {
  struct Generation {
    std::string hardware;
    int rows = 0, within = 0;
    double abs_sum = 0, low = 0, high = 0;
  };
  std::vector<Generation> generations;
  int targets = 0;
  for (const CalibrationRow& r : rows) {
    if (!r.ok || !r.point.inconsistent.empty()) continue;
    ++targets;
    auto it = std::find_if(generations.begin(), generations.end(),
                           [&](const Generation& g) { return g.hardware == r.split.hardware; });
    if (it == generations.end()) {
      generations.push_back({r.split.hardware, 0, 0, 0, r.relative_error, r.relative_error});
      it = std::prev(generations.end());
    }
    ++it->rows;
    it->abs_sum += std::abs(r.relative_error);
    if (std::abs(r.relative_error) <= kCalibrationRowLimit) ++it->within;
    it->low = std::min(it->low, r.relative_error);
    it->high = std::max(it->high, r.relative_error);
  }
  if (generations.size() < 2) return "";
  std::string out = fmt::format(
      "\nBy generation (the target rows above; \"share of the mean\" is the generation's summed "
      "|error| over all {} target rows, so the shares add up to the mean |error|):\n\n"
      "| hardware | rows | within {:.0f}% | mean absolute error | errors from .. to | share of "
      "the mean "
      "|\n|---|---|---|---|---|---|\n",
      targets, 100 * kCalibrationRowLimit);
  for (const Generation& g : generations)
    out += fmt::format("| {} | {} | {} | {:.1f}% | {} .. {} | {:.1f} points |\n", g.hardware, g.rows,
                       g.within, 100 * g.abs_sum / g.rows, percent(g.low), percent(g.high),
                       100 * g.abs_sum / targets);
  return out;
}

}  // namespace

std::string value_text(double v) {
  return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
}

std::string calibration_markdown(const MeasuredSet& set, const std::vector<CalibrationRow>& rows,
                                 const std::vector<CheckRow>& checks) {
  std::string out = "# Calibration: podsim vs measured\n\n";
  out += "Generated by `podsim calibrate -o docs/calibration.md` (fast fidelity) from\n";
  out += fmt::format("`{}`{}. Error = predicted / measured - 1. No per-workload factor is tuned:\n",
                     std::filesystem::path(set.file).filename().string(),
                     set.source.empty() ? "" : " (" + set.source + ")");
  out += "the table only reports what the models predict.\n\n";
  out += "| config | workload | metric | measured | predicted | error | step time (s) | MFU |\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  double abs_sum = 0;
  int ran = 0, within = 0, targets = 0;
  for (const CalibrationRow& r : rows) {
    std::string workload = std::filesystem::path(r.point.workload).filename().string();
    const bool target = r.point.inconsistent.empty();
    const std::string config =
        target ? r.point.config : r.point.config + " (inconsistent, not a target)";
    if (target) ++targets;
    if (r.ok) {
      if (target) {
        abs_sum += std::abs(r.relative_error);
        ++ran;
        if (std::abs(r.relative_error) <= kCalibrationRowLimit) ++within;
      }
      out +=
          fmt::format("| {} | {} | {} | {} | {} | {:+.1f}% | {:.3f} | {:.1f}% |\n", config,
                      workload, r.point.metric, value_text(r.point.measured),
                      value_text(r.predicted), 100 * r.relative_error, r.step_time_s, 100 * r.mfu);
    } else {
      out += fmt::format("| {} | {} | {} | {} | failed | - | - | - |\n", r.point.config, workload,
                         r.point.metric, value_text(r.point.measured));
    }
  }
  out += fmt::format("\n{} of {} calibration configs ran", ran, targets);
  if (ran > 0)
    out +=
        fmt::format("; mean |error| over them {:.1f}% (the bar: {:.0f}%); {} of {} within {:.0f}%",
                    100 * abs_sum / ran, 100 * kCalibrationMeanLimit, within, targets,
                    100 * kCalibrationRowLimit);
  out += ".\n";
  out += by_generation_markdown(rows);
  out += published_markdown(rows);
  out += time_split_markdown(rows);
  bool listed = false;
  for (const CalibrationRow& r : rows) {
    if (r.point.inconsistent.empty()) continue;
    if (!listed) out += "\nOutside the statistics (measurements their own source contradicts):\n\n";
    listed = true;
    out += fmt::format("- {}: {}\n", r.point.config, without_pipes(r.point.inconsistent));
  }
  bool header = false;
  for (const CalibrationRow& r : rows) {
    if (r.ok) continue;
    if (!header) out += "\nFailed runs (reported, not hidden):\n\n";
    header = true;
    out += fmt::format("- {}: {}\n", r.point.config, without_pipes(r.error));
  }
  if (!checks.empty()) out += checks_markdown(checks);
  if (!set.notes.empty())
    out += "\n## Notes\n\n" + set.notes + (set.notes.back() == '\n' ? "" : "\n");
  return out;
}

std::string fit_markdown(const MeasuredSet& set, const FitResult& r) {
  std::string out = "# Calibration fit: what the measurements ask of the physical parameters\n\n";
  if (r.searches < r.searches_planned)
    out += fmt::format(
        "**Partial**: {} of {} searches done (the fit is running or was stopped); a left-out "
        "column of `-` has not run yet.\n\n",
        r.searches, r.searches_planned);
  const std::string limit =
      r.max_evaluations > 0 && r.max_evaluations != FitOptions{}.max_evaluations
          ? fmt::format(" --max-evaluations {}", r.max_evaluations)
          : "";
  out += fmt::format(
      "Generated by `podsim calibrate --fit{} -o docs/calibration-fit.md` (fast fidelity) from\n",
      limit);
  out +=
      fmt::format("`{}`. The fit moves only the hardware parameters listed under `fit:` there,\n",
                  std::filesystem::path(set.file).filename().string());
  out +=
      "each within the range physics allows, one value for every config (no per-workload factor), "
      "to\n";
  out +=
      "minimise the mean |ln(predicted / measured)| (compass search, Kolda, Lewis & Torczon 2003, "
      "steps\n";
  out +=
      "in ratios of the range). *Left out*: each config predicted by a fit to the other configs "
      "only,\n";
  out +=
      "i.e. what the fitted model is worth on a configuration it was not tuned on. The presets "
      "are\n";
  out += "not changed by this command.\n\n";

  out +=
      "## Parameters\n\n| parameter | range | preset | fitted on all configs | why this range "
      "|\n|---|---|---|---|---|\n";
  for (size_t k = 0; k < set.fit.size(); ++k) {
    const FitParameter& p = set.fit[k];
    // A preset outside the range starts the search at the nearer end.
    const bool inside = r.preset_values[k] >= p.low && r.preset_values[k] <= p.high;
    const std::string preset =
        inside ? fmt::format("{:g}", r.preset_values[k])
               : fmt::format("{:g} (start {:g})", r.preset_values[k], r.start_values[k]);
    out += fmt::format("| `{}` | {:g} to {:g} | {} | {:.3g} | {} |\n", p.key, p.low, p.high, preset,
                       r.fitted_values[k], p.why);
  }

  out += "\n## Predictions\n\n";
  out += "| config | measured | preset | error | fitted | error | left out | error |\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  for (const FitPointRow& p : r.points) {
    out += fmt::format("| {} | {} | {} | {} | {} |\n", p.start.point.config,
                       value_text(p.start.point.measured), row_cells(p.start), row_cells(p.fitted),
                       p.left_out_ran ? row_cells(p.left_out) : "- | -");
  }
  auto line = [&](const char* what, const Summary& s) {
    return fmt::format("- {}: mean |error| {:.1f}% over {} configs, {} within {:.0f}%\n", what,
                       100 * s.mean_abs, s.ran, s.within, 100 * kCalibrationRowLimit);
  };
  out += "\n";
  out += line("preset", summarize_rows(r.points, [](const FitPointRow& p) { return &p.start; }));
  out += line("fitted on all configs",
              summarize_rows(r.points, [](const FitPointRow& p) { return &p.fitted; }));
  out += line("left out (each predicted by a fit to the others)",
              summarize_rows(r.points, [](const FitPointRow& p) {
                return p.left_out_ran ? &p.left_out : nullptr;
              }));
  out += fmt::format(
      "- objective (mean |ln(predicted / measured)|): preset {:.4f}, fitted {:.4f}; {} variants "
      "simulated in {} searches\n",
      r.start_objective, r.fitted_objective, r.variants_simulated, r.searches);

  if (!r.checks_start.empty()) {
    out += "\n## Other measured numbers, not fitted\n\n";
    out +=
        "The checks of the measured-numbers file on the configs above (docs/calibration.md), at "
        "the\n";
    out +=
        "preset and at the values fitted on all configs: a fit that meets the throughputs by "
        "moving a\n";
    out += "number it should not shows here.\n\n";
    out += "| config | quantity | measured | preset | fitted |\n|---|---|---|---|---|\n";
    for (size_t i = 0; i < r.checks_start.size() && i < r.checks_fitted.size(); ++i) {
      const MeasuredCheck& c = r.checks_start[i].check;
      out += fmt::format("| {} | {} | {} | {} | {} |\n", c.config, c.quantity, measured_text(c),
                         check_cell(r.checks_start[i]), check_cell(r.checks_fitted[i]));
    }
  }

  out += "\n## Pull of each parameter\n\n";
  out +=
      "Change of each config's prediction with one parameter at the low / high end of its range "
      "and the\n";
  out +=
      "others at the preset. A parameter that moves every config alike cannot close a gap between "
      "them.\n\n";
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
      out += fmt::format(" {} / {} |", cell(r.sensitivity[k].at_low[i]),
                         cell(r.sensitivity[k].at_high[i]));
    out += "\n";
  }

  bool any_left_out = std::any_of(r.points.begin(), r.points.end(),
                                  [](const FitPointRow& p) { return p.left_out_ran; });
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
