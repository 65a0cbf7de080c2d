// element_sharding / element_shardings (compiler/spmd/spmd_handlers.h): the
// sharding of each element of a tuple value, from a per-leaf tuple sharding
// (pre-order leaves) or from one sharding applied to every leaf. The
// expected values are read off the leaf order by hand.
#include <gtest/gtest.h>

#include "compiler/ir/shape.h"
#include "compiler/sharding/sharding.h"
#include "compiler/spmd/spmd_handlers.h"

namespace podsim::compiler {
namespace {

// (f32[8], (f32[8], f32[4]), f32[2]): four leaves; element 1 holds leaves 1-2.
Shape nested_shape() {
  return Shape::tuple({Shape(DType::kF32, {8}),
                       Shape::tuple({Shape(DType::kF32, {8}), Shape(DType::kF32, {4})}),
                       Shape(DType::kF32, {2})});
}

TEST(TupleElementSharding, PerLeafShardingSplitsAtElementBoundaries) {
  const Sharding a = parse_sharding("{devices=[4]<=[4]}");
  const Sharding b = parse_sharding("{devices=[2,2]<=[4] last_tile_dim_replicate}");
  const Sharding c = parse_sharding("{replicated}");
  const Sharding d = parse_sharding("{devices=[4]3,2,1,0}");
  const Sharding leaves = Sharding::tuple({a, b, c, d});
  const Shape shape = nested_shape();

  const std::vector<Sharding> all = element_shardings(leaves, shape);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0], a);
  EXPECT_EQ(all[1], Sharding::tuple({b, c}));  // the nested element keeps its two leaves
  EXPECT_EQ(all[2], d);                        // leaf 3: after the nested element's two
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(element_sharding(leaves, shape, i), all[static_cast<size_t>(i)]) << i;
}

TEST(TupleElementSharding, OneShardingAppliesToEveryLeaf) {
  const Sharding tiled = parse_sharding("{devices=[4]<=[4]}");
  const Shape shape = nested_shape();
  for (const Sharding& uniform : {tiled, Sharding::tuple({tiled})}) {
    const std::vector<Sharding> all = element_shardings(uniform, shape);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0], tiled);
    EXPECT_EQ(all[1], Sharding::tuple({tiled, tiled}));
    EXPECT_EQ(all[2], tiled);
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_EQ(element_sharding(uniform, shape, i), all[static_cast<size_t>(i)]) << i;
  }
}

}  // namespace
}  // namespace podsim::compiler
