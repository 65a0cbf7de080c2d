// Field-level checks of parsed fixtures: the attributes of each op family
// land in the right Attributes fields (not only that text round-trips).
// Expected values are read off the fixture text by hand.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/ir/trip_count.h"

namespace podsim::compiler {
namespace {

Module load(const std::string& stem) {
  return parse_hlo_file(std::string(PODSIM_SOURCE_DIR "/tests/fixtures/hlo/") + stem + ".hlo");
}

const Instruction& find(const Module& m, const std::string& name) {
  for (const auto& comp : m.computations()) {
    InstrId id = comp.find(name);
    if (id != kNoId) return comp.instr(id);
  }
  ADD_FAILURE() << "no instruction " << name;
  static Instruction missing;
  return missing;
}

std::string called_name(const Module& m, const Instruction& in, int i) {
  return m.computation(in.called.at(static_cast<size_t>(i))).name();
}

using Dims = std::vector<int64_t>;

TEST(ParseFields, UnaryOpsShapesOperandsAndLocation) {
  Module m = load("unary_ops");
  EXPECT_EQ(m.name(), "jit_unary_ops");
  const Computation& e = m.entry();
  EXPECT_EQ(e.name(), "main.24");
  const Instruction& conv = find(m, "convert.22");
  EXPECT_EQ(conv.opcode, Opcode::kConvert);
  EXPECT_EQ(conv.shape, Shape(DType::kS32, {4}));
  EXPECT_EQ(e.instr(conv.operand(0)).name, "add.20");
  EXPECT_EQ(find(m, "exponential-minus-one.5").opcode, Opcode::kExpm1);
  EXPECT_EQ(find(m, "log-plus-one.7").opcode, Opcode::kLog1p);
  EXPECT_EQ(find(m, "not.21").shape.dtype(), DType::kPred);
  // "%negate.3" is on line 6 (header, blank, comment, ENTRY, Arg_0.1), column 3.
  EXPECT_EQ(find(m, "negate.3").location.line, 6);
  EXPECT_EQ(find(m, "negate.3").location.column, 3);
  EXPECT_EQ(e.root_instr().name, "tuple.23");
  EXPECT_EQ(e.root_instr().shape.tuple_shapes().size(), 3u);
}

TEST(ParseFields, BinaryCompareSelectClamp) {
  Module m = load("binary_ops");
  EXPECT_EQ(find(m, "compare.9").attrs.comparison, ComparisonDirection::kLt);
  EXPECT_EQ(find(m, "compare.9").attrs.comparison_type, "");
  EXPECT_EQ(find(m, "compare.10").attrs.comparison, ComparisonDirection::kGe);
  EXPECT_EQ(find(m, "compare.10").attrs.comparison_type, "TOTALORDER");
  EXPECT_EQ(find(m, "compare.18").attrs.comparison, ComparisonDirection::kNe);
  EXPECT_EQ(find(m, "compare.18").attrs.comparison_type, "SIGNED");
  const Instruction& clamp = find(m, "clamp.15");
  EXPECT_EQ(clamp.opcode, Opcode::kClamp);
  ASSERT_EQ(clamp.operand_count(), 3);
  EXPECT_EQ(m.entry().instr(clamp.operand(0)).name, "lo");
  EXPECT_EQ(find(m, "select.14").opcode, Opcode::kSelect);
  EXPECT_EQ(find(m, "power.8").opcode, Opcode::kPower);
  EXPECT_EQ(find(m, "remainder.5").opcode, Opcode::kRemainder);
  EXPECT_EQ(find(m, "xor.17").shape.dtype(), DType::kS32);
  // Parameters sorted by number: x, y, i, j.
  auto params = m.entry().parameters();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(m.entry().instr(params[2]).name, "i");
}

TEST(ParseFields, ConstantValues) {
  Module m = load("constants");
  EXPECT_EQ(find(m, "c_scalar").attrs.literal->scalar_value(), -2.5);
  // 3e10 is not an f32 (ulp there is 2^(34-23) = 2048 and 3e10 / 2048 is not
  // an integer): the parsed value is rounded to the nearest f32.
  EXPECT_EQ(find(m, "c_vector").attrs.literal->values(),
            (std::vector<double>{1, 2.25, static_cast<double>(3e10f)}));
  EXPECT_NE(static_cast<double>(3e10f), 3e10);
  const Literal& mat = *find(m, "c_matrix").attrs.literal;
  EXPECT_EQ(mat.at({1, 1}), -4);
  EXPECT_EQ(mat.at({0, 1}), 2);
  EXPECT_EQ(find(m, "c_pred").attrs.literal->values(), (std::vector<double>{1, 0}));
  const auto& special = find(m, "c_special").attrs.literal->values();
  EXPECT_TRUE(std::isinf(special[0]) && special[0] > 0);
  EXPECT_TRUE(std::isinf(special[1]) && special[1] < 0);
  EXPECT_TRUE(std::isnan(special[2]));
  // 0.1 is stored rounded to f32: 0.100000001490116119384765625.
  EXPECT_EQ(special[3], static_cast<double>(0.1f));
  EXPECT_EQ(find(m, "c_bf16").attrs.literal->values(), (std::vector<double>{1.5, -0.375}));
  EXPECT_EQ(find(m, "c_s8").attrs.literal->values(), (std::vector<double>{-128, 0, 127}));
  // The literal's shape is the instruction's shape.
  EXPECT_EQ(find(m, "c_matrix").attrs.literal->shape(), Shape(DType::kS32, {2, 2}));
}

TEST(ParseFields, IotaBroadcastReshapeTransposeReverse) {
  Module m = load("iota_broadcast_reshape");
  EXPECT_EQ(find(m, "iota.2").attrs.iota_dimension, 1);
  EXPECT_EQ(find(m, "broadcast.6").attrs.dimensions, (Dims{0, 1}));
  EXPECT_TRUE(find(m, "broadcast.7").attrs.dimensions.empty());
  EXPECT_EQ(find(m, "broadcast.6").shape.layout(), (Dims{2, 1, 0}));
  EXPECT_EQ(find(m, "reshape.4").opcode, Opcode::kReshape);
  Module t = load("transpose_reverse");
  EXPECT_EQ(find(t, "transpose.2").attrs.dimensions, (Dims{2, 0, 1}));
  EXPECT_EQ(find(t, "reverse.3").attrs.dimensions, (Dims{0, 2}));
}

TEST(ParseFields, SlicePadConcatenate) {
  Module m = load("slice_pad_concat");
  const auto& slice = find(m, "slice.2").attrs.slice;
  ASSERT_EQ(slice.size(), 2u);
  EXPECT_EQ(slice[0], (SliceDim{0, 4, 1}));
  EXPECT_EQ(slice[1], (SliceDim{2, 8, 2}));
  const auto& pad = find(m, "pad.3").attrs.padding;
  ASSERT_EQ(pad.size(), 2u);
  EXPECT_EQ(pad[0], (PadDim{1, 2, 1}));
  EXPECT_EQ(pad[1], (PadDim{-1, 0, 0}));
  EXPECT_EQ(find(m, "pad.7").attrs.padding[1], (PadDim{2, 2, 0}));
  EXPECT_EQ(find(m, "concatenate.6").attrs.dimensions, (Dims{1}));
  EXPECT_EQ(find(m, "concatenate.8").operand_count(), 2);
}

TEST(ParseFields, DynamicSliceAndUpdate) {
  Module m = load("dynamic_slice");
  EXPECT_EQ(find(m, "dynamic-slice.5").attrs.dynamic_slice_sizes, (Dims{4, 8}));
  EXPECT_EQ(find(m, "dynamic-slice.5").operand_count(), 3);
  EXPECT_EQ(find(m, "dynamic-update-slice.6").operand_count(), 4);
}

TEST(ParseFields, ReduceBodiesAndVariadicReduce) {
  Module m = load("reduce_sum");
  const Instruction& r = find(m, "reduce.8");
  EXPECT_EQ(r.attrs.dimensions, (Dims{1}));
  ASSERT_EQ(r.called.size(), 1u);
  EXPECT_EQ(called_name(m, r, 0), "region_0.4");
  EXPECT_TRUE(r.attrs.extra.empty()) << "metadata is skipped, not kept";
  Module a = load("reduce_argmax");
  const Instruction& v = find(a, "reduce");
  EXPECT_EQ(v.operand_count(), 4);
  EXPECT_TRUE(v.shape.is_tuple());
  EXPECT_EQ(called_name(a, v, 0), "argmax_body");
  EXPECT_EQ(find(a, "index").attrs.tuple_index, 1);
  EXPECT_EQ(a.computation(v.called[0]).parameters().size(), 4u);
}

TEST(ParseFields, ReduceWindow) {
  Module m = load("reduce_window_pool");
  const auto& pool = find(m, "pool").attrs.window;
  ASSERT_EQ(pool.size(), 4u);
  EXPECT_EQ(pool[1].size, 2);
  EXPECT_EQ(pool[1].stride, 2);
  EXPECT_EQ(pool[0].stride, 1);
  const auto& sum = find(m, "sum").attrs.window;
  EXPECT_EQ(sum[2].size, 3);
  EXPECT_EQ(sum[2].pad_low, 1);
  EXPECT_EQ(sum[2].pad_high, 1);
  EXPECT_EQ(sum[3].pad_low, 0);
  EXPECT_EQ(called_name(m, find(m, "pool"), 0), "max_f32");
  EXPECT_EQ(called_name(m, find(m, "sum"), 0), "add_f32");
}

TEST(ParseFields, DotDimsAndShardings) {
  Module m = load("dot_matmul_sharded");
  EXPECT_EQ(m.num_partitions(), 4);
  const Instruction& dot = find(m, "dot.3");
  EXPECT_EQ(dot.attrs.dot.lhs_contracting, (Dims{1}));
  EXPECT_EQ(dot.attrs.dot.rhs_contracting, (Dims{0}));
  EXPECT_TRUE(dot.attrs.dot.lhs_batch.empty());
  EXPECT_EQ(dot.sharding, "{devices=[2,2]0,1,2,3}");
  EXPECT_TRUE(dot.attrs.extra.empty()) << "operand_precision is skipped";
  EXPECT_EQ(find(m, "Arg_1.2").sharding, "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  Module b = load("dot_batched_einsum");
  const DotDims& d = find(b, "scores").attrs.dot;
  EXPECT_EQ(d.lhs_batch, (Dims{0, 1}));
  EXPECT_EQ(d.rhs_batch, (Dims{0, 1}));
  EXPECT_EQ(d.lhs_contracting, (Dims{3}));
  EXPECT_EQ(d.rhs_contracting, (Dims{3}));
}

TEST(ParseFields, ConvolutionWindowAndDimLabels) {
  Module m = load("conv2d");
  const Instruction& conv = find(m, "convolution.3");
  ASSERT_EQ(conv.attrs.window.size(), 2u);
  EXPECT_EQ(conv.attrs.window[0], (WindowDim{3, 2, 1, 0, 1, 1, false}));
  // b01f_01io->b01f: batch 0, spatial 1 and 2, feature 3; kernel 0,1 spatial, i=2, o=3.
  const ConvDims& d = conv.attrs.conv;
  EXPECT_EQ(d.input_batch, 0);
  EXPECT_EQ(d.input_feature, 3);
  EXPECT_EQ(d.input_spatial, (Dims{1, 2}));
  EXPECT_EQ(d.kernel_input_feature, 2);
  EXPECT_EQ(d.kernel_output_feature, 3);
  EXPECT_EQ(d.kernel_spatial, (Dims{0, 1}));
  EXPECT_EQ(d.output_feature, 3);
  EXPECT_EQ(conv.attrs.feature_group_count, 1);

  Module g = load("conv_grouped_dilated");
  const Instruction& grouped = find(g, "grouped");
  EXPECT_EQ(grouped.attrs.feature_group_count, 4);
  EXPECT_EQ(grouped.attrs.window[0].window_dilation, 2);
  EXPECT_EQ(grouped.attrs.window[0].pad_low, 2);
  // bf0_oi0->bf0: kernel o at 0, i at 1.
  EXPECT_EQ(grouped.attrs.conv.kernel_output_feature, 0);
  EXPECT_EQ(grouped.attrs.conv.kernel_input_feature, 1);
  const Instruction& wgrad = find(g, "wgrad");
  EXPECT_EQ(wgrad.attrs.batch_group_count, 4);
  EXPECT_TRUE(wgrad.attrs.window[0].reversal);
  EXPECT_EQ(wgrad.attrs.window[0].stride, 2);
  // fb0_io0: input feature at 0, batch at 1.
  EXPECT_EQ(wgrad.attrs.conv.input_feature, 0);
  EXPECT_EQ(wgrad.attrs.conv.input_batch, 1);
  EXPECT_EQ(find(g, "upsampled").attrs.window[0].base_dilation, 2);
}

TEST(ParseFields, GatherEmbeddingLookup) {
  Module m = load("gather_embedding");
  const Instruction& g = find(m, "gather.5");
  EXPECT_EQ(g.attrs.gather.offset_dims, (Dims{2}));
  EXPECT_EQ(g.attrs.gather.collapsed_slice_dims, (Dims{0}));
  EXPECT_EQ(g.attrs.gather.start_index_map, (Dims{0}));
  EXPECT_EQ(g.attrs.gather.index_vector_dim, 2);
  EXPECT_EQ(g.attrs.gather_slice_sizes, (Dims{1, 32}));
  EXPECT_TRUE(g.attrs.indices_are_sorted);
  EXPECT_EQ(find(m, "Arg_0.1").sharding, "{devices=[1,2]<=[2]}");
}

TEST(ParseFields, ScatterEmbeddingGradient) {
  Module m = load("scatter_embedding_grad");
  const Instruction& s = find(m, "scatter");
  EXPECT_EQ(s.attrs.scatter.update_window_dims, (Dims{2}));
  EXPECT_EQ(s.attrs.scatter.inserted_window_dims, (Dims{0}));
  EXPECT_EQ(s.attrs.scatter.scatter_dims_to_operand_dims, (Dims{0}));
  EXPECT_EQ(s.attrs.scatter.index_vector_dim, 2);
  EXPECT_FALSE(s.attrs.unique_indices);
  EXPECT_EQ(called_name(m, s, 0), "add_f32");
}

TEST(ParseFields, MoeDispatchBatchingDims) {
  Module m = load("moe_dispatch");
  const Instruction& s = find(m, "dispatched");
  EXPECT_EQ(s.attrs.scatter.input_batching_dims, (Dims{0}));
  EXPECT_EQ(s.attrs.scatter.scatter_indices_batching_dims, (Dims{0}));
  EXPECT_EQ(s.attrs.scatter.inserted_window_dims, (Dims{1, 2}));
  EXPECT_TRUE(s.attrs.unique_indices);
  EXPECT_TRUE(s.attrs.indices_are_sorted);
  EXPECT_EQ(s.sharding, "{devices=[1,4,1,1]<=[4]}");
  const Instruction& g = find(m, "combined");
  EXPECT_EQ(g.attrs.gather.operand_batching_dims, (Dims{0}));
  EXPECT_EQ(g.attrs.gather.start_indices_batching_dims, (Dims{0}));
  EXPECT_EQ(g.attrs.gather_slice_sizes, (Dims{1, 1, 1, 16}));
  EXPECT_EQ(m.entry().root_instr().sharding,
            "{{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}, {devices=[1,4,1,1]<=[4]}}");
}

TEST(ParseFields, WhileAndCall) {
  Module m = load("while_loop");
  const Instruction& loop = find(m, "loop");
  ASSERT_EQ(loop.called.size(), 2u);
  EXPECT_EQ(called_name(m, loop, 0), "cond");
  EXPECT_EQ(called_name(m, loop, 1), "body");
  EXPECT_EQ(loop.while_condition(), m.find_computation("cond"));
  EXPECT_EQ(loop.attrs.backend_config, R"({"known_trip_count":{"n":"10"}})");
  EXPECT_EQ(m.entry().name(), "main");
  Module c = load("call");
  EXPECT_EQ(called_name(c, find(c, "call.1"), 0), "square");
  EXPECT_EQ(called_name(c, find(c, "call.2"), 0), "plus_one");  // spelled calls=
}

TEST(ParseFields, TuplesAndGetTupleElement) {
  Module m = load("tuple_gte");
  const Instruction& p = find(m, "p");
  ASSERT_TRUE(p.shape.is_tuple());
  EXPECT_TRUE(p.shape.tuple_shape(1).is_tuple());
  EXPECT_EQ(p.shape.tuple_shape(1).tuple_shape(1), Shape(DType::kF32, {3, 4}));
  EXPECT_EQ(find(m, "nested").attrs.tuple_index, 1);
  EXPECT_EQ(find(m, "matrix").attrs.tuple_index, 1);
  EXPECT_EQ(m.entry().root_instr().operand_count(), 3);
}

TEST(ParseFields, AllReduceGroupForms) {
  Module m = load("all_reduce_explicit");
  EXPECT_EQ(m.num_partitions(), 4);
  EXPECT_EQ(m.replica_count(), 1);
  const Instruction& pairs = find(m, "pairs");
  EXPECT_EQ(pairs.attrs.replica_groups.explicit_groups, (std::vector<Dims>{{0, 1}, {2, 3}}));
  EXPECT_EQ(pairs.attrs.channel_id, 1);
  EXPECT_TRUE(pairs.attrs.use_global_device_ids);
  EXPECT_EQ(called_name(m, pairs, 0), "sum");
  const Instruction& everyone = find(m, "everyone");
  EXPECT_TRUE(everyone.attrs.replica_groups.is_all_devices());
  EXPECT_FALSE(everyone.attrs.use_global_device_ids);
  EXPECT_EQ(called_name(m, everyone, 0), "max");
  EXPECT_FALSE(find(m, "strided").attrs.channel_id.has_value());

  Module i = load("all_reduce_iota");
  const auto& y = find(i, "over_y").attrs.replica_groups;
  ASSERT_TRUE(y.iota.has_value());
  EXPECT_EQ(*y.iota, (IotaGroups{2, 4, {8}, {}}));
  EXPECT_EQ(y.expand(8), (std::vector<Dims>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  const auto& x = find(i, "over_x").attrs.replica_groups;
  EXPECT_EQ(*x.iota, (IotaGroups{4, 2, {2, 4}, {1, 0}}));
  // [4,2]<=[2,4]T(1,0): transpose of [[0..3],[4..7]] read row-major.
  EXPECT_EQ(x.expand(8), (std::vector<Dims>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(ParseFields, AllGatherReduceScatterAllToAllPermute) {
  Module g = load("all_gather");
  EXPECT_EQ(find(g, "rows").attrs.dimensions, (Dims{0}));
  EXPECT_EQ(find(g, "cols").attrs.dimensions, (Dims{1}));
  EXPECT_EQ(find(g, "pairs").attrs.replica_groups.explicit_groups.size(), 4u);
  EXPECT_EQ(find(g, "rows").attrs.replica_groups.group_size(8), 4);
  Module r = load("reduce_scatter");
  EXPECT_EQ(find(r, "rs1").attrs.dimensions, (Dims{1}));
  EXPECT_EQ(find(r, "rs1").attrs.replica_groups.iota->transpose_perm, (Dims{1, 0}));
  EXPECT_EQ(called_name(r, find(r, "rs0"), 0), "add");
  Module a = load("all_to_all");
  EXPECT_EQ(find(a, "a2a").attrs.channel_id, 7);
  EXPECT_EQ(find(a, "a2a").attrs.dimensions, (Dims{0}));
  Module p = load("collective_permute");
  using Pairs = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(find(p, "right").attrs.source_target_pairs, (Pairs{{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
  EXPECT_EQ(find(p, "swap").attrs.channel_id, 2);
}

TEST(ParseFields, CustomCallsAndUnknownAttributesKeptVerbatim) {
  Module m = load("custom_call_sharding");
  const Instruction& s = find(m, "custom-call.2");
  EXPECT_EQ(s.attrs.custom_call_target, "Sharding");
  EXPECT_EQ(s.sharding, "{devices=[2,4]<=[8]}");
  EXPECT_EQ(find(m, "custom-call.4").attrs.backend_config, "\"\"");
  const Instruction& k = find(m, "custom-call.5");
  EXPECT_EQ(k.attrs.custom_call_target, "my_kernel");
  EXPECT_EQ(k.attrs.backend_config, R"({"block": [8, 128], "name": "k}"})");
  ASSERT_EQ(k.attrs.extra.size(), 2u);
  EXPECT_EQ(k.attrs.extra[0],
            (std::pair<std::string, std::string>{"api_version", "API_VERSION_STATUS_RETURNING"}));
  EXPECT_EQ(k.attrs.extra[1],
            (std::pair<std::string, std::string>{"custom_call_has_side_effect", "true"}));
  EXPECT_EQ(m.entry().root_instr().sharding, "{{devices=[2,4]<=[8]}, {maximal device=0}}");
  EXPECT_EQ(find(m, "Arg_0.1").sharding, "{replicated}");
}

TEST(ParseFields, NewStyleDumpWithoutSigils) {
  Module m = load("jax_new_style");
  EXPECT_EQ(m.entry().name(), "main.10");
  const Instruction& r = find(m, "reduce.9");
  EXPECT_EQ(called_name(m, r, 0), "region_0.3");
  EXPECT_TRUE(find(m, "multiply.7").attrs.extra.empty())
      << "frontend_attributes and metadata are skipped";
  EXPECT_TRUE(m.entry().root_instr().attrs.extra.empty()) << "statistics is skipped";
}

TEST(ParseFields, ForwardReferencesAreOrderedTopologically) {
  Module m = load("forward_refs");
  EXPECT_EQ(m.entry().name(), "main");  // no ENTRY: the last computation
  for (const auto& comp : m.computations())
    for (InstrId i = 0; i < comp.size(); ++i)
      for (InstrId op : comp.instr(i).operands)
        EXPECT_LT(op, i) << comp.name() << " " << comp.instr(i).name;
  const Computation& helper = m.computation(m.find_computation("helper"));
  EXPECT_EQ(helper.root_instr().name, "r");
  EXPECT_EQ(called_name(m, helper.root_instr(), 0), "add_late");
  EXPECT_EQ(m.entry().root_instr().name, "total");
  // Source order is kept where the operands allow: x, doubled, total.
  EXPECT_EQ(m.entry().instr(0).name, "x");
  EXPECT_EQ(m.entry().instr(1).name, "doubled");
}

TEST(ParseFields, ExtraModuleAttributesAndSpmdProgram) {
  Module m = load("mlp_sharded");
  EXPECT_EQ(m.num_partitions(), 8);
  EXPECT_EQ(find(m, "Arg_2.3").sharding, "{devices=[4,2]<=[2,4]T(1,0)}");
  const Instruction& out = find(m, "dot.8");
  ASSERT_EQ(out.attrs.extra.size(), 1u);
  EXPECT_EQ(out.attrs.extra[0].first, "origin");
  EXPECT_EQ(out.attrs.extra[0].second, R"({{"dot.8"}})");
  Module s = load("spmd_partitioned");
  EXPECT_EQ(find(s, "pid").opcode, Opcode::kPartitionId);
  EXPECT_EQ(find(s, "pid").shape, Shape::scalar(DType::kU32));
  EXPECT_EQ(find(s, "rid").opcode, Opcode::kReplicaId);
  EXPECT_EQ(find(s, "offsets").attrs.literal->values(),
            (std::vector<double>{0, 4, 8, 12, 0, 4, 8, 12}));
}

TEST(ParseFields, TiledLayoutsKeepOnlyMinorToMajor) {
  Module m = load("tpu_layouts");
  EXPECT_EQ(find(m, "p0").shape.layout(), (Dims{1, 0}));
  EXPECT_EQ(find(m, "broadcast").shape.layout(), (Dims{0, 1}));
  EXPECT_EQ(find(m, "p1").shape.layout(), (Dims{0}));
}

TEST(ParseFields, OldStyleTupleOperandShapesAndComments) {
  Module m = parse_hlo(
      "HloModule old /* block */\n"
      "ENTRY %e (t: (f32[2], s32[])) -> s32[] { // line comment\n"
      "  %t = (f32[2]{0}, /*index=1*/s32[]) parameter(0)\n"
      "  ROOT %g = s32[] get-tuple-element((f32[2]{0}, s32[]) %t), index=1\n"
      "}\n");
  const Instruction& g = m.entry().root_instr();
  EXPECT_EQ(g.attrs.tuple_index, 1);
  EXPECT_EQ(m.entry().instr(g.operand(0)).name, "t");
  EXPECT_EQ(g.location.line, 4);
  EXPECT_EQ(g.location.column, 8);  // "  ROOT %g": the name's '%' is column 8
}

// metadata={op_name=...} is kept (other metadata entries are dropped) and
// printed back, with quotes and backslashes escaped.
TEST(ParseFields, MetadataOpNameRoundTrips) {
  const std::string text = R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0), metadata={op_name="fwd/layer_0/\"ffn\"" source_file="model.py" source_line=12}
  ROOT n = f32[4] negate(p), metadata={source_line=3}
}
)";
  Module m = parse_hlo(text, "meta.hlo");
  EXPECT_EQ(m.entry().instr(0).op_name, "fwd/layer_0/\"ffn\"");
  EXPECT_EQ(m.entry().instr(1).op_name, "");
  std::string printed = print_hlo(m);
  EXPECT_NE(printed.find(R"(metadata={op_name="fwd/layer_0/\"ffn\""})"), std::string::npos)
      << printed;
  EXPECT_EQ(print_hlo(parse_hlo(printed, "again.hlo")), printed);
}

// ---- XLA's other forms (fixtures under forms/; values read off the text).

Module load_form(const std::string& stem) { return load("forms/" + stem); }

TEST(ParseForms, ShortAsyncFormKeepsTheWrappedOpAndItsAttributes) {
  Module m = load_form("async_short");
  const Instruction& start = find(m, "a2a");
  EXPECT_EQ(start.opcode, Opcode::kAsyncStart);
  ASSERT_TRUE(start.attrs.async_wrapped.has_value());
  EXPECT_EQ(*start.attrs.async_wrapped, Opcode::kAllToAll);
  EXPECT_EQ(start.attrs.dimensions, (Dims{0}));
  EXPECT_EQ(start.attrs.replica_groups.explicit_groups, (std::vector<Dims>{{0, 1}}));
  EXPECT_EQ(start.attrs.channel_id, 1);
  EXPECT_EQ(find(m, "a2a_done").opcode, Opcode::kAsyncDone);
  EXPECT_EQ(*find(m, "a2a_done").attrs.async_wrapped, Opcode::kAllToAll);
  const Instruction& rs = find(m, "rs");
  EXPECT_EQ(*rs.attrs.async_wrapped, Opcode::kReduceScatter);
  EXPECT_EQ(called_name(m, rs, 0), "add");
  EXPECT_EQ(find(m, "cu").opcode, Opcode::kAsyncUpdate);
  EXPECT_EQ(called_name(m, find(m, "cs"), 0), "callee");
  // Printed back in the short form.
  const std::string printed = print_hlo(m);
  EXPECT_NE(
      printed.find("all-to-all-start(%x), channel_id=1, replica_groups={{0,1}}, dimensions={0}"),
      std::string::npos)
      << printed;
  EXPECT_NE(printed.find("call-update(%cs)"), std::string::npos);
  EXPECT_NE(printed.find("reduce-scatter-done(%rs)"), std::string::npos);
}

TEST(ParseForms, LongAsyncFormCallsItsComputation) {
  Module m = load_form("async_long");
  const Instruction& start = find(m, "start");
  EXPECT_EQ(start.opcode, Opcode::kAsyncStart);
  EXPECT_FALSE(start.attrs.async_wrapped.has_value());
  EXPECT_EQ(called_name(m, start, 0), "async_body");
  EXPECT_EQ(m.entry().root_instr().shape, Shape(DType::kF32, {4}));
  EXPECT_NE(print_hlo(m).find("async-start(%a, %b), calls=%async_body"), std::string::npos)
      << print_hlo(m);
}

TEST(ParseForms, DedicatedAsyncPairsPrintTheirCollectiveAttributes) {
  Module m = load_form("async_collectives");
  EXPECT_EQ(find(m, "ags").opcode, Opcode::kAllGatherStart);
  EXPECT_EQ(find(m, "ags").attrs.dimensions, (Dims{0}));
  EXPECT_EQ(find(m, "agd").shape, Shape(DType::kF32, {8, 8}));
  const std::string printed = print_hlo(m);
  EXPECT_NE(printed.find(
                "all-gather-start(%x), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, "
                "use_global_device_ids=true"),
            std::string::npos)
      << printed;
  EXPECT_NE(
      printed.find("all-reduce-start(%x), channel_id=2, replica_groups=[1,4]<=[4], to_apply=%add"),
      std::string::npos);
  EXPECT_NE(printed.find("source_target_pairs={{0,1},{1,2},{2,3},{3,0}}"), std::string::npos);
}

TEST(ParseForms, ConditionalBothFormsListBranchesInOrder) {
  Module pred = load_form("conditional_pred");
  const Instruction& c = pred.entry().root_instr();
  ASSERT_EQ(c.called.size(), 2u);
  EXPECT_EQ(called_name(pred, c, 0), "on_true");
  EXPECT_EQ(called_name(pred, c, 1), "on_false");
  EXPECT_NE(print_hlo(pred).find("true_computation=%on_true, false_computation=%on_false"),
            std::string::npos);
  Module index = load_form("conditional_index");
  const Instruction& ci = index.entry().root_instr();
  ASSERT_EQ(ci.called.size(), 3u);
  EXPECT_EQ(called_name(index, ci, 2), "b2");
  EXPECT_NE(print_hlo(index).find("branch_computations={%b0, %b1, %b2}"), std::string::npos);
}

TEST(ParseForms, SelectAndScatterCallsSelectThenScatter) {
  Module m = load_form("select_and_scatter");
  const Instruction& g = find(m, "g");
  EXPECT_EQ(called_name(m, g, 0), "ge");
  EXPECT_EQ(called_name(m, g, 1), "sum");
  ASSERT_EQ(find(m, "h").attrs.window.size(), 2u);
  EXPECT_EQ(find(m, "h").attrs.window[0].pad_low, 1);
  EXPECT_EQ(find(m, "h").attrs.window[1].stride, 2);
}

TEST(ParseForms, OpAttributesLandInTheirFields) {
  Module sort = load_form("sort");
  EXPECT_TRUE(find(sort, "pairs").attrs.is_stable);
  EXPECT_FALSE(find(sort, "sorted").attrs.is_stable);
  Module fft = load_form("fft");
  EXPECT_EQ(find(fft, "r").attrs.fft_type, "RFFT");
  EXPECT_EQ(find(fft, "f").attrs.fft_length, (Dims{4, 8}));
  Module rng = load_form("rng");
  EXPECT_EQ(find(rng, "n").attrs.rng_distribution, "rng_normal");
  EXPECT_EQ(find(rng, "bits").attrs.rng_algorithm, "rng_three_fry");
  Module rp = load_form("reduce_precision");
  EXPECT_EQ(rp.entry().root_instr().attrs.exponent_bits, 8);
  EXPECT_EQ(rp.entry().root_instr().attrs.mantissa_bits, 7);
  Module topk = load_form("topk");
  EXPECT_EQ(find(topk, "top").attrs.k, 5);
  EXPECT_TRUE(find(topk, "top").attrs.largest);
  EXPECT_FALSE(find(topk, "bottom").attrs.largest);
  Module fusion = load_form("fusion");
  EXPECT_EQ(fusion.entry().root_instr().attrs.fusion_kind, "kLoop");
  EXPECT_EQ(called_name(fusion, fusion.entry().root_instr(), 0), "fused_mul_add");
  Module linalg = load_form("linalg");
  EXPECT_TRUE(find(linalg, "l").attrs.lower);
  EXPECT_TRUE(find(linalg, "x").attrs.left_side);
  EXPECT_TRUE(find(linalg, "y").attrs.unit_diagonal);
  EXPECT_EQ(find(linalg, "y").attrs.transpose_a, "TRANSPOSE");
  Module bn = load_form("batch_norm");
  EXPECT_DOUBLE_EQ(find(bn, "train").attrs.epsilon, 0.001);
  EXPECT_EQ(find(bn, "grad").attrs.feature_index, 3);
  Module sr = load_form("send_recv");
  EXPECT_EQ(find(sr, "send").attrs.channel_id, 5);
  EXPECT_FALSE(find(sr, "send").attrs.is_host_transfer);
  EXPECT_TRUE(find(sr, "recv").attrs.is_host_transfer);
  EXPECT_NE(print_hlo(sr).find("recv(%send_done), channel_id=6, is_host_transfer=true"),
            std::string::npos);
}

TEST(ParseForms, ShapelessInstructionsAreInferredAfterResolution) {
  Module m = load_form("shapeless");
  EXPECT_EQ(find(m, "sum").shape, Shape(DType::kF32, {4}));
  EXPECT_EQ(find(m, "lt").shape, Shape::scalar(DType::kPred));
  // while: its state shape; reduce over dim 0 of f32[4]: f32[]; copy of a tuple: the tuple.
  const Shape state = Shape::tuple({Shape::scalar(DType::kS32), Shape(DType::kF32, {4})});
  EXPECT_EQ(find(m, "loop").shape, state);
  EXPECT_EQ(find(m, "total").shape, Shape::scalar(DType::kF32));
  EXPECT_EQ(find(m, "pair_copy").shape,
            Shape::tuple({Shape(DType::kF32, {4}), Shape(DType::kF32, {4})}));
  EXPECT_NE(print_hlo(m).find("%sum = f32[4] add(%x, %y)"), std::string::npos);
}

TEST(ParseForms, ComplexLiteralsAreRealImagPairs) {
  Module m = load_form("complex");
  const Literal& k = *find(m, "k").attrs.literal;
  EXPECT_EQ(k.values(), (std::vector<double>{1, 0, 0.5, -2}));
  EXPECT_EQ(find(m, "one").attrs.literal->values(), (std::vector<double>{1, 1}));
  EXPECT_NE(print_hlo(m).find("constant({(1, 0), (0.5, -2)})"), std::string::npos) << print_hlo(m);
  // A plain number is (number, 0).
  Module plain = parse_hlo("HloModule m\nENTRY e {\n  ROOT c = c64[2] constant({3, (1, 2)})\n}\n");
  EXPECT_EQ(plain.entry().root_instr().attrs.literal->values(), (std::vector<double>{3, 0, 1, 2}));
}

TEST(ParseForms, ElementTypesAndBoundedDims) {
  Module m = load_form("element_types");
  EXPECT_EQ(find(m, "d").shape.dtype(), DType::kS4);
  EXPECT_EQ(find(m, "l").shape.dtype(), DType::kF8E4M3B11FNUZ);
  EXPECT_EQ(find(m, "t").shape, Shape::scalar(DType::kToken));
  EXPECT_EQ(find(m, "k4").attrs.literal->values(), (std::vector<double>{-8, 7}));
  Module dyn = load_form("dynamic_dims");
  EXPECT_EQ(find(dyn, "x").shape, Shape(DType::kF32, {8, 4}));  // "<=8" reads as its bound
}

TEST(ParseForms, FrontendAttributesAndUnknownAttributesAreKept) {
  Module m = load_form("kept_attributes");
  EXPECT_EQ(find(m, "e").attrs.frontend_attributes,
            "{_xla_stream_annotation=\"1\",_scheduling_group_id=\"0\"}");
  EXPECT_EQ(find(m, "x").attrs.frontend_attributes,
            "{xla.sdy.sharding=\"#sdy.sharding<@mesh, [{}]>\"}");
  const Instruction& n = find(m, "n");
  ASSERT_EQ(n.attrs.extra.size(), 1u);  // statistics and schedule are read, not kept
  EXPECT_EQ(n.attrs.extra[0], (std::pair<std::string, std::string>{"my_new_attribute", "{a={b}}"}));
  const std::string printed = print_hlo(m);
  EXPECT_NE(printed.find("frontend_attributes={_xla_stream_annotation=\"1\",_scheduling_group_id="
                         "\"0\"}, origin={{\"e\"}}"),
            std::string::npos)
      << printed;
}

TEST(ParseForms, ModuleHeaderKeepsIsScheduledAndFrontendAttributesAndSkipsTheRest) {
  Module m = load_form("module_header");
  EXPECT_TRUE(m.is_scheduled());
  EXPECT_EQ(m.num_partitions(), 2);
  EXPECT_EQ(m.frontend_attributes(), "{fingerprint=\"x\"}");
  EXPECT_EQ(
      print_hlo(m).substr(0, print_hlo(m).find('\n')),
      "HloModule module_header_form, num_partitions=2, is_scheduled=true, "
      "allow_spmd_sharding_propagation_to_parameters={false,true}, "
      "allow_spmd_sharding_propagation_to_output={true}, frontend_attributes={fingerprint=\"x\"}");
  EXPECT_EQ(m.propagation_to_parameters(), (std::vector<bool>{false, true}));
  EXPECT_EQ(m.propagation_to_output(), (std::vector<bool>{true}));
  EXPECT_FALSE(load_form("fusion").is_scheduled());
}

TEST(ParseForms, IndexCommentsInTupleShardingsAreDropped) {
  Module m = load_form("index_comments");
  EXPECT_EQ(
      m.entry().root_instr().sharding,
      "{{replicated}, {replicated}, {replicated}, {replicated}, {replicated}, {devices=[2]0,1}}");
  EXPECT_EQ(m.entry().root_instr().shape.tuple_shapes().size(), 6u);
}

TEST(ParseForms, ExecutionThreadAfterAComputationIsRead) {
  Module m = load_form("execution_thread");
  EXPECT_EQ(m.computation_count(), 2);
  EXPECT_EQ(m.entry().name(), "main");
}

TEST(ParseForms, ErrorsOfTheNewFormsArePositioned) {
  auto error_at = [](const std::string& text, int line, int column, const std::string& part) {
    try {
      parse_hlo(text, "bad.hlo");
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const UserError& e) {
      EXPECT_EQ(e.location().line, line) << e.what();
      EXPECT_EQ(e.location().column, column) << e.what();
      EXPECT_NE(e.message().find(part), std::string::npos) << e.what();
    }
  };
  // "<op>-start" where <op> is no opcode stays an unknown opcode.
  error_at(
      "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT s = f32[2] "
      "frobnicate-start(p)\n}\n",
      4, 19, "unknown opcode 'frobnicate-start'");
  // An op whose shape is an input must write it.
  error_at(
      "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT b = broadcast(p), "
      "dimensions={}\n}\n",
      4, 12, "'broadcast' needs its result shape written");
  // A left-out shape that cannot be inferred fails at the instruction.
  error_at(
      "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  q = f32[3] parameter(1)\n  ROOT s = "
      "add(p, q)\n}\n",
      5, 8, "operand dims differ");
  error_at(
      "HloModule m\nb {\n  x = f32[] parameter(0)\n}\nENTRY e {\n  p = pred[] parameter(0)\n"
      "  ROOT c = f32[] conditional(p, p, p), true_computation=b\n}\n",
      7, 8, "needs both true_computation= and false_computation=");
  error_at(
      "HloModule m\nENTRY e {\n  p = c64[4] parameter(0)\n  ROOT f = c64[4] fft(p), fft_type=DFT, "
      "fft_length={4}\n}\n",
      4, 36, "unknown fft_type 'DFT'");
  error_at("HloModule m\nENTRY e {\n  ROOT c = c64[] constant((1 2))\n}\n", 3, 30, "expected ','");
}

}  // namespace
}  // namespace podsim::compiler
