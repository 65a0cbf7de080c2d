// Refine/coarsen/move reshards on the elementary digit grid (reshard.h
// DigitStep; tile_coordinates.h for the digit model), and the all-to-all
// tile exchange they share with the plain all-to-all rung.
//
// On the grid, dim d's tile coordinate is a digit list. If the target's list
// is the source's C followed by P (digits the source replicates), the device
// holding coarse tile i with P-value r holds fine tile i*m + r: with
// extents t = ceil(D/(c m)) and s = ceil(D/c) = m t, that is the local range
// [r t, (r+1) t) of its shard (one dynamic-slice, offset r*t computed from
// partition-id). The reverse gathers the m sub-tiles: the devices that
// differ only in the P digits, ordered by P's value, all-gather along d.
// When c == 1 the coarse tile is the whole dim: padding to m t before the
// slice, or slicing the gathered m t back to D, keeps the layouts aligned.
#include <algorithm>
#include <utility>

#include "compiler/spmd/reshard.h"

namespace podsim::compiler {
namespace {

DigitIds common_prefix(const DigitIds& a, const DigitIds& b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return DigitIds(a.begin(), ia);
}

ReplicaGroups iota_groups(const TileAssignment& rows) {
  ReplicaGroups groups;
  const auto form = rows.iota_form();
  groups.iota = IotaGroups{rows.dim(0), rows.dim(1), form->reshape_dims, form->transpose_perm};
  return groups;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Extents nest (see file comment).
bool nests(int64_t dim_size, int64_t coarse, int64_t m) {
  return coarse == 1 || ceil_div(dim_size, coarse) == m * ceil_div(dim_size, coarse * m);
}

// One dim during planning: its current digit list, how many of its
// trailing digits are still to strip (they follow the common prefix with the
// target) and the target digits still to append, in order.
struct DimState {
  DigitIds current;
  size_t strip_left = 0;
  DigitIds append_left;
};

// Greedy planner state (see plan_digit_steps).
class DigitPlanner {
 public:
  DigitPlanner(const DigitGrid& grid, const std::vector<DigitIds>& from, const std::vector<DigitIds>& to,
               std::span<const int64_t> base_dims)
      : grid_(grid), base_dims_(base_dims) {
    for (size_t d = 0; d < from.size(); ++d) {
      const size_t keep = common_prefix(from[d], to[d]).size();
      dims_.push_back(DimState{from[d], from[d].size() - keep, DigitIds(to[d].begin() + static_cast<long>(keep), to[d].end())});
    }
  }

  std::optional<std::vector<DigitStep>> run() {
    while (!done()) {
      if (try_refine() || try_move() || try_coarsen(/*forced=*/false) || try_coarsen(/*forced=*/true)) {
        if (!feasible_) return std::nullopt;
        continue;
      }
      return std::nullopt;  // unreachable: a forced coarsen always applies while not done
    }
    if (steps_.empty()) return std::nullopt;
    return std::move(steps_);
  }

 private:
  bool done() const {
    return std::all_of(dims_.begin(), dims_.end(), [](const DimState& s) { return s.strip_left == 0 && s.append_left.empty(); });
  }
  bool in_some_list(size_t digit) const {
    for (const DimState& s : dims_)
      if (std::find(s.current.begin(), s.current.end(), digit) != s.current.end()) return true;
    return false;
  }
  // A digit stripped from a dim ends replicated unless some dim appends it.
  bool destined_to_replication(size_t digit) const {
    for (const DimState& s : dims_)
      if (std::find(s.append_left.begin(), s.append_left.end(), digit) != s.append_left.end()) return false;
    return true;
  }
  void check_nests(size_t dim, const DigitIds& base, int64_t m) {
    if (!nests(base_dims_[dim], grid_.product(base), m)) feasible_ = false;
  }
  void strip(size_t dim, size_t count) {
    DimState& s = dims_[dim];
    s.current.resize(s.current.size() - count);
    s.strip_left -= count;
  }
  void append(size_t dim, const DigitIds& digits) {
    DimState& s = dims_[dim];
    s.current.insert(s.current.end(), digits.begin(), digits.end());
    s.append_left.erase(s.append_left.begin(), s.append_left.begin() + static_cast<long>(digits.size()));
  }
  std::vector<DigitIds> layout() const {
    std::vector<DigitIds> out;
    for (const DimState& s : dims_) out.push_back(s.current);
    return out;
  }
  void push(DigitStep step) {
    step.after = sharding_from_digits(grid_, layout());
    steps_.push_back(std::move(step));
  }

  // Free: a dim done stripping takes its next target digits that no dim
  // holds (replicated now) by a local slice.
  bool try_refine() {
    for (size_t b = 0; b < dims_.size(); ++b) {
      const DimState& s = dims_[b];
      if (s.strip_left != 0) continue;
      DigitIds run;
      for (size_t digit : s.append_left) {
        if (in_some_list(digit)) break;
        run.push_back(digit);
      }
      if (run.empty()) continue;
      check_nests(b, s.current, grid_.product(run));
      append(b, run);
      DigitStep step;
      step.kind = DigitStep::Kind::kRefine;
      step.dim = static_cast<int64_t>(b);
      step.factor = grid_.product(run);
      step.minor = grid_.pieces_of(run);
      push(std::move(step));
      return true;
    }
    return false;
  }

  // All-to-all: the last q digits a still strips are the next q digits b
  // (done stripping) appends; the longest such run moves at once.
  bool try_move() {
    for (size_t a = 0; a < dims_.size(); ++a) {
      const DimState& from = dims_[a];
      for (size_t b = 0; b < dims_.size(); ++b) {
        const DimState& to = dims_[b];
        if (b == a || to.strip_left != 0 || from.strip_left == 0) continue;
        for (size_t q = std::min(from.strip_left, to.append_left.size()); q > 0; --q) {
          const DigitIds moved(from.current.end() - static_cast<long>(q), from.current.end());
          if (!std::equal(moved.begin(), moved.end(), to.append_left.begin())) continue;
          const int64_t m = grid_.product(moved);
          check_nests(a, DigitIds(from.current.begin(), from.current.end() - static_cast<long>(q)), m);
          check_nests(b, to.current, m);
          strip(a, q);
          append(b, moved);
          DigitStep step;
          step.kind = DigitStep::Kind::kMove;
          step.dim = static_cast<int64_t>(b);
          step.from_dim = static_cast<int64_t>(a);
          step.factor = m;
          step.groups = iota_groups(groups_from_digits(grid_, moved));
          push(std::move(step));
          return true;
        }
      }
    }
    return false;
  }

  // All-gather of a dim's trailing digits that end replicated; when nothing
  // else applies (forced), of one blocked trailing digit, which a later
  // refine then takes locally. Coarsening to full replication is the
  // fallback rung's job: the plan fails then.
  bool try_coarsen(bool forced) {
    for (size_t a = 0; a < dims_.size(); ++a) {
      const DimState& s = dims_[a];
      size_t q = 0;
      while (q < s.strip_left && destined_to_replication(s.current[s.current.size() - 1 - q])) ++q;
      if (q == 0 && forced && s.strip_left > 0) q = 1;
      if (q == 0) continue;
      const DigitIds gathered(s.current.end() - static_cast<long>(q), s.current.end());
      const int64_t m = grid_.product(gathered);
      check_nests(a, DigitIds(s.current.begin(), s.current.end() - static_cast<long>(q)), m);
      strip(a, q);
      DigitStep step;
      step.kind = DigitStep::Kind::kCoarsen;
      step.dim = static_cast<int64_t>(a);
      step.factor = m;
      step.groups = iota_groups(groups_from_digits(grid_, gathered));
      push(std::move(step));
      if (steps_.back().after.is_replicated()) feasible_ = false;
      return true;
    }
    return false;
  }

  const DigitGrid& grid_;
  std::span<const int64_t> base_dims_;
  std::vector<DimState> dims_;
  std::vector<DigitStep> steps_;
  bool feasible_ = true;
};

}  // namespace

std::optional<std::vector<DigitStep>> plan_digit_steps(const DigitGrid& grid, const std::vector<DigitIds>& from,
                                                       const std::vector<DigitIds>& to,
                                                       std::span<const int64_t> base_dims) {
  return DigitPlanner(grid, from, to, base_dims).run();
}

std::optional<std::vector<DigitStep>> plan_digit_reshard(const Sharding& source, const Sharding& target,
                                                         std::span<const int64_t> base_dims, int64_t devices) {
  const auto rank = static_cast<int64_t>(base_dims.size());
  const Sharding pair[] = {source, target};
  const auto on_grid = layouts_on_common_grid(pair, rank, devices);
  if (!on_grid) return std::nullopt;
  return plan_digit_steps(on_grid->grid, on_grid->layouts[0].data, on_grid->layouts[1].data, base_dims);
}

InstrId exchange_tiles(SpmdContext& context, InstrId x, const TileExchange& e) {
  auto& builder = context.builder();
  const Shape local = context.local_shape(x);
  const auto a = static_cast<size_t>(e.a), b = static_cast<size_t>(e.b);
  if (e.b_chunk * e.factor != local.dims()[b]) {
    std::vector<PadDim> padding(static_cast<size_t>(local.rank()));
    padding[b].high = e.b_chunk * e.factor - local.dims()[b];
    x = builder.pad(x, context.zero(local.dtype()), std::move(padding));
  }
  x = builder.all_to_all(x, e.b, e.groups);
  // Received chunk k (from member k, holding a's sub-tile k) sits at
  // position k along b: split b into [m, chunk], move m in front of a, merge.
  std::vector<int64_t> split = local.dims();
  split[b] = e.b_chunk;
  split.insert(split.begin() + e.b, e.factor);
  x = builder.reshape(x, split);
  const int64_t a_split = e.a < e.b ? e.a : e.a + 1;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < static_cast<int64_t>(split.size()); ++d) {
    if (d == e.b) continue;
    if (d == a_split) perm.push_back(e.b);
    perm.push_back(d);
  }
  x = builder.transpose(x, perm);
  std::vector<int64_t> merged = local.dims();
  merged[a] *= e.factor;
  merged[b] = e.b_chunk;
  x = builder.reshape(x, merged);
  if (merged[a] > e.a_extent) {
    std::vector<SliceDim> slice;
    for (size_t d = 0; d < merged.size(); ++d) slice.push_back(SliceDim{0, d == a ? e.a_extent : merged[d], 1});
    x = builder.slice(x, std::move(slice));
  }
  return x;
}

PartitionedValue apply_digit_reshard(SpmdContext& context, const PartitionedValue& value,
                                     const std::vector<DigitStep>& steps) {
  auto& b = context.builder();
  const auto& base = value.base_shape.dims();
  InstrId x = value.id;
  for (const DigitStep& step : steps) {
    const std::vector<int64_t> target_shard = shard_shape(step.after, base);
    const auto dim = static_cast<size_t>(step.dim);
    switch (step.kind) {
      case DigitStep::Kind::kCoarsen: {
        x = b.all_gather(x, step.dim, step.groups);
        const Shape gathered = context.local_shape(x);
        if (gathered.dims()[dim] > target_shard[dim]) {  // whole dim: drop the last tile's padding
          std::vector<SliceDim> slice;
          for (int i = 0; i < gathered.rank(); ++i) slice.push_back(SliceDim{0, i == step.dim ? target_shard[dim] : gathered.dim(i), 1});
          x = b.slice(x, std::move(slice));
        }
        break;
      }
      case DigitStep::Kind::kMove: {
        const auto from = static_cast<size_t>(step.from_dim);
        x = exchange_tiles(context, x, TileExchange{step.from_dim, step.dim, step.factor, step.groups, target_shard[dim],
                                                    target_shard[from]});
        break;
      }
      case DigitStep::Kind::kRefine: {
        const Shape local = context.local_shape(x);
        const int64_t fine = target_shard[dim];
        if (local.dims()[dim] < fine * step.factor) {  // whole dim: pad to m tiles
          std::vector<PadDim> padding(static_cast<size_t>(local.rank()));
          padding[dim].high = fine * step.factor - local.dims()[dim];
          x = b.pad(x, context.zero(local.dtype()), std::move(padding));
        }
        std::vector<InstrId> starts(static_cast<size_t>(local.rank()), context.zero(DType::kS32));
        const InstrId r = context.emit_digit_coordinate(step.minor);
        starts[dim] = fine == 1 ? r : b.binary(Opcode::kMultiply, r, b.scalar_constant(DType::kS32, static_cast<double>(fine)));
        x = b.dynamic_slice(x, std::move(starts), target_shard);
        break;
      }
    }
  }
  return PartitionedValue{x, value.base_shape, steps.back().after};
}

}  // namespace podsim::compiler
