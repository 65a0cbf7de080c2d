// Lowering of a workload onto compiler and hardware options (driver/lowering.h).
#include "driver/lowering.h"

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/training/optimizers.h"

namespace podsim::driver {

compiler::SpmdOptions spmd_options(const workloads::CompilerSpec& spec,
                                   const hw::HardwareConfig& hardware) {
  const workloads::WindowedEinsumSpec& we = spec.windowed_einsum;
  compiler::SpmdOptions options;
  options.windowed_einsum_threshold_bytes = static_cast<int64_t>(we.threshold_mib * 1024 * 1024);
  options.windowed_einsum_max_devices = we.max_devices;
  options.windowed_einsum_bidirectional = we.bidirectional;
  // The overlap test's flops per byte (compiler/spmd/partitioner.h): the
  // device's peak over what one ICI link direction delivers,
  // link_bandwidth x link_efficiency (hw_models/ici/topology.h). TPUv3:
  // 61.6e12 / (8.2e10 x 1) = 751.
  options.windowed_einsum_min_flops_per_byte =
      we.overlap_test ? hw::peak_matmul_flops_per_device(hardware.core) /
                            (hardware.ici.link_bandwidth * hardware.ici.link_efficiency)
                      : 0.0;
  // Reshard plans weigh one collective's latency against bytes
  // (compiler/spmd/reshard_plan.h): the bytes a link delivers in one hop
  // latency. TPUv3: 1e-6 s x 8.2e10 B/s = 8.2e4 (the compiler's default,
  // 1e5, is the earlier 1e11 B/s reading; the shipped programs are the same
  // at either value).
  options.collective_latency_bytes = hardware.ici.hop_latency_s * hardware.ici.link_bandwidth;
  return options;
}

compiler::CompileOptions compile_options(const workloads::Workload& w,
                                         const workloads::BuiltModel& model,
                                         const hw::HardwareConfig& hardware) {
  compiler::CompileOptions options;
  options.num_devices = w.mesh.device_count();
  options.spmd = spmd_options(w.compiler, hardware);
  options.loops = {w.compiler.loops.pipelined_all_gather,
                   w.compiler.loops.pipelined_reduce_scatter};
  options.collectives.async = w.compiler.async_collectives;
  options.collectives.fusion = w.compiler.collective_fusion;
  if (!w.training.enabled) return options;
  compiler::TrainingStepOptions training;
  training.optimizer = compiler::optimizer_defaults(w.training.optimizer);
  training.weight_update_sharding = w.training.weight_update_sharding;
  training.microbatches = w.training.microbatches;
  training.pipeline_stages = w.training.pipeline_stages;
  training.mesh =
      model.mesh;  // weight-update sharding splits over the axes a weight is replicated on
  switch (w.training.remat) {
    case workloads::RematMode::kNone:
      training.remat = compiler::RematKind::kNone;
      break;
    case workloads::RematMode::kFull:
      training.remat = compiler::RematKind::kFull;
      break;
    case workloads::RematMode::kAuto:
      training.remat = compiler::RematKind::kNone;
      options.remat_auto = true;
      options.hbm_budget_bytes = static_cast<int64_t>(hardware.hbm.capacity_bytes);
      break;
    case workloads::RematMode::kSelective:
      training.remat = compiler::RematKind::kSelective;
      training.remat_policy = w.training.remat_policy;
      break;
  }
  options.training = training;
  return options;
}

hw::MeshLayout mesh_layout(const workloads::MeshSpec& mesh) {
  hw::MeshLayout layout;
  for (const auto& [axis, size] : mesh.axes) layout.mesh_shape.push_back(size);
  layout.physical = mesh.physical;
  layout.order = mesh.order;
  layout.explicit_devices = mesh.explicit_devices;
  layout.slices = mesh.num_slices();
  return layout;
}

sim::Fidelity fidelity_from_name(const std::string& name) {
  if (name == "fast") return sim::Fidelity::kFast;
  if (name == "full") return sim::Fidelity::kFull;
  throw UserError(fmt::format("unknown fidelity '{}'", name), "use fast or full");
}

}  // namespace podsim::driver
