// Halo exchange along one sharded dim (docs/reference/gspmd.md#halo-exchange,
// #windowed-input-resharding), the building block of the windowed handlers (slice, pad, reverse,
// concatenate) and per-tile scalars (a function of the device's tile coordinate, emitted as
// arithmetic on partition-id or a table over the tiles, never per device).
//
// A WindowRequest says, per tile index j along `dim` of the value's sharding,
// which logical window [start[j], start[j] + width) device j needs. The
// exchange fetches the missing edges from neighbour tiles with
// collective-permutes (one per neighbour distance), concatenates them around
// the local shard, dynamic-slices each device's window at a per-device
// offset and masks logical positions outside [0, D) with `fill`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "compiler/spmd/spmd_context.h"

namespace podsim::compiler {

// At most this many collective-permutes per side; wider halos (e.g. a slice
// that keeps the middle of a dim over many devices) are refused so program
// size stays independent of the device count: callers all-gather that dim.
inline constexpr int64_t kMaxHaloPiecesPerSide = 2;

struct WindowRequest {
  int64_t dim = 0;
  int64_t width = 0;
  // Per tile index j: logical start of device j's window.
  std::vector<int64_t> start;
  // Per tile index j: positions >= needed_limit[j] are don't-care (padding of
  // the result); a tile with needed_limit[j] <= start[j] needs nothing.
  std::vector<int64_t> needed_limit;
  InstrId fill = kNoId;  // scalar of the value's dtype for positions outside [0, D)
};

// Collective-permute pieces needed on each side (nullopt: none fits the cap).
struct HaloSize {
  int64_t left = 0;   // elements before the own shard
  int64_t right = 0;  // elements after it
  int64_t left_pieces = 0;
  int64_t right_pieces = 0;
};
std::optional<HaloSize> plan_halo(const PartitionedValue& value, const WindowRequest& request);

// `local` is the value's current local array (possibly already windowed along
// other dims, so its extent there may differ from the shard shape); the
// result has extent `width` along request.dim. Precondition: plan_halo fits.
InstrId exchange_halo(SpmdContext& context, const PartitionedValue& value, InstrId local,
                      const WindowRequest& request);

// s32 scalar holding f(tile index of this device along `dim` of `sharding`).
InstrId per_tile_scalar(SpmdContext& context, const Sharding& sharding, int64_t dim,
                        const std::function<int64_t(int64_t)>& f);

// Integer division rounding toward -inf / +inf.
// x[..., start:limit, ...] along `dim`, every other dim whole.
InstrId slice_along(ComputationBuilder& b, InstrId x, int64_t dim, int64_t start, int64_t limit);

int64_t floor_div(int64_t a, int64_t b);
int64_t ceil_div(int64_t a, int64_t b);

}  // namespace podsim::compiler
