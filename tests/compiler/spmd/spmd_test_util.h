// Numeric-equivalence harness for the SPMD partitioner: parse annotated HLO,
// propagate, partition; run the original with evaluate() and the partitioned
// module with evaluate_spmd() on per-device shards of the same seeded random
// inputs; reassemble the result from each device's shard and compare.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
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

// Every collective the partitioner emitted, of any kind.
inline int64_t total_collectives(const SpmdStats& s) {
  return s.all_reduces + s.all_gathers + s.all_to_alls + s.collective_permutes + s.reduce_scatters;
}

struct Partitioned {
  Module annotated;
  SpmdResult result;
};

inline Partitioned partition_text(const std::string& hlo, const SpmdOptions& options) {
  Partitioned p{parse_hlo(hlo), {}};
  p.annotated.set_num_partitions(options.num_partitions);
  propagate_shardings(p.annotated);
  p.result = partition_spmd_with_stats(p.annotated, options);
  return p;
}

inline Partitioned partition_text(const std::string& hlo, int64_t devices) {
  return partition_text(hlo, SpmdOptions{devices});
}

// Runs both programs on seeded inputs; expects the same result.
inline void expect_equivalent(const Partitioned& p, uint64_t seed = 1) {
  VerifyResult r = verify_partitioning(p.annotated, p.result.module, seed, 1e-4);
  EXPECT_TRUE(r.ok) << r.first_mismatch << "\n" << print_hlo(p.result.module);
}

// (group size, number of groups) of every `op` in the partitioned entry.
inline std::vector<std::pair<int64_t, int64_t>> groups_of(const Partitioned& p, Opcode op) {
  std::vector<std::pair<int64_t, int64_t>> out;
  const int64_t n = p.result.module.num_partitions();
  for (const Instruction& instr : p.result.module.entry().instructions())
    if (instr.opcode == op)
      out.emplace_back(instr.attrs.replica_groups.group_size(n),
                       static_cast<int64_t>(instr.attrs.replica_groups.expand(n).size()));
  return out;
}

// An f32 parameter of `dims` sharded `from`, copied to `to`: a copy whose
// operand and result shardings differ forces exactly one reshard.
inline std::string copy_module(const std::string& dims, const std::string& from,
                               const std::string& to) {
  return "HloModule m\nENTRY e {\n  p = f32[" + dims + "] parameter(0), sharding=" + from +
         "\n  ROOT c = f32[" + dims + "] copy(p), sharding=" + to + "\n}\n";
}

}  // namespace podsim::compiler::spmd_test
