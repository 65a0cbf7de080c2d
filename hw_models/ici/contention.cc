// Max-min fair sharing of link bandwidth among the flows of a phase, by
// progressive filling (Bertsekas & Gallager, Data Networks, sec. 6.5.2):
// repeatedly find the link whose remaining capacity per unfrozen flow is
// smallest, give its flows that share, freeze them and subtract their rates
// from every link they cross. Rates are recomputed each time a flow finishes.
// A Flow with count c is c identical flows on one route: it weighs c.
#include <algorithm>
#include <limits>

#include "hw_models/ici/collectives.h"

namespace podsim::hw {
namespace {

struct PhaseFlows {
  std::vector<int64_t> path_start;  // CSR over routes
  std::vector<LinkId> path_links;
  std::vector<double> weight;
  std::vector<double> remaining;  // bytes per individual flow
  std::vector<std::vector<int>> flows_on_link;
  std::vector<LinkId> used_links;
};

PhaseFlows route_phase(const Topology& topology, const Phase& phase) {
  PhaseFlows p;
  p.flows_on_link.resize(static_cast<size_t>(topology.num_links()));
  std::vector<LinkId> path;
  p.path_start.push_back(0);
  for (const Flow& flow : phase.flows) {
    path.clear();
    topology.append_route(flow.src, flow.dst, path);
    if (path.empty() || flow.bytes <= 0) continue;
    const int index = static_cast<int>(p.weight.size());
    for (LinkId id : path) {
      auto& on = p.flows_on_link[static_cast<size_t>(id)];
      if (on.empty()) p.used_links.push_back(id);
      on.push_back(index);
      p.path_links.push_back(id);
    }
    p.path_start.push_back(static_cast<int64_t>(p.path_links.size()));
    p.weight.push_back(static_cast<double>(flow.count));
    p.remaining.push_back(flow.bytes);
  }
  return p;
}

// Seconds until every flow of the phase has delivered its bytes.
double fair_share_makespan(const Topology& topology, PhaseFlows& p) {
  const size_t flows = p.weight.size();
  const std::vector<double> original = p.remaining;
  std::vector<bool> active(flows, true);
  std::vector<double> rate(flows, 0.0);
  std::vector<double> residual(static_cast<size_t>(topology.num_links()), 0.0);
  std::vector<double> unfrozen_weight(residual.size(), 0.0);
  std::vector<bool> frozen(flows, false);
  size_t active_count = flows;
  double now = 0;
  while (active_count > 0) {
    for (LinkId id : p.used_links) {
      residual[static_cast<size_t>(id)] = topology.link(id).bandwidth;
      unfrozen_weight[static_cast<size_t>(id)] = 0;
    }
    for (size_t f = 0; f < flows; ++f) {
      frozen[f] = !active[f];
      if (!active[f]) continue;
      for (int64_t i = p.path_start[f]; i < p.path_start[f + 1]; ++i)
        unfrozen_weight[static_cast<size_t>(p.path_links[static_cast<size_t>(i)])] += p.weight[f];
    }
    // Progressive filling.
    while (true) {
      double best_share = std::numeric_limits<double>::infinity();
      LinkId best = -1;
      for (LinkId id : p.used_links) {
        const double w = unfrozen_weight[static_cast<size_t>(id)];
        if (w <= 0) continue;
        const double share = std::max(residual[static_cast<size_t>(id)], 0.0) / w;
        if (share < best_share) best_share = share, best = id;
      }
      if (best < 0) break;
      for (int f : p.flows_on_link[static_cast<size_t>(best)]) {
        if (frozen[static_cast<size_t>(f)]) continue;
        frozen[static_cast<size_t>(f)] = true;
        rate[static_cast<size_t>(f)] = best_share;
        for (int64_t i = p.path_start[f]; i < p.path_start[f + 1]; ++i) {
          const auto link = static_cast<size_t>(p.path_links[static_cast<size_t>(i)]);
          residual[link] -= best_share * p.weight[static_cast<size_t>(f)];
          unfrozen_weight[link] -= p.weight[static_cast<size_t>(f)];
        }
      }
    }
    // Advance to the next completion.
    double step = std::numeric_limits<double>::infinity();
    for (size_t f = 0; f < flows; ++f)
      if (active[f] && rate[f] > 0) step = std::min(step, p.remaining[f] / rate[f]);
    if (!(step < std::numeric_limits<double>::infinity()))
      break;  // no progress possible (zero bandwidth)
    now += step;
    for (size_t f = 0; f < flows; ++f) {
      if (!active[f]) continue;
      p.remaining[f] -= rate[f] * step;
      if (p.remaining[f] <= 1e-9 * original[f]) {
        active[f] = false;
        --active_count;
      }
    }
  }
  return now;
}

}  // namespace

double time_plan_fair_share(const Topology& topology, const CollectivePlan& plan) {
  double total = 0;
  for (const Phase& phase : plan.phases) {
    PhaseFlows flows = route_phase(topology, phase);
    const double step = fair_share_makespan(topology, flows) + phase.latency_s;
    total += static_cast<double>(phase.repeat) * step;
  }
  return total;
}

}  // namespace podsim::hw
