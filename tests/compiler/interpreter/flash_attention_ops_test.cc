// Interpreter: the fused attention custom calls (flash_attention_ops.cc)
// against the unfused attention written with dots, a max/sum softmax and a
// causal select (B=1, N=2, L=T=8, D=4, f64 so differences are rounding-free):
// the forward output and log-sum-exp equal the unfused graph's, the backward
// equals central finite differences of the unfused graph.
#include <fmt/format.h>

#include <string>

#include <gtest/gtest.h>

#include "compiler/interpreter/cost_estimate.h"
#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

constexpr const char* kConfig = R"({"causal":CAUSAL,"block_q":4,"block_k":4})";

std::string config(bool causal) {
  std::string c = kConfig;
  c.replace(c.find("CAUSAL"), 6, causal ? "true" : "false");
  return c;
}

// The unfused attention: s = q k^T / sqrt(4) [1,2,8,8], masked (key > query
// -> -1e30), p = softmax over T, o = p v transposed to [B, L, N, D]; also
// lse = max + log(sum exp).
std::string unfused(bool causal) {
  return fmt::format(R"(
HloModule unfused
max {{ a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT m = f64[] maximum(a, b) }}
add {{ a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT s = f64[] add(a, b) }}
ENTRY e {{
  q = f64[1,8,2,4] parameter(0)
  k = f64[1,8,2,4] parameter(1)
  v = f64[1,8,2,4] parameter(2)
  qk = f64[1,2,8,8] dot(q, k), lhs_batch_dims={{0,2}}, lhs_contracting_dims={{3}}, rhs_batch_dims={{0,2}}, rhs_contracting_dims={{3}}
  half = f64[] constant(0.5)
  scale = f64[1,2,8,8] broadcast(half), dimensions={{}}
  scaled = f64[1,2,8,8] multiply(qk, scale)
  row = s32[1,2,8,8] iota(), iota_dimension=2
  col = s32[1,2,8,8] iota(), iota_dimension=3
  visible = pred[1,2,8,8] compare({}
  hide = f64[] constant(-1e30)
  hidden = f64[1,2,8,8] broadcast(hide), dimensions={{}}
  s = f64[1,2,8,8] select(visible, scaled, hidden)
  low = f64[] constant(-inf)
  m = f64[1,2,8] reduce(s, low), dimensions={{3}}, to_apply=max
  mb = f64[1,2,8,8] broadcast(m), dimensions={{0,1,2}}
  shifted = f64[1,2,8,8] subtract(s, mb)
  e = f64[1,2,8,8] exponential(shifted)
  zero = f64[] constant(0)
  z = f64[1,2,8] reduce(e, zero), dimensions={{3}}, to_apply=add
  zb = f64[1,2,8,8] broadcast(z), dimensions={{0,1,2}}
  p = f64[1,2,8,8] divide(e, zb)
  pv = f64[1,2,8,4] dot(p, v), lhs_batch_dims={{0,1}}, lhs_contracting_dims={{3}}, rhs_batch_dims={{0,2}}, rhs_contracting_dims={{1}}
  o = f64[1,8,2,4] transpose(pv), dimensions={{0,2,1,3}}
  logz = f64[1,2,8] log(z)
  lse = f64[1,2,8] add(m, logz)
  ROOT r = (f64[1,8,2,4], f64[1,2,8]) tuple(o, lse)
}})",
                     causal ? "col, row), direction=LE" : "col, col), direction=EQ");
}

std::string fused(bool causal) {
  return fmt::format(R"(
HloModule fused
ENTRY e {{
  q = f64[1,8,2,4] parameter(0)
  k = f64[1,8,2,4] parameter(1)
  v = f64[1,8,2,4] parameter(2)
  ROOT f = (f64[1,8,2,4], f32[1,2,8]) custom-call(q, k, v), custom_call_target="podsim.flash_attention", backend_config={}
}})",
                     config(causal));
}

std::string fused_bwd(bool causal) {
  return fmt::format(R"(
HloModule fused_bwd
ENTRY e {{
  q = f64[1,8,2,4] parameter(0)
  k = f64[1,8,2,4] parameter(1)
  v = f64[1,8,2,4] parameter(2)
  o = f64[1,8,2,4] parameter(3)
  lse = f32[1,2,8] parameter(4)
  do = f64[1,8,2,4] parameter(5)
  ROOT g = (f64[1,8,2,4], f64[1,8,2,4], f64[1,8,2,4]) custom-call(q, k, v, o, lse, do), custom_call_target="podsim.flash_attention_bwd", backend_config={}
}})",
                     config(causal));
}

const Shape kQ(DType::kF64, {1, 8, 2, 4});

std::vector<Literal> inputs() {
  return {random_literal(kQ, 1), random_literal(kQ, 2), random_literal(kQ, 3)};
}

class FlashAttentionOps : public ::testing::TestWithParam<bool> {};

TEST_P(FlashAttentionOps, ForwardEqualsTheUnfusedAttention) {
  const bool causal = GetParam();
  const std::vector<Literal> args = inputs();
  Literal expected = run(unfused(causal), args);
  Literal actual = run(fused(causal), args);
  ASSERT_TRUE(actual.is_tuple());
  Comparison o = compare_literals(expected.element(0), actual.element(0), 1e-12);
  EXPECT_TRUE(o.ok) << o.first_mismatch;
  // lse is f32: relative rounding 2^-24.
  Literal lse_expected(Shape(DType::kF32, {1, 2, 8}), expected.element(1).values());
  Comparison lse = compare_literals(lse_expected, actual.element(1), 1e-7);
  EXPECT_TRUE(lse.ok) << lse.first_mismatch;
}

TEST_P(FlashAttentionOps, BackwardEqualsFiniteDifferencesOfTheUnfusedAttention) {
  // Loss = sum(o * w): dL/do = w. Central differences with step h have error
  // O(h^2 * third derivative) ~ 1e-8 for these O(1) inputs.
  const bool causal = GetParam();
  std::vector<Literal> args = inputs();
  const Literal w = random_literal(kQ, 4);
  Literal forward = run(unfused(causal), args);
  Literal lse(Shape(DType::kF32, {1, 2, 8}), forward.element(1).values());
  for (double& x : lse.mutable_values()) x = round_to_dtype(DType::kF32, x);
  Literal grads = run(fused_bwd(causal), {args[0], args[1], args[2], forward.element(0), lse, w});
  const Module reference = parse_verified(unfused(causal));
  auto loss = [&](const std::vector<Literal>& a) {
    const Literal o = evaluate(reference, a).element(0);
    double sum = 0;
    for (size_t i = 0; i < o.values().size(); ++i) sum += o.values()[i] * w.values()[i];
    return sum;
  };
  const double h = 1e-4;
  for (int operand = 0; operand < 3; ++operand) {
    const Literal& g = grads.element(operand);
    for (size_t i = 0; i < g.values().size(); ++i) {
      std::vector<Literal> plus = args, minus = args;
      plus[static_cast<size_t>(operand)].mutable_values()[i] += h;
      minus[static_cast<size_t>(operand)].mutable_values()[i] -= h;
      const double numeric = (loss(plus) - loss(minus)) / (2 * h);
      // lse enters rounded to f32: p = exp(s - lse) is off by up to 2^-24 relative.
      EXPECT_NEAR(g.values()[i], numeric, 1e-6) << "operand " << operand << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CausalAndNot, FlashAttentionOps, ::testing::Bool());

TEST(FlashAttentionOpsCost, TheCallsHaveDefinedValues) {
  const Module m = parse_verified(fused(true));
  EXPECT_TRUE(uninterpretable_instructions(m).empty());
}

TEST(FlashAttentionOpsErrors, AMalformedConfigIsAUserError) {
  std::string hlo = fused(false);
  hlo.replace(hlo.find("\"block_q\":4"), 11, "\"block_q\":0");
  EXPECT_THROW(run(hlo, inputs()), UserError);
}

}  // namespace
}  // namespace podsim::compiler::testing
