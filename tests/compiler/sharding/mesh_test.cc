// mesh_split and mesh_axes_of on the GSPMD 2-D Transformer shardings
// (docs/reference/measurements.md#dense-transformer-2-d-sharding).
#include "compiler/sharding/mesh.h"

#include <gtest/gtest.h>

namespace podsim::compiler {
namespace {

using Axes = std::vector<std::optional<std::string>>;
const std::optional<std::string> kX = "x", kY = "y", kNone = std::nullopt;

Sharding parse(std::string_view text) { return parse_sharding(text); }

struct Case {
  const char* tensor;
  Axes mapping;
  const char* small;  // on mesh [x=2, y=4]
  const char* large;  // on mesh [x=16, y=32]
};

// measurements.md "Dense Transformer 2-D sharding". Derivations: the device array
// is iota over [x,y]; transposing it to (axes in dim order, unused axes) and
// reshaping gives the tile array. [x..y] order keeps plain iota; y before x
// is the transpose T(1,0) of [x,y].
const Case kCases[] = {
    {"activations (B,L,M)",
     {kX, kNone, kY},
     "{devices=[2,1,4]<=[8]}",
     "{devices=[16,1,32]<=[512]}"},
    {"ffn wi (M,H)", {kX, kY}, "{devices=[2,4]<=[8]}", "{devices=[16,32]<=[512]}"},
    {"ffn wo (H,M)", {kY, kX}, "{devices=[4,2]<=[2,4]T(1,0)}", "{devices=[32,16]<=[16,32]T(1,0)}"},
    {"attn Wq (M,N,D)", {kX, kY, kNone}, "{devices=[2,4,1]<=[8]}", "{devices=[16,32,1]<=[512]}"},
    {"attn Wo (N,D,M)",
     {kY, kNone, kX},
     "{devices=[4,1,2]<=[2,4]T(1,0)}",
     "{devices=[32,1,16]<=[16,32]T(1,0)}"},
    {"Q/K/V (B,L,N,D)",
     {kX, kNone, kY, kNone},
     "{devices=[2,1,4,1]<=[8]}",
     "{devices=[16,1,32,1]<=[512]}"},
    // Embedding (V,M) = [-, y]: x unused -> replication groups of size |x|,
    // device (x=i, y=j) = |y|*i + j sits in tile j: groups {j, |y|+j}.
    {"embedding (V,M)",
     {kNone, kY},
     "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
     "{devices=[1,32,16]<=[16,32]T(1,0) last_tile_dim_replicate}"},
    {"logits (B,L,V)", {kX, kNone, kY}, "{devices=[2,1,4]<=[8]}", "{devices=[16,1,32]<=[512]}"},
};

TEST(MeshSplit, TransformerShardingsOnSmallAndPodMeshes) {
  const DeviceMesh small({{"x", 2}, {"y", 4}});
  const DeviceMesh large({{"x", 16}, {"y", 32}});
  for (const Case& c : kCases) {
    const auto rank = static_cast<int64_t>(c.mapping.size());
    EXPECT_EQ(mesh_split(rank, small, c.mapping).to_string(), c.small) << c.tensor;
    EXPECT_EQ(mesh_split(rank, large, c.mapping).to_string(), c.large) << c.tensor;
  }
}

TEST(MeshSplit, InverseRecoversTheMapping) {
  const DeviceMesh small({{"x", 2}, {"y", 4}});
  const DeviceMesh large({{"x", 16}, {"y", 32}});
  for (const Case& c : kCases) {
    DimsMapping expected;
    for (const auto& axis : c.mapping) {
      expected.push_back(axis ? std::vector<std::string>{*axis} : std::vector<std::string>{});
    }
    EXPECT_EQ(mesh_axes_of(parse(c.small), small), expected) << c.tensor;
    EXPECT_EQ(mesh_axes_of(parse(c.large), large), expected) << c.tensor;
  }
}

TEST(MeshSplit, PartialReplicationOnUnusedAxes) {
  const DeviceMesh mesh({{"x", 2}, {"y", 4}});
  // Only x used: groups are the 4 devices of one x row.
  EXPECT_EQ(mesh_split(3, mesh, Axes{kX, kNone, kNone}),
            parse("{devices=[2,1,1,4]<=[8] last_tile_dim_replicate}"));
  // Nothing used: replicated.
  EXPECT_EQ(mesh_split(2, mesh, Axes{kNone, kNone}), Sharding::replicated());
  EXPECT_EQ(mesh_axes_of(Sharding::replicated(), mesh, 2), DimsMapping(2));
}

TEST(MeshSplit, SeveralAxesOnOneDim) {
  const DeviceMesh mesh({{"x", 2}, {"y", 4}});
  EXPECT_EQ(mesh_split(2, mesh, DimsMapping{{"x", "y"}, {}}), parse("{devices=[8,1]<=[8]}"));
  // y major, x minor: tile k = 2*j + i holds device 4i + j.
  auto yx = mesh_split(2, mesh, DimsMapping{{"y", "x"}, {}});
  EXPECT_EQ(yx, parse("{devices=[8,1]0,4,1,5,2,6,3,7}"));
  EXPECT_EQ(mesh_axes_of(yx, mesh), (DimsMapping{{"y", "x"}, {}}));
}

TEST(MeshSplit, ThreeAxes) {
  const DeviceMesh mesh({{"x", 2}, {"y", 2}, {"z", 2}});
  // dims (z, x), y unused: array transposed to (z, x, y).
  auto s = mesh_split(2, mesh, Axes{"z", "x"});
  EXPECT_EQ(s, Sharding::partial_tile(
                   TileAssignment::iota({2, 2, 2}).transpose(std::vector<int64_t>{2, 0, 1})));
  EXPECT_EQ(mesh_axes_of(s, mesh), (DimsMapping{{"z"}, {"x"}}));
}

TEST(MeshSplit, ExplicitDeviceList) {
  // Column-major placement of [x=2, y=4]: device at (i, j) is 2j + i.
  const DeviceMesh mesh({{"x", 2}, {"y", 4}}, std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7});
  auto s = mesh_split(3, mesh, Axes{kX, kNone, kY});
  EXPECT_EQ(s, parse("{devices=[2,1,4]0,2,4,6,1,3,5,7}"));
  EXPECT_EQ(s.to_string(), "{devices=[2,1,4]<=[4,2]T(1,0)}");
  EXPECT_EQ(mesh_axes_of(s, mesh), (DimsMapping{{"x"}, {}, {"y"}}));
  // On the row-major mesh the only candidate (x on dim 0, y on dim 2) gives
  // plain iota, so this sharding is no mesh split there.
  EXPECT_FALSE(mesh_axes_of(s, DeviceMesh({{"x", 2}, {"y", 4}})).has_value());
}

TEST(MeshSplit, NonMeshShardingsHaveNoAxes) {
  const DeviceMesh mesh({{"x", 2}, {"y", 4}});
  EXPECT_FALSE(mesh_axes_of(parse("{devices=[2,4]0,1,2,3,4,5,7,6}"), mesh).has_value());
  EXPECT_FALSE(mesh_axes_of(Sharding::manual(), mesh).has_value());
  EXPECT_FALSE(mesh_axes_of(Sharding::maximal(0), mesh).has_value());
  EXPECT_FALSE(mesh_axes_of(parse("{devices=[2,2]<=[4]}"), mesh).has_value());  // 4 devices
}

TEST(MeshSplit, UserErrors) {
  const DeviceMesh mesh({{"x", 2}, {"y", 4}});
  auto message = [&](auto&& call) -> std::string {
    try {
      call();
    } catch (const UserError& e) {
      EXPECT_FALSE(e.hint().empty());
      return e.message();
    }
    return "";
  };
  EXPECT_NE(message([&] {
              mesh_split(2, mesh, Axes{"z", kNone});
            }).find("unknown mesh axis 'z'"),
            std::string::npos);
  EXPECT_NE(message([&] {
              mesh_split(2, mesh, Axes{kX, kX});
            }).find("more than one dim"),
            std::string::npos);
  EXPECT_NE(message([&] { mesh_split(3, mesh, Axes{kX, kY}); }).find("rank 3"), std::string::npos);
  EXPECT_NE(message([&] { DeviceMesh({{"x", 2}, {"x", 2}}); }).find("twice"), std::string::npos);
  EXPECT_NE(message([&] { DeviceMesh({{"x", 0}}); }).find("size 0"), std::string::npos);
  EXPECT_NE(message([&] {
              DeviceMesh({{"x", 2}}, std::vector<int64_t>{0, 0});
            }).find("repeated"),
            std::string::npos);
}

}  // namespace
}  // namespace podsim::compiler
