// Joint-sharding search for dots and dot-like convolutions; see
// dot_strategies.h for the model and the byte formulas.
#include "compiler/spmd/dot_strategies.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/reshard.h"
#include "compiler/spmd/spmd_context.h"

namespace podsim::compiler {

const Shape& EinsumSpec::shape(EinsumSide side) const {
  return side == EinsumSide::kLhs ? lhs : side == EinsumSide::kRhs ? rhs : out;
}

int64_t EinsumSpec::dim_of(const EinsumLabel& label, EinsumSide side) const {
  return side == EinsumSide::kLhs ? label.lhs : side == EinsumSide::kRhs ? label.rhs : label.out;
}

std::vector<int64_t> EinsumSpec::labels_of(LabelKind kind) const {
  std::vector<int64_t> dims;
  for (int64_t j = 0; j < rank(); ++j)
    if (labels[static_cast<size_t>(j)].kind == kind) dims.push_back(j);
  return dims;
}

// Dot result dims are [batch..., lhs free..., rhs free...] (XLA DotGeneral).
EinsumSpec einsum_of_dot(const Instruction& dot, const Shape& lhs, const Shape& rhs) {
  EinsumSpec spec{{}, lhs, rhs, dot.shape};
  for (const DimLabel& l : dot_labels(dot.attrs.dot, lhs.rank(), rhs.rank())) {
    const int64_t size =
        l.lhs >= 0 ? lhs.dim(static_cast<int>(l.lhs)) : rhs.dim(static_cast<int>(l.rhs));
    spec.labels.push_back({l.kind, l.lhs, l.rhs, l.out, size});
  }
  return spec;
}

EinsumSpec einsum_of_convolution(const Instruction& conv, const Shape& lhs, const Shape& rhs) {
  EinsumSpec spec{{}, lhs, rhs, conv.shape};
  const int64_t groups = conv.attrs.feature_group_count;
  for (const DimLabel& l : conv_labels(conv, lhs).features) {
    if (groups > 1 && l.kind == LabelKind::kBatch) {
      spec.labels.push_back({l.kind, l.lhs, l.rhs, l.out, groups, groups});
      continue;
    }
    const int64_t size =
        l.lhs >= 0 ? lhs.dim(static_cast<int>(l.lhs)) : rhs.dim(static_cast<int>(l.rhs));
    spec.labels.push_back({l.kind, l.lhs, l.rhs, l.out, size});
  }
  return spec;
}

Sharding joint_to_tensor(const EinsumSpec& spec, const Sharding& joint, EinsumSide side) {
  DimCorrespondence map;
  map.target_rank = spec.shape(side).rank();
  for (int64_t j = 0; j < spec.rank(); ++j) {
    const int64_t d = spec.dim_of(spec.labels[static_cast<size_t>(j)], side);
    if (d < 0) continue;
    map.source_dims.push_back(j);
    map.target_dims.push_back(d);
  }
  return propagate_along_dims_and_replicate_others(joint, map);
}

Sharding tensor_to_joint(const EinsumSpec& spec, const Sharding& sharding, EinsumSide side) {
  DimCorrespondence map;
  map.target_rank = spec.rank();
  for (int64_t j = 0; j < spec.rank(); ++j) {
    const int64_t d = spec.dim_of(spec.labels[static_cast<size_t>(j)], side);
    if (d < 0) continue;
    map.source_dims.push_back(d);
    map.target_dims.push_back(j);
  }
  return propagate_along_dims_and_replicate_others(sharding, map);
}

bool StrategyCost::operator<(const StrategyCost& o) const {
  if (full_replications != o.full_replications) return full_replications < o.full_replications;
  // Bytes within 0.1% are a tie (float noise between equivalent plans).
  const double scale = std::max({bytes, o.bytes, 1.0});
  if (std::abs(bytes - o.bytes) > 1e-3 * scale) return bytes < o.bytes;
  return flops < o.flops;
}

namespace {

double shard_bytes(const Shape& shape, const Sharding& sharding) {
  int64_t elements = 1;
  for (int64_t e : shard_shape(sharding, shape.dims())) elements *= e;
  return static_cast<double>(elements * dtype_bytes(shape.dtype()));
}

int64_t product_of_tiles(const Sharding& s, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= tile_count(s, d);
  return p;
}

bool same_tile_shape(const Sharding& a, const Sharding& b) {
  return a.is_tiled() && b.is_tiled() && a.tile_assignment().dims() == b.tile_assignment().dims() &&
         a.subgroup_types() == b.subgroup_types();
}

std::vector<int64_t> tile_index_or_zero(const Sharding& s, int64_t device, int64_t rank) {
  if (!s.is_tiled()) return std::vector<int64_t>(static_cast<size_t>(rank), 0);
  auto index = *s.tile_index_for_device(device);
  index.resize(static_cast<size_t>(rank));
  return index;
}

// The per-device form of the test in reduce_scatter_dim, for explicit tile
// arrays or groups (O(devices)).
bool scatters_by_device(const Sharding& from, const Sharding& to, const ReplicaGroups& groups,
                        int64_t rank, int64_t devices, int64_t e) {
  for (const auto& group : groups.expand(devices)) {
    for (int64_t k = 0; k < static_cast<int64_t>(group.size()); ++k) {
      const int64_t device = group[static_cast<size_t>(k)];
      std::vector<int64_t> a = tile_index_or_zero(from, device, rank),
                           b = tile_index_or_zero(to, device, rank);
      if (b[static_cast<size_t>(e)] != k) return false;
      a[static_cast<size_t>(e)] = k;
      if (a != b) return false;
    }
  }
  return true;
}

}  // namespace

StrategyCost estimate_reshard(const Shape& shape, const Sharding& from, const Sharding& to,
                              int64_t devices, RelabeledPlanCache* plans) {
  StrategyCost c;
  if (from == to || shape.is_scalar()) return c;
  const int64_t rank = shape.rank();
  std::vector<int64_t> only_in_source, only_in_target;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t s = tile_count(from, d), t = tile_count(to, d);
    if (s > 1 && t == 1) only_in_source.push_back(d);
    if (t > 1 && s == 1) only_in_target.push_back(d);
  }
  if (partially_replicate_on_dims(from, only_in_source) == to) {
    const double g = static_cast<double>(product_of_tiles(from, only_in_source));
    c.bytes = shard_bytes(shape, to) * (g - 1) / g;  // all-gather: (g-1) source shards arrive
  } else if (partially_replicate_on_dims(to, only_in_target) == from) {
    c.bytes = 0;  // local dynamic-slice
  } else if (auto moved = all_to_all_dims(from, to)) {
    const double n = static_cast<double>(tile_count(from, moved->first));
    c.bytes = shard_bytes(shape, from) * (n - 1) / n;
  } else if (same_tile_shape(from, to)) {
    c.bytes = shard_bytes(shape, from);  // collective-permute of the shard
  } else if (RelabeledPlanCache local; const auto& plan = (plans ? *plans : local)
                                                              .plan(from, to, shape.dims(), devices,
                                                                    dtype_bytes(shape.dtype()))) {
    // The rung reshard() takes (reshard_relabel.cc). Refines are local; a
    // coarsen all-gathers m sub-tiles and a move all-to-alls a shard of the
    // same size: (m-1)/m of it each; a relabeling permute sends the whole
    // shard it moves (the source's when first, the target's when last).
    for (const DigitStep& step : plan->steps) {
      const double m = static_cast<double>(step.factor);
      if (step.kind != DigitStep::Kind::kRefine)
        c.bytes += shard_bytes(shape, step.after) * (m - 1) / m;
    }
    if (plan->permute == RelabeledDigitPlan::Permute::kFirst) c.bytes += shard_bytes(shape, from);
    if (plan->permute == RelabeledDigitPlan::Permute::kLast) c.bytes += shard_bytes(shape, to);
  } else {
    c.full_replications = 1;
    const double n = static_cast<double>(devices);
    c.bytes = static_cast<double>(shape.byte_size()) * (n - 1) / n;
  }
  return c;
}

int64_t reduce_scatter_dim(const Sharding& from, const Sharding& to, const ReplicaGroups& groups,
                           int64_t rank, int64_t devices) {
  if (!to.is_tiled() || (!from.is_tiled() && !from.is_replicated())) return -1;
  std::vector<int64_t> changed;
  for (int64_t d = 0; d < rank; ++d)
    if (tile_count(from, d) != tile_count(to, d)) changed.push_back(d);
  if (changed.size() != 1) return -1;
  const int64_t e = changed[0];
  const int64_t g = groups.group_size(devices);
  if (tile_count(from, e) != 1 || tile_count(to, e) != g) return -1;
  // As functions of the device id (tile_coordinates.h): the position in
  // the group must be the target coordinate along e, and every other
  // coordinate must stay. Equal canonical digit lists are equal functions;
  // unequal ones are taken as different (at worst a missed reduce-scatter).
  const auto group_fn = group_digit_pieces(groups, devices);
  const auto a = tile_coordinate_pieces(from, rank), b = tile_coordinate_pieces(to, rank);
  if (group_fn && a && b) {
    if ((*b)[static_cast<size_t>(e)] != group_fn->second) return -1;
    for (int64_t d = 0; d < rank; ++d)
      if (d != e && (*a)[static_cast<size_t>(d)] != (*b)[static_cast<size_t>(d)]) return -1;
    return e;
  }
  if (!scatters_by_device(from, to, groups, rank, devices, e)) return -1;
  return e;
}

std::string DotPlan::describe() const {
  return fmt::format(
      "joint {} lhs {} rhs {} local_out {} partial over {} tile dims; cost: {} full, {} B, {} "
      "flops",
      joint.to_string(), lhs.to_string(), rhs.to_string(), local_out.to_string(),
      partial_tile_dims.size(), cost.full_replications, cost.bytes, cost.flops);
}

DotPlan plan_for_joint(const EinsumSpec& spec, const DotShardings& current, const Sharding& joint,
                       int64_t devices, RelabeledPlanCache* plans, const OperandReuse& reuse) {
  DotPlan plan;
  plan.joint = joint;
  plan.lhs = joint_to_tensor(spec, joint, EinsumSide::kLhs);
  plan.rhs = joint_to_tensor(spec, joint, EinsumSide::kRhs);
  plan.local_out = joint_to_tensor(spec, joint, EinsumSide::kOut);
  for (int64_t j : spec.labels_of(LabelKind::kContracting))
    if (tile_count(joint, j) > 1) plan.partial_tile_dims.push_back(j);

  auto add = [&](const StrategyCost& c) {
    plan.cost.full_replications += c.full_replications;
    plan.cost.bytes += c.bytes;
  };
  // An operand reshard already built is free; a new one is spread over the
  // dots reading that operand (OperandReuse).
  auto operand = [&](int side, const Shape& shape, const Sharding& from, const Sharding& to) {
    const auto& built = reuse.built[side];
    if (std::find(built.begin(), built.end(), to) != built.end()) return;
    StrategyCost c = estimate_reshard(shape, from, to, devices, plans);
    c.bytes /= static_cast<double>(std::max<int64_t>(reuse.sharers[side], 1));
    add(c);
  };
  operand(0, spec.lhs, current.lhs, plan.lhs);
  operand(1, spec.rhs, current.rhs, plan.rhs);
  if (plan.partial_tile_dims.empty()) {
    add(estimate_reshard(spec.out, plan.local_out, current.target, devices, plans));
  } else {
    const double g = static_cast<double>(product_of_tiles(joint, plan.partial_tile_dims));
    const double partial = shard_bytes(spec.out, plan.local_out);
    const ReplicaGroups groups = groups_along_tile_dims(joint, plan.partial_tile_dims);
    if (reduce_scatter_dim(plan.local_out, current.target, groups, spec.out.rank(), devices) >= 0) {
      add(StrategyCost{0, partial * (g - 1) / g, 0});  // reduce-scatter
    } else if (const auto split = split_reduce_scatter(plan.local_out, current.target, groups,
                                                       spec.out.rank(), devices)) {
      // reduce-scatter over s, then all-reduce of the 1/s shard over h = g / s
      const double s = static_cast<double>(tile_count(current.target, split->dim));
      const double h = g / s;
      add(StrategyCost{0, partial * (s - 1) / s + 2 * (partial / s) * (h - 1) / h, 0});
    } else {
      add(StrategyCost{0, 2 * partial * (g - 1) / g, 0});  // all-reduce
      add(estimate_reshard(spec.out, plan.local_out, current.target, devices, plans));
    }
  }
  // Local multiply-adds: the label-space volume over this device's tile.
  double flops = 1;
  for (int64_t j = 0; j < spec.rank(); ++j) {
    const int64_t n = tile_count(joint, j);
    flops *= static_cast<double>((spec.labels[static_cast<size_t>(j)].size + n - 1) / n);
  }
  plan.cost.flops = flops;
  return plan;
}

DotPlan choose_dot_plan(const EinsumSpec& spec, const DotShardings& current, int64_t devices,
                        RelabeledPlanCache* plans, const OperandReuse& reuse) {
  std::vector<Sharding> bases = {tensor_to_joint(spec, current.lhs, EinsumSide::kLhs),
                                 tensor_to_joint(spec, current.rhs, EinsumSide::kRhs),
                                 tensor_to_joint(spec, current.target, EinsumSide::kOut)};
  // Merges first: a plan that matches several tensors at once is the
  // "grouping" of docs/reference/gspmd.md#dot-strategies (e.g. batch on x from the out, contracting
  // on y from the operands).
  std::vector<Sharding> candidates;
  auto merged = [&](std::vector<int> which) -> std::optional<Sharding> {
    std::optional<Sharding> m = bases[static_cast<size_t>(which[0])];
    for (size_t i = 1; i < which.size() && m; ++i)
      m = merge_if_compatible(*m, bases[static_cast<size_t>(which[i])]);
    return m;
  };
  for (const auto& which :
       std::vector<std::vector<int>>{{2, 0, 1}, {2, 0}, {2, 1}, {0, 1}, {2}, {0}, {1}})
    if (auto m = merged(which)) candidates.push_back(*m);
  // Each with whole label classes replicated (the operand that would need
  // them gathered may be cheaper to move than the other).
  const LabelKind kinds[] = {LabelKind::kBatch, LabelKind::kContracting, LabelKind::kLhsFree,
                             LabelKind::kRhsFree};
  const size_t base_count = candidates.size();
  for (size_t c = 0; c < base_count; ++c) {
    for (int mask = 1; mask < 16; ++mask) {
      std::vector<int64_t> dims;
      for (int k = 0; k < 4; ++k)
        if (mask & (1 << k))
          for (int64_t j : spec.labels_of(kinds[k])) dims.push_back(j);
      candidates.push_back(partially_replicate_on_dims(candidates[c], dims));
    }
  }
  candidates.push_back(Sharding::replicated());

  std::optional<DotPlan> best;
  std::map<std::string, bool> seen;
  auto splits_groups = [&](const Sharding& joint) {
    for (int64_t j = 0; j < spec.rank(); ++j) {
      const int64_t g = spec.labels[static_cast<size_t>(j)].groups;
      if (g > 0 && g % tile_count(joint, j) != 0) return false;
    }
    return true;
  };
  for (const Sharding& joint : candidates) {
    if (!seen.emplace(joint.to_string(), true).second || !splits_groups(joint)) continue;
    DotPlan plan = plan_for_joint(spec, current, joint, devices, plans, reuse);
    if (!best || plan.cost < best->cost) best = std::move(plan);
  }
  return *best;
}

}  // namespace podsim::compiler
