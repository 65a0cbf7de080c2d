// summarize() on a hand-made Timeline, SpmdProgram and ModelInfo: the
// closed forms of reports/report.h checked with numbers derived by hand.
#include <gtest/gtest.h>

#include "reports/report.h"
#include "tests/reports/report_fixture.h"

namespace podsim::reports {
namespace {

TEST(Summarize, UtilizationAndThroughputFollowTheClosedForms) {
  ReportFixture f;
  Report r = summarize(f.input());
  // tokens/s = tokens_per_step / step = 4096 / 2 s = 2048.
  EXPECT_DOUBLE_EQ(r.tokens_per_second, 2048.0);
  // MFU = model FLOPs / (step x devices x peak) = 8e14 / (2 x 8 x 1e14) = 0.5.
  EXPECT_DOUBLE_EQ(r.mfu, 0.5);
  // HFU = executed per device x devices / same = 1.2e14 x 8 / 1.6e15 = 0.6.
  EXPECT_DOUBLE_EQ(r.executed_flops_per_step, 9.6e14);
  EXPECT_DOUBLE_EQ(r.hfu, 0.6);
  // Achieved model FLOP/s per device = 8e14 / (2 s x 8) = 5e13 (= MFU x peak).
  EXPECT_DOUBLE_EQ(r.model_flops_per_second_per_device, 5e13);
  EXPECT_EQ(r.devices, 8);
  EXPECT_EQ(r.parameters, 123456789);
  EXPECT_EQ(r.fidelity, "fast");
}

TEST(Summarize, FidelityNotesAreCarriedToTheReport) {
  ReportFixture f;
  f.timeline.approximation_note = "too many devices for full";
  f.timeline.fallback_reason = "asymmetric placement";
  Report r = summarize(f.input());
  EXPECT_EQ(r.approximation_note, "too many devices for full");
  EXPECT_EQ(r.fallback_reason, "asymmetric placement");
}

TEST(Summarize, ZeroStepTimeGivesZeroRatesNotInfinities) {
  ReportFixture f;
  f.timeline.step_time_s = 0;
  Report r = summarize(f.input());
  EXPECT_EQ(r.tokens_per_second, 0);
  EXPECT_EQ(r.mfu, 0);
  EXPECT_EQ(r.hfu, 0);
}

TEST(Summarize, MemoryListsEveryRoleInFixedOrderAndFitsAgainstCapacity) {
  ReportFixture f;
  Report r = summarize(f.input());
  ASSERT_EQ(r.memory_breakdown.size(), 7u);
  EXPECT_EQ(r.memory_breakdown[0].name, "parameters");
  EXPECT_EQ(r.memory_breakdown[0].bytes, 4 * kGiB);
  EXPECT_EQ(r.memory_breakdown[3].name, "activations");
  EXPECT_EQ(r.memory_breakdown[3].bytes, 6 * kGiB);
  EXPECT_EQ(r.memory_breakdown[1].bytes, 0);  // optimizer state: absent in the plan -> 0
  EXPECT_EQ(r.peak_memory_bytes, 10 * kGiB);
  EXPECT_TRUE(r.fits_in_memory);  // 10 GiB <= 16 GiB

  f.program.memory.peak_bytes = 17 * kGiB;  // over 16 GiB: reported, not an error
  EXPECT_FALSE(summarize(f.input()).fits_in_memory);
  f.program.memory.peak_bytes = 16 * kGiB;  // exactly full still fits
  EXPECT_TRUE(summarize(f.input()).fits_in_memory);
}

TEST(Summarize, TimeBreakdownCopiesTheTimelineSplit) {
  ReportFixture f;
  Report r = summarize(f.input());
  EXPECT_DOUBLE_EQ(r.time.compute_s, 1.5);
  EXPECT_DOUBLE_EQ(r.time.mxu_bound_s, 1.0);
  EXPECT_DOUBLE_EQ(r.time.memory_bound_s, 0.3);
  EXPECT_DOUBLE_EQ(r.time.exposed_communication_s, 0.4);
  EXPECT_DOUBLE_EQ(r.time.idle_s, 0.1);
  // The fixture's parts sum to the step: 1.5 + 0.4 + 0.1 = 2.0.
  EXPECT_DOUBLE_EQ(r.time.compute_s + r.time.exposed_communication_s + r.time.idle_s, r.step_time_s);
}

TEST(Summarize, CollectivesCoverEveryKindWithSimulatedAndEmittedCounts) {
  ReportFixture f;
  Report r = summarize(f.input());
  ASSERT_EQ(r.collectives.size(), 5u);
  EXPECT_EQ(r.collectives[0].kind, "all-reduce");
  EXPECT_EQ(r.collectives[0].count, 3);
  EXPECT_EQ(r.collectives[0].static_count, 1);
  EXPECT_DOUBLE_EQ(r.collectives[0].bytes, 3e6);
  EXPECT_EQ(r.collectives[2].kind, "reduce-scatter");
  EXPECT_EQ(r.collectives[2].count, 2);
  EXPECT_EQ(r.collectives[2].static_count, 2);
  EXPECT_EQ(r.collectives[3].kind, "all-to-all");
  EXPECT_EQ(r.collectives[3].count, 0);
  EXPECT_EQ(r.compile.full_replications, 1);
  EXPECT_EQ(r.compile.remat_applied, "save_dots");
}

TEST(Summarize, TopOpsAreTheLongestComputeOpsAndCollectivesApart) {
  ReportFixture f;
  SummaryInput input = f.input();
  input.top_n = 2;
  Report r = summarize(input);
  ASSERT_EQ(r.top_ops.size(), 2u);
  EXPECT_EQ(r.top_ops[0].name, "dot.1");       // 0.8 s
  EXPECT_EQ(r.top_ops[1].name, "fusion.2");    // 0.5 s (beats add.3's 0.2 s)
  EXPECT_EQ(r.top_ops[0].bound, "mxu");
  EXPECT_DOUBLE_EQ(r.top_ops[0].step_fraction, 0.4);  // 0.8 s of a 2 s step
  ASSERT_EQ(r.top_collectives.size(), 2u);
  EXPECT_EQ(r.top_collectives[0].name, "all-reduce.4");  // 0.3 s
  EXPECT_EQ(r.top_collectives[0].bound, "collective");
  EXPECT_DOUBLE_EQ(r.top_collectives[0].bytes, 1e6);
  EXPECT_DOUBLE_EQ(r.top_collectives[0].exposed_seconds, 0.25);
}

TEST(Summarize, OpNamePatternStarsLayerAndPipelineIterationNumbers) {
  EXPECT_EQ(op_name_pattern("fwd/layer_12/attention"), "fwd/layer_*/attention");
  EXPECT_EQ(op_name_pattern("layer_3"), "layer_*");
  EXPECT_EQ(op_name_pattern("fwd/pipeline_iter_7/layer_0/ffn/wi"), "fwd/pipeline_iter_*/layer_*/ffn/wi");
  EXPECT_EQ(op_name_pattern("bwd/encoder/layer_5/moe"), "bwd/encoder/layer_*/moe");
  // Only whole segments "layer_<digits>": other names keep their digits.
  EXPECT_EQ(op_name_pattern("fwd/layer_/x"), "fwd/layer_/x");
  EXPECT_EQ(op_name_pattern("fwd/layer_2b/x"), "fwd/layer_2b/x");
  EXPECT_EQ(op_name_pattern("fwd/sublayer_2/x"), "fwd/sublayer_2/x");
  EXPECT_EQ(op_name_pattern("opt/wi_0"), "opt/wi_0");
  EXPECT_EQ(op_name_pattern(""), "");
}

TEST(Summarize, TopOpGroupsSumTheSameOpOverLayers) {
  ReportFixture f;
  // Layer 1 repeats layer 0's wi dot (0.3 s) and activation fusion (0.4 s);
  // a second dot kernel of layer 1 with the same op_name is kept apart by
  // its name ("transpose", not "dot").
  f.timeline.ops.push_back(ReportFixture::op("dot.11", "fwd/layer_1/ffn/wi", 0.3, hw::Bound::kMxu));
  f.timeline.ops.push_back(ReportFixture::op("fusion.12", "fwd/layer_1/ffn/act", 0.4, hw::Bound::kHbm));
  f.timeline.ops.push_back(ReportFixture::op("transpose.13", "fwd/layer_1/ffn/wi", 0.05, hw::Bound::kHbm));
  f.timeline.ops.push_back(ReportFixture::collective("all-reduce.14", 0.2, 1e6, 0.1));
  f.timeline.ops.back().op_name = "bwd/layer_1/ffn/wi";
  Report r = summarize(f.input());
  ASSERT_GE(r.top_op_groups.size(), 3u);
  // dot: 0.8 + 0.3 = 1.1 s; act fusion: 0.5 + 0.4 = 0.9 s; then add.3 0.2 s.
  EXPECT_EQ(r.top_op_groups[0].op_name, "fwd/layer_*/ffn/wi");
  EXPECT_EQ(r.top_op_groups[0].instances, 2);
  EXPECT_DOUBLE_EQ(r.top_op_groups[0].seconds, 1.1);
  EXPECT_DOUBLE_EQ(r.top_op_groups[0].step_fraction, 0.55);  // 1.1 s of a 2 s step
  EXPECT_DOUBLE_EQ(r.top_op_groups[0].flops, 2e12);          // 1e12 per op
  EXPECT_EQ(r.top_op_groups[0].executions, 2);
  EXPECT_EQ(r.top_op_groups[0].name, "dot.1");  // the longest member (0.8 s)
  EXPECT_EQ(r.top_op_groups[1].op_name, "fwd/layer_*/ffn/act");
  EXPECT_DOUBLE_EQ(r.top_op_groups[1].seconds, 0.9);
  EXPECT_EQ(r.top_op_groups[2].name, "add.3");
  EXPECT_EQ(r.top_op_groups[2].instances, 1);
  // transpose.13 is its own group: 0.05 s, last of the five.
  ASSERT_EQ(r.top_op_groups.size(), 4u);
  EXPECT_EQ(r.top_op_groups[3].name, "transpose.13");
  // Collectives: all-reduce 0.3 + 0.2 s, exposed 0.25 + 0.1, bytes 2e6.
  ASSERT_EQ(r.top_collective_groups.size(), 2u);
  EXPECT_EQ(r.top_collective_groups[0].op_name, "bwd/layer_*/ffn/wi");
  EXPECT_EQ(r.top_collective_groups[0].instances, 2);
  EXPECT_DOUBLE_EQ(r.top_collective_groups[0].seconds, 0.5);
  EXPECT_DOUBLE_EQ(r.top_collective_groups[0].exposed_seconds, 0.35);
  EXPECT_DOUBLE_EQ(r.top_collective_groups[0].bytes, 2e6);
  // The ungrouped lists are unchanged: dot.1 still first on its own.
  EXPECT_EQ(r.top_ops[0].name, "dot.1");
  EXPECT_DOUBLE_EQ(r.top_ops[0].seconds, 0.8);
}

}  // namespace
}  // namespace podsim::reports
