// Interpreter: while (counted loop, collectives in the body, diverging
// conditions), call, tuples, custom-calls and user errors.
#include <string>

#include <gtest/gtest.h>

#include "compiler/interpreter/evaluator.h"
#include "tests/compiler/interpreter/hand_built.h"
#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

using V = std::vector<double>;

TEST(ControlFlow, CountedWhileLoop) {
  // (i, acc) = (0, 1); while i < 5: (i+1, 2*acc) -> (5, 2^5 = 32).
  Module m = parse_verified(R"(HloModule m
cond {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  acc = f32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  acc2 = f32[] add(acc, acc)
  ROOT t = (s32[], f32[]) tuple(i1, acc2)
}
ENTRY main {
  zero = s32[] constant(0)
  init = f32[] constant(1)
  t = (s32[], f32[]) tuple(zero, init)
  ROOT w = (s32[], f32[]) while(t), condition=cond, body=body
})");
  Literal r = evaluate(m, {});
  EXPECT_EQ(r.element(0).values(), (V{5}));
  EXPECT_EQ(r.element(1).values(), (V{32}));
}

TEST(ControlFlow, WhileBodyWithCollectiveRunsInLockStep) {
  // 4 devices, x = d; two trips of x = all-reduce(x): 0+1+2+3 = 6, then 4*6 = 24.
  Module m = parse_verified(R"(HloModule m, num_partitions=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
cond {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  y = f32[] all-reduce(x), channel_id=1, replica_groups={}, to_apply=add
  ROOT t = (s32[], f32[]) tuple(i1, y)
}
ENTRY main {
  x = f32[] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], f32[]) tuple(zero, x)
  w = (s32[], f32[]) while(t), condition=cond, body=body
  ROOT r = f32[] get-tuple-element(w), index=1
})");
  std::vector<std::vector<Literal>> args;
  for (int d = 0; d < 4; ++d) args.push_back({f32({}, {double(d)})});
  auto out = evaluate_spmd(m, args);
  for (int d = 0; d < 4; ++d) EXPECT_EQ(out[static_cast<size_t>(d)].values(), (V{24})) << d;
}

TEST(ControlFlow, DevicesDisagreeingOnWhileConditionIsAUserError) {
  // Condition i < partition-id: false on device 0, true on device 1.
  Module m = parse_verified(R"(HloModule m, num_partitions=2
cond {
  i = s32[] parameter(0)
  id = u32[] partition-id()
  n = s32[] convert(id)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  i = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT i1 = s32[] add(i, one)
}
ENTRY main {
  zero = s32[] constant(0)
  ROOT w = s32[] while(zero), condition=cond, body=body
})");
  try {
    evaluate_spmd(m, {{}, {}});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("devices disagree on while condition"), std::string::npos)
        << e.message();
  }
}

TEST(ControlFlow, CallAppliesTheCallee) {
  // f(a, b) = a*b + a on {2,3}, {4,5} = {2*4+2, 3*5+3} = {10, 18}.
  Module m = parse_verified(R"(HloModule m
f {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  p = f32[2] multiply(a, b)
  ROOT r = f32[2] add(p, a)
}
ENTRY main {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  ROOT c = f32[2] call(a, b), to_apply=f
})");
  EXPECT_EQ(evaluate(m, {f32({2}, {2, 3}), f32({2}, {4, 5})}).values(), (V{10, 18}));
}

TEST(ControlFlow, ShardingCustomCallsAreIdentity) {
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  a = f32[2] parameter(0)
  s = f32[2] custom-call(a), custom_call_target="Sharding", sharding={replicated}
  ROOT f = f32[2] custom-call(s), custom_call_target="SPMDShardToFullShape"
})");
  EXPECT_EQ(evaluate(m, {f32({2}, {1.5, -2})}).values(), (V{1.5, -2}));
}

// An infeed is the host's data: the k-th infeed a device runs gives the
// seeded value kInfeedSeed + k, the same on every device (so a partitioned
// program that infeeds the whole value and slices sees what the original
// sees); a loop's infeeds take the next values.
TEST(ControlFlow, InfeedGivesTheKthSeededValueOnEveryDevice) {
  Module m = parse_verified(R"(HloModule m, num_partitions=2
ENTRY main {
  t = token[] after-all()
  a = (f32[3], token[]) infeed(t)
  at = token[] get-tuple-element(a), index=1
  b = (f32[3], token[]) infeed(at)
  x = f32[3] get-tuple-element(a), index=0
  y = f32[3] get-tuple-element(b), index=0
  ROOT r = (f32[3], f32[3]) tuple(x, y)
})");
  const Shape data(DType::kF32, {3});
  const Shape fed = Shape::tuple({data, Shape(DType::kToken, {})});
  const Literal first = random_literal(fed, interp::Evaluator::kInfeedSeed).element(0);
  const Literal second = random_literal(fed, interp::Evaluator::kInfeedSeed + 1).element(0);
  ASSERT_NE(first.values(), second.values());
  const auto out = evaluate_spmd(m, {{}, {}});
  for (const Literal& device : out) {
    EXPECT_EQ(device.element(0).values(), first.values());
    EXPECT_EQ(device.element(1).values(), second.values());
  }
}

// A partitioned program's per-shard infeed (its global sharding tiles the
// data) gives each device its tile of the seeded value of the global shape:
// f32[2] on 2 devices of a global f32[4], device d holding elements 2d, 2d+1.
TEST(ControlFlow, PerShardInfeedGivesEachDeviceItsTileOfTheGlobalValue) {
  Module m = parse_verified(R"(HloModule m, num_partitions=2
ENTRY main {
  t = token[] after-all()
  a = (f32[2], token[]) infeed(t)
  ROOT x = f32[2] get-tuple-element(a), index=0
})");
  Computation& entry = m.mutable_computation(m.entry_id());
  entry.mutable_instr(entry.find("a")).global_sharding = "{{devices=[2]<=[2]}, {replicated}}";
  const Shape global = Shape::tuple({Shape(DType::kF32, {4}), Shape(DType::kToken, {})});
  const std::vector<double> whole =
      random_literal(global, interp::Evaluator::kInfeedSeed).element(0).values();
  const auto out = evaluate_spmd(m, {{}, {}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].values(), (V{whole[0], whole[1]}));
  EXPECT_EQ(out[1].values(), (V{whole[2], whole[3]}));
}

// Host offloading moves a value to another memory and back: the same value.
TEST(ControlFlow, HostOffloadingMovesAreIdentity) {
  Module m = parse_verified(R"(HloModule m
ENTRY main {
  a = f32[2] parameter(0)
  h = f32[2] custom-call(a), custom_call_target="MoveToHost"
  ROOT d = f32[2] custom-call(h), custom_call_target="MoveToDevice"
})");
  EXPECT_EQ(evaluate(m, {f32({2}, {1.5, -2})}).values(), (V{1.5, -2}));
}

TEST(ControlFlow, UserErrors) {
  const std::string unknown_target = R"(HloModule m
ENTRY main {
  a = f32[2] parameter(0)
  ROOT f = f32[2] custom-call(a), custom_call_target="MyKernel"
})";
  EXPECT_THROW(run(unknown_target, {f32({2}, {1, 2})}), UserError);
  const std::string identity = R"(HloModule m
ENTRY main {
  ROOT a = f32[2] parameter(0)
})";
  EXPECT_THROW(run(identity, {}), UserError);                            // too few arguments
  EXPECT_THROW(run(identity, {f32({3}, {1, 2, 3})}), UserError);         // wrong shape
  EXPECT_THROW(run(identity, {s32({2}, {1, 2})}), UserError);            // wrong dtype
  EXPECT_THROW(evaluate_spmd(parse_verified(identity), {}), UserError);  // no devices
  EXPECT_EQ(run(identity, {f32({2}, {1, 2})}).values(), (V{1, 2}));
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

// Modules that skip the verifier: bad shapes must surface as UserErrors
// naming the instruction, never as crashes.
TEST(ControlFlow, MalformedUnverifiedModulesAreUserErrors) {
  const char* bad_reshape = R"(HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  ROOT r = f32[3] reshape(p)
})";
  const char* bad_slice = R"(HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  ROOT r = f32[9] slice(p), slice={[0:9]}
})";
  const char* bad_gather = R"(HloModule m
ENTRY main {
  t = f32[4,2] parameter(0)
  i = s32[2,2] parameter(1)
  ROOT g = f32[2,2] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
})";
  const Literal p = f32({4}, {1, 2, 3, 4});
  EXPECT_THROW(evaluate(parse_hlo(bad_reshape), {p}), UserError);
  EXPECT_THROW(evaluate(parse_hlo(bad_slice), {p}), UserError);
  try {
    evaluate(parse_hlo(bad_gather),
             {f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7}), s32({2, 2}, {0, 1, 2, 3})});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("gather 'g'"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace podsim::compiler::testing

// ---- conditional, fusion and XLA's async pairs (hand-built modules).

namespace podsim::compiler::testing {
namespace {

const Shape kF4(DType::kF32, {4});

// A computation x -> op(x) on f32[4] (op = kCopy for the identity).
CompId unary_computation(Module& m, Opcode op) {
  HandBuilt b(m, fmt::format("u{}", m.computation_count()));
  return b.finish(b.op(op, kF4, {b.param(0, kF4)}));
}

// conditional(selector, x, x) over the given branches.
Literal conditional(const Literal& selector, std::vector<Opcode> branch_ops) {
  Module m("m");
  std::vector<CompId> branches;
  for (Opcode op : branch_ops) branches.push_back(unary_computation(m, op));
  HandBuilt b(m, "main");
  const InstrId s = b.param(0, selector.shape());
  const InstrId x = b.param(1, kF4);
  std::vector<InstrId> operands{s};
  for (size_t i = 0; i < branches.size(); ++i) operands.push_back(x);
  b.finish_entry(
      b.op(Opcode::kConditional, kF4, operands, [&](Instruction& i) { i.called = branches; }));
  return evaluate(m, {selector, f32({4}, {1, -2, 3, -4})});
}

TEST(NewControlFlow, ConditionalPredAndIndexForms) {
  const Literal yes = lit(DType::kPred, {}, {1}), no = lit(DType::kPred, {}, {0});
  EXPECT_EQ(conditional(yes, {Opcode::kNegate, Opcode::kAbs}).values(), (V{-1, 2, -3, 4}));
  EXPECT_EQ(conditional(no, {Opcode::kNegate, Opcode::kAbs}).values(), (V{1, 2, 3, 4}));
  const std::vector<Opcode> three{Opcode::kNegate, Opcode::kAbs, Opcode::kCopy};
  EXPECT_EQ(conditional(s32({}, {1}), three).values(), (V{1, 2, 3, 4}));
  // Out of range (5, or -1) runs the last branch.
  EXPECT_EQ(conditional(s32({}, {5}), three).values(), (V{1, -2, 3, -4}));
  EXPECT_EQ(conditional(s32({}, {-1}), three).values(), (V{1, -2, 3, -4}));
}

TEST(NewControlFlow, ConditionalWhoseDevicesDisagreeRunsEachOnItsOwn) {
  // selector = partition-id: device 0 negates, device 1 takes abs.
  Module m("m");
  const CompId neg = unary_computation(m, Opcode::kNegate);
  const CompId abs = unary_computation(m, Opcode::kAbs);
  HandBuilt b(m, "main");
  const InstrId x = b.param(0, kF4);
  const InstrId pid = b.op(Opcode::kPartitionId, Shape::scalar(DType::kU32), {});
  const InstrId idx = b.op(Opcode::kConvert, Shape::scalar(DType::kS32), {pid});
  b.finish_entry(b.op(Opcode::kConditional, kF4, {idx, x, x}, [&](Instruction& i) {
    i.called = {neg, abs};
  }));
  const Literal arg = f32({4}, {1, -2, 3, -4});
  std::vector<Literal> r = evaluate_spmd(m, {{arg}, {arg}});
  EXPECT_EQ(r[0].values(), (V{-1, 2, -3, 4}));
  EXPECT_EQ(r[1].values(), (V{1, 2, 3, 4}));
}

TEST(NewControlFlow, FusionRunsItsComputation) {
  Module m("m");
  const CompId body = unary_computation(m, Opcode::kNegate);
  HandBuilt b(m, "main");
  b.finish_entry(b.op(Opcode::kFusion, kF4, {b.param(0, kF4)}, [&](Instruction& i) {
    i.called = {body};
    i.attrs.fusion_kind = "kLoop";
  }));
  EXPECT_EQ(evaluate(m, {f32({4}, {1, 2, 3, 4})}).values(), (V{-1, -2, -3, -4}));
}

TEST(NewControlFlow, AllGatherStartDoneAndAllReduceStartDone) {
  // Two devices each hold f32[2]; all-gather-start's tuple is (operand,
  // gathered), all-gather-done the gathered f32[4]; all-reduce-start (array
  // form) then done sums them.
  Module m("m");
  const CompId add = scalar_fn(m, Opcode::kAdd, DType::kF32, DType::kF32);
  HandBuilt b(m, "main");
  const Shape f2(DType::kF32, {2});
  const InstrId x = b.param(0, f2);
  const InstrId ags = b.op(Opcode::kAllGatherStart, Shape::tuple({f2, kF4}), {x},
                           [](Instruction& i) { i.attrs.dimensions = {0}; });
  const InstrId agd = b.op(Opcode::kAllGatherDone, kF4, {ags});
  const InstrId ars =
      b.op(Opcode::kAllReduceStart, kF4, {agd}, [&](Instruction& i) { i.called = {add}; });
  const InstrId ard = b.op(Opcode::kAllReduceDone, kF4, {ars});
  b.finish_entry(b.op(Opcode::kTuple, Shape::tuple({Shape::tuple({f2, kF4}), kF4}), {ags, ard}));
  std::vector<Literal> r = evaluate_spmd(m, {{f32({2}, {1, 2})}, {f32({2}, {3, 4})}});
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(r[static_cast<size_t>(d)].element(0).element(1).values(), (V{1, 2, 3, 4}));
    // gathered on both devices, summed over 2: doubled.
    EXPECT_EQ(r[static_cast<size_t>(d)].element(1).values(), (V{2, 4, 6, 8}));
  }
  EXPECT_EQ(r[1].element(0).element(0).values(), (V{3, 4}));  // the start keeps its operand
}

TEST(NewControlFlow, CopyStartDoneAndCollectivePermuteStartDone) {
  Module m("m");
  HandBuilt b(m, "main");
  const InstrId x = b.param(0, kF4);
  const Shape u32 = Shape::scalar(DType::kU32);
  const InstrId cs = b.op(Opcode::kCopyStart, Shape::tuple({kF4, kF4, u32}), {x});
  const InstrId cd = b.op(Opcode::kCopyDone, kF4, {cs});
  const InstrId ps =
      b.op(Opcode::kCollectivePermuteStart, Shape::tuple({kF4, kF4}), {cd}, [](Instruction& i) {
        i.attrs.source_target_pairs = {{0, 1}, {1, 0}};
      });
  b.finish_entry(b.op(Opcode::kCollectivePermuteDone, kF4, {ps}));
  std::vector<Literal> r = evaluate_spmd(m, {{f32({4}, {1, 2, 3, 4})}, {f32({4}, {5, 6, 7, 8})}});
  EXPECT_EQ(r[0].values(), (V{5, 6, 7, 8}));
  EXPECT_EQ(r[1].values(), (V{1, 2, 3, 4}));
}

TEST(NewControlFlow, AsyncStartUpdateDoneShortAndLongForm) {
  // Short form: an all-to-all-start ("async_wrapped") over 2 devices.
  // Long form: async-start calling a computation that negates.
  Module m("m");
  const CompId neg = unary_computation(m, Opcode::kNegate);
  HandBuilt b(m, "main");
  const InstrId x = b.param(0, kF4);
  const Shape ctx = Shape::scalar(DType::kS32);
  const Shape start_shape = Shape::tuple({Shape::tuple({kF4}), kF4, ctx});
  const InstrId a2a = b.op(Opcode::kAsyncStart, start_shape, {x}, [](Instruction& i) {
    i.attrs.async_wrapped = Opcode::kAllToAll;
    i.attrs.dimensions = {0};
  });
  const InstrId upd = b.op(Opcode::kAsyncUpdate, start_shape, {a2a});
  const InstrId a2a_done = b.op(Opcode::kAsyncDone, kF4, {upd});
  const InstrId call =
      b.op(Opcode::kAsyncStart, start_shape, {a2a_done}, [&](Instruction& i) { i.called = {neg}; });
  b.finish_entry(b.op(Opcode::kAsyncDone, kF4, {call}));
  // all-to-all: device d receives chunk d of each device: d0 = (1,2,5,6), d1 = (3,4,7,8); then
  // negated.
  std::vector<Literal> r = evaluate_spmd(m, {{f32({4}, {1, 2, 3, 4})}, {f32({4}, {5, 6, 7, 8})}});
  EXPECT_EQ(r[0].values(), (V{-1, -2, -5, -6}));
  EXPECT_EQ(r[1].values(), (V{-3, -4, -7, -8}));
}

TEST(NewControlFlow, CollectiveBroadcastSendsTheFirstMembersValue) {
  // Groups {1,0} and {2,3}: devices 0, 1 get device 1's value; 2, 3 device 2's.
  Module m("m");
  HandBuilt b(m, "main");
  const Shape f1(DType::kF32, {1});
  b.finish_entry(b.op(Opcode::kCollectiveBroadcast, f1, {b.param(0, f1)}, [](Instruction& i) {
    i.attrs.replica_groups.explicit_groups = {{1, 0}, {2, 3}};
  }));
  std::vector<Literal> r =
      evaluate_spmd(m, {{f32({1}, {10})}, {f32({1}, {11})}, {f32({1}, {12})}, {f32({1}, {13})}});
  EXPECT_EQ(r[0].values(), (V{11}));
  EXPECT_EQ(r[1].values(), (V{11}));
  EXPECT_EQ(r[2].values(), (V{12}));
  EXPECT_EQ(r[3].values(), (V{12}));
}

}  // namespace
}  // namespace podsim::compiler::testing
