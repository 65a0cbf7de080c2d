// Collective algorithms over a placed device group, as plans of link transfers.
//
// bytes_per_device: all-reduce the operand (= result) on each device; all-gather the FULL result
// (group size x shard); reduce-scatter the FULL operand (group size x result); all-to-all the
// operand on each device (it keeps 1/n, sends 1/n to each other member); collective-permute
// what each source sends to its target.
//
// A plan is phases run one after another; a phase is point-to-point flows issued together (each
// repeated `repeat` times, as a ring's steps), routed and summed per directed link in
// `link_loads`. Uncontended phase time = max over links of load / bandwidth + the longest path's
// latency (`analytic_time_s` sums it). The algorithms and their closed forms:
// docs/collectives.md#plans, docs/collectives.md#closed-forms
#pragma once

#include <cstdint>
#include <functional>
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
  std::vector<CoreId> group;         // physical devices in group order
  std::vector<int64_t> group_shape;  // optional row-major grid of the group (torus algorithms)
  std::vector<std::pair<CoreId, CoreId>> permute_pairs;  // collective-permute: source -> target
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  int64_t chunks =
      0;  // torus_pipelined: chunks C (0 = the preset's ici.collective_chunks; 1 alone)
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
  double step_time_s = 0;  // uncontended time of one repetition
  int64_t repeat = 1;
  bool dcn = false;  // its transfers cross slices over the data-centre network
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

// Multi-slice collectives (docs/collectives.md#multi-slice-collectives). A group whose members
// lie in several slices runs as XLA runs it: its ICI part inside each slice and its DCN part
// across slices, every slice and every column at once.

// The group's members by slice (slices in order of first appearance, members in group order).
std::vector<std::vector<CoreId>> members_by_slice(const Topology& topology,
                                                  const std::vector<CoreId>& group);

// A plan over slice 0's cores moved to slice `slice` (cores and ICI links shifted).
CollectivePlan shift_to_slice(const Topology& topology, const CollectivePlan& plan, int64_t slice);

// `columns` (each a list of members, typically one per slice) running `kind` at once, each over
// its own members as one unidirectional ring (all-to-all: directly), bytes per member by the
// CollectiveQuery convention over a column. Every phase is marked dcn. Ring closed forms, over a
// column of n: all-reduce 2(n-1) steps of V/n, all-gather and reduce-scatter n-1 steps of V/n;
// all-to-all one phase of V/n to each other member.
CollectivePlan plan_over_columns(const Topology& topology, CollectiveKind kind,
                                 const std::vector<std::vector<CoreId>>& columns, double bytes);

// Plans an in-slice part: `group` lies in slice 0 (kind and bytes by the CollectiveQuery
// convention). The caller's planner (member orders, sim/collective_catalog.h).
using SlicePlanner = std::function<CollectivePlan(CollectiveKind kind, double bytes,
                                                  const std::vector<CoreId>& group)>;

// The hierarchical plan of a group crossing slices with k members in each of S slices (V =
// q.bytes_per_device): all-reduce = reduce-scatter(V) in slice, all-reduce(V/k) across slices,
// all-gather(V) in slice; all-gather = all-gather(V/k) across, then all-gather(V) in slice;
// reduce-scatter = reduce-scatter(V) in slice, then reduce-scatter(V/k) across; all-to-all =
// all-to-all(V) in slice, then all-to-all(V) across. Members spread unevenly over the slices run
// as one ring (or direct all-to-all) over the whole group, every hop routed.
CollectivePlan plan_across_slices(const Topology& topology, const CollectiveQuery& q,
                                  const SlicePlanner& in_slice);

// Uncontended seconds of a plan's DCN phases (repeat x step time).
double dcn_time_s(const CollectivePlan& plan);

}  // namespace podsim::hw
