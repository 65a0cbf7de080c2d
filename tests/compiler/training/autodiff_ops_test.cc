// Finite-difference checks of autodiff, one test per differentiated op
// family (f64 tensors; tolerance derivation in gradient_check.h).
#include <gtest/gtest.h>

#include "common/error.h"
#include "compiler/ir/flash_attention.h"
#include "gradient_check.h"

namespace podsim::compiler::testing {
namespace {

const DType F = DType::kF64;

TEST(AutodiffOps, UnarySmoothOps) {
  ForwardBuilder f;
  InstrId x = f.param(Shape(F, {3, 4}), "x");
  auto& b = f.b;
  // log, sqrt, rsqrt, log1p need positive arguments: x*x + 1 >= 1.
  InstrId pos = b.binary(Opcode::kAdd, b.binary(Opcode::kMultiply, x, x),
                         b.broadcast(b.scalar_constant(F, 1), {3, 4}, {}));
  InstrId sum = b.unary(Opcode::kExp, x);
  for (Opcode op : {Opcode::kLog, Opcode::kSqrt, Opcode::kRsqrt, Opcode::kLog1p})
    sum = b.binary(Opcode::kAdd, sum, b.unary(op, pos));
  for (Opcode op : {Opcode::kTanh, Opcode::kNegate, Opcode::kCos, Opcode::kSin, Opcode::kLogistic,
                    Opcode::kExpm1, Opcode::kCopy, Opcode::kAbs})
    sum = b.binary(Opcode::kAdd, sum, b.unary(op, x));
  Module m = f.finish(sum);
  check_gradients(m, default_args(m));
}

TEST(AutodiffOps, BinaryOps) {
  ForwardBuilder f;
  InstrId x = f.param(Shape(F, {2, 3}), "x");
  InstrId y = f.param(Shape(F, {2, 3}), "y");
  auto& b = f.b;
  InstrId one = b.broadcast(b.scalar_constant(F, 1), {2, 3}, {});
  InstrId ypos =
      b.binary(Opcode::kAdd, b.binary(Opcode::kMultiply, y, y), one);  // >= 1, safe divisor/base
  InstrId sum = b.binary(Opcode::kAdd, x, y);
  sum = b.binary(Opcode::kAdd, sum, b.binary(Opcode::kSubtract, x, y));
  sum = b.binary(Opcode::kAdd, sum, b.binary(Opcode::kMultiply, x, y));
  sum = b.binary(Opcode::kAdd, sum, b.binary(Opcode::kDivide, x, ypos));
  // random_literal values are multiples of 1/64 and may tie; max/min of x
  // and y + 1/128 never tie, so the derivative exists.
  InstrId shifted =
      b.binary(Opcode::kAdd, y, b.broadcast(b.scalar_constant(F, 1.0 / 128), {2, 3}, {}));
  sum = b.binary(Opcode::kAdd, sum, b.binary(Opcode::kMaximum, x, shifted));
  sum = b.binary(Opcode::kAdd, sum, b.binary(Opcode::kMinimum, x, shifted));
  sum = b.binary(Opcode::kAdd, sum, b.binary(Opcode::kPower, ypos, x));
  Module m = f.finish(sum);
  check_gradients(m, default_args(m));
}

TEST(AutodiffOps, BroadcastReshapeTranspose) {
  ForwardBuilder f;
  InstrId v = f.param(Shape(F, {3}), "v");
  InstrId w = f.param(Shape(F, {2, 3}), "w");
  auto& b = f.b;
  InstrId bv = b.broadcast(v, {2, 3, 4}, {1});
  InstrId bw = b.broadcast(w, {4, 2, 3}, {1, 2});
  InstrId t = b.transpose(bw, {1, 2, 0});  // [2,3,4]
  // Unsorted broadcast dims: w dim 0 -> out dim 1, w dim 1 -> out dim 0.
  InstrId swapped = b.transpose(b.broadcast(w, {3, 2, 4}, {1, 0}), {1, 0, 2});  // [2,3,4]
  InstrId prod = b.binary(Opcode::kMultiply, b.binary(Opcode::kMultiply, bv, t), swapped);
  InstrId r = b.reshape(prod, {6, 4});
  Module m = f.finish(r);
  check_gradients(m, default_args(m));
}

TEST(AutodiffOps, SlicePadConcatReverse) {
  ForwardBuilder f;
  InstrId x = f.param(Shape(F, {5, 6}), "x");
  InstrId y = f.param(Shape(F, {2, 3}), "y");
  InstrId pv = f.param(Shape::scalar(F), "pad_value");
  auto& b = f.b;
  InstrId strided = b.slice(x, {{1, 5, 2}, {0, 6, 3}});       // [2,2]
  InstrId padded = b.pad(y, pv, {{1, -1, 1}, {-1, 2, 0}});    // [2+1-1+1, 3-1+2] = [3,4]
  InstrId cropped = b.slice(padded, {{0, 2, 1}, {0, 4, 1}});  // [2,4]
  InstrId cat = b.concatenate({strided, cropped, b.reverse(y, {0, 1})}, 1);  // [2, 2+4+3]
  Module m = f.finish(cat);
  check_gradients(m, default_args(m));
}

TEST(AutodiffOps, ReduceAddAndMax) {
  ForwardBuilder f;
  InstrId x = f.param(Shape(F, {3, 4, 2}), "x");
  auto& b = f.b;
  CompId max = f.reducers.get(Opcode::kMaximum, F);
  InstrId summed = training::reduce_sum(b, f.reducers, x, {0, 2});        // [4]
  InstrId maxed = b.reduce({x}, {b.scalar_constant(F, -1e9)}, {1}, max);  // [3,2]
  InstrId mixed =
      b.binary(Opcode::kAdd, b.broadcast(summed, {3, 4}, {1}),
               b.broadcast(training::reduce_sum(b, f.reducers, maxed, {1}), {3, 4}, {0}));
  Module m = f.finish(mixed);
  // Distinct values so the maxima are unique: x = k / 64 for a permutation.
  std::vector<Literal> args = default_args(m);
  for (size_t k = 0; k < args[0].values().size(); ++k)
    args[0].mutable_values()[k] = static_cast<double>((k * 7) % 24) / 64;
  check_gradients(m, args);
}

TEST(AutodiffOps, StopGradientPassesTheValueButNoAdjoint) {
  // f(x) = sum(x * stop_gradient(x)) = sum(x^2) in value, but the barrier
  // makes the second factor a constant: df/dx = x (not 2x). The root
  // element 0 is the value, element 1 the gradient.
  ForwardBuilder f;
  InstrId x = f.param(Shape(F, {3}), "x");
  InstrId frozen = f.b.custom_call({x}, kStopGradientTarget, Shape(F, {3}));
  InstrId product = f.b.binary(Opcode::kMultiply, x, frozen);
  InstrId total = training::reduce_sum(f.b, f.reducers, product, {0});
  f.module.set_entry(f.module.add_computation(std::move(f.b).build(total)));
  Literal r = evaluate(build_gradient_module(f.module), {Literal(Shape(F, {3}), {0.5, -1, 2})});
  EXPECT_EQ(r.element(0).values(), (std::vector<double>{0.25 + 1 + 4}));
  EXPECT_EQ(r.element(1).values(), (std::vector<double>{0.5, -1, 2}));
}

TEST(AutodiffOps, MaxReduceSplitsTiesEvenly) {
  // max(a, a) over two equal elements: each gets half of the adjoint 1.
  ForwardBuilder f;
  InstrId x = f.param(Shape(F, {2}), "x");
  InstrId maxed =
      f.b.reduce({x}, {f.b.scalar_constant(F, -1e9)}, {0}, f.reducers.get(Opcode::kMaximum, F));
  f.module.set_entry(f.module.add_computation(std::move(f.b).build(maxed)));
  Literal r = evaluate(build_gradient_module(f.module), {Literal(Shape(F, {2}), {0.25, 0.25})});
  EXPECT_EQ(r.element(1).values(), (std::vector<double>{0.5, 0.5}));
}

TEST(AutodiffOps, DotWithBatchAndPermutedContracting) {
  ForwardBuilder f;
  InstrId lhs = f.param(Shape(F, {2, 3, 4, 5}), "lhs");  // batch 0, contracting 3 and 1
  InstrId rhs = f.param(Shape(F, {5, 2, 6, 3}), "rhs");  // batch 1, contracting 0 and 3
  DotDims d;
  d.lhs_batch = {0};
  d.rhs_batch = {1};
  d.lhs_contracting = {3, 1};
  d.rhs_contracting = {0, 3};
  InstrId out = f.b.dot(lhs, rhs, d);  // [2, 4, 6]
  Module m = f.finish(out);
  check_gradients(m, default_args(m));
}

TEST(AutodiffOps, GatherAndScatter) {
  ForwardBuilder f;
  InstrId table = f.param(Shape(F, {5, 3}), "table");
  InstrId ids = f.input(Shape(DType::kS32, {4, 1}), "ids");
  InstrId upd = f.param(Shape(F, {2, 3}), "updates");
  InstrId base = f.param(Shape(F, {5, 3}), "base");
  auto& b = f.b;
  GatherDims gd;
  gd.offset_dims = {1};
  gd.collapsed_slice_dims = {0};
  gd.start_index_map = {0};
  gd.index_vector_dim = 1;
  InstrId rows = b.gather(table, ids, gd, {1, 3});  // [4,3]
  ScatterDims sd;
  sd.update_window_dims = {1};
  sd.inserted_window_dims = {0};
  sd.scatter_dims_to_operand_dims = {0};
  sd.index_vector_dim = 1;
  InstrId sids = b.constant(Literal(Shape(DType::kS32, {2, 1}), {3, 1}));
  InstrId added = b.scatter(base, sids, upd, sd, f.reducers.get(Opcode::kAdd, F));  // [5,3]
  // Overwrite scatter: the body returns its second argument.
  ComputationBuilder ow("overwrite");
  ow.parameter(0, Shape::scalar(F), "old");
  InstrId nv = ow.parameter(1, Shape::scalar(F), "new");
  CompId overwrite = f.module.add_computation(std::move(ow).build(nv));
  InstrId written = b.scatter(added, sids, b.unary(Opcode::kSin, upd), sd, overwrite);
  InstrId both = b.concatenate({rows, written}, 0);
  Module m = f.finish(both);
  std::vector<Literal> args = default_args(m);
  args[1] = Literal(Shape(DType::kS32, {4, 1}), {2, 0, 2, 4});  // repeated row 2: adjoints add up
  check_gradients(m, args);
}

TEST(AutodiffOps, SelectConvertClampDynamicSlices) {
  ForwardBuilder f;
  InstrId x = f.param(Shape(F, {4, 3}), "x");
  InstrId y = f.param(Shape(F, {4, 3}), "y");
  InstrId u = f.param(Shape(F, {2, 3}), "u");
  InstrId start = f.input(Shape::scalar(DType::kS32), "start");
  auto& b = f.b;
  InstrId zero_s = b.scalar_constant(DType::kS32, 0);
  InstrId pred = b.compare(x, y, ComparisonDirection::kGt);
  InstrId sel = b.select(pred, b.unary(Opcode::kSin, x), b.binary(Opcode::kMultiply, y, y));
  // f64 -> f64 through bf16 would round; convert to f32 and back keeps 24 bits,
  // so use the convert pair only on a multiple of 1/64 path: x * 1 exact.
  InstrId conv = b.convert(b.convert(x, DType::kF32), F);
  InstrId lo = b.scalar_constant(F, -0.3), hi = b.scalar_constant(F, 0.4);
  InstrId clamped = b.clamp(lo, y, hi);
  InstrId ds = b.dynamic_slice(sel, {start, zero_s}, {2, 3});  // [2,3]
  InstrId dus =
      b.dynamic_update_slice(clamped, b.binary(Opcode::kMultiply, u, ds), {start, zero_s});
  InstrId total = b.binary(Opcode::kAdd, dus, conv);
  Module m = f.finish(total);
  std::vector<Literal> args = default_args(m);
  args[3] = Literal::scalar(DType::kS32, 1);
  // Keep y away from the clamp bounds (+-1/128 from any multiple of 1/64
  // never equals -0.3 or 0.4 within h) and x != y for the select.
  for (double& v : args[1].mutable_values()) v += 1.0 / 128;
  // The f32 round trip of x + h loses the perturbation below f32 precision
  // (2^-24 ~ 6e-8 relative) so the numeric derivative of conv carries
  // ~6e-8 / 1e-5 = 6e-3 error: tolerance 1e-2 for this test.
  check_gradients(m, args, 1e-2);
}

TEST(AutodiffOps, TupleAndGetTupleElement) {
  ForwardBuilder f;
  InstrId x = f.param(Shape(F, {3}), "x");
  auto& b = f.b;
  InstrId t = b.tuple({b.unary(Opcode::kExp, x), x});
  InstrId sum = b.binary(Opcode::kMultiply, b.get_tuple_element(t, 0), b.get_tuple_element(t, 1));
  sum = b.binary(Opcode::kAdd, sum, b.get_tuple_element(t, 0));
  Module m = f.finish(sum);
  check_gradients(m, default_args(m));
}

TEST(AutodiffOps, UnsupportedOpIsUserError) {
  ForwardBuilder f;
  InstrId x = f.param(Shape(F, {4}), "x");
  InstrId y = f.b.binary(Opcode::kRemainder, x, x);
  Module m = f.finish(y);
  EXPECT_THROW(build_gradient_module(m), UserError);
}

// The fused attention call: its VJP emits the backward call; q, k, v
// [1,8,2,4] (B, L, N, D), the layer output y = 2 o inside "fwd/layer_0" so
// that remat policies apply to the call (o is no checkpoint, y is).
Module flash_forward(bool causal) {
  ForwardBuilder f;
  const Shape qkv(F, {1, 8, 2, 4});
  InstrId q = f.param(qkv, "q");
  InstrId k = f.param(qkv, "k");
  InstrId v = f.param(qkv, "v");
  auto& b = f.b;
  b.set_op_name_scope("fwd/layer_0/attention");
  const FlashAttentionOutputs o =
      flash_attention(b, q, k, v, {.causal = causal, .block_q = 4, .block_k = 4});
  InstrId y = b.binary(Opcode::kMultiply, o.out, b.broadcast(b.scalar_constant(F, 2), {1, 8, 2, 4}, {}));
  b.set_op_name_scope("fwd/loss");
  return f.finish(y);
}

int64_t count_calls(const Module& m, bool (*is)(const Instruction&)) {
  int64_t n = 0;
  for (const Instruction& in : m.entry().instructions()) n += is(in) ? 1 : 0;
  return n;
}

TEST(AutodiffOps, FlashAttentionGradientsMatchFiniteDifferences) {
  for (bool causal : {false, true}) {
    Module m = flash_forward(causal);
    // lse is f32 (the kernel's): p = exp(s - lse) carries its 2^-24 rounding.
    check_gradients(m, default_args(m), 1e-6);
  }
}

TEST(AutodiffOps, FlashAttentionUnderRematSavesOrRecomputesTheCall) {
  // none and save_dots: one forward call, its o and lse saved; full: the
  // forward call recomputed next to the backward call (two). Gradients agree.
  Module m = flash_forward(true);
  const RematChoice none{RematKind::kNone, ""}, dots{RematKind::kSelective, "save_dots"},
      full{RematKind::kFull, ""};
  EXPECT_EQ(count_calls(build_gradient_module(m, none), is_flash_attention), 1);
  EXPECT_EQ(count_calls(build_gradient_module(m, dots), is_flash_attention), 1);
  EXPECT_EQ(count_calls(build_gradient_module(m, full), is_flash_attention), 2);
  EXPECT_EQ(count_calls(build_gradient_module(m, full), is_flash_attention_bwd), 1);
  check_gradients(m, default_args(m), 1e-6, full);
}

}  // namespace
}  // namespace podsim::compiler::testing
