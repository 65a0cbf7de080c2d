// The optimiser behind `podsim calibrate --fit` (studies/fit.h), pure: it
// knows nothing of runs, only of a batch objective on the unit cube.
#pragma once

#include <functional>
#include <vector>

namespace podsim::studies {

// Compass search (Kolda, Lewis & Torczon 2003, "Optimization by direct
// search", SIAM Review 45(3), section 3) on the unit cube: from `start`,
// poll start +- step along every axis (clamped to [0, 1]) as one batch, move
// to the best poll point when it improves, else halve the step; stop when
// the step is below `min_step` or `max_evaluations` points were evaluated.
// `evaluate` gets a batch of points and returns one value each (+inf for a
// point that failed).
struct CompassSearchResult {
  std::vector<double> best;
  double value = 0;
  int evaluations = 0;
  int iterations = 0;
};

using BatchObjective =
    std::function<std::vector<double>(const std::vector<std::vector<double>>& points)>;

CompassSearchResult compass_search(const BatchObjective& evaluate, std::vector<double> start,
                                   double step = 0.25, double min_step = 1.0 / 64,
                                   int max_evaluations = 400);

}  // namespace podsim::studies
