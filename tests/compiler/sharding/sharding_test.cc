// Sharding: text forms, canonicalisation (docs/reference/gspmd.md#normalisation), validation,
// derived quantities and per-device extents (gspmd.md#tile-extents-and-padding,
// #sharding-representation).
#include "compiler/sharding/sharding.h"

#include <gtest/gtest.h>

namespace podsim::compiler {
namespace {

using Ids = std::vector<int64_t>;

Sharding parse(std::string_view text) { return parse_sharding(text); }

// Every text form of the brief: printing the parsed value gives the text back.
TEST(ShardingText, RoundTripsXlaForms) {
  for (const char* text : {
           "{replicated}",
           "{maximal device=3}",
           "{manual}",
           "{unknown}",
           "{devices=[4,2]<=[8]}",
           "{devices=[2,4]<=[4,2]T(1,0)}",
           "{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}",
           "{{replicated}, {devices=[2]<=[2]}}",
           "{devices=[2,2]0,2,3,1}",
           "{replicated shard_as 1}",
           "{devices=[4,2]<=[8] shard_like 2}",
           "{devices=[2,1,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}",
       }) {
    EXPECT_EQ(parse(text).to_string(), text) << text;
  }
}

TEST(ShardingText, ExplicitIotaListsPrintInIotaForm) {
  EXPECT_EQ(parse("{devices=[2,1,4]0,1,2,3,4,5,6,7}").to_string(), "{devices=[2,1,4]<=[8]}");
  EXPECT_EQ(parse("{devices=[2,1,4]0,1,2,3,4,5,6,7}"), parse("{devices=[2,1,4]<=[8]}"));
  EXPECT_EQ(parse("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}").to_string(),
            "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_EQ(parse("{{replicated}, {devices=[2]0,1}}").to_string(),
            "{{replicated}, {devices=[2]<=[2]}}");
}

TEST(ShardingText, MetadataIsKeptButIgnoredByEquality) {
  auto s = parse("{devices=[2]0,1 metadata={op_name=\"a\" source_line=3}}");
  EXPECT_EQ(s.metadata().size(), 1u);
  EXPECT_EQ(s, parse("{devices=[2]0,1}"));
  EXPECT_EQ(s.to_string(), "{devices=[2]<=[2]}");
}

TEST(ShardingText, IndexCommentsInLongTuplesAreSkipped) {
  // XLA prints /*index=5*/ before every fifth element of a long tuple.
  auto s = parse(
      "{{replicated}, {replicated}, {replicated}, {replicated}, {replicated}, "
      "/*index=5*/{devices=[2]0,1}}");
  ASSERT_TRUE(s.is_tuple());
  ASSERT_EQ(s.tuple_elements().size(), 6u);
  EXPECT_EQ(s.tuple_elements()[5], parse("{devices=[2]0,1}"));
}

TEST(ShardingText, ShardGroupTakesPartInEquality) {
  EXPECT_NE(parse("{replicated shard_as 1}"), parse("{replicated}"));
  EXPECT_NE(parse("{replicated shard_as 1}"), parse("{replicated shard_like 1}"));
  EXPECT_EQ(parse("{replicated shard_as 1}").group()->id, 1);
}

TEST(ShardingText, ErrorsPointInsideTheText) {
  auto column_of = [](std::string_view text, SourceLocation where) {
    try {
      parse_sharding(text, where);
    } catch (const UserError& e) {
      return e.location().column;
    }
    return -1;
  };
  // "{devices=[2,2]0,1,2}": three ids for four cells; the list starts at
  // offset 14 -> column 15 when the text starts at column 1.
  EXPECT_EQ(column_of("{devices=[2,2]0,1,2}", {}), 15);
  // Inside a file at column 10: offset 14 -> column 24.
  EXPECT_EQ(column_of("{devices=[2,2]0,1,2}", {"m.hlo", 3, 10}), 24);
  EXPECT_EQ(column_of("{bogus}", {}), 2);
  EXPECT_EQ(column_of("{devices=[2,2]<=[8]}", {}), 17);        // "[8]" at offset 16
  EXPECT_EQ(column_of("{devices=[4]<=[2,2]T(0,0)}", {}), 22);  // "0,0" at offset 21
  EXPECT_EQ(column_of("{replicated", {}), 12);
  EXPECT_EQ(column_of("{replicated} x", {}), 14);
  EXPECT_EQ(column_of("{devices=[2]0,1 last_tile_dims={bogus}}", {}), 33);
}

TEST(ShardingText, ErrorMessageHasHint) {
  try {
    parse_sharding("{devices=[2,2]0,1,2}");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.hint(), "");
    EXPECT_NE(std::string(e.what()).find("3 device ids"), std::string::npos) << e.what();
  }
}

// Constructor rules (gspmd.md#normalisation).
TEST(ShardingCanonical, PartialTileSortsReplicationGroups) {
  EXPECT_EQ(parse("{devices=[1,2,2]1,0,3,2 last_tile_dim_replicate}"),
            parse("{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}"));
}

TEST(ShardingCanonical, TrivialPartialTilesCollapse) {
  // Last dim holds every device: replicated.
  EXPECT_EQ(parse("{devices=[1,1,4]<=[4] last_tile_dim_replicate}"), Sharding::replicated());
  EXPECT_EQ(parse("{devices=[4]<=[4] last_tile_dim_replicate}"), Sharding::replicated());
  // Last dim 1: plain tiling.
  EXPECT_EQ(parse("{devices=[2,2,1]<=[4] last_tile_dim_replicate}"), parse("{devices=[2,2]<=[4]}"));
  // One tile in total: replicated.
  EXPECT_EQ(parse("{devices=[1,1]0}"), Sharding::replicated());
}

TEST(ShardingCanonical, SubgroupRules) {
  // All data dims 1 and a single type collapse.
  EXPECT_EQ(parse("{devices=[1,4]<=[4] last_tile_dims={manual}}"), Sharding::manual());
  EXPECT_EQ(parse("{devices=[1,2,2]<=[4] last_tile_dims={replicated, replicated}}"),
            Sharding::replicated());
  // A lone replicated subgroup is last_tile_dim_replicate.
  EXPECT_EQ(parse("{devices=[2,2]<=[4] last_tile_dims={replicated}}"),
            parse("{devices=[2,2]<=[4] last_tile_dim_replicate}"));
  // Size-1 subgroup dims are dropped.
  EXPECT_EQ(parse("{devices=[2,1,2]<=[4] last_tile_dims={manual, replicated}}"),
            parse("{devices=[2,2]<=[4] last_tile_dim_replicate}"));
  // Types reordered manual first: [2,R=2,M=2] becomes [2,M,R] by swapping
  // the last two dims, i.e. the array is transposed by (0,2,1).
  EXPECT_EQ(parse("{devices=[2,2,2]<=[8] last_tile_dims={replicated, manual}}"),
            parse("{devices=[2,2,2]<=[2,2,2]T(0,2,1) last_tile_dims={manual, replicated}}"));
  // Two manual dims merge into one of size 4 (adjacent, so no transpose).
  EXPECT_EQ(parse("{devices=[2,2,2]<=[8] last_tile_dims={manual, manual}}"),
            parse("{devices=[2,4]<=[8] last_tile_dims={manual}}"));
}

TEST(ShardingCanonical, TupleFlattensAndCompares) {
  auto t = Sharding::tuple(
      {Sharding::replicated(), Sharding::tuple({Sharding::maximal(1), Sharding::manual()})});
  ASSERT_EQ(t.tuple_elements().size(), 3u);
  EXPECT_EQ(t.to_string(), "{{replicated}, {maximal device=1}, {manual}}");
  EXPECT_EQ(parse(t.to_string()), t);
}

TEST(ShardingValidate, AcceptsWellFormed) {
  EXPECT_NO_THROW(parse("{devices=[2,1,4]<=[8]}").validate(3, 8));
  EXPECT_NO_THROW(parse("{maximal device=7}").validate(0, 8));
  EXPECT_NO_THROW(parse("{replicated}").validate(5, 8));
  EXPECT_NO_THROW(parse("{{replicated}, {devices=[2]0,1}}").validate_leaves(Ids{0, 1}, 2));
}

TEST(ShardingValidate, RejectsWithHints) {
  auto rejects = [](const Sharding& s, int64_t rank, int64_t n, const std::string& fragment) {
    try {
      s.validate(rank, n, {"f.hlo", 2, 5});
    } catch (const UserError& e) {
      EXPECT_NE(e.message().find(fragment), std::string::npos) << e.message();
      EXPECT_FALSE(e.hint().empty());
      EXPECT_EQ(e.location().line, 2);
      return;
    }
    ADD_FAILURE() << "accepted " << s.to_string();
  };
  rejects(parse("{devices=[2,1,4]<=[8]}"), 2, 8, "rank 2");
  rejects(parse("{devices=[2,1,4]<=[8]}"), 3, 16, "there are 16");
  rejects(parse("{devices=[2,2]0,1,2,5}"), 2, 4, "device 5");
  rejects(parse("{devices=[2,2]0,1,1,2}"), 2, 4, "appears twice");
  rejects(parse("{maximal device=9}"), 1, 8, "device 9");
  EXPECT_THROW(parse("{devices=[2]0,1}").validate_leaves(Ids{1, 1}, 2), UserError);
  EXPECT_THROW(parse("{{replicated}}").validate_leaves(Ids{1, 1}, 2), UserError);
}

// The gspmd.md#sharding-representation example: f32[8,16,4] with {devices=[2,1,4]0..7}.
TEST(ShardingDerived, ReferenceExampleDevice5) {
  auto s = parse("{devices=[2,1,4]0,1,2,3,4,5,6,7}");
  const Ids dims{8, 16, 4};
  EXPECT_EQ(*s.tile_index_for_device(5), (Ids{1, 0, 1}));
  EXPECT_EQ(shard_shape(s, dims), (Ids{4, 16, 1}));
  auto region = shard_region(s, dims, 5);
  // rows 4..7, all columns, dim2 element 1.
  EXPECT_EQ(region.offsets, (Ids{4, 0, 1}));
  EXPECT_EQ(region.limits, (Ids{8, 16, 2}));
  EXPECT_EQ(s.num_tiles(), 8);
  EXPECT_EQ(s.total_num_tiles(), 8);
  EXPECT_EQ(s.tiled_data_rank(), 3);
  EXPECT_EQ(s.subgroup_replication_dim(), -1);
}

TEST(ShardingDerived, PartialReplicationGroups) {
  // [2,1,1,4]<=[8] rep: {0,1,2,3} hold rows 0..3, {4..7} rows 4..7.
  auto s = parse("{devices=[2,1,1,4]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(s.replication_groups(), (std::vector<Ids>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(s.num_tiles(), 2);
  EXPECT_EQ(s.total_num_tiles(), 8);
  EXPECT_EQ(s.subgroup_replication_dim(), 3);
  EXPECT_EQ(s.devices_for_tile(Ids{1, 0, 0}), (Ids{4, 5, 6, 7}));
  // [4,2]T(1,0): groups {0,2,4,6} and {1,3,5,7}.
  auto t = parse("{devices=[2,1,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}");
  EXPECT_EQ(t.replication_groups(), (std::vector<Ids>{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(shard_region(t, Ids{8, 16, 4}, 3).offsets, (Ids{4, 0, 0}));
}

TEST(ShardingDerived, ManualAndReplicatedSubgroups) {
  auto s = parse("{devices=[2,1,1,2,2]<=[8] last_tile_dims={manual, replicated}}");
  EXPECT_EQ(s.tiled_data_rank(), 3);
  EXPECT_EQ(s.subgroup_manual_dim(), 3);
  EXPECT_EQ(s.subgroup_replication_dim(), 4);
  EXPECT_EQ(s.num_tiles(), 2);
  // Same data tile and same manual group: pairs of consecutive devices.
  EXPECT_EQ(s.replication_groups(), (std::vector<Ids>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
}

TEST(ShardingDerived, UnevenTilesUseCeilingAndPadding) {
  // D=3 split 4 ways: t = ceil(3/4) = 1; device 3 holds only padding.
  auto s = parse("{devices=[4]<=[4]}");
  const Ids dims{3};
  EXPECT_EQ(shard_shape(s, dims), (Ids{1}));
  EXPECT_EQ(shard_region(s, dims, 2).offsets, (Ids{2}));
  EXPECT_TRUE(shard_region(s, dims, 3).empty());
  EXPECT_FALSE(evenly_partitions(s, dims));
  EXPECT_TRUE(evenly_partitions(s, Ids{8}));
  EXPECT_TRUE(evenly_partitions(Sharding::replicated(), dims));
  EXPECT_FALSE(evenly_partitions(Sharding::maximal(0), dims));
  // D=10 split 4 ways: t = 3, tiles [0,3) [3,6) [6,9) [9,10).
  EXPECT_EQ(shard_region(s, Ids{10}, 3).offsets, (Ids{9}));
  EXPECT_EQ(shard_region(s, Ids{10}, 3).limits, (Ids{10}));
}

}  // namespace
}  // namespace podsim::compiler
