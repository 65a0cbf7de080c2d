// Logical mesh -> physical device placement.
#include <gtest/gtest.h>

#include "common/error.h"
#include "hw_models/ici/placement.h"

namespace podsim::hw {
namespace {

const LinkParams kParams{1e11, 1e-6, 4.5e11, 0.5e-6};

TEST(Placement, RowMajorIsIdentity) {
  const Slice slice{{2, 2}, {false, false}, 2};
  const Placement p = place_mesh(slice, PlacementQuery{{2, 4}, PlacementOrder::kRowMajor, {}});
  for (int64_t d = 0; d < 8; ++d) EXPECT_EQ(p.core(d), d);
  EXPECT_EQ(p.core_at({1, 2}), 6);
}

TEST(Placement, ColumnMajorRunsFirstDimFastest) {
  const Slice slice{{3}, {false}, 2};
  const Placement p = place_mesh(slice, PlacementQuery{{2, 3}, PlacementOrder::kColumnMajor, {}});
  // Mesh coords (i, j) -> core i + 2 j.
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(p.core_at({i, j}), i + 2 * j);
}

TEST(Placement, ExplicitListMustBeAPermutation) {
  const Slice slice{{2}, {false}, 2};
  const Placement p =
      place_mesh(slice, PlacementQuery{{4}, PlacementOrder::kExplicit, {3, 1, 0, 2}});
  EXPECT_EQ(p.core(0), 3);
  EXPECT_THROW(place_mesh(slice, PlacementQuery{{4}, PlacementOrder::kExplicit, {3, 1, 1, 2}}),
               UserError);
  EXPECT_THROW(place_mesh(slice, PlacementQuery{{4}, PlacementOrder::kExplicit, {0, 1, 2}}),
               UserError);
  EXPECT_THROW(place_mesh(slice, PlacementQuery{{3}, PlacementOrder::kRowMajor, {}}), UserError);
  EXPECT_THROW(placement_order_from_name("diagonal"), UserError);
}

TEST(Placement, FoldedRingPositions) {
  // 8 rows: 0 2 4 6 7 5 3 1; neighbours at most 2 apart, closing at distance 1.
  std::vector<int64_t> order;
  for (int64_t i = 0; i < 8; ++i) order.push_back(folded_ring_position(i, 8));
  EXPECT_EQ(order, (std::vector<int64_t>{0, 2, 4, 6, 7, 5, 3, 1}));
  std::vector<int64_t> odd;
  for (int64_t i = 0; i < 5; ++i) odd.push_back(folded_ring_position(i, 5));
  EXPECT_EQ(odd, (std::vector<int64_t>{0, 2, 4, 3, 1}));
}

// Hops between ring neighbours of every mesh row (inner axis) and column.
int max_ring_hops(const Topology& t, const Placement& p, int axis) {
  const int64_t a = p.mesh_shape[0], b = p.mesh_shape[1];
  const int64_t rings = axis == 1 ? a : b, len = axis == 1 ? b : a;
  int worst = 0;
  for (int64_t r = 0; r < rings; ++r)
    for (int64_t i = 0; i < len; ++i) {
      const int64_t j = (i + 1) % len;
      const CoreId s = axis == 1 ? p.core_at({r, i}) : p.core_at({i, r});
      const CoreId d = axis == 1 ? p.core_at({r, j}) : p.core_at({j, r});
      worst = std::max(worst, static_cast<int>(t.route(s, d).size()));
    }
  return worst;
}

TEST(Placement, RingPreservingKeepsInnerRingsOneHop) {
  // [4, 8] mesh on a 4x4 chip mesh (no wraparound) with 2 devices per chip.
  const Slice slice{{4, 4}, {false, false}, 2};
  const Topology t(slice, kParams);
  const Placement ring =
      place_mesh(slice, PlacementQuery{{4, 8}, PlacementOrder::kRingPreserving, {}});
  // Inner axis: along y on device 0, back on device 1: every neighbour is one
  // ICI hop or one on-chip link, including the closing pair.
  EXPECT_EQ(max_ring_hops(t, ring, 1), 1);
  // Outer axis: folded rows 0 2 3 1: at most 2 hops.
  EXPECT_EQ(max_ring_hops(t, ring, 0), 2);
  // Row-major closes each inner ring across the row: device 7 = chip (0,3)
  // device 1 back to device 0 = chip (0,0): 3 hops.
  const Placement rows = place_mesh(slice, PlacementQuery{{4, 8}, PlacementOrder::kRowMajor, {}});
  EXPECT_EQ(max_ring_hops(t, rows, 1), 3);
  // Every core used once.
  std::vector<CoreId> cores = ring.core_of_device;
  std::sort(cores.begin(), cores.end());
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(cores[static_cast<size_t>(i)], i);
  // Transposed mesh [8, 4] puts the ring on the first axis.
  const Placement transposed =
      place_mesh(slice, PlacementQuery{{8, 4}, PlacementOrder::kRingPreserving, {}});
  EXPECT_EQ(max_ring_hops(t, transposed, 0), 1);
  EXPECT_THROW(place_mesh(slice, PlacementQuery{{2, 16}, PlacementOrder::kRingPreserving, {}}),
               UserError);
}

TEST(AxisRingLoad, NeighbourRingsLoadEachLinkOnce) {
  // [8] on an 8-chip torus: every shift is one hop on its own + link.
  const Topology ring(Slice{{8}, {true}, 1}, kParams);
  const Placement p = place_mesh(ring.slice(), PlacementQuery{{8}, PlacementOrder::kRowMajor, {}});
  EXPECT_EQ(axis_ring_load(ring, p, 0).max_link_load, 1);
  EXPECT_EQ(axis_ring_load(ring, p, 0).max_hops, 1);
  // On an 8-chip line the ring closes 7 hops back over the - links, which
  // nothing else uses: load still 1.
  const Topology line(Slice{{8}, {false}, 1}, kParams);
  EXPECT_EQ(axis_ring_load(line, p, 0).max_link_load, 1);
  EXPECT_EQ(axis_ring_load(line, p, 0).max_hops, 7);
  EXPECT_TRUE(placement_notes(line, p, {"x"}, "row_major", {8}).empty());
}

TEST(AxisRingLoad, StridedRingSharesLinksTwice) {
  // [16] on a 16-ring as 0, 2, ..., 14, 1, 3, ..., 15: each 2-hop step
  // 2k -> 2k+2 shares link 2k+1 -> 2k+2 with 2k+1 -> 2k+3; the crossing
  // 14 -> 1 is 3 hops. Load 2 is at the note's threshold: no note.
  const Topology ring(Slice{{16}, {true}, 1}, kParams);
  std::vector<int64_t> order;
  for (int64_t i = 0; i < 16; i += 2) order.push_back(i);
  for (int64_t i = 1; i < 16; i += 2) order.push_back(i);
  const Placement p =
      place_mesh(ring.slice(), PlacementQuery{{16}, PlacementOrder::kExplicit, order});
  EXPECT_EQ(axis_ring_load(ring, p, 0).max_link_load, 2);
  EXPECT_EQ(axis_ring_load(ring, p, 0).max_hops, 3);
  EXPECT_TRUE(placement_notes(ring, p, {"x"}, "explicit", {16}).empty());
}

TEST(AxisRingLoad, RowMajor32x64OnV4Slice16x16x8) {
  // Mesh [32, 64] row-major on a 16x16x8 torus: x = 2a + (b >= 8), so x's
  // ring alternates chip (a, j, c) -> (a, j+8, c) and (a, j+8, c) ->
  // (a+1, j, c): 8 hops along the 16-ring of dim 1 (half way: the
  // direction goes by parity), the second after one hop in dim 0, so
  // max_hops = 9. On one dim-1 ring the 4 even j of 0..6 send their 8-hop
  // legs the + way, covering [j, j+8) and [j+8, j+16): every + link is
  // under 4 of them (e.g. link 7 -> 8 under j = 0, 2, 4, 6), so load 4.
  // y = 8 (b mod 8) + c stays inside dims 1 and 2 with neighbour steps
  // except where it wraps a line of 8: no note for it.
  const Topology t(Slice{{16, 16, 8}, {true, true, true}, 1}, kParams);
  const Placement p =
      place_mesh(t.slice(), PlacementQuery{{32, 64}, PlacementOrder::kRowMajor, {}});
  const AxisRingLoad x = axis_ring_load(t, p, 0);
  EXPECT_EQ(x.max_link_load, 4);
  EXPECT_EQ(x.max_hops, 9);
  const std::vector<std::string> notes =
      placement_notes(t, p, {"x", "y"}, "row_major", {16, 16, 16});
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("mesh axis 'x' (32 devices)"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("runs at 1/4 of the link rate"), std::string::npos) << notes[0];
  // The suggestion: dims in order (16, 8, 16), column-major (core = x + 32 y
  // over chips (a, b, c)): x = 16 (b mod 2) + c runs along the wrapped
  // 16-ring of dim 2 with two 2-hop crossings between b and b+1; y = 4 a +
  // b/2 moves 2 chips along the wrapped 8-ring of dim 1 (3 hops when a
  // steps): every shift is at most 3 hops and no link carries more than 2.
  // Row-major on the same dims also loads no link more than twice, but x
  // then jumps 4 chips along dim 1 (5 hops): the note prefers the shorter.
  EXPECT_NE(
      notes[0].find(
          "--set 'mesh.physical=[16,8,16,1]' --set mesh.order=column_major loads no link more "
          "than twice"),
      std::string::npos)
      << notes[0];
  const Topology better(Slice{{16, 8, 16}, {true, true, true}, 1}, kParams);
  const Placement q =
      place_mesh(better.slice(), PlacementQuery{{32, 64}, PlacementOrder::kColumnMajor, {}});
  EXPECT_LE(axis_ring_load(better, q, 0).max_link_load, 2);
  EXPECT_LE(axis_ring_load(better, q, 1).max_link_load, 2);
  EXPECT_EQ(axis_ring_load(better, q, 0).max_hops, 2);
  EXPECT_EQ(axis_ring_load(better, q, 1).max_hops, 3);
  const Placement r =
      place_mesh(better.slice(), PlacementQuery{{32, 64}, PlacementOrder::kRowMajor, {}});
  EXPECT_EQ(axis_ring_load(better, r, 0).max_hops, 5);
}

}  // namespace
}  // namespace podsim::hw
