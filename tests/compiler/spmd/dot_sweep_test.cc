// Exhaustive-ish check of the dot strategy search (docs/reference/gspmd.md#dot-strategies):
// every combination of operand shardings from a list of 1-D, 2-D, partially
// replicated and permuted tilings over 4 devices (and 8 on a [2,2,2] mesh),
// with several output shardings, on uneven extents, must partition into a
// program that computes the same batched matmul. Whatever plan the cost
// model picks, the numbers cannot change.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/compiler/spmd/dot_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_dot_test::dot_module;
using spmd_dot_test::partition;

// Rank-3 shardings over `devices` devices (data dims 3, optional replication).
std::vector<std::string> rank3_shardings(int devices) {
  if (devices == 4)
    return {"{replicated}",
            "{devices=[4,1,1]<=[4]}",
            "{devices=[1,4,1]<=[4]}",
            "{devices=[1,1,4]<=[4]}",
            "{devices=[2,2,1]<=[4]}",
            "{devices=[2,2,1]<=[2,2]T(1,0)}",
            "{devices=[1,2,2]<=[4]}",
            "{devices=[2,1,2]<=[4]}",
            "{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}",
            "{devices=[1,2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
            "{devices=[1,1,2,2]<=[4] last_tile_dim_replicate}"};
  return {"{replicated}",
          "{devices=[2,2,2]<=[8]}",
          "{devices=[2,2,2]<=[2,2,2]T(2,1,0)}",
          "{devices=[2,1,2,2]<=[8] last_tile_dim_replicate}",
          "{devices=[1,2,2,2]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}",
          "{devices=[2,4,1]<=[8]}",
          "{devices=[1,1,8]<=[8]}"};
}

// out[b,m,n] = sum_k lhs[b,m,k] rhs[b,k,n] with uneven m = 3, k = 5, n = 6.
std::string batched_matmul(const std::string& lhs, const std::string& rhs, const std::string& out) {
  return dot_module("  a = f32[2,3,5] parameter(0), sharding=" + lhs +
                    "\n"
                    "  b = f32[2,5,6] parameter(1), sharding=" +
                    rhs +
                    "\n"
                    "  ROOT d = f32[2,3,6] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
                    "lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding=" +
                    out + "\n");
}

// Returns how many of the partitioned programs contain a windowed loop.
int64_t sweep(int devices, size_t out_stride, SpmdOptions options = {}) {
  const auto shardings = rank3_shardings(devices);
  int checked = 0;
  int64_t loops = 0;
  for (size_t l = 0; l < shardings.size(); ++l)
    for (size_t r = 0; r < shardings.size(); ++r)
      for (size_t o = (l + r) % out_stride; o < shardings.size(); o += out_stride) {
        auto p =
            partition(batched_matmul(shardings[l], shardings[r], shardings[o]), devices, options);
        VerifyResult v = verify_partitioning(p.annotated, p.result.module, 1 + l + 7 * r, 1e-4);
        EXPECT_TRUE(v.ok) << "lhs " << shardings[l] << " rhs " << shardings[r] << " out "
                          << shardings[o] << ": " << v.first_mismatch;
        ++checked;
        loops += spmd_dot_test::count_ops(p.result.module, {Opcode::kWhile});
      }
  EXPECT_GT(checked, 0);
  return loops;
}

TEST(SpmdDotSweep, AllOperandShardingsOn4Devices) { EXPECT_EQ(sweep(4, 4), 0); }

TEST(SpmdDotSweep, AllOperandShardingsOn2x2x2Mesh) { EXPECT_EQ(sweep(8, 3), 0); }

// The same with the windowed einsum forced wherever a plan all-gathers one
// operand dim (threshold 0): loops on rings of 2, 4 and 8, inside groups.
TEST(SpmdDotSweep, WindowedOn4Devices) {
  EXPECT_GT(sweep(4, 4, spmd_dot_test::forced_windowed()), 10);
}
TEST(SpmdDotSweep, WindowedOn2x2x2Mesh) {
  EXPECT_GT(sweep(8, 3, spmd_dot_test::forced_windowed()), 5);
}

}  // namespace
}  // namespace podsim::compiler
