// Tile coordinates as digit functions (tile_coordinates.h): the functions
// agree with tile_index_for_device on every device, canonical forms merge
// split digits, and the common digit grid reads refinements off the layouts.
#include "compiler/sharding/tile_coordinates.h"

#include <gtest/gtest.h>

namespace podsim::compiler {
namespace {

Sharding parse(std::string_view text) { return parse_sharding(text); }

using Pieces = DigitPieces;

TEST(TileCoordinates, PiecesAgreeWithTileIndexForDeviceOnEveryDevice) {
  for (const char* text : {"{devices=[4,2]<=[8]}", "{devices=[2,4]<=[2,4]T(1,0)}",
                           "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
                           "{devices=[4,2,2]<=[2,4,2]T(1,2,0) last_tile_dim_replicate}",
                           "{devices=[32,16]<=[16,32]T(1,0) last_tile_dim_replicate}",
                           "{devices=[512]<=[16,32]T(1,0)}"}) {
    const Sharding s = parse(text);
    const int64_t rank = s.tiled_data_rank();
    const auto pieces = tile_coordinate_pieces(s, rank);
    ASSERT_TRUE(pieces.has_value()) << text;
    for (int64_t device = 0; device < s.total_num_tiles(); ++device) {
      const auto index = *s.tile_index_for_device(device);
      for (int64_t d = 0; d < rank; ++d)
        ASSERT_EQ(evaluate_pieces((*pieces)[static_cast<size_t>(d)], device),
                  index[static_cast<size_t>(d)])
            << text << " device " << device << " dim " << d;
    }
  }
}

TEST(TileCoordinates, ReplicatedIsCoordinateZeroAndExplicitHasNoPieces) {
  const auto replicated = tile_coordinate_pieces(Sharding::replicated(), 2);
  ASSERT_TRUE(replicated.has_value());
  EXPECT_EQ(*replicated, (std::vector<Pieces>{{}, {}}));
  // 0,1,3,2 is no iota array (after 0,1 the next block would need 2,3).
  EXPECT_FALSE(tile_coordinate_pieces(parse("{devices=[2,2]0,1,3,2}"), 2).has_value());
}

TEST(TileCoordinates, CanonicalFormMergesOneDigitRange) {
  // (d / 2) % 2 * 2 + d % 2 == d % 4: pieces (2,2),(2,1) are (4,1).
  EXPECT_EQ(canonical_pieces({{2, 2}, {2, 1}}), (Pieces{{4, 1}}));
  // Not adjacent (stride 4 != 1 * 2): kept; size-1 pieces dropped.
  EXPECT_EQ(canonical_pieces({{2, 4}, {1, 2}, {2, 1}}), (Pieces{{2, 4}, {2, 1}}));
}

TEST(TileCoordinates, IotaMatrixPiecesOfTransposedGroups) {
  // [4,2]<=[2,4]T(1,0): element (g, k) = k*4 + g, so the group is d % 4 and
  // the position d / 4.
  const auto m = iota_matrix_pieces(4, 2, {2, 4}, {1, 0});
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->first, (Pieces{{4, 1}}));
  EXPECT_EQ(m->second, (Pieces{{2, 4}}));
}

// [32,16]<=[16,32]T(1,0) holds tile d % 32 on device d (replica d / 32);
// [512]<=[16,32]T(1,0) holds tile (d % 32) * 16 + d / 32. Grid cuts: 1, 32,
// 512 -> digit 0 = d % 32 (size 32), digit 1 = d / 32 (size 16). The target
// coordinate is the source's digit list followed by the replication digit.
TEST(TileCoordinates, CommonGridShowsARefinement) {
  const Sharding shardings[] = {parse("{devices=[32,16]<=[16,32]T(1,0) last_tile_dim_replicate}"),
                                parse("{devices=[512]<=[16,32]T(1,0)}")};
  const auto grid = layouts_on_common_grid(shardings, 1, 512);
  ASSERT_TRUE(grid.has_value());
  EXPECT_EQ(grid->grid.bounds, (std::vector<int64_t>{1, 32, 512}));
  EXPECT_EQ(grid->layouts[0].data, (std::vector<DigitIds>{{0}}));
  EXPECT_EQ(grid->layouts[0].replicated, (DigitIds{1}));
  EXPECT_EQ(grid->layouts[1].data, (std::vector<DigitIds>{{0, 1}}));
  EXPECT_TRUE(grid->layouts[1].replicated.empty());
  // Rebuilding from the digit lists gives the same (canonical) shardings.
  EXPECT_EQ(sharding_from_digits(grid->grid, grid->layouts[0].data), shardings[0]);
  EXPECT_EQ(sharding_from_digits(grid->grid, grid->layouts[1].data), shardings[1]);
  EXPECT_EQ(grid->grid.pieces_of({1}), (Pieces{{16, 32}}));
}

TEST(TileCoordinates, GroupsFromDigitsVaryOnlyInTheColumnDigits) {
  // Grid 1, 2, 8 over 8 devices: digit 0 = d % 2, digit 1 = d / 2. Groups
  // on digit 0: rows {0,1}, {2,3}, {4,5}, {6,7}; on digit 1: {0,2,4,6}, {1,3,5,7}.
  const DigitGrid grid{{1, 2, 8}};
  EXPECT_EQ(groups_from_digits(grid, {0}).to_vector(),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  const TileAssignment by_high = groups_from_digits(grid, {1});
  EXPECT_EQ(by_high.dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(by_high.to_vector(), (std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7}));
}

TEST(TileCoordinates, NoGridWhenCutsAreNotAChain) {
  // [2,3] and [3,2] over 6 devices cut at 3 and 2: 3 does not divide by 2.
  const Sharding shardings[] = {parse("{devices=[2,3]<=[6]}"), parse("{devices=[3,2]<=[6]}")};
  EXPECT_FALSE(layouts_on_common_grid(shardings, 2, 6).has_value());
}

}  // namespace
}  // namespace podsim::compiler
