// Autodiff of a counted while loop over stacked layer weights: finite
// differences, equality with the unrolled layers, and the loop forms that
// are rejected.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/training/training_step.h"
#include "gradient_check.h"

namespace podsim::compiler::testing {
namespace {

const DType F = DType::kF64;
constexpr int64_t kLayers = 3, kB = 2, kD = 3;

// layer(a, w) = tanh(a w) + a, with w = ws[i] taken by dynamic-slice.
struct LoopModel {
  ForwardBuilder f;
  InstrId ws, x;
};

// The loop: carry (i s32, a [B,D], ws [L,D,D]); i < limit. direct_index:
// ws is sliced at the counter itself (jax.lax.scan's form), else at
// i - counter_start.
Module loop_model(int64_t counter_start, int64_t limit, bool use_lt = true,
                  bool direct_index = false) {
  LoopModel m;
  Module& mod = m.f.module;
  m.ws = m.f.param(Shape(F, {kLayers, kD, kD}), "ws");
  m.x = m.f.input(Shape(F, {kB, kD}), "x");
  Shape carry =
      Shape::tuple({Shape::scalar(DType::kS32), Shape(F, {kB, kD}), Shape(F, {kLayers, kD, kD})});

  ComputationBuilder body("layer_body", &mod);
  body.set_op_name_scope("fwd/layers/body");
  InstrId p = body.parameter(0, carry, "carry");
  InstrId i = body.get_tuple_element(p, 0);
  InstrId a = body.get_tuple_element(p, 1);
  InstrId ws = body.get_tuple_element(p, 2);
  InstrId zero = body.scalar_constant(DType::kS32, 0);
  InstrId layer =
      direct_index
          ? i
          : body.binary(Opcode::kSubtract, i,
                        body.scalar_constant(DType::kS32, static_cast<double>(counter_start)));
  InstrId w = body.reshape(body.dynamic_slice(ws, {layer, zero, zero}, {1, kD, kD}), {kD, kD});
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  InstrId next = body.binary(Opcode::kAdd, body.unary(Opcode::kTanh, body.dot(a, w, mm)), a);
  InstrId inc = body.binary(Opcode::kAdd, i, body.scalar_constant(DType::kS32, 1));
  CompId body_id = mod.add_computation(std::move(body).build(body.tuple({inc, next, ws})));

  ComputationBuilder cond("layer_cond", &mod);
  InstrId cp = cond.parameter(0, carry, "carry");
  InstrId more = cond.compare(cond.get_tuple_element(cp, 0),
                              cond.scalar_constant(DType::kS32, static_cast<double>(limit)),
                              use_lt ? ComparisonDirection::kLt : ComparisonDirection::kNe);
  CompId cond_id = mod.add_computation(std::move(cond).build(more));

  auto& b = m.f.b;
  b.set_op_name_scope("fwd/layers");
  InstrId init =
      b.tuple({b.scalar_constant(DType::kS32, static_cast<double>(counter_start)), m.x, m.ws});
  InstrId loop = b.while_loop(init, cond_id, body_id);
  b.set_op_name_scope("fwd/loss");
  return m.f.finish(b.get_tuple_element(loop, 1));
}

// The same layers unrolled.
Module unrolled_model() {
  LoopModel m;
  m.ws = m.f.param(Shape(F, {kLayers, kD, kD}), "ws");
  m.x = m.f.input(Shape(F, {kB, kD}), "x");
  auto& b = m.f.b;
  InstrId a = m.x;
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  for (int64_t l = 0; l < kLayers; ++l) {
    b.set_op_name_scope(fmt::format("fwd/layer_{}", l));
    InstrId w = b.reshape(b.slice(m.ws, {{l, l + 1, 1}, {0, kD, 1}, {0, kD, 1}}), {kD, kD});
    a = b.binary(Opcode::kAdd, b.unary(Opcode::kTanh, b.dot(a, w, mm)), a);
  }
  return m.f.finish(a);
}

TEST(WhileAutodiff, CountedLoopMatchesFiniteDifferences) {
  Module m = loop_model(2, 2 + kLayers);
  std::vector<Literal> args = default_args(m);
  args[1] = random_literal(Shape(F, {kB, kD}), 7);  // x is differentiated too (floating input)
  check_gradients(m, args);
}

TEST(WhileAutodiff, LoopGradientsEqualUnrolledLayers) {
  Module loop = loop_model(0, kLayers);
  Module flat = unrolled_model();
  std::vector<Literal> args = default_args(flat);
  Module gl = build_gradient_module(loop);
  verify_module(gl);
  Comparison c =
      compare_literals(evaluate(build_gradient_module(flat), args), evaluate(gl, args), 1e-12);
  EXPECT_TRUE(c.ok) << c.first_mismatch;
}

// Sliced at the counter, the stacked weights' gradient is written slice by
// slice into the carried adjoint (while_autodiff.h): the same gradients,
// and the reverse body has no add of two whole stacks.
TEST(WhileAutodiff, CounterSlicedWeightsGetTheirGradientSliceBySlice) {
  Module loop = loop_model(0, kLayers, /*use_lt=*/true, /*direct_index=*/true);
  Module flat = unrolled_model();
  std::vector<Literal> args = default_args(flat);
  Module gl = build_gradient_module(loop);
  verify_module(gl);
  Comparison c =
      compare_literals(evaluate(build_gradient_module(flat), args), evaluate(gl, args), 1e-12);
  EXPECT_TRUE(c.ok) << c.first_mismatch;
  int reverse_bodies = 0;
  for (const Computation& comp : gl.computations()) {
    if (comp.name().find(".reverse") == std::string::npos ||
        comp.name().find("cond") != std::string::npos)
      continue;
    ++reverse_bodies;
    for (const Instruction& in : comp.instructions())
      EXPECT_FALSE(in.opcode == Opcode::kAdd && in.shape.rank() == 3)
          << in.name << " adds whole [L, D, D] stacks";
    // The ws adjoint's slice is written into the carried adjoint (a loop
    // state element), not into a stack of zeros.
    int into_state = 0;
    for (const Instruction& in : comp.instructions())
      into_state += in.opcode == Opcode::kDynamicUpdateSlice &&
                    comp.instr(in.operand(0)).opcode == Opcode::kGetTupleElement;
    EXPECT_EQ(into_state, 1);
    EXPECT_EQ(comp.root_instr().opcode, Opcode::kTuple);
  }
  EXPECT_EQ(reverse_bodies, 1);
}

TEST(WhileAutodiff, TrainingStepCountsTheRecomputedBody) {
  TrainingStepOptions options;
  options.optimizer.kind = OptimizerKind::kSgd;
  TrainingStep step = build_training_step(loop_model(0, kLayers), options);
  verify_module(step.module);
  // The reverse loop recomputes the body's dot each of the 3 iterations:
  // 3 x 2 * B * D * D = 3 x 2 * 2 * 3 * 3 = 108 FLOPs.
  EXPECT_DOUBLE_EQ(step.recomputed_flops, 108.0);
  EXPECT_GT(step.recomputed_instructions, 0);
}

TEST(WhileAutodiff, UncountedLoopIsUserError) {
  EXPECT_THROW(build_gradient_module(loop_model(0, kLayers, /*use_lt=*/false)), UserError);
}

}  // namespace
}  // namespace podsim::compiler::testing
