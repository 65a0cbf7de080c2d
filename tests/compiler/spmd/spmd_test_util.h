// Numeric-equivalence harness for the SPMD partitioner: parse annotated HLO,
// propagate, partition; run the original with evaluate() and the partitioned
// module with evaluate_spmd() on per-device shards of the same seeded random
// inputs; reassemble the result from each device's shard and compare.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/propagation/propagation.h"
#include "compiler/sharding/sharding.h"
#include "compiler/spmd/partitioner.h"

namespace podsim::compiler::spmd_test {

inline Sharding sharding_of(const Instruction& instr) {
  if (!instr.sharding) return Sharding::replicated();
  Sharding s = parse_sharding(*instr.sharding);
  return s.is_maximal() ? Sharding::replicated() : s;
}

// Padding content is unspecified, so the harness fills it with a value no
// random input takes (inputs lie in [-1, 1] or [-8, 15]): any padding that
// leaks into a reduction or dot changes the result visibly.
inline double padding_sentinel(DType dtype) { return dtype == DType::kPred ? 1.0 : 37.0; }

// This device's tile of `full`, padded to the shard shape with the sentinel.
inline Literal shard_of(const Literal& full, const Sharding& sharding, int64_t device) {
  const auto& dims = full.shape().dims();
  ShardRegion region = shard_region(sharding, dims, device);
  Literal out(Shape(full.shape().dtype(), shard_shape(sharding, dims)));
  for_each_index(out.shape().dims(), [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> source(index.size());
    for (size_t i = 0; i < index.size(); ++i) {
      source[i] = region.offsets[i] + index[i];
      if (source[i] >= region.limits[i]) {
        out.set(index, padding_sentinel(full.shape().dtype()));
        return;
      }
    }
    out.set(index, full.at(source));
  });
  return out;
}

// Writes each device's valid region into the logical result.
inline Literal reassemble(const std::vector<Literal>& shards, const Sharding& sharding, const Shape& shape) {
  Literal out(shape);
  for (size_t device = 0; device < shards.size(); ++device) {
    ShardRegion region = shard_region(sharding, shape.dims(), static_cast<int64_t>(device));
    std::vector<int64_t> extent;
    for (size_t i = 0; i < region.offsets.size(); ++i) extent.push_back(region.limits[i] - region.offsets[i]);
    for_each_index(extent, [&](const std::vector<int64_t>& index) {
      std::vector<int64_t> target(index.size());
      for (size_t i = 0; i < index.size(); ++i) target[i] = region.offsets[i] + index[i];
      out.set(target, shards[device].at(index));
    });
  }
  return out;
}

struct Partitioned {
  Module annotated;
  SpmdResult result;
};

inline Partitioned partition_text(const std::string& hlo, int64_t devices) {
  Partitioned p{parse_hlo(hlo), {}};
  p.annotated.set_num_partitions(devices);
  propagate_shardings(p.annotated);
  p.result = partition_spmd_with_stats(p.annotated, SpmdOptions{devices});
  return p;
}

// Runs both programs on seeded inputs; expects the same result.
inline void expect_equivalent(const Partitioned& p, uint64_t seed = 1) {
  const Computation& entry = p.annotated.entry();
  const int64_t devices = p.result.module.num_partitions();
  std::vector<Literal> args;
  std::vector<std::vector<Literal>> per_device(static_cast<size_t>(devices));
  for (InstrId param : entry.parameters()) {
    const Instruction& instr = entry.instr(param);
    args.push_back(random_literal(instr.shape, seed + static_cast<uint64_t>(args.size())));
    for (int64_t d = 0; d < devices; ++d)
      per_device[static_cast<size_t>(d)].push_back(shard_of(args.back(), sharding_of(instr), d));
  }
  const Literal expected = evaluate(p.annotated, args);
  const std::vector<Literal> shards = evaluate_spmd(p.result.module, per_device);
  const Literal actual = reassemble(shards, sharding_of(entry.root_instr()), entry.root_instr().shape);
  Comparison c = compare_literals(expected, actual, 1e-4);
  EXPECT_TRUE(c.ok) << c.first_mismatch << "\n" << print_hlo(p.result.module);
}

}  // namespace podsim::compiler::spmd_test
