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

// One dim's change: coarse count c (of the common prefix), coarsen digits
// and refine digits (either may be empty).
struct DimChange {
  int64_t dim = 0;
  int64_t coarse = 1;
  DigitIds coarsen, refine;
};

// Extents nest (see file comment).
bool nests(int64_t dim_size, int64_t coarse, int64_t m) {
  return coarse == 1 || ceil_div(dim_size, coarse) == m * ceil_div(dim_size, coarse * m);
}

}  // namespace

std::optional<std::vector<DigitStep>> plan_digit_reshard(const Sharding& source, const Sharding& target,
                                                         std::span<const int64_t> base_dims, int64_t devices) {
  const auto rank = static_cast<int64_t>(base_dims.size());
  const Sharding pair[] = {source, target};
  const auto on_grid = layouts_on_common_grid(pair, rank, devices);
  if (!on_grid) return std::nullopt;
  const DigitGrid& grid = on_grid->grid;
  const std::vector<DigitIds>& from = on_grid->layouts[0].data;
  const std::vector<DigitIds>& to = on_grid->layouts[1].data;
  std::vector<DimChange> changes;
  for (int64_t d = 0; d < rank; ++d) {
    const auto i = static_cast<size_t>(d);
    if (from[i] == to[i]) continue;
    const DigitIds prefix = common_prefix(from[i], to[i]);
    DimChange change{d, grid.product(prefix), DigitIds(from[i].begin() + static_cast<long>(prefix.size()), from[i].end()),
                     DigitIds(to[i].begin() + static_cast<long>(prefix.size()), to[i].end())};
    for (const DigitIds* p : {&change.coarsen, &change.refine})
      if (!p->empty() && !nests(base_dims[i], change.coarse, grid.product(*p))) return std::nullopt;
    changes.push_back(std::move(change));
  }
  if (changes.empty()) return std::nullopt;

  std::vector<DigitIds> current = from;
  std::vector<DigitStep> steps;
  auto push = [&](DigitStep step) {
    step.after = sharding_from_digits(grid, current);
    steps.push_back(std::move(step));
  };
  // A refine of b by P pairs with a coarsen of another dim a by exactly P.
  std::vector<int64_t> move_source(changes.size(), -1);  // per refine: index of its coarsen
  std::vector<bool> coarsen_moved(changes.size(), false);
  for (size_t r = 0; r < changes.size(); ++r) {
    if (changes[r].refine.empty()) continue;
    for (size_t c = 0; c < changes.size(); ++c)
      if (c != r && !coarsen_moved[c] && changes[c].coarsen == changes[r].refine) {
        move_source[r] = static_cast<int64_t>(c);
        coarsen_moved[c] = true;
        break;
      }
  }
  for (size_t c = 0; c < changes.size(); ++c) {
    const DimChange& change = changes[c];
    if (change.coarsen.empty() || coarsen_moved[c]) continue;
    current[static_cast<size_t>(change.dim)].resize(current[static_cast<size_t>(change.dim)].size() - change.coarsen.size());
    DigitStep step;
    step.kind = DigitStep::Kind::kCoarsen;
    step.dim = change.dim;
    step.factor = grid.product(change.coarsen);
    step.groups = iota_groups(groups_from_digits(grid, change.coarsen));
    push(std::move(step));
  }
  if (!steps.empty() && steps.back().after.is_replicated()) return std::nullopt;
  // A move into b appends to b's common prefix, so b's own coarsen (a move
  // out of b, if any) must come first; a cycle of moves is not planned.
  std::vector<bool> coarsen_done(changes.size());
  for (size_t c = 0; c < changes.size(); ++c) coarsen_done[c] = changes[c].coarsen.empty() || !coarsen_moved[c];
  std::vector<bool> moved(changes.size(), false);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t r = 0; r < changes.size(); ++r) {
      if (move_source[r] < 0 || moved[r] || !coarsen_done[r]) continue;
      const auto c = static_cast<size_t>(move_source[r]);
      const DimChange& source_change = changes[c];
      const DimChange& change = changes[r];
      auto& a_digits = current[static_cast<size_t>(source_change.dim)];
      a_digits.resize(a_digits.size() - source_change.coarsen.size());
      auto& b_digits = current[static_cast<size_t>(change.dim)];
      b_digits.insert(b_digits.end(), change.refine.begin(), change.refine.end());
      DigitStep step;
      step.kind = DigitStep::Kind::kMove;
      step.dim = change.dim;
      step.from_dim = source_change.dim;
      step.factor = grid.product(change.refine);
      step.groups = iota_groups(groups_from_digits(grid, change.refine));
      push(std::move(step));
      moved[r] = true;
      coarsen_done[c] = true;
      progress = true;
    }
  }
  for (size_t r = 0; r < changes.size(); ++r)
    if (move_source[r] >= 0 && !moved[r]) return std::nullopt;
  for (size_t r = 0; r < changes.size(); ++r) {
    const DimChange& change = changes[r];
    if (change.refine.empty() || move_source[r] >= 0) continue;
    auto& digits = current[static_cast<size_t>(change.dim)];
    digits.insert(digits.end(), change.refine.begin(), change.refine.end());
    DigitStep step;
    step.kind = DigitStep::Kind::kRefine;
    step.dim = change.dim;
    step.factor = grid.product(change.refine);
    step.minor = grid.pieces_of(change.refine);
    push(std::move(step));
  }
  return steps;
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
