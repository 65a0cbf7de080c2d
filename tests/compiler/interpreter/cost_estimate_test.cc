// Interpreter cost estimate (memory peak, element operations, while trip
// counts) against closed forms, and the one-message refusal of instructions
// the interpreter cannot run.
#include <gtest/gtest.h>

#include "compiler/interpreter/cost_estimate.h"
#include "compiler/ir/trip_count.h"
#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

// Bytes of one f32 array value of n elements in the interpreter: 8 per
// element plus the Literal overheads (interpreter_value_bytes).
double value_bytes(int64_t n) { return interpreter_value_bytes(Shape(DType::kF32, {n})); }

TEST(CostEstimate, ValueBytesAreEightPerElementSixteenComplex) {
  const double overhead = interpreter_value_bytes(Shape(DType::kF32, {0}));
  EXPECT_EQ(interpreter_value_bytes(Shape(DType::kF32, {1000})) - overhead, 8000.0);
  EXPECT_EQ(interpreter_value_bytes(Shape(DType::kBF16, {10, 100})) - overhead, 8000.0);
  EXPECT_EQ(interpreter_value_bytes(Shape(DType::kC64, {1000})) - overhead, 16000.0);
}

TEST(CostEstimate, PeakFollowsLiveValues) {
  // p live from 0 to 2, e from 1 to 2, r from 2: at r all three are live,
  // so the peak is 3 values; work = 1 (p) + 2 (exp reads and writes) + 3 (add).
  const Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[1000,1000] parameter(0)
  e = f32[1000,1000] exponential(p)
  ROOT r = f32[1000,1000] add(e, p)
})");
  const double v = value_bytes(1000000);
  InterpreterEstimate e = estimate_interpreter(m, 1);
  EXPECT_DOUBLE_EQ(e.peak_bytes, 3 * v);
  EXPECT_DOUBLE_EQ(e.element_ops, 6e6);
  EXPECT_DOUBLE_EQ(e.parameter_bytes, v);
  EXPECT_DOUBLE_EQ(e.root_bytes, v);
  // Four lanes hold four copies and do four times the work.
  InterpreterEstimate four = estimate_interpreter(m, 4);
  EXPECT_DOUBLE_EQ(four.peak_bytes, 12 * v);
  EXPECT_DOUBLE_EQ(four.element_ops, 24e6);
}

TEST(CostEstimate, DeadValuesAreFreed) {
  // A chain of negates: each value dies at its user, so at most two values
  // (operand and result) are live at once, however long the chain.
  const Module m = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[1000] parameter(0)
  a = f32[1000] negate(p)
  b = f32[1000] negate(a)
  c = f32[1000] negate(b)
  ROOT d = f32[1000] negate(c)
})");
  EXPECT_DOUBLE_EQ(estimate_interpreter(m).peak_bytes, 2 * value_bytes(1000));
}

TEST(CostEstimate, DotCountsMultiplyAccumulates) {
  // [M,K] x [K,N]: M*N*K MACs plus the elements read and written.
  const Module m = parse_verified(R"(HloModule m
ENTRY main {
  a = f32[30,40] parameter(0)
  b = f32[40,50] parameter(1)
  ROOT d = f32[30,50] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  const double M = 30, K = 40, N = 50;
  const double params = M * K + K * N;
  EXPECT_DOUBLE_EQ(estimate_interpreter(m).element_ops, params + (M * N + params) + M * N * K);
}

TEST(CostEstimate, ConvolutionMacsAreWeighted) {
  // Input [N=2,H=10,W=10,C=3], kernel [3,3,C=3,O=4], 1x1 output per stride 1
  // without padding: [2,8,8,4] = 512 outputs, each 3 x 3 x 3 = 27 MACs (the
  // kernel's elements per output feature), weighted kConvolutionMacWeight.
  const Module m = parse_verified(R"(HloModule m
ENTRY main {
  x = f32[2,10,10,3] parameter(0)
  k = f32[3,3,3,4] parameter(1)
  ROOT c = f32[2,8,8,4] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f
})");
  const double params = 2 * 10 * 10 * 3 + 3 * 3 * 3 * 4;
  const double out = 2 * 8 * 8 * 4;
  EXPECT_DOUBLE_EQ(estimate_interpreter(m).element_ops,
                   params + (out + params) + out * 27 * kConvolutionMacWeight);
}

constexpr const char* kCountedLoop = R"(HloModule m
cond {
  s = (s32[], f32[100]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[100]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[100] get-tuple-element(s), index=1
  one = s32[] constant(STEP)
  j = s32[] add(i, one)
  y = f32[100] negate(x)
  ROOT t = (s32[], f32[100]) tuple(j, y)
}
ENTRY main {
  zero = s32[] constant(0)
  p = f32[100] parameter(0)
  init = (s32[], f32[100]) tuple(zero, p)
  w = (s32[], f32[100]) while(init), condition=cond, body=body
  ROOT r = f32[100] get-tuple-element(w), index=1
})";

Module counted_loop(int step) {
  std::string text = kCountedLoop;
  text.replace(text.find("STEP"), 4, std::to_string(step));
  return parse_verified(text);
}

const Instruction& find(const Computation& c, const char* name) { return c.instr(c.find(name)); }

TEST(CostEstimate, CountedLoopTripCount) {
  // i = 0, 1, ..., 9 -> 10 trips; step 3: i = 0, 3, 6, 9 -> 4 trips.
  Module m = counted_loop(1);
  EXPECT_EQ(known_trip_count(m, m.entry(), find(m.entry(), "w")), 10);
  Module m3 = counted_loop(3);
  EXPECT_EQ(known_trip_count(m3, m3.entry(), find(m3.entry(), "w")), 4);
  // The loop's work scales with the trips: 10 trips cost more than 4 by 6
  // bodies and 6 conditions. Elements read + written per instruction:
  //   body: s 101, i 1+101, x 100+101, one 1, j 1+1+1, y 100+100,
  //         t 101+101 -> 810;  cond: s 101, i 102, n 1, lt 1+2 -> 207.
  const double ten = estimate_interpreter(m).element_ops;
  const double four = estimate_interpreter(m3).element_ops;
  EXPECT_DOUBLE_EQ(ten - four, 6 * (810 + 207));
  EXPECT_EQ(estimate_interpreter(m).unknown_trip_loops, 0);
}

// The counted loop with its counter started from a parameter: no longer a
// counted loop.
Module uncounted_loop() {
  Module m = counted_loop(1);
  Computation& entry = m.mutable_entry();
  Instruction& init = entry.mutable_instr(entry.find("init"));
  init.operands[0] = entry.find("zero");
  entry.mutable_instr(entry.find("zero")).opcode = Opcode::kParameter;
  entry.mutable_instr(entry.find("zero")).attrs.parameter_number = 1;
  return m;
}

TEST(CostEstimate, KnownTripCountFromBackendConfig) {
  // The pattern cannot be derived; XLA's backend_config names 7 trips.
  Module m = uncounted_loop();
  Instruction& w = m.mutable_entry().mutable_instr(m.entry().find("w"));
  w.attrs.backend_config = R"({"known_trip_count":{"n":"7"}})";
  EXPECT_EQ(known_trip_count(m, m.entry(), w), 7);
  EXPECT_EQ(estimate_interpreter(m).unknown_trip_loops, 0);
}

TEST(CostEstimate, UnknownTripCountIsCountedOnceAndReported) {
  Module m = uncounted_loop();
  EXPECT_FALSE(known_trip_count(m, m.entry(), find(m.entry(), "w")).has_value());
  EXPECT_EQ(estimate_interpreter(m).unknown_trip_loops, 1);
}

// A module whose entry holds the given instructions after a parameter.
Module module_with(std::vector<Instruction> extra) {
  Module m("m");
  Computation c("main");
  Instruction p;
  p.name = "p";
  p.opcode = Opcode::kParameter;
  p.shape = Shape(DType::kF32, {4});
  InstrId last = c.append(p);
  for (Instruction& in : extra) {
    if (in.operands.empty() && in.opcode != Opcode::kRng) in.operands = {0};
    last = c.append(in);
  }
  c.set_root(last);
  m.set_entry(m.add_computation(std::move(c)));
  return m;
}

Instruction make(Opcode op, const std::string& name, const std::string& target = "") {
  Instruction in;
  in.name = name;
  in.opcode = op;
  in.shape = Shape(DType::kF32, {4});
  in.attrs.custom_call_target = target;
  return in;
}

TEST(CostEstimate, OneMessageNamesEveryInstructionItCannotRun) {
  Module m = module_with({make(Opcode::kCustomCall, "a", "foo"), make(Opcode::kRng, "b"),
                          make(Opcode::kCustomCall, "c", "foo"),
                          make(Opcode::kCustomCall, "d", "Sharding")});
  EXPECT_EQ(uninterpretable_instructions(m).size(), 3u);
  try {
    check_interpretable(m);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.message(),
              "the interpreter cannot run 3 instructions: custom-call 'foo' (x2), rng (x1)");
    EXPECT_NE(e.hint().find("parameters"), std::string::npos);
  }
  // evaluate() refuses the same way before running anything.
  EXPECT_THROW(evaluate(m, {f32({4}, {1, 2, 3, 4})}), UserError);
}

TEST(CostEstimate, ShortFormAsyncCustomCallIsNamedByItsTarget) {
  Instruction start = make(Opcode::kAsyncStart, "s", "bar");
  start.attrs.async_wrapped = Opcode::kCustomCall;
  Module m = module_with({start});
  try {
    check_interpretable(m);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.message(), "the interpreter cannot run 1 instruction: custom-call 'bar' (x1)");
  }
}

TEST(CostEstimate, RunnableModulePasses) {
  Module m = module_with({make(Opcode::kCustomCall, "d", "Sharding"), make(Opcode::kNegate, "n")});
  EXPECT_NO_THROW(check_interpretable(m));
}

}  // namespace
}  // namespace podsim::compiler::testing
