// Numeric verification of a partitioned program (`podsim partition --verify`
// and the partitioner tests): the reference interpreter runs the annotated
// module on seeded random inputs and the per-device program on N simulated
// devices with each device's shard of the same inputs; the devices' result
// shards are reassembled and compared with the original result.
// Tuple-shaped entry parameters and roots (a training step returns
// tuple(loss, new weights..., new slots...)) are handled leaf by leaf: each
// leaf is sharded / reassembled with its leaf of a tuple sharding (a single
// leaf sharding on a tuple value applies to every leaf).
#pragma once

#include <optional>
#include <stdexcept>

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"
#include "compiler/sharding/sharding.h"
#include "compiler/spmd/partitioner.h"

namespace podsim::compiler {

// The sharding an entry value carries (maximal is treated as replicated,
// as the partitioner does); replicated when it has none.
Sharding value_sharding(const Instruction& instr);

// Padding content is unspecified; shards are filled with a value no random
// input takes, so padding that leaks into a reduction or dot shows up.
double padding_sentinel(DType dtype);

// `device`'s tile of `full`, padded to the shard shape with the sentinel.
Literal shard_of(const Literal& full, const Sharding& sharding, int64_t device);

// The logical value from every device's shard (each device's valid region).
// Throws ShardShapeMismatch when a device's shard is smaller than (or of
// another rank than) the region its sharding gives it.
struct ShardShapeMismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};
Literal reassemble(const std::vector<Literal>& shards, const Sharding& sharding,
                   const Shape& shape);

// Whether the module has collectives of its own (all-reduce, all-gather,
// collective-permute, ...). Such a module's logical result is what every
// device computes from the full inputs: verify_partitioning runs it on all
// devices and refuses (UserError) when they disagree.
bool has_collectives(const Module& module);
// has_collectives, or an SPMDFullToShardShape / SPMDShardToFullShape that
// changes the shape (a device's shard in, the devices' shards assembled
// out): the module's reference run is on every device.
bool needs_every_device(const Module& module);

struct VerifyResult {
  bool ok = false;
  int64_t devices = 0;
  double max_abs_error = 0;
  std::string first_mismatch;  // empty when ok
};

// Runs both programs on inputs seeded by `seed` and compares the entry
// results within `tolerance` (relative for floats). first_mismatch names the
// root leaf by its tuple indices ("entry result 'r'{2}: ...").
VerifyResult verify_partitioning(const Module& annotated, const Module& partitioned,
                                 uint64_t seed = 1, double tolerance = 1e-4);

struct VerifyOptions {
  uint64_t seed = 1;
  double tolerance = 1e-4;
  // The entry arguments (logical, unsharded values, one per parameter);
  // empty = seeded random inputs. Tests whose programs need inputs in a
  // domain (positive optimizer second moments, a step count >= 0) pass them.
  std::vector<Literal> arguments;
  // Floating errors relative to each element, or to its leaf's RMS too
  // (see compare_literals; verify_tolerance says which).
  CompareScale scale = CompareScale::kElement;
};

// The comparison --verify uses for a module and its partitioned program: tolerance = max(floor,
// max over rounded sums of 4 u sqrt(n)) (u the sum's unit roundoff, n its length); floor = 2e-2
// with bf16/f16 values, 1e-4 otherwise; relative to the leaf's RMS when the sqrt term exceeds
// the floor (CompareScale::kLeafRms). Derivation: docs/compiler.md#verify-tolerance
struct VerifyTolerance {
  double tolerance = 1e-4;
  CompareScale scale = CompareScale::kElement;
  int64_t longest_sum = 1;   // n of the sum that sets the tolerance (1: the floor does)
  double unit_roundoff = 0;  // u of that sum's type
};
VerifyTolerance verify_tolerance(const Module& annotated, const Module& partitioned);
VerifyResult verify_partitioning(const Module& annotated, const Module& partitioned,
                                 const VerifyOptions& options);

// What verify_partitioning will cost, estimated before it runs (interpreter
// values are doubles: 8 bytes an element, 16 complex):
//   peak_bytes = margin x (inputs (logical + every device's shards)
//              + max(original's interpreter peak,
//                    its result + N x the per-device program's peak)
//              + the reassembled result),
//   margin = 1.25 for temporaries inside ops and the allocator (measured:
//   small.yaml at seq_len 512 peaks at 1.53 GiB resident against 1.52 GiB
//   before the margin);
//   element_ops = the original's work + N x the per-device program's work
//                 (elements read/written, dot/conv multiply-accumulates).
inline constexpr double kVerifyMemoryMargin = 1.25;
struct VerifyEstimate {
  int64_t devices = 0;
  double peak_bytes = 0;
  double element_ops = 0;
  int64_t unknown_trip_loops = 0;  // while loops counted once (trip count unknown)
};
VerifyEstimate estimate_verify(const Module& annotated, const Module& partitioned);

inline constexpr double kDefaultVerifyLimitBytes = 2.0 * 1024 * 1024 * 1024;  // 2 GiB
// Measured interpreter rates (one core, estimate / user time of `podsim
// partition --verify`): 2e8 element-ops/s for elementwise + reduce modules,
// 6.5e8 for small.yaml at seq_len 512, 1.6e9 for dot-heavy ones. 2e10 is
// then about 12 s to 100 s: anything beyond is refused as far too long.
inline constexpr double kMaxVerifyElementOps = 2e10;

// Throws a UserError (exit 2) naming the estimate, the limit and
// --verify-limit when peak_bytes > limit_bytes, or naming the work and the
// rule when element_ops > kMaxVerifyElementOps. Also refuses modules with
// instructions the interpreter cannot run (one message naming them all).
// Returns the estimate when it passes.
// `extra_hint` is appended to the hint (why reduced shapes did not help).
VerifyEstimate check_verify_estimate(const Module& annotated, const Module& partitioned,
                                     double limit_bytes, const std::string& extra_hint = "");
// Whether an estimate is within the memory limit and kMaxVerifyElementOps.
bool verify_estimate_fits(const VerifyEstimate& estimate, double limit_bytes);

// The module at reduced shapes (verify_shrink.h) when the full shapes are over the limits:
// factors k = 2, 4, 8, ... are tried, the first that gives a valid, divisible, partitionable
// module within a quarter of the memory limit and 2e9 element-ops is taken, preferring one whose
// program has the full program's opcode counts. docs/compiler.md#verify-at-reduced-shapes
inline constexpr double kReducedVerifyMemoryShare = 0.25;
inline constexpr double kReducedVerifyElementOps = 2e9;
struct ReducedVerify {
  Module annotated;    // the module at reduced shapes
  Module partitioned;  // its partitioned program
  int64_t factor = 1;
  std::string example;               // "f32[8192,8192] -> f32[256,256]" (largest entry parameter)
  std::string structure_difference;  // empty: same opcode counts as the full program
  VerifyEstimate estimate;           // of the reduced check
};
struct ReduceAttempt {
  std::optional<ReducedVerify> reduced;
  std::string why_not;  // when none fits: the last factor's reason
};
ReduceAttempt reduce_for_verify(const Module& annotated, const Module& partitioned,
                                const SpmdOptions& options, double limit_bytes);

// The check `podsim partition --verify` runs: the module and its program
// when they fit the limits (check_verify_estimate refuses them otherwise),
// else, unless full_only, the module at reduced shapes; when none fits, the
// refusal's hint says why.
struct VerifyPlan {
  VerifyEstimate full;                   // the full shapes' estimate
  VerifyEstimate estimate;               // of the check that runs
  std::optional<ReducedVerify> reduced;  // set: the check runs at reduced shapes
  // " at reduced shapes (dims /16: f32[8192,8192] -> f32[512,512]; full
  // shapes need about 1.5 GiB, 3.3e+12 element-ops)", empty at full shapes.
  std::string reduced_text() const;
};
VerifyPlan plan_verify(const Module& annotated, const Module& partitioned,
                       const SpmdOptions& options, double limit_bytes, bool full_only);

// "1.52 GiB"
std::string bytes_text(double bytes);

// "4GiB", "512MiB", "2G" (binary K/M/G/T), "3GB" (decimal), "1e9" or a
// number of bytes; UserError naming `option` otherwise.
double parse_byte_size(const std::string& text, const std::string& option = "--verify-limit");

}  // namespace podsim::compiler
