// The markdown pages of `podsim calibrate` (docs/calibration.md) and
// `podsim calibrate --fit` (docs/calibration-fit.md), and their table cells.
#pragma once

#include <string>
#include <vector>

#include "studies/calibration.h"
#include "studies/fit.h"

namespace podsim::studies {

// Table cells: "0.28", ">= 0.85", "0.5 to 0.62"; "-5.6% (outside 15%)",
// "holds", "does not hold", "failed"; a number as the tables print it
// (whole above 100, else 3 significant digits).
std::string measured_text(const MeasuredCheck& check);
std::string check_verdict(const CheckRow& row);
std::string value_text(double value);

// Markdown page: how it was made, the table, the mean |error| over the points
// that ran, the failures, then the table of checks.
std::string calibration_markdown(const MeasuredSet& set, const std::vector<CalibrationRow>& rows,
                                 const std::vector<CheckRow>& checks = {});

// The fit's page: parameters, predictions (preset, fitted, left out), the
// checks at both, each parameter's pull, the values fitted without each
// config; "Partial" while searches are still to come.
std::string fit_markdown(const MeasuredSet& set, const FitResult& result);

}  // namespace podsim::studies
