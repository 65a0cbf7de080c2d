// The sharding algebra of docs/reference/gspmd.md#sharding-algebra: one test per function,
// with the reference's examples and hand-derived device arrays.
#include "compiler/sharding/sharding_util.h"

#include <gtest/gtest.h>

#include "compiler/sharding/sharding_groups.h"

namespace podsim::compiler {
namespace {

using Ids = std::vector<int64_t>;

Sharding parse(std::string_view text) { return parse_sharding(text); }

TEST(TransposeSharding, PermutesDataDimsKeepsSubgroups) {
  // [2,1,4]<=[8] with perm (2,0,1): tile dims [4,2,1]; out[k][i][0] = in[i][0][k] = 4i + k.
  EXPECT_EQ(transpose_sharding(parse("{devices=[2,1,4]<=[8]}"), Ids{2, 0, 1}),
            parse("{devices=[4,2,1]0,4,1,5,2,6,3,7}"));
  EXPECT_EQ(transpose_sharding(parse("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"), Ids{1, 0}),
            parse("{devices=[1,2,2]<=[4] last_tile_dim_replicate}"));
  EXPECT_EQ(transpose_sharding(Sharding::maximal(2), Ids{1, 0}), Sharding::maximal(2));
  EXPECT_EQ(transpose_sharding(Sharding::manual(), Ids{1, 0}), Sharding::manual());
}

TEST(ReverseSharding, LastTileMovesFirst) {
  EXPECT_EQ(reverse_sharding(parse("{devices=[4]0,1,2,3}"), Ids{0}), parse("{devices=[4]3,2,1,0}"));
  EXPECT_EQ(reverse_sharding(parse("{devices=[2,2]<=[4]}"), Ids{1}),
            parse("{devices=[2,2]1,0,3,2}"));
  // Reversing a replication dim is not asked for; data dims only here.
  EXPECT_EQ(reverse_sharding(Sharding::replicated(), Ids{0}), Sharding::replicated());
}

TEST(PartiallyReplicate, MovesTileCountsIntoReplication) {
  auto s = parse("{devices=[2,2]<=[4]}");
  // Dim 0 replicated: tile j of dim 1 is held by devices {j, 2+j}.
  EXPECT_EQ(partially_replicate_on_dims(s, Ids{0}),
            parse("{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"));
  EXPECT_EQ(partially_replicate_on_dims(s, Ids{1}),
            parse("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"));
  EXPECT_EQ(partially_replicate_on_dims(s, Ids{0, 1}), Sharding::replicated());
  EXPECT_EQ(partially_replicate_on_all_dims_except(s, Ids{1}),
            partially_replicate_on_dims(s, Ids{0}));
  // [2,1,2] rep on dim 0: all four devices in one group -> replicated.
  EXPECT_EQ(
      partially_replicate_on_dims(parse("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"), Ids{0}),
      Sharding::replicated());
}

TEST(PartiallyReplicate, KeepsManualSubgroups) {
  // (a, m, r) -> device 4a + 2m + r. Replicating a merges it with r: manual
  // group m holds {2m, 2m+1, 2m+4, 2m+5}.
  auto s = parse("{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}");
  auto expected = parse("{devices=[1,1,2,4]0,1,4,5,2,3,6,7 last_tile_dims={manual, replicated}}");
  EXPECT_EQ(partially_replicate_on_dims(s, Ids{0}), expected);
  EXPECT_EQ(replicate_all_data_dims(s), expected);
  EXPECT_EQ(replicate_all_data_dims(parse("{devices=[2,2]<=[4]}")), Sharding::replicated());
}

TEST(ShapeDims, RemoveAndAddUnshardedDims) {
  auto s = parse("{devices=[2,1,4]<=[8]}");
  EXPECT_EQ(remove_shape_dims(s, Ids{1}), parse("{devices=[2,4]<=[8]}"));
  EXPECT_EQ(add_shape_dims(parse("{devices=[2,4]<=[8]}"), Ids{1}), s);
  EXPECT_EQ(add_shape_dims(parse("{devices=[2,4]<=[8]}"), Ids{0, 3}),
            parse("{devices=[1,2,4,1]<=[8]}"));
  EXPECT_EQ(add_shape_dims(parse("{devices=[2,2]<=[4] last_tile_dim_replicate}"), Ids{0}),
            parse("{devices=[1,2,2]<=[4] last_tile_dim_replicate}"));
}

TEST(TransposeWithCollapsedDims, DotOperandToOutput) {
  // lhs (B,M,K) [2,4,1] -> out (B,M,N): K vanishes (unsharded), N is new.
  auto out =
      transpose_with_collapsed_dims(parse("{devices=[2,4,1]<=[8]}"), Ids{0, 1, -1}, Ids{0, 1, -1});
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, parse("{devices=[2,4,1]<=[8]}"));
  // rhs (K,N) [1,4] -> out (M,N) ... with order change: (N at 1).
  EXPECT_EQ(*transpose_with_collapsed_dims(parse("{devices=[1,4]<=[4]}"), Ids{-1, 1}, Ids{-1, 1}),
            parse("{devices=[1,4]<=[4]}"));
  // (A,B) [2,4] -> (B,C,A): A to 2, B to 0, C new: tile dims [4,1,2], out[j][0][i] = 4i + j.
  EXPECT_EQ(*transpose_with_collapsed_dims(parse("{devices=[2,4]<=[8]}"), Ids{2, 0}, Ids{1, -1, 0}),
            parse("{devices=[4,1,2]<=[2,4]T(1,0)}"));
  // A sharded vanishing dim fails.
  EXPECT_FALSE(
      transpose_with_collapsed_dims(parse("{devices=[2,4,2]<=[16]}"), Ids{0, 1, -1}, Ids{0, 1, -1})
          .has_value());
}

TEST(PropagateAlongDims, KeepsCorrespondingReplicatesOthers) {
  // Keep dim 1 (4-way) as target dim 0; dim 0's 2-way becomes replication:
  // tile j is held by {j, 4+j}.
  auto out =
      propagate_along_dims_and_replicate_others(parse("{devices=[2,4]<=[8]}"), {Ids{1}, Ids{0}, 2});
  EXPECT_EQ(out, parse("{devices=[4,1,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}"));
  EXPECT_EQ(propagate_along_dims_and_replicate_others(Sharding::replicated(), {Ids{0}, Ids{0}, 1}),
            Sharding::replicated());
  // Nothing kept: replicated.
  EXPECT_EQ(
      propagate_along_dims_and_replicate_others(parse("{devices=[2,1]<=[2]}"), {Ids{1}, Ids{0}, 1}),
      Sharding::replicated());
}

TEST(MoveAndMergeTiles, ReferenceShape) {
  // [a,b,c,d] = [2,2,1,2] move 1 -> 3: [2,1,1,4] with new index d*2 + b;
  // value 4a + 2b + d: a=0 -> 0,2,1,3; a=1 -> 4,6,5,7.
  auto s = parse("{devices=[2,2,1,2]<=[8]}");
  EXPECT_EQ(move_and_merge_tiles(s, 1, 3), parse("{devices=[2,1,1,4]0,2,1,3,4,6,5,7}"));
  // Moving to a more major dim: [2,2] move 1 -> 0: [4,1], index a*2 + b, plain iota.
  EXPECT_EQ(move_and_merge_tiles(parse("{devices=[2,2]<=[4]}"), 1, 0),
            parse("{devices=[4,1]<=[4]}"));
  // First dim that can absorb 2 tiles of dim 0: dim 1 (size 3) cannot, dim 2 (8) can.
  EXPECT_EQ(first_target_dim_to_move_tiles(Ids{4, 3, 8}, parse("{devices=[2,1,1]<=[2]}"), 0), 2);
  EXPECT_FALSE(first_target_dim_to_move_tiles(Ids{4, 3}, parse("{devices=[2,1]<=[2]}"), 0));
}

// ---- Reshape: gspmd.md#reshape-sharding examples and the structures it lists ----

std::optional<Sharding> reshape(Ids src, Ids tgt, std::string_view s) {
  return reshape_sharding(src, tgt, parse(s));
}

TEST(ReshapeSharding, ReferenceExamples) {
  // f32[6,4] [6,1] -> f32[4,6]: gcd(6,4) = 2 tiles on dim 0, 3 left over.
  EXPECT_EQ(reshape({6, 4}, {4, 6}, "{devices=[6,1]<=[6]}"),
            parse("{devices=[2,1,3]<=[6] last_tile_dim_replicate}"));
  // f32[16,4,7] [2,1,1] -> f32[4,16,7]: split 16 = 4 x 4 (2 tiles on the 4),
  // the minor 4 merges with the next 4.
  EXPECT_EQ(reshape({16, 4, 7}, {4, 16, 7}, "{devices=[2,1,1]<=[2]}"),
            parse("{devices=[2,1,1]<=[2]}"));
  // f32[2,3,5] [1,2,1] -> f32[3,5,2]: interleaved, nothing survives.
  EXPECT_FALSE(reshape({2, 3, 5}, {3, 5, 2}, "{devices=[1,2,1]<=[2]}").has_value());
}

TEST(ReshapeSharding, MergeOnlyWhenMostMajorSharded) {
  EXPECT_EQ(reshape({4, 5, 7}, {20, 7}, "{devices=[2,1,1]<=[2]}"), parse("{devices=[2,1]<=[2]}"));
  // Minor merged dim sharded while the major has tiles of size 2: not contiguous.
  EXPECT_FALSE(reshape({4, 5}, {20}, "{devices=[2,5]<=[10]}").has_value());
  // Major fully split (tile size 1): contiguous, 2*5 tiles.
  EXPECT_EQ(reshape({2, 5}, {10}, "{devices=[2,5]<=[10]}"), parse("{devices=[10]<=[10]}"));
  // Uneven merged dim.
  EXPECT_FALSE(reshape({3, 4}, {12}, "{devices=[2,1]<=[2]}").has_value());
}

TEST(ReshapeSharding, SplitDistributesToMajorDims) {
  EXPECT_EQ(reshape({16, 7}, {4, 4, 7}, "{devices=[2,1]<=[2]}"), parse("{devices=[2,1,1]<=[2]}"));
  // 16 tiles over 4 x 4: each target dim gets 4.
  EXPECT_EQ(reshape({16, 7}, {4, 4, 7}, "{devices=[16,1]<=[16]}"),
            parse("{devices=[4,4,1]<=[16]}"));
  // Partial replication is carried along.
  EXPECT_EQ(reshape({16, 7}, {4, 4, 7}, "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"),
            parse("{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}"));
}

TEST(ReshapeSharding, SizeOneDims) {
  EXPECT_EQ(reshape({3, 1, 5, 7}, {3, 5, 1, 7}, "{devices=[1,1,2,1]<=[2]}"),
            parse("{devices=[1,2,1,1]<=[2]}"));
  EXPECT_EQ(reshape({8, 16}, {8, 16, 1}, "{devices=[2,1]<=[2]}"), parse("{devices=[2,1,1]<=[2]}"));
  // A sharded size-1 dim becomes replication with the device list kept in
  // order (XLA reshapes the tile array): [2,4] <=[8] on f32[1,8] -> f32[8]
  // is [4,2] <=[8] replicated: tile j of the 8 is held by {2j, 2j+1}. (The
  // size-1 dim's second tile, devices 4..7, held only padding.)
  EXPECT_EQ(reshape({1, 8}, {8}, "{devices=[2,4]<=[8]}"),
            parse("{devices=[4,2]<=[8] last_tile_dim_replicate}"));
  EXPECT_EQ(reshape({3, 5}, {15}, "{replicated}"), Sharding::replicated());
}

TEST(PropagateThroughReshape, PartialMatchExample) {
  // ReshapeForwardPassPartialMatch: f32[14,32] [4,4] -> f32[7,2,2,16].
  // Dim 0's 4-way cannot split 14 = 7 x 2 evenly and is lost; dim 1's 4-way
  // splits 32 = 2 x 16 as 2 x 2. Surviving tile (j0, j1) = dim-1 tile 2*j0 + j1,
  // held by the 4 devices {4*i + t : i} (i = the lost dim-0 index).
  const Ids src{14, 32}, tgt{7, 2, 2, 16};
  auto s = parse("{devices=[4,4]<=[16]}");
  EXPECT_FALSE(reshape_sharding(src, tgt, s).has_value());
  EXPECT_EQ(propagate_through_reshape(src, tgt, s),
            parse("{devices=[1,1,2,2,4]0,4,8,12,1,5,9,13,2,6,10,14,3,7,11,15 "
                  "last_tile_dim_replicate}"));
}

TEST(PropagateThroughReshape, FallsBackToReplicatedData) {
  EXPECT_EQ(propagate_through_reshape(Ids{2, 3, 5}, Ids{3, 5, 2}, parse("{devices=[1,2,1]<=[2]}")),
            Sharding::replicated());
  // Strict rule applies: same answer.
  EXPECT_EQ(propagate_through_reshape(Ids{16, 7}, Ids{4, 4, 7}, parse("{devices=[2,1]<=[2]}")),
            parse("{devices=[2,1,1]<=[2]}"));
}

// ---- Merging ----

TEST(MergeIfCompatible, PartialShardingOnElementwise) {
  auto a = parse("{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}");
  auto b = parse("{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}");
  auto expected = parse("{devices=[2,2]0,2,1,3}");
  EXPECT_EQ(merge_if_compatible(a, b), expected);
  EXPECT_EQ(merge_if_compatible(b, a), expected);
  EXPECT_FALSE(merge_if_compatible(a, b, 5).has_value());  // only 4 tiles
}

TEST(MergeIfCompatible, Incompatible) {
  // Both split the same device pairs: (0,1) vs (2,3) on both dims cannot cross.
  EXPECT_FALSE(merge_if_compatible(parse("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"),
                                   parse("{devices=[1,2,2]<=[4] last_tile_dim_replicate}"))
                   .has_value());
  // Different counts on one dim.
  EXPECT_FALSE(merge_if_compatible(parse("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"),
                                   parse("{devices=[4,1]<=[4]}"))
                   .has_value());
  EXPECT_EQ(merge_if_compatible(Sharding::replicated(), parse("{devices=[4,1]<=[4]}")),
            parse("{devices=[4,1]<=[4]}"));
  EXPECT_FALSE(
      merge_if_compatible(Sharding::maximal(0), parse("{devices=[4,1]<=[4]}")).has_value());
}

TEST(IsMoreSpecific, PartialOrderOfSection2_3) {
  auto t2 = parse("{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  auto t4 = parse("{devices=[4,1]<=[4]}");
  const auto rep = Sharding::replicated(), one = Sharding::maximal(1), man = Sharding::manual();
  EXPECT_TRUE(is_more_specific(t4, t2));
  EXPECT_FALSE(is_more_specific(t2, t4));
  EXPECT_FALSE(is_more_specific(t4, parse("{devices=[1,4]<=[4]}")));  // equal counts
  EXPECT_TRUE(is_more_specific(t2, rep));
  EXPECT_TRUE(is_more_specific(one, rep));
  EXPECT_FALSE(is_more_specific(rep, one));
  EXPECT_TRUE(is_more_specific(t2, one));
  EXPECT_TRUE(is_more_specific(man, rep));
  EXPECT_TRUE(is_more_specific(man, one));
  EXPECT_FALSE(is_more_specific(man, t2));
  EXPECT_FALSE(is_more_specific(t2, man));
  EXPECT_TRUE(is_more_specific(rep, Sharding::unknown()));
  // Tuples: better in one leaf, no worse in any.
  EXPECT_TRUE(is_more_specific(Sharding::tuple({t4, rep}), Sharding::tuple({t2, rep})));
  EXPECT_FALSE(is_more_specific(Sharding::tuple({t4, rep}), Sharding::tuple({t2, t2})));
}

TEST(MergeSharding, CombinesPartialsWhenAllowed) {
  auto a = parse("{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}");
  auto b = parse("{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}");
  auto merged = merge_sharding(a, b, true);
  EXPECT_TRUE(merged.dst_wins);
  EXPECT_EQ(merged.sharding, parse("{devices=[2,2]0,2,1,3}"));
  // Not allowed (level 0): equal tile counts, dst is not more specific.
  auto kept = merge_sharding(a, b, false);
  EXPECT_FALSE(kept.dst_wins);
  EXPECT_EQ(kept.sharding, b);
  EXPECT_TRUE(merge_sharding(Sharding::replicated(), b, false).dst_wins);
}

TEST(IsSubtilingOrEqual, ContainmentPerDevice) {
  const Ids dims{8};
  auto fine = parse("{devices=[4]<=[4]}");
  // Groups {0,1} hold [0,4), {2,3} hold [4,8): device d's [2d, 2d+2) inside.
  EXPECT_TRUE(
      is_subtiling_or_equal(dims, fine, parse("{devices=[2,2]<=[4] last_tile_dim_replicate}")));
  // Groups {0,2}, {1,3}: device 1 holds [2,4) but its coarse tile is [4,8).
  EXPECT_FALSE(
      is_subtiling_or_equal(dims, fine, parse("{devices=[2,2]0,2,1,3 last_tile_dim_replicate}")));
  EXPECT_TRUE(is_subtiling_or_equal(dims, fine, fine));
  EXPECT_TRUE(is_subtiling_or_equal(dims, fine, Sharding::replicated()));
  EXPECT_FALSE(is_subtiling_or_equal(dims, Sharding::replicated(), fine));
  // D = 3, 4-way: device 3 holds only padding (contained); 2-way tiles are
  // [0,2) and [2,3), device 2's [2,3) is inside.
  EXPECT_TRUE(
      is_subtiling_or_equal(Ids{3}, fine, parse("{devices=[2,2]<=[4] last_tile_dim_replicate}")));
}

TEST(FindCommonSharding, FoldsMerges) {
  std::vector<Sharding> list{parse("{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}"),
                             parse("{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}")};
  EXPECT_EQ(find_common_sharding(list), parse("{devices=[2,2]0,2,1,3}"));
  list.push_back(parse("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(find_common_sharding(list), list[0]);
  EXPECT_EQ(find_common_sharding(list, Sharding::replicated()), Sharding::replicated());
}

// ---- Grouping ----

TEST(GroupSharding, OnDataDim) {
  auto s = parse("{devices=[2,4]<=[8]}");
  auto g = group_sharding_on_dims(s, Ids{0});
  EXPECT_EQ(g.device_groups, (std::vector<Ids>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(g.inner, parse("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(g.group_dim_sizes, (Ids{2}));
  EXPECT_EQ(ungroup_sharding(g), s);
  // Dim 1 split into 2 groups x 2 kept shards: group r = {4a + 2r + k}.
  auto h = group_sharding_on_dims(s, Ids{1}, Ids{2});
  EXPECT_EQ(h.device_groups, (std::vector<Ids>{{0, 1, 4, 5}, {2, 3, 6, 7}}));
  EXPECT_EQ(h.inner, parse("{devices=[2,2]<=[4]}"));
  EXPECT_EQ(ungroup_sharding(h), s);
}

TEST(GroupSharding, OnReplicatedDim) {
  auto s = parse("{devices=[2,4]<=[8] last_tile_dim_replicate}");
  auto g = group_sharding_on_replicated_dim(s, {2, {}, 0, 0});
  EXPECT_EQ(g.device_groups, (std::vector<Ids>{{0, 1, 4, 5}, {2, 3, 6, 7}}));
  EXPECT_EQ(g.inner, parse("{devices=[2,2]<=[4] last_tile_dim_replicate}"));
  EXPECT_EQ(ungroup_sharding(g), s);
  // No replication dim: borrow dim 1's tiles.
  auto t = parse("{devices=[2,4]<=[8]}");
  auto borrowed = group_sharding_on_replicated_dim(t, {4, {1}, 0, 0});
  EXPECT_EQ(borrowed.device_groups.size(), 4u);
  EXPECT_EQ(ungroup_sharding(borrowed), partially_replicate_on_dims(t, Ids{1}));
  // Nothing to borrow: all-replicated grouping of contiguous ranges.
  auto all = group_sharding_on_replicated_dim(Sharding::replicated(), {2, {}, 8, 1});
  EXPECT_EQ(all.device_groups, (std::vector<Ids>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(ungroup_sharding(all), Sharding::replicated());
}

TEST(GroupSharding, AlignGroupsWith) {
  auto ref = group_sharding_on_dims(parse("{devices=[2,4]<=[8]}"), Ids{0});
  // Same groups in the other order and reversed positions.
  auto other = group_sharding_on_dims(parse("{devices=[2,4]7,6,5,4,3,2,1,0}"), Ids{0});
  EXPECT_TRUE(device_groups_match(ref, other));
  auto aligned = align_groups_with(other, ref);
  ASSERT_TRUE(aligned.has_value());
  EXPECT_EQ(aligned->device_groups, ref.device_groups);
  // Position p of `other` holds ref position 3 - p: inner reversed.
  EXPECT_EQ(aligned->inner, parse("{devices=[1,4]3,2,1,0}"));
  // Ungrouped: group 0 = {0..3} read through the reversed inner -> 3,2,1,0,
  // then group 1 -> 7,6,5,4 (group order now follows ref).
  EXPECT_EQ(ungroup_sharding(*aligned), parse("{devices=[2,4]3,2,1,0,7,6,5,4}"));
  EXPECT_FALSE(align_groups_with(other, ref, /*ignore_group_order=*/false).has_value());
  auto mismatch = group_sharding_on_dims(parse("{devices=[2,4]<=[4,2]T(1,0)}"), Ids{0});
  EXPECT_FALSE(align_groups_with(mismatch, ref).has_value());
}

}  // namespace
}  // namespace podsim::compiler

namespace podsim::compiler {
namespace {

TEST(ManualConversionForms, ConvertedDimTilesBecomeTheManualSubgroupAndBack) {
  // [2,2,1,2] rep on 0,1,4,5,2,3,6,7: tile (a,b,0,r) on device list[4a+2b+r].
  // Dim 0's tiles become the manual subgroup (last): tile (0,b,0,r,m) =
  // list[4m+2b+r] -> b=0: r=0 {0,2}, r=1 {1,3}; b=1: {4,6}, {5,7}.
  const Sharding automatic =
      parse_sharding("{devices=[2,2,1,2]0,1,4,5,2,3,6,7 last_tile_dim_replicate}");
  const Sharding manual =
      parse_sharding("{devices=[1,2,1,2,2]0,2,1,3,4,6,5,7 last_tile_dims={replicated, manual}}");
  EXPECT_EQ(data_dim_to_manual(automatic, 0), manual);
  EXPECT_EQ(manual_to_data_dim(manual, 0), automatic);
  // Dim 0 also tiled 2 ways inside each of 4 manual shards: 8 automatic
  // tiles, manual index major: tile 2m+x on the device of (x, m).
  const Sharding inside = parse_sharding("{devices=[2,4]0,1,2,3,4,5,6,7 last_tile_dims={manual}}");
  EXPECT_EQ(manual_to_data_dim(inside, 0), parse_sharding("{devices=[8]0,4,1,5,2,6,3,7}"));
  EXPECT_FALSE(data_dim_to_manual(parse_sharding("{devices=[1,2]0,1}"), 0).has_value());
}

}  // namespace
}  // namespace podsim::compiler
