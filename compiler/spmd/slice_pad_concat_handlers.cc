// Windowed data-movement handlers: slice, pad, reverse, concatenate
// (docs/reference/gspmd.md#per-op-partitioning, #halo-exchange, #windowed-input-resharding). Along
// a dim the result is tiled on, each device fetches the input window its result tile needs with a
// halo exchange (collective-permutes of edge rows) and applies the op locally; along other dims the
// op is local. A dim whose halo would span more than kMaxHaloPiecesPerSide neighbours is
// all-gathered instead (that dim only), and the local result is then dynamic-sliced to the target
// tiling.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "compiler/sharding/sharding_util.h"
#include "compiler/spmd/halo_exchange.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {
namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Tiled dims of the target the operand does not tile yet: cheaper to keep
// them whole (local op, then a local dynamic-slice) than to slice + exchange.
std::vector<int64_t> dims_untiled_in(const Sharding& target, const Sharding& operand) {
  std::vector<int64_t> dims;
  for (int64_t d : sharded_dims(target))
    if (tile_count(operand, d) == 1) dims.push_back(d);
  return dims;
}

// Per dim: the window every result tile needs, or nullopt when the dim is
// local (no change along it).
using WindowFn = std::function<std::optional<WindowRequest>(int64_t dim)>;

struct WindowPlan {
  Sharding operand_sharding;           // target with `gathered` dims replicated
  std::vector<int64_t> gathered;       // tiled in the target, op done on the whole dim
  std::vector<WindowRequest> windows;  // halo-exchanged dims
};

// Decides per tiled dim of `layout` (the target tiling expressed on the
// operand): local, windowed, or gathered when the halo does not fit.
WindowPlan plan_windows(const Sharding& layout, const Shape& operand_shape,
                        std::vector<int64_t> gathered, const WindowFn& window_for) {
  WindowPlan plan;
  for (int64_t d : sharded_dims(layout)) {
    if (contains(gathered, d)) continue;
    std::optional<WindowRequest> w = window_for(d);
    if (!w) continue;
    PartitionedValue probe{kNoId, operand_shape, layout};
    if (plan_halo(probe, *w)) {
      plan.windows.push_back(*w);
    } else {
      gathered.push_back(d);
    }
  }
  std::sort(gathered.begin(), gathered.end());
  plan.gathered = gathered;
  plan.operand_sharding = partially_replicate_on_dims(layout, gathered);
  return plan;
}

InstrId apply_windows(SpmdContext& context, const PartitionedValue& operand,
                      const std::vector<WindowRequest>& windows) {
  InstrId local = operand.id;
  for (const WindowRequest& w : windows) local = exchange_halo(context, operand, local, w);
  return local;
}

const WindowRequest* find_window(const std::vector<WindowRequest>& windows, int64_t dim) {
  for (const WindowRequest& w : windows)
    if (w.dim == dim) return &w;
  return nullptr;
}

// Result tile j of a dim with O elements in n tiles of t covers [j*t, j*t + t);
// positions >= O are padding.
struct TileGeometry {
  int64_t n, t, out;
};
TileGeometry tiles_of(const Sharding& s, int64_t out_extent, int64_t dim) {
  const int64_t n = tile_count(s, dim);
  return TileGeometry{n, ceil_div(out_extent, n), out_extent};
}

// Concatenate when the concat dim's halo is too wide (docs/reference/gspmd.md
// #per-op-partitioning, the newer strategy): move the dim's n tiles to another dim e that the
// layout leaves whole and n divides (one all-to-all per operand), concatenate
// locally, move them back (one all-to-all) -- instead of all-gathering.
std::optional<PartitionedValue> concatenate_by_moving_tiles(SpmdContext& context,
                                                            const HandlerInput& in,
                                                            const Sharding& layout) {
  const int64_t dim = in.original.attrs.dimensions.at(0);
  const Shape& out = in.original.shape;
  const int64_t n = tile_count(layout, dim);
  for (int64_t e = 0; e < out.rank(); ++e) {
    if (e == dim || tile_count(layout, e) != 1 || out.dim(static_cast<int>(e)) % n != 0) continue;
    const Sharding moved = move_and_merge_tiles(layout, dim, e);
    if (!all_to_all_dims(layout, moved)) continue;
    std::vector<InstrId> locals;
    for (const PartitionedValue& operand : in.operands)
      locals.push_back(reshard(context, operand, moved).id);
    InstrId result = context.builder().concatenate(std::move(locals), dim);
    PartitionedValue back = reshard(context, PartitionedValue{result, out, moved}, layout);
    return reshard(context, back, in.target);
  }
  return std::nullopt;
}

}  // namespace

// slice: result tile j (t elements) reads input start + (j*t + q)*stride, so
// its window starts at start + j*t*stride with width (t-1)*stride + 1, then a
// local strided slice.
PartitionedValue handle_slice(SpmdContext& context, const HandlerInput& in) {
  const PartitionedValue& operand = in.operands[0];
  const auto& slice = in.original.attrs.slice;
  const Shape& out = in.original.shape;
  auto window_for = [&](int64_t d) -> std::optional<WindowRequest> {
    const SliceDim& sd = slice[static_cast<size_t>(d)];
    if (sd.start == 0 && sd.stride == 1 && sd.limit == operand.base_shape.dim(static_cast<int>(d)))
      return std::nullopt;
    const TileGeometry g = tiles_of(in.target, out.dim(static_cast<int>(d)), d);
    WindowRequest w;
    w.dim = d;
    w.width = (g.t - 1) * sd.stride + 1;
    for (int64_t j = 0; j < g.n; ++j) {
      w.start.push_back(sd.start + j * g.t * sd.stride);
      const int64_t last = std::min((j + 1) * g.t, g.out) - 1;  // last valid result position
      w.needed_limit.push_back(sd.start + last * sd.stride + 1);
    }
    w.fill = context.zero(out.dtype());
    return w;
  };
  WindowPlan plan = plan_windows(in.target, operand.base_shape,
                                 dims_untiled_in(in.target, operand.sharding), window_for);
  PartitionedValue x = reshard(context, operand, plan.operand_sharding);
  InstrId local = apply_windows(context, x, plan.windows);
  const Shape local_shape = context.local_shape(local);
  std::vector<SliceDim> local_slice;
  for (int d = 0; d < out.rank(); ++d) {
    if (const WindowRequest* w = find_window(plan.windows, d)) {
      local_slice.push_back(SliceDim{0, w->width, slice[static_cast<size_t>(d)].stride});
    } else if (tile_count(plan.operand_sharding, d) > 1) {
      local_slice.push_back(SliceDim{0, local_shape.dim(d), 1});  // identity dim, tiled alike
    } else {
      local_slice.push_back(slice[static_cast<size_t>(d)]);
    }
  }
  InstrId result = context.builder().slice(local, std::move(local_slice));
  return reshard(context, PartitionedValue{result, out, plan.operand_sharding}, in.target);
}

// pad with r = interior + 1: result position o holds input (o - low) / r when
// that divides. Result tile j needs inputs lo_j = ceil((j*t - low) / r) ..
// hi_j = floor((min((j+1)t, O) - 1 - low) / r); input lo_j lands at local
// position c_j = low + lo_j*r - j*t in [0, r). The window is padded locally
// with interior holes and a uniform low P = max c_j, then dynamic-sliced at
// P - c_j. Window positions outside the input are masked with the pad value.
PartitionedValue handle_pad(SpmdContext& context, const HandlerInput& in) {
  const PartitionedValue& operand = in.operands[0];
  const PartitionedValue pad_value = reshard(context, in.operands[1], Sharding::replicated());
  const auto& padding = in.original.attrs.padding;
  const Shape& out = in.original.shape;
  struct DimInfo {
    std::vector<int64_t> c;
    int64_t low = 0;
    int64_t high = 0;
  };
  std::map<int64_t, DimInfo> info;
  auto window_for = [&](int64_t d) -> std::optional<WindowRequest> {
    const PadDim& p = padding[static_cast<size_t>(d)];
    if (p.low == 0 && p.high == 0 && p.interior == 0) return std::nullopt;
    const int64_t r = p.interior + 1;
    const TileGeometry g = tiles_of(in.target, out.dim(static_cast<int>(d)), d);
    const int64_t shard = ceil_div(operand.base_shape.dim(static_cast<int>(d)), g.n);
    WindowRequest w;
    w.dim = d;
    w.fill = pad_value.id;
    DimInfo di;
    std::vector<bool> needed;
    for (int64_t j = 0; j < g.n; ++j) {
      const int64_t lo = ceil_div(j * g.t - p.low, r);
      const int64_t hi = floor_div(std::min((j + 1) * g.t, g.out) - 1 - p.low, r);
      needed.push_back(j * g.t < g.out && hi >= lo);
      w.start.push_back(needed.back() ? lo : j * shard);
      w.needed_limit.push_back(needed.back() ? hi + 1 : j * shard);
      di.c.push_back(needed.back() ? p.low + lo * r - j * g.t : -1);
      if (needed.back()) w.width = std::max(w.width, hi - lo + 1);
    }
    w.width = std::max<int64_t>(w.width, 1);
    // A tile whose results are all padding (e.g. the low padding of a dim with
    // fewer elements than tiles) reads a window wholly before the input: the
    // halo exchange fills it with the pad value.
    for (int64_t j = 0; j < g.n; ++j) {
      if (needed[static_cast<size_t>(j)] || j * g.t >= g.out) continue;
      w.start[static_cast<size_t>(j)] = -w.width;
      w.needed_limit[static_cast<size_t>(j)] = -w.width;
    }
    di.low = *std::max_element(di.c.begin(), di.c.end());
    di.low = std::max<int64_t>(di.low, 0);
    const int64_t padded_core = (w.width - 1) * r + 1;
    for (int64_t& c : di.c)
      if (c < 0) c = di.low;  // don't-care tile: slice at offset 0
    for (int64_t c : di.c) di.high = std::max(di.high, di.low - c + g.t - (di.low + padded_core));
    info[d] = di;
    return w;
  };
  WindowPlan plan = plan_windows(in.target, operand.base_shape,
                                 dims_untiled_in(in.target, operand.sharding), window_for);
  PartitionedValue x = reshard(context, operand, plan.operand_sharding);
  InstrId local = apply_windows(context, x, plan.windows);
  auto& b = context.builder();
  std::vector<PadDim> local_padding;
  for (int d = 0; d < out.rank(); ++d) {
    if (find_window(plan.windows, d)) {
      const DimInfo& di = info[d];
      local_padding.push_back(PadDim{di.low, di.high, padding[static_cast<size_t>(d)].interior});
    } else if (tile_count(plan.operand_sharding, d) > 1) {
      local_padding.push_back(PadDim{});  // identity dim, tiled alike
    } else {
      local_padding.push_back(padding[static_cast<size_t>(d)]);
    }
  }
  InstrId padded = b.pad(local, pad_value.id, std::move(local_padding));
  if (!plan.windows.empty()) {
    const Shape padded_shape = b.shape(padded);
    std::vector<InstrId> starts;
    std::vector<int64_t> sizes = padded_shape.dims();
    for (int d = 0; d < out.rank(); ++d) {
      if (!find_window(plan.windows, d)) {
        starts.push_back(context.zero(DType::kS32));
        continue;
      }
      const DimInfo& di = info[d];
      sizes[static_cast<size_t>(d)] = tiles_of(in.target, out.dim(d), d).t;
      starts.push_back(per_tile_scalar(context, plan.operand_sharding, d, [&](int64_t j) {
        return di.low - di.c[static_cast<size_t>(j)];
      }));
    }
    padded = b.dynamic_slice(padded, std::move(starts), std::move(sizes));
  }
  return reshard(context, PartitionedValue{padded, out, plan.operand_sharding}, in.target);
}

// reverse: the operand takes the target's tiling with the reversed dims'
// tile order flipped (a collective-permute at most), so the device of result
// tile n-1-j holds input tile j. With pad = n*s - D it needs input
// [j*s - pad, (j+1)*s - pad): a left halo of `pad` elements, then a local
// reverse.
PartitionedValue handle_reverse(SpmdContext& context, const HandlerInput& in) {
  const PartitionedValue& operand = in.operands[0];
  const auto& reversed = in.original.attrs.dimensions;
  // Window of tile j (in the reversed layout) along a reversed dim.
  auto window_for = [&](int64_t d, int64_t n) {
    const int64_t dim_size = operand.base_shape.dim(static_cast<int>(d));
    const int64_t s = ceil_div(dim_size, n);
    WindowRequest w;
    w.dim = d;
    w.width = s;
    w.fill = context.zero(operand.base_shape.dtype());
    for (int64_t j = 0; j < n; ++j) {
      w.start.push_back(j * s - (n * s - dim_size));
      w.needed_limit.push_back(w.start.back() + s);
    }
    return w;
  };
  // Dims the operand does not tile, and reversed dims whose padding exceeds
  // the halo cap (e.g. a size-1 dim over 8 devices), are reversed whole.
  std::vector<int64_t> gathered = dims_untiled_in(in.target, operand.sharding);
  for (int64_t d : reversed) {
    const int64_t n = tile_count(in.target, d);
    if (n == 1 || contains(gathered, d)) continue;
    if (!plan_halo(PartitionedValue{kNoId, operand.base_shape, in.target}, window_for(d, n)))
      gathered.push_back(d);
  }
  const Sharding layout = partially_replicate_on_dims(in.target, gathered);
  const Sharding operand_sharding = reverse_sharding(layout, reversed);
  PartitionedValue x = reshard(context, operand, operand_sharding);
  std::vector<WindowRequest> windows;
  for (int64_t d : reversed) {
    const int64_t n = tile_count(operand_sharding, d);
    const int64_t dim_size = operand.base_shape.dim(static_cast<int>(d));
    if (n == 1 || n * ceil_div(dim_size, n) == dim_size) continue;
    windows.push_back(window_for(d, n));
  }
  InstrId local = apply_windows(context, x, windows);
  InstrId result = context.builder().reverse(local, reversed);
  return reshard(context, PartitionedValue{result, in.original.shape, layout}, in.target);
}

// concatenate along a tiled dim: result tile j covers [j*t, j*t + t); from
// operand k (offset off_k) it needs the window starting at j*t - off_k. Each
// operand's window is halo-exchanged; a select on the result position picks
// the operand that owns it (the last one whose offset is <= the position).
PartitionedValue handle_concatenate(SpmdContext& context, const HandlerInput& in) {
  const int64_t dim = in.original.attrs.dimensions.at(0);
  const Shape& out = in.original.shape;
  std::vector<int64_t> gathered;
  for (int64_t d : sharded_dims(in.target))
    for (const PartitionedValue& operand : in.operands)
      if (tile_count(operand.sharding, d) == 1 && !contains(gathered, d)) gathered.push_back(d);
  std::vector<WindowRequest> windows;
  std::vector<int64_t> offsets;
  const TileGeometry g = tiles_of(in.target, out.dim(static_cast<int>(dim)), dim);
  if (g.n > 1 && !contains(gathered, dim)) {
    int64_t offset = 0;
    for (const PartitionedValue& operand : in.operands) {
      WindowRequest w;
      w.dim = dim;
      w.width = g.t;
      w.fill = context.zero(out.dtype());
      for (int64_t j = 0; j < g.n; ++j) {
        w.start.push_back(j * g.t - offset);
        w.needed_limit.push_back(std::min((j + 1) * g.t, g.out) - offset);
      }
      PartitionedValue probe{kNoId, operand.base_shape, in.target};
      if (!plan_halo(probe, w)) {
        if (auto moved = concatenate_by_moving_tiles(
                context, in, partially_replicate_on_dims(in.target, gathered)))
          return *moved;
        gathered.push_back(dim);
        break;
      }
      windows.push_back(w);
      offsets.push_back(offset);
      offset += operand.base_shape.dim(static_cast<int>(dim));
    }
  }
  const Sharding layout = partially_replicate_on_dims(in.target, gathered);
  auto& b = context.builder();
  if (tile_count(layout, dim) == 1) {
    std::vector<InstrId> locals;
    for (const PartitionedValue& operand : in.operands)
      locals.push_back(reshard(context, operand, layout).id);
    InstrId result = b.concatenate(std::move(locals), dim);
    return reshard(context, PartitionedValue{result, out, layout}, in.target);
  }
  InstrId result = kNoId;
  InstrId position = kNoId;
  for (size_t k = 0; k < in.operands.size(); ++k) {
    PartitionedValue x = reshard(context, in.operands[k], layout);
    InstrId window = exchange_halo(context, x, x.id, windows[k]);
    if (k == 0) {
      result = window;
      const Shape local = b.shape(window);
      position = b.binary(
          Opcode::kAdd, b.iota(Shape(DType::kS32, local.dims()), dim),
          b.broadcast(context.partition_offset(layout, out.dims(), dim), local.dims(), {}));
      continue;
    }
    const Shape local = b.shape(window);
    InstrId first = b.broadcast(b.scalar_constant(DType::kS32, static_cast<double>(offsets[k])),
                                local.dims(), {});
    result = b.select(b.compare(position, first, ComparisonDirection::kGe), window, result);
  }
  return reshard(context, PartitionedValue{result, out, layout}, in.target);
}

}  // namespace podsim::compiler
