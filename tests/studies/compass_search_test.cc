// Compass search (studies/compass_search.h) on closed-form objectives.
#include "studies/compass_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

namespace podsim::studies {
namespace {

// Evaluates f on every point of a batch and records the batches.
struct Recorder {
  std::function<double(const std::vector<double>&)> f;
  std::vector<size_t> batch_sizes;
  std::vector<std::vector<double>> seen;
  BatchObjective objective() {
    return [this](const std::vector<std::vector<double>>& points) {
      batch_sizes.push_back(points.size());
      std::vector<double> values;
      for (const auto& p : points) {
        seen.push_back(p);
        values.push_back(f(p));
      }
      return values;
    };
  }
};

TEST(CompassSearch, FindsTheMinimumOfASeparableQuadratic) {
  // f = (u0 - 0.3)^2 + (u1 - 0.8)^2: along each axis the search stops on
  // the grid point nearest the minimiser once the step is below min_step,
  // so it ends within min_step of (0.3, 0.8).
  Recorder r;
  r.f = [](const std::vector<double>& u) {
    return std::pow(u[0] - 0.3, 2) + std::pow(u[1] - 0.8, 2);
  };
  const double min_step = 1.0 / 1024;
  CompassSearchResult s = compass_search(r.objective(), {0.5, 0.5}, 0.25, min_step, 1000);
  EXPECT_NEAR(s.best[0], 0.3, min_step);
  EXPECT_NEAR(s.best[1], 0.8, min_step);
  EXPECT_DOUBLE_EQ(s.value, r.f(s.best));
  // The start alone, then at most 2 polls per axis a batch; the count adds up.
  ASSERT_FALSE(r.batch_sizes.empty());
  EXPECT_EQ(r.batch_sizes.front(), 1u);
  size_t total = 0;
  for (size_t b : r.batch_sizes) {
    EXPECT_LE(b, 4u);
    total += b;
  }
  EXPECT_EQ(static_cast<size_t>(s.evaluations), total);
  EXPECT_EQ(static_cast<size_t>(s.iterations) + 1, r.batch_sizes.size());
}

TEST(CompassSearch, StaysInTheUnitCube) {
  // f = -u0 - u1 is least at the corner (1, 1); no poll leaves the cube.
  Recorder r;
  r.f = [](const std::vector<double>& u) { return -u[0] - u[1]; };
  CompassSearchResult s = compass_search(r.objective(), {0.9, 0.2});
  EXPECT_DOUBLE_EQ(s.best[0], 1.0);
  EXPECT_DOUBLE_EQ(s.best[1], 1.0);
  for (const auto& p : r.seen)
    for (double u : p) {
      EXPECT_GE(u, 0.0);
      EXPECT_LE(u, 1.0);
    }
}

TEST(CompassSearch, NeverMovesToAFailedPoint) {
  // Runs fail (+inf) above u = 0.6; below, f falls towards u = 1. The
  // search ends at the last grid point that ran, within min_step of 0.6.
  Recorder r;
  r.f = [](const std::vector<double>& u) {
    return u[0] > 0.6 ? std::numeric_limits<double>::infinity() : std::pow(u[0] - 1, 2);
  };
  const double min_step = 1.0 / 256;
  CompassSearchResult s = compass_search(r.objective(), {0.0}, 0.25, min_step, 1000);
  EXPECT_LE(s.best[0], 0.6);
  EXPECT_GT(s.best[0], 0.6 - min_step);
}

TEST(CompassSearch, StopsAtTheEvaluationBudget) {
  Recorder r;
  r.f = [](const std::vector<double>& u) {
    return std::pow(u[0] - 0.123, 2) + std::pow(u[1] - 0.77, 2);
  };
  CompassSearchResult s = compass_search(r.objective(), {0.5, 0.5}, 0.25, 1e-9, 20);
  // The budget is checked before each batch of at most 4 polls.
  EXPECT_GE(s.evaluations, 20);
  EXPECT_LT(s.evaluations, 20 + 4);
}

}  // namespace
}  // namespace podsim::studies
