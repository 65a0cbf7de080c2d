// GSPMD-style pipelining: the pipelined forward (stage body vectorised over
// stage-stacked weights, shifting state, M + S - 1 iterations) equals the
// same stages applied one after another, in loss and in gradients.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/training/autodiff.h"
#include "compiler/training/pipelined_forward.h"
#include "compiler/training/training_step.h"
#include "gradient_check.h"

namespace podsim::compiler::testing {
namespace {

const DType F = DType::kF64;
constexpr int64_t kD = 4;

// stage(a [mb, d], w [d, d], s [d]) = tanh(a w) * s + a
CompId add_stage_body(Module& m, int64_t mb) {
  ComputationBuilder b("stage", &m);
  b.set_op_name_scope("fwd/stage");
  InstrId a = b.parameter(0, Shape(F, {mb, kD}), "a");
  InstrId w = b.parameter(1, Shape(F, {kD, kD}), "w");
  InstrId s = b.parameter(2, Shape(F, {kD}), "s");
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  InstrId h = b.unary(Opcode::kTanh, b.dot(a, w, mm));
  InstrId out =
      b.binary(Opcode::kAdd, b.binary(Opcode::kMultiply, h, b.broadcast(s, {mb, kD}, {1})), a);
  return m.add_computation(std::move(b).build(out));
}

struct Built {
  ForwardBuilder f;
  InstrId w, s, x, target;
};

void add_params(Built& m, int64_t stages, int64_t batch) {
  m.w = m.f.param(Shape(F, {stages, kD, kD}), "w");
  m.s = m.f.param(Shape(F, {stages, kD}), "s");
  m.x = m.f.input(Shape(F, {batch, kD}), "x");
  m.target = m.f.input(Shape(F, {batch, kD}), "target");
}

Module finish_with_loss(Built& m, InstrId out, int64_t batch) {
  auto& b = m.f.b;
  b.set_op_name_scope("fwd/loss");
  InstrId diff = b.binary(Opcode::kSubtract, out, m.target);
  InstrId sum = training::reduce_sum_all(b, m.f.reducers, b.binary(Opcode::kMultiply, diff, diff));
  InstrId loss =
      b.binary(Opcode::kMultiply, sum, b.scalar_constant(F, 1.0 / static_cast<double>(batch * kD)));
  m.f.module.set_entry(m.f.module.add_computation(std::move(b).build(loss)));
  return m.f.module;
}

Module pipelined(int64_t stages, int64_t microbatches, int64_t mb) {
  Built m;
  add_params(m, stages, mb * microbatches);
  PipelineRequest r;
  r.stages = stages;
  r.microbatches = microbatches;
  r.stage_body = add_stage_body(m.f.module, mb);
  r.inputs = m.x;
  r.stacked_weights = {m.w, m.s};
  InstrId out = emit_pipeline(m.f.b, m.f.module, r);
  return finish_with_loss(m, out, mb * microbatches);
}

// The same stages one after another on the whole batch.
Module sequential(int64_t stages, int64_t batch) {
  Built m;
  add_params(m, stages, batch);
  CompId body = add_stage_body(m.f.module, batch);
  auto& b = m.f.b;
  InstrId a = m.x;
  for (int64_t st = 0; st < stages; ++st) {
    b.set_op_name_scope(fmt::format("fwd/layer_{}", st));
    InstrId w = b.reshape(b.slice(m.w, {{st, st + 1, 1}, {0, kD, 1}, {0, kD, 1}}), {kD, kD});
    InstrId s = b.reshape(b.slice(m.s, {{st, st + 1, 1}, {0, kD, 1}}), {kD});
    std::vector<InstrId> map = copy_instructions(b, m.f.module.computation(body), {a, w, s});
    a = map[static_cast<size_t>(m.f.module.computation(body).root())];
  }
  return finish_with_loss(m, a, batch);
}

TEST(Pipeline, PipelinedForwardAndGradientsEqualSequentialStages) {
  for (auto [stages, microbatches] :
       std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {3, 4}, {4, 1}, {1, 3}}) {
    const int64_t mb = 2, batch = mb * microbatches;
    Module p = pipelined(stages, microbatches, mb);
    Module q = sequential(stages, batch);
    verify_module(p);
    std::vector<Literal> args = default_args(q);
    Module gp = build_gradient_module(p);
    Module gq = build_gradient_module(q);
    verify_module(gp);
    // Same f64 ops per row in another arrangement (batched dots accumulate
    // the same terms in the same order): rounding differences only.
    Comparison c = compare_literals(evaluate(gq, args), evaluate(gp, args), 1e-12);
    EXPECT_TRUE(c.ok) << stages << " stages, " << microbatches
                      << " microbatches: " << c.first_mismatch;
  }
}

TEST(Pipeline, IterationCountAndShiftStructure) {
  const int64_t stages = 3, microbatches = 4;
  Module p = pipelined(stages, microbatches, 2);
  // One vectorised dot per iteration: M + S - 1 = 6 iterations.
  int dots = 0, shifts = 0;
  for (const Instruction& in : p.entry().instructions()) {
    if (in.opcode == Opcode::kDot) {
      ++dots;
      EXPECT_EQ(in.shape.dim(0), stages);  // the stage dim leads
    }
    shifts += in.opcode == Opcode::kConcatenate &&
              training::starts_with(in.op_name, "fwd/pipeline_iter_");
  }
  EXPECT_EQ(dots, microbatches + stages - 1);
  EXPECT_EQ(shifts, microbatches + stages - 1);
}

TEST(Pipeline, StateShardingAnnotatesTheShiftedAndComputedState) {
  // Stage dim over 2 devices: every iteration annotates the shifted input
  // and the computed state, 2 x (M + S - 1) = 2 x 3 annotations.
  Built m;
  add_params(m, 2, 4);
  PipelineRequest r;
  r.stages = 2;
  r.microbatches = 2;
  r.stage_body = add_stage_body(m.f.module, 2);
  r.inputs = m.x;
  r.stacked_weights = {m.w, m.s};
  r.state_sharding = "{devices=[2,1,1]<=[2]}";
  InstrId out = emit_pipeline(m.f.b, m.f.module, r);
  Module p = finish_with_loss(m, out, 4);
  int annotations = 0;
  for (const Instruction& in : p.entry().instructions())
    annotations += in.opcode == Opcode::kCustomCall && in.sharding == r.state_sharding;
  EXPECT_EQ(annotations, 6);
  // Annotations do not change values.
  std::vector<Literal> args = default_args(p);
  EXPECT_EQ(evaluate(p, args), evaluate(pipelined(2, 2, 2), args));
}

TEST(Pipeline, TrainingStepNeedsAPipelinedForward) {
  TrainingStepOptions options;
  options.pipeline_stages = 3;
  options.microbatches = 4;
  TrainingStep step = build_training_step(pipelined(3, 4, 2), options);
  verify_module(step.module);
  // The pipeline's inputs are not split again: x keeps its [8, 4] shape.
  EXPECT_EQ(step.module.entry().instr(step.module.entry().parameters()[2]).shape, Shape(F, {8, 4}));
  EXPECT_THROW(build_training_step(sequential(3, 8), options), UserError);
  options.pipeline_stages = 2;  // built for 3
  EXPECT_THROW(build_training_step(pipelined(3, 4, 2), options), UserError);
}

TEST(Pipeline, FullRematCheckpointsEachIteration) {
  Module p = pipelined(2, 2, 2);
  Module none = build_gradient_module(p, {RematKind::kNone, ""});
  Module full = build_gradient_module(p, {RematKind::kFull, ""});
  std::vector<Literal> args = default_args(p);
  EXPECT_EQ(evaluate(none, args), evaluate(full, args));
  int recomputed = 0;
  for (const Instruction& in : full.entry().instructions())
    recomputed += training::starts_with(in.op_name, "recompute/pipeline_iter_");
  EXPECT_GT(recomputed, 0);
}

}  // namespace
}  // namespace podsim::compiler::testing
