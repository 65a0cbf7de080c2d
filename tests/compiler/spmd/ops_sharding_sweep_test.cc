// Sharding sweeps for the gather/scatter and dynamic-slice handlers: every
// combination of a small set of 2-D shardings on 4 devices (replicated, 1-D
// on either dim, [2,2], and partially replicated [2,1]/[1,2]) for operand,
// indices/update and result, on uneven dims, must partition to a program
// that computes what the original computes. Complements the strategy tests
// (ops_gather_scatter_test.cc, ops_dynamic_slice_test.cc), which pin the
// collectives of the intended cases.
#include <gtest/gtest.h>

#include "compiler/ir/verifier.h"
#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::partition_text;

const std::vector<std::string> kMatrixShardings = {
    "{replicated}",
    "{devices=[4,1]<=[4]}",
    "{devices=[1,4]<=[4]}",
    "{devices=[2,2]<=[4]}",
    "{devices=[2,2]<=[2,2]T(1,0)}",
    "{devices=[2,1,2]<=[4] last_tile_dim_replicate}",
    "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
};
const std::vector<std::string> kVectorShardings = {
    "{replicated}",
    "{devices=[4]<=[4]}",
    "{devices=[2,2]<=[4] last_tile_dim_replicate}",
};

// Partitions, checks the program is well formed, verifies numerically;
// returns a description of the failure, "" if ok.
std::string check(const std::string& text) {
  auto p = partition_text(text, 4);
  verify_module(p.result.module);  // throws on a malformed program
  VerifyResult r = verify_partitioning(p.annotated, p.result.module, 3, 1e-4);
  return r.ok ? "" : r.first_mismatch + "\n" + text;
}

constexpr const char* kAdd = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
)";

TEST(SpmdShardingSweep, EmbeddingGather) {
  int failures = 0;
  for (const std::string& table : kMatrixShardings)
    for (const std::string& indices : kVectorShardings)
      for (const std::string& out : kMatrixShardings) {
        const std::string text =
            std::string(kAdd) + "  t = f32[7,6] parameter(0), sharding=" + table + "\n" +
            "  i = s32[5] parameter(1), sharding=" + indices + "\n" +
            "  ROOT g = f32[5,6] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
            "start_index_map={0}, index_vector_dim=1, slice_sizes={1,6}, sharding=" +
            out + "\n}\n";
        const std::string failure = check(text);
        if (!failure.empty() && ++failures <= 3) ADD_FAILURE() << failure;
      }
  EXPECT_EQ(failures, 0);
}

TEST(SpmdShardingSweep, ScatterAdd) {
  int failures = 0;
  for (const std::string& operand : kMatrixShardings)
    for (const std::string& indices : kVectorShardings)
      for (const std::string& updates : kMatrixShardings) {
        const std::string text =
            std::string(kAdd) + "  o = f32[7,6] parameter(0), sharding=" + operand + "\n" +
            "  i = s32[5] parameter(1), sharding=" + indices + "\n" +
            "  u = f32[5,6] parameter(2), sharding=" + updates + "\n" +
            "  ROOT s = f32[7,6] scatter(o, i, u), update_window_dims={1}, "
            "inserted_window_dims={0}, "
            "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add, sharding=" +
            operand + "\n}\n";
        const std::string failure = check(text);
        if (!failure.empty() && ++failures <= 3) ADD_FAILURE() << failure;
      }
  EXPECT_EQ(failures, 0);
}

TEST(SpmdShardingSweep, DynamicSliceAndUpdate) {
  int failures = 0;
  for (const std::string& operand : kMatrixShardings)
    for (const std::string& update : kMatrixShardings)
      for (const std::string& out : kMatrixShardings) {
        const std::string text =
            std::string(kAdd) + "  x = f32[7,6] parameter(0), sharding=" + operand + "\n" +
            "  u = f32[3,6] parameter(1), sharding=" + update + "\n" +
            "  i = s32[] parameter(2), sharding={replicated}\n"
            "  j = s32[] parameter(3), sharding={replicated}\n"
            "  d = f32[7,6] dynamic-update-slice(x, u, i, j), sharding=" +
            out + "\n" +
            "  ROOT s = f32[2,5] dynamic-slice(d, j, i), dynamic_slice_sizes={2,5}, sharding=" +
            operand + "\n}\n";
        const std::string failure = check(text);
        if (!failure.empty() && ++failures <= 3) ADD_FAILURE() << failure;
      }
  EXPECT_EQ(failures, 0);
}

TEST(SpmdShardingSweep, SlicePadConcatenate) {
  int failures = 0;
  for (const std::string& a : kMatrixShardings)
    for (const std::string& b : kMatrixShardings)
      for (const std::string& out : kMatrixShardings) {
        const std::string text =
            std::string(kAdd) + "  x = f32[7,6] parameter(0), sharding=" + a + "\n" +
            "  y = f32[3,6] parameter(1), sharding=" + b + "\n" +
            "  c = f32[10,6] concatenate(x, y), dimensions={0}, sharding=" + out + "\n" +
            "  z = f32[] constant(0.5)\n"
            "  p = f32[13,9] pad(c, z), padding=2_1x0_-2_1, sharding=" +
            a + "\n" + "  ROOT s = f32[5,4] slice(p), slice={[1:11:2], [2:9:2]}, sharding=" + b +
            "\n}\n";
        const std::string failure = check(text);
        if (!failure.empty() && ++failures <= 3) ADD_FAILURE() << failure;
      }
  EXPECT_EQ(failures, 0);
}

TEST(SpmdShardingSweep, WhileLoopState) {
  // Loop state (counter, x[7,6]); the body reverses x, adds its column sums
  // and a reversed copy: reductions and halos inside the partitioned body.
  // Entry value, loop and result shardings are swept independently.
  int failures = 0;
  for (const std::string& in : kMatrixShardings)
    for (const std::string& loop : kMatrixShardings)
      for (const std::string& out : kMatrixShardings) {
        const std::string text = std::string(kAdd) + "  x = f32[7,6] parameter(0), sharding=" + in +
                                 "\n"
                                 "  z = s32[] constant(0)\n"
                                 "  t = (s32[], f32[7,6]) tuple(z, x)\n"
                                 "  w = (s32[], f32[7,6]) while(t), condition=cond, body=body, "
                                 "sharding={{replicated}, " +
                                 loop +
                                 "}\n"
                                 "  ROOT r = f32[7,6] get-tuple-element(w), index=1, sharding=" +
                                 out + "\n}\n";
        const std::string bodies = R"(cond {
  p = (s32[], f32[7,6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(2)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[7,6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[7,6] get-tuple-element(p), index=1
  zero = f32[] constant(0)
  colsum = f32[6] reduce(x, zero), dimensions={0}, to_apply=add
  b = f32[7,6] broadcast(colsum), dimensions={1}
  r = f32[7,6] reverse(x), dimensions={0,1}
  eighth = f32[] constant(0.125)
  e = f32[7,6] broadcast(eighth), dimensions={}
  y = f32[7,6] add(r, b)
  ye = f32[7,6] multiply(y, e)
  x2 = f32[7,6] add(x, ye)
  ROOT t = (s32[], f32[7,6]) tuple(next, x2)
}
)";
        std::string full = text;
        full.insert(full.find("ENTRY"), bodies);
        const std::string failure = check(full);
        if (!failure.empty() && ++failures <= 3) ADD_FAILURE() << failure;
      }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace podsim::compiler
