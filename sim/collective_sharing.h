// Fast mode: collectives that one device runs at the same time share the ICI
// links they both use (full mode gets this from the Fabric's link-level
// fair sharing). The engine splits a collective's time alone into its
// plan's latencies (no link use) and a transfer part of alone_s_j seconds
// that keeps link l busy for busy_j(l) seconds, i.e. uses the fraction
//   u_j(l) = busy_j(l) / alone_s_j
// of link l while it transfers at full speed (<= 1: the transfer time
// includes every link's busy time; normalised to max_l u_j(l) = 1 when the
// groups of an asymmetric collective load one link longer than the slowest
// group alone takes). Running together, the collectives progress at rates
// r_j (fraction of the transfer per second) that fit every link and none
// beyond its rate alone:
//   sum_j r_j busy_j(l) <= 1,   r_j <= 1 / alone_s_j.
// The rates are max-min fair (progressive filling, Bertsekas & Gallager,
// Data Networks 6.5.2): all rates rise together until a link saturates or a
// collective reaches its cap, the collectives there keep that rate, the rest
// rise on. This is the fabric's rule (fabric.h) applied to whole transfers
// instead of phases, so fast mode tracks full mode when collectives overlap.
// Two bandwidth-bound collectives on the same links both end when the links
// have carried both; collectives on disjoint links (different mesh axes) do
// not slow each other. The speed reported is r_j x alone_s_j, in (0, 1].
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "hw_models/ici/topology.h"

namespace podsim::sim {

struct SharedCollective {
  double alone_s = 0;                                     // uncontended transfer time
  const std::vector<std::pair<hw::LinkId, double>>* link_busy_s = nullptr;  // by link id
};

// Speeds in (0, 1], one per collective, in the given order.
std::vector<double> shared_speeds(const std::vector<SharedCollective>& running);

// shared_speeds memoised by the set of running catalog specs (a step repeats
// the same few combinations thousands of times).
class SharingCache {
 public:
  // `specs` and `running` in the same order.
  const std::vector<double>& speeds(const std::vector<int32_t>& specs, const std::vector<SharedCollective>& running);

 private:
  std::map<std::vector<int32_t>, std::vector<double>> cache_;
};

}  // namespace podsim::sim
