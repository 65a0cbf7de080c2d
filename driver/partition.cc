// `podsim partition`'s input and device count (driver/partition.h).
#include "driver/partition.h"

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/hlo/hlo_parser.h"
#include "driver/run_workload.h"
#include "workloads/model_builder.h"
#include "workloads/workload.h"

namespace podsim::driver {

namespace {

struct PartitionInput {
  compiler::Module module;
  compiler::SpmdOptions options;
};

PartitionInput partition_input(const PartitionJob& job) {
  if (!is_hlo_module_path(job.input)) {
    if (!job.mesh.empty())
      throw UserError(SourceLocation{"--mesh " + job.mesh, 0, 0}, "a workload brings its own mesh",
                      "change it with --set mesh.axes.x=... instead of --mesh");
    workloads::Workload workload = workloads::load_workload(job.input, job.overrides);
    workloads::BuiltModel built = workloads::build_model(workload);
    built.module.set_num_partitions(built.mesh.num_devices());
    return {std::move(built.module), spmd_options(workload.compiler, workload_hardware(workload))};
  }
  if (!job.overrides.empty())
    throw UserError(SourceLocation{"--set " + job.overrides.front(), 0, 0},
                    "--set applies to workload YAML files",
                    "an HLO module carries its own shardings; use --mesh to set the device count");
  return {compiler::parse_hlo_file(job.input), compiler::SpmdOptions{}};
}

}  // namespace

int64_t mesh_device_count(const std::string& mesh) {
  int64_t devices = 1;
  for (const auto& [name, size] : parse_mesh_flag(mesh)) devices *= size;
  return devices;
}

compiler::PartitionResult partition_workload(const PartitionJob& job,
                                             const std::function<void(const std::string&)>& note) {
  auto [module, options] = partition_input(job);
  const bool from_hlo = is_hlo_module_path(job.input);
  if (from_hlo) {
    // A module XLA already partitioned must not be partitioned again.
    if (job.mode == compiler::ModuleMode::kAsIs)
      throw UserError(SourceLocation{"--mode as-is", 0, 0},
                      "partition has nothing to do for an as-is module",
                      "run it: podsim run " + job.input + " --mode as-is");
    const compiler::ModeEvidence evidence = compiler::collect_mode_evidence(module);
    if (!job.mode && !evidence.per_device.empty())
      throw UserError(
          evidence.per_device.front().where.known() ? evidence.per_device.front().where
                                                    : SourceLocation{job.input, 1, 1},
          fmt::format("the module is already one per-device program: {}",
                      evidence.per_device.front().what),
          fmt::format(
              "simulate it as it is with 'podsim run {}'; pass --mode partition to partition it "
              "anyway",
              job.input));
    if (job.mesh.empty() && module.num_partitions() <= 1)
      module.set_num_partitions(compiler::infer_device_count(module));
  }
  if (!job.mesh.empty()) {
    int64_t devices = mesh_device_count(job.mesh);
    if (module.num_partitions() > 1 && module.num_partitions() != devices)
      throw UserError(SourceLocation{job.input, 1, 1},
                      fmt::format("the module says num_partitions={} but --mesh {} has {} devices",
                                  module.num_partitions(), job.mesh, devices),
                      "drop --mesh or make its product match");
    if (job.request.propagate_only && from_hlo) {
      // Propagation reads device ids as labels (as XLA's pass does, which
      // takes no device count): shardings over ids beyond the mesh still
      // propagate; only partitioning needs every id to exist.
      const int64_t named = compiler::infer_device_count(module);
      if (named > devices) {
        note(
            fmt::format("podsim: note: shardings name device ids up to {} but --mesh {} has {} "
                        "devices; propagating "
                        "with {} (partitioning would refuse)",
                        named - 1, job.mesh, devices, named));
        devices = named;
      }
    }
    module.set_num_partitions(devices);
  }
  compiler::PartitionRequest request = job.request;
  request.spmd = options;
  return compiler::partition_module(std::move(module), request);
}

}  // namespace podsim::driver
