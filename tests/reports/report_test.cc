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
  EXPECT_DOUBLE_EQ(r.time.compute_s + r.time.exposed_communication_s + r.time.idle_s,
                   r.step_time_s);
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
  EXPECT_EQ(r.top_ops[0].name, "dot.1");     // 0.8 s
  EXPECT_EQ(r.top_ops[1].name, "fusion.2");  // 0.5 s (beats add.3's 0.2 s)
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
  EXPECT_EQ(op_name_pattern("fwd/pipeline_iter_7/layer_0/ffn/wi"),
            "fwd/pipeline_iter_*/layer_*/ffn/wi");
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
  f.timeline.ops.push_back(
      ReportFixture::op("fusion.12", "fwd/layer_1/ffn/act", 0.4, hw::Bound::kHbm));
  f.timeline.ops.push_back(
      ReportFixture::op("transpose.13", "fwd/layer_1/ffn/wi", 0.05, hw::Bound::kHbm));
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

TEST(Summarize, MemoryPeakNamesItsInstructionLargestBuffersAndLiveBytesOverTheStep) {
  ReportFixture f;
  f.use_training_step();
  SummaryInput in = f.input();
  in.memory_top_n = 2;
  in.memory_timeline_points = 3;
  Report r = summarize(in);
  // The peak (report_fixture.h): 288 B at gw, position 5 of 8 (id order).
  EXPECT_EQ(r.peak_memory_bytes, 288);
  const MemoryPeak& peak = r.memory_peak;
  EXPECT_EQ(peak.instruction, "gw");
  EXPECT_EQ(peak.op_name, "bwd/gw");
  EXPECT_EQ(peak.pass, "backward");
  EXPECT_EQ(peak.schedule_position, 5);
  EXPECT_EQ(peak.schedule_length, 8);
  // Live at gw: w 64, gw 64, nw 64, x 32, t 32, gt 32: six buffers; the two
  // largest are w and gw (ties by producer id).
  EXPECT_EQ(peak.live_buffers, 6);
  ASSERT_EQ(peak.top_buffers.size(), 2u);
  EXPECT_EQ(peak.top_buffers[0].name, "w");
  EXPECT_EQ(peak.top_buffers[0].role, "parameters");
  EXPECT_EQ(peak.top_buffers[0].sharding, "{devices=[2,1]0,1}");
  EXPECT_EQ(peak.top_buffers[0].shape, "f32[4,4]");
  EXPECT_EQ(peak.top_buffers[0].bytes, 64);
  EXPECT_EQ(peak.top_buffers[1].name, "gw");
  EXPECT_EQ(peak.top_buffers[1].role, "gradients");
  EXPECT_EQ(peak.top_buffers[1].pass, "backward");
  EXPECT_EQ(peak.top_buffers[1].sharding, "");
  // Live bytes 192 192 224 224 256 288 256 192 in 3 buckets of positions
  // [0,2) [2,5) [5,8): maxima 192, 256, 288 (the peak is kept).
  EXPECT_EQ(peak.timeline_positions, (std::vector<int64_t>{0, 2, 5}));
  EXPECT_EQ(peak.timeline_bytes, (std::vector<int64_t>{192, 256, 288}));
}

TEST(Summarize, AFusionHoldingAMatmulIsLabelledByItsDot) {
  ReportFixture f;
  f.program.module = compiler::parse_hlo(R"(HloModule m
ENTRY %e (x: f32[2,4], w: f32[4,4], b: f32[2,4]) -> f32[2,4] {
  %x = f32[2,4] parameter(0)
  %w = f32[4,4] parameter(1)
  %b = f32[2,4] parameter(2)
  %dot.3 = f32[2,4] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %add.4 = f32[2,4] add(%dot.3, %b)
  ROOT %multiply.5 = f32[2,4] multiply(%add.4, %add.4)
})");
  // Kernels: {dot.3, add.4} (a matmul with a bias add) and {multiply.5}.
  compiler::FusionPlan plan;
  plan.group_of = {-1, -1, -1, 0, 0, 1};
  plan.groups = {{{3, 4}}, {{5}}};
  f.program.fusion = {plan};
  f.timeline.ops[0].name = "add.4";
  f.timeline.ops[0].opcode = "fusion";
  f.timeline.ops[1].name = "multiply.5";
  f.timeline.ops[1].opcode = "fusion";
  Report r = summarize(f.input());
  ASSERT_GE(r.top_ops.size(), 2u);
  EXPECT_EQ(r.top_ops[0].name, "add.4");
  EXPECT_EQ(r.top_ops[0].kernel, "fusion(dot+add)");  // not "fusion(add)"
  EXPECT_EQ(r.top_ops[1].kernel, "fusion(multiply)");
  EXPECT_EQ(r.top_ops[2].kernel, "dot");  // add.3 of the fixture: an unfused op keeps its opcode
  EXPECT_EQ(r.top_op_groups[0].kernel, "fusion(dot+add)");
}

// The fixture's exposed communication is 0.4 s of a 2 s step (20 %): the
// note names the all-reduce group (all-reduce.4 summed over layers:
// bwd/layer_*/ffn/wi, 0.25 s exposed = 62 % of
// it, a backward op) and not the reduce-scatter (0 s exposed).
TEST(Summarize, LargeExposedCommunicationNamesItsCollectivesAndTheirCause) {
  ReportFixture f;
  Report r = summarize(f.input());
  ASSERT_EQ(r.notes.size(), 1u);
  const std::string& note = r.notes[0];
  EXPECT_NE(note.find("exposed communication is 400 ms (20.0 % of the step)"), std::string::npos)
      << note;
  EXPECT_NE(note.find("all-reduce bwd/layer_*/ffn/wi f32[1024] (250 ms exposed, 62 % of it"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("partial sums of a backward dot"), std::string::npos) << note;
  EXPECT_EQ(note.find("reduce-scatter"), std::string::npos) << note;

  // In a windowed-einsum loop's body the cause is the windowed loop.
  f.program.module = compiler::parse_hlo(R"(HloModule m
%windowed_einsum_body.1 (p: f32[1024]) -> f32[1024] {
  %p = f32[1024] parameter(0)
  ROOT %collective-permute.4 = f32[1024] collective-permute(%p), source_target_pairs={{0,1},{1,0}}
}

ENTRY %e (x: f32[1024]) -> f32[1024] {
  %x = f32[1024] parameter(0)
  ROOT %c = f32[1024] call(%x), to_apply=%windowed_einsum_body.1
})");
  f.timeline.ops[3].name = "collective-permute.4";
  f.timeline.ops[3].opcode = "collective-permute";
  r = summarize(f.input());
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("collective-permute bwd/layer_*/ffn/wi f32[1024]"), std::string::npos)
      << r.notes[0];
  EXPECT_NE(r.notes[0].find("a step of a windowed-einsum loop (compiler.windowed_einsum"),
            std::string::npos)
      << r.notes[0];

  // A layer's matmul weight (leaf wi of the ffn, group op_name
  // bwd/layer_*/ffn/wi) gathered whole: the dot's strategy, not windowed.
  f.program.module = compiler::Module();
  f.timeline.ops[3].name = "all-gather.4";
  f.timeline.ops[3].opcode = "all-gather";
  r = summarize(f.input());
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(
      r.notes[0].find(
          "all-gather bwd/layer_*/ffn/wi f32[1024] (250 ms exposed, 62 % of it, 1 op(s)): the "
          "dot's strategy gathers a sharded operand whole (not windowed"),
      std::string::npos)
      << r.notes[0];

  // Below 10 % of the step: no note.
  f.timeline.exposed_communication_s = 0.19;
  EXPECT_TRUE(summarize(f.input()).notes.empty());
}

// x f32[7,16] over 4 tiles of dim 0 is padded to [8,16]: 16 of 128
// elements (12.5 %) are padding; w f32[16,8] over [1,4] divides evenly.
TEST(Summarize, UnevenShardingGetsANoteWithItsPadding) {
  ReportFixture f;
  f.timeline.exposed_communication_s = 0;  // no communication note
  compiler::Module annotated = compiler::parse_hlo(R"(HloModule m
ENTRY %e (x: f32[7,16], w: f32[16,8]) -> f32[7,8] {
  %x = f32[7,16] parameter(0), sharding={devices=[4,1]0,1,2,3}, metadata={op_name="input/layer_3/x"}
  %w = f32[16,8] parameter(1), sharding={devices=[1,4]0,1,2,3}, metadata={op_name="param/w"}
  ROOT %y = f32[7,8] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  SummaryInput in = f.input();
  in.annotated = &annotated;
  Report r = summarize(in);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("uneven sharding: 1 annotated tensor(s)"), std::string::npos)
      << r.notes[0];
  EXPECT_NE(r.notes[0].find("input/layer_*/x f32[7,16] to [8,16] (12.5 % padding)"),
            std::string::npos)
      << r.notes[0];
  EXPECT_NE(r.notes[0].find("16 padded elements, 12.5 % of those tensors"), std::string::npos)
      << r.notes[0];
  EXPECT_EQ(r.notes[0].find("param/w"), std::string::npos) << r.notes[0];
  // An as-is module is XLA's per-device program: its shapes are not global.
  in.mode = "as-is";
  for (const std::string& note : summarize(in).notes)
    EXPECT_EQ(note.find("uneven"), std::string::npos) << note;
}

}  // namespace
}  // namespace podsim::reports
