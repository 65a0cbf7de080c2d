// Dot/einsum strategy choice as a search over joint shardings of the label
// space (batch, contracting, lhs-only, rhs-only) instead of XLA's recursive
// driver: the cheapest candidate by (full replications, bytes moved per
// device, local flops) wins. Derivation, candidates and byte counts:
// docs/compiler.md#dot-strategies-as-joint-shardings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/ir/op_dims.h"
#include "compiler/sharding/sharding.h"
#include "compiler/spmd/reshard_plan.h"

namespace podsim::compiler {

// One joint dim: its dim in each tensor (-1 when absent) and its extent
// (LabelKind, EinsumSide: compiler/ir/op_dims.h; kWindowed is never a label here).
struct EinsumLabel {
  LabelKind kind = LabelKind::kBatch;
  int64_t lhs = -1, rhs = -1, out = -1;
  int64_t size = 1;
  // Grouped convolution: the label is the feature-group dim and carries this
  // many groups; its tile count must divide it (each device then convolves
  // groups / tiles whole groups).
  int64_t groups = 0;
};

struct EinsumSpec {
  std::vector<EinsumLabel> labels;  // batch, contracting, lhs-only, rhs-only
  Shape lhs, rhs, out;
  const Shape& shape(EinsumSide side) const;
  int64_t dim_of(const EinsumLabel& label, EinsumSide side) const;
  int64_t rank() const { return static_cast<int64_t>(labels.size()); }
  // Joint dims of labels of `kind`.
  std::vector<int64_t> labels_of(LabelKind kind) const;
};

// Labels of a dot (dot_labels), or of a convolution whose spatial dims stay
// whole (conv_labels' features; spatial dims are not labels), with their
// extents. A feature-grouped convolution's group label (PartitionConvWith-
// FeatureGroupCount) has extent and `groups` G; the kernel input feature (one
// group's) stays whole.
EinsumSpec einsum_of_dot(const Instruction& dot, const Shape& lhs, const Shape& rhs);
EinsumSpec einsum_of_convolution(const Instruction& conv, const Shape& lhs, const Shape& rhs);

// Label-space sharding -> a tensor's (labels it lacks become replication).
Sharding joint_to_tensor(const EinsumSpec& spec, const Sharding& joint, EinsumSide side);
// A tensor's sharding -> label space (its non-label dims are replicated).
Sharding tensor_to_joint(const EinsumSpec& spec, const Sharding& sharding, EinsumSide side);

struct StrategyCost {
  int64_t full_replications = 0;
  double bytes = 0;  // moved per device
  double flops = 0;  // local multiply-adds per device
  bool operator<(const StrategyCost& o) const;
};

// Cost of reshard(value of `shape` in `from`) -> `to` following the ladder of
// reshard.h (same, all-gather, local slice, all-to-all, permute, digit
// refine/coarsen, full). `plans` (optional) remembers the digit rung's
// plans across calls (a throwaway cache without it); the result is the same.
StrategyCost estimate_reshard(const Shape& shape, const Sharding& from, const Sharding& to,
                              int64_t devices, RelabeledPlanCache* plans = nullptr);

// The dim a reduce-scatter over `groups` turns `from` into `to` with (device
// k of every group holds tile k of that dim, nothing else changes), as
// reduce_scatter_partial decides; -1 when it does not apply.
int64_t reduce_scatter_dim(const Sharding& from, const Sharding& to, const ReplicaGroups& groups,
                           int64_t rank, int64_t devices);

struct DotPlan {
  Sharding joint;
  Sharding lhs, rhs;   // operand shardings the local dot needs
  Sharding local_out;  // layout of the local result once partial sums are combined
  std::vector<int64_t> partial_tile_dims;  // contracting joint dims tiled > 1
  StrategyCost cost;
  std::string describe() const;
};

struct DotShardings {
  Sharding lhs, rhs, target;
};
// Reuse of an operand's reshard (XLA's partitioner caches reshards per
// (value, target), and keeps a gather its other dot users share rather than
// windowing it: dot_handler.cc check_users_sharding). `built[side]` lists the
// targets that operand's value was already resharded to (free now);
// `sharers[side]` counts the dots and convolutions reading the operand, over
// which a new reshard's bytes are spread (each reuses it when it needs the
// same layout). Index 0 is the lhs, 1 the rhs.
struct OperandReuse {
  std::vector<Sharding> built[2];
  int64_t sharers[2] = {1, 1};
};
DotPlan choose_dot_plan(const EinsumSpec& spec, const DotShardings& current, int64_t devices,
                        RelabeledPlanCache* plans = nullptr, const OperandReuse& reuse = {});
// The plan of one given joint sharding (tests, forced strategies).
DotPlan plan_for_joint(const EinsumSpec& spec, const DotShardings& current, const Sharding& joint,
                       int64_t devices, RelabeledPlanCache* plans = nullptr,
                       const OperandReuse& reuse = {});

}  // namespace podsim::compiler
