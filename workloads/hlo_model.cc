// model.kind: hlo — a module read from an HLO text file (path relative to the
// workload YAML) with its own sharding annotations. ModelInfo comes from the
// module: parameters = elements of the entry parameters named "param/..."
// (op_name), or of every floating-point entry parameter when none is named so
// (then inputs are counted too: an upper bound); model FLOPs = 2 x MACs of
// every dot (each computation counted once: loop trip counts are unknown
// here), x3 for a training step (forward + two backward matmuls per forward
// one, the 6N of PaLM appendix B), x1 for inference.
#include <fmt/format.h>

#include <filesystem>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/sharding/sharding.h"
#include "workloads/hlo_model.h"

namespace podsim::workloads {

namespace {

// FLOPs of one dot: 2 x output elements x contracted elements.
double dot_flops(const compiler::Computation& comp, const compiler::Instruction& dot) {
  const compiler::Shape& lhs = comp.instr(dot.operand(0)).shape;
  double contracted = 1;
  for (int64_t d : dot.attrs.dot.lhs_contracting)
    contracted *= static_cast<double>(lhs.dim(static_cast<int>(d)));
  return 2.0 * static_cast<double>(dot.shape.num_elements()) * contracted;
}

}  // namespace

BuiltModel build_hlo_model(const Workload& workload, compiler::DeviceMesh mesh) {
  const SourceLocation where{workload.source_file, 0, 0};
  if (!workload.sharding.empty())
    throw UserError(
        workload.sharding_locations.empty() ? where : workload.sharding_locations.front(),
        "a 'sharding' section does not apply to model.kind hlo",
        "an HLO module carries its own sharding annotations; remove the section");
  std::filesystem::path file(workload.model.file);
  if (file.is_relative()) file = std::filesystem::path(workload.source_file).parent_path() / file;
  auto key_at = [&](const std::string& key) {
    auto it = workload.model.key_locations.find(key);
    return it == workload.model.key_locations.end() ? where : it->second;
  };
  if (!std::filesystem::exists(file))
    throw UserError(
        key_at("model.file"),
        fmt::format("model.file '{}' not found (looked at {})", workload.model.file, file.string()),
        "the path is relative to the workload YAML");
  compiler::Module module = compiler::parse_hlo_file(file.string());
  compiler::verify_module(module);
  const int64_t devices = mesh.num_devices();
  if (module.num_partitions() > 1 && module.num_partitions() != devices)
    throw UserError(
        workload.mesh.axes_location.file.empty() ? where : workload.mesh.axes_location,
        fmt::format("the HLO module is compiled for {} partitions but the mesh has {} devices",
                    module.num_partitions(), devices),
        "make mesh.axes multiply to the module's num_partitions");
  module.set_num_partitions(devices);
  ModelInfo info = hlo_model_info(module, workload.training.enabled,
                                  workload.model.global_batch * workload.model.seq_len);
  return BuiltModel{std::move(module), std::move(mesh), info};
}

ModelInfo hlo_model_info(const compiler::Module& module, bool training, int64_t tokens_per_step) {
  ModelInfo info;
  const compiler::Computation& entry = module.entry();
  int64_t named = 0, floating = 0;
  for (compiler::InstrId p : entry.parameters()) {
    const compiler::Instruction& in = entry.instr(p);
    for (const compiler::Shape* leaf : in.shape.leaves()) {
      if (!compiler::is_floating(leaf->dtype())) continue;
      floating += leaf->num_elements();
      if (in.op_name.rfind("param/", 0) == 0) named += leaf->num_elements();
    }
  }
  info.parameters = named > 0 ? named : floating;
  info.activated_parameters = info.parameters;
  double forward = 0;
  for (const compiler::Computation& comp : module.computations())
    for (const compiler::Instruction& in : comp.instructions())
      if (in.opcode == compiler::Opcode::kDot) forward += dot_flops(comp, in);
  info.model_flops_per_step = (training ? 3.0 : 1.0) * forward;
  info.tokens_per_step = tokens_per_step;
  return info;
}

int64_t per_device_module_parameters(const compiler::Module& module) {
  const compiler::Computation& entry = module.entry();
  int64_t total = 0;
  for (compiler::InstrId p : entry.parameters()) {
    const compiler::Instruction& in = entry.instr(p);
    const std::vector<const compiler::Shape*> leaves = in.shape.leaves();
    std::optional<compiler::Sharding> sharding;
    if (in.sharding) sharding = compiler::parse_sharding(*in.sharding, in.location);
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (!compiler::is_floating(leaves[i]->dtype())) continue;
      int64_t tiles = 1;
      if (sharding) {
        const compiler::Sharding& leaf =
            sharding->is_tuple() && i < sharding->tuple_elements().size()
                ? sharding->tuple_elements()[i]
                : *sharding;
        tiles = leaf.is_tiled() ? leaf.num_tiles() : 1;
      }
      total += leaves[i]->num_elements() * tiles;
    }
  }
  return total;
}

}  // namespace podsim::workloads
