// Compass search (studies/compass_search.h).
#include "studies/compass_search.h"

#include <algorithm>
#include <cmath>

namespace podsim::studies {

namespace {

double clamp_unit(double u) { return std::clamp(u, 0.0, 1.0); }

}  // namespace

CompassSearchResult compass_search(const BatchObjective& evaluate, std::vector<double> start,
                                   double step, double min_step, int max_evaluations) {
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
        if (y != result.best && std::find(polls.begin(), polls.end(), y) == polls.end())
          polls.push_back(y);
      }
    std::vector<double> values = evaluate(polls);
    result.evaluations += static_cast<int>(polls.size());
    ++result.iterations;
    size_t best = 0;
    for (size_t i = 1; i < values.size(); ++i)
      if (values[i] < values[best]) best = i;
    // Sufficient decrease: a relative 1e-9 below the incumbent, so rounding
    // noise does not keep the step from shrinking.
    if (!values.empty() &&
        values[best] < result.value - 1e-9 * std::max(1.0, std::abs(result.value))) {
      result.best = polls[best];
      result.value = values[best];
    } else {
      step /= 2;
    }
  }
  return result;
}

}  // namespace podsim::studies
