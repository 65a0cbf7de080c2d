// Sharding sweeps for the gather/scatter and dynamic-slice handlers: every
// combination of a small set of 2-D shardings on 4 devices (replicated, 1-D
// on either dim, [2,2], and partially replicated [2,1]/[1,2]) for operand,
// indices/update and result, on uneven dims, must partition to a program
// that computes what the original computes. Complements the strategy tests
// (ops_gather_scatter_test.cc, ops_dynamic_slice_test.cc), which pin the
// collectives of the intended cases.
#include <gtest/gtest.h>

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

// Partitions and verifies; returns a description of the failure, "" if ok.
std::string check(const std::string& text) {
  auto p = partition_text(text, 4);
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
        const std::string text = std::string(kAdd) + "  t = f32[7,6] parameter(0), sharding=" + table + "\n" +
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
        const std::string text = std::string(kAdd) + "  o = f32[7,6] parameter(0), sharding=" + operand + "\n" +
                                 "  i = s32[5] parameter(1), sharding=" + indices + "\n" +
                                 "  u = f32[5,6] parameter(2), sharding=" + updates + "\n" +
                                 "  ROOT s = f32[7,6] scatter(o, i, u), update_window_dims={1}, inserted_window_dims={0}, "
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
        const std::string text = std::string(kAdd) + "  x = f32[7,6] parameter(0), sharding=" + operand + "\n" +
                                 "  u = f32[3,6] parameter(1), sharding=" + update + "\n" +
                                 "  i = s32[] parameter(2), sharding={replicated}\n"
                                 "  j = s32[] parameter(3), sharding={replicated}\n"
                                 "  d = f32[7,6] dynamic-update-slice(x, u, i, j), sharding=" + out + "\n" +
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
        const std::string text = std::string(kAdd) + "  x = f32[7,6] parameter(0), sharding=" + a + "\n" +
                                 "  y = f32[3,6] parameter(1), sharding=" + b + "\n" +
                                 "  c = f32[10,6] concatenate(x, y), dimensions={0}, sharding=" + out + "\n" +
                                 "  z = f32[] constant(0.5)\n"
                                 "  p = f32[13,9] pad(c, z), padding=2_1x0_-2_1, sharding=" + a + "\n" +
                                 "  ROOT s = f32[5,4] slice(p), slice={[1:11:2], [2:9:2]}, sharding=" + b + "\n}\n";
        const std::string failure = check(text);
        if (!failure.empty() && ++failures <= 3) ADD_FAILURE() << failure;
      }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace podsim::compiler
