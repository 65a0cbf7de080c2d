// The reshard planner's digit plans (docs/reference/gspmd.md#resharding), as values:
// which refine / coarsen / move steps, and which relabeling permute, take a
// sharding to another on the common digit grid (tile_coordinates.h). Pure
// functions of the two shardings, the shape and the device count; emitting
// the steps is reshard.h's. Kept apart from reshard.h so the partitioner's
// context can hold a cache of plans.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compiler/ir/attributes.h"
#include "compiler/sharding/sharding.h"
#include "compiler/sharding/tile_coordinates.h"

namespace podsim::compiler {

// Bytes a link moves in one collective's fixed latency, the reshard plans'
// default (digit_steps_cost below) when no hardware is given: a ~1 us ICI
// hop latency at 1e11 B/s per link. Runs with a hardware preset derive it
// (TPUv3: 1e-6 s x 8.2e10 B/s = 8.2e4, docs/reference/hardware.md#latencies).
constexpr double kCollectiveLatencyBytes = 1e5;

// Refine/coarsen/move on the common digit grid of source and target (tile_coordinates.h): per data
// dim the source's digits after the common prefix are stripped from the minor end and the
// target's appended. Two greedy passes (moves first, whole gathers first); the cheaper plan by
// digit_steps_cost wins, ties to the moves. docs/compiler.md#digit-step-planning
struct DigitStep {
  enum class Kind { kCoarsen, kMove, kRefine };
  Kind kind = Kind::kCoarsen;
  int64_t dim = 0;       // coarsen/refine: the dim; move: the dim b that gains P
  int64_t from_dim = 0;  // move: the dim a that loses P
  int64_t factor = 1;    // m = product of P's digit sizes
  Sharding after;        // sharding once this step is done
  DigitPieces minor;     // refine: P's coordinate (0..m-1)
  ReplicaGroups groups;  // coarsen/move: member k holds sub-tile k
};
// nullopt when the pair is not on a common grid, nothing changes, a step's
// extents cannot nest, or a coarsen would replicate the value (that is the
// full-replication fallback, counted as such). element_bytes: the dtype's
// size, for the cost.
std::optional<std::vector<DigitStep>> plan_digit_reshard(
    const Sharding& source, const Sharding& target, std::span<const int64_t> base_dims,
    int64_t devices, int64_t element_bytes = 4,
    double collective_latency_bytes = kCollectiveLatencyBytes);
// The same on a given grid: `from` and `to` are the data dims' digit lists.
std::optional<std::vector<DigitStep>> plan_digit_steps(
    const DigitGrid& grid, const std::vector<DigitIds>& from, const std::vector<DigitIds>& to,
    std::span<const int64_t> base_dims, int64_t element_bytes = 4,
    double collective_latency_bytes = kCollectiveLatencyBytes);
// Cost of a plan, in bytes: per collective, the bytes a device receives
// (all-gather / all-to-all of group m: out * (m - 1) / m; a
// collective-permute: its shard -- XLA's CommunicationCostInBytes,
// docs/reference/gspmd.md#reshard-message-sizes) plus collective_latency_bytes,
// the bytes a link moves in one collective's fixed latency; local slices
// are free. So on small shards fewer collectives win and on large ones
// fewer bytes. The compiler's callers pass the workload's hardware
// (SpmdOptions::collective_latency_bytes); kCollectiveLatencyBytes is the
// TPUv3 value: the ~1 us ICI hop latency at 1e11 B/s per link
// (docs/reference/hardware.md#latencies).
double digit_steps_cost(const std::vector<DigitStep>& steps, std::span<const int64_t> base_dims,
                        int64_t element_bytes,
                        double collective_latency_bytes = kCollectiveLatencyBytes);
// Digit steps up to a relabeling of equal-size digits (reshard_relabel.cc):
// the cheapest (digit_steps_cost + the permute's) over relabelings of
// plan_digit_steps plus, unless the relabeling is the identity on the
// target's lists, one collective-permute first (to `relabeled_source`) or
// last (to the target).
struct RelabeledDigitPlan {
  enum class Permute { kNone, kFirst, kLast };
  Permute permute = Permute::kNone;
  Sharding relabeled_source;  // kFirst: the sharding the permute produces
  std::vector<DigitStep> steps;
};
std::optional<RelabeledDigitPlan> plan_relabeled_digit_reshard(
    const Sharding& source, const Sharding& target, std::span<const int64_t> base_dims,
    int64_t devices, int64_t element_bytes = 4,
    double collective_latency_bytes = kCollectiveLatencyBytes);
// plan_relabeled_digit_reshard remembered per (source, target, base dims,
// devices, element bytes) for one collective latency: the plan is a pure
// function of them, and a model's layers ask for the same reshards over and
// over (the dot-plan search estimates every candidate; a 64-layer step asks
// each ~64 times).
class RelabeledPlanCache {
 public:
  explicit RelabeledPlanCache(double collective_latency_bytes = kCollectiveLatencyBytes)
      : collective_latency_bytes_(collective_latency_bytes) {}
  const std::optional<RelabeledDigitPlan>& plan(const Sharding& source, const Sharding& target,
                                                std::span<const int64_t> base_dims, int64_t devices,
                                                int64_t element_bytes);
  size_t size() const { return plans_.size(); }

 private:
  double collective_latency_bytes_;
  std::map<std::string, std::optional<RelabeledDigitPlan>> plans_;
};

}  // namespace podsim::compiler
