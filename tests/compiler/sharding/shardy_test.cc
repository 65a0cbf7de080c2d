// Shardy sharding text -> Sharding. Expected shardings derived by hand: on a
// mesh ["x"=a, "y"=b] device d = b*x + y (iota, x major); a tensor dim's tile
// index is its axes' coordinates (major first), the other axes replicate.
#include "compiler/sharding/shardy.h"

#include <gtest/gtest.h>

namespace podsim::compiler {
namespace {

const SdyMeshes kMeshes = parse_sdy_meshes(
    R"({mesh = #sdy.mesh<["x"=2, "y"=4]>, line = #sdy.mesh<["x"=8]>, swapped = #sdy.mesh<["x"=2], device_ids=[1,0]>, maximal_mesh = #sdy.mesh<[], device_ids=[3]>})");

Sharding sdy(const std::string& text) { return parse_sdy_sharding(text, kMeshes).sharding; }
Sharding hlo(const std::string& text) { return parse_sharding(text); }

TEST(Shardy, MeshesParseWithSizesAndDeviceIds) {
  ASSERT_EQ(kMeshes.size(), 4u);
  EXPECT_EQ(kMeshes.at("mesh").axes,
            (std::vector<std::pair<std::string, int64_t>>{{"x", 2}, {"y", 4}}));
  EXPECT_EQ(kMeshes.at("swapped").device_ids, (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(kMeshes.at("maximal_mesh").axes.empty());
}

TEST(Shardy, MajorAxisOnDimZeroReplicatesTheOther) {
  // dim 0 tile = x: tile 0 on devices 0..3 (x = 0), tile 1 on 4..7.
  EXPECT_EQ(sdy(R"(#sdy.sharding<@mesh, [{"x"}, {}]>)"),
            hlo("{devices=[2,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}"));
}

TEST(Shardy, MinorAxisFirstTransposesTheMesh) {
  // tile (i, j) = (y, x) -> device 4j + i: row-major 0,4, 1,5, 2,6, 3,7.
  EXPECT_EQ(sdy(R"(#sdy.sharding<@mesh, [{"y"}, {"x"}]>)"), hlo("{devices=[4,2]0,4,1,5,2,6,3,7}"));
}

TEST(Shardy, TwoAxesOnOneDimMultiply) {
  // dim 1 tile = 4x + y = the device itself.
  EXPECT_EQ(sdy(R"(#sdy.sharding<@mesh, [{}, {"x", "y"}]>)"), hlo("{devices=[1,8]<=[8]}"));
  // y major: tile = 2y + x -> devices 0,4,1,5,2,6,3,7.
  EXPECT_EQ(sdy(R"(#sdy.sharding<@mesh, [{"y", "x"}]>)"), hlo("{devices=[8]0,4,1,5,2,6,3,7}"));
}

TEST(Shardy, SubAxesSplitAnAxisMajorFirst) {
  // x = 8 = (a: 2, major) x (b: 4): device 4a + b. "x":(1)2 is a, "x":(2)4 is b.
  EXPECT_EQ(sdy(R"(#sdy.sharding<@line, [{"x":(1)2}, {"x":(2)4}]>)"), hlo("{devices=[2,4]<=[8]}"));
  // Only b on dim 0: tile b holds devices {b, 4 + b}.
  EXPECT_EQ(sdy(R"(#sdy.sharding<@line, [{"x":(2)4}, {}]>)"),
            hlo("{devices=[4,1,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}"));
}

TEST(Shardy, DeviceIdsRelabelTheMesh) {
  EXPECT_EQ(sdy(R"(#sdy.sharding<@swapped, [{"x"}]>)"), hlo("{devices=[2]1,0}"));
}

TEST(Shardy, EmptyMeshWithOneDeviceIsMaximal) {
  EXPECT_EQ(sdy(R"(#sdy.sharding<@maximal_mesh, []>)"), Sharding::maximal(3));
}

TEST(Shardy, ClosedUnshardedDimsAreReplicated) {
  EXPECT_EQ(sdy(R"(#sdy.sharding<@mesh, [{}, {}], replicated={"x"}>)"), Sharding::replicated());
}

TEST(Shardy, InlineMeshNeedsNoModuleMesh) {
  EXPECT_EQ(parse_sdy_sharding(R"(#sdy.sharding<mesh<["z"=4]>, [{"z"}p1, {}]>)", {}).sharding,
            hlo("{devices=[4,1]<=[4]}"));
}

TEST(Shardy, PerValueShardingIsATuple) {
  SdySharding s = parse_sdy_sharding(
      R"(#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>, <@mesh, [{}, {"x", "y"}]>]>)", kMeshes);
  ASSERT_TRUE(s.sharding.is_tuple());
  EXPECT_EQ(s.sharding.tuple_elements()[1], hlo("{devices=[1,8]<=[8]}"));
}

TEST(Shardy, OpenDimsAreRecordedAndAllOpenIsNoAnnotation) {
  SdySharding partly = parse_sdy_sharding(R"(#sdy.sharding<@mesh, [{"x", ?}, {?}]>)", kMeshes);
  EXPECT_EQ(partly.open_dims, (std::vector<std::vector<int64_t>>{{0, 1}}));
  EXPECT_FALSE(partly.fully_open);
  EXPECT_TRUE(parse_sdy_sharding(R"(#sdy.sharding<@mesh, [{?}, {?}]>)", kMeshes).fully_open);
}

TEST(Shardy, BadShardingsAreUserErrors) {
  EXPECT_THROW(sdy(R"(#sdy.sharding<@nowhere, [{"x"}]>)"), UserError);
  EXPECT_THROW(sdy(R"(#sdy.sharding<@mesh, [{"q"}]>)"), UserError);
  EXPECT_THROW(sdy(R"(#sdy.sharding<@mesh, [{"x"}, {"x"}]>)"), UserError);
  EXPECT_THROW(sdy(R"(#sdy.sharding<@mesh, [{"x"})"), UserError);
}

TEST(Shardy, FrontendAttributesGiveTheSharding) {
  // As XLA prints them: the value quoted, its quotes escaped.
  const std::string fa =
      R"({xla.sdy.sharding="#sdy.sharding<@mesh, [{\"y\"}, {\"x\"}]>", other="1"})";
  EXPECT_EQ(frontend_attribute(fa, "other"), "1");
  auto s = sharding_from_frontend_attributes(fa, kMeshes);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->sharding, hlo("{devices=[4,2]0,4,1,5,2,6,3,7}"));
  auto m = sharding_from_frontend_attributes(R"({mhlo.sharding="{devices=[2,1]0,1}"})", kMeshes);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->sharding, hlo("{devices=[2,1]0,1}"));
  EXPECT_FALSE(sharding_from_frontend_attributes(R"({other="1"})", kMeshes).has_value());
}

TEST(Shardy, FrontendAttributeValuesInEveryPrintedForm) {
  // Unquoted brace dictionary (kept whole, commas and quotes inside), a
  // quoted C-escaped value (\", \\, \t, \042 octal = '"'), and a key after each.
  const std::string fa = R"({xla.sdy.meshes={mesh = #sdy.mesh<["data"=1, "expert"=4]>}, )"
                         R"(d={"a": [1, 2], "b": {"c": "x,}"}}, q="a\"b\\c\td\042", last=1})";
  EXPECT_EQ(frontend_attribute(fa, "xla.sdy.meshes"),
            R"({mesh = #sdy.mesh<["data"=1, "expert"=4]>})");
  EXPECT_EQ(frontend_attribute(fa, "d"), R"({"a": [1, 2], "b": {"c": "x,}"}})");
  EXPECT_EQ(frontend_attribute(fa, "q"), "a\"b\\c\td\"");
  EXPECT_EQ(frontend_attribute(fa, "last"), "1");
  EXPECT_FALSE(frontend_attribute(fa, "mesh").has_value());
  SdyMeshes meshes = parse_sdy_meshes(*frontend_attribute(fa, "xla.sdy.meshes"));
  auto s = parse_sdy_sharding(R"(#sdy.sharding<@mesh, [{"expert"}, {}]>)", meshes);
  EXPECT_EQ(s.sharding, hlo("{devices=[4,1]0,1,2,3}"));
}

}  // namespace
}  // namespace podsim::compiler
