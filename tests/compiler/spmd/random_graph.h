// Random module generator for the SPMD partitioner's property test: small
// entry computations (a few ops over tiny, often uneven tensors) built with
// ComputationBuilder, with random valid shardings on a few instructions
// (random tile counts per dim over 2-8 devices, partial replication, iota,
// transposed-iota and shuffled device orders). Deterministic per seed, so a
// failing seed replays exactly.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/sharding/sharding.h"

namespace podsim::compiler::spmd_test {

// Op families the generator draws from.
enum class OpFamily {
  kUnary,      // negate, abs, tanh
  kBinary,     // add, subtract, multiply, maximum, minimum (+ broadcast scalars)
  kBroadcast,  // insert one new dim
  kTranspose,
  kReshape,  // merge/split/flatten/insert size-1 dims
  kReduce,   // add or max over a subset of dims
  kDot,      // contracting + optional batch dim, operands in any dim order
  kSlice,    // strided slice of one dim
  kPad,      // low/high/interior padding of one dim
  kConcatenate,
  kReverse,
  kDynamicSlice,  // constant start indices (possibly clamped)
  kCopy,          // a copy annotated half the time: a reshard between two random shardings
  kGather,        // embedding-lookup style: one operand dim indexed by an s32[B] parameter
};
std::string_view to_string(OpFamily family);

struct RandomGraphOptions {
  int64_t min_ops = 3;
  int64_t max_ops = 12;
  int64_t max_annotations = 3;
  std::vector<int64_t> device_counts = {2, 3, 4, 6, 8};
  std::vector<OpFamily> families = {
      OpFamily::kUnary,   OpFamily::kBinary,      OpFamily::kBroadcast, OpFamily::kTranspose,
      OpFamily::kReshape, OpFamily::kReduce,      OpFamily::kDot,       OpFamily::kSlice,
      OpFamily::kPad,     OpFamily::kConcatenate, OpFamily::kReverse,   OpFamily::kDynamicSlice,
      OpFamily::kCopy,    OpFamily::kGather};
  // Largest element count of any generated value (keeps the interpreter fast).
  int64_t max_elements = 512;
};

struct RandomCase {
  Module module;  // annotated, num_partitions = devices, not yet propagated
  int64_t devices = 1;
  std::vector<OpFamily> ops;  // the families used, in order
};

RandomCase generate_random_case(uint64_t seed, const RandomGraphOptions& options = {});

// A random valid leaf sharding of a tensor with `dims` over `devices`:
// every prime factor of `devices` goes to a random data dim or to the
// replication dim; device order iota, mesh-transposed iota or shuffled.
Sharding random_sharding(std::mt19937_64& rng, std::span<const int64_t> dims, int64_t devices);

}  // namespace podsim::compiler::spmd_test
