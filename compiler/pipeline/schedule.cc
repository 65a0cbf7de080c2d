// Latency-hiding list scheduling (schedule.h).
//
// Units: one per fusion group (position = its root id, the largest member
// id), one per other instruction (position = its id). Edges follow operands
// between units, and always go from a lower to a higher position, so
// position order is a topological order of units.
//
// Priority key (major, minor), compared lexicographically, ties by position:
//  - ordinary unit:      (position, 0)
//  - collective:         just after its latest operand: (k.major, k.minor + 1)
//                        with k = max operand key, clamped to at least
//                        (position - max_collective_hoist, 0)
//  - user of collective: just before its earliest user: (k.major, k.minor - 1)
//                        with k = min user key, never earlier than its own key.
// Kahn's algorithm then always emits the ready unit with the smallest key.
#include "compiler/pipeline/schedule.h"

#include <algorithm>
#include <queue>
#include <tuple>
#include <utility>

#include "compiler/pipeline/fusion.h"

namespace podsim::compiler {
namespace {

struct Key {
  int64_t major = 0;
  int64_t minor = 0;
  bool operator<(const Key& o) const { return std::tie(major, minor) < std::tie(o.major, o.minor); }
};

struct UnitGraph {
  std::vector<int32_t> unit_of;                 // per instruction
  std::vector<std::vector<InstrId>> members;    // per unit, ascending ids
  std::vector<InstrId> position;                // per unit: its largest member id
  std::vector<std::vector<int32_t>> operands;   // per unit: operand units (may repeat)
  std::vector<std::vector<int32_t>> users;      // per unit: user units (may repeat)
  std::vector<bool> is_collective;
};

UnitGraph build_units(const Computation& comp, const FusionPlan& fusion) {
  const int n = comp.size();
  const bool has_plan = fusion.group_of.size() == static_cast<size_t>(n);
  std::vector<bool> duplicated = has_plan ? duplicated_members(fusion, n) : std::vector<bool>(static_cast<size_t>(n));
  UnitGraph g;
  g.unit_of.assign(static_cast<size_t>(n), -1);
  std::vector<int32_t> unit_of_group(has_plan ? fusion.groups.size() : 0, -1);
  for (InstrId id = 0; id < n; ++id) {
    int32_t grp = has_plan ? fusion.group_of[static_cast<size_t>(id)] : -1;
    int32_t unit;
    if (grp >= 0 && !duplicated[static_cast<size_t>(id)]) {
      int32_t& u = unit_of_group[static_cast<size_t>(grp)];
      if (u < 0) {
        u = static_cast<int32_t>(g.members.size());
        g.members.emplace_back();
      }
      unit = u;
    } else {
      unit = static_cast<int32_t>(g.members.size());
      g.members.emplace_back();
    }
    g.unit_of[static_cast<size_t>(id)] = unit;
    g.members[static_cast<size_t>(unit)].push_back(id);
  }
  const size_t units = g.members.size();
  g.position.resize(units);
  g.operands.resize(units);
  g.users.resize(units);
  g.is_collective.assign(units, false);
  for (size_t u = 0; u < units; ++u) {
    g.position[u] = g.members[u].back();
    g.is_collective[u] = g.members[u].size() == 1 && is_collective(comp.instr(g.members[u][0]).opcode);
  }
  // Duplicated members are read by every group that lists them.
  auto add_edge = [&](int32_t from, int32_t to) {
    if (from == to) return;
    g.operands[static_cast<size_t>(to)].push_back(from);
    g.users[static_cast<size_t>(from)].push_back(to);
  };
  for (InstrId id = 0; id < n; ++id)
    for (InstrId op : comp.instr(id).operands) add_edge(g.unit_of[static_cast<size_t>(op)], g.unit_of[static_cast<size_t>(id)]);
  if (has_plan) {
    for (size_t grp = 0; grp < fusion.groups.size(); ++grp)
      for (InstrId m : fusion.groups[grp].members)
        if (duplicated[static_cast<size_t>(m)] && unit_of_group[grp] >= 0)
          add_edge(g.unit_of[static_cast<size_t>(m)], unit_of_group[grp]);
  }
  return g;
}

std::vector<Key> priority_keys(const UnitGraph& g, const ScheduleOptions& options) {
  const size_t units = g.members.size();
  // Units sorted by position form a topological order.
  std::vector<int32_t> order(units);
  for (size_t u = 0; u < units; ++u) order[u] = static_cast<int32_t>(u);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return g.position[static_cast<size_t>(a)] < g.position[static_cast<size_t>(b)]; });

  std::vector<Key> key(units);
  for (int32_t u : order) {
    const auto su = static_cast<size_t>(u);
    key[su] = Key{g.position[su], 0};
    if (!g.is_collective[su]) continue;
    Key earliest{options.max_collective_hoist > 0 ? g.position[su] - options.max_collective_hoist : INT64_MIN, 0};
    Key latest_operand{INT64_MIN, 0};
    for (int32_t op : g.operands[su]) latest_operand = std::max(latest_operand, key[static_cast<size_t>(op)]);
    if (g.operands[su].empty()) latest_operand = earliest;
    else latest_operand.minor += 1;
    key[su] = std::min(key[su], std::max(latest_operand, earliest));
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const auto su = static_cast<size_t>(*it);
    if (g.is_collective[su] || g.users[su].empty()) continue;
    bool reads_collective = std::any_of(g.operands[su].begin(), g.operands[su].end(),
                                        [&](int32_t op) { return g.is_collective[static_cast<size_t>(op)]; });
    if (!reads_collective) continue;
    Key first_user{INT64_MAX, 0};
    for (int32_t user : g.users[su]) first_user = std::min(first_user, key[static_cast<size_t>(user)]);
    first_user.minor -= 1;
    key[su] = std::max(key[su], first_user);
  }
  return key;
}

}  // namespace

std::vector<InstrId> schedule_computation(const Computation& computation, const FusionPlan& fusion,
                                          const ScheduleOptions& options) {
  UnitGraph g = build_units(computation, fusion);
  std::vector<Key> key = priority_keys(g, options);
  const size_t units = g.members.size();
  std::vector<int32_t> pending_operands(units);
  for (size_t u = 0; u < units; ++u) pending_operands[u] = static_cast<int32_t>(g.operands[u].size());

  using Entry = std::tuple<int64_t, int64_t, InstrId, int32_t>;  // key, position, unit
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  auto push = [&](size_t u) { ready.emplace(key[u].major, key[u].minor, g.position[u], static_cast<int32_t>(u)); };
  for (size_t u = 0; u < units; ++u)
    if (pending_operands[u] == 0) push(u);

  std::vector<InstrId> schedule;
  schedule.reserve(static_cast<size_t>(computation.size()));
  while (!ready.empty()) {
    const auto u = static_cast<size_t>(std::get<3>(ready.top()));
    ready.pop();
    schedule.insert(schedule.end(), g.members[u].begin(), g.members[u].end());
    for (int32_t user : g.users[u])
      if (--pending_operands[static_cast<size_t>(user)] == 0) push(static_cast<size_t>(user));
  }
  return schedule;
}

void order_members_by_schedule(FusionPlan& fusion, const std::vector<InstrId>& schedule) {
  // Ids index the computation, not the schedule: size by the largest id seen
  // (a schedule may leave instructions out, e.g. a loop body's unused ones).
  InstrId max_id = -1;
  for (InstrId id : schedule) max_id = std::max(max_id, id);
  for (const FusionGroup& group : fusion.groups)
    for (InstrId id : group.members) max_id = std::max(max_id, id);
  std::vector<int64_t> place(static_cast<size_t>(max_id + 1), -1);
  for (size_t i = 0; i < schedule.size(); ++i) place[static_cast<size_t>(schedule[i])] = static_cast<int64_t>(i);
  for (FusionGroup& group : fusion.groups) {
    InstrId root = group.members.back();  // plan_fusion's root: largest id
    std::sort(group.members.begin(), group.members.end(), [&](InstrId a, InstrId b) {
      if ((a == root) != (b == root)) return b == root;
      return place[static_cast<size_t>(a)] < place[static_cast<size_t>(b)];
    });
  }
}

}  // namespace podsim::compiler
