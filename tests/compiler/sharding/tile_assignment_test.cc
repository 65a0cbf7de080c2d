// TileAssignment: iota form, canonicalisation, reshape/transpose, lookup.
#include "compiler/sharding/tile_assignment.h"

#include <gtest/gtest.h>

namespace podsim::compiler {
namespace {

TEST(TileAssignment, IotaWithTransposeMatchesReferenceExample) {
  // gspmd-algorithms.md 1.3: [4,4,1]<=[4,2,2]T(1,0,2).
  const std::vector<int64_t> reshape{4, 2, 2}, perm{1, 0, 2};
  auto t = TileAssignment::iota({4, 4, 1}, reshape, perm);
  EXPECT_EQ(t.to_vector(),
            (std::vector<int64_t>{0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15}));
}
}  // namespace
}  // namespace podsim::compiler
