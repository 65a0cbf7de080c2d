// Latency-hiding list scheduling (schedule.h). One unit per fusion group (position = its root id)
// or other instruction; edges go from lower to higher positions, so position order is
// topological. Kahn's algorithm emits the ready unit with the smallest priority key (major,
// minor); the keys: docs/compiler-backend.md#units-and-priority-keys
#include "compiler/backend/schedule.h"

#include <algorithm>
#include <queue>
#include <tuple>
#include <utility>

#include "compiler/backend/fusion.h"

namespace podsim::compiler {
namespace {

struct Key {
  int64_t major = 0;
  int64_t minor = 0;
  bool operator<(const Key& o) const { return std::tie(major, minor) < std::tie(o.major, o.minor); }
};

struct UnitGraph {
  std::vector<int32_t> unit_of;  // per instruction; -1: folded (recomputed by its readers' units)
  std::vector<std::vector<InstrId>> members;  // per unit, ascending ids
  // Per unit: duplicated cheap members its kernel recomputes (folded, see
  // fold_recomputed_members), ascending ids; emitted with the first of
  // their units that runs.
  std::vector<std::vector<InstrId>> recomputed;
  std::vector<InstrId> position;               // per unit: its largest member id
  std::vector<std::vector<int32_t>> operands;  // per unit: operand units (may repeat)
  std::vector<std::vector<int32_t>> users;     // per unit: user units (may repeat)
  std::vector<bool> is_collective;
  std::vector<bool> is_format_change;  // convert / copy / reshape / transpose / slice members only
  // Known when the computation starts: parameters, constants and the
  // tuple elements of those (a loop body's state, looked through the
  // tuple / get-tuple-element pairs XLA's simplifier removes).
  std::vector<bool> at_start;
  std::vector<int64_t>
      extra_output_bytes;  // per unit: members other than the root read by other units
};

// Members listed in several groups that are recomputed in each (cheap ops,
// fusion.h). Any other op listed in several groups (an inconsistent plan)
// belongs to its group_of group only.
std::vector<bool> recomputed_members(const Computation& comp, const FusionPlan& fusion) {
  const int n = comp.size();
  if (fusion.group_of.size() != static_cast<size_t>(n))
    return std::vector<bool>(static_cast<size_t>(n), false);
  std::vector<bool> duplicated = duplicated_members(fusion, n);
  for (InstrId id = 0; id < n; ++id)
    if (duplicated[static_cast<size_t>(id)] && !is_cheap_to_duplicate(comp.instr(id).opcode))
      duplicated[static_cast<size_t>(id)] = false;
  return duplicated;
}

// A recomputed member d is folded into the units of the groups that list it: each of those units
// reads d's inputs instead. Taken when every reader of d is recomputed inside such a unit;
// otherwise d stays a unit of its own. docs/compiler-backend.md#recomputed-members
std::vector<bool> fold_recomputed_members(const Computation& comp, const FusionPlan& fusion,
                                          const std::vector<bool>& duplicated,
                                          const std::vector<bool>& group_has_unit) {
  const auto n = static_cast<size_t>(comp.size());
  std::vector<bool> folded(n, false);
  std::vector<std::vector<int32_t>> listed_in(n);  // per instruction: groups listing it, ascending
  for (size_t grp = 0; grp < fusion.groups.size(); ++grp)
    for (InstrId m : fusion.groups[grp].members)
      listed_in[static_cast<size_t>(m)].push_back(static_cast<int32_t>(grp));
  for (auto& groups : listed_in)
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  const UserLists users(comp);
  for (InstrId d = comp.size() - 1; d >= 0; --d) {
    const auto sd = static_cast<size_t>(d);
    if (!duplicated[sd] || d == comp.root() || users[d].empty()) continue;
    const auto& mine = listed_in[sd];
    if (!std::all_of(mine.begin(), mine.end(),
                     [&](int32_t grp) { return group_has_unit[static_cast<size_t>(grp)]; }))
      continue;
    folded[sd] = std::all_of(users[d].begin(), users[d].end(), [&](InstrId u) {
      const auto su = static_cast<size_t>(u);
      if (duplicated[su])
        return folded[su] &&
               std::includes(mine.begin(), mine.end(), listed_in[su].begin(), listed_in[su].end());
      const int32_t grp = fusion.group_of[su];
      return grp >= 0 && std::binary_search(mine.begin(), mine.end(), grp);
    });
  }
  return folded;
}

UnitGraph build_units(const Computation& comp, const FusionPlan& fusion) {
  const int n = comp.size();
  const bool has_plan = fusion.group_of.size() == static_cast<size_t>(n);
  std::vector<bool> duplicated = recomputed_members(comp, fusion);
  UnitGraph g;
  g.unit_of.assign(static_cast<size_t>(n), -1);
  std::vector<int32_t> unit_of_group(has_plan ? fusion.groups.size() : 0, -1);
  for (InstrId id = 0; id < n; ++id) {
    int32_t grp = has_plan ? fusion.group_of[static_cast<size_t>(id)] : -1;
    if (grp >= 0 && !duplicated[static_cast<size_t>(id)] &&
        unit_of_group[static_cast<size_t>(grp)] < 0) {
      unit_of_group[static_cast<size_t>(grp)] = static_cast<int32_t>(g.members.size());
      g.members.emplace_back();
    }
  }
  std::vector<bool> group_has_unit(unit_of_group.size());
  for (size_t grp = 0; grp < unit_of_group.size(); ++grp)
    group_has_unit[grp] = unit_of_group[grp] >= 0;
  const std::vector<bool> folded =
      has_plan ? fold_recomputed_members(comp, fusion, duplicated, group_has_unit)
               : std::vector<bool>(static_cast<size_t>(n), false);
  for (InstrId id = 0; id < n; ++id) {
    const auto sid = static_cast<size_t>(id);
    if (folded[sid]) continue;
    int32_t grp = has_plan ? fusion.group_of[sid] : -1;
    int32_t unit;
    if (grp >= 0 && !duplicated[sid]) {
      unit = unit_of_group[static_cast<size_t>(grp)];
    } else {
      unit = static_cast<int32_t>(g.members.size());
      g.members.emplace_back();
    }
    g.unit_of[sid] = unit;
    g.members[static_cast<size_t>(unit)].push_back(id);
  }
  const size_t units = g.members.size();
  g.recomputed.resize(units);
  if (has_plan) {
    for (size_t grp = 0; grp < fusion.groups.size(); ++grp)
      for (InstrId m : fusion.groups[grp].members)
        if (folded[static_cast<size_t>(m)])
          g.recomputed[static_cast<size_t>(unit_of_group[grp])].push_back(m);
    for (auto& r : g.recomputed) {
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
    }
  }
  g.position.resize(units);
  g.operands.resize(units);
  g.users.resize(units);
  g.is_collective.assign(units, false);
  g.is_format_change.assign(units, false);
  g.at_start.assign(units, false);
  // Per instruction (ids are topological): a value known at the start.
  std::vector<char> known(static_cast<size_t>(n), 0);
  for (InstrId id = 0; id < n; ++id) {
    const Instruction& in = comp.instr(id);
    bool k = false;
    switch (in.opcode) {
      case Opcode::kParameter:
      case Opcode::kConstant:
        k = true;
        break;
      case Opcode::kGetTupleElement: {
        const Instruction& t = comp.instr(in.operand(0));
        const int64_t i = in.attrs.tuple_index;
        k = t.opcode == Opcode::kTuple && i >= 0 && i < t.operand_count()
                ? known[static_cast<size_t>(t.operand(static_cast<int>(i)))]
                : known[static_cast<size_t>(in.operand(0))];
        break;
      }
      default:
        break;
    }
    known[static_cast<size_t>(id)] = k;
  }
  g.extra_output_bytes.assign(units, 0);
  // Data movement only: a weight shard's convert, or its slice of a scanned
  // layer stack (dynamic-slice at the loop index) and the reshape after it.
  auto is_format_op = [&](InstrId id) {
    const Opcode op = comp.instr(id).opcode;
    return op == Opcode::kConvert || op == Opcode::kCopy || op == Opcode::kReshape ||
           op == Opcode::kTranspose || op == Opcode::kDynamicSlice || op == Opcode::kSlice;
  };
  for (size_t u = 0; u < units; ++u) {
    g.position[u] = g.members[u].back();
    g.is_collective[u] =
        g.members[u].size() == 1 && is_collective(comp.instr(g.members[u][0]).opcode);
    g.is_format_change[u] =
        std::all_of(g.members[u].begin(), g.members[u].end(), is_format_op) &&
        std::all_of(g.recomputed[u].begin(), g.recomputed[u].end(), is_format_op);
    g.at_start[u] = std::all_of(g.members[u].begin(), g.members[u].end(),
                                [&](InstrId id) { return known[static_cast<size_t>(id)] != 0; });
  }
  // A member other than its unit's root read by another unit is an extra
  // output of a multi-output kernel (fusion.h): the kernel writes it.
  std::vector<bool> read_outside(static_cast<size_t>(n), false);
  auto add_edge = [&](InstrId producer, int32_t to) {
    const int32_t from = g.unit_of[static_cast<size_t>(producer)];
    if (from == to) return;
    g.operands[static_cast<size_t>(to)].push_back(from);
    g.users[static_cast<size_t>(from)].push_back(to);
    read_outside[static_cast<size_t>(producer)] = true;
  };
  // A folded operand is recomputed inside the reading unit (by construction).
  for (InstrId id = 0; id < n; ++id) {
    const int32_t unit = g.unit_of[static_cast<size_t>(id)];
    if (unit < 0) continue;
    for (InstrId op : comp.instr(id).operands)
      if (!folded[static_cast<size_t>(op)]) add_edge(op, unit);
  }
  // A folded member reads its inputs in each unit that recomputes it.
  for (size_t u = 0; u < units; ++u)
    for (InstrId d : g.recomputed[u])
      for (InstrId op : comp.instr(d).operands)
        if (!folded[static_cast<size_t>(op)]) add_edge(op, static_cast<int32_t>(u));
  // A duplicated member that is a unit of its own is read by every group
  // that lists it.
  if (has_plan) {
    for (size_t grp = 0; grp < fusion.groups.size(); ++grp)
      for (InstrId m : fusion.groups[grp].members)
        if (duplicated[static_cast<size_t>(m)] && !folded[static_cast<size_t>(m)] &&
            unit_of_group[grp] >= 0)
          add_edge(m, unit_of_group[grp]);
  }
  for (size_t u = 0; u < units; ++u)
    for (InstrId m : g.members[u])
      if (m != g.position[u] && read_outside[static_cast<size_t>(m)])
        g.extra_output_bytes[u] += comp.instr(m).shape.byte_size();
  return g;
}

std::vector<Key> priority_keys(const UnitGraph& g, const ScheduleOptions& options) {
  const size_t units = g.members.size();
  // Units sorted by position form a topological order.
  std::vector<int32_t> order(units);
  for (size_t u = 0; u < units; ++u) order[u] = static_cast<int32_t>(u);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return g.position[static_cast<size_t>(a)] < g.position[static_cast<size_t>(b)];
  });

  std::vector<Key> key(units);
  for (int32_t u : order) {
    const auto su = static_cast<size_t>(u);
    key[su] = Key{g.position[su], 0};
    if (!g.is_collective[su]) {
      // A collective's feeder: a format change (convert, copy, reshape,
      // transpose, slice) read only by collectives whose operands are known
      // at the start (the f32 -> bf16 convert of a weight shard before its
      // all-gather, in a scanned layer loop with the shard's dynamic-slice of
      // the stacked weights). It moves up with the earliest of those
      // collectives, or the prefetch could never pass it.
      const bool feeds_only_collectives =
          g.is_format_change[su] && !g.users[su].empty() && !g.operands[su].empty() &&
          std::all_of(g.users[su].begin(), g.users[su].end(),
                      [&](int32_t user) { return g.is_collective[static_cast<size_t>(user)]; }) &&
          std::all_of(g.operands[su].begin(), g.operands[su].end(),
                      [&](int32_t op) {
                        const auto so = static_cast<size_t>(op);
                        return g.operands[so].empty() || g.at_start[so];
                      });
      if (!feeds_only_collectives || options.max_collective_hoist <= 0) continue;
      int64_t first_user = INT64_MAX;
      for (int32_t user : g.users[su])
        first_user =
            std::min(first_user, static_cast<int64_t>(g.position[static_cast<size_t>(user)]));
      Key latest_operand{INT64_MIN, 0};
      for (int32_t op : g.operands[su])
        latest_operand = std::max(latest_operand, key[static_cast<size_t>(op)]);
      latest_operand.minor += 1;
      key[su] = std::min(
          key[su], std::max(latest_operand, Key{first_user - options.max_collective_hoist, -1}));
      continue;
    }
    Key earliest{options.max_collective_hoist > 0 ? g.position[su] - options.max_collective_hoist
                                                  : INT64_MIN,
                 0};
    Key latest_operand{INT64_MIN, 0};
    for (int32_t op : g.operands[su])
      latest_operand = std::max(latest_operand, key[static_cast<size_t>(op)]);
    if (g.operands[su].empty())
      latest_operand = earliest;
    else
      latest_operand.minor += 1;
    key[su] = std::min(key[su], std::max(latest_operand, earliest));
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const auto su = static_cast<size_t>(*it);
    if (g.is_collective[su] || g.users[su].empty()) continue;
    bool reads_collective =
        std::any_of(g.operands[su].begin(), g.operands[su].end(),
                    [&](int32_t op) { return g.is_collective[static_cast<size_t>(op)]; });
    if (!reads_collective) continue;
    Key first_user{INT64_MAX, 0};
    for (int32_t user : g.users[su])
      first_user = std::min(first_user, key[static_cast<size_t>(user)]);
    first_user.minor -= 1;
    key[su] = std::max(key[su], first_user);
  }
  return key;
}

// Bytes a unit writes to HBM: its root's array leaves plus a multi-output
// kernel's extra outputs; nothing for aliases (parameter, tuple,
// get-tuple-element, while) and for a duplicated cheap member that stays a
// unit of its own (recomputed inside the groups that list it; folded ones
// are no unit at all).
int64_t allocated_bytes(const Computation& comp, const UnitGraph& g, size_t unit,
                        const std::vector<bool>& duplicated) {
  const InstrId root = g.members[unit].back();
  if (g.members[unit].size() == 1 && duplicated[static_cast<size_t>(root)]) return 0;
  switch (comp.instr(root).opcode) {
    case Opcode::kParameter:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kWhile:
      return 0;
    default:
      return comp.instr(root).shape.byte_size() + g.extra_output_bytes[unit];
  }
}

std::vector<int32_t> distinct(std::vector<int32_t> units) {
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  return units;
}

// Kahn's algorithm over the units with a priority queue of keys. The static
// key is refined when a unit becomes ready: a collective starts right after
// its latest operand as emitted (within the hoist limit); a memory-reducing
// unit (schedule.h) right after its operands, or collective_result_lag positions
// after a collective operand. Tracks, per unit output, the readers still to
// run; when one reader is left, that reader frees the output.
// Constant-only units run early only when an early unit needs them.
class MemoryAwareQueue {
 public:
  static constexpr size_t kTailFractionOfUnits = 16;

  MemoryAwareQueue(const Computation& comp, const FusionPlan& fusion, const UnitGraph& g,
                   const std::vector<Key>& key, const ScheduleOptions& options)
      : g_(g), key_(key), options_(options) {
    const size_t units = g.members.size();
    const std::vector<bool> duplicated = recomputed_members(comp, fusion);
    operands_.resize(units);
    readers_.resize(units);
    alloc_.resize(units);
    freed_.assign(units, 0);
    pending_.resize(units);
    remaining_readers_.resize(units);
    emitted_key_.resize(units);
    collective_key_.resize(units);
    done_.assign(units, false);
    tail_.assign(units, false);
    eager_pushed_.assign(units, false);
    ran_early_.assign(units, false);
    pulled_.assign(units, false);
    for (size_t u = 0; u < units; ++u) {
      operands_[u] = distinct(g.operands[u]);
      readers_[u] = distinct(g.users[u]);
      alloc_[u] = allocated_bytes(comp, g, u, duplicated);
      pending_[u] = static_cast<int32_t>(operands_[u].size());
      remaining_readers_[u] = static_cast<int32_t>(readers_[u].size());
    }
    for (size_t u = 0; u < units; ++u)
      if (readers_[u].size() == 1) freed_[static_cast<size_t>(readers_[u][0])] += alloc_[u];
    // Static: computed from constants alone (no parameter; units by
    // position are topological).
    static_.assign(units, true);
    for (size_t u = 0; u < units; ++u)
      if (comp.instr(g.members[u].back()).opcode == Opcode::kParameter) static_[u] = false;
    std::vector<size_t> by_position(units);
    for (size_t u = 0; u < units; ++u) by_position[u] = u;
    std::sort(by_position.begin(), by_position.end(),
              [&](size_t a, size_t b) { return g.position[a] < g.position[b]; });
    for (size_t u : by_position)
      for (int32_t op : operands_[u]) static_[u] = static_[u] && static_[static_cast<size_t>(op)];
    pending_dynamic_.assign(units, 0);
    for (size_t u = 0; u < units; ++u)
      for (int32_t op : operands_[u])
        pending_dynamic_[u] += static_[static_cast<size_t>(op)] ? 0 : 1;
    root_unit_ = g.unit_of[static_cast<size_t>(comp.root())];
    if (options.memory_aware) mark_tails(root_unit_);
    for (size_t u = 0; u < units; ++u)
      if (pending_[u] == 0) push_ready(u);
  }

  bool empty() {
    while (!ready_.empty() && done_[static_cast<size_t>(std::get<4>(ready_.top()))]) ready_.pop();
    while (!ready_collectives_.empty() &&
           done_[static_cast<size_t>(ready_collectives_.top().second)])
      ready_collectives_.pop();
    return ready_.empty();
  }

  // The next unit (call only when !empty()). A unit running early never
  // passes a ready collective that came before it in the original order
  // (that collective starts first), so no collective starts later than it
  // would without memory awareness for that reason.
  size_t pop() {
    auto [major, minor, not_collective, position, unit] = ready_.top();
    if (!ready_collectives_.empty() && ready_collectives_.top().first < position &&
        !g_.is_collective[static_cast<size_t>(unit)]) {
      unit = ready_collectives_.top().second;
      const Key k = collective_key_[static_cast<size_t>(unit)];
      major = k.major;
      minor = k.minor;
      ready_collectives_.pop();
    } else {
      ready_.pop();
    }
    const auto u = static_cast<size_t>(unit);
    done_[u] = true;
    emitted_key_[u] = Key{major, minor};
    ran_early_[u] = memory_aware_early(u);
    last_emitted_ = emitted_key_[u];
    for (int32_t op : operands_[u]) {
      const auto so = static_cast<size_t>(op);
      if (--remaining_readers_[so] != 1) continue;
      for (int32_t reader : readers_[so]) {
        const auto sr = static_cast<size_t>(reader);
        if (done_[sr]) continue;
        freed_[sr] += alloc_[so];
        if (pending_[sr] == 0) push_if_eager(sr);
        break;
      }
    }
    for (int32_t reader : readers_[u]) {
      const auto sr = static_cast<size_t>(reader);
      if (--pending_[sr] == 0) {
        push_ready(sr);
      } else if (!static_[u] && --pending_dynamic_[sr] == 0 && options_.memory_aware &&
                 !g_.is_collective[sr] && reduces_memory(sr)) {
        for (int32_t op : operands_[sr]) pull_constants(static_cast<size_t>(op));
      }
    }
    return u;
  }

 private:
  // Tail units (schedule.h): the units depending on each, the root aside,
  // collected in reverse topological order until there are more than
  // tail_size_limit, or 1/kTailFractionOfUnits of all units (in a small
  // program, e.g. one layer or a loop body, almost everything would be a
  // tail and run as early as possible, ahead of collectives' operands).
  void mark_tails(int32_t root_unit) {
    const size_t units = g_.members.size();
    const auto limit = std::min(static_cast<size_t>(std::max<int64_t>(0, options_.tail_size_limit)),
                                units / kTailFractionOfUnits);
    tail_.assign(units, false);
    std::vector<std::vector<int32_t>> dependents(units);
    std::vector<size_t> by_position(units);
    for (size_t u = 0; u < units; ++u) by_position[u] = u;
    std::sort(by_position.begin(), by_position.end(),
              [&](size_t a, size_t b) { return g_.position[a] > g_.position[b]; });
    for (size_t u : by_position) {
      if (static_cast<int32_t>(u) == root_unit) continue;
      bool small = true;
      std::vector<int32_t>& mine = dependents[u];
      for (int32_t reader : readers_[u]) {
        if (reader == root_unit) continue;
        const auto sr = static_cast<size_t>(reader);
        if (!tail_[sr]) {
          small = false;
          break;
        }
        mine.push_back(reader);
        mine.insert(mine.end(), dependents[sr].begin(), dependents[sr].end());
        mine = distinct(std::move(mine));
        if (mine.size() > limit) {
          small = false;
          break;
        }
      }
      tail_[u] = small;
      if (!small) mine = {};
    }
  }

  // Runs early (schedule.h): a tail unit, or one that frees more than it
  // allocates. Never a unit computed from constants alone (a constant, its
  // broadcast, partition offsets, a loop's zero accumulator): it keeps its
  // place unless a unit that runs early reads it (pull_constants).
  bool reduces_memory(size_t u) const {
    if (static_[u]) return false;
    if (tail_[u] && consumes_tail_only_value(u)) return true;
    return freed_[u] > alloc_[u];
  }

  // A tail runs early only when it reads a (computed) value that only tails
  // read, e.g. a gradient: the chain then ends that value's life. A tail
  // reading only values that other work reads as well (the saved input of
  // a layer whose recomputation is a tail near the end of the backward
  // pass) would only start its own values' lives early.
  bool consumes_tail_only_value(size_t u) const {
    return std::any_of(operands_[u].begin(), operands_[u].end(), [&](int32_t op) {
      const auto so = static_cast<size_t>(op);
      return !static_[so] && alloc_[so] > 0 &&
             std::all_of(readers_[so].begin(), readers_[so].end(), [&](int32_t r) {
               return tail_[static_cast<size_t>(r)] || r == root_unit_;
             });
    });
  }

  // A unit that would run early waits only for constant-only operands:
  // they run now (with their own constant-only operands), so that they do
  // not hold it back to their place in the original order.
  void pull_constants(size_t u) {
    if (done_[u] || pulled_[u]) return;
    pulled_[u] = true;
    if (pending_[u] == 0) {
      push(u, Key{last_emitted_.major, last_emitted_.minor + 1});
      return;
    }
    for (int32_t op : operands_[u]) pull_constants(static_cast<size_t>(op));
  }

  // Emitted before its static key (ran early, see reduces_memory).
  bool memory_aware_early(size_t u) const {
    return options_.memory_aware && emitted_key_[u] < key_[u];
  }

  // Right after the latest operand as emitted; collective operands add the lag.
  Key after_operands(size_t u, int64_t collective_lag) const {
    Key latest{INT64_MIN, 0};
    for (int32_t op : operands_[u]) {
      const Key& k = emitted_key_[static_cast<size_t>(op)];
      latest = std::max(latest, g_.is_collective[static_cast<size_t>(op)] && collective_lag > 0
                                    ? Key{k.major + collective_lag, 0}
                                    : Key{k.major, k.minor + 1});
    }
    return latest;
  }

  // Memory-aware, ties go to collectives (they start as early as they may,
  // before units that run early); then by position.
  void push(size_t u, Key k) {
    const int collective_first = options_.memory_aware && g_.is_collective[u] ? 0 : 1;
    ready_.emplace(k.major, k.minor, collective_first, g_.position[u], static_cast<int32_t>(u));
  }

  void push_ready(size_t u) {
    if (g_.is_collective[u] && !operands_[u].empty()) {
      // The hoist limit keeps prefetches (e.g. weight all-gathers) near
      // their use; a collective of work that ran early follows that work.
      const bool follows_early_work =
          std::any_of(operands_[u].begin(), operands_[u].end(),
                      [&](int32_t op) { return ran_early_[static_cast<size_t>(op)]; });
      const Key earliest{options_.max_collective_hoist > 0 && !follows_early_work
                             ? g_.position[u] - options_.max_collective_hoist
                             : INT64_MIN,
                         0};
      const Key k = std::min(Key{g_.position[u], 0}, std::max(after_operands(u, 0), earliest));
      push(u, k);
      collective_key_[u] = k;
      ready_collectives_.emplace(g_.position[u], static_cast<int32_t>(u));
      return;
    }
    push(u, key_[u]);
    if (pulled_[u]) push(u, Key{last_emitted_.major, last_emitted_.minor + 1});
    push_if_eager(u);
  }

  void push_if_eager(size_t u) {
    if (!options_.memory_aware || eager_pushed_[u] || g_.is_collective[u] || !reduces_memory(u))
      return;
    const Key eager = operands_[u].empty() ? Key{INT64_MIN / 2, 0}
                                           : after_operands(u, options_.collective_result_lag);
    if (!(eager < key_[u])) return;
    eager_pushed_[u] = true;
    push(u, eager);
  }

  using Entry = std::tuple<int64_t, int64_t, int, InstrId,
                           int32_t>;  // key, collectives first, position, unit
  const UnitGraph& g_;
  const std::vector<Key>& key_;
  const ScheduleOptions& options_;
  std::vector<std::vector<int32_t>> operands_, readers_;  // distinct
  std::vector<int64_t> alloc_, freed_;
  std::vector<bool> tail_, static_;
  int32_t root_unit_ = -1;
  std::vector<int32_t> pending_, remaining_readers_;
  std::vector<Key> emitted_key_, collective_key_;
  std::vector<bool> done_, eager_pushed_, ran_early_, pulled_;
  std::vector<int32_t> pending_dynamic_;  // operands not yet emitted that are not constant-only
  Key last_emitted_{INT64_MIN / 2, 0};
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready_;
  using ByPosition = std::pair<InstrId, int32_t>;  // position, unit
  std::priority_queue<ByPosition, std::vector<ByPosition>, std::greater<>> ready_collectives_;
};

}  // namespace

std::vector<InstrId> schedule_computation(const Computation& computation, const FusionPlan& fusion,
                                          const ScheduleOptions& options) {
  UnitGraph g = build_units(computation, fusion);
  std::vector<Key> key = priority_keys(g, options);
  MemoryAwareQueue queue(computation, fusion, g, key, options);
  std::vector<InstrId> schedule;
  schedule.reserve(static_cast<size_t>(computation.size()));
  std::vector<bool> scheduled(g.members.size(), false);
  // A folded recomputed member is emitted once, with the first unit that
  // recomputes it (in id order with its members: ids are topological).
  std::vector<bool> emitted(static_cast<size_t>(computation.size()), false);
  auto emit = [&](size_t u) {
    scheduled[u] = true;
    std::vector<InstrId> ids = g.members[u];
    for (InstrId d : g.recomputed[u])
      if (!emitted[static_cast<size_t>(d)]) ids.push_back(d);
    std::sort(ids.begin(), ids.end());
    for (InstrId id : ids) emitted[static_cast<size_t>(id)] = true;
    schedule.insert(schedule.end(), ids.begin(), ids.end());
  };
  while (!queue.empty()) emit(queue.pop());
  // A cycle between units (only an inconsistent fusion plan makes one) must
  // not drop instructions: the rest follows in position order.
  if (schedule.size() < static_cast<size_t>(computation.size())) {
    std::vector<size_t> rest;
    for (size_t u = 0; u < g.members.size(); ++u)
      if (!scheduled[u]) rest.push_back(u);
    std::sort(rest.begin(), rest.end(),
              [&](size_t a, size_t b) { return g.position[a] < g.position[b]; });
    for (size_t u : rest) emit(u);
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
  for (size_t i = 0; i < schedule.size(); ++i)
    place[static_cast<size_t>(schedule[i])] = static_cast<int64_t>(i);
  for (FusionGroup& group : fusion.groups) {
    InstrId root = group.members.back();  // plan_fusion's root: largest id
    std::sort(group.members.begin(), group.members.end(), [&](InstrId a, InstrId b) {
      if ((a == root) != (b == root)) return b == root;
      return place[static_cast<size_t>(a)] < place[static_cast<size_t>(b)];
    });
  }
}

}  // namespace podsim::compiler
