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
#include "compiler/spmd/verify.h"

namespace podsim::compiler::spmd_test {

inline Sharding sharding_of(const Instruction& instr) { return value_sharding(instr); }

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
  VerifyResult r = verify_partitioning(p.annotated, p.result.module, seed, 1e-4);
  EXPECT_TRUE(r.ok) << r.first_mismatch << "\n" << print_hlo(p.result.module);
}

// An f32 parameter of `dims` sharded `from`, copied to `to`: a copy whose
// operand and result shardings differ forces exactly one reshard.
inline std::string copy_module(const std::string& dims, const std::string& from, const std::string& to) {
  return "HloModule m\nENTRY e {\n  p = f32[" + dims + "] parameter(0), sharding=" + from + "\n  ROOT c = f32[" + dims +
         "] copy(p), sharding=" + to + "\n}\n";
}

}  // namespace podsim::compiler::spmd_test
