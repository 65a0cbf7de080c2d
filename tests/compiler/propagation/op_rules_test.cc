// Per-op rules of compiler/propagation/op_rules.cc that the XLA conformance
// check (docs/conformance/xla-propagation.md) found missing: shard barriers,
// cross-partition all-reduce, variadic reduce-window, gathers and scatters
// indexed by an iota, and convolution dims. One test per behaviour; every
// module is written here. Expected shardings are derived in comments: with a
// tile array T, tile (i, j, ...) lives on device T[i][j]...
#include "tests/compiler/propagation/test_util.h"

namespace podsim::compiler::testing {
namespace {

// ---- shard barriers --------------------------------------------------------

TEST(OpRules, ShardBarrierFromStopsOperandShardingReachingUsers) {
  Module m = propagate_text(module(R"(
  %p = f32[8,16] parameter(0), sharding={devices=[4,1]0,1,2,3}
  %b = f32[8,16] custom-call(%p), custom_call_target="ShardBarrierFrom", custom_call_has_side_effect=true
  ROOT %n = f32[8,16] negate(%b)
)"));
  // Nothing reaches the barrier or its user: both end replicated (not [4,1]).
  EXPECT_EQ(sharding_of(m, "b"), canon("{replicated}"));
  EXPECT_EQ(sharding_of(m, "n"), canon("{replicated}"));
}

TEST(OpRules, ShardBarrierFromStillPassesUserShardingToOperand) {
  Module m = propagate_text(module(R"(
  %p = f32[8,16] parameter(0)
  %c = f32[8,16] copy(%p)
  %b = f32[8,16] custom-call(%c), custom_call_target="ShardBarrierFrom", custom_call_has_side_effect=true
  ROOT %n = f32[8,16] negate(%b), sharding={devices=[1,4]3,2,1,0}
)"));
  EXPECT_EQ(sharding_of(m, "c"), canon("{devices=[1,4]3,2,1,0}"));
}

TEST(OpRules, ShardBarrierToStopsUserShardingReachingOperand) {
  Module m = propagate_text(module(R"(
  %p = f32[8,16] parameter(0)
  %c = f32[8,16] copy(%p)
  %b = f32[8,16] custom-call(%c), custom_call_target="ShardBarrierTo", custom_call_has_side_effect=true
  ROOT %n = f32[8,16] negate(%b), sharding={devices=[4,1]0,1,2,3}
)"));
  EXPECT_EQ(sharding_of(m, "b"), canon("{devices=[4,1]0,1,2,3}"));
  EXPECT_EQ(sharding_of(m, "c"), canon("{replicated}"));
}

TEST(OpRules, ShardBarrierToStillPassesOperandShardingToUsers) {
  Module m = propagate_text(module(R"(
  %p = f32[8,16] parameter(0), sharding={devices=[4,1]2,0,3,1}
  %b = f32[8,16] custom-call(%p), custom_call_target="ShardBarrierTo", custom_call_has_side_effect=true
  ROOT %n = f32[8,16] negate(%b)
)"));
  EXPECT_EQ(sharding_of(m, "n"), canon("{devices=[4,1]2,0,3,1}"));
}

// ---- all-reduce --------------------------------------------------------------

TEST(OpRules, CrossPartitionAllReduceCarriesNoSharding) {
  Module m = propagate_text(module(R"(
  %p = f32[8] parameter(0), sharding={devices=[4]0,1,2,3}
  %across = f32[8] all-reduce(%p), channel_id=1, replica_groups={}, to_apply=%add
  %within = f32[8] all-reduce(%p), replica_groups={}, to_apply=%add
  %q = f32[8] parameter(1)
  %qc = f32[8] copy(%q)
  %back = f32[8] all-reduce(%qc), channel_id=2, replica_groups={}, to_apply=%add
  %user = f32[8] negate(%back), sharding={devices=[4]3,2,1,0}
  ROOT %t = (f32[8], f32[8], f32[8]) tuple(%across, %within, %user)
)"));
  // With a channel id the all-reduce combines partitions: no global tiling
  // crosses it in either direction; without one it is elementwise.
  EXPECT_EQ(sharding_of(m, "across"), canon("{replicated}"));
  EXPECT_EQ(sharding_of(m, "within"), canon("{devices=[4]0,1,2,3}"));
  EXPECT_EQ(sharding_of(m, "qc"), canon("{replicated}"));
}

// ---- reduce-window -----------------------------------------------------------

const char* kVariadicReduceWindow = R"(HloModule t, num_partitions=2

%pair (a: f32[], b: s32[], c: f32[], d: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %b = s32[] parameter(1)
  %c = f32[] parameter(2)
  %d = s32[] parameter(3)
  %m = f32[] maximum(%a, %c)
  %n = s32[] add(%b, %d)
  ROOT %r = (f32[], s32[]) tuple(%m, %n)
}

ENTRY %e {
  %x = f32[8,6] parameter(0)
  %y = s32[8,6] parameter(1)
  %xc = f32[8,6] copy(%x)
  %yc = s32[8,6] copy(%y)
  %i0 = f32[] constant(0)
  %i1 = s32[] constant(0)
  ROOT %rw = (f32[4,6], s32[4,6]) reduce-window(%xc, %yc, %i0, %i1), window={size=2x1 stride=2x1}, to_apply=%pair, RW_SHARDING
}
)";

std::string variadic_reduce_window(const std::string& rw_sharding,
                                   const std::string& x_sharding = "",
                                   const std::string& y_sharding = "") {
  std::string text = kVariadicReduceWindow;
  auto put = [&](const std::string& key, const std::string& value) {
    text.replace(text.find(key), key.size(), value);
  };
  put(", RW_SHARDING", rw_sharding.empty() ? "" : ", sharding=" + rw_sharding);
  if (!x_sharding.empty())
    put("%x = f32[8,6] parameter(0)", "%x = f32[8,6] parameter(0), sharding=" + x_sharding);
  if (!y_sharding.empty())
    put("%y = s32[8,6] parameter(1)", "%y = s32[8,6] parameter(1), sharding=" + y_sharding);
  return text;
}

TEST(OpRules, VariadicReduceWindowInputTakesItsResultLeaf) {
  Module m = propagate_text(variadic_reduce_window("{{devices=[1,2]0,1}, {devices=[2,1]1,0}}"));
  // Input k is tiled like result leaf k (same dims, window along dim 0 only).
  EXPECT_EQ(sharding_of(m, "xc"), canon("{devices=[1,2]0,1}"));
  EXPECT_EQ(sharding_of(m, "yc"), canon("{devices=[2,1]1,0}"));
}

TEST(OpRules, VariadicReduceWindowResultLeafTakesItsInput) {
  Module m = propagate_text(variadic_reduce_window("", "{devices=[2,1]1,0}", "{devices=[1,2]0,1}"));
  EXPECT_EQ(sharding_of(m, "rw"), canon("{{devices=[2,1]1,0}, {devices=[1,2]0,1}}"));
}

// ---- gather / scatter indexed by an iota ------------------------------------

// Row gather out[i, :] = operand[iota[i], :] = operand[i, :]: operand dim 0
// (collapsed, size 4) walks in step with indices dim 0 and output dim 0.
const char* kRowGather = R"(
  %iota = s32[4,1] iota(), iota_dimension=0
  %g = f32[4,5] gather(%operand, %iota), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,5}GATHER_SHARDING
  ROOT %n = f32[4,5] negate(%g)
)";

std::string row_gather(const std::string& operand_line, const std::string& gather_sharding) {
  std::string body = kRowGather;
  const std::string key = "GATHER_SHARDING";
  body.replace(body.find(key), key.size(),
               gather_sharding.empty() ? "" : ", sharding=" + gather_sharding);
  return module(operand_line + body);
}

TEST(OpRules, GatherByIotaTakesOperandTilingOfParallelDim) {
  Module m = propagate_text(
      row_gather("  %operand = f32[4,5] parameter(0), sharding={devices=[4,1]3,1,0,2}\n", ""));
  // Operand row tile i (device T[i]) holds exactly the rows output tile i
  // gathers, so the output keeps T; before, the collapsed dim replicated it.
  EXPECT_EQ(sharding_of(m, "g"), canon("{devices=[4,1]3,1,0,2}"));
}

TEST(OpRules, GatherByIotaGivesOutputTilingToOperandAndIndices) {
  Module m = propagate_text(row_gather(
      "  %p = f32[4,5] parameter(0)\n  %operand = f32[4,5] copy(%p)\n", "{devices=[4,1]3,1,0,2}"));
  EXPECT_EQ(sharding_of(m, "operand"), canon("{devices=[4,1]3,1,0,2}"));
  EXPECT_EQ(sharding_of(m, "iota"), canon("{devices=[4,1]3,1,0,2}"));
}

TEST(OpRules, GatherByConcatenatedIotasMapsEachComponentToItsIndicesDim) {
  // Component 0 counts along indices dim 1 (size 3) into operand dim 0;
  // component 1 along indices dim 0 (size 4) into operand dim 1. Output
  // batch dims 0, 1 are indices dims 0, 1. Operand tile (i, j) is device
  // 2i + j; output dim 0 follows operand dim 1 (j), output dim 1 operand dim
  // 0 (i): output tile (j, i) = 2i + j -> rows j=0: 0,2,4; j=1: 1,3,5.
  Module m = propagate_text(module(R"(
  %operand = f32[3,4,2] parameter(0), sharding={devices=[3,2,1]0,1,2,3,4,5}
  %i0 = s32[4,3,1] iota(), iota_dimension=1
  %i1 = s32[4,3,1] iota(), iota_dimension=0
  %idx = s32[4,3,2] concatenate(%i0, %i1), dimensions={2}
  ROOT %g = f32[4,3,2] gather(%operand, %idx), offset_dims={2}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=2, slice_sizes={1,1,2}
)",
                                   6));
  EXPECT_EQ(sharding_of(m, "g"), canon("{devices=[2,3,1]0,2,4,1,3,5}"));
}

TEST(OpRules, GatherByIotaOfAnotherSizeIsNotParallel) {
  // The iota counts 0..3 over an operand dim of 8 rows: output tile i reads
  // rows the operand tiling puts elsewhere, so nothing is carried.
  Module m = propagate_text(module(R"(
  %operand = f32[8,5] parameter(0), sharding={devices=[4,1]0,1,2,3}
  %iota = s32[4,1] iota(), iota_dimension=0
  ROOT %g = f32[4,5] gather(%operand, %iota), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,5}
)"));
  EXPECT_EQ(sharding_of(m, "g"), canon("{replicated}"));
}

// Row scatter-add operand[iota[i], :] += updates[i, :].
const char* kRowScatter = R"(
  %iota = s32[4,1] iota(), iota_dimension=0IOTA_SHARDING
  %s = f32[4,5] scatter(%operand, %iota, %updates), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%addSCATTER_SHARDING
  ROOT %n = f32[4,5] negate(%s)
)";

std::string row_scatter(const std::string& inputs, const std::string& iota_sharding,
                        const std::string& scatter_sharding) {
  std::string body = kRowScatter;
  auto put = [&](const std::string& key, const std::string& value) {
    body.replace(body.find(key), key.size(), value.empty() ? "" : ", sharding=" + value);
  };
  put("IOTA_SHARDING", iota_sharding);
  put("SCATTER_SHARDING", scatter_sharding);
  return module(inputs + body);
}

TEST(OpRules, ScatterByIotaTakesIndicesTilingOfParallelDim) {
  Module m = propagate_text(
      row_scatter("  %operand = f32[4,5] parameter(0)\n  %updates = f32[4,5] parameter(1)\n",
                  "{devices=[4,1]3,1,0,2}", ""));
  EXPECT_EQ(sharding_of(m, "s"), canon("{devices=[4,1]3,1,0,2}"));
}

TEST(OpRules, ScatterByIotaGivesResultTilingToOperandUpdatesAndIndices) {
  Module m =
      propagate_text(row_scatter("  %p0 = f32[4,5] parameter(0)\n  %operand = f32[4,5] copy(%p0)\n "
                                 " %p1 = f32[4,5] parameter(1)\n"
                                 "  %updates = f32[4,5] copy(%p1)\n",
                                 "", "{devices=[4,1]3,1,0,2}"));
  // Update row i lands in operand row i: all three tile dim 0 alike.
  EXPECT_EQ(sharding_of(m, "operand"), canon("{devices=[4,1]3,1,0,2}"));
  EXPECT_EQ(sharding_of(m, "updates"), canon("{devices=[4,1]3,1,0,2}"));
  EXPECT_EQ(sharding_of(m, "iota"), canon("{devices=[4,1]3,1,0,2}"));
}

TEST(OpRules, VariadicScatterByIotaTilesEveryInputAndUpdateAlike) {
  // Two inputs, the indices, two updates (operands 0, 1 | 2 | 3, 4): the
  // iota's tiling reaches both result leaves, and from there both inputs
  // and both updates, along the parallel dim 0.
  Module m = propagate_text(R"(HloModule t, num_partitions=4

%add2 (a: f32[], b: f32[], c: f32[], d: f32[]) -> (f32[], f32[]) {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = f32[] parameter(2)
  %d = f32[] parameter(3)
  %x = f32[] add(%a, %c)
  %y = f32[] add(%b, %d)
  ROOT %r = (f32[], f32[]) tuple(%x, %y)
}

ENTRY %e {
  %p0 = f32[4,5] parameter(0)
  %p1 = f32[4,5] parameter(1)
  %in0 = f32[4,5] copy(%p0)
  %in1 = f32[4,5] copy(%p1)
  %iota = s32[4,1] iota(), iota_dimension=0, sharding={devices=[4,1]3,1,0,2}
  %p2 = f32[4,5] parameter(2)
  %p3 = f32[4,5] parameter(3)
  %up0 = f32[4,5] copy(%p2)
  %up1 = f32[4,5] copy(%p3)
  ROOT %s = (f32[4,5], f32[4,5]) scatter(%in0, %in1, %iota, %up0, %up1), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add2
}
)");
  EXPECT_EQ(sharding_of(m, "s"), canon("{{devices=[4,1]3,1,0,2}, {devices=[4,1]3,1,0,2}}"));
  for (const char* name : {"in0", "in1", "up0", "up1"})
    EXPECT_EQ(sharding_of(m, name), canon("{devices=[4,1]3,1,0,2}")) << name;
}

TEST(OpRules, VariadicScatterResultLeafFollowsItsOwnInput) {
  // Input 0 tiled 4 ways, input 1 2 ways (replicated in pairs): each result
  // leaf keeps its own input's tiling (the indices say nothing here).
  Module m = propagate_text(R"(HloModule t, num_partitions=4

%add2 (a: f32[], b: f32[], c: f32[], d: f32[]) -> (f32[], f32[]) {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = f32[] parameter(2)
  %d = f32[] parameter(3)
  %x = f32[] add(%a, %c)
  %y = f32[] add(%b, %d)
  ROOT %r = (f32[], f32[]) tuple(%x, %y)
}

ENTRY %e {
  %in0 = f32[6,8] parameter(0), sharding={devices=[1,4]0,1,2,3}
  %in1 = f32[6,8] parameter(1), sharding={devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}
  %idx = s32[2] parameter(2), sharding={replicated}
  %up0 = f32[2,8] parameter(3), sharding={replicated}
  %up1 = f32[2,8] parameter(4), sharding={replicated}
  ROOT %s = (f32[6,8], f32[6,8]) scatter(%in0, %in1, %idx, %up0, %up1), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add2
}
)");
  EXPECT_EQ(sharding_of(m, "s"),
            canon("{{devices=[1,4]0,1,2,3}, {devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}}"));
}

TEST(OpRules, VariadicScatterIndicesTileOnlyLeavesWithoutTheirOwnTiling) {
  // Leaf 0 has nothing of its own and takes the iota's row tiling; leaf 1's
  // input is tiled 2 ways (rows 0-1 on {0,1}, rows 2-3 on {2,3}) and keeps
  // that, although the indices' 4-way tiling (row r on device r) would
  // refine it.
  Module m = propagate_text(R"(HloModule t, num_partitions=4

%add2 (a: f32[], b: f32[], c: f32[], d: f32[]) -> (f32[], f32[]) {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = f32[] parameter(2)
  %d = f32[] parameter(3)
  %x = f32[] add(%a, %c)
  %y = f32[] add(%b, %d)
  ROOT %r = (f32[], f32[]) tuple(%x, %y)
}

ENTRY %e {
  %in0 = f32[4,5] parameter(0)
  %in1 = f32[4,5] parameter(1), sharding={devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}
  %iota = s32[4,1] iota(), iota_dimension=0, sharding={devices=[4,1]0,1,2,3}
  %up0 = f32[4,5] parameter(2)
  %up1 = f32[4,5] parameter(3)
  ROOT %s = (f32[4,5], f32[4,5]) scatter(%in0, %in1, %iota, %up0, %up1), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add2
}
)");
  EXPECT_EQ(sharding_of(m, "s"),
            canon("{{devices=[4,1]0,1,2,3}, {devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}}"));
}

TEST(OpRules, TupleShapedCustomCallWithManualOperandIsManual) {
  Module m = propagate_text(module(R"(
  %p0 = f32[6,3] parameter(0), sharding={manual}
  %c0 = f32[6,3] copy(%p0)
  %p1 = f32[6,3] parameter(1)
  %cc = (f32[], f32[6,3]) custom-call(%c0, %p1), custom_call_target="opaque_op"
  ROOT %out = (f32[], f32[6,3]) copy(%cc)
)"));
  EXPECT_EQ(sharding_of(m, "cc"), canon("{{manual}, {manual}}"));
}

// ---- convolution -------------------------------------------------------------

TEST(OpRules, ConvolutionKernelOutputFeaturesTileResultFeatures) {
  // A 3x3 window (not an einsum): the kernel's o dim is still the result's
  // feature dim, both ways.
  Module m = propagate_text(module(R"(
  %lhs = f32[8,10,10,3] parameter(0)
  %rhs = f32[3,3,3,16] parameter(1), sharding={devices=[1,1,1,4]2,3,0,1}
  %conv = f32[8,10,10,16] convolution(%lhs, %rhs), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %q = f32[3,3,3,16] parameter(2)
  %qc = f32[3,3,3,16] copy(%q)
  %back = f32[8,10,10,16] convolution(%lhs, %qc), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, sharding={devices=[1,1,1,4]1,0,3,2}
  ROOT %t = (f32[8,10,10,16], f32[8,10,10,16]) tuple(%conv, %back)
)"));
  EXPECT_EQ(sharding_of(m, "conv"), canon("{devices=[1,1,1,4]2,3,0,1}"));
  EXPECT_EQ(sharding_of(m, "qc"), canon("{devices=[1,1,1,4]1,0,3,2}"));
}

TEST(OpRules, GroupedConvolutionWithTiledInputFeaturesKeepsBatchTiling) {
  // Depthwise (4 groups), input tiled [2,2,1,1] over batch and features: the
  // result keeps the batch tiling; tile i of batch holds devices {2i, 2i+1}.
  Module m = propagate_text(module(R"(
  %lhs = f32[8,4,6,6] parameter(0), sharding={devices=[2,2,1,1]0,1,2,3}
  %rhs = f32[4,1,3,3] parameter(1), sharding={replicated}
  ROOT %conv = f32[8,4,4,4] convolution(%lhs, %rhs), window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=4
)"));
  EXPECT_EQ(sharding_of(m, "conv"), canon("{devices=[2,1,1,1,2]0,1,2,3 last_tile_dim_replicate}"));
}

TEST(OpRules, ConvolutionWindowOverWholeInputLeavesInputSpatialUntiled) {
  // A 5x5 window over a 5x5 input contracts the spatial dims (output 1x1):
  // a tiling of the size-1 output dim says nothing about the input's.
  Module m = propagate_text(module(R"(
  %p = f32[16,5,5,8] parameter(0)
  %lhs = f32[16,5,5,8] copy(%p)
  %rhs = f32[5,5,8,32] parameter(1)
  ROOT %conv = f32[16,1,1,32] convolution(%lhs, %rhs), window={size=5x5}, dim_labels=b01f_01io->b01f, sharding={devices=[1,2,1,1]0,1}
)",
                                   2));
  EXPECT_EQ(sharding_of(m, "lhs"), canon("{replicated}"));
}

TEST(OpRules, ConvolutionBatchLikeSpatialDimTilesInputKernelAndResultAlike) {
  // Spatial dim of size 4 with lhs dilation 4, window 4, stride 3: output
  // position j reads input j and kernel j only ((4-1)*4+1 = 13 dilated
  // elements, (13-4)/3+1 = 4 outputs), an einsum batch dim. The input's
  // tiling of it reaches the result and, backwards, the kernel.
  Module m = propagate_text(module(R"(
  %lhs = f32[4,6,8] parameter(0), sharding={devices=[2,1,1]1,0}
  %q = f32[4,10,8] parameter(1)
  %rhs = f32[4,10,8] copy(%q)
  ROOT %conv = f32[4,6,10] convolution(%lhs, %rhs), window={size=4 stride=3 lhs_dilate=4}, dim_labels=0bf_0oi->0bf
)",
                                   2));
  EXPECT_EQ(sharding_of(m, "conv"), canon("{devices=[2,1,1]1,0}"));
  EXPECT_EQ(sharding_of(m, "rhs"), canon("{devices=[2,1,1]1,0}"));
}

TEST(OpRules, ConvolutionKernelFreeSpatialDimTilesResult) {
  // Size-1 input spatial dim, window 5 padded 4 on both sides and reversed:
  // output position j is kernel position j (an outer product along that
  // dim). The kernel's tiling of it and of its output features reaches the
  // result: tile (j, o) of the kernel [2,1,2] is device 2j + o, the result's
  // (b, j, o) tile likewise.
  Module m = propagate_text(module(R"(
  %lhs = f32[6,1,3] parameter(0)
  %rhs = f32[5,3,8] parameter(1), sharding={devices=[2,1,2]0,1,2,3}
  ROOT %conv = f32[6,5,8] convolution(%lhs, %rhs), window={size=5 pad=4_4 rhs_reversal=1}, dim_labels=b0f_0io->b0f
)"));
  EXPECT_EQ(sharding_of(m, "conv"), canon("{devices=[1,2,2]0,1,2,3}"));
}

TEST(OpRules, ConvolutionAsEinsumTakesTheLargerOperandFirst) {
  // Both operands fully tiled 2 ways along different result dims: the
  // kernel (5*3*64 elements) outweighs the input (2*1*3) and wins, as the
  // larger operand of a dot does.
  Module m = propagate_text(module(R"(
  %lhs = f32[2,1,3] parameter(0), sharding={devices=[2,1,1]0,1}
  %rhs = f32[5,3,64] parameter(1), sharding={devices=[1,1,2]0,1}
  ROOT %conv = f32[2,5,64] convolution(%lhs, %rhs), window={size=5 pad=4_4 rhs_reversal=1}, dim_labels=b0f_0io->b0f
)",
                                   2));
  EXPECT_EQ(sharding_of(m, "conv"), canon("{devices=[1,1,2]0,1}"));
}

// ---- options -----------------------------------------------------------------

TEST(OpRules, WithoutPropagationToParametersUsersStillShardTheirCopies) {
  // XLA's default: entry parameters keep no sharding, their copies are
  // sharded from the dot's result like any value ([1,2,2] on the result ->
  // lhs [1,2,1] plus 2-way replication, tile j holding devices {2j, 2j+1}).
  PropagationOptions options;
  options.propagate_to_parameters = false;
  Module m = propagate_text(module(R"(
  %p0 = f32[8,256,128] parameter(0)
  %p1 = f32[8,128,512] parameter(1)
  %l = f32[8,256,128] copy(%p0)
  %r = f32[8,128,512] copy(%p1)
  %other = f32[8,256,128] copy(%p0), sharding={devices=[1,4,1]0,1,2,3}
  %d = f32[8,256,512] dot(%l, %r), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  %out = f32[8,256,512] copy(%d), sharding={devices=[1,2,2]0,1,2,3}
  ROOT %t = (f32[8,256,512], f32[8,256,128]) tuple(%out, %other)
)"),
                            options);
  EXPECT_EQ(sharding_of(m, "p0"), canon("{replicated}"));
  EXPECT_EQ(sharding_of(m, "l"), canon("{devices=[1,2,1,2]0,1,2,3 last_tile_dim_replicate}"));
}

// ---- fused attention -----------------------------------------------------

// Only B and N of q, k, v [B, L, N, D] carry to o (same layout) and lse
// [B, N, L]; the L split of q becomes replication.
TEST(OpRules, FlashAttentionCarriesBatchAndHeadTilingOnly) {
  Module m = propagate_text(module(R"(
  %q = f32[4,8,2,4] parameter(0), sharding={devices=[2,2,1,1]<=[4]}
  %k = f32[4,8,2,4] parameter(1)
  %v = f32[4,8,2,4] parameter(2)
  %f = (f32[4,8,2,4], f32[4,2,8]) custom-call(%q, %k, %v), custom_call_target="podsim.flash_attention", backend_config={"causal":true}
  %o = f32[4,8,2,4] get-tuple-element(%f), index=0
  %l = f32[4,2,8] get-tuple-element(%f), index=1
  ROOT %r = (f32[4,8,2,4], f32[4,2,8]) tuple(%o, %l)
)"));
  // B tiled 2 ways, the L tiles (2) go to replication.
  EXPECT_EQ(sharding_of(m, "o"), canon("{devices=[2,1,1,1,2]<=[4] last_tile_dim_replicate}"));
  EXPECT_EQ(sharding_of(m, "l"), canon("{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}"));
}

TEST(OpRules, FlashAttentionOperandsTakeTheOutputsHeadTiling) {
  Module m = propagate_text(module(R"(
  %q = f32[4,8,4,4] parameter(0)
  %cq = f32[4,8,4,4] copy(%q)
  %f = (f32[4,8,4,4], f32[4,4,8]) custom-call(%cq, %cq, %cq), custom_call_target="podsim.flash_attention", backend_config={"causal":false}
  %o = f32[4,8,4,4] get-tuple-element(%f), index=0
  %l = f32[4,4,8] get-tuple-element(%f), index=1
  ROOT %n = f32[4,8,4,4] negate(%o), sharding={devices=[1,1,4,1]<=[4]}
)"));
  // o's N tiling reaches the operand (same layout) and lse's dim 1.
  EXPECT_EQ(sharding_of(m, "cq"), canon("{devices=[1,1,4,1]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "l"), canon("{devices=[1,4,1]<=[4]}"));
}

}  // namespace
}  // namespace podsim::compiler::testing

// ---- size-1 convolution dims, non-SPMD rules -------------------------------------

namespace podsim::compiler::testing {
namespace {

TEST(OpRules, ConvolutionSize1SpatialDimsAreEinsumDims) {
  // Input, window and output of size 1 on both spatial dims; the input
  // (64*16 elements) outweighs the kernel (8*16) and goes first. Not
  // reversed, a size-1 dim is a batch dim (window = input = lhs dilation 1):
  // both operands tile it, the input's tiling of spatial dim 0 wins -> result
  // dim 1. Reversed (rhs_reversal), it is the kernel-free kind (input 1,
  // window = output, padding size-1 = 0): the input's tiling of it carries
  // nothing, the kernel's tiling of spatial dim 1 reaches result dim 2.
  auto conv = [](const std::string& reversal) {
    return module(R"(
  %lhs = f32[64,1,1,16] parameter(0), sharding={devices=[1,2,1,1]0,1}
  %rhs = f32[1,1,8,16] parameter(1), sharding={devices=[1,2,1,1]0,1}
  ROOT %conv = f32[64,1,1,8] convolution(%lhs, %rhs), window={size=1x1)" +
                      reversal + R"(}, dim_labels=b01f_01oi->b01f
)",
                  2);
  };
  EXPECT_EQ(sharding_of(propagate_text(conv("")), "conv"), canon("{devices=[1,2,1,1]0,1}"));
  EXPECT_EQ(sharding_of(propagate_text(conv(" rhs_reversal=1x1")), "conv"),
            canon("{devices=[1,1,2,1]0,1}"));
}

PropagationOptions non_spmd() {
  PropagationOptions o;
  o.is_spmd = false;
  return o;
}

TEST(OpRules, NonSpmdReduceOverATiledDimIsReplicated) {
  // SPMD: reducing dim 0 of [2,2] leaves dim 1's tile j on {j, j+2}
  // (partial replication). Non-SPMD has no partial result: replicated.
  const std::string text = module(R"(
  %p0 = f32[8,8] parameter(0), sharding={devices=[2,2]0,1,2,3}
  %zero = f32[] constant(0)
  ROOT %r = f32[8] reduce(%p0, %zero), dimensions={0}, to_apply=%add
)");
  EXPECT_EQ(sharding_of(propagate_text(text), "r"),
            canon("{devices=[2,2]0,2,1,3 last_tile_dim_replicate}"));
  EXPECT_EQ(sharding_of(propagate_text(text, non_spmd()), "r"), canon("{replicated}"));
}

TEST(OpRules, NonSpmdConcatOperandTakesTheTilesHoldingItsRows) {
  // Result rows 16 over 4 tiles of ceil(16/4) = 4 rows. Operand 0 holds rows
  // [0,4): tile 0 only, device 0 -> a single-device placement, which does not
  // spread (replicated). Operand 1 holds rows [4,16): tiles 1..3 -> [3,1] on
  // devices 1,2,3. SPMD: both take the result's [4,1].
  const std::string text = module(R"(
  %p0 = f32[4,8] parameter(0)
  %p1 = f32[12,8] parameter(1)
  %c0 = f32[4,8] copy(%p0)
  %c1 = f32[12,8] copy(%p1)
  ROOT %c = f32[16,8] concatenate(%c0, %c1), dimensions={0}, sharding={devices=[4,1]<=[4]}
)");
  Module m = propagate_text(text, non_spmd());
  EXPECT_EQ(sharding_of(m, "c0"), canon("{replicated}"));
  EXPECT_EQ(sharding_of(m, "c1"), canon("{devices=[3,1]1,2,3}"));
  EXPECT_EQ(sharding_of(propagate_text(text), "c1"), canon("{devices=[4,1]<=[4]}"));
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

std::string sort_module(const std::string& shape, const std::string& sharding) {
  return "HloModule t, num_partitions=4\n\n%lt (a: f32[], b: f32[], c: s32[], d: s32[]) -> pred[] "
         "{\n"
         "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  %c = s32[] parameter(2)\n"
         "  %d = s32[] parameter(3)\n  ROOT %r = pred[] compare(%a, %b), direction=LT\n}\n\n"
         "ENTRY %e {\n  %p = f32[" +
         shape + "] parameter(0)\n  %n = f32[" + shape + "] negate(%p), sharding=" + sharding +
         "\n  %i = s32[" + shape +
         "] iota(), iota_dimension=" + (shape.find(',') == std::string::npos ? "0" : "1") +
         "\n  ROOT %s = (f32[" + shape + "], s32[" + shape + "]) sort(%n, %i), dimensions={" +
         (shape.find(',') == std::string::npos ? "0" : "1") + "}, to_apply=%lt\n}\n";
}

TEST(OpRules, SortKeepsATilingOfTheSortedDimThatCanMove) {
  // [1,4] tiles the sorted dim 1 of f32[16,32]; dim 0 (16 rows) is untiled,
  // so the partitioner can move the 4 tiles there: the sort and, backwards,
  // the iota keep [1,4] (XLA's IsSortOperandShardingMovable).
  Module m = propagate_text(sort_module("16,32", "{devices=[1,4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "s"), canon("{{devices=[1,4]<=[4]}, {devices=[1,4]<=[4]}}"));
  EXPECT_EQ(sharding_of(m, "i"), canon("{devices=[1,4]<=[4]}"));
  // Rank 1: nowhere to move the tiles; the sorted dim is replicated.
  Module r1 = propagate_text(sort_module("32", "{devices=[4]<=[4]}"));
  EXPECT_EQ(sharding_of(r1, "s"), canon("{{replicated}, {replicated}}"));
  // Every other dim tiled: the sorted dim's 2 tiles become replication,
  // device 2i+j keeps row tile i -> [2,1,2] <=[4] last_tile_dim_replicate.
  Module full = propagate_text(sort_module("16,32", "{devices=[2,2]<=[4]}"));
  EXPECT_EQ(sharding_of(full, "i"), canon("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"));
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

TEST(OpRules, ScatterIndicesMergeTheParallelDimWithTheUpdatesIndexPassThrough) {
  // Index component 0 is an iota along indices dim 1, so operand dim 0 is
  // parallel to indices dim 1 and update dim 0. The updates [2,2,1] tile
  // update dims 0 and 1, the scatter dims = indices dims 1 and 2: the
  // indices take [1,2,2] (device 2i+j holds indices tile (i,j)). Before,
  // the result's parallel tiling alone gave [1,2,1] with dim 2 replicated.
  Module m = propagate_text(R"(HloModule t, num_partitions=4

%sum (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}

ENTRY %e {
  %p0 = s32[8,4,2] parameter(0)
  %p1 = s32[1,8,4] parameter(1)
  %p2 = s32[8,4,2] parameter(2)
  %operand = s32[8,4,2] copy(%p0)
  %idx = s32[1,8,4] copy(%p1)
  %iota = s32[1,8,4] iota(), iota_dimension=1
  %indices = s32[2,8,4] concatenate(%iota, %idx), dimensions={0}
  %update = s32[8,4,2] copy(%p2), sharding={devices=[2,2,1]<=[4]}
  ROOT %scatter = s32[8,4,2] scatter(%operand, %indices, %update), to_apply=%sum, update_window_dims={2}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=0
}
)");
  EXPECT_EQ(sharding_of(m, "indices"), canon("{devices=[1,2,2]<=[4]}"));
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

TEST(OpRules, AsyncStepsOfManualOperandsAreManual) {
  // call-start of two manual operands: its context tuple ((operands),
  // result, u32 state), 4 leaves, is manual; call-done of a manual context
  // is manual.
  Module m = propagate_text(R"(HloModule t, num_partitions=2

%callee (a: s32[8], b: s32[8]) -> s32[8] {
  %a = s32[8] parameter(0)
  %b = s32[8] parameter(1)
  ROOT %s = s32[8] add(%a, %b)
}

ENTRY %e {
  %p0 = s32[8] parameter(0), sharding={manual}
  %p1 = s32[8] parameter(1), sharding={manual}
  %start = ((s32[8], s32[8]), s32[8], u32[]) call-start(%p0, %p1), to_apply=%callee
  ROOT %done = s32[8] call-done(%start)
}
)");
  EXPECT_EQ(sharding_of(m, "start"), canon("{{manual}, {manual}, {manual}, {manual}}"));
  EXPECT_EQ(sharding_of(m, "done"), canon("{manual}"));
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

TEST(OpRules, IndexScalarsInAPartiallyManualRegionTakeTheManualSubgroup) {
  // The dynamic-slice is manual over 2 groups (tile dim 2, manual) and
  // replicated within each (tile dim 3): its index scalar z, which no rule
  // shards, is replicated within each manual group: tile dims [2,2] with
  // the same device order, {manual, replicated}.
  Module m = propagate_text(module(R"(
  %p = f32[8,4] parameter(0), sharding={devices=[1,1,2,2]<=[4] last_tile_dims={manual, replicated}}
  %z = s32[] constant(0)
  ROOT %ds = f32[2,4] dynamic-slice(%p, %z, %z), dynamic_slice_sizes={2,4}, sharding={devices=[1,1,2,2]<=[4] last_tile_dims={manual, replicated}}
)"));
  EXPECT_EQ(sharding_of(m, "z"), canon("{devices=[2,2]<=[4] last_tile_dims={manual, replicated}}"));
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

TEST(OpRules, ManualConversionOpenDimsAreRefinedAcrossTheConversion) {
  // a tiles dim 1 of the automatic side [8,4] (tile j on devices {j, j+2});
  // the annotation s tiles dim 0 (tile i on {2i, 2i+1}) with dim 1 open;
  // the conversion to the manual side (dim 0: 8 -> 4) makes dim 0's 2 tiles
  // the manual subgroup (m = device / 2) and leaves dim 1 open.
  Module m = propagate_text(module(R"(
  %p = f32[8,4] parameter(0)
  %a = f32[8,4] copy(%p), sharding={devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}
  %s = f32[8,4] custom-call(%a), custom_call_target="Sharding", sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}, backend_config="unspecified_dims=[1]"
  %to = f32[4,4] custom-call(%s), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={replicated, manual}}, backend_config="unspecified_dims=[1]"
  ROOT %n = f32[4,4] negate(%to), sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={replicated, manual}}
)"));
  // %s: [2,1,2] merged with a's dim-1 tiling -> [2,2] over device 2i+j.
  EXPECT_EQ(sharding_of(m, "s"), canon("{devices=[2,2]<=[4]}"));
  // %to: dim 0's 2 tiles (i) become the manual subgroup: tile (0,j,m) on
  // device 2m+j.
  EXPECT_EQ(sharding_of(m, "to"), canon("{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dims={manual}}"));
}

}  // namespace
}  // namespace podsim::compiler::testing
