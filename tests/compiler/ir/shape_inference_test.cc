// Shape inference through the builder: each expected shape is the closed-form
// rule quoted in the comment (XLA operation semantics).
#include <gtest/gtest.h>

#include "compiler/ir/builder.h"
#include "compiler/ir/shape_inference.h"
#include "compiler/ir/verifier.h"

namespace podsim::compiler {
namespace {

Shape f32(std::vector<int64_t> dims) { return Shape(DType::kF32, std::move(dims)); }

TEST(ShapeInference, DotGeneralOrdersBatchLhsFreeRhsFree) {
  // [b=2, m=3, k=4] x [b=2, k=4, n=5] -> [b, m, n] = [2,3,5]
  ComputationBuilder b("c");
  auto l = b.parameter(0, f32({2, 3, 4}));
  auto r = b.parameter(1, f32({2, 4, 5}));
  auto d = b.dot(l, r, DotDims{{0}, {0}, {2}, {1}});
  EXPECT_EQ(b.shape(d), f32({2, 3, 5}));
}

TEST(ShapeInference, DotRejectsContractingSizeMismatch) {
  ComputationBuilder b("c");
  auto l = b.parameter(0, f32({3, 4}));
  auto r = b.parameter(1, f32({5, 6}));
  EXPECT_THROW(b.dot(l, r, DotDims{{}, {}, {1}, {0}}), UserError);
}

TEST(ShapeInference, DotKeepsRequestedResultType) {
  ComputationBuilder b("c");
  auto l = b.parameter(0, Shape(DType::kBF16, {3, 4}));
  auto r = b.parameter(1, Shape(DType::kBF16, {4, 6}));
  auto d = b.dot(l, r, DotDims{{}, {}, {1}, {0}}, DType::kF32);
  EXPECT_EQ(b.shape(d), f32({3, 6}));
}

TEST(ShapeInference, StridedSliceUsesCeilDivision) {
  // [2:8:2] of 10 -> ceil(6/2) = 3; [1:8:3] -> ceil(7/3) = 3
  ComputationBuilder b("c");
  auto x = b.parameter(0, f32({10, 10}));
  auto s = b.slice(x, {{2, 8, 2}, {1, 8, 3}});
  EXPECT_EQ(b.shape(s), f32({3, 3}));
}

TEST(ShapeInference, PadWithNegativeAndInterior) {
  // dim 4, low -1, high 2, interior 1: -1 + 2 + 4 + 3*1 = 8
  ComputationBuilder b("c");
  auto x = b.parameter(0, f32({4}));
  auto z = b.scalar_constant(DType::kF32, 0);
  auto p = b.pad(x, z, {{-1, 2, 1}});
  EXPECT_EQ(b.shape(p), f32({8}));
}

TEST(ShapeInference, ReduceWindowStridedPadded) {
  // dim 7, window 3, stride 2, pad 1/1: padded 9, (9-3)/2+1 = 4
  Module m("m");
  CompId add = m.add_computation(scalar_binary_computation("add", Opcode::kAdd, DType::kF32));
  ComputationBuilder b("c", &m);
  auto x = b.parameter(0, f32({7}));
  auto z = b.scalar_constant(DType::kF32, 0);
  WindowDim w;
  w.size = 3;
  w.stride = 2;
  w.pad_low = 1;
  w.pad_high = 1;
  auto r = b.reduce_window(x, z, {w}, add);
  EXPECT_EQ(b.shape(r), f32({4}));
}

TEST(ShapeInference, ConvolutionNhwcWithDilationAndGroups) {
  // input b01f [2, 9, 9, 4], kernel 01io [3, 3, 2, 6], feature groups 2
  // (4 / 2 = 2 kernel input features), window dilation 2 -> effective 5,
  // stride 2, no pad: (9 - 5) / 2 + 1 = 3 per spatial dim -> [2, 3, 3, 6]
  ComputationBuilder b("c");
  auto in = b.parameter(0, f32({2, 9, 9, 4}));
  auto k = b.parameter(1, f32({3, 3, 2, 6}));
  ComputationBuilder::ConvolutionSpec spec;
  WindowDim w;
  w.size = 3;
  w.stride = 2;
  w.window_dilation = 2;
  spec.window = {w, w};
  spec.dims = ConvDims{0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}};
  spec.feature_group_count = 2;
  auto c = b.convolution(in, k, spec);
  EXPECT_EQ(b.shape(c), f32({2, 3, 3, 6}));
}

TEST(ShapeInference, GatherEmbeddingLookup) {
  // table [V=100, M=16], ids s32[B=4, L=8]; index_vector_dim = 2 (implicit),
  // collapsed {0}, offset_dims {2}, slice [1, 16] -> [4, 8, 16]
  ComputationBuilder b("c");
  auto table = b.parameter(0, f32({100, 16}));
  auto ids = b.parameter(1, Shape(DType::kS32, {4, 8}));
  GatherDims g;
  g.offset_dims = {2};
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = 2;
  auto out = b.gather(table, ids, g, {1, 16});
  EXPECT_EQ(b.shape(out), f32({4, 8, 16}));
}

TEST(ShapeInference, CollectivesScaleTheirDimensionByGroupSize) {
  Module m("m");
  m.set_num_partitions(8);
  CompId add = m.add_computation(scalar_binary_computation("add", Opcode::kAdd, DType::kF32));
  ComputationBuilder b("c", &m);
  auto x = b.parameter(0, f32({4, 6}));
  ReplicaGroups pairs;
  pairs.iota = IotaGroups{4, 2, {8}, {}};
  EXPECT_EQ(b.shape(b.all_gather(x, 1, pairs)), f32({4, 12}));
  EXPECT_EQ(b.shape(b.reduce_scatter(x, 0, pairs, add)), f32({2, 6}));
  EXPECT_EQ(b.shape(b.all_to_all(x, 1, pairs)), f32({4, 6}));
  // all devices (8): 4 is not divisible by 8
  EXPECT_THROW(b.reduce_scatter(x, 0, ReplicaGroups{}, add), UserError);
  EXPECT_EQ(b.shape(b.all_gather(x, 0, ReplicaGroups{})), f32({32, 6}));
}

TEST(ShapeInference, BroadcastChecksDimensionMapping) {
  ComputationBuilder b("c");
  auto x = b.parameter(0, f32({3}));
  EXPECT_EQ(b.shape(b.broadcast(x, {2, 3}, {1})), f32({2, 3}));
  EXPECT_THROW(b.broadcast(x, {2, 3}, {0}), UserError);
}

TEST(ShapeInference, BinaryOpsNeedEqualDims) {
  ComputationBuilder b("c");
  auto x = b.parameter(0, f32({3}));
  auto y = b.parameter(1, f32({4}));
  EXPECT_THROW(b.binary(Opcode::kAdd, x, y), UserError);
  EXPECT_EQ(b.shape(b.compare(x, x, ComparisonDirection::kLt)), Shape(DType::kPred, {3}));
}

TEST(ShapeInference, VariadicReduceReturnsTuple) {
  Module m("m");
  ComputationBuilder body("argmax", &m);
  {
    auto a = body.parameter(0, Shape::scalar(DType::kF32));
    auto ai = body.parameter(1, Shape::scalar(DType::kS32));
    auto c = body.parameter(2, Shape::scalar(DType::kF32));
    auto ci = body.parameter(3, Shape::scalar(DType::kS32));
    auto gt = body.compare(a, c, ComparisonDirection::kGe);
    body.tuple({body.select(gt, a, c), body.select(gt, ai, ci)});
  }
  Computation bc = std::move(body).build(body.computation().size() - 1);
  CompId id = m.add_computation(std::move(bc));
  ComputationBuilder b("c", &m);
  auto x = b.parameter(0, f32({4, 5}));
  auto i = b.iota(Shape(DType::kS32, {4, 5}), 1);
  auto r = b.reduce(
      {x, i}, {b.scalar_constant(DType::kF32, -1e9), b.scalar_constant(DType::kS32, 0)}, {1}, id);
  EXPECT_EQ(b.shape(r), Shape::tuple({f32({4}), Shape(DType::kS32, {4})}));
}

TEST(Verifier, AcceptsBuiltModuleAndRejectsWrongDeclaredShape) {
  Module m("m");
  ComputationBuilder b("main", &m);
  auto x = b.parameter(0, f32({2, 3}));
  auto t = b.transpose(x, {1, 0});
  m.set_entry(m.add_computation(std::move(b).build(t)));
  EXPECT_NO_THROW(verify_module(m));
  m.mutable_entry().mutable_instr(t).shape = f32({2, 3});
  try {
    verify_module(m);
    FAIL() << "expected a shape error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("declared shape f32[2,3] but the operands give f32[3,2]"),
              std::string::npos)
        << e.what();
  }
}

TEST(Verifier, RejectsOperandDefinedAfterUse) {
  Module m("m");
  Computation c("main");
  Instruction p;
  p.name = "p";
  p.shape = f32({2});
  Instruction neg;
  neg.name = "n";
  neg.opcode = Opcode::kNegate;
  neg.shape = f32({2});
  neg.operands = {1};
  c.append(neg);
  c.append(p);
  c.set_root(0);
  m.set_entry(m.add_computation(std::move(c)));
  EXPECT_THROW(verify_module(m), UserError);
}

TEST(Verifier, WhileSignatureMustMatch) {
  Module m("m");
  ComputationBuilder cond("cond", &m);
  auto cp = cond.parameter(0, Shape(DType::kS32, {}));
  auto limit = cond.scalar_constant(DType::kS32, 10);
  CompId cond_id =
      m.add_computation(std::move(cond).build(cond.compare(cp, limit, ComparisonDirection::kLt)));
  ComputationBuilder body("body", &m);
  auto bp = body.parameter(0, Shape(DType::kS32, {}));
  auto one = body.scalar_constant(DType::kS32, 1);
  CompId body_id = m.add_computation(std::move(body).build(body.binary(Opcode::kAdd, bp, one)));
  ComputationBuilder b("main", &m);
  auto zero = b.scalar_constant(DType::kS32, 0);
  auto w = b.while_loop(zero, cond_id, body_id);
  EXPECT_EQ(b.shape(w), Shape(DType::kS32, {}));
  auto f = b.scalar_constant(DType::kF32, 0);
  EXPECT_THROW(b.while_loop(f, cond_id, body_id), UserError);
}

TEST(ReplicaGroups, IotaFormExpandsWithTranspose) {
  // [2,4]<=[4,2]T(1,0): iota(8) as [4,2] = {{0,1},{2,3},{4,5},{6,7}},
  // transposed -> [2,4] = {{0,2,4,6},{1,3,5,7}}
  ReplicaGroups g;
  g.iota = IotaGroups{2, 4, {4, 2}, {1, 0}};
  auto groups = g.expand(8);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0], (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(groups[1], (std::vector<int64_t>{1, 3, 5, 7}));
}

TEST(Literal, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 lies exactly between bf16 neighbours 1 and 1 + 2^-7: ties to even -> 1.
  EXPECT_EQ(round_to_dtype(DType::kBF16, 1.0 + 1.0 / 256), 1.0);
  // 1 + 3*2^-8 lies between 1+2^-7 and 1+2^-6 exactly: ties to even mantissa -> 1 + 2^-6.
  EXPECT_EQ(round_to_dtype(DType::kBF16, 1.0 + 3.0 / 256), 1.0 + 1.0 / 64);
  EXPECT_EQ(round_to_dtype(DType::kS32, 2147483648.0), -2147483648.0);
  EXPECT_EQ(round_to_dtype(DType::kU32, -1.0), 4294967295.0);
  EXPECT_EQ(round_to_dtype(DType::kF16, 1.0 + 1.0 / 4096), 1.0);  // below half an f16 ulp (2^-10)
}

}  // namespace
}  // namespace podsim::compiler

namespace podsim::compiler {
namespace {

TEST(ReplicaGroups, IotaFormWithNoReshapeDimsIsOneDevice) {
  // [1,1]<=[] : iota of an empty product is the single device 0.
  ReplicaGroups g;
  g.iota = IotaGroups{1, 1, {}, {}};
  auto groups = g.expand(1);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0], (std::vector<int64_t>{0}));
}

// ---- Rules for XLA's other ops, through infer_shape directly: one
// instruction, its operand shapes, no module (called computations are
// then not inspected). Expected shapes are XLA's ShapeInference rules.

Shape infer(Opcode op, const std::vector<Shape>& operands, const Attributes& attrs = {},
            Shape written = Shape(), std::vector<CompId> called = {}) {
  Instruction in;
  in.name = "x";
  in.opcode = op;
  in.attrs = attrs;
  in.shape = std::move(written);
  in.called = std::move(called);
  std::vector<const Shape*> ptrs;
  for (const Shape& s : operands) ptrs.push_back(&s);
  return infer_shape(in, ptrs, ShapeInferenceContext{});
}

Shape of(DType t, std::vector<int64_t> dims) { return Shape(t, std::move(dims)); }

TEST(NewOpShapes, IsFiniteGivesPredOfTheOperandDims) {
  EXPECT_EQ(infer(Opcode::kIsFinite, {f32({2, 3})}), of(DType::kPred, {2, 3}));
  EXPECT_THROW(infer(Opcode::kIsFinite, {of(DType::kS32, {2})}), UserError);
}

TEST(NewOpShapes, RealImagAndAbsOfComplexGiveTheRealPartType) {
  EXPECT_EQ(infer(Opcode::kReal, {of(DType::kC64, {4})}), f32({4}));
  EXPECT_EQ(infer(Opcode::kImag, {of(DType::kC128, {4})}), of(DType::kF64, {4}));
  EXPECT_EQ(infer(Opcode::kAbs, {of(DType::kC64, {2})}), f32({2}));
  EXPECT_EQ(infer(Opcode::kAbs, {of(DType::kS32, {2})}),
            of(DType::kS32, {2}));  // abs of a real keeps its type
}

TEST(NewOpShapes, ComplexOfF32IsC64AndOfF64IsC128) {
  EXPECT_EQ(infer(Opcode::kComplex, {f32({3}), f32({3})}), of(DType::kC64, {3}));
  EXPECT_EQ(infer(Opcode::kComplex, {of(DType::kF64, {3}), of(DType::kF64, {3})}),
            of(DType::kC128, {3}));
  EXPECT_THROW(infer(Opcode::kComplex, {of(DType::kS32, {3}), of(DType::kS32, {3})}), UserError);
}

TEST(NewOpShapes, BitcastConvertF32ToU8AddsMinorDim) {
  // 4-byte f32 into 1-byte u8: a minor dim of 4/1 = 4 is appended.
  EXPECT_EQ(infer(Opcode::kBitcastConvert, {f32({3})}, {}, of(DType::kU8, {3, 4})),
            of(DType::kU8, {3, 4}));
  // f64 -> bf16: 8/2 = 4.
  EXPECT_EQ(infer(Opcode::kBitcastConvert, {of(DType::kF64, {})}, {}, of(DType::kBF16, {4})),
            of(DType::kBF16, {4}));
}

TEST(NewOpShapes, BitcastConvertU8ToF32RemovesMinorDimAndSameWidthKeepsDims) {
  EXPECT_EQ(infer(Opcode::kBitcastConvert, {of(DType::kU8, {3, 4})}, {}, f32({3})), f32({3}));
  EXPECT_EQ(infer(Opcode::kBitcastConvert, {f32({3})}, {}, of(DType::kS32, {3})),
            of(DType::kS32, {3}));
  // The narrow operand's minor dim must hold exactly one wide element.
  EXPECT_THROW(infer(Opcode::kBitcastConvert, {of(DType::kU8, {3, 2})}, {}, f32({3})), UserError);
}

TEST(NewOpShapes, BitcastKeepsWrittenShapeOfTheSameByteSize) {
  EXPECT_EQ(infer(Opcode::kBitcast, {f32({2, 4})}, {}, f32({8})), f32({8}));
  EXPECT_THROW(infer(Opcode::kBitcast, {f32({2, 4})}, {}, f32({9})), UserError);
}

TEST(NewOpShapes, SortReturnsItsOperandsAsATupleWhenVariadic) {
  Attributes a;
  a.dimensions = {1};
  EXPECT_EQ(infer(Opcode::kSort, {f32({2, 8})}, a, {}, {0}), f32({2, 8}));
  EXPECT_EQ(infer(Opcode::kSort, {f32({2, 8}), of(DType::kS32, {2, 8})}, a, {}, {0}),
            Shape::tuple({f32({2, 8}), of(DType::kS32, {2, 8})}));
  EXPECT_THROW(infer(Opcode::kSort, {f32({2, 8}), of(DType::kS32, {2, 7})}, a, {}, {0}), UserError);
  a.dimensions = {2};
  EXPECT_THROW(infer(Opcode::kSort, {f32({2, 8})}, a, {}, {0}), UserError);
}

TEST(NewOpShapes, TopKReplacesTheLastDimByKWithS32Indices) {
  Attributes a;
  a.k = 5;
  EXPECT_EQ(infer(Opcode::kTopK, {of(DType::kBF16, {4, 100})}, a),
            Shape::tuple({of(DType::kBF16, {4, 5}), of(DType::kS32, {4, 5})}));
  a.k = 101;
  EXPECT_THROW(infer(Opcode::kTopK, {of(DType::kBF16, {4, 100})}, a), UserError);
}

TEST(NewOpShapes, FftRealTransformsHalveTheLastDim) {
  Attributes a;
  a.fft_length = {16};
  a.fft_type = "RFFT";  // n = 16 real -> 16/2 + 1 = 9 complex
  EXPECT_EQ(infer(Opcode::kFft, {f32({4, 16})}, a), of(DType::kC64, {4, 9}));
  a.fft_type = "IRFFT";  // 9 complex -> 16 real
  EXPECT_EQ(infer(Opcode::kFft, {of(DType::kC64, {4, 9})}, a), f32({4, 16}));
  EXPECT_THROW(infer(Opcode::kFft, {of(DType::kC64, {4, 8})}, a), UserError);
  a.fft_type = "FFT";
  a.fft_length = {4, 8};
  EXPECT_EQ(infer(Opcode::kFft, {of(DType::kC128, {2, 4, 8})}, a), of(DType::kC128, {2, 4, 8}));
  EXPECT_THROW(infer(Opcode::kFft, {f32({2, 4, 8})}, a), UserError);  // FFT needs complex
  a.fft_length = {4, 7};
  EXPECT_THROW(infer(Opcode::kFft, {of(DType::kC64, {2, 4, 8})}, a), UserError);
}

TEST(NewOpShapes, TokensDimensionSizesAndDependencies) {
  const Shape token = Shape::scalar(DType::kToken);
  EXPECT_EQ(infer(Opcode::kAfterAll, {}), token);
  EXPECT_EQ(infer(Opcode::kAfterAll, {token, token}), token);
  EXPECT_THROW(infer(Opcode::kAfterAll, {f32({})}), UserError);
  Attributes a;
  a.dimensions = {1};
  EXPECT_EQ(infer(Opcode::kGetDimensionSize, {f32({8, 4})}, a), Shape::scalar(DType::kS32));
  EXPECT_EQ(infer(Opcode::kSetDimensionSize, {f32({8, 4}), Shape::scalar(DType::kS32)}, a),
            f32({8, 4}));
  a.dimensions = {2};
  EXPECT_THROW(infer(Opcode::kGetDimensionSize, {f32({8, 4})}, a), UserError);
  EXPECT_EQ(infer(Opcode::kAddDependency, {f32({3}), token}), f32({3}));
  EXPECT_EQ(infer(Opcode::kOutfeed, {f32({3}), token}), token);
}

TEST(NewOpShapes, SelectAndScatterSourceHasTheWindowOutputDims) {
  // 4x4 operand, 2x2 windows of stride 2: (4 - 2) / 2 + 1 = 2 per dim.
  Attributes a;
  a.window = {WindowDim{2, 2}, WindowDim{2, 2}};
  const Shape zero = Shape::scalar(DType::kF32);
  EXPECT_EQ(infer(Opcode::kSelectAndScatter, {f32({4, 4}), f32({2, 2}), zero}, a, {}, {0, 1}),
            f32({4, 4}));
  EXPECT_THROW(infer(Opcode::kSelectAndScatter, {f32({4, 4}), f32({3, 3}), zero}, a, {}, {0, 1}),
               UserError);
}

TEST(NewOpShapes, BatchNormTrainingAndGradReturnFeatureTuples) {
  Attributes a;
  a.feature_index = 3;
  const Shape x = f32({2, 4, 4, 6}), f = f32({6});
  EXPECT_EQ(infer(Opcode::kBatchNormTraining, {x, f, f}, a), Shape::tuple({x, f, f}));
  EXPECT_EQ(infer(Opcode::kBatchNormInference, {x, f, f, f, f}, a), x);
  EXPECT_EQ(infer(Opcode::kBatchNormGrad, {x, f, f, f, x}, a), Shape::tuple({x, f, f}));
  EXPECT_THROW(infer(Opcode::kBatchNormTraining, {x, f32({4}), f}, a), UserError);
}

TEST(NewOpShapes, TriangularSolveAndCholesky) {
  Attributes a;
  a.left_side = true;  // a x = b: b is [.., m, n] with m = 4
  EXPECT_EQ(infer(Opcode::kTriangularSolve, {f32({2, 4, 4}), f32({2, 4, 3})}, a), f32({2, 4, 3}));
  a.left_side = false;  // x a = b: b is [.., n, m]
  EXPECT_EQ(infer(Opcode::kTriangularSolve, {f32({2, 4, 4}), f32({2, 3, 4})}, a), f32({2, 3, 4}));
  EXPECT_THROW(infer(Opcode::kTriangularSolve, {f32({2, 4, 4}), f32({2, 4, 3})}, a), UserError);
  EXPECT_EQ(infer(Opcode::kCholesky, {f32({3, 3})}), f32({3, 3}));
  EXPECT_THROW(infer(Opcode::kCholesky, {f32({3, 2})}), UserError);
}

TEST(NewOpShapes, AsyncPairsReadTheirResultOutOfTheStartTuple) {
  const Shape x = f32({2, 8}), gathered = f32({8, 8});
  // all-gather-start (operand, result) -> all-gather-done result
  EXPECT_EQ(infer(Opcode::kAllGatherDone, {Shape::tuple({x, gathered})}), gathered);
  // async-start ((operands), result, context) -> async-done result
  const Shape start = Shape::tuple({Shape::tuple({x}), gathered, Shape::scalar(DType::kU32)});
  EXPECT_EQ(infer(Opcode::kAsyncDone, {start}), gathered);
  EXPECT_EQ(infer(Opcode::kAsyncUpdate, {start}), start);
  // copy-start (dst, src, u32[]) -> copy-done dst
  EXPECT_EQ(infer(Opcode::kCopyDone, {Shape::tuple({x, x, Shape::scalar(DType::kU32)})}), x);
  EXPECT_THROW(infer(Opcode::kCopyDone, {x}), UserError);
}

TEST(NewOpShapes, SendAndRecvDone) {
  const Shape token = Shape::scalar(DType::kToken), u32 = Shape::scalar(DType::kU32);
  EXPECT_EQ(infer(Opcode::kSend, {f32({4}), token}), Shape::tuple({f32({4}), u32, token}));
  EXPECT_EQ(infer(Opcode::kSendDone, {Shape::tuple({f32({4}), u32, token})}), token);
  EXPECT_EQ(infer(Opcode::kRecvDone, {Shape::tuple({f32({4}), u32, token})}),
            Shape::tuple({f32({4}), token}));
}

TEST(NewOpShapes, SparseDotScalesTheStoredDimByMOverN) {
  // L.1@2:4: lhs dim 1 stores 2 of every 4: 64 stored -> 128 logical.
  Attributes a;
  a.dot = DotDims{{}, {}, {1}, {0}};
  a.extra = {{"sparsity", "L.1@2:4"}};
  EXPECT_EQ(
      infer(Opcode::kDot, {f32({8, 64}), f32({128, 16}), of(DType::kU16, {8, 8})}, a, f32({8, 16})),
      f32({8, 16}));
  EXPECT_THROW(
      infer(Opcode::kDot, {f32({8, 64}), f32({64, 16}), of(DType::kU16, {8, 8})}, a, f32({8, 16})),
      UserError);
}

TEST(NewOpShapes, VariadicScatterAndReduceWindowReturnTuples) {
  Attributes a;
  a.scatter.update_window_dims = {1};
  a.scatter.inserted_window_dims = {0};
  a.scatter.scatter_dims_to_operand_dims = {0};
  a.scatter.index_vector_dim = 1;
  const Shape ids = of(DType::kS32, {3, 1});
  EXPECT_EQ(infer(Opcode::kScatter,
                  {f32({5, 2}), of(DType::kS32, {5, 2}), ids, f32({3, 2}), of(DType::kS32, {3, 2})},
                  a, {}, {0}),
            Shape::tuple({f32({5, 2}), of(DType::kS32, {5, 2})}));
  Attributes w;
  w.window = {WindowDim{2, 2}};  // 6 -> (6 - 2) / 2 + 1 = 3
  EXPECT_EQ(infer(Opcode::kReduceWindow,
                  {f32({6}), of(DType::kS32, {6}), Shape::scalar(DType::kF32),
                   Shape::scalar(DType::kS32)},
                  w, {}, {0}),
            Shape::tuple({f32({3}), of(DType::kS32, {3})}));
}

TEST(NewOpShapes, CopyOfATupleAndOptBarrierPassTheirOperandThrough) {
  const Shape t = Shape::tuple({f32({2}), Shape::scalar(DType::kS32)});
  EXPECT_EQ(infer(Opcode::kCopy, {t}), t);
  EXPECT_EQ(infer(Opcode::kOptimizationBarrier, {t}), t);
}

TEST(NewOpShapes, ErrorsNameTheInstructionAtItsLocation) {
  Instruction in;
  in.name = "bad_fft";
  in.opcode = Opcode::kFft;
  in.attrs.fft_type = "RFFT";
  in.attrs.fft_length = {8};
  in.location = SourceLocation{"m.hlo", 7, 3};
  const Shape c = of(DType::kC64, {8});
  try {
    infer_shape(in, {&c}, ShapeInferenceContext{});
    ADD_FAILURE() << "RFFT of a complex operand was accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 7);
    EXPECT_EQ(e.location().column, 3);
    EXPECT_NE(e.message().find("fft 'bad_fft'"), std::string::npos) << e.what();
  }
}

TEST(NewOpShapes, StartOpsCheckTheirOperandsAndResultButNotContexts) {
  // all-gather-start (operand, result): dim 0 gathered over a group of 4, 2 -> 8.
  Attributes a;
  a.dimensions = {0};
  a.replica_groups.explicit_groups = {{0, 1, 2, 3}};
  const Shape x = f32({2, 8});
  const Shape good = Shape::tuple({x, f32({8, 8})});
  EXPECT_EQ(infer(Opcode::kAllGatherStart, {x}, a, good), good);
  EXPECT_THROW(infer(Opcode::kAllGatherStart, {x}, a, Shape::tuple({x, f32({4, 8})})), UserError);
  // Short form all-to-all-start ((operands), result, any contexts).
  Attributes s = a;
  s.async_wrapped = Opcode::kAllToAll;
  const Shape u32 = Shape::scalar(DType::kU32);
  const Shape a2a = Shape::tuple({Shape::tuple({f32({4, 2})}), f32({4, 2}), u32, u32});
  EXPECT_EQ(infer(Opcode::kAsyncStart, {f32({4, 2})}, s, a2a), a2a);
  EXPECT_THROW(
      infer(Opcode::kAsyncStart, {f32({4, 2})}, s, Shape::tuple({f32({4, 2}), f32({4, 2})})),
      UserError);
  // copy-start (destination, source, context).
  EXPECT_EQ(infer(Opcode::kCopyStart, {x}, {}, Shape::tuple({x, x, u32})),
            Shape::tuple({x, x, u32}));
  EXPECT_THROW(infer(Opcode::kCopyStart, {x}, {}, Shape::tuple({f32({2, 9}), x, u32})), UserError);
}

TEST(NewOpShapes, RngBitGeneratorInfeedAndRecvKeepTheirWrittenTuples) {
  const Shape state = Shape(DType::kU64, {2}), token = Shape::scalar(DType::kToken);
  const Shape bits = Shape::tuple({state, Shape(DType::kU32, {8})});
  EXPECT_EQ(infer(Opcode::kRngBitGenerator, {state}, {}, bits), bits);
  EXPECT_THROW(infer(Opcode::kRngBitGenerator, {Shape(DType::kU64, {3})}, {}, bits), UserError);
  EXPECT_EQ(infer(Opcode::kRngBitGenerator, {state}, {}, Shape(DType::kU32, {8})),
            Shape(DType::kU32, {8}));
  const Shape feed = Shape::tuple({f32({2, 3}), token});
  EXPECT_EQ(infer(Opcode::kInfeed, {token}, {}, feed), feed);
  EXPECT_THROW(infer(Opcode::kInfeed, {token}, {}, f32({2, 3})), UserError);
  EXPECT_THROW(infer(Opcode::kRecv, {token}, {}, feed), UserError);  // recv adds a u32[] context
}

TEST(Literal, ComplexValuesPrintAsRealImagPairs) {
  Literal z(Shape(DType::kC64, {2}), {1, 0, 0.5, -2});
  EXPECT_EQ(z.values_to_string(), "{ (1, 0), (0.5, -2) }");
  EXPECT_EQ(Literal(Shape::scalar(DType::kC128), {3, 4}).values_to_string(), "(3, 4)");
}

TEST(NewOpShapes, CombinedCollectivesReturnATupleOfPerOperandResults) {
  // Groups of 2: all-gather doubles dim 0, reduce-scatter halves it.
  Attributes a;
  a.dimensions = {0};
  a.replica_groups.explicit_groups = {{0, 1}, {2, 3}};
  const Shape x = f32({4, 3}), y = Shape(DType::kS32, {6});
  EXPECT_EQ(infer(Opcode::kAllReduce, {x, y}, a, {}, {0}), Shape::tuple({x, y}));
  EXPECT_EQ(infer(Opcode::kAllGather, {x, y}, a),
            Shape::tuple({f32({8, 3}), Shape(DType::kS32, {12})}));
  EXPECT_EQ(infer(Opcode::kReduceScatter, {x, y}, a, {}, {0}),
            Shape::tuple({f32({2, 3}), Shape(DType::kS32, {3})}));
  EXPECT_THROW(infer(Opcode::kReduceScatter, {x, f32({3})}, a, {}, {0}), UserError);  // 3 is odd
  // Tuple all-to-all: one equal chunk per group member, no dimensions.
  Attributes t;
  t.replica_groups.explicit_groups = {{0, 1}, {2, 3}};
  EXPECT_EQ(infer(Opcode::kAllToAll, {x, x}, t), Shape::tuple({x, x}));
  EXPECT_THROW(infer(Opcode::kAllToAll, {x, x, x}, t), UserError);
  // all-gather-start of two operands: ((operands), (results)).
  const Shape start =
      Shape::tuple({Shape::tuple({x, y}), Shape::tuple({f32({8, 3}), Shape(DType::kS32, {12})})});
  EXPECT_EQ(infer(Opcode::kAllGatherStart, {x, y}, a, start), start);
}

TEST(DotSparsityAttribute, ParsesSideDimAndNOfMAndSizesTheMetadataFields) {
  // "L.2@2:4": lhs, dim 2, 2 of every 4. ceil(log2 4) = 2 bits a field, so a
  // u16 holds 8 fields and a u8 4; 1:3 needs 2 bits too (3 positions).
  Attributes a;
  a.extra = {{"sparsity", "L.2@2:4"}};
  const auto lhs = dot_sparsity(a);
  ASSERT_TRUE(lhs.has_value());
  EXPECT_EQ(lhs->operand, 0);
  EXPECT_EQ(lhs->dim, 2);
  EXPECT_EQ(lhs->n, 2);
  EXPECT_EQ(lhs->m, 4);
  EXPECT_EQ(lhs->index_bits(), 2);
  EXPECT_EQ(lhs->values_per_element(DType::kU16), 8);
  EXPECT_EQ(lhs->values_per_element(DType::kU8), 4);
  a.extra = {{"sparsity", "R.0@1:3"}};
  const auto rhs = dot_sparsity(a);
  ASSERT_TRUE(rhs.has_value());
  EXPECT_EQ(rhs->operand, 1);
  EXPECT_EQ(rhs->index_bits(), 2);
  a.extra = {{"sparsity", "L.1@4:2"}};  // n > m is not a sparsity
  EXPECT_FALSE(dot_sparsity(a).has_value());
  a.extra = {};
  EXPECT_FALSE(dot_sparsity(a).has_value());
}

}  // namespace
}  // namespace podsim::compiler
