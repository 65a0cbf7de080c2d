// Dot handler: the sparse dot (N:M structured sparsity with a metadata
// operand) is planned on its logical operands and its metadata is split with
// the stored operand; every case is checked for numeric equivalence.
#include <gtest/gtest.h>

#include <string>

#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler::spmd_test {
namespace {

int64_t count(const Partitioned& p, Opcode op) {
  int64_t n = 0;
  for (const Instruction& instr : p.result.module.entry().instructions()) n += instr.opcode == op;
  return n;
}

const Instruction& the_dot(const Partitioned& p) {
  for (const Instruction& instr : p.result.module.entry().instructions())
    if (instr.opcode == Opcode::kDot) return instr;
  ADD_FAILURE() << "no dot in\n" << print_hlo(p.result.module);
  return p.result.module.entry().root_instr();
}

// lhs stores 2 of every 4 along its contracting dim: f32[8,64] stands for
// f32[8,128]; u16 metadata holds 8 two-bit positions per element: 64 / 8 = 8.
std::string sparse_module(const std::string& lhs, const std::string& rhs, const std::string& meta,
                          const std::string& out) {
  return "HloModule m\nENTRY e {\n"
         "  lhs = f32[8,64] parameter(0), sharding=" +
         lhs +
         "\n"
         "  rhs = f32[128,16] parameter(1), sharding=" +
         rhs +
         "\n"
         "  meta = u16[8,8] parameter(2), sharding=" +
         meta +
         "\n"
         "  ROOT d = f32[8,16] dot(lhs, rhs, meta), lhs_contracting_dims={1}, "
         "rhs_contracting_dims={0}, "
         "sparsity=L.1@2:4, sharding=" +
         out + "\n}\n";
}

TEST(SparseDot, RowShardedStaysLocalWithItsMetadataRows) {
  // Rows of lhs and metadata split 4 ways, rhs replicated, result rows
  // split: each device multiplies its 2 rows; no collective at all.
  auto p = partition_text(sparse_module("{devices=[4,1]<=[4]}", "{replicated}",
                                        "{devices=[4,1]<=[4]}", "{devices=[4,1]<=[4]}"),
                          4);
  expect_equivalent(p);
  EXPECT_EQ(total_collectives(p.result.stats), 0);
  const Instruction& dot = the_dot(p);
  EXPECT_EQ(dot.shape, Shape(DType::kF32, {2, 16}));
  const Module& m = p.result.module;
  EXPECT_EQ(m.entry().instr(dot.operand(2)).shape, Shape(DType::kU16, {2, 8}));
}

TEST(SparseDot, ContractingShardedSplitsStoredValuesAndMetadataAlikeThenAllReduces) {
  // The sparse (contracting) dim split 4 ways: each device holds 16 stored
  // values = 8 groups = 32 logical positions, 2 metadata elements, and the
  // matching 32 rhs rows; one all-reduce sums the partial products.
  auto p = partition_text(sparse_module("{devices=[1,4]<=[4]}", "{devices=[4,1]<=[4]}",
                                        "{devices=[1,4]<=[4]}", "{replicated}"),
                          4);
  expect_equivalent(p);
  EXPECT_EQ(count(p, Opcode::kAllReduce), 1);
  EXPECT_EQ(count(p, Opcode::kAllGather), 0);
  const Instruction& dot = the_dot(p);
  const Module& m = p.result.module;
  EXPECT_EQ(m.entry().instr(dot.operand(0)).shape, Shape(DType::kF32, {8, 16}));
  EXPECT_EQ(m.entry().instr(dot.operand(1)).shape, Shape(DType::kF32, {32, 16}));
  EXPECT_EQ(m.entry().instr(dot.operand(2)).shape, Shape(DType::kU16, {8, 2}));
}

TEST(SparseDot, ShardsThatWouldSplitAMetadataElementAreNotUsed) {
  // 8 ways over 64 stored values = 8 per device = exactly one u16 each: fine.
  // 16 ways would give 4 stored values per device, half a metadata element:
  // the handler must not split there, and the result must still be right.
  for (int n : {8, 16}) {
    const std::string ns = std::to_string(n);
    const std::string tiled = "{devices=[1," + ns + "]<=[" + ns + "]}";
    auto p = partition_text(
        sparse_module(tiled, "{devices=[" + ns + ",1]<=[" + ns + "]}", tiled, "{replicated}"), n);
    expect_equivalent(p);
    const Instruction& dot = the_dot(p);
    const int64_t stored_per_device = p.result.module.entry().instr(dot.operand(0)).shape.dim(1);
    EXPECT_EQ(stored_per_device, n == 8 ? 8 : 64) << n << " devices";
  }
}

}  // namespace
}  // namespace podsim::compiler::spmd_test
