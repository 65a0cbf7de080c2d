// Helpers of the dot / convolution / reduce-window partitioner tests:
// partition annotated HLO text with given options (after propagation), run
// the numeric equivalence check, count opcodes over every computation.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/propagation/propagation.h"
#include "compiler/spmd/partitioner.h"
#include "compiler/spmd/verify.h"

namespace podsim::compiler::spmd_dot_test {

struct Partitioned {
  Module annotated;
  SpmdResult result;
};

inline Partitioned partition(const std::string& hlo, int64_t devices, SpmdOptions options = {}) {
  Partitioned p{parse_hlo(hlo), {}};
  p.annotated.set_num_partitions(devices);
  propagate_shardings(p.annotated);
  options.num_partitions = devices;
  p.result = partition_spmd_with_stats(p.annotated, options);
  return p;
}

inline void expect_equivalent(const Partitioned& p, uint64_t seed = 1) {
  VerifyResult r = verify_partitioning(p.annotated, p.result.module, seed, 1e-4);
  EXPECT_TRUE(r.ok) << r.first_mismatch << "\n" << print_hlo(p.result.module);
}

// Instructions with one of `ops` in every computation of the module.
inline int64_t count_ops(const Module& module, std::initializer_list<Opcode> ops) {
  int64_t n = 0;
  for (const Computation& c : module.computations())
    for (const Instruction& instr : c.instructions())
      for (Opcode op : ops) n += instr.opcode == op;
  return n;
}

// A module with scalar add/max reducers and the given entry body.
inline std::string dot_module(const std::string& body) {
  return "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] "
         "add(a, b)\n}\n"
         "max {\n  c = f32[] parameter(0)\n  d = f32[] parameter(1)\n  ROOT m = f32[] maximum(c, "
         "d)\n}\n"
         "ENTRY e {\n" +
         body + "}\n";
}

// The windowed einsum wherever a plan all-gathers one operand dim: no size
// threshold, no overlap test (min_flops_per_byte 0).
inline SpmdOptions forced_windowed(bool bidirectional = false) {
  SpmdOptions o;
  o.windowed_einsum_threshold_bytes = 0;
  o.windowed_einsum_min_flops_per_byte = 0;
  o.windowed_einsum_bidirectional = bidirectional;
  return o;
}

}  // namespace podsim::compiler::spmd_dot_test
