// Interpreter: gather (embedding lookup, clamping, 2-D windows, batching
// dims) and scatter (duplicate-index add, out-of-bounds skipping, windows,
// overwrite, batching dims, variadic).
#include <gtest/gtest.h>

#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

using V = std::vector<double>;

// Embedding table: row r = {10r, 10r + 1}, 4 rows.
Literal table() { return f32({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31}); }

constexpr const char* kEmbedding = R"(HloModule m
ENTRY main {
  t = f32[4,2] parameter(0)
  i = s32[2] parameter(1)
  ROOT g = f32[2,2] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
})";

TEST(Gather, EmbeddingLookup) {
  // ids {2, 0} pick rows 2 and 0.
  EXPECT_EQ(evaluate(parse_verified(kEmbedding), {table(), s32({2}, {2, 0})}).values(),
            (V{20, 21, 0, 1}));
}

TEST(Gather, StartIndicesAreClamped) {
  // ids {5, -1} clamp into [0, 4-1] -> rows 3 and 0.
  EXPECT_EQ(evaluate(parse_verified(kEmbedding), {table(), s32({2}, {5, -1})}).values(),
            (V{30, 31, 0, 1}));
}

TEST(Gather, TwoDimensionalWindowsWithIndexVectors) {
  // [3,3] iota, 2x2 windows at (0,1), (1,0) and (2,2) -> clamped to (1,1):
  // [[1,2],[4,5]], [[3,4],[6,7]], [[4,5],[7,8]].
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[3,3] parameter(0)
  i = s32[3,2] parameter(1)
  ROOT g = f32[3,2,2] gather(p, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}
})");
  EXPECT_EQ(
      evaluate(m, {iota_literal(DType::kF32, {3, 3}), s32({3, 2}, {0, 1, 1, 0, 2, 2})}).values(),
      (V{1, 2, 4, 5, 3, 4, 6, 7, 4, 5, 7, 8}));
}

TEST(Gather, IndexVectorDimFirst) {
  // index_vector_dim = 0: indices [2,2] hold vectors in columns: (0,1) and (2,0).
  // 1x1 windows of [3,3] iota collapsed: p[0][1] = 1, p[2][0] = 6.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[3,3] parameter(0)
  i = s32[2,2] parameter(1)
  ROOT g = f32[2] gather(p, i), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=0, slice_sizes={1,1}
})");
  EXPECT_EQ(evaluate(m, {iota_literal(DType::kF32, {3, 3}), s32({2, 2}, {0, 2, 1, 0})}).values(),
            (V{1, 6}));
}

TEST(Gather, OperandAndIndicesBatchingDims) {
  // operand [2,3]: batch 0 = {0,1,2}, batch 1 = {10,11,12}; ids {2, 0} per
  // batch -> {p[0][2], p[1][0]} = {2, 10}.
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[2,3] parameter(0)
  i = s32[2] parameter(1)
  ROOT g = f32[2] gather(p, i), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}
})");
  EXPECT_EQ(evaluate(m, {f32({2, 3}, {0, 1, 2, 10, 11, 12}), s32({2}, {2, 0})}).values(),
            (V{2, 10}));
}

constexpr const char* kScatterAdd = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY main {
  p = f32[4] parameter(0)
  i = s32[3] parameter(1)
  u = f32[3] parameter(2)
  ROOT s = f32[4] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})";

TEST(Scatter, AddAccumulatesDuplicateIndices) {
  // ids {1,1,3}, updates {1,2,5}: slot 1 gets 1+2 = 3, slot 3 gets 5.
  Literal zeros{Shape(DType::kF32, {4})};
  EXPECT_EQ(evaluate(parse_verified(kScatterAdd), {zeros, s32({3}, {1, 1, 3}), f32({3}, {1, 2, 5})})
                .values(),
            (V{0, 3, 0, 5}));
}

TEST(Scatter, OutOfBoundsUpdatesAreSkipped) {
  // ids {1, 4, -1}: only id 1 is in range.
  Literal zeros{Shape(DType::kF32, {4})};
  EXPECT_EQ(
      evaluate(parse_verified(kScatterAdd), {zeros, s32({3}, {1, 4, -1}), f32({3}, {1, 2, 3})})
          .values(),
      (V{0, 1, 0, 0}));
}

TEST(Scatter, RowWindowsAndWholeWindowSkip) {
  // Rows of [3,2]: ids {2, 0}, updates {{1,2},{3,4}} -> row 2 = {1,2}, row 0 = {3,4}.
  Module rows = parse_verified(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY main {
  p = f32[3,2] parameter(0)
  i = s32[2] parameter(1)
  u = f32[2,2] parameter(2)
  ROOT s = f32[3,2] scatter(p, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})");
  Literal zeros{Shape(DType::kF32, {3, 2})};
  EXPECT_EQ(evaluate(rows, {zeros, s32({2}, {2, 0}), f32({2, 2}, {1, 2, 3, 4})}).values(),
            (V{3, 4, 0, 0, 1, 2}));

  // A 2-wide window into [4]: at 2 it covers [2,4) and lands; at 3 it would
  // cover [3,5) and is skipped whole (not clamped, not partially written).
  Module window = parse_verified(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY main {
  p = f32[4] parameter(0)
  i = s32[1] parameter(1)
  u = f32[1,2] parameter(2)
  ROOT s = f32[4] scatter(p, i, u), update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})");
  Literal z4{Shape(DType::kF32, {4})};
  EXPECT_EQ(evaluate(window, {z4, s32({1}, {2}), f32({1, 2}, {7, 8})}).values(), (V{0, 0, 7, 8}));
  EXPECT_EQ(evaluate(window, {z4, s32({1}, {3}), f32({1, 2}, {7, 8})}).values(), (V{0, 0, 0, 0}));
}

TEST(Scatter, OverwriteBodyAndBatchingDims) {
  // Overwrite (body returns the update): {1,1,1} with ids {0,2} <- {7,8} = {7,1,8}.
  Module assign = parse_verified(R"(HloModule m
assign {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY main {
  p = f32[3] parameter(0)
  i = s32[2] parameter(1)
  u = f32[2] parameter(2)
  ROOT s = f32[3] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=assign
})");
  EXPECT_EQ(evaluate(assign, {f32({3}, {1, 1, 1}), s32({2}, {0, 2}), f32({2}, {7, 8})}).values(),
            (V{7, 1, 8}));

  // Batching: operand [2,3], batch b writes its update at column ids[b]:
  // p[0][2] = 5, p[1][0] = 6.
  Module batched = parse_verified(R"(HloModule m
assign {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY main {
  p = f32[2,3] parameter(0)
  i = s32[2] parameter(1)
  u = f32[2] parameter(2)
  ROOT s = f32[2,3] scatter(p, i, u), update_window_dims={}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=1, to_apply=assign
})");
  Literal zeros{Shape(DType::kF32, {2, 3})};
  EXPECT_EQ(evaluate(batched, {zeros, s32({2}, {2, 0}), f32({2}, {5, 6})}).values(),
            (V{0, 0, 5, 6, 0, 0}));
}

TEST(Scatter, VariadicUpdatesBothOperands) {
  // Two operands scattered together with a (sum, max) body: ids {0,0},
  // values a {1,2}, b {5,3}: a[0] = 0+1+2 = 3, b[0] = max(0,5,3) = 5.
  // (Parsed without the verifier: its shape inference takes single-operand
  // scatter only.)
  Module m = parse_hlo(R"(HloModule m
combine {
  a0 = f32[] parameter(0)
  b0 = f32[] parameter(1)
  a1 = f32[] parameter(2)
  b1 = f32[] parameter(3)
  s = f32[] add(a0, a1)
  x = f32[] maximum(b0, b1)
  ROOT t = (f32[], f32[]) tuple(s, x)
}
ENTRY main {
  p = f32[2] parameter(0)
  q = f32[2] parameter(1)
  i = s32[2] parameter(2)
  u = f32[2] parameter(3)
  v = f32[2] parameter(4)
  ROOT s = (f32[2], f32[2]) scatter(p, q, i, u, v), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=combine
})");
  Literal zeros{Shape(DType::kF32, {2})};
  Literal r = evaluate(m, {zeros, zeros, s32({2}, {0, 0}), f32({2}, {1, 2}), f32({2}, {5, 3})});
  EXPECT_EQ(r.element(0).values(), (V{3, 0}));
  EXPECT_EQ(r.element(1).values(), (V{5, 0}));
}

}  // namespace
}  // namespace podsim::compiler::testing
