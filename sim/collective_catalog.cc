// Collective instructions -> placed groups and plans, deduplicated; fast
// timing of all groups at once (see collective_catalog.h).
#include "sim/collective_catalog.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <tuple>

#include "common/error.h"

namespace podsim::sim {

using compiler::Instruction;
using compiler::Opcode;

namespace {

// A collective-broadcast (one member's buffer to every member of its group)
// is costed as an all-gather of the result: each member receives the whole
// buffer, as in a pipelined ring broadcast. A ragged all-to-all as an
// all-to-all of its input buffer.
hw::CollectiveKind kind_of(Opcode op) {
  switch (op) {
    case Opcode::kAllReduce:
      return hw::CollectiveKind::kAllReduce;
    case Opcode::kAllGather:
    case Opcode::kCollectiveBroadcast:
      return hw::CollectiveKind::kAllGather;
    case Opcode::kReduceScatter:
      return hw::CollectiveKind::kReduceScatter;
    case Opcode::kAllToAll:
    case Opcode::kRaggedAllToAll:
      return hw::CollectiveKind::kAllToAll;
    default:
      return hw::CollectiveKind::kCollectivePermute;
  }
}

// Bytes per device as hw/ici/collectives.h defines them. An async start's
// result is a tuple (operands, result, contexts...): its result is element 1;
// all-reduce-start's result is the all-reduce's own.
double collective_bytes(const compiler::Computation& c, const Instruction& instr) {
  const Opcode op = collective_opcode(instr);
  double operand = 0;
  if (op == Opcode::kRaggedAllToAll && instr.operand_count() > 0) {
    operand = static_cast<double>(c.instr(instr.operand(0)).shape.byte_size());
  } else {
    for (compiler::InstrId id : instr.operands)
      operand += static_cast<double>(c.instr(id).shape.byte_size());
  }
  const compiler::Shape& result_shape =
      op != instr.opcode && instr.opcode != Opcode::kAllReduceStart && instr.shape.is_tuple() &&
              instr.shape.tuple_shapes().size() >= 2
          ? instr.shape.tuple_shape(1)
          : instr.shape;
  const auto result = static_cast<double>(result_shape.byte_size());
  switch (op) {
    case Opcode::kCollectiveBroadcast:
    case Opcode::kAllGather:
      return result;  // the full result
    case Opcode::kAllReduce:
      return result;  // operand = result
    default:
      return operand;  // reduce-scatter: full operand; all-to-all, permute: operand
  }
}

// Binary identity of the device groups of an instruction.
std::string groups_key(const Instruction& instr) {
  std::string key;
  auto put = [&key](int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  if (collective_opcode(instr) == Opcode::kCollectivePermute) {
    put(-3);
    for (const auto& [s, t] : instr.attrs.source_target_pairs) put(s), put(t);
    return key;
  }
  const auto& g = instr.attrs.replica_groups;
  if (g.iota) {
    put(-1), put(g.iota->num_groups), put(g.iota->group_size);
    for (int64_t d : g.iota->reshape_dims) put(d);
    put(-4);
    for (int64_t d : g.iota->transpose_perm) put(d);
  } else {
    put(-2);
    for (const auto& group : g.explicit_groups) {
      for (int64_t d : group) put(d);
      put(-5);
    }
  }
  return key;
}

}  // namespace

Opcode collective_opcode(const Instruction& instr) {
  if (const auto wrapped = compiler::async_wrapped_opcode(instr.opcode)) return *wrapped;
  if (instr.opcode == Opcode::kAsyncStart && instr.attrs.async_wrapped)
    return *instr.attrs.async_wrapped;
  return instr.opcode;
}

namespace {

std::vector<int64_t> physical_coords(hw::CoreId core, const std::vector<int64_t>& physical) {
  std::vector<int64_t> coords(physical.size());
  for (size_t d = physical.size(); d-- > 0;) {
    coords[d] = core % physical[d];
    core /= physical[d];
  }
  return coords;
}

}  // namespace

std::vector<int64_t> physical_grid_shape(const std::vector<hw::CoreId>& group,
                                         const hw::Slice& slice) {
  const std::vector<int64_t> physical = slice.physical_shape();
  const size_t n = group.size();
  if (n < 4) return {};
  std::vector<std::vector<int64_t>> coords;
  coords.reserve(n);
  for (hw::CoreId core : group) coords.push_back(physical_coords(core, physical));
  std::vector<int> varying;
  std::vector<int64_t> extent;
  for (size_t d = 0; d < physical.size(); ++d) {
    std::set<int64_t> values;
    for (const auto& c : coords) values.insert(c[d]);
    if (values.size() > 1) {
      varying.push_back(static_cast<int>(d));
      extent.push_back(static_cast<int64_t>(values.size()));
    }
  }
  if (varying.size() < 2) return {};
  if (std::accumulate(extent.begin(), extent.end(), int64_t{1}, std::multiplies<>()) !=
      static_cast<int64_t>(n))
    return {};
  // Try every order of the varying dims as the grid's row-major order.
  std::vector<size_t> order(varying.size());
  std::iota(order.begin(), order.end(), 0);
  do {
    std::vector<int64_t> shape, stride(order.size(), 1);
    for (size_t j : order) shape.push_back(extent[j]);
    for (size_t j = order.size() - 1; j-- > 0;) stride[j] = stride[j + 1] * shape[j + 1];
    bool ok = true;
    for (size_t i = 0; i < n && ok; ++i) {
      size_t rest = i;
      std::vector<int64_t> expected = coords[0];
      for (size_t j = 0; j < order.size(); ++j) {
        const auto index = static_cast<int64_t>(rest) / stride[j];
        rest %= static_cast<size_t>(stride[j]);
        const int dim = varying[order[j]];
        // The coordinate along the grid's axis j: that of the member at
        // position index on the axis, the other axes at 0.
        expected[static_cast<size_t>(dim)] =
            coords[static_cast<size_t>(index * stride[j])][static_cast<size_t>(dim)];
      }
      ok = expected == coords[i];
    }
    if (ok) return shape;
  } while (std::next_permutation(order.begin(), order.end()));
  return {};
}

bool merge_concurrent_plans(const hw::Topology& topology,
                            const std::vector<hw::CollectivePlan>& plans,
                            hw::CollectivePlan& merged) {
  merged = hw::CollectivePlan{};
  if (plans.empty()) return true;
  merged.kind = plans.front().kind;
  merged.algorithm = plans.front().algorithm;
  const size_t phases = plans.front().phases.size();
  for (const auto& p : plans) {
    if (p.phases.size() != phases) return false;
    for (size_t i = 0; i < phases; ++i)
      if (p.phases[i].repeat != plans.front().phases[i].repeat) return false;
  }
  std::vector<double> load(static_cast<size_t>(topology.num_links()), 0.0);
  std::vector<hw::LinkId> touched;
  for (size_t i = 0; i < phases; ++i) {
    hw::Phase phase;
    phase.label = plans.front().phases[i].label;
    phase.repeat = plans.front().phases[i].repeat;
    for (const auto& p : plans) {
      const hw::Phase& part = p.phases[i];
      phase.latency_s = std::max(phase.latency_s, part.latency_s);
      phase.flows.insert(phase.flows.end(), part.flows.begin(), part.flows.end());
      for (const auto& t : part.link_loads) {
        auto& slot = load[static_cast<size_t>(t.link)];
        if (slot == 0) touched.push_back(t.link);
        slot += t.bytes;
      }
    }
    std::sort(touched.begin(), touched.end());
    double slowest = 0;
    for (hw::LinkId id : touched) {
      auto& slot = load[static_cast<size_t>(id)];
      phase.link_loads.push_back({id, slot});
      slowest = std::max(slowest, slot / topology.link(id).bandwidth);
      slot = 0;
    }
    touched.clear();
    phase.step_time_s = slowest + phase.latency_s;
    merged.analytic_time_s += static_cast<double>(phase.repeat) * phase.step_time_s;
    merged.phases.push_back(std::move(phase));
  }
  for (const auto& p : plans)
    merged.bytes_sent_per_device = std::max(merged.bytes_sent_per_device, p.bytes_sent_per_device);
  return true;
}

namespace {

// The members of `group`, laid row-major over `shape`, re-listed row-major
// over the axes in `order` (new axis i = old axis order[i]).
std::vector<hw::CoreId> transpose_group(const std::vector<hw::CoreId>& group,
                                        const std::vector<int64_t>& shape,
                                        const std::vector<size_t>& order) {
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t d = shape.size() - 1; d-- > 0;) stride[d] = stride[d + 1] * shape[d + 1];
  std::vector<int64_t> index(order.size(), 0);  // position along the new axes
  std::vector<hw::CoreId> out;
  out.reserve(group.size());
  for (size_t i = 0; i < group.size(); ++i) {
    int64_t at = 0;
    for (size_t j = 0; j < order.size(); ++j) at += index[j] * stride[order[j]];
    out.push_back(group[static_cast<size_t>(at)]);
    for (size_t j = order.size(); j-- > 0;) {
      if (++index[j] < shape[order[j]]) break;
      index[j] = 0;
    }
  }
  return out;
}

}  // namespace

std::string GroupPlan::label() const {
  return fmt::format(
      "{} [{}], {}", hw::collective_algorithm_name(plan.algorithm),
      shape.empty() ? std::to_string(group.size()) : fmt::format("{}", fmt::join(shape, ", ")),
      layout);
}

GroupPlan plan_group(const hw::System& system, hw::CollectiveQuery query) {
  if (query.kind != hw::CollectiveKind::kCollectivePermute)
    query.group_shape = physical_grid_shape(query.group, system.slice());
  std::vector<GroupPlan> candidates;
  auto add = [&](std::vector<hw::CoreId> group, std::vector<int64_t> shape, std::string layout) {
    for (const GroupPlan& c : candidates)
      if (c.group == group && c.shape == shape) return;
    hw::CollectiveQuery q = query;
    q.group = group;
    q.group_shape = shape;
    candidates.push_back(
        GroupPlan{system.plan(q), std::move(group), std::move(shape), std::move(layout)});
  };
  add(query.group, query.group_shape, "mesh order");
  if (query.kind == hw::CollectiveKind::kAllReduce ||
      query.kind == hw::CollectiveKind::kAllGather ||
      query.kind == hw::CollectiveKind::kReduceScatter) {
    // Any member order moves the same bytes (a ring or torus pass can hand
    // any chunk to any member; ownership is a relabelling), so the runtime
    // may take the members in physical (core id) order: a torus grid where
    // the mesh order is not (Lingvo's zig-zag placement), while a 1-D group
    // is best in its mesh order (ring-preserving placements make that a ring
    // of one-hop neighbours).
    std::vector<hw::CoreId> sorted = query.group;
    std::sort(sorted.begin(), sorted.end());
    const std::vector<int64_t> grid = physical_grid_shape(sorted, system.slice());
    const hw::Topology& topology = system.topology();
    const bool over_cores =
        !grid.empty() && topology.chip_of(sorted[0]) == topology.chip_of(sorted[1]);
    if (!grid.empty() && !over_cores && query.group_shape.empty())
      add(sorted, grid, "physical order");
    // A grid over chips and the devices of each chip (row-major, so the
    // in-chip axis is last): per-device rings on the chips' links (above),
    // the on-chip axis first (each device's rings then carry 1/c of the
    // data), or one ring through every device of a chip in turn, the chips
    // of the innermost chip axis one after another (docs/collectives.md,
    // "Groups over both cores of a chip").
    if (over_cores) {
      const size_t k = grid.size();
      add(sorted, grid, "per-core rings, then on-chip");
      std::vector<size_t> order{k - 1};
      for (size_t d = 0; d + 1 < k; ++d) order.push_back(d);
      std::vector<int64_t> shape{grid[k - 1]};
      shape.insert(shape.end(), grid.begin(), grid.end() - 1);
      add(transpose_group(sorted, grid, order), shape, "on-chip first, then per-core rings");
      std::vector<int64_t> merged(grid.begin(), grid.end() - 2);
      merged.push_back(grid[k - 2] * grid[k - 1]);
      add(sorted, merged, "one ring through the cores of each chip");
      if (k >= 3) {  // the same ring as the first axis
        std::vector<size_t> first{k - 2, k - 1};
        for (size_t d = 0; d + 2 < k; ++d) first.push_back(d);
        std::vector<int64_t> first_shape{grid[k - 2] * grid[k - 1]};
        first_shape.insert(first_shape.end(), grid.begin(), grid.end() - 2);
        add(transpose_group(sorted, grid, first), first_shape,
            "one ring through the cores of each chip, first");
      }
    }
  }
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i)
    if (candidates[i].plan.analytic_time_s < candidates[best].plan.analytic_time_s) best = i;
  return std::move(candidates[best]);
}

CollectiveCatalog::CollectiveCatalog(const hw::System& system, int64_t num_devices)
    : system_(system), num_devices_(num_devices) {}

int32_t CollectiveCatalog::spec_of(const compiler::Computation& computation,
                                   const Instruction& instr) {
  const double bytes = collective_bytes(computation, instr);
  std::string key = groups_key(instr);
  key.append(reinterpret_cast<const char*>(&bytes), sizeof(bytes));
  const Opcode op = collective_opcode(instr);
  key.push_back(static_cast<char>(op));
  auto it = index_by_key_.find(key);
  if (it != index_by_key_.end()) return it->second;

  auto spec = std::make_unique<CollectiveSpec>();
  spec->kind = kind_of(op);
  spec->bytes_per_device = bytes;
  spec->group_of_device.assign(static_cast<size_t>(num_devices_), -1);
  const hw::Placement& placement = system_.placement();
  auto check_device = [&](int64_t device) {
    if (device < 0 || device >= num_devices_)
      throw UserError(
          instr.location,
          fmt::format("{} '{}' names device {} but the program has {} devices",
                      compiler::opcode_name(instr.opcode), instr.name, device, num_devices_),
          "device groups must use partition ids 0..num_partitions-1");
  };
  if (op == Opcode::kCollectivePermute) {
    std::vector<hw::CoreId> members;
    for (const auto& [s, t] : instr.attrs.source_target_pairs) {
      check_device(s), check_device(t);
      spec->permute_pairs.emplace_back(placement.core(s), placement.core(t));
      for (int64_t d : {s, t})
        if (spec->group_of_device[static_cast<size_t>(d)] < 0) {
          spec->group_of_device[static_cast<size_t>(d)] = 0;
          members.push_back(placement.core(d));
        }
    }
    spec->groups.push_back(std::move(members));
    spec->group_shapes.emplace_back();
  } else {
    // No channel id and no global ids with replica_groups={}: XLA's
    // cross-replica mode; the simulated devices are the partitions of one
    // replica, so each is its own group (no transfer).
    const bool cross_replica_only = !instr.attrs.channel_id && !instr.attrs.use_global_device_ids &&
                                    instr.attrs.replica_groups.is_all_devices() && num_devices_ > 1;
    std::vector<std::vector<int64_t>> groups;
    if (cross_replica_only) {
      for (int64_t d = 0; d < num_devices_; ++d) groups.push_back({d});
    } else {
      groups = instr.attrs.replica_groups.expand(num_devices_);
    }
    for (const auto& group : groups) {
      std::vector<hw::CoreId> cores;
      for (int64_t d : group) {
        check_device(d);
        spec->group_of_device[static_cast<size_t>(d)] = static_cast<int32_t>(spec->groups.size());
        cores.push_back(placement.core(d));
      }
      spec->group_shapes.emplace_back();  // plan_group sets it
      spec->groups.push_back(std::move(cores));
    }
  }
  const hw::Topology& topology = system_.topology();
  // Groups inside one slice are planned on slice 0 and moved (every slice's links are slice 0's
  // shifted); groups across slices hierarchically (docs/collectives.md#multi-slice-collectives).
  // In-slice plans are shared by the groups and parts that translate to the same slice-0 group.
  std::map<std::tuple<hw::CollectiveKind, double, std::vector<hw::CoreId>>, GroupPlan> in_slice;
  auto plan_in_slice0 = [&](hw::CollectiveQuery q) -> const GroupPlan& {
    auto key = std::make_tuple(q.kind, q.bytes_per_device, q.group);
    auto it = in_slice.find(key);
    if (it == in_slice.end()) it = in_slice.emplace(key, plan_group(system_, std::move(q))).first;
    return it->second;
  };
  for (size_t g = 0; g < spec->groups.size(); ++g) {
    hw::CollectiveQuery q;
    q.kind = spec->kind;
    q.bytes_per_device = spec->bytes_per_device;
    q.group = spec->groups[g];
    q.group_shape = spec->group_shapes[g];
    q.permute_pairs = spec->permute_pairs;
    if (q.kind == hw::CollectiveKind::kCollectivePermute && q.permute_pairs.empty()) {
      spec->plans.emplace_back();
      spec->plan_labels.emplace_back();
      continue;
    }
    if (topology.num_slices() > 1 && q.kind != hw::CollectiveKind::kCollectivePermute) {
      const auto by_slice = hw::members_by_slice(topology, q.group);
      if (by_slice.size() > 1) {
        spec->crosses_slices = true;
        hw::CollectiveQuery base = q;
        auto planner = [&](hw::CollectiveKind kind, double bytes,
                           const std::vector<hw::CoreId>& group) {
          hw::CollectiveQuery part = base;
          part.kind = kind;
          part.bytes_per_device = bytes;
          part.group = group;
          part.group_shape.clear();
          return plan_in_slice0(std::move(part)).plan;
        };
        spec->plans.push_back(hw::plan_across_slices(topology, q, planner));
        spec->plan_labels.push_back(fmt::format("{} slices x {} devices, in slice then dcn",
                                                by_slice.size(), by_slice.front().size()));
        spec->group_shapes[g].clear();
        continue;
      }
      const int64_t s = topology.slice_of(q.group.front());
      if (s > 0) {
        for (hw::CoreId& c : q.group) c -= s * topology.num_devices();
        const GroupPlan& planned = plan_in_slice0(std::move(q));
        spec->plan_labels.push_back(planned.label());
        spec->groups[g] = planned.group;
        for (hw::CoreId& c : spec->groups[g]) c += s * topology.num_devices();
        spec->group_shapes[g] = planned.shape;
        spec->plans.push_back(hw::shift_to_slice(topology, planned.plan, s));
        continue;
      }
    }
    if (q.kind == hw::CollectiveKind::kCollectivePermute)
      for (const auto& [src, dst] : q.permute_pairs)
        if (topology.slice_of(src) != topology.slice_of(dst)) spec->crosses_slices = true;
    GroupPlan planned = plan_group(system_, std::move(q));
    spec->plan_labels.push_back(planned.label());
    spec->groups[g] = std::move(planned.group);
    spec->group_shapes[g] = std::move(planned.shape);
    spec->plans.push_back(std::move(planned.plan));
  }
  double sent = 0;
  for (const auto& plan : spec->plans) sent = std::max(sent, plan.bytes_sent_per_device);
  const double reduced_fraction = spec->kind == hw::CollectiveKind::kReduceScatter ? 1.0
                                  : spec->kind == hw::CollectiveKind::kAllReduce   ? 0.5
                                                                                   : 0.0;
  spec->dma_hbm_bytes = sent * (2.0 + 2.0 * reduced_fraction);
  const auto index = static_cast<int32_t>(specs_.size());
  specs_.push_back(std::move(spec));
  fast_.emplace_back();
  index_by_key_.emplace(std::move(key), index);
  return index;
}

const FastCollectiveTiming& CollectiveCatalog::fast_timing(int32_t index) {
  auto& slot = fast_[static_cast<size_t>(index)];
  if (slot) return *slot;
  const CollectiveSpec& s = spec(index);
  auto timing = std::make_unique<FastCollectiveTiming>();
  timing->fastest_group_s = std::numeric_limits<double>::infinity();
  for (const auto& plan : s.plans) {
    timing->fastest_group_s = std::min(timing->fastest_group_s, plan.analytic_time_s);
    timing->slowest_group_s = std::max(timing->slowest_group_s, plan.analytic_time_s);
  }
  if (s.plans.empty()) timing->fastest_group_s = 0;
  hw::CollectivePlan merged;
  const bool aligned = merge_concurrent_plans(system_.topology(), s.plans, merged);
  timing->symmetric = aligned && timing->slowest_group_s - timing->fastest_group_s <=
                                     1e-9 * std::max(timing->slowest_group_s, 1e-30);
  if (!aligned) {
    timing->seconds = timing->slowest_group_s;  // no common phases: the slowest group alone
  } else {
    size_t flows = 0;
    for (const auto& phase : merged.phases) flows += phase.flows.size();
    timing->fair_share = flows <= kFairShareFlowLimit;
    timing->seconds = timing->fair_share ? hw::time_plan_fair_share(system_.topology(), merged)
                                         : merged.analytic_time_s;
  }
  // Link busy times: of the merged plan, or (no common phases) of every
  // group's own plan summed, the groups running at once either way.
  std::map<hw::LinkId, double> busy;
  auto add_plan = [&](const hw::CollectivePlan& plan) {
    for (const auto& phase : plan.phases)
      for (const auto& t : phase.link_loads)
        busy[t.link] +=
            static_cast<double>(phase.repeat) * t.bytes / system_.topology().link(t.link).bandwidth;
  };
  auto latency_of = [](const hw::CollectivePlan& plan) {
    double latency = 0;
    for (const auto& phase : plan.phases)
      latency += static_cast<double>(phase.repeat) * phase.latency_s;
    return latency;
  };
  if (aligned) {
    add_plan(merged);
    timing->latency_s = latency_of(merged);
  } else {
    for (const auto& plan : s.plans) {
      add_plan(plan);
      if (plan.analytic_time_s >= timing->slowest_group_s) timing->latency_s = latency_of(plan);
    }
  }
  for (const auto& plan : s.plans) timing->dcn_s = std::max(timing->dcn_s, hw::dcn_time_s(plan));
  timing->link_busy_s.assign(busy.begin(), busy.end());
  slot = std::move(timing);
  return *slot;
}

}  // namespace podsim::sim
