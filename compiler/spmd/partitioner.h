// SPMD partitioner (docs/reference/gspmd.md#partitioner): turns a module whose entry
// instructions all carry shardings (run propagate_shardings first) into ONE per-device program
// for num_partitions devices; device-dependent values come only from partition-id, so program
// size does not grow with the device count. Maximal is treated as replicated; manual regions
// are copied through on the local shard. docs/compiler.md#one-program-for-every-device
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
  // Cost comparison with the plain all-gather (dot_handler.cc): the loop is used iff
  // step flops / (chunk bytes / directions) >= peak / link bandwidth; 0 disables the test.
  // Default 741 (docs/reference/hardware.md#windowed-einsum-break-even); runs derive it from the
  // preset. Derivation: docs/compiler.md#windowed-einsum-break-even-test
  double windowed_einsum_min_flops_per_byte = 741;
  // Bidirectional windowed einsum: halves of the shard (or of the running sums) travel both ways
  // round the ring, halving the bytes per link direction per step. Off by default: it pays only
  // where a step's two permutes run at once. docs/compiler.md#bidirectional-windowed-einsum-option
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

  // Counts one collective of kind `op` (any other opcode is not counted).
  void count_collective(Opcode op);
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
