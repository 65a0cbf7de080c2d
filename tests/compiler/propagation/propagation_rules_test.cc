// Sharding propagation rules, one test per behaviour of the conformance
// checklist (docs/reference/gspmd.md#propagation-checklist; names follow XLA's test names where a
// counterpart exists). Expected shardings are derived by hand in comments:
// with a tile array T, the device of tile index (i, j, ...) is T[i][j]...;
// "<=[n]" is iota order.
#include "compiler/hlo/hlo_printer.h"
#include "tests/compiler/propagation/test_util.h"

namespace podsim::compiler::testing {
namespace {

// ---- elementwise -----------------------------------------------------------

TEST(Propagation, ElementwiseOperationForwardPass) {
  Module m = propagate_text(module(R"(
  %p0 = f32[3,2,3,2] parameter(0), sharding={devices=[1,2,2,1]0,1,2,3}
  %p1 = f32[3,2,3,2] parameter(1)
  ROOT %add = f32[3,2,3,2] add(%p0, %p1)
)"));
  EXPECT_EQ(sharding_of(m, "add"), canon("{devices=[1,2,2,1]0,1,2,3}"));
}

TEST(Propagation, ElementwiseOperationBackwardPass) {
  Module m = propagate_text(module(R"(
  %p0 = f32[3,2,3,2] parameter(0)
  %p1 = f32[3,2,3,2] parameter(1)
  %add = f32[3,2,3,2] add(%p0, %p1)
  ROOT %copy = f32[3,2,3,2] copy(%add), sharding={devices=[1,2,2,1]0,1,2,3}
)"));
  EXPECT_EQ(sharding_of(m, "add"), canon("{devices=[1,2,2,1]0,1,2,3}"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[1,2,2,1]0,1,2,3}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{devices=[1,2,2,1]0,1,2,3}"));
}

TEST(Propagation, ShardedPreferredOverReplicated) {
  Module m = propagate_text(module(R"(
  %p0 = f32[3,2,3,2] parameter(0), sharding={replicated}
  %p1 = f32[3,2,3,2] parameter(1), sharding={devices=[1,2,2,1]0,1,2,3}
  %add = f32[3,2,3,2] add(%p0, %p1)
  ROOT %neg = f32[3,2,3,2] negate(%add)
)"));
  EXPECT_EQ(sharding_of(m, "add"), canon("{devices=[1,2,2,1]0,1,2,3}"));
  EXPECT_EQ(sharding_of(m, "neg"), canon("{devices=[1,2,2,1]0,1,2,3}"));
}

TEST(Propagation, PartialShardingOnElementwise) {
  // [1,2,2] rep (dim1 tile j holds {2j, 2j+1}) and [2,1,2] 0,2,1,3 rep (dim0
  // tile i holds {i, i+2}): tile (i,j) must lie in both -> device 2j+i, i.e.
  // {devices=[2,2]0,2,1,3}.
  Module m = propagate_text(module(R"(
  %p0 = f32[4,4] parameter(0), sharding={devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}
  %p1 = f32[4,4] parameter(1), sharding={devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}
  ROOT %add = f32[4,4] add(%p0, %p1)
)"));
  EXPECT_EQ(sharding_of(m, "add"), canon("{devices=[2,2]0,2,1,3}"));
}

TEST(Propagation, TwoFullTilingsDoNotOverrideEachOther) {
  // Equal tile counts on different dims are incompatible; the first operand's
  // (most specific, first seen) stays: no silent re-layout.
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  %p1 = f32[8,8] parameter(1), sharding={devices=[1,4]<=[4]}
  ROOT %add = f32[8,8] add(%p0, %p1)
)"));
  EXPECT_EQ(sharding_of(m, "add"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, UserAnnotationIsNeverOverwritten) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  %neg = f32[8,8] negate(%p0), sharding={replicated}
  ROOT %abs = f32[8,8] abs(%neg)
)"));
  EXPECT_EQ(sharding_of(m, "neg"), canon("{replicated}"));
  EXPECT_EQ(sharding_of(m, "abs"), canon("{replicated}"));
}

TEST(Propagation, ScalarSelectPredicateCarriesNothing) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[1,4]<=[4]}
  %p1 = f32[8,8] parameter(1)
  %c = pred[] parameter(2)
  ROOT %sel = f32[8,8] select(%c, %p0, %p1)
)"));
  EXPECT_EQ(sharding_of(m, "sel"), canon("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "c"), canon("{replicated}"));
}

TEST(Propagation, ClampWithScalarBounds) {
  Module m = propagate_text(module(R"(
  %lo = f32[] parameter(0)
  %x = f32[8,8] parameter(1), sharding={devices=[2,2]<=[4]}
  %hi = f32[] parameter(2)
  ROOT %c = f32[8,8] clamp(%lo, %x, %hi)
)"));
  EXPECT_EQ(sharding_of(m, "c"), canon("{devices=[2,2]<=[4]}"));
}

TEST(Propagation, ManualShardingPassesThroughElementwise) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={manual}
  ROOT %neg = f32[8,8] negate(%p0)
)"));
  EXPECT_EQ(sharding_of(m, "neg"), canon("{manual}"));
}

TEST(Propagation, MaximalShardingDoesNotSpread) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={maximal device=1}
  ROOT %neg = f32[8,8] negate(%p0)
)"));
  EXPECT_EQ(sharding_of(m, "neg"), canon("{replicated}"));
}

// ---- broadcast ---------------------------------------------------------------

TEST(Propagation, BroadcastForwardPass) {
  // operand dims (0,1) -> output dims (0,1); the new dim 2 is unsharded.
  Module m = propagate_text(module(R"(
  %p0 = f32[3,2048] parameter(0), sharding={devices=[1,4]<=[4]}
  ROOT %b = f32[3,2048,3] broadcast(%p0), dimensions={0,1}
)"));
  EXPECT_EQ(sharding_of(m, "b"), canon("{devices=[1,4,1]<=[4]}"));
}

TEST(Propagation, BroadcastForwardPartial) {
  Module m = propagate_text(module(R"(
  %p0 = f32[3,2048] parameter(0), sharding={devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}
  ROOT %b = f32[3,2048,3] broadcast(%p0), dimensions={0,1}
)"));
  EXPECT_EQ(sharding_of(m, "b"), canon("{devices=[1,2,1,2]0,1,2,3 last_tile_dim_replicate}"));
}

TEST(Propagation, BroadcastBackwardPass) {
  // Output [1,2,2] (device 2j+k for dims 1,2); the operand is output dim 2:
  // tile k is held by {k, k+2} -> [2,2]0,2,1,3 rep.
  Module m = propagate_text(module(R"(
  %p0 = f32[13] parameter(0)
  %b = f32[5,7,13] broadcast(%p0), dimensions={2}
  ROOT %copy = f32[5,7,13] copy(%b), sharding={devices=[1,2,2]0,1,2,3}
)"));
  EXPECT_EQ(sharding_of(m, "b"), canon("{devices=[1,2,2]0,1,2,3}"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[2,2]0,2,1,3 last_tile_dim_replicate}"));
}

TEST(Propagation, BroadcastBackwardOfNewDimOnlyGivesReplicated) {
  Module m = propagate_text(module(R"(
  %p0 = f32[13] parameter(0)
  %b = f32[4,13] broadcast(%p0), dimensions={1}
  ROOT %copy = f32[4,13] copy(%b), sharding={devices=[4,1]<=[4]}
)"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{replicated}"));
}

TEST(Propagation, BroadcastIsUsedLastSoItDoesNotDictateLayouts) {
  // The scalar broadcast feeds an add whose other operand is sharded [1,4]:
  // at level 0/1 the add takes [1,4]; the broadcast then gets it backward
  // (level 2) and never pushes its own layout.
  Module m = propagate_text(module(R"(
  %s = f32[] parameter(0)
  %b = f32[8,8] broadcast(%s), dimensions={}
  %p = f32[8,8] parameter(1), sharding={devices=[1,4]<=[4]}
  ROOT %add = f32[8,8] add(%b, %p)
)"));
  EXPECT_EQ(sharding_of(m, "add"), canon("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "b"), canon("{devices=[1,4]<=[4]}"));
}

// ---- reduce ------------------------------------------------------------------

TEST(Propagation, ShardedReduceForwardPass) {
  // Kept dims 1 and 2 carry tiles 2 and 2: device 2j+k -> [2,2]<=[4].
  Module m = propagate_text(module(R"(
  %p0 = f32[5,7,11,13] parameter(0), sharding={devices=[1,2,2,1]0,1,2,3}
  %zero = f32[] constant(0)
  ROOT %r = f32[7,11] reduce(%p0, %zero), dimensions={0,3}, to_apply=%add
)"));
  EXPECT_EQ(sharding_of(m, "r"), canon("{devices=[2,2]0,1,2,3}"));
}

TEST(Propagation, ReducePartiallyOnTiledDims) {
  // [2,2] device 2i+j; reducing dim 0 leaves dim 1's tile j on {j, j+2}.
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[2,2]0,1,2,3}
  %zero = f32[] constant(0)
  ROOT %r = f32[8] reduce(%p0, %zero), dimensions={0}, to_apply=%add
)"));
  EXPECT_EQ(sharding_of(m, "r"), canon("{devices=[2,2]0,2,1,3 last_tile_dim_replicate}"));
}

TEST(Propagation, ReducePartiallyBackward) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0)
  %zero = f32[] constant(0)
  %r = f32[8] reduce(%p0, %zero), dimensions={0}, to_apply=%add
  ROOT %copy = f32[8] copy(%r), sharding={devices=[2,2]0,1,2,3 last_tile_dim_replicate}
)"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}"));
  EXPECT_EQ(sharding_of(m, "zero"), canon("{replicated}"));
}

// ---- transpose / reshape -------------------------------------------------------

TEST(Propagation, TransposeForwardPass) {
  Module m = propagate_text(module(R"(
  %p0 = f32[7,11,13] parameter(0), sharding={devices=[2,2,1]0,1,2,3}
  ROOT %t = f32[13,7,11] transpose(%p0), dimensions={2,0,1}
)"));
  EXPECT_EQ(sharding_of(m, "t"), canon("{devices=[1,2,2]0,1,2,3}"));
}

TEST(Propagation, TransposeBackwardPass) {
  Module m = propagate_text(module(R"(
  %p0 = f32[7,11,13] parameter(0)
  %t = f32[13,7,11] transpose(%p0), dimensions={2,0,1}
  ROOT %copy = f32[13,7,11] copy(%t), sharding={devices=[1,2,2]0,1,2,3}
)"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[2,2,1]0,1,2,3}"));
}

TEST(Propagation, ReshapeForwardPassSplit) {
  // 4 tiles on 16 split into [2,8]: gcd(4,2)=2 on dim 0, the remaining 2 on dim 1.
  Module m = propagate_text(module(R"(
  %p0 = f32[16,6] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT %r = f32[2,8,6] reshape(%p0)
)"));
  EXPECT_EQ(sharding_of(m, "r"), canon("{devices=[2,2,1]<=[4]}"));
}

TEST(Propagation, ReshapeBackwardPassMerge) {
  Module m = propagate_text(module(R"(
  %p0 = f32[4,4,6] parameter(0)
  %r = f32[16,6] reshape(%p0)
  ROOT %copy = f32[16,6] copy(%r), sharding={devices=[4,1]<=[4]}
)"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[4,1,1]<=[4]}"));
}

TEST(Propagation, ReshapeForwardPassPartialMatch) {
  // f32[14,32] [4,4] (device 4i+j) -> f32[7,2,2,16]: dim 0's 4-way is lost
  // (14 is not divisible by 4), dim 1's j splits into (a,b) = (j/2, j%2) on
  // dims 2,3; the i's become replication: tile (a,b) rep r holds 4r+2a+b.
  Module m = propagate_text(module(R"(
  %p0 = f32[14,32] parameter(0), sharding={devices=[4,4]<=[16]}
  ROOT %r = f32[7,2,2,16] reshape(%p0)
)",
                                   16));
  EXPECT_EQ(sharding_of(m, "r"),
            canon("{devices=[1,1,2,2,4]<=[4,4]T(1,0) last_tile_dim_replicate}"));
}

TEST(Propagation, ReshapeThatCannotMapFallsBackToReplication) {
  // [2,3,5] sharded 3-way on the 3 -> [3,5,2]: gcd interleaving fails.
  Module m = propagate_text(module(R"(
  %p0 = f32[2,3,5] parameter(0), sharding={devices=[1,3,1]0,1,2}
  ROOT %r = f32[3,5,2] reshape(%p0)
)",
                                   3));
  EXPECT_EQ(sharding_of(m, "r"), canon("{replicated}"));
}

// ---- pad / slice / reverse / dynamic slices -----------------------------------

TEST(Propagation, PadForwardPass) {
  Module m = propagate_text(module(R"(
  %p0 = f32[11,17] parameter(0), sharding={devices=[2,2]0,1,2,3}
  %zero = f32[] constant(0)
  ROOT %pad = f32[15,21] pad(%p0, %zero), padding=2_2x2_2
)"));
  EXPECT_EQ(sharding_of(m, "pad"), canon("{devices=[2,2]0,1,2,3}"));
}

TEST(Propagation, PadBackwardPass) {
  Module m = propagate_text(module(R"(
  %p0 = f32[11,17] parameter(0)
  %zero = f32[] constant(0)
  %pad = f32[15,21] pad(%p0, %zero), padding=2_2x2_2
  ROOT %copy = f32[15,21] copy(%pad), sharding={devices=[2,2]0,1,2,3}
)"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[2,2]0,1,2,3}"));
  EXPECT_EQ(sharding_of(m, "zero"), canon("{replicated}"));
}

TEST(Propagation, PartialReplicatedPadForwardPass) {
  Module m = propagate_text(module(R"(
  %p0 = f32[11,17] parameter(0), sharding={devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}
  %zero = f32[] constant(0)
  ROOT %pad = f32[15,21] pad(%p0, %zero), padding=2_2x2_2
)"));
  EXPECT_EQ(sharding_of(m, "pad"), canon("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"));
}

TEST(Propagation, StridedSlice) {
  Module m = propagate_text(module(R"(
  %p0 = f32[17,16] parameter(0), sharding={devices=[2,2]0,1,2,3}
  ROOT %s = f32[7,5] slice(%p0), slice={[1:15:2], [2:16:3]}
)"));
  EXPECT_EQ(sharding_of(m, "s"), canon("{devices=[2,2]0,1,2,3}"));
}

TEST(Propagation, PartialReplicatedStridedSlice) {
  Module m = propagate_text(module(R"(
  %p0 = f32[17,16] parameter(0), sharding={devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}
  ROOT %s = f32[7,5] slice(%p0), slice={[1:15:2], [2:16:3]}
)"));
  EXPECT_EQ(sharding_of(m, "s"), canon("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"));
}

TEST(Propagation, ReverseMirrorsTheTileOrder) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT %r = f32[8,8] reverse(%p0), dimensions={0}
)"));
  EXPECT_EQ(sharding_of(m, "r"), canon("{devices=[4,1]3,2,1,0}"));
}

TEST(Propagation, DynamicSliceForwardPassOnUnslicedShardedDim) {
  Module m = propagate_text(module(R"(
  %p0 = f32[11,16] parameter(0), sharding={devices=[1,4]<=[4]}
  %i = s32[] parameter(1)
  %j = s32[] parameter(2)
  ROOT %ds = f32[5,16] dynamic-slice(%p0, %i, %j), dynamic_slice_sizes={5,16}
)"));
  EXPECT_EQ(sharding_of(m, "ds"), canon("{devices=[1,4]<=[4]}"));
}

TEST(Propagation, DynamicSliceDoesNotForwardASlicedShardedDim) {
  Module m = propagate_text(module(R"(
  %p0 = f32[12,16] parameter(0), sharding={devices=[4,1]<=[4]}
  %i = s32[] parameter(1)
  %j = s32[] parameter(2)
  ROOT %ds = f32[5,16] dynamic-slice(%p0, %i, %j), dynamic_slice_sizes={5,16}
)"));
  EXPECT_EQ(sharding_of(m, "ds"), canon("{replicated}"));
}

TEST(Propagation, DynamicUpdateSliceForwardPassBase) {
  Module m = propagate_text(module(R"(
  %base = f32[12,16] parameter(0), sharding={devices=[4,1]<=[4]}
  %upd = f32[3,16] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  ROOT %dus = f32[12,16] dynamic-update-slice(%base, %upd, %i, %j)
)"));
  EXPECT_EQ(sharding_of(m, "dus"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "upd"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, DynamicUpdateSliceForwardPassUpdate) {
  // The update is sharded on dim 1, which the update covers fully.
  Module m = propagate_text(module(R"(
  %base = f32[12,16] parameter(0)
  %upd = f32[3,16] parameter(1), sharding={devices=[1,4]<=[4]}
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  ROOT %dus = f32[12,16] dynamic-update-slice(%base, %upd, %i, %j)
)"));
  EXPECT_EQ(sharding_of(m, "dus"), canon("{devices=[1,4]<=[4]}"));
}

TEST(Propagation, DynamicUpdateSliceBackwardPass) {
  Module m = propagate_text(module(R"(
  %base = f32[12,16] parameter(0)
  %upd = f32[3,16] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  %dus = f32[12,16] dynamic-update-slice(%base, %upd, %i, %j)
  ROOT %copy = f32[12,16] copy(%dus), sharding={devices=[1,4]<=[4]}
)"));
  EXPECT_EQ(sharding_of(m, "base"), canon("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "upd"), canon("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "i"), canon("{replicated}"));
}

// ---- concatenate -----------------------------------------------------------------

TEST(Propagation, ConcatenateForwardFromOperand) {
  Module m = propagate_text(module(R"(
  %p0 = f32[5,8] parameter(0), sharding={devices=[1,4]<=[4]}
  %p1 = f32[3,8] parameter(1)
  ROOT %c = f32[8,8] concatenate(%p0, %p1), dimensions={0}
)"));
  EXPECT_EQ(sharding_of(m, "c"), canon("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{devices=[1,4]<=[4]}"));
}

TEST(Propagation, ConcatFromUserUnshardedDim) {
  Module m = propagate_text(module(R"(
  %p0 = f32[5,8] parameter(0)
  %p1 = f32[3,8] parameter(1)
  ROOT %c = f32[8,8] concatenate(%p0, %p1), dimensions={0}, sharding={devices=[1,4]<=[4]}
)"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{devices=[1,4]<=[4]}"));
}

TEST(Propagation, ConcatFromUserShardedDim) {
  Module m = propagate_text(module(R"(
  %p0 = f32[4,8] parameter(0)
  %p1 = f32[4,8] parameter(1)
  ROOT %c = f32[8,8] concatenate(%p0, %p1), dimensions={0}, sharding={devices=[4,1]<=[4]}
)"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[4,1]<=[4]}"));
}

// ---- dot -------------------------------------------------------------------------

TEST(Propagation, DotForwardFromLhsNonContracting) {
  Module m = propagate_text(module(R"(
  %lhs = f32[128,64] parameter(0), sharding={devices=[4,1]<=[4]}
  %rhs = f32[64,32] parameter(1)
  ROOT %dot = f32[128,32] dot(%lhs, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
)"));
  EXPECT_EQ(sharding_of(m, "dot"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "rhs"), canon("{replicated}"));
}

TEST(Propagation, DotTiledBatchDim) {
  Module m = propagate_text(module(R"(
  %lhs = f32[8,16,4] parameter(0), sharding={devices=[4,1,1]<=[4]}
  %rhs = f32[8,4,32] parameter(1)
  ROOT %dot = f32[8,16,32] dot(%lhs, %rhs), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
)"));
  EXPECT_EQ(sharding_of(m, "dot"), canon("{devices=[4,1,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "rhs"), canon("{devices=[4,1,1]<=[4]}"));
}

TEST(Propagation, EinsumOutputRhsNonContractingPartitioned) {
  Module m = propagate_text(module(R"(
  %lhs = f32[16,4] parameter(0)
  %rhs = f32[4,32] parameter(1), sharding={devices=[1,4]<=[4]}
  ROOT %dot = f32[16,32] dot(%lhs, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
)"));
  EXPECT_EQ(sharding_of(m, "dot"), canon("{devices=[1,4]<=[4]}"));
}

TEST(Propagation, DotContractingShardedGivesPartialReplication) {
  // lhs [1,4] on K: the output has no K, so all 4 devices hold the same (M,N)
  // tile as a partial sum: fully replicated data dims.
  Module m = propagate_text(module(R"(
  %lhs = f32[16,8] parameter(0), sharding={devices=[2,2]<=[4]}
  %rhs = f32[8,32] parameter(1)
  ROOT %dot = f32[16,32] dot(%lhs, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
)"));
  // M tile i held by {2i, 2i+1}.
  EXPECT_EQ(sharding_of(m, "dot"), canon("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"));
}

TEST(Propagation, DotMergeOperands) {
  // lhs (B,M,K) [2,2,1] rep2: device 4b+2m+r; rhs (B,K,N) [2,1,2] rep2 with
  // device 4b+2r'+n. Output tile (b,m,n) must be in both groups
  // {4b+2m, 4b+2m+1} and {4b+n, 4b+n+2}: device 4b+2m+n -> [2,2,2]<=[8].
  Module m = propagate_text(module(R"(
  %lhs = f32[8,16,4] parameter(0), sharding={devices=[2,2,1,2]<=[8] last_tile_dim_replicate}
  %rhs = f32[8,4,32] parameter(1), sharding={devices=[2,1,2,2]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}
  ROOT %dot = f32[8,16,32] dot(%lhs, %rhs), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
)",
                                   8));
  EXPECT_EQ(sharding_of(m, "dot"), canon("{devices=[2,2,2]<=[8]}"));
}

TEST(Propagation, BackwardDotFromContracting) {
  // lhs (M,K) [2,2] device 2m+k; the rhs (K,N) gets lhs's K tiling: tile k
  // held by {k, k+2} -> [2,1,2]0,2,1,3 rep.
  Module m = propagate_text(module(R"(
  %lhs = f32[8,16] parameter(0), sharding={devices=[2,2]<=[4]}
  %rhs = f32[16,32] parameter(1)
  ROOT %dot = f32[8,32] dot(%lhs, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
)"));
  EXPECT_EQ(sharding_of(m, "rhs"), canon("{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}"));
}

TEST(Propagation, EinsumChooseLargerOperand) {
  // rhs (64x1024) is larger than lhs (32x64): its [1,4] wins over lhs's [4,1].
  Module m = propagate_text(module(R"(
  %lhs = f32[32,64] parameter(0), sharding={devices=[4,1]<=[4]}
  %rhs = f32[64,1024] parameter(1), sharding={devices=[1,4]<=[4]}
  ROOT %dot = f32[32,1024] dot(%lhs, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
)"));
  EXPECT_EQ(sharding_of(m, "dot"), canon("{devices=[1,4]<=[4]}"));
}

TEST(Propagation, DotBackwardToLhsFromOutput) {
  Module m = propagate_text(module(R"(
  %lhs = f32[32,64] parameter(0)
  %rhs = f32[64,16] parameter(1)
  ROOT %dot = f32[32,16] dot(%lhs, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1]<=[4]}
)"));
  EXPECT_EQ(sharding_of(m, "lhs"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "rhs"), canon("{replicated}"));
}

// ---- convolution ---------------------------------------------------------------

TEST(Propagation, ConvolutionBatchShardedForward) {
  Module m = propagate_text(module(R"(
  %in = f32[8,16,16,4] parameter(0), sharding={devices=[4,1,1,1]<=[4]}
  %k = f32[3,3,4,8] parameter(1)
  ROOT %conv = f32[8,16,16,8] convolution(%in, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
)"));
  EXPECT_EQ(sharding_of(m, "conv"), canon("{devices=[4,1,1,1]<=[4]}"));
}

TEST(Propagation, ConvolutionSpatialShardedForward) {
  Module m = propagate_text(module(R"(
  %in = f32[8,16,16,4] parameter(0), sharding={devices=[1,2,2,1]<=[4]}
  %k = f32[3,3,4,8] parameter(1)
  ROOT %conv = f32[8,16,16,8] convolution(%in, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
)"));
  EXPECT_EQ(sharding_of(m, "conv"), canon("{devices=[1,2,2,1]<=[4]}"));
}

TEST(Propagation, ConvolutionShardedInputFeatureDoesNotDriveOutput) {
  Module m = propagate_text(module(R"(
  %in = f32[8,16,16,4] parameter(0), sharding={devices=[1,1,1,4]<=[4]}
  %k = f32[3,3,4,8] parameter(1)
  ROOT %conv = f32[8,16,16,8] convolution(%in, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
)"));
  EXPECT_EQ(sharding_of(m, "conv"), canon("{replicated}"));
}

// ---- gather / scatter ----------------------------------------------------------

const char* kGather = R"(
  %table = f32[16,8] parameter(0)%s0
  %ids = s32[4,3] parameter(1)%s1
  %g = f32[4,3,8] gather(%table, %ids), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,8}%s2
  ROOT %copy = f32[4,3,8] copy(%g)%s3
)";

// Fills the %s0..%s3 slots of a template with ", sharding=..." (or nothing).
std::string with_shardings(std::string body, const std::vector<std::string>& shardings) {
  for (size_t i = 0; i < shardings.size(); ++i) {
    const std::string key = "%s" + std::to_string(i);
    body.replace(body.find(key), key.size(),
                 shardings[i].empty() ? "" : ", sharding=" + shardings[i]);
  }
  return body;
}

std::string gather_module(const std::string& s0, const std::string& s1, const std::string& s2,
                          const std::string& s3) {
  return module(with_shardings(kGather, {s0, s1, s2, s3}));
}

TEST(Propagation, GatherFromIndex) {
  Module m = propagate_text(gather_module("", "{devices=[4,1]<=[4]}", "", ""));
  EXPECT_EQ(sharding_of(m, "g"), canon("{devices=[4,1,1]<=[4]}"));
}

TEST(Propagation, GatherFromDataOperand) {
  // Operand dim 1 is a pass-through dim (slice size 8 == full) -> offset dim 2.
  Module m = propagate_text(gather_module("{devices=[1,4]<=[4]}", "", "", ""));
  EXPECT_EQ(sharding_of(m, "g"), canon("{devices=[1,1,4]<=[4]}"));
}

TEST(Propagation, GatherToIndex) {
  Module m = propagate_text(gather_module("", "", "", "{devices=[4,1,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "ids"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, GatherToDataOperand) {
  Module m = propagate_text(gather_module("", "", "", "{devices=[1,1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "table"), canon("{devices=[1,4]<=[4]}"));
}

const char* kScatter = R"(
  %base = f32[16,8] parameter(0)%s0
  %idx = s32[4,1] parameter(1)%s1
  %upd = f32[4,8] parameter(2)%s2
  %sc = f32[16,8] scatter(%base, %idx, %upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add%s3
  ROOT %copy = f32[16,8] copy(%sc)
)";

std::string scatter_module(const std::string& s0, const std::string& s1, const std::string& s2,
                           const std::string& s3) {
  return module(with_shardings(kScatter, {s0, s1, s2, s3}));
}

TEST(Propagation, DataOperandToScatter) {
  Module m = propagate_text(scatter_module("{devices=[1,4]<=[4]}", "", "", ""));
  EXPECT_EQ(sharding_of(m, "sc"), canon("{devices=[1,4]<=[4]}"));
}

TEST(Propagation, UpdateOperandToScatter) {
  // Update window dim 1 covers operand dim 1 fully: its tiling moves over.
  Module m = propagate_text(scatter_module("", "", "{devices=[1,4]<=[4]}", ""));
  EXPECT_EQ(sharding_of(m, "sc"), canon("{devices=[1,4]<=[4]}"));
}

TEST(Propagation, ScatterToUpdateOperand) {
  Module m = propagate_text(scatter_module("", "", "", "{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "upd"), canon("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "base"), canon("{devices=[1,4]<=[4]}"));
}

TEST(Propagation, ScatterUpdateToIndex) {
  // Update scatter dim 0 <-> indices batch dim 0.
  Module m = propagate_text(scatter_module("", "", "{devices=[4,1]<=[4]}", ""));
  EXPECT_EQ(sharding_of(m, "idx"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, ScatterIndexToUpdate) {
  Module m = propagate_text(scatter_module("", "{devices=[4,1]<=[4]}", "", "{replicated}"));
  EXPECT_EQ(sharding_of(m, "upd"), canon("{devices=[4,1]<=[4]}"));
}

// ---- tuples, while, call ----------------------------------------------------------

TEST(Propagation, TupleForwardPass) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  %p1 = f32[8] parameter(1)
  ROOT %t = (f32[8,8], f32[8]) tuple(%p0, %p1)
)"));
  EXPECT_EQ(sharding_of(m, "t"), canon("{{devices=[4,1]<=[4]}, {replicated}}"));
}

TEST(Propagation, GetTupleElementForwardPass) {
  Module m = propagate_text(module(R"(
  %p0 = (f32[8,8], f32[8]) parameter(0), sharding={{devices=[4,1]<=[4]}, {replicated}}
  ROOT %g = f32[8,8] get-tuple-element(%p0), index=0
)"));
  EXPECT_EQ(sharding_of(m, "g"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, TupleBackwardPass) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0)
  %p1 = f32[8] parameter(1)
  ROOT %t = (f32[8,8], f32[8]) tuple(%p0, %p1), sharding={{devices=[1,4]<=[4]}, {devices=[4]<=[4]}}
)"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{devices=[4]<=[4]}"));
}

TEST(Propagation, WhileBodyConditionAndOperandAgree) {
  Module m = propagate_text(R"(HloModule w, num_partitions=4

%cond (cs: (s32[], f32[8,8])) -> pred[] {
  %cs = (s32[], f32[8,8]) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  %limit = s32[] constant(3)
  ROOT %lt = pred[] compare(%ci, %limit), direction=LT
}

%body (bs: (s32[], f32[8,8])) -> (s32[], f32[8,8]) {
  %bs = (s32[], f32[8,8]) parameter(0)
  %bi = s32[] get-tuple-element(%bs), index=0
  %bx = f32[8,8] get-tuple-element(%bs), index=1
  %one = s32[] constant(1)
  %next_i = s32[] add(%bi, %one)
  %bneg = f32[8,8] negate(%bx)
  ROOT %bt = (s32[], f32[8,8]) tuple(%next_i, %bneg)
}

ENTRY %e {
  %x = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  %zero = s32[] constant(0)
  %init = (s32[], f32[8,8]) tuple(%zero, %x)
  %loop = (s32[], f32[8,8]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[8,8] get-tuple-element(%loop), index=1
}
)");
  const std::string state = canon("{{replicated}, {devices=[4,1]<=[4]}}");
  EXPECT_EQ(sharding_of(m, "loop"), state);
  EXPECT_EQ(sharding_of(m, "bs"), state);
  EXPECT_EQ(sharding_of(m, "bt"), state);
  EXPECT_EQ(sharding_of(m, "cs"), state);
  EXPECT_EQ(sharding_of(m, "bneg"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "out"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, AnnotationInsideWhileBodyReachesTheLoop) {
  Module m = propagate_text(R"(HloModule w, num_partitions=4

%cond (cs: f32[8,8]) -> pred[] {
  %cs = f32[8,8] parameter(0)
  ROOT %f = pred[] constant(false)
}

%body (bs: f32[8,8]) -> f32[8,8] {
  %bs = f32[8,8] parameter(0)
  ROOT %bneg = f32[8,8] negate(%bs), sharding={devices=[1,4]<=[4]}
}

ENTRY %e {
  %x = f32[8,8] parameter(0)
  ROOT %loop = f32[8,8] while(%x), condition=%cond, body=%body
}
)");
  EXPECT_EQ(sharding_of(m, "loop"), canon("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "x"), canon("{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "cs"), canon("{devices=[1,4]<=[4]}"));
}

TEST(Propagation, CallPropagatesIntoAndOutOfTheCallee) {
  Module m = propagate_text(R"(HloModule c, num_partitions=4

%f (fp: f32[8,8]) -> f32[8,8] {
  %fp = f32[8,8] parameter(0)
  ROOT %fneg = f32[8,8] negate(%fp)
}

ENTRY %e {
  %x = f32[8,8] parameter(0), sharding={devices=[2,2]<=[4]}
  %r = f32[8,8] call(%x), to_apply=%f
  ROOT %abs = f32[8,8] abs(%r)
}
)");
  EXPECT_EQ(sharding_of(m, "fp"), canon("{devices=[2,2]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "fneg"), canon("{devices=[2,2]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "r"), canon("{devices=[2,2]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "abs"), canon("{devices=[2,2]<=[4]}"));
}

// ---- boundaries and errors -------------------------------------------------------

TEST(Propagation, ShardingCustomCallAnnotatesItsOperand) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0)
  %neg = f32[8,8] negate(%p0)
  %ann = f32[8,8] custom-call(%neg), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}
  ROOT %abs = f32[8,8] abs(%ann)
)"));
  EXPECT_EQ(sharding_of(m, "neg"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "abs"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, PropagateToParametersNotEnabled) {
  PropagationOptions options;
  options.propagate_to_parameters = false;
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0)
  ROOT %neg = f32[8,8] negate(%p0), sharding={devices=[4,1]<=[4]}
)"),
                            options);
  EXPECT_EQ(sharding_of(m, "p0"), canon("{replicated}"));
}

TEST(Propagation, PropagateToOutput) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT %neg = f32[8,8] negate(%p0)
)"));
  EXPECT_EQ(sharding_of(m, "neg"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, InvalidAnnotationIsAUserErrorAtTheInstruction) {
  Module m = parse_hlo(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[4,1]0,1,2,7}
  ROOT %neg = f32[8,8] negate(%p0)
)"),
                       "bad.hlo");
  try {
    propagate_shardings(m);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "bad.hlo");
    EXPECT_GT(e.location().line, 0);
  }
}

TEST(Propagation, AnnotationRankMismatchIsAUserError) {
  Module m = parse_hlo(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[4]<=[4]}
  ROOT %neg = f32[8,8] negate(%p0)
)"));
  EXPECT_THROW(propagate_shardings(m), UserError);
}

TEST(Propagation, EveryInstructionEndsWithASharding) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[8] reduce(%p0, %zero), dimensions={1}, to_apply=%add
)"));
  for (const auto& instr : m.entry().instructions())
    EXPECT_TRUE(instr.sharding.has_value()) << instr.name;
  EXPECT_EQ(sharding_of(m, "r"), canon("{replicated}"));
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

TEST(Propagation, RefineUnspecifiedDims) {
  // The annotation fixes dim 0 ([2,1,2]0,2,1,3 rep: tile i on {i, i+2}) and
  // leaves dim 1 open; the operand's dim-1 tiling ([1,2,2] rep: tile j on
  // {2j, 2j+1}) refines it: tile (i,j) = the device in both groups = i + 2j
  // -> {devices=[2,2]0,2,1,3}, which the user then takes.
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0)
  %copy = f32[8,8] copy(%p0), sharding={devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}
  %ann = f32[8,8] custom-call(%copy), custom_call_target="Sharding", backend_config="unspecified_dims=[1]", sharding={devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}
  ROOT %copy.1 = f32[8,8] copy(%ann)
)"));
  EXPECT_EQ(sharding_of(m, "ann"), canon("{devices=[2,2]0,2,1,3}"));
  EXPECT_EQ(sharding_of(m, "copy.1"), canon("{devices=[2,2]0,2,1,3}"));
}

TEST(Propagation, FullySpecifiedAnnotationIsNotRefined) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0)
  %copy = f32[8,8] copy(%p0), sharding={devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}
  %ann = f32[8,8] custom-call(%copy), custom_call_target="Sharding", sharding={devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}
  ROOT %copy.1 = f32[8,8] copy(%ann)
)"));
  EXPECT_EQ(sharding_of(m, "ann"), canon("{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}"));
}

TEST(Propagation, PropagateShardAs) {
  // %b is only tied to %a through the shard_as group: it ends with a's sharding.
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  %a = f32[8,8] negate(%p0), sharding={unknown shard_as 1}
  %p1 = f32[8,8] parameter(1)
  %b = f32[8,8] abs(%p1), sharding={unknown shard_as 1}
  ROOT %t = (f32[8,8], f32[8,8]) tuple(%a, %b)
)"));
  EXPECT_EQ(sharding_of(m, "a"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "b"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, PropagateShardLikeSharesCandidates) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[1,4]<=[4]}
  %a = f32[8,8] negate(%p0), sharding={unknown shard_like 2}
  %p1 = f32[8,8] parameter(1)
  %b = f32[8,8] abs(%p1), sharding={unknown shard_like 2}
  ROOT %t = (f32[8,8], f32[8,8]) tuple(%a, %b)
)"));
  EXPECT_EQ(sharding_of(m, "b"), canon("{devices=[1,4]<=[4]}"));
}

TEST(Propagation, ReshapeBackwardPassPartialMatch) {
  // The mirror of ReshapeForwardPassPartialMatch: the user's f32[7,2,2,16]
  // tiling [1,1,2,2] (device 2a+b) merges back into f32[14,32] dim 1 as 4
  // tiles (j = 2a+b); dim 0 gets nothing.
  Module m = propagate_text(module(R"(
  %p0 = f32[14,32] parameter(0)
  %r = f32[7,2,2,16] reshape(%p0)
  ROOT %copy = f32[7,2,2,16] copy(%r), sharding={devices=[1,1,2,2]<=[4]}
)"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[1,4]<=[4]}"));
}

// ---- Shardy annotations, custom-calls, sort, manual boundaries ------------

Instruction& named(Module& m, const std::string& name) {
  Computation& c = m.mutable_computation(m.entry_id());
  return c.mutable_instr(c.find(name));
}

TEST(Propagation, ShardyShardingInFrontendAttributesIsAnAnnotation) {
  // The parameter's xla.sdy.sharding [{"y"}, {"x"}] on mesh x=2, y=2 is
  // tile (i, j) = (y, x) -> device 2j + i = {devices=[2,2]0,2,1,3}; the
  // negate takes it. (frontend_attributes set directly: the reader may not
  // keep them yet.)
  Module m = parse_hlo(module(R"(
  %p0 = f32[4,4] parameter(0)
  ROOT %n = f32[4,4] negate(%p0)
)"),
                       "test.hlo");
  named(m, "p0").attrs.frontend_attributes =
      R"({xla.sdy.sharding="#sdy.sharding<@mesh, [{\"y\"}, {\"x\"}]>"})";
  PropagationOptions options;
  options.sdy_meshes = R"({mesh = #sdy.mesh<["x"=2, "y"=2]>})";
  propagate_shardings(m, options);
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[2,2]0,2,1,3}"));
  EXPECT_EQ(sharding_of(m, "n"), canon("{devices=[2,2]0,2,1,3}"));
}

TEST(Propagation, ModuleFlagsKeepUnannotatedParametersAndOutputReplicated) {
  // allow_spmd_sharding_propagation_to_parameters={false,true}: p0 may not
  // take the negate's [4,1] tiling, p1 may. _to_output={false}: the root
  // stays replicated although its operand is tiled.
  Module m = parse_hlo(
      R"(HloModule m, num_partitions=4, allow_spmd_sharding_propagation_to_parameters={false,true}, allow_spmd_sharding_propagation_to_output={false}

ENTRY %e {
  %p0 = f32[8,4] parameter(0)
  %p1 = f32[8,4] parameter(1)
  %a = f32[8,4] negate(%p0), sharding={devices=[4,1]<=[4]}
  %b = f32[8,4] negate(%p1), sharding={devices=[4,1]<=[4]}
  ROOT %s = f32[8,4] add(%a, %b)
}
)",
      "test.hlo");
  propagate_shardings(m);
  EXPECT_EQ(sharding_of(m, "p0"), canon("{replicated}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "s"), canon("{replicated}"));
  // The same module with the option off for all parameters: p1 too.
  Module n = parse_hlo(print_hlo(m), "printed.hlo");
  for (const char* name : {"p0", "p1", "s"}) named(n, name).sharding.reset();
  PropagationOptions options;
  options.propagate_to_parameters = false;
  propagate_shardings(n, options);
  EXPECT_EQ(sharding_of(n, "p1"), canon("{replicated}"));
}

TEST(Propagation, LeafShardingOnATupleAppliesToEveryLeaf) {
  // XLA reads one leaf sharding on a tuple-shaped value as that sharding on
  // each leaf: both tuple operands and the value read back take [4,1].
  Module m = propagate_text(module(R"(
  %p0 = f32[8,4] parameter(0)
  %p1 = f32[8,4] parameter(1)
  %t = (f32[8,4], f32[8,4]) tuple(%p0, %p1), sharding={devices=[4,1]<=[4]}
  %a = f32[8,4] get-tuple-element(%t), index=1
  ROOT %n = f32[8,4] negate(%a)
)"));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "n"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, ShardyMeshesComeFromTheModulesFrontendAttributes) {
  // A current JAX export, all in text: the mesh in the HloModule line, the
  // sharding on the parameter. [{"x"}, {}] on mesh x=4 tiles dim 0 four ways.
  Module m = parse_hlo(
      R"(HloModule m, num_partitions=4, frontend_attributes={xla.sdy.meshes="{mesh = #sdy.mesh<[\"x\"=4]>}"}

ENTRY %e {
  %p0 = f32[8,4] parameter(0), frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"x\"}, {}]>"}
  ROOT %n = f32[8,4] negate(%p0)
}
)",
      "test.hlo");
  propagate_shardings(m);
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "n"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, ShardyShardingConstraintActsLikeSharding) {
  // xla.sdy.ShardingConstraint with mhlo.sharding: its operand and users
  // take it, as with custom-call "Sharding".
  Module m = parse_hlo(module(R"(
  %p0 = f32[8,4] parameter(0)
  %c = f32[8,4] custom-call(%p0), custom_call_target="xla.sdy.ShardingConstraint"
  ROOT %n = f32[8,4] negate(%c)
)"),
                       "test.hlo");
  named(m, "c").attrs.frontend_attributes = R"({mhlo.sharding="{devices=[4,1]<=[4]}"})";
  propagate_shardings(m);
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "n"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, UnknownCustomCallPassesItsOperandsSharding) {
  Module m = propagate_text(module(R"(
  %p0 = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  %p1 = f32[8,4] parameter(1)
  %c = f32[8,4] custom-call(%p0, %p1), custom_call_target="my_kernel"
  ROOT %n = f32[8,4] negate(%c)
)"));
  EXPECT_EQ(sharding_of(m, "c"), canon("{devices=[4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "n"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, TopKCustomCallKeepsTheBatchTilingAndReplicatesTheSortedDim) {
  // Operand [2,2] tiled: TopK along dim 1 keeps the 2 batch tiles and makes
  // dim 1 replicated: {devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}.
  Module m = propagate_text(module(R"(
  %p0 = f32[8,16] parameter(0), sharding={devices=[2,2]<=[4]}
  %t = (f32[8,2], s32[8,2]) custom-call(%p0), custom_call_target="TopK"
  ROOT %v = f32[8,2] get-tuple-element(%t), index=0
)"));
  EXPECT_EQ(sharding_of(m, "v"), canon("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"));
}

TEST(Propagation, NothingCrossesAManualRegionBoundary) {
  // The manual result does not reach the full-shape side and the full-shape
  // operand's tiling does not reach the manual side.
  Module m = propagate_text(module(R"(
  %p0 = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  %s = f32[2,4] custom-call(%p0), custom_call_target="SPMDFullToShardShape", sharding={manual}
  %e = f32[2,4] exponential(%s)
  %f = f32[8,4] custom-call(%e), custom_call_target="SPMDShardToFullShape", sharding={devices=[4,1]<=[4]}
  ROOT %n = f32[8,4] negate(%f)
)"));
  EXPECT_EQ(sharding_of(m, "e"), "{manual}");
  EXPECT_EQ(sharding_of(m, "n"), canon("{devices=[4,1]<=[4]}"));
}

TEST(Propagation, CopyOfATupleKeepsItsLeafShardings) {
  // XLA copies whole tuples: each leaf keeps its own sharding through it.
  Module m = propagate_text(module(R"(
  %p0 = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  %p1 = f32[4] parameter(1), sharding={devices=[4]<=[4]}
  %t = (f32[8,4], f32[4]) tuple(%p0, %p1)
  %c = (f32[8,4], f32[4]) copy(%t)
  ROOT %g = f32[4] get-tuple-element(%c), index=1
)"));
  EXPECT_EQ(sharding_of(m, "c"), canon("{{devices=[4,1]<=[4]}, {devices=[4]<=[4]}}"));
  EXPECT_EQ(sharding_of(m, "g"), canon("{devices=[4]<=[4]}"));
}

TEST(Propagation, TileAssignmentOverASubsetOfTheDevicesIsAccepted) {
  // 8 devices, the annotation tiles over 4 of them ({0,1,4,5}): XLA accepts
  // it and so does propagation; the negate takes it unchanged. A device id
  // out of range is still an error.
  Module m = propagate_text(module(R"(
  %p0 = f32[4,4] parameter(0), sharding={devices=[2,2]0,1,4,5}
  ROOT %n = f32[4,4] negate(%p0)
)",
                                   8));
  EXPECT_EQ(sharding_of(m, "n"), canon("{devices=[2,2]0,1,4,5}"));
  EXPECT_THROW(propagate_text(module(R"(
  %p0 = f32[4,4] parameter(0), sharding={devices=[2,2]0,1,4,9}
  ROOT %n = f32[4,4] negate(%p0)
)",
                                     8)),
               UserError);
}

TEST(Propagation, DynamicSlicePassesUnslicedDimsThrough) {
  // [2,2] over devices 2*i0 + i1, dim 0 sliced to 1 row: dim 1 keeps its two
  // tiles, dim 0's become replication: tile j on devices {j, 2 + j}.
  Module m = propagate_text(module(R"(
  %p0 = f32[8,16] parameter(0), sharding={devices=[2,2]<=[4]}
  %i = s32[] parameter(1)
  %z = s32[] constant(0)
  ROOT %ds = f32[1,16] dynamic-slice(%p0, %i, %z), dynamic_slice_sizes={1,16}
)"));
  EXPECT_EQ(sharding_of(m, "ds"), canon("{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"));
}

}  // namespace
}  // namespace podsim::compiler::testing
