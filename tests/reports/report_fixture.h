// A hand-made simulated step for the reports tests: 8 devices, 2 s step,
// 100 TFLOP/s peak per device, 16 GiB HBM per device. Tests derive their
// expected numbers from these values.
#pragma once

#include "compiler/backend/memory_plan.h"
#include "compiler/hlo/hlo_parser.h"
#include "reports/report.h"

namespace podsim::reports {

inline constexpr int64_t kGiB = int64_t{1} << 30;

// A tiny training step (the memory planner's hand-computed case,
// tests/compiler/backend/memory_plan_test.cc): h = x w, t = tanh h
// (forward), gt = t * h, gw = x^T gt (backward), nw = w - gw (optimizer).
// w f32[4,4] 64 B, every [2,4] value 32 B, gw and nw 64 B; w carries a
// sharding attribute. In id order the live bytes are 192 at positions 0-1
// (w, x, and the outputs t and nw, live throughout), 224 at 2-3 (+ h), 256
// at 4 (+ gt), 288 at 5 (gt + gw: the peak, at gw), 256 at 6 (gw), 192 at 7.
inline constexpr const char* kTrainingStepHlo = R"(HloModule m
ENTRY %e (w: f32[4,4], x: f32[2,4]) -> (f32[2,4], f32[4,4]) {
  %w = f32[4,4] parameter(0), sharding={devices=[2,1]0,1}, metadata={op_name="param/w"}
  %x = f32[2,4] parameter(1), metadata={op_name="input/x"}
  %h = f32[2,4] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="fwd/h"}
  %t = f32[2,4] tanh(%h), metadata={op_name="fwd/t"}
  %gt = f32[2,4] multiply(%t, %h), metadata={op_name="bwd/gt"}
  %gw = f32[4,4] dot(%x, %gt), lhs_contracting_dims={0}, rhs_contracting_dims={0}, metadata={op_name="bwd/gw"}
  %nw = f32[4,4] subtract(%w, %gw), metadata={op_name="opt/w"}
  ROOT %r = (f32[2,4], f32[4,4]) tuple(%t, %nw)
})";

struct ReportFixture {
  sim::Timeline timeline;
  compiler::SpmdProgram program;
  workloads::ModelInfo model;

  ReportFixture() {
    timeline.fidelity = sim::Fidelity::kFast;
    timeline.devices = 8;
    timeline.devices_simulated = 1;
    timeline.step_time_s = 2.0;
    timeline.compute_s = 1.5;  // = mxu 1.0 + vpu 0.1 + hbm 0.3 + overhead 0.1
    timeline.mxu_bound_s = 1.0;
    timeline.vpu_bound_s = 0.1;
    timeline.hbm_bound_s = 0.3;
    timeline.overhead_s = 0.1;
    timeline.exposed_communication_s = 0.4;
    timeline.idle_s = 0.1;
    timeline.executed_flops_per_device = 1.2e14;
    timeline.ops = {op("dot.1", "fwd/layer_0/ffn/wi", 0.8, hw::Bound::kMxu),
                    op("fusion.2", "fwd/layer_0/ffn/act", 0.5, hw::Bound::kHbm),
                    op("add.3", "bwd/layer_0/ffn/act", 0.2, hw::Bound::kVpu),
                    collective("all-reduce.4", 0.3, 1e6, 0.25),
                    collective("reduce-scatter.5", 0.1, 5e5, 0.0)};
    timeline.collectives = {{"all-reduce", 3, 3e6, 0.9}, {"reduce-scatter", 2, 1e6, 0.2}};
    timeline.simulate_wall_s = 0.5;

    program.num_devices = 8;
    program.memory.peak_bytes = 10 * kGiB;
    program.memory.at_peak.bytes[compiler::ValueRole::kParameter] = 4 * kGiB;
    program.memory.at_peak.bytes[compiler::ValueRole::kActivation] = 6 * kGiB;
    program.stats.spmd.all_reduces = 1;
    program.stats.spmd.reduce_scatters = 2;
    program.stats.spmd.full_replications = 1;
    program.stats.remat_applied = "save_dots";
    program.stats.instructions_annotated = 40;
    program.stats.instructions_partitioned = 55;

    model.parameters = 123456789;
    model.tokens_per_step = 4096;
    model.model_flops_per_step = 8e14;
    model.layers = 2;
  }

  // The program becomes kTrainingStepHlo, unfused, in id order, with its
  // memory plan.
  void use_training_step() {
    program.module = compiler::parse_hlo(kTrainingStepHlo);
    program.schedule.clear();
    program.fusion.clear();
    program.memory = compiler::plan_memory(
        compiler::MemoryPlanInput{program.module, program.schedule, program.fusion, {}});
  }

  SummaryInput input() const {
    SummaryInput in;
    in.timeline = &timeline;
    in.program = &program;
    in.model = model;
    in.workload_name = "fixture";
    in.hardware_name = "tpuv3";
    in.peak_flops_per_device = 1e14;
    in.hbm_capacity_bytes = static_cast<double>(16 * kGiB);
    in.compile_wall_s = 1.25;
    in.simulate_wall_s = 0.5;
    return in;
  }

  static sim::OpRecord op(const char* name, const char* op_name, double seconds, hw::Bound bound) {
    sim::OpRecord r;
    r.name = name;
    r.op_name = op_name;
    r.opcode = "dot";
    r.shape = "bf16[8,128]";
    r.executions = 1;
    r.seconds = seconds;
    r.flops = 1e12;
    r.hbm_bytes = 2e6;
    r.bound = bound;
    return r;
  }

  static sim::OpRecord collective(const char* name, double seconds, double bytes, double exposed) {
    sim::OpRecord r;
    r.name = name;
    r.op_name = "bwd/layer_0/ffn/wi";
    r.opcode = std::string(name).substr(0, std::string(name).find('.'));
    r.shape = "f32[1024]";
    r.executions = 1;
    r.seconds = seconds;
    r.collective = true;
    r.collective_bytes = bytes;
    r.exposed_seconds = exposed;
    return r;
  }
};

}  // namespace podsim::reports
