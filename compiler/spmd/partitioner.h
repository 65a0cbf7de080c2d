// SPMD partitioner (gspmd-algorithms.md section 3): turns a module whose
// entry instructions all carry shardings (run propagate_shardings first) into
// ONE per-device program for num_partitions devices. Entry parameters and the
// result take the padded shard shapes (ceil(D/n) per sharded dim); the only
// device-dependent values come from partition-id (offset tables indexed by it,
// as XLA's MakePartitionOffsets), and collectives use iota replica groups
// whenever the device groups have an iota form, so program size does not grow
// with the device count.
//
// First slice: array-shaped entry values only (tuple-shaped ops are a
// UserError), manual shardings unsupported, maximal treated as replicated.
#pragma once

#include <cstdint>

#include "compiler/ir/module.h"

namespace podsim::compiler {

struct SpmdOptions {
  // Devices to partition for; 0 = annotated.num_partitions().
  int64_t num_partitions = 0;
  // Windowed einsum (gspmd-algorithms.md 3.5): an operand of at least this
  // many bytes that a dot would all-gather along one dim is instead rotated
  // round its device ring in a while loop (one collective-permute per step,
  // overlapping the step's dot). XLA's threshold_for_windowed_einsum_mib
  // defaults to 256 MiB; 0 forces the loop for every eligible dot (tests).
  int64_t windowed_einsum_threshold_bytes = int64_t{256} << 20;
  // Rings longer than this keep the all-gather (XLA's limit: p <= 32).
  int64_t windowed_einsum_max_devices = 32;
  // Overlap test: a step's dot must do at least this many flops (2 per
  // multiply-add) per byte of the chunk it permutes, or the permute would
  // not hide behind it (a TPUv3 core: ~61 TFLOP/s bf16 over ~70 GB/s of one
  // ICI link -> ~900). 0 disables the test.
  double windowed_einsum_min_flops_per_byte = 0;
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
