// Edit distance and nearest-name lookup for "did you mean" hints.
#include "common/did_you_mean.h"

#include <algorithm>

namespace podsim {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(const std::string& name, const std::vector<std::string>& valid) {
  std::string best;
  size_t best_d = 1000;
  for (const auto& v : valid) {
    size_t d = edit_distance(name, v);
    if (d < best_d) best_d = d, best = v;
  }
  return best_d <= std::max<size_t>(2, name.size() / 3) ? best : "";
}

}  // namespace podsim
