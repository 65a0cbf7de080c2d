// The published tables' FLOP rules (studies/flop_rules.h), on closed forms
// and on the shipped MaxText workloads (docs/reference/measurements.md#flop-rules).
#include "studies/flop_rules.h"

#include <gtest/gtest.h>

#include "tests/test_files.h"
#include "workloads/model_info.h"
#include "workloads/workload.h"

namespace podsim::studies {
namespace {

using test_files::source_path;

workloads::ModelSpec tiny_model() {
  workloads::ModelSpec m;
  m.layers = 2;
  m.model_dim = 8;
  m.ffn_dim = 16;
  m.heads = 2;
  m.head_dim = 4;
  m.vocab = 32;
  m.ffn = workloads::FfnKind::kRelu;
  m.position = workloads::PositionKind::kRotary;
  m.seq_len = 16;
  m.global_batch = 2;
  return m;
}

TEST(FlopRules, TheThreeRulesOnATinyModel) {
  const workloads::ModelSpec m = tiny_model();
  const double p = static_cast<double>(workloads::count_parameters(m).total);
  // N L D S = 2 heads x 2 layers x 4 x 16 = 256.
  EXPECT_DOUBLE_EQ(flops_per_token(FlopRule::kSixP, m), 6 * p);
  EXPECT_DOUBLE_EQ(flops_per_token(FlopRule::kSixPAttention, m), 6 * p + 12 * 256.0);
  EXPECT_DOUBLE_EQ(flops_per_token(FlopRule::kSixPCausalAttention, m), 6 * p + 6 * 256.0);
}

TEST(FlopRules, NamesRoundTrip) {
  for (const std::string& name : flop_rule_names().names())
    EXPECT_EQ(flop_rule_names().name(*flop_rule_names().find(name)), name);
  EXPECT_FALSE(flop_rule_names().find("6P").has_value());
}

// MaxText's v4 table: 6 P with P = 48 (4 x 6144 x 24 x 256 + 2 x 6144 x 24576)
// + 32768 x 6144 = 21,944,598,528 plus norm scales and relative biases
// (measurements.md "Parameter counts"): within 0.01% of 6 x 21.9446e9.
TEST(FlopRules, MaxText22BOnV4Is6P) {
  const workloads::Workload w =
      workloads::load_workload(source_path("workloads/maxtext_22b_v4_128.yaml"));
  const double fpt = flops_per_token(FlopRule::kSixP, w.model);
  EXPECT_NEAR(fpt, 6 * 21'944'598'528.0, 6 * 21'944'598'528.0 * 1e-4);
  // The table's 156 TFLOP/s on 64 chips is 156e12 x 64 / (6 P) ~= 75,830 tokens/s.
  EXPECT_NEAR(156e12 * 64 / fpt, 75'830, 10);
}

// v5p 32B: P = 32 x 1,006,632,960 + 32768 x 10240 = 32,547,799,040 (+ norms);
// causal attention 6 x 32 heads x 32 layers x 256 x 2048 = 3,221,225,472.
TEST(FlopRules, MaxText32BOnV5pHalvesTheAttentionTerm) {
  const workloads::Workload w =
      workloads::load_workload(source_path("workloads/maxtext_32b_v5p_128.yaml"));
  const double fpt = flops_per_token(FlopRule::kSixPCausalAttention, w.model);
  EXPECT_NEAR(fpt, 6 * 32'547'799'040.0 + 3'221'225'472.0, 6 * 32'547'799'040.0 * 1e-4);
}

}  // namespace
}  // namespace podsim::studies
