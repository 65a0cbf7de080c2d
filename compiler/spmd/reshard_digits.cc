// Refine/coarsen/move reshards on the elementary digit grid (reshard.h DigitStep;
// tile_coordinates.h for the digit model), and the all-to-all tile exchange they share with the
// plain all-to-all rung. Why each step is one dynamic-slice, all-gather or all-to-all:
// docs/compiler.md#digit-steps-on-the-grid
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

// Which step a greedy pass prefers after the free refines (see
// plan_digit_steps): moves, or gathering each dim's stripped digits whole
// unless they are exactly another dim's next digits (one move).
enum class Preference { kMoves, kWholeGathers };

// Greedy planner state (see plan_digit_steps).
class DigitPlanner {
 public:
  DigitPlanner(const DigitGrid& grid, const std::vector<DigitIds>& from,
               const std::vector<DigitIds>& to, std::span<const int64_t> base_dims,
               Preference preference)
      : grid_(grid), base_dims_(base_dims), preference_(preference) {
    for (size_t d = 0; d < from.size(); ++d) {
      const size_t keep = common_prefix(from[d], to[d]).size();
      dims_.push_back(DimState{from[d], from[d].size() - keep,
                               DigitIds(to[d].begin() + static_cast<long>(keep), to[d].end())});
    }
  }

  std::optional<std::vector<DigitStep>> run() {
    while (!done()) {
      const bool whole = preference_ == Preference::kWholeGathers;
      if (try_refine() || (whole && try_whole_coarsen()) || try_move() ||
          try_coarsen(/*forced=*/false) || try_coarsen(/*forced=*/true)) {
        if (!feasible_) return std::nullopt;
        continue;
      }
      return std::nullopt;  // no step nests
    }
    if (steps_.empty()) return std::nullopt;
    return std::move(steps_);
  }

 private:
  bool done() const {
    return std::all_of(dims_.begin(), dims_.end(), [](const DimState& s) {
      return s.strip_left == 0 && s.append_left.empty();
    });
  }
  bool in_some_list(size_t digit) const {
    for (const DimState& s : dims_)
      if (std::find(s.current.begin(), s.current.end(), digit) != s.current.end()) return true;
    return false;
  }
  // A digit stripped from a dim ends replicated unless some dim appends it.
  bool destined_to_replication(size_t digit) const {
    for (const DimState& s : dims_)
      if (std::find(s.append_left.begin(), s.append_left.end(), digit) != s.append_left.end())
        return false;
    return true;
  }
  // Nesting (file comment) of stripping a's last q digits / appending
  // digits of product m to b.
  bool strip_nests(size_t a, size_t q) const {
    const DigitIds& digits = dims_[a].current;
    const DigitIds kept(digits.begin(), digits.end() - static_cast<long>(q));
    return nests(base_dims_[a], grid_.product(kept),
                 grid_.product(DigitIds(digits.end() - static_cast<long>(q), digits.end())));
  }
  bool append_nests(size_t b, int64_t m) const {
    return nests(base_dims_[b], grid_.product(dims_[b].current), m);
  }
  void strip(size_t dim, size_t count) {
    DimState& s = dims_[dim];
    s.current.resize(s.current.size() - count);
    s.strip_left -= count;
  }
  void append(size_t dim, const DigitIds& digits) {
    DimState& s = dims_[dim];
    s.current.insert(s.current.end(), digits.begin(), digits.end());
    s.append_left.erase(s.append_left.begin(),
                        s.append_left.begin() + static_cast<long>(digits.size()));
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
      // A part of the digits now only if the rest can still nest below it
      // (else later, with the rest, where [c, c m) nests if the parts do not).
      const DigitIds rest(s.append_left.begin() + static_cast<long>(run.size()),
                          s.append_left.end());
      if (!rest.empty() &&
          !nests(base_dims_[b], grid_.product(s.current) * grid_.product(run), grid_.product(rest)))
        continue;
      // The digits kept below cannot change any more: a refine that does
      // not nest now never will (nor will a part of it).
      if (!append_nests(b, grid_.product(run))) feasible_ = false;
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
  // (done stripping) appends; the longest such run whose extents nest
  // moves at once.
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
          if (!strip_nests(a, q) || !append_nests(b, m)) continue;
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
  // refine then takes locally. If the extents do not nest, more trailing
  // digits go with them (stripping a dim down to its common prefix with
  // c == 1 always nests). Coarsening to full replication is the fallback
  // rung's job: the plan fails then.
  bool try_coarsen(bool forced) {
    for (size_t a = 0; a < dims_.size(); ++a) {
      const DimState& s = dims_[a];
      size_t q = 0;
      while (q < s.strip_left && destined_to_replication(s.current[s.current.size() - 1 - q])) ++q;
      if (q == 0 && forced && s.strip_left > 0)
        q = preference_ == Preference::kWholeGathers ? s.strip_left : 1;
      if (q == 0) continue;
      while (q < s.strip_left && !strip_nests(a, q)) ++q;
      if (!strip_nests(a, q)) continue;
      push_coarsen(a, q);
      return true;
    }
    return false;
  }

  // kWholeGathers: a dim's stripped digits in one all-gather, unless they
  // are exactly another dim's remaining digits to append (a move).
  bool try_whole_coarsen() {
    for (size_t a = 0; a < dims_.size(); ++a) {
      const DimState& s = dims_[a];
      if (s.strip_left == 0) continue;
      const DigitIds stripped(s.current.end() - static_cast<long>(s.strip_left), s.current.end());
      bool moves = false;
      for (size_t b = 0; b < dims_.size(); ++b) moves |= b != a && dims_[b].append_left == stripped;
      if (moves || !strip_nests(a, s.strip_left)) continue;
      push_coarsen(a, s.strip_left);
      return true;
    }
    return false;
  }

  // All-gather of dim a's last q digits (a fails the plan if it replicates).
  void push_coarsen(size_t a, size_t q) {
    const DigitIds& digits = dims_[a].current;
    const DigitIds gathered(digits.end() - static_cast<long>(q), digits.end());
    strip(a, q);
    DigitStep step;
    step.kind = DigitStep::Kind::kCoarsen;
    step.dim = static_cast<int64_t>(a);
    step.factor = grid_.product(gathered);
    step.groups = iota_groups(groups_from_digits(grid_, gathered));
    push(std::move(step));
    if (steps_.back().after.is_replicated()) feasible_ = false;
  }

  const DigitGrid& grid_;
  std::span<const int64_t> base_dims_;
  Preference preference_;
  std::vector<DimState> dims_;
  std::vector<DigitStep> steps_;
  bool feasible_ = true;
};

int64_t shard_elements(const Sharding& sharding, std::span<const int64_t> base_dims) {
  int64_t n = 1;
  for (int64_t e : shard_shape(sharding, base_dims)) n *= e;
  return n;
}

}  // namespace

double digit_steps_cost(const std::vector<DigitStep>& steps, std::span<const int64_t> base_dims,
                        int64_t element_bytes, double collective_latency_bytes) {
  double cost = 0;
  for (const DigitStep& step : steps)
    if (step.kind != DigitStep::Kind::kRefine)
      cost += collective_latency_bytes +
              static_cast<double>(shard_elements(step.after, base_dims) * element_bytes) *
                  static_cast<double>(step.factor - 1) / static_cast<double>(step.factor);
  return cost;
}

std::optional<std::vector<DigitStep>> plan_digit_steps(
    const DigitGrid& grid, const std::vector<DigitIds>& from, const std::vector<DigitIds>& to,
    std::span<const int64_t> base_dims, int64_t element_bytes, double collective_latency_bytes) {
  auto moves = DigitPlanner(grid, from, to, base_dims, Preference::kMoves).run();
  auto gathers = DigitPlanner(grid, from, to, base_dims, Preference::kWholeGathers).run();
  if (!moves || !gathers) return moves ? std::move(moves) : std::move(gathers);
  // Ties go to the moves (all-to-alls move less than gathers' outputs grow).
  return digit_steps_cost(*gathers, base_dims, element_bytes, collective_latency_bytes) <
                 digit_steps_cost(*moves, base_dims, element_bytes, collective_latency_bytes)
             ? std::move(gathers)
             : std::move(moves);
}

std::optional<std::vector<DigitStep>> plan_digit_reshard(const Sharding& source,
                                                         const Sharding& target,
                                                         std::span<const int64_t> base_dims,
                                                         int64_t devices, int64_t element_bytes,
                                                         double collective_latency_bytes) {
  const auto rank = static_cast<int64_t>(base_dims.size());
  const Sharding pair[] = {source, target};
  const auto on_grid = layouts_on_common_grid(pair, rank, devices);
  if (!on_grid) return std::nullopt;
  return plan_digit_steps(on_grid->grid, on_grid->layouts[0].data, on_grid->layouts[1].data,
                          base_dims, element_bytes, collective_latency_bytes);
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
    for (size_t d = 0; d < merged.size(); ++d)
      slice.push_back(SliceDim{0, d == a ? e.a_extent : merged[d], 1});
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
          for (int i = 0; i < gathered.rank(); ++i)
            slice.push_back(SliceDim{0, i == step.dim ? target_shard[dim] : gathered.dim(i), 1});
          x = b.slice(x, std::move(slice));
        }
        break;
      }
      case DigitStep::Kind::kMove: {
        const auto from = static_cast<size_t>(step.from_dim);
        x = exchange_tiles(context, x,
                           TileExchange{step.from_dim, step.dim, step.factor, step.groups,
                                        target_shard[dim], target_shard[from]});
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
        starts[dim] = fine == 1
                          ? r
                          : b.binary(Opcode::kMultiply, r,
                                     b.scalar_constant(DType::kS32, static_cast<double>(fine)));
        x = b.dynamic_slice(x, std::move(starts), target_shard);
        break;
      }
    }
  }
  return PartitionedValue{x, value.base_shape, steps.back().after};
}

}  // namespace podsim::compiler
