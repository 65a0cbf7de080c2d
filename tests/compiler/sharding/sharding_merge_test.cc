// merge_if_compatible over tilings of a device subset (compiler/sharding/sharding_merge.cc):
// the ids are labels, so the merge is the one over their ranks with the ids put back.
#include <gtest/gtest.h>

#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler {
namespace {

TEST(MergeIfCompatible, TilingsOverADeviceSubsetMerge) {
  // Devices {0,1,4,5}. a tiles dim 1: tile j on {0,4} (j=0) and {1,5} (j=1);
  // b tiles dim 0: tile i on {0,1} (i=0) and {4,5} (i=1). Tile (i,j) is the
  // device in both: (0,0)->0, (0,1)->1, (1,0)->4, (1,1)->5 -> [2,2] 0,1,4,5.
  const Sharding a = parse_sharding("{devices=[1,2,2]0,4,1,5 last_tile_dim_replicate}");
  const Sharding b = parse_sharding("{devices=[2,1,2]0,1,4,5 last_tile_dim_replicate}");
  const Sharding expected = parse_sharding("{devices=[2,2]0,1,4,5}");
  EXPECT_EQ(merge_if_compatible(a, b), expected);
  EXPECT_EQ(merge_if_compatible(b, a), expected);
  // Different subsets ({0,1,4,5} vs {0,1,2,3}) have no merge.
  const Sharding c = parse_sharding("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}");
  EXPECT_FALSE(merge_if_compatible(a, c).has_value());
}

}  // namespace
}  // namespace podsim::compiler
