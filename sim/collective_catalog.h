// Collectives of a per-device program in hardware terms: each collective instruction becomes a
// CollectiveSpec (kind, bytes per device as hw_models/ici/collectives.h defines them, its device
// groups placed on cores, one hw::CollectivePlan per group), deduplicated by (kind, bytes,
// groups), and in fast mode timed once with all its groups running at once (exact only when the
// groups are symmetric). Grouping, member orders and fast timing:
// docs/simulator.md#collective-catalog
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/ir/module.h"
#include "hw_models/system.h"

namespace podsim::sim {

inline constexpr size_t kFairShareFlowLimit = 4096;

struct CollectiveSpec {
  hw::CollectiveKind kind = hw::CollectiveKind::kAllReduce;
  double bytes_per_device = 0;
  std::vector<std::vector<hw::CoreId>> groups;                   // cores per group, in group order
  std::vector<std::vector<int64_t>> group_shapes;                // per group; empty = ring
  std::vector<std::pair<hw::CoreId, hw::CoreId>> permute_pairs;  // collective-permute (cores)
  std::vector<int32_t> group_of_device;   // logical device -> group, -1 = not taking part
  std::vector<hw::CollectivePlan> plans;  // per group (a permute: one plan for all pairs)
  std::vector<std::string> plan_labels;   // per group: GroupPlan::label() of the plan chosen
  // HBM bytes the collective's DMAs move on its busiest member while it
  // transfers (what that device's HBM serves besides its compute kernels):
  // each byte sent is read and each byte received written, 2 x bytes sent
  // (the algorithms are symmetric: a member receives what it sends), and a
  // received byte that is reduced is also read back with the local partial
  // (+2): all of a reduce-scatter's, half of an all-reduce's (its
  // reduce-scatter half; the all-gather half only stores).
  double dma_hbm_bytes = 0;
  // Some group spans slices: its plan has DCN phases (hw::plan_across_slices).
  bool crosses_slices = false;
};

struct FastCollectiveTiming {
  double seconds = 0;          // of the merged plan (all groups at once)
  bool symmetric = true;       // every group alone takes the same time
  bool fair_share = false;     // timed by fair sharing (else analytic)
  double fastest_group_s = 0;  // uncontended, alone
  double slowest_group_s = 0;
  // Seconds each link spends carrying this collective's bytes (all groups,
  // every phase x repeat, at the link's bandwidth), by link id; what
  // collectives running at the same time share (collective_sharing.h).
  std::vector<std::pair<hw::LinkId, double>> link_busy_s;
  // The plan's latencies (every phase x repeat; of the slowest group's plan
  // when the groups' phases differ): `seconds` minus this is the transfer
  // that shares links.
  double latency_s = 0;
  // Uncontended seconds of its DCN phases (slowest group; hw::dcn_time_s), part of `seconds`.
  double dcn_s = 0;
};

// The synchronous collective an instruction performs: itself, or what an
// asynchronous start (all-gather-start, all-to-all-start, ...) runs.
compiler::Opcode collective_opcode(const compiler::Instruction& instr);

// The row-major grid shape of `group` over the physical dims of `slice`, or
// empty when it is not one (or varies along fewer than two dims).
std::vector<int64_t> physical_grid_shape(const std::vector<hw::CoreId>& group,
                                         const hw::Slice& slice);

// Merges per-group plans into one (phase i of every group runs together).
// False when the plans' phase structures differ.
bool merge_concurrent_plans(const hw::Topology& topology,
                            const std::vector<hw::CollectivePlan>& plans,
                            hw::CollectivePlan& merged);

// A group's plan and the member order it runs in.
struct GroupPlan {
  hw::CollectivePlan plan;
  std::vector<hw::CoreId> group;  // members in the order the plan takes them
  std::vector<int64_t> shape;     // the plan's group_shape; empty = ring
  std::string layout;             // which member order ("mesh order", ...)
  // "<algorithm> [<shape>], <layout>": what traces show.
  std::string label() const;
};

// Plans one group (query.group in mesh order) as the runtime would: the fastest (uncontended
// analytic time) of the member orders that move the same data (all-to-all, collective-permute:
// the mesh order only). The orders tried: docs/simulator.md#member-orders
GroupPlan plan_group(const hw::System& system, hw::CollectiveQuery query);

class CollectiveCatalog {
 public:
  CollectiveCatalog(const hw::System& system, int64_t num_devices);

  // The spec index of a collective instruction (UserError for groups naming
  // devices outside the program).
  int32_t spec_of(const compiler::Computation& computation, const compiler::Instruction& instr);
  const CollectiveSpec& spec(int32_t index) const { return *specs_[static_cast<size_t>(index)]; }
  int32_t size() const { return static_cast<int32_t>(specs_.size()); }

  // Cached per spec.
  const FastCollectiveTiming& fast_timing(int32_t index);

 private:
  const hw::System& system_;
  int64_t num_devices_;
  std::vector<std::unique_ptr<CollectiveSpec>> specs_;
  std::vector<std::unique_ptr<FastCollectiveTiming>> fast_;
  std::unordered_map<std::string, int32_t> index_by_key_;
};

}  // namespace podsim::sim
