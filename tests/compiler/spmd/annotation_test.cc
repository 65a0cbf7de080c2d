// custom-call "Sharding" annotations inside the graph (the model builders'
// activation annotations, the training step's weight-update shardings): the
// partitioner reshards the operand to the annotation and passes it through,
// never falling back to the replicate-everything default.
#include <gtest/gtest.h>

#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::expect_equivalent;
using spmd_test::partition_text;

TEST(SpmdAnnotations, FinerAnnotationIsALocalSlice) {
  // x replicated, annotated [4,1]: each device slices its rows locally (no
  // collective at all); the negate then runs on the [2,8] shard.
  auto p = partition_text(R"(HloModule m
ENTRY e {
  x = f32[8,8] parameter(0), sharding={replicated}
  a = f32[8,8] custom-call(x), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}
  ROOT n = f32[8,8] negate(a), sharding={devices=[4,1]<=[4]}
}
)",
                          4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
  EXPECT_EQ(p.result.stats.all_gathers + p.result.stats.all_reduces + p.result.stats.all_to_alls +
                p.result.stats.collective_permutes,
            0);
}

TEST(SpmdAnnotations, MovingTheTilingIsOneAllToAll) {
  // [4,1] -> annotation [1,4] on a 2-D mesh's worth of devices: the tiling
  // moves between dims (same device order) = one all-to-all, as XLA's
  // TiledToTiledEven; uneven rows (6 over 4) included.
  auto p = partition_text(R"(HloModule m
ENTRY e {
  x = f32[6,8] parameter(0), sharding={devices=[4,1]<=[4]}
  a = f32[6,8] custom-call(x), custom_call_target="Sharding", sharding={devices=[1,4]<=[4]}
  ROOT n = f32[6,8] negate(a), sharding={devices=[1,4]<=[4]}
}
)",
                          4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
  EXPECT_EQ(p.result.stats.full_replications, 0);
  EXPECT_EQ(p.result.stats.all_to_alls, 1);
}

TEST(SpmdAnnotations, CoarserAnnotationIsAnAllGatherWithinGroups) {
  // [2,4] on 8 devices -> annotation [2,1] partially replicated over 4: one
  // all-gather of dim 1 inside each group of the 4 devices sharing a row tile.
  auto p = partition_text(R"(HloModule m
ENTRY e {
  x = f32[4,8] parameter(0), sharding={devices=[2,4]<=[8]}
  a = f32[4,8] custom-call(x), custom_call_target="Sharding", sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  ROOT n = f32[4,8] negate(a), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
}
)",
                          8);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.default_fallbacks, 0);
  EXPECT_EQ(p.result.stats.all_gathers, 1);
  EXPECT_EQ(p.result.stats.full_replications, 0);
}

}  // namespace
}  // namespace podsim::compiler
