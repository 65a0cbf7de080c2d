// TileAssignment: iota form, canonicalisation, reshape/transpose, lookup.
#include "compiler/sharding/tile_assignment.h"

#include <gtest/gtest.h>

namespace podsim::compiler {
namespace {

using Ids = std::vector<int64_t>;

TEST(TileAssignment, IotaWithTransposeMatchesReferenceExample) {
  // docs/reference/gspmd.md#tile-assignment: [4,4,1]<=[4,2,2]T(1,0,2) denotes this list.
  const Ids reshape{4, 2, 2}, perm{1, 0, 2};
  auto t = TileAssignment::iota({4, 4, 1}, reshape, perm);
  EXPECT_EQ(t.to_vector(), (Ids{0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15}));
  // Canonical form: the size-2 minor dim of [4,2,2] stays separate because
  // after the transpose it is not adjacent to its major neighbour.
  EXPECT_EQ(t.to_string(), "[4,4,1]<=[4,2,2]T(1,0,2)");
}

TEST(TileAssignment, PlainIotaPrintsWithoutTranspose) {
  EXPECT_EQ(TileAssignment::iota({2, 2}).to_vector(), (Ids{0, 1, 2, 3}));
  EXPECT_EQ(TileAssignment::iota({4, 2}).to_string(), "[4,2]<=[8]");
}

TEST(TileAssignment, CanonicalisationMergesAndDropsDims) {
  // [8]<=[2,1,4]T(0,1,2): size-1 dim dropped, [2,4] untransposed merges to [8].
  const Ids r{2, 1, 4}, p{0, 1, 2};
  auto t = TileAssignment::iota({8}, r, p);
  EXPECT_EQ(t, TileAssignment::iota({8}));
  EXPECT_EQ(t.to_string(), "[8]<=[8]");
  // [2,2,2]T(1,2,0): dims 1 and 2 stay adjacent and merge -> [2,4]T(1,0).
  const Ids r3{2, 2, 2}, p3{1, 2, 0};
  auto u = TileAssignment::iota({8}, r3, p3);
  EXPECT_EQ(u.to_string(), "[8]<=[2,4]T(1,0)");
  // Value check: transposed dims are (b,c,a) of r=[a,b,c], value 4a+2b+c;
  // position (b,c,a) row-major: (0,0,0)=0 (0,0,1)=4 (0,1,0)=1 (0,1,1)=5 ...
  EXPECT_EQ(u.to_vector(), (Ids{0, 4, 1, 5, 2, 6, 3, 7}));
}

TEST(TileAssignment, ExplicitIotaArraysAreDetected) {
  auto t = TileAssignment::from_devices({2, 2}, {0, 2, 1, 3});
  ASSERT_TRUE(t.is_iota());
  EXPECT_EQ(t.to_string(), "[2,2]<=[2,2]T(1,0)");
  const Ids r{4, 2, 2}, p{1, 0, 2};
  EXPECT_EQ(TileAssignment::from_devices({4, 4, 1},
                                         {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15}),
            TileAssignment::iota({4, 4, 1}, r, p));
}

TEST(TileAssignment, NonIotaArraysStayExplicit) {
  auto t = TileAssignment::from_devices({2, 2}, {0, 2, 3, 1});
  EXPECT_FALSE(t.is_iota());
  EXPECT_EQ(t.to_string(), "[2,2]0,2,3,1");
  EXPECT_NE(t, TileAssignment::iota({2, 2}));
  // Not starting at 0, or a repeated id, is never iota.
  EXPECT_FALSE(TileAssignment::from_devices({2}, {1, 0}).is_iota());
  EXPECT_FALSE(TileAssignment::from_devices({2}, {0, 0}).is_iota());
}

TEST(TileAssignment, TransposeStaysIotaAndMatchesMaterialised) {
  auto t = TileAssignment::iota({2, 4});
  const Ids perm{1, 0};
  auto u = t.transpose(perm);
  EXPECT_TRUE(u.is_iota());
  EXPECT_EQ(u.dims(), (Ids{4, 2}));
  // u[i][j] = t[j][i] = 4j + i.
  EXPECT_EQ(u.to_vector(), (Ids{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(u.to_string(), "[4,2]<=[2,4]T(1,0)");
}

TEST(TileAssignment, TransposeOfNonRefinableIotaFallsBackCorrectly) {
  // [2,3]<=[6] reshaped to [3,2] then transposed: dims [3,2] do not refine the
  // single factor boundaries of a [3,2]T(1,0)-style array, exercise fallback.
  const Ids r{2, 3}, p{1, 0};
  auto t = TileAssignment::iota({6}, r, p).reshape({2, 3});  // 0,3,1 / 4,2,5
  EXPECT_EQ(t.to_vector(), (Ids{0, 3, 1, 4, 2, 5}));
  const Ids perm{1, 0};
  auto u = t.transpose(perm);  // [3,2]: 0,4 / 3,2 / 1,5
  EXPECT_EQ(u.to_vector(), (Ids{0, 4, 3, 2, 1, 5}));
}

TEST(TileAssignment, IndexOfAndAt) {
  const Ids r{2, 4}, p{1, 0};
  auto t = TileAssignment::iota({4, 2}, r, p);  // rows: 0,4 / 1,5 / 2,6 / 3,7
  EXPECT_EQ(*t.index_of(6), (Ids{2, 1}));
  EXPECT_EQ(t.at(Ids{3, 1}), 7);
  EXPECT_FALSE(t.index_of(8).has_value());
  auto e = TileAssignment::from_devices({2, 2}, {3, 0, 2, 1});
  EXPECT_EQ(*e.index_of(2), (Ids{1, 0}));
}

TEST(TileAssignment, SortLastDim) {
  EXPECT_EQ(TileAssignment::from_devices({2, 2}, {1, 0, 3, 2}).sort_last_dim(),
            TileAssignment::iota({2, 2}));
  // Iota path: [2,2]<=[2,2]T(1,0) rows (0,2),(1,3) are already sorted.
  auto t = TileAssignment::from_devices({2, 2}, {0, 2, 1, 3});
  EXPECT_EQ(t.sort_last_dim(), t);
}

}  // namespace
}  // namespace podsim::compiler
