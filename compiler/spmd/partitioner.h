// SPMD partitioner (docs/reference/gspmd.md#partitioner): turns a module whose
// entry instructions all carry shardings (run propagate_shardings first) into
// ONE per-device program for num_partitions devices. Entry parameters and the
// result take the padded shard shapes (ceil(D/n) per sharded dim); the only
// device-dependent values come from partition-id (tile coordinates as a few
// scalar divide/remainder/multiply ops on it for iota tile arrays, see
// sharding/tile_coordinates.h; a table indexed by it only for explicit
// arrays, as XLA's MakePartitionOffsets), and collectives use iota replica
// groups whenever the device groups have an iota form, so program size and
// partitioning work do not grow with the device count (collective-permute
// pair lists excepted: they are explicit, one pair per device).
//
// Maximal is treated as replicated. Manual regions (SPMDFullToShardShape /
// SPMDShardToFullShape, Shardy's GlobalToLocalShape / LocalToGlobalShape)
// are copied through on the local shard and {manual} instructions are not
// partitioned (custom_call_handler.cc); custom-calls run on the shard.
#pragma once

#include <cstdint>

#include "compiler/ir/module.h"
#include "compiler/spmd/reshard_plan.h"

namespace podsim::compiler {

struct SpmdOptions {
  // Devices to partition for; 0 = annotated.num_partitions().
  int64_t num_partitions = 0;
  // Windowed einsum (docs/reference/gspmd.md#windowed-einsum): an operand of at least this
  // many bytes that a dot would all-gather along one dim is instead rotated
  // round its device ring in a while loop (one collective-permute per step,
  // overlapping the step's dot). XLA's threshold_for_windowed_einsum_mib
  // defaults to 256 MiB; 0 forces the loop for every eligible dot (tests).
  int64_t windowed_einsum_threshold_bytes = int64_t{256} << 20;
  // Rings longer than this keep the all-gather (XLA's limit: p <= 32).
  int64_t windowed_einsum_max_devices = 32;
  // Cost comparison with the plain all-gather (dot_handler.cc): the loop
  // hides a step's permute only if the step's dot lasts at least as long;
  // when it does not, the loop is communication-bound and an async
  // all-gather, which the latency-hiding scheduler prefetches ahead of the
  // layer (compiler/backend/schedule.h), is better. So the loop is used iff
  //   step flops / peak >= bytes per link direction per step / link bandwidth
  //   <=> step flops / (chunk bytes / directions) >= peak / bandwidth,
  // directions = 2 when bidirectional, else 1. Default when no hardware is
  // given (docs/reference/hardware.md#windowed-einsum-break-even): 61.5e12
  // flop/s per core over 8.3e10 B/s per link direction = 741 flops per
  // byte; runs with a preset derive it (TPUv3 now: 61.6e12 / 8.2e10 = 751). (A bf16 weight rotated against
  // T local tokens does 2*T*K*N flops per 2*K*N bytes: T flops per byte, so
  // one-way rings need T >= 741 tokens per device.) 0 disables the test.
  double windowed_einsum_min_flops_per_byte = 741;
  // Bidirectional windowed einsum: the shard (all-gather form) or the block
  // of running sums (reduce-scatter form) is split in halves that travel
  // both ways round the ring, one collective-permute per direction per step,
  // halving the bytes per link direction per step. Off by default: it pays
  // only where the two permutes of a step run at the same time on opposite
  // link directions (the simulator's one collective stream per device runs
  // them one after the other).
  bool windowed_einsum_bidirectional = false;
  // Bytes a link moves in one collective's fixed latency, which the reshard
  // plans add per collective (compiler/spmd/reshard_plan.h): hop latency x
  // link rate (driver/run_workload.cc spmd_options). Default TPUv3
  // (docs/reference/hardware.md#latencies): ~1 us x 1e11 B/s.
  double collective_latency_bytes = kCollectiveLatencyBytes;

  bool operator==(const SpmdOptions&) const = default;
};

struct SpmdStats {
  int64_t all_reduces = 0;
  int64_t all_gathers = 0;
  int64_t all_to_alls = 0;
  int64_t collective_permutes = 0;
  int64_t reduce_scatters = 0;
  // Reshards that had to go through the fully replicated value.
  int64_t full_replications = 0;
  // Ops handled by the default action (replicate operands, run whole op).
  int64_t default_fallbacks = 0;
};

struct SpmdResult {
  Module module;
  SpmdStats stats;
};

// Full form: the partitioned module and what it cost.
SpmdResult partition_spmd_with_stats(const Module& annotated, const SpmdOptions& options);
// The partitioned module only.
Module partition_spmd(const Module& annotated, const SpmdOptions& options);

}  // namespace podsim::compiler
