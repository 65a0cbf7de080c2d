// Max-min fair link sharing of concurrent collectives in fast mode (see
// collective_sharing.h for the model and its source).
#include "sim/collective_sharing.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace podsim::sim {

std::vector<double> shared_speeds(const std::vector<SharedCollective>& running) {
  const size_t n = running.size();
  std::vector<double> speed(n, 1.0);
  if (n < 2) return speed;
  // Progressive filling on progress rates r_j (collective_sharing.h). Only a
  // link two collectives use can hold one below its cap: alone, a link's
  // busy time is at most the transfer time.
  std::vector<double> cap(n), rate(n, 0.0);
  std::unordered_map<hw::LinkId, std::vector<std::pair<size_t, double>>> users;
  for (size_t j = 0; j < n; ++j) {
    double longest = running[j].alone_s;
    if (running[j].link_busy_s)
      for (const auto& [link, busy] : *running[j].link_busy_s) longest = std::max(longest, busy);
    cap[j] = longest > 0 ? 1.0 / longest : 0;
    if (running[j].link_busy_s == nullptr || longest <= 0) continue;
    for (const auto& [link, busy] : *running[j].link_busy_s)
      if (busy > 0) users[link].emplace_back(j, busy);
  }
  std::vector<const std::vector<std::pair<size_t, double>>*> shared;
  for (const auto& [link, on_link] : users)
    if (on_link.size() >= 2) shared.push_back(&on_link);
  std::vector<bool> frozen(n, false);
  for (size_t j = 0; j < n; ++j)
    if (cap[j] <= 0) frozen[j] = true;
  while (true) {
    double level = std::numeric_limits<double>::infinity();
    size_t capped = n;
    for (size_t j = 0; j < n; ++j)
      if (!frozen[j] && cap[j] < level) level = cap[j], capped = j;
    if (capped == n) break;
    const std::vector<std::pair<size_t, double>>* bottleneck = nullptr;
    for (const auto* on_link : shared) {
      double fixed = 0, rising = 0;
      for (const auto& [j, busy] : *on_link) {
        if (frozen[j])
          fixed += rate[j] * busy;
        else
          rising += busy;
      }
      if (rising <= 0) continue;
      const double at = std::max(0.0, 1.0 - fixed) / rising;
      if (at < level) level = at, bottleneck = on_link;
    }
    if (bottleneck == nullptr) {  // a cap comes first: that collective runs as alone
      rate[capped] = cap[capped];
      frozen[capped] = true;
      continue;
    }
    for (const auto& [j, busy] : *bottleneck)
      if (!frozen[j]) rate[j] = level, frozen[j] = true;
  }
  for (size_t j = 0; j < n; ++j)
    if (cap[j] > 0) speed[j] = std::max(rate[j] / cap[j], 1e-6);
  return speed;
}

const std::vector<double>& SharingCache::speeds(const std::vector<int32_t>& specs,
                                                const std::vector<SharedCollective>& running) {
  auto it = cache_.find(specs);
  if (it == cache_.end()) it = cache_.emplace(specs, shared_speeds(running)).first;
  return it->second;
}

}  // namespace podsim::sim
