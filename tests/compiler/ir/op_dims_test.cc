// op_dims on hand-written ops: every expected dim list is read off the HLO
// dimension numbers in the comment next to it (XLA's DotGeneral, Convolution,
// Gather and Scatter semantics).
#include <gtest/gtest.h>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/ir/op_dims.h"

namespace podsim::compiler {
namespace {

using Dims = std::vector<int64_t>;

}  // namespace

// Readable failures: "{kind 1: lhs 2, rhs 1, out -1}".
void PrintTo(const DimLabel& l, std::ostream* os) {
  *os << "{kind " << static_cast<int>(l.kind) << ": lhs " << l.lhs << ", rhs " << l.rhs << ", out "
      << l.out << "}";
}

namespace {

// The module's ENTRY root and its computation.
struct Parsed {
  Module module;
  const Computation& entry() const { return module.entry(); }
  const Instruction& root() const { return module.entry().root_instr(); }
  const Shape& operand(int i) const { return entry().instr(root().operand(i)).shape; }
};

Parsed parse(const std::string& body) { return Parsed{parse_hlo("HloModule m\n" + body)}; }

TEST(OpDims, BatchedMatmul) {
  // [b, m, k] x [b, k, n] -> [b, m, n]: b is batch (0, 0 -> 0), k contracts
  // (2, 1), m is lhs-free (1 -> 1), n rhs-free (2 -> 2).
  const Parsed p = parse(R"(ENTRY e {
  a = f32[2,3,4] parameter(0)
  b = f32[2,4,5] parameter(1)
  ROOT d = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
})");
  const std::vector<DimLabel> labels = dot_labels(p.root().attrs.dot, 3, 3);
  const std::vector<DimLabel> expected = {{LabelKind::kBatch, 0, 0, 0},
                                          {LabelKind::kContracting, 2, 1, -1},
                                          {LabelKind::kLhsFree, 1, -1, 1},
                                          {LabelKind::kRhsFree, -1, 2, 2}};
  EXPECT_EQ(labels, expected);
  // rhs -> out along batch and rhs-free: rhs dims {0, 2} land on out {0, 2}.
  const DimCorrespondence c = correspondence(labels, {LabelKind::kBatch, LabelKind::kRhsFree},
                                             EinsumSide::kRhs, EinsumSide::kOut, 3);
  EXPECT_EQ(c.source_dims, (Dims{0, 2}));
  EXPECT_EQ(c.target_dims, (Dims{0, 2}));
  EXPECT_EQ(c.target_rank, 3);
}

TEST(OpDims, DotWithInnerBatchDim) {
  // [m, b, k] x [k, b, n]: result [b, m, n] (batch first, then free dims in
  // operand order), so lhs m (0) -> out 1 and rhs n (2) -> out 2.
  DotDims d;
  d.lhs_batch = {1};
  d.rhs_batch = {1};
  d.lhs_contracting = {2};
  d.rhs_contracting = {0};
  const std::vector<DimLabel> expected = {{LabelKind::kBatch, 1, 1, 0},
                                          {LabelKind::kContracting, 2, 0, -1},
                                          {LabelKind::kLhsFree, 0, -1, 1},
                                          {LabelKind::kRhsFree, -1, 2, 2}};
  EXPECT_EQ(dot_labels(d, 3, 3), expected);
  // lhs <- rhs along batch and contracting (BackwardDotFromContracting):
  // rhs {1, 0} -> lhs {1, 2}.
  const DimCorrespondence c =
      correspondence(dot_labels(d, 3, 3), {LabelKind::kBatch, LabelKind::kContracting},
                     EinsumSide::kRhs, EinsumSide::kLhs, 3);
  EXPECT_EQ(c.source_dims, (Dims{1, 0}));
  EXPECT_EQ(c.target_dims, (Dims{1, 2}));
}

TEST(OpDims, WindowedConvolution) {
  // b01f_01io->b01f, 3x3 window, pad 1: input [8,32,32,16], kernel
  // [3,3,16,64], output [8,32,32,64]. Features: input feature 3 / kernel
  // input feature 2 contract, batch 0 -> 0, kernel out feature 3 -> 3.
  // Both spatial dims have a real window: windowed (input 1, 2 / kernel
  // 0, 1 / output 1, 2).
  const Parsed p = parse(R"(ENTRY e {
  x = f32[8,32,32,16] parameter(0)
  w = f32[3,3,16,64] parameter(1)
  ROOT c = f32[8,32,32,64] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})");
  const ConvLabels l = conv_labels(p.root(), p.operand(0));
  const std::vector<DimLabel> features = {{LabelKind::kContracting, 3, 2, -1},
                                          {LabelKind::kLhsFree, 0, -1, 0},
                                          {LabelKind::kRhsFree, -1, 3, 3}};
  const std::vector<DimLabel> spatial = {{LabelKind::kWindowed, 1, 0, 1},
                                         {LabelKind::kWindowed, 2, 1, 2}};
  const std::vector<DimLabel> windowed = {{LabelKind::kLhsFree, 0, -1, 0},
                                          {LabelKind::kWindowed, 1, 0, 1},
                                          {LabelKind::kWindowed, 2, 1, 2}};
  EXPECT_EQ(l.features, features);
  EXPECT_EQ(l.spatial, spatial);
  EXPECT_EQ(l.windowed, windowed);
  EXPECT_TRUE(l.ungrouped);
  EXPECT_FALSE(l.dot_like);
}

TEST(OpDims, PointwiseConvolutionIsDotLike) {
  // 1x1 window, no padding: output = input on both spatial dims, so they are
  // lhs-free labels (input 1, 2 -> output 1, 2) and the conv is an einsum.
  const Parsed p = parse(R"(ENTRY e {
  x = f32[8,32,32,16] parameter(0)
  w = f32[1,1,16,64] parameter(1)
  ROOT c = f32[8,32,32,64] convolution(x, w), window={size=1x1}, dim_labels=b01f_01io->b01f
})");
  const ConvLabels l = conv_labels(p.root(), p.operand(0));
  const std::vector<DimLabel> spatial = {{LabelKind::kLhsFree, 1, -1, 1},
                                         {LabelKind::kLhsFree, 2, -1, 2}};
  EXPECT_EQ(l.spatial, spatial);
  EXPECT_TRUE(l.dot_like);
}

TEST(OpDims, ConvolutionSpatialBatchAndGroups) {
  // Spatial dim 0: input 4, window 4, lhs dilation 4, stride 3: dilated
  // input (4-1)*4+1 = 13, output (13-4)/3+1 = 4 -> a batch label (input 1,
  // kernel 0, output 1). Spatial dim 1 has output size 1: no label.
  // feature_group_count=2: one group label over input feature 3, kernel
  // output feature 3 and output feature 3, then the input batch.
  const Parsed p = parse(R"(ENTRY e {
  x = f32[2,4,5,8] parameter(0)
  w = f32[4,5,4,6] parameter(1)
  ROOT c = f32[2,4,1,6] convolution(x, w), window={size=4x5 stride=3x1 lhs_dilate=4x1}, dim_labels=b01f_01io->b01f, feature_group_count=2
})");
  const ConvLabels l = conv_labels(p.root(), p.operand(0));
  const std::vector<DimLabel> features = {{LabelKind::kBatch, 3, 3, 3},
                                          {LabelKind::kLhsFree, 0, -1, 0}};
  const std::vector<DimLabel> spatial = {{LabelKind::kBatch, 1, 0, 1}};
  EXPECT_EQ(l.features, features);
  EXPECT_EQ(l.spatial, spatial);
  EXPECT_FALSE(l.ungrouped);
  EXPECT_FALSE(l.dot_like);
}

TEST(OpDims, GatherWithIndexBatchDims) {
  // Embedding lookup: table [100, 8], indices [4, 6, 1] (index_vector_dim
  // 2), output [4, 6, 8] with offset dim 2. Operand dim 1 is taken whole
  // (slice 8 = 8) -> output 2; dim 0 is collapsed. Indices batch dims 0, 1
  // -> output batch dims 0, 1.
  const Parsed p = parse(R"(ENTRY e {
  t = f32[100,8] parameter(0)
  i = s32[4,6,1] parameter(1)
  ROOT g = f32[4,6,8] gather(t, i), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,8}
})");
  const GatherDimMap m = gather_dim_map(p.root(), p.operand(0), p.operand(1));
  EXPECT_EQ(m.operand_passthrough, (Dims{1}));
  EXPECT_EQ(m.out_passthrough, (Dims{2}));
  EXPECT_EQ(m.index_batch, (Dims{0, 1}));
  EXPECT_EQ(m.out_batch, (Dims{0, 1}));
  // Parameter indices: no index-parallel dims.
  const IndexParallelDims par = gather_parallel_dims(p.entry(), p.root(), p.operand(0));
  EXPECT_TRUE(par.operand.empty());
  EXPECT_EQ(map_index_batch_dims({1}, m.index_batch, m.out_batch), (Dims{1}));
}

TEST(OpDims, GatherOfIotaIndicesIsIndexParallel) {
  // Indices = concatenate(iota along dim 0, parameter) on the vector dim 1:
  // component 0 walks indices dim 0 in step with collapsed operand dim 0
  // (both size 4); component 1 is data. Output [4, 8]: indices batch dim 0
  // -> output dim 0, operand dim 2 (slice 8 = 8) -> output dim 1.
  const Parsed p = parse(R"(ENTRY e {
  t = f32[4,10,8] parameter(0)
  a = s32[4,1] iota(), iota_dimension=0
  b = s32[4,1] parameter(1)
  i = s32[4,2] concatenate(a, b), dimensions={1}
  ROOT g = f32[4,8] gather(t, i), offset_dims={1}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1,8}
})");
  const IndexParallelDims par = gather_parallel_dims(p.entry(), p.root(), p.operand(0));
  EXPECT_EQ(par.operand, (Dims{0}));
  EXPECT_EQ(par.indices, (Dims{0}));
  const GatherDimMap m = gather_dim_map(p.root(), p.operand(0), p.operand(1));
  EXPECT_EQ(m.operand_passthrough, (Dims{2}));
  EXPECT_EQ(m.out_passthrough, (Dims{1}));
  EXPECT_EQ(map_index_batch_dims(par.indices, m.index_batch, m.out_batch), (Dims{0}));
}

TEST(OpDims, ScatterRowsAndWindow) {
  // Row updates: operand [10, 8], indices [5, 1] (index_vector_dim 1),
  // updates [5, 8] with window dim 1 over operand dim 1 (8 = 8: whole);
  // operand dim 0 is inserted (window extent 1). Indices batch dim 0 ->
  // update scatter dim 0.
  const std::string computation = R"(add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
)";
  const Parsed p = parse(computation + R"(ENTRY e {
  o = f32[10,8] parameter(0)
  i = s32[5,1] parameter(1)
  u = f32[5,8] parameter(2)
  ROOT s = f32[10,8] scatter(o, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})");
  const ScatterDimMap m = scatter_dim_map(p.root(), p.operand(0), p.operand(1), p.operand(2));
  EXPECT_EQ(m.operand_passthrough, (Dims{1}));
  EXPECT_EQ(m.update_passthrough, (Dims{1}));
  EXPECT_EQ(m.index_batch, (Dims{0}));
  EXPECT_EQ(m.update_scatter, (Dims{0}));
  EXPECT_EQ(m.unit_window, (Dims{0}));

  // Blocks of 2 rows: updates [5, 2, 8], window dims 1, 2 over operand dims
  // 0, 1; nothing inserted. Operand dim 0 has window extent 2 (not whole,
  // not a unit window); dim 1 is whole (update dim 2).
  const Parsed q = parse(computation + R"(ENTRY e {
  o = f32[10,8] parameter(0)
  i = s32[5,1] parameter(1)
  u = f32[5,2,8] parameter(2)
  ROOT s = f32[10,8] scatter(o, i, u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})");
  const ScatterDimMap b = scatter_dim_map(q.root(), q.operand(0), q.operand(1), q.operand(2));
  EXPECT_EQ(b.operand_passthrough, (Dims{1}));
  EXPECT_EQ(b.update_passthrough, (Dims{2}));
  EXPECT_EQ(b.update_scatter, (Dims{0}));
  EXPECT_TRUE(b.unit_window.empty());
}

TEST(OpDims, ComplementDimsListsTheDimsNotUsedInOrder) {
  // rank 5 without {3, 0}: 1, 2, 4.
  EXPECT_EQ(complement_dims(5, {3, 0}), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_TRUE(complement_dims(2, {0, 1}).empty());
}

}  // namespace
}  // namespace podsim::compiler
