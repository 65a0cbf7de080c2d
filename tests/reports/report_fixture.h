// A hand-made simulated step for the reports tests: 8 devices, 2 s step,
// 100 TFLOP/s peak per device, 16 GiB HBM per device. Tests derive their
// expected numbers from these values.
#pragma once

#include "reports/report.h"

namespace podsim::reports {

inline constexpr int64_t kGiB = int64_t{1} << 30;

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
