// Mixed precision: f32 weights used as bf16 activations. The backward keeps
// bf16 where the forward was bf16; weights, their gradients and updates stay
// f32.
#include <gtest/gtest.h>

#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/training/training_step.h"
#include "gradient_check.h"

namespace podsim::compiler::testing {
namespace {

// loss = sum(tanh(x convert(w, act))) / 16, x [4,8] act, w [8,4] f32.
Module mixed(DType act) {
  ForwardBuilder f;
  InstrId w = f.param(Shape(DType::kF32, {8, 4}), "w");
  InstrId x = f.input(Shape(act, {4, 8}), "x");
  auto& b = f.b;
  b.set_op_name_scope("fwd/layer_0/ffn");
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  InstrId wa = act == DType::kF32 ? w : b.convert(w, act);
  InstrId t = b.unary(Opcode::kTanh, b.dot(x, wa, mm));
  b.set_op_name_scope("fwd/loss");
  InstrId t32 = act == DType::kF32 ? t : b.convert(t, DType::kF32);
  InstrId loss = b.binary(Opcode::kMultiply, training::reduce_sum_all(b, f.reducers, t32),
                          b.scalar_constant(DType::kF32, 1.0 / 16));
  f.module.set_entry(f.module.add_computation(std::move(b).build(loss)));
  return f.module;
}

TEST(MixedPrecision, BackwardStaysBf16AndWeightsStayF32) {
  TrainingStepOptions options;
  options.optimizer.kind = OptimizerKind::kSgd;
  options.optimizer.learning_rate = 1.0;
  TrainingStep step = build_training_step(mixed(DType::kBF16), options);
  verify_module(step.module);
  const Computation& entry = step.module.entry();
  int bwd_dots = 0;
  for (const Instruction& in : entry.instructions()) {
    if (in.opcode == Opcode::kDot && training::starts_with(in.op_name, "bwd/")) {
      ++bwd_dots;
      EXPECT_EQ(in.shape.dtype(), DType::kBF16) << in.name;
    }
  }
  EXPECT_EQ(bwd_dots, 1);  // only dL/dw: the step does not differentiate w.r.t. "input/" x
  EXPECT_EQ(entry.instr(entry.root_instr().operand(1)).shape, Shape(DType::kF32, {8, 4}));

  // Against the same step in f32: inputs are multiples of 1/64 (exact in
  // bf16); bf16 keeps 8 significant bits, so each of the few roundings
  // (dot, tanh, the backward's dot) is within 2^-8 relative; 3e-2 bounds
  // their sum with margin for the 8-term dot accumulations.
  TrainingStep reference = build_training_step(mixed(DType::kF32), options);
  Literal w = random_literal(Shape(DType::kF32, {8, 4}), 3);
  Literal x = random_literal(Shape(DType::kF32, {4, 8}), 4);
  Literal x16(Shape(DType::kBF16, {4, 8}), x.values());
  Literal expected = evaluate(reference.module, {w, x});
  Literal actual = evaluate(step.module, {w, x16});
  Comparison c = compare_literals(expected.element(1), actual.element(1), 3e-2);
  EXPECT_TRUE(c.ok) << c.first_mismatch;
}

}  // namespace
}  // namespace podsim::compiler::testing
