// Fast mode: collectives that one device runs at the same time share the ICI links they both use
// (full mode gets this from the Fabric). Running together, collectives progress at max-min fair
// rates r_j with sum_j r_j busy_j(l) <= 1 on every link and r_j <= 1 / alone_s_j (progressive
// filling, Bertsekas & Gallager, Data Networks 6.5.2). The speed reported is r_j x alone_s_j, in
// (0, 1]. Derivation: docs/simulator.md#collective-sharing-in-fast-mode
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "hw_models/ici/topology.h"

namespace podsim::sim {

struct SharedCollective {
  double alone_s = 0;  // uncontended transfer time
  const std::vector<std::pair<hw::LinkId, double>>* link_busy_s = nullptr;  // by link id
};

// Speeds in (0, 1], one per collective, in the given order.
std::vector<double> shared_speeds(const std::vector<SharedCollective>& running);

// shared_speeds memoised by the set of running catalog specs (a step repeats
// the same few combinations thousands of times).
class SharingCache {
 public:
  // `specs` and `running` in the same order.
  const std::vector<double>& speeds(const std::vector<int32_t>& specs,
                                    const std::vector<SharedCollective>& running);

 private:
  std::map<std::vector<int32_t>, std::vector<double>> cache_;
};

}  // namespace podsim::sim
