// Interpreter: while (counted loop, collectives in the body, diverging
// conditions), call, tuples, custom-calls and user errors.
#include <string>

#include <gtest/gtest.h>

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
  y = f32[] all-reduce(x), replica_groups={}, to_apply=add
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
    EXPECT_NE(e.message().find("devices disagree on while condition"), std::string::npos) << e.message();
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
  EXPECT_THROW(run(identity, {}), UserError);                                      // too few arguments
  EXPECT_THROW(run(identity, {f32({3}, {1, 2, 3})}), UserError);                   // wrong shape
  EXPECT_THROW(run(identity, {s32({2}, {1, 2})}), UserError);                      // wrong dtype
  EXPECT_THROW(evaluate_spmd(parse_verified(identity), {}), UserError);            // no devices
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
    evaluate(parse_hlo(bad_gather), {f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7}), s32({2, 2}, {0, 1, 2, 3})});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("gather 'g'"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace podsim::compiler::testing
