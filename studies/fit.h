// `podsim calibrate --fit` ("calibrate only physically meaningful
// parameters ... the model must predict configurations it was not tuned
// on"). The measured-numbers file lists the hardware parameters that may be
// fitted, each with the range physics allows and why:
//   fit:
//     - key: core.op_overhead_s        # a hardware key (podsim hardware show)
//       range: [0.2e-6, 5e-6]
//       why: "fixed issue cost of one fused kernel: ..."
// The fit searches those parameters, one set for every point (never per
// workload), to minimise the mean |ln(predicted / measured)| over the points;
// then, for each point, it fits again without that point and predicts it
// (leave-one-out), which is what the fitted model is worth on a
// configuration it was not tuned on. It also reports each parameter's pull
// on each point (prediction at the range's ends). The fit only reports: the
// presets change by hand, with the evidence.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "studies/calibration.h"
#include "studies/compass_search.h"

namespace podsim::studies {

// A parameter's value at unit coordinate u: low * (high/low)^u (the ranges
// span decades, so the search steps in ratios), and back.
double fit_value_at(const FitParameter& p, double u);
double fit_unit_of(const FitParameter& p, double value);

struct FitResult;

struct FitOptions {
  std::string podsim_binary;  // one `podsim run --serve` child per workload, all at work at once
  double min_step = 1.0 / 64;
  int max_evaluations = 400;  // per search
  bool leave_one_out = true;
  // One line of news now and then ("fit: 3 of 6 searches, 120 variants").
  std::function<void(const std::string&)> on_progress;
  // After each search (the fit on all points first, then each left-out
  // one): the result so far (searches_planned > searches while partial), to
  // show an ETA and to write what is known before the fit ends or is stopped.
  std::function<void(const FitResult&)> on_search_done;
};

struct FitPointRow {
  CalibrationRow start;   // at the preset's values
  CalibrationRow fitted;  // at the values fitted on all points
  bool left_out_ran = false;
  CalibrationRow left_out;              // at the values fitted without this point
  std::vector<double> left_out_values;  // those values
};

// Prediction of each point with one parameter at its range's low / high end
// and the others at the preset's values, relative to the preset's
// prediction (NaN when a run failed).
struct FitSensitivity {
  std::vector<double> at_low;   // per point
  std::vector<double> at_high;  // per point
};

struct FitResult {
  std::vector<double> start_values;   // per parameter: the preset's (clamped into the range)
  std::vector<double> preset_values;  // per parameter: as the preset says
  std::vector<double> fitted_values;
  double start_objective = 0;  // mean |ln(predicted / measured)| over the points that ran
  double fitted_objective = 0;
  std::vector<FitPointRow> points;
  std::vector<FitSensitivity> sensitivity;  // per parameter
  // The set's checks on a point's workload (the fit does not aim at them),
  // at the preset and at the values fitted on all points.
  std::vector<CheckRow> checks_start;
  std::vector<CheckRow> checks_fitted;
  int variants_simulated = 0;  // distinct parameter sets
  int searches = 0;
  int searches_planned = 0;  // searches > 0 and < searches_planned: a partial result
  int max_evaluations = 0;   // the search limit it ran with (FitOptions)
};

// UserError when the set has no `fit:` list.
FitResult fit_calibration(const MeasuredSet& set, const FitOptions& options);

}  // namespace podsim::studies
