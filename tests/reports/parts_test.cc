// Time by model part (reports/parts.h): op_name classification and the sums,
// checked against a hand-made op list whose totals are added up in the
// comments.
#include "reports/parts.h"

#include <gtest/gtest.h>

#include "reports/formats.h"
#include "tests/reports/report_fixture.h"

namespace podsim::reports {
namespace {

TEST(ClassifyOpName, PassComponentAndLeafThroughLayersAndStacks) {
  OpNameParts a = classify_op_name("bwd/layer_12/ffn/wi_0");
  EXPECT_EQ(a.pass, "backward");
  EXPECT_EQ(a.component, "ffn");
  EXPECT_EQ(a.leaf, "wi_0");
  EXPECT_TRUE(a.layer_matmul);

  OpNameParts b = classify_op_name("recompute/decoder/layer_3/cross_attention/scores");
  EXPECT_EQ(b.pass, "recompute");
  EXPECT_EQ(b.component, "attention");
  EXPECT_EQ(b.leaf, "scores");
  EXPECT_FALSE(b.layer_matmul);  // the attention core, not a weight's matmul

  OpNameParts c = classify_op_name("fwd/encoder/layer_0/moe/wi");
  EXPECT_EQ(c.component, "moe");
  EXPECT_TRUE(c.layer_matmul);

  // An op named after its component alone has no leaf (softmax, masks).
  OpNameParts d = classify_op_name("fwd/layer_0/attention");
  EXPECT_EQ(d.component, "attention");
  EXPECT_EQ(d.leaf, "");
  EXPECT_FALSE(d.layer_matmul);

  // The optimizer updates a weight; that is not its matmul.
  OpNameParts e = classify_op_name("opt/ffn/wo");
  EXPECT_EQ(e.pass, "optimizer");
  EXPECT_FALSE(e.layer_matmul);

  EXPECT_EQ(classify_op_name("fwd/final_norm").component, "embedding_and_loss");
  EXPECT_EQ(classify_op_name("fwd/pipeline_iter_2/layer_1/ffn/wo").component, "ffn");
  // Layer-stacked weights of a scanned stack (model.layer_loop = scan).
  EXPECT_EQ(classify_op_name("opt/scan/layer_0/attention/wq").component, "attention");
  EXPECT_EQ(classify_op_name("bwd/seed").component, "other");
  // HLO text without the builders' names.
  EXPECT_EQ(classify_op_name("").pass, "other");
  EXPECT_EQ(classify_op_name("jit(train)/dot_general").pass, "other");
  EXPECT_FALSE(classify_op_name("layer_1/wi").layer_matmul);
}

sim::OpRecord compute(const char* op_name, double seconds, double flops) {
  sim::OpRecord r = ReportFixture::op("x", op_name, seconds, hw::Bound::kMxu);
  r.flops = flops;
  return r;
}

sim::OpRecord waited(const char* op_name, double busy, double exposed) {
  sim::OpRecord r = ReportFixture::collective("all-gather.1", busy, 1e6, exposed);
  r.op_name = op_name;
  return r;
}

TEST(SummarizeParts, SumsByPassAndComponentWithCollectiveWaits) {
  // Peak 1e14 FLOP/s. Layer matmuls: wi_0 (0.4 s, 3.2e13) + q (0.1 s,
  // 0.6e13) = 3.8e13 / (0.5 s x 1e14) = 0.76. Attention core: scores (0.2 s,
  // 0.4e13) + softmax (0.2 s, 0) = 0.4e13 / (0.4 s x 1e14) = 0.1.
  const std::vector<sim::OpRecord> ops = {
      compute("fwd/layer_0/ffn/wi_0", 0.4, 3.2e13),
      compute("fwd/layer_1/attention/q", 0.1, 0.6e13),
      compute("bwd/layer_0/attention/scores", 0.2, 0.4e13),
      compute("bwd/layer_1/attention", 0.2, 0),
      compute("opt/ffn/wi_0", 0.05, 1e9),        // no matmul: not in either utilization
      waited("fwd/layer_1/ffn/wi_0", 0.9, 0.3),  // busy time is not step time: only the wait counts
      waited("", 0.2, 0.1),                      // unnamed: pass and component "other"
  };
  PartsSummary s = summarize_parts(ops, 1e14);

  ASSERT_EQ(s.parts.size(), 5u);  // fwd/attention, fwd/ffn, bwd/attention, opt/ffn, other/other
  EXPECT_EQ(s.parts[0].pass, "forward");
  EXPECT_EQ(s.parts[0].component, "attention");
  EXPECT_EQ(s.parts[1].component, "ffn");
  EXPECT_DOUBLE_EQ(s.parts[1].compute_s, 0.4);
  EXPECT_DOUBLE_EQ(s.parts[1].exposed_s, 0.3);
  EXPECT_DOUBLE_EQ(s.parts[1].seconds(), 0.7);
  EXPECT_DOUBLE_EQ(s.parts[1].flops, 3.2e13);
  EXPECT_EQ(s.parts[2].pass, "backward");
  EXPECT_DOUBLE_EQ(s.parts[2].compute_s, 0.4);  // scores + softmax
  EXPECT_EQ(s.parts[3].pass, "optimizer");
  EXPECT_EQ(s.parts[4].pass, "other");
  EXPECT_DOUBLE_EQ(s.parts[4].exposed_s, 0.1);

  // Every pass and component is listed, in the fixed order.
  ASSERT_EQ(s.by_pass.size(), pass_keys().size());
  EXPECT_EQ(s.by_pass[0].name, "forward");
  EXPECT_DOUBLE_EQ(s.by_pass[0].seconds, 0.1 + 0.7);
  EXPECT_DOUBLE_EQ(s.by_pass[1].seconds, 0.0);  // recompute: none
  EXPECT_DOUBLE_EQ(s.by_pass[2].seconds, 0.4);
  EXPECT_DOUBLE_EQ(s.by_pass[3].seconds, 0.05);
  EXPECT_DOUBLE_EQ(s.by_pass[4].seconds, 0.1);
  ASSERT_EQ(s.by_component.size(), component_keys().size());
  EXPECT_DOUBLE_EQ(s.by_component[0].seconds, 0.1 + 0.4);   // attention
  EXPECT_DOUBLE_EQ(s.by_component[1].seconds, 0.7 + 0.05);  // ffn
  EXPECT_DOUBLE_EQ(s.by_component[2].seconds, 0.0);         // moe
  EXPECT_DOUBLE_EQ(s.by_component[4].seconds, 0.1);         // other

  EXPECT_DOUBLE_EQ(s.layer_matmul_utilization, 0.76);
  EXPECT_DOUBLE_EQ(s.attention_core_utilization, 0.1);
}

TEST(SummarizeParts, NoComputeGivesZeroUtilizationNotNaN) {
  PartsSummary s = summarize_parts({waited("fwd/layer_0/ffn/wi", 0.1, 0.1)}, 1e14);
  EXPECT_EQ(s.layer_matmul_utilization, 0.0);
  EXPECT_EQ(s.attention_core_utilization, 0.0);
}

TEST(SummarizeParts, ReportCarriesThePartsIntoEveryFormat) {
  // The fixture: fwd ffn wi (0.8 s, mxu) + fwd ffn act (0.5 s) + bwd ffn act
  // (0.2 s) and two collectives named bwd/layer_0/ffn/wi exposing 0.25 s.
  ReportFixture f;
  Report r = summarize(f.input());
  ASSERT_EQ(r.parts.parts.size(), 2u);
  EXPECT_DOUBLE_EQ(r.parts.by_pass[0].seconds, 1.3);
  EXPECT_DOUBLE_EQ(r.parts.by_pass[2].seconds, 0.2 + 0.25);
  // wi: 1e12 FLOPs in 0.8 s at 1e14 peak.
  EXPECT_DOUBLE_EQ(r.parts.layer_matmul_utilization, 1e12 / (0.8 * 1e14));

  auto fields = report_flat_fields(r);
  auto value_of = [&fields](const std::string& key) {
    for (const auto& [k, v] : fields)
      if (k == key) return v;
    return std::string("(missing)");
  };
  EXPECT_DOUBLE_EQ(std::stod(value_of("time_by_pass_s.forward")), 1.3);
  EXPECT_DOUBLE_EQ(std::stod(value_of("time_by_component_s.ffn")), 1.75);
  EXPECT_DOUBLE_EQ(std::stod(value_of("flops_utilization.layer_matmuls")), 0.0125);
  EXPECT_EQ(value_of("time_by_part"), "(missing)");  // the list is json-only

  EXPECT_NE(report_json(r).find("\"time_by_part\""), std::string::npos);
  const std::string table = report_table(r);
  EXPECT_NE(table.find("time by part"), std::string::npos) << table;
  EXPECT_NE(table.find("backward"), std::string::npos) << table;
  EXPECT_NE(report_markdown(r).find("### Time by part"), std::string::npos);
}

}  // namespace
}  // namespace podsim::reports
