// Halo exchange (docs/reference/gspmd.md#halo-exchange ExchangeHalo + ExchangeHaloAndGetValidData).
//
// Along `dim` with D elements in n tiles of s = ceil(D/n): tile j holds the
// logical range [j*s, (j+1)*s). Its window [start_j, start_j + width) needs
// L = max_j (j*s - lo_j) elements from the left and R = max_j (hi_j - (j+1)*s)
// from the right, where [lo_j, hi_j) is the needed part clipped to [0, D).
// Left piece k (k = 1..ceil(L/s)) is the tail of tile j-k, right piece k the
// head of tile j+k; the concatenation covers [j*s - L, (j+1)*s + R), which a
// local pad widens so every window fits, and a dynamic-slice at
// start_j - (j*s - L - extra_low) cuts it out. Window position k is logical
// start_j + k; positions outside [0, D) are then replaced by `fill`.
#include "compiler/spmd/halo_exchange.h"

#include <algorithm>
#include <cassert>

namespace podsim::compiler {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

namespace {

struct Extents {
  int64_t n = 1;  // tiles along dim
  int64_t s = 1;  // padded shard extent
  int64_t d = 1;  // logical extent
};

Extents extents(const PartitionedValue& value, int64_t dim) {
  Extents e;
  e.n = tile_count(value.sharding, dim);
  e.d = value.base_shape.dim(static_cast<int>(dim));
  e.s = ceil_div(e.d, e.n);
  return e;
}

// Needed logical range of tile j clipped to [0, D); empty when lo >= hi.
std::pair<int64_t, int64_t> needed_range(const WindowRequest& r, const Extents& e, int64_t j) {
  const int64_t start = r.start[static_cast<size_t>(j)];
  const int64_t limit = std::min(start + r.width, r.needed_limit[static_cast<size_t>(j)]);
  return {std::max<int64_t>(start, 0), std::min(limit, e.d)};
}

// Pairs (device of tile j - distance) -> (device of tile j) along dim, for
// every position of the tile array (replication copies included); negative
// distance sends to the left.
std::vector<std::pair<int64_t, int64_t>> neighbour_pairs(const Sharding& sharding, int64_t dim,
                                                         int64_t distance) {
  const TileAssignment& ta = sharding.tile_assignment();
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<int64_t> index(static_cast<size_t>(ta.rank()), 0);
  for (int64_t p = 0; p < ta.num_elements(); ++p) {
    int64_t rest = p;
    for (int64_t d = ta.rank(); d-- > 0;) {
      index[static_cast<size_t>(d)] = rest % ta.dim(d);
      rest /= ta.dim(d);
    }
    const int64_t target = ta.at(index);
    const int64_t source_tile = index[static_cast<size_t>(dim)] - distance;
    if (source_tile < 0 || source_tile >= ta.dim(dim)) continue;
    index[static_cast<size_t>(dim)] = source_tile;
    pairs.emplace_back(ta.at(index), target);
  }
  return pairs;
}

}  // namespace

InstrId slice_along(ComputationBuilder& b, InstrId x, int64_t dim, int64_t start, int64_t limit) {
  const Shape shape = b.shape(x);
  std::vector<SliceDim> slice;
  for (int d = 0; d < shape.rank(); ++d)
    slice.push_back(d == dim ? SliceDim{start, limit, 1} : SliceDim{0, shape.dim(d), 1});
  return b.slice(x, std::move(slice));
}

// f over the n tile coordinates only (not per device): a constant when
// uniform, f(0) + j * (f(1) - f(0)) on the device's tile coordinate j when
// affine, else an n-entry table read at j.
InstrId per_tile_scalar(SpmdContext& context, const Sharding& sharding, int64_t dim,
                        const std::function<int64_t(int64_t)>& f) {
  auto& b = context.builder();
  const int64_t n = tile_count(sharding, dim);
  std::vector<double> table(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) table[static_cast<size_t>(j)] = static_cast<double>(f(j));
  const double step = n > 1 ? table[1] - table[0] : 0;
  bool affine = true;
  for (int64_t j = 0; j < n; ++j)
    affine &= table[static_cast<size_t>(j)] == table[0] + step * static_cast<double>(j);
  if (affine && step == 0) return b.scalar_constant(DType::kS32, table[0]);
  const InstrId j = context.tile_coordinate(sharding, dim);
  if (affine) {
    InstrId value =
        step == 1 ? j : b.binary(Opcode::kMultiply, j, b.scalar_constant(DType::kS32, step));
    if (table[0] != 0)
      value = b.binary(Opcode::kAdd, value, b.scalar_constant(DType::kS32, table[0]));
    return value;
  }
  InstrId t = b.constant(Literal(Shape(DType::kS32, {n}), std::move(table)));
  return b.reshape(b.dynamic_slice(t, {j}, {1}), {});
}

std::optional<HaloSize> plan_halo(const PartitionedValue& value, const WindowRequest& request) {
  const Extents e = extents(value, request.dim);
  HaloSize h;
  for (int64_t j = 0; j < e.n; ++j) {
    auto [lo, hi] = needed_range(request, e, j);
    if (lo >= hi) continue;
    h.left = std::max(h.left, j * e.s - lo);
    h.right = std::max(h.right, hi - (j + 1) * e.s);
  }
  h.left_pieces = ceil_div(h.left, e.s);
  h.right_pieces = ceil_div(h.right, e.s);
  if (h.left_pieces > kMaxHaloPiecesPerSide || h.right_pieces > kMaxHaloPiecesPerSide)
    return std::nullopt;
  return h;
}

InstrId exchange_halo(SpmdContext& context, const PartitionedValue& value, InstrId local,
                      const WindowRequest& request) {
  auto& b = context.builder();
  const int64_t dim = request.dim;
  const Extents e = extents(value, dim);
  const std::optional<HaloSize> halo = plan_halo(value, request);
  assert(halo.has_value());
  [[maybe_unused]] const int64_t shard = b.shape(local).dim(static_cast<int>(dim));
  assert(shard == e.s);

  // [left pieces (farthest first), own shard, right pieces (nearest first)].
  std::vector<InstrId> parts;
  for (int64_t k = halo->left_pieces; k >= 1; --k) {
    const int64_t len = std::min(e.s, halo->left - (k - 1) * e.s);
    InstrId tail = slice_along(b, local, dim, e.s - len, e.s);
    parts.push_back(b.collective_permute(tail, neighbour_pairs(value.sharding, dim, k)));
  }
  parts.push_back(local);
  for (int64_t k = 1; k <= halo->right_pieces; ++k) {
    const int64_t len = std::min(e.s, halo->right - (k - 1) * e.s);
    InstrId head = slice_along(b, local, dim, 0, len);
    parts.push_back(b.collective_permute(head, neighbour_pairs(value.sharding, dim, -k)));
  }
  InstrId extended = parts.size() == 1 ? local : b.concatenate(parts, dim);
  const int64_t covered = halo->left + e.s + halo->right;

  // Offsets of each window inside the extended array; widen it with `fill`
  // where a window reaches beyond (positions outside [0, D) only).
  std::vector<int64_t> offset(static_cast<size_t>(e.n));
  int64_t extra_low = 0, extra_high = 0;
  for (int64_t j = 0; j < e.n; ++j) {
    auto [lo, hi] = needed_range(request, e, j);
    if (lo >= hi) {
      offset[static_cast<size_t>(j)] = halo->left;  // own shard: don't care
    } else {
      offset[static_cast<size_t>(j)] =
          request.start[static_cast<size_t>(j)] - (j * e.s - halo->left);
    }
    extra_low = std::max(extra_low, -offset[static_cast<size_t>(j)]);
    extra_high = std::max(extra_high, offset[static_cast<size_t>(j)] + request.width - covered);
  }
  if (extra_low > 0 || extra_high > 0) {
    std::vector<PadDim> padding(static_cast<size_t>(b.shape(extended).rank()));
    padding[static_cast<size_t>(dim)] = PadDim{extra_low, extra_high, 0};
    extended = b.pad(extended, request.fill, std::move(padding));
  }

  // Cut each device's window.
  bool uniform = true;
  for (int64_t o : offset) uniform &= o == offset[0];
  InstrId window = kNoId;
  if (uniform) {
    window =
        slice_along(b, extended, dim, offset[0] + extra_low, offset[0] + extra_low + request.width);
  } else {
    const Shape ext = b.shape(extended);
    std::vector<InstrId> starts;
    std::vector<int64_t> sizes = ext.dims();
    sizes[static_cast<size_t>(dim)] = request.width;
    for (int d = 0; d < ext.rank(); ++d) {
      if (d != dim) {
        starts.push_back(context.zero(DType::kS32));
        continue;
      }
      starts.push_back(per_tile_scalar(context, value.sharding, dim, [&](int64_t j) {
        return offset[static_cast<size_t>(j)] + extra_low;
      }));
    }
    window = b.dynamic_slice(extended, std::move(starts), std::move(sizes));
  }

  // Window position k is logical start_j + k; outside [0, D) it takes `fill`
  // (this covers shard padding, zeros from missing neighbours, the widening
  // above, and windows lying wholly outside the input).
  bool may_leak = e.d % e.n != 0;
  for (int64_t j = 0; j < e.n; ++j) {
    const int64_t start = request.start[static_cast<size_t>(j)];
    may_leak |= start < 0 || start + request.width > e.d;
  }
  if (!may_leak) return window;
  const Shape shape = b.shape(window);
  InstrId first = per_tile_scalar(context, value.sharding, dim,
                                  [&](int64_t j) { return request.start[static_cast<size_t>(j)]; });
  InstrId position = b.binary(Opcode::kAdd, b.iota(Shape(DType::kS32, shape.dims()), dim),
                              b.broadcast(first, shape.dims(), {}));
  InstrId zero = b.broadcast(context.zero(DType::kS32), shape.dims(), {});
  InstrId limit =
      b.broadcast(b.scalar_constant(DType::kS32, static_cast<double>(e.d)), shape.dims(), {});
  InstrId valid = b.binary(Opcode::kAnd, b.compare(position, zero, ComparisonDirection::kGe),
                           b.compare(position, limit, ComparisonDirection::kLt));
  return b.select(valid, window, b.broadcast(request.fill, shape.dims(), {}));
}

}  // namespace podsim::compiler
