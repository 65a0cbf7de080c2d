// ICI topology: link counts, dimension-order routing with and without
// wraparound, BFS cross-check on the Boost graph, slices and bisection.
#include <gtest/gtest.h>

#include <boost/graph/breadth_first_search.hpp>

#include "common/error.h"
#include "hw_models/config.h"
#include "hw_models/ici/topology.h"

namespace podsim::hw {
namespace {

const LinkParams kParams{1e11, 1e-6, 4.5e11, 0.5e-6};

Topology torus(std::vector<int64_t> dims, int64_t per_chip = 1) {
  return Topology(Slice{dims, std::vector<bool>(dims.size(), true), per_chip}, kParams);
}
Topology mesh(std::vector<int64_t> dims, int64_t per_chip = 1) {
  return Topology(Slice{dims, std::vector<bool>(dims.size(), false), per_chip}, kParams);
}

// (dim, direction) of each link of a route.
std::vector<std::pair<int, int>> steps(const Topology& t, const std::vector<LinkId>& path) {
  std::vector<std::pair<int, int>> out;
  for (LinkId id : path) out.emplace_back(t.link(id).dim, t.link(id).direction);
  return out;
}

TEST(Topology, LinkCounts) {
  // 4x4 torus: 16 chips x 2 dims x 2 directions = 64 directed links.
  EXPECT_EQ(torus({4, 4}).num_links(), 64);
  // 4x4 mesh: per dim 4 lines x 3 links x 2 directions = 24 -> 48; plus 2 on-chip
  // links (one per ordered device pair) on each of 16 chips = 32.
  EXPECT_EQ(mesh({4, 4}, 2).num_links(), 48 + 32);
  // Size-2 dims never double their link: 2x2 "torus" = 2 dims x 2 lines x 1 x 2 = 8.
  EXPECT_EQ(torus({2, 2}).num_links(), 8);
}

TEST(Topology, RouteUsesWraparoundTheShortWay) {
  const Topology t = torus({8, 8});
  // (0,0) -> (7,0): one hop in -x through the wraparound link.
  EXPECT_EQ(steps(t, t.route_chips(t.chip_at({0, 0}), t.chip_at({7, 0}))),
            (std::vector<std::pair<int, int>>{{0, -1}}));
  // (0,0) -> (3,5): x first, +3; then y: forward 5 vs backward 3 -> -y 3 hops.
  const auto path = steps(t, t.route_chips(t.chip_at({0, 0}), t.chip_at({3, 5})));
  EXPECT_EQ(path,
            (std::vector<std::pair<int, int>>{{0, 1}, {0, 1}, {0, 1}, {1, -1}, {1, -1}, {1, -1}}));
  // The route ends where it should.
  const auto links = t.route_chips(t.chip_at({0, 0}), t.chip_at({3, 5}));
  EXPECT_EQ(t.link(links.back()).dst_chip, t.chip_at({3, 5}));
}

TEST(Topology, RouteWithoutWraparoundGoesStraight) {
  const Topology t = mesh({8, 8});
  // (0,0) -> (7,0): 7 hops in +x.
  EXPECT_EQ(t.route_chips(t.chip_at({0, 0}), t.chip_at({7, 0})).size(), 7u);
  // (6,7) -> (1,0): 5 hops -x, then 7 hops -y.
  const auto path = steps(t, t.route_chips(t.chip_at({6, 7}), t.chip_at({1, 0})));
  ASSERT_EQ(path.size(), 12u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(path[i], (std::pair<int, int>{0, -1}));
  for (size_t i = 5; i < 12; ++i) EXPECT_EQ(path[i], (std::pair<int, int>{1, -1}));
}

TEST(Topology, HalfRingTiesSplitByParity) {
  const Topology t = torus({8});
  // Distance 4 on an 8-ring either way: even sources go +, odd sources go -.
  EXPECT_EQ(steps(t, t.route_chips(0, 4)), (std::vector<std::pair<int, int>>(4, {0, 1})));
  EXPECT_EQ(steps(t, t.route_chips(1, 5)), (std::vector<std::pair<int, int>>(4, {0, -1})));
}

TEST(Topology, RouteLengthsEqualBfsDistances) {
  for (const Topology& t : {torus({4, 6, 3}), mesh({5, 4}), torus({8, 8})}) {
    std::vector<int> distance(static_cast<size_t>(t.num_chips()), 0);
    boost::breadth_first_search(t.graph(), boost::vertex(0, t.graph()),
                                boost::visitor(boost::make_bfs_visitor(boost::record_distances(
                                    distance.data(), boost::on_tree_edge()))));
    for (ChipId c = 0; c < t.num_chips(); ++c)
      EXPECT_EQ(t.hops(0, c), distance[static_cast<size_t>(c)]) << c;
  }
}

TEST(Topology, DeviceRoutes) {
  const Topology t = mesh({2, 2}, 2);
  EXPECT_TRUE(t.route(3, 3).empty());
  const auto on_chip = t.route(2, 3);  // devices 0 and 1 of chip 1
  ASSERT_EQ(on_chip.size(), 1u);
  EXPECT_EQ(t.link(on_chip[0]).kind, LinkKind::kOnChip);
  EXPECT_EQ(t.link(on_chip[0]).bandwidth, 4.5e11);
  // Device 1 (chip 0) -> device 6 (chip 3 = (1,1)): 2 ICI hops.
  EXPECT_EQ(t.route(1, 6).size(), 2u);
}

TEST(Slices, DefaultSliceIsSmallestSquarest) {
  const HardwareConfig v3 = load_hardware("tpuv3");
  const Slice s8 = default_slice(v3, 8);  // docs/design.md: 8 v3 cores -> 2x2 chips x 2 cores
  EXPECT_EQ(s8.physical_shape(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(s8.wraparound, (std::vector<bool>{false, false}));
  EXPECT_EQ(default_slice(v3, 64).chip_dims, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(default_slice(v3, 512).chip_dims, (std::vector<int64_t>{16, 16}));
  const Slice pod = default_slice(v3, 2048);
  EXPECT_EQ(pod.chip_dims, (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(pod.wraparound, (std::vector<bool>{true, true}));
  EXPECT_EQ(default_slice(v3, 1).physical_shape(), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_THROW(default_slice(v3, 3), UserError);
  try {  // 3 devices on 2-device chips: the hint names the override that runs it
    default_slice(v3, 3);
  } catch (const UserError& e) {
    EXPECT_NE(e.hint().find("--set hardware.chip.devices_per_chip=1"), std::string::npos)
        << e.hint();
  }
  EXPECT_THROW(default_slice(v3, 4096), UserError);
  EXPECT_THROW(default_slice(v3, 2 * 37), UserError);  // 37 chips: prime > 32
  EXPECT_EQ(default_slice(load_hardware("tpuv4"), 64).chip_dims, (std::vector<int64_t>{4, 4, 4}));
}

TEST(Slices, ExplicitPhysicalShapeIsChecked) {
  const HardwareConfig v3 = load_hardware("tpuv3");
  EXPECT_EQ(slice_from_physical(v3, {16, 16, 2}).wraparound, (std::vector<bool>{false, false}));
  EXPECT_EQ(slice_from_physical(v3, {32, 32, 2}).wraparound, (std::vector<bool>{true, true}));
  EXPECT_THROW(slice_from_physical(v3, {64, 16, 2}), UserError);
  EXPECT_THROW(slice_from_physical(v3, {16, 16, 4}), UserError);
  EXPECT_THROW(slice_from_physical(v3, {16, 16}), UserError);
}

TEST(Slices, V4SlicesOfWholeCubesAreTori) {
  // docs/reference/hardware.md#torus-slices: a v4 dim of whole 4x4x4 cubes
  // wraps through the optical switches; a dim under 4 chips stays a mesh.
  const HardwareConfig v4 = load_hardware("tpuv4");
  EXPECT_EQ(slice_from_physical(v4, {16, 16, 8, 1}).wraparound,
            (std::vector<bool>{true, true, true}));
  EXPECT_EQ(slice_from_physical(v4, {4, 4, 4, 1}).wraparound,
            (std::vector<bool>{true, true, true}));
  EXPECT_EQ(slice_from_physical(v4, {2, 4, 4, 1}).wraparound,
            (std::vector<bool>{false, true, true}));
  EXPECT_EQ(default_slice(v4, 2048).wraparound, (std::vector<bool>{true, true, true}));  // 8x16x16
  EXPECT_EQ(default_slice(v4, 8).wraparound, (std::vector<bool>{false, false, false}));  // 2x2x2
  // A 16-chip ring of a 16x16x8 slice: the wraparound link makes (15,0,0) ->
  // (0,0,0) one hop, 15 on the mesh it was before ici.torus_block.
  const Topology t(slice_from_physical(v4, {16, 16, 8, 1}), kParams);
  EXPECT_EQ(t.hops(t.chip_at({15, 0, 0}), t.chip_at({0, 0, 0})), 1);
  // torus_block 0 (TPU v3's rule): only the full pod wraps.
  const HardwareConfig v4_no_ocs = load_hardware("tpuv4", {{"ici.torus_block", "0"}});
  EXPECT_EQ(slice_from_physical(v4_no_ocs, {16, 16, 8, 1}).wraparound,
            (std::vector<bool>{false, false, false}));
  EXPECT_EQ(slice_from_physical(v4_no_ocs, {16, 16, 16, 1}).wraparound,
            (std::vector<bool>{true, true, true}));
}

// The message or hint of the UserError `f` throws; fails the test when it throws none.
template <class F>
UserError slice_error(F f) {
  try {
    f();
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a UserError";
  return UserError("none");
}

TEST(Slices, CubeMachinesTakeWholeCubesOrPartOfOne) {
  // docs/reference/hardware.md#slice-shapes: with 4x4x4 cubes (ici.torus_block
  // 4) a slice lies inside one cube (every dim <= 4) or is whole cubes
  // (every dim a multiple of 4). Cloud TPU v4/v5p shape tables: 2x2x1, 2x2x4,
  // 2x4x4, 4x4x4, 4x4x8, ..., 16x16x24.
  for (const char* name : {"tpuv4", "tpuv5p", "tpu7x"}) {
    SCOPED_TRACE(name);
    const HardwareConfig hw = load_hardware(name);
    const int64_t per_chip = hw.chip.devices_per_chip;
    for (const std::vector<int64_t>& good : std::vector<std::vector<int64_t>>{
             {2, 2, 1}, {1, 1, 1}, {3, 4, 2}, {4, 4, 4}, {4, 4, 8}, {8, 16, 16}}) {
      EXPECT_TRUE(slice_shape_allowed(hw, good));
      std::vector<int64_t> physical = good;
      physical.push_back(per_chip);
      EXPECT_EQ(slice_from_physical(hw, physical).chip_dims, good);
    }
    // 4x6x8: 6 is one and a half cubes; 2x2x8: 8 spans two cubes, 2 only half of one.
    for (const std::vector<int64_t>& bad :
         std::vector<std::vector<int64_t>>{{4, 6, 8}, {2, 2, 8}, {5, 4, 4}, {4, 4, 13}}) {
      EXPECT_FALSE(slice_shape_allowed(hw, bad));
      std::vector<int64_t> physical = bad;
      physical.push_back(per_chip);
      const UserError e = slice_error([&] { slice_from_physical(hw, physical); });
      EXPECT_NE(e.message().find("is not a " + std::string(name) + " slice"), std::string::npos)
          << e.message();
      EXPECT_NE(e.hint().find("every chip dim a multiple of 4 (e.g. 4x4x8)"), std::string::npos)
          << e.hint();
    }
  }
  // The full pods are whole cubes: v5p's largest slice 16x16x24 (96 cubes),
  // TPU7x's 9216 chips as 16x24x24 (144 cubes).
  EXPECT_TRUE(slice_shape_allowed(load_hardware("tpuv5p"), {16, 16, 24}));
  EXPECT_TRUE(slice_shape_allowed(load_hardware("tpu7x"), {16, 24, 24}));
  // TPU v3 (torus_block 0) has no cubes: any box in its pod is a slice.
  EXPECT_TRUE(slice_shape_allowed(load_hardware("tpuv3"), {3, 5}));
  // The rule follows the preset, not its name: a v4 without cubes takes 4x6x8.
  EXPECT_TRUE(slice_shape_allowed(load_hardware("tpuv4", {{"ici.torus_block", "0"}}), {4, 6, 8}));
}

TEST(Slices, DefaultSliceOnCubesIsWholeCubes) {
  const HardwareConfig v4 = load_hardware("tpuv4");
  // 192 chips = 3 cubes: the squarest box, 4x6x8, is not a slice; 4x4x12 is.
  EXPECT_EQ(default_slice(v4, 192).chip_dims, (std::vector<int64_t>{4, 4, 12}));
  // 96 chips = 1.5 cubes, more than one cube holds: no slice; the hint gives the rule.
  const UserError e = slice_error([&] { default_slice(v4, 96); });
  EXPECT_NE(e.hint().find("every chip dim at most 4"), std::string::npos) << e.hint();
  // Powers of two keep their squarest shapes: 128 = 4x4x8; 1024: 4x16x16 and
  // 8x8x16 tie on the largest dim, the lexicographically smaller wins.
  EXPECT_EQ(default_slice(load_hardware("tpuv5p"), 128).chip_dims, (std::vector<int64_t>{4, 4, 8}));
  EXPECT_EQ(default_slice(load_hardware("tpuv5p"), 1024).chip_dims,
            (std::vector<int64_t>{4, 16, 16}));
  // TPU7x: 2 devices per chip, 128 devices = 64 chips = one 4x4x4 cube.
  EXPECT_EQ(default_slice(load_hardware("tpu7x"), 128).physical_shape(),
            (std::vector<int64_t>{4, 4, 4, 2}));
}

TEST(Slices, TwoDimensionalPodsTakeAnyBoxUpToSixteenBySixteen) {
  // docs/reference/hardware.md#slice-shapes: v5e and v6e slices are 2-D, at
  // most the 16x16 pod; a dim wraps only when it spans all 16 chips
  // (ici.torus_block 16, the scaling book's v5e rule).
  for (const char* name : {"tpuv5e", "tpuv6e"}) {
    SCOPED_TRACE(name);
    const HardwareConfig hw = load_hardware(name);
    EXPECT_EQ(slice_from_physical(hw, {16, 16, 1}).wraparound, (std::vector<bool>{true, true}));
    EXPECT_EQ(slice_from_physical(hw, {16, 8, 1}).wraparound, (std::vector<bool>{true, false}));
    EXPECT_EQ(slice_from_physical(hw, {4, 8, 1}).wraparound, (std::vector<bool>{false, false}));
    EXPECT_EQ(slice_from_physical(hw, {2, 3, 1}).chip_dims, (std::vector<int64_t>{2, 3}));
    const UserError big = slice_error([&] { slice_from_physical(hw, {32, 16, 1}); });
    EXPECT_NE(big.hint().find("at most 16x16"), std::string::npos) << big.hint();
    const UserError three_d = slice_error([&] { slice_from_physical(hw, {2, 2, 2, 1}); });
    EXPECT_NE(three_d.message().find("must have 3 entries: 2 chip dims and devices per chip"),
              std::string::npos)
        << three_d.message();
    // One device per chip: a second device on a chip is not there.
    EXPECT_THROW(slice_from_physical(hw, {2, 2, 2}), UserError);
  }
}

TEST(Topology, BisectionCountsCrossingLinks) {
  // 32x32 torus: halving x cuts 32 rows x (1 inner + 1 wraparound) = 64 links one way.
  EXPECT_DOUBLE_EQ(bisection_bandwidth(torus({32, 32})), 64 * 1e11);
  // 4x8 mesh: halving dim 0 cuts its 8 lines (one link each), halving dim 1
  // cuts its 4 lines -> weakest cut 4 x 1e11.
  EXPECT_DOUBLE_EQ(bisection_bandwidth(mesh({4, 8})), 4 * 1e11);
  EXPECT_DOUBLE_EQ(aggregate_ici_bandwidth(torus({32, 32})), 4096 * 1e11);
}

// Slices joined by the data-centre network: slice s's links are slice 0's shifted by s x
// links_per_slice (same kind, dim and direction), every chip has one DCN link out and one in,
// and a route between slices is exactly those two links (out of the sender's chip, into the
// receiver's); inside a slice routes stay on that slice's ICI links.
TEST(Topology, SlicesShareNothingButTheDataCentreNetwork) {
  LinkParams params = kParams;
  params.dcn_bandwidth = 6.25e9;
  params.dcn_latency_s = 1e-5;
  const Slice slice{{4, 2}, {true, false}, 2};  // 8 chips x 2 devices
  const Topology one(slice, params);
  const Topology three(slice, params, 3);
  EXPECT_EQ(three.num_slices(), 3);
  EXPECT_EQ(three.num_devices(), 16);  // one slice's
  EXPECT_EQ(three.total_devices(), 48);
  EXPECT_EQ(three.links_per_slice(), one.num_links());
  EXPECT_EQ(three.num_links(), 3 * one.num_links() + 2 * 3 * 8);
  EXPECT_EQ(one.dcn_out(0), -1);
  for (LinkId id = 0; id < one.num_links(); ++id)
    for (int64_t s = 1; s < 3; ++s) {
      const Link& a = one.link(id);
      const Link& b = three.link(static_cast<LinkId>(id + s * three.links_per_slice()));
      EXPECT_EQ(b.kind, a.kind);
      EXPECT_EQ(b.dim, a.dim);
      EXPECT_EQ(b.direction, a.direction);
      EXPECT_EQ(b.src_chip, a.src_chip + 8 * s);
      EXPECT_EQ(b.dst_chip, a.dst_chip + 8 * s);
    }
  // Device 3 (chip 1 of slice 0) to device 16 + 2 * 5 + 1 (chip 5 of slice 1).
  const std::vector<LinkId> across = three.route(3, 27);
  ASSERT_EQ(across.size(), 2u);
  EXPECT_EQ(across[0], three.dcn_out(1));
  EXPECT_EQ(across[1], three.dcn_in(8 + 5));
  EXPECT_EQ(three.link(across[0]).kind, LinkKind::kDcn);
  EXPECT_DOUBLE_EQ(three.link(across[0]).bandwidth, 6.25e9);
  EXPECT_DOUBLE_EQ(three.link(across[0]).latency_s, 1e-5);  // charged once, on the way out
  EXPECT_DOUBLE_EQ(three.link(across[1]).latency_s, 0.0);
  // Inside slice 2: the route of slice 0 shifted.
  const std::vector<LinkId> inside0 = one.route(0, 15), inside2 = three.route(32, 47);
  ASSERT_EQ(inside2.size(), inside0.size());
  for (size_t i = 0; i < inside0.size(); ++i)
    EXPECT_EQ(inside2[i], inside0[i] + 2 * three.links_per_slice());
}

}  // namespace
}  // namespace podsim::hw
