// Collective algorithms over a placed device group, as plans of link
// transfers.
//
// bytes_per_device, precisely:
//   all-reduce          the operand (= result) on each device
//   all-gather          the FULL result on each device (= group size x shard)
//   reduce-scatter      the FULL operand on each device (= group size x result)
//   all-to-all          the operand on each device; it keeps 1/n and sends
//                       1/n to each other member
//   collective-permute  what each source sends to its target
//
// A plan is a list of phases run one after another. A phase is a set of
// point-to-point flows issued together (each repeated `repeat` times back to
// back, as the steps of a ring); `link_loads` are those flows routed
// (dimension order) and summed per directed link: what the simulator runs
// with contention. Uncontended phase time = max over links of
// load / bandwidth + the longest path's latency; `analytic_time_s` sums it.
//
// Algorithms:
//   ring                n-1 steps, each member sends 1/n of V to its successor
//                       (all-gather, reduce-scatter; all-reduce = RS then AG)
//   bidirectional_ring  each shard travels both ways round the ring:
//                       floor((n-1)/2) steps of V/n in each direction, plus for
//                       even n one step of V/(2n) each way reaching the
//                       opposite member: (n-1)/n * V / (2W) and n/2 latencies
//   torus               group_shape [d0, d1, ...]: bidirectional rings per dim;
//                       reduce-scatter dims 0..k (data shrinking by each dim),
//                       all-gather dims k..0; all-reduce = both. All-to-all:
//                       one exchange per dim (dimension-ordered), V/d_j to each
//                       of the d_j - 1 peers in the line
//   ring_per_dim        torus with one-way rings per dim (n_j - 1 steps of
//                       V_j / n_j each, V_j the data on dim j): each dim's
//                       links are used in one direction only
//   torus_pipelined     torus with the payload cut into C chunks
//                       (CollectiveQuery::chunks) that flow through the stages
//                       (RS dims 0..k-1, AG dims k-1..0) concurrently: chunk c
//                       runs stage s in slot c + s, one phase per slot holding
//                       the slot's stages (each a whole bidirectional ring pass
//                       of V_s / C; stages on one dim share its links), latency
//                       = the slowest of the slot's stages (its steps x the
//                       step latency). C + 2k - 1 slots; identical
//                       steady-state slots are one phase with a repeat.
//                       C = 1, or a group on one dim, is torus
//                       (docs/collectives.md)
//   direct              all-to-all: every member sends V/n straight to every
//                       other member in one phase; collective-permute: the pairs
//   auto                torus when group_shape has two or more dims > 1, else
//                       bidirectional ring; all-to-all: direct (it moves the
//                       same link-bytes as the per-dim exchange with all dims
//                       busy at once); collective-permute: direct
//
// Every ring step (all ring algorithms) also pays LinkParams::
// ring_step_overhead_s on top of its route latency.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hw_models/ici/topology.h"

namespace podsim::hw {

enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kCollectivePermute };

const char* collective_kind_name(CollectiveKind kind);
const char* collective_algorithm_name(CollectiveAlgorithm algorithm);
// The names used in presets (ici.collective_algorithm); UserError otherwise.
CollectiveAlgorithm collective_algorithm_from_name(const std::string& name);

// The registry of the algorithms implemented here, by name. `preset_choice`:
// a hardware file may fix it as ici.collective_algorithm (direct is only
// chosen by auto, for all-to-all).
struct CollectiveAlgorithmEntry {
  CollectiveAlgorithm algorithm;
  std::string_view name;
  bool preset_choice;
};
const std::vector<CollectiveAlgorithmEntry>& collective_algorithms();

struct CollectiveQuery {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  double bytes_per_device = 0;
  std::vector<CoreId> group;           // physical devices in group order
  std::vector<int64_t> group_shape;    // optional row-major grid of the group (torus algorithms)
  std::vector<std::pair<CoreId, CoreId>> permute_pairs;  // collective-permute: source -> target
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  int64_t chunks = 0;  // torus_pipelined: chunks C (0 = the preset's ici.collective_chunks; 1 alone)
};

// `count` identical flows between the same devices (their routes coincide);
// `bytes` is per flow.
struct Flow {
  CoreId src = 0;
  CoreId dst = 0;
  double bytes = 0;
  int64_t count = 1;
};

struct LinkTransfer {
  LinkId link = 0;
  double bytes = 0;
};

struct Phase {
  std::string label;
  std::vector<Flow> flows;
  std::vector<LinkTransfer> link_loads;  // flows routed and summed, one entry per used link
  // Of one repetition: the longest route's summed link latency plus the ring
  // step overhead; a pipelined slot: its slowest stage's steps x that.
  double latency_s = 0;
  double step_time_s = 0;                // uncontended time of one repetition
  int64_t repeat = 1;
};

struct CollectivePlan {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;  // the one used (never kAuto)
  std::vector<Phase> phases;
  double analytic_time_s = 0;
  double bytes_sent_per_device = 0;  // by the busiest sender, over the whole plan
};

CollectivePlan plan_collective(const Topology& topology, const CollectiveQuery& query);

// Times a plan under max-min fair sharing of link bandwidth among the flows of
// each phase (progressive filling; each flow is bottlenecked by its most
// contended link, rates are recomputed whenever a flow finishes), plus each
// phase's latency. Never less than analytic_time_s (no link exceeds its
// bandwidth); equal when every flow of a phase sees the same bottleneck share.
double time_plan_fair_share(const Topology& topology, const CollectivePlan& plan);

}  // namespace podsim::hw
