// compiler::compile (compile.h): training step -> propagate -> partition ->
// fuse -> schedule -> memory plan, with wall times per phase; and
// partition_module, `podsim partition`'s propagate -> partition -> verify.
#include "compiler/compile.h"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "compiler/backend/cleanup.h"
#include "compiler/backend/fusion.h"
#include "compiler/backend/memory_plan.h"
#include "compiler/backend/remat_auto.h"
#include "compiler/backend/schedule.h"
#include "compiler/ir/verifier.h"
#include "compiler/propagation/propagation.h"
#include "compiler/spmd/partitioner.h"

namespace podsim::compiler {
namespace {

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// What plan_program decides itself and what it takes from the module.
struct PlanChoices {
  bool fuse = true;         // false: every instruction is its own kernel (XLA fused already)
  bool keep_order = false;  // true: the module's instruction order is the schedule
};

// Fusion, schedule and memory plan of a partitioned module.
void plan_program(SpmdProgram& program, const MemoryPlanOptions& memory_options,
                  PlanChoices choices = {}) {
  const Module& module = program.module;
  const auto count = static_cast<size_t>(module.computation_count());
  const std::vector<bool> control = control_computations(module);
  program.fusion.assign(count, FusionPlan{});
  program.schedule.assign(count, {});

  Stopwatch fusion_clock;
  for (size_t c = 0; c < count; ++c) {
    const Computation& comp = module.computation(static_cast<CompId>(c));
    if (control[c] && choices.fuse) {
      program.fusion[c] = plan_fusion(comp);
    } else {
      program.fusion[c].group_of.assign(static_cast<size_t>(comp.size()), -1);
    }
    program.stats.fusion_groups += static_cast<int64_t>(program.fusion[c].groups.size());
  }
  program.stats.fusion_wall_s = fusion_clock.seconds();

  Stopwatch schedule_clock;
  for (size_t c = 0; c < count; ++c) {
    const Computation& comp = module.computation(static_cast<CompId>(c));
    if (choices.keep_order) {
      program.schedule[c].resize(static_cast<size_t>(comp.size()));
      for (InstrId id = 0; id < comp.size(); ++id)
        program.schedule[c][static_cast<size_t>(id)] = id;
    } else {
      program.schedule[c] = schedule_computation(comp, program.fusion[c]);
    }
    order_members_by_schedule(program.fusion[c], program.schedule[c]);
  }
  program.stats.schedule_wall_s = schedule_clock.seconds();

  Stopwatch memory_clock;
  program.memory =
      plan_memory(MemoryPlanInput{module, program.schedule, program.fusion, memory_options});
  program.stats.memory_wall_s = memory_clock.seconds();
}

SpmdProgram compile_once(const Module& annotated, const CompileOptions& options,
                         const std::optional<TrainingStepOptions>& training) {
  Stopwatch total;
  SpmdProgram program;
  Module module;  // the annotated module is copied only when it is compiled as it is
  if (training) {
    Stopwatch clock;
    TrainingStep step = build_training_step(annotated, *training);
    module = std::move(step.module);
    program.stats.recomputed_flops = step.recomputed_flops;
    program.stats.training_wall_s = clock.seconds();
  } else {
    module = annotated;
  }
  remove_stop_gradients(module);
  program.stats.instructions_annotated = module.entry().size();

  Stopwatch propagate_clock;
  PropagationOptions propagation;
  propagation.num_devices = options.num_devices;
  propagate_shardings(module, propagation);
  program.stats.propagate_wall_s = propagate_clock.seconds();

  Stopwatch partition_clock;
  SpmdOptions spmd = options.spmd;
  spmd.num_partitions = options.num_devices;
  SpmdResult partitioned = partition_spmd_with_stats(module, spmd);
  program.stats.partition_wall_s = partition_clock.seconds();
  program.module = std::move(partitioned.module);
  program.stats.spmd = partitioned.stats;
  program.stats.instructions_partitioned = program.module.entry().size();
  CleanupStats cleanup = remove_markers_and_dead_code(program.module);
  program.stats.sharding_markers_removed = cleanup.markers_removed;
  program.stats.dead_instructions_removed = cleanup.dead_instructions_removed;
  program.num_devices = options.num_devices;

  plan_program(program, MemoryPlanOptions{.outputs_alias_parameters = training.has_value()});
  program.stats.remat_applied =
      training ? RematChoice{training->remat, training->remat_policy}.name() : "none";
  program.loops = options.loops;
  program.collectives = options.collectives;
  program.stats.total_wall_s = total.seconds();
  return program;
}

// The collectives a per-device module has, by kind: synchronous ones and
// asynchronous starts (a start/done pair is one collective).
void count_module_collectives(const Module& module, SpmdStats& stats) {
  for (const Computation& comp : module.computations()) {
    for (const Instruction& instr : comp.instructions()) {
      std::optional<Opcode> op = async_wrapped_opcode(instr.opcode);
      if (op && !is_async_start(instr.opcode)) continue;  // a done
      if (instr.opcode == Opcode::kAsyncStart) op = instr.attrs.async_wrapped;
      if (!op) op = instr.opcode;
      stats.count_collective(*op);
    }
  }
}

}  // namespace

SpmdProgram compile_as_is(const Module& per_device, int64_t num_devices) {
  if (num_devices < 1)
    throw UserError(fmt::format("cannot run a module on {} devices", num_devices),
                    "give --mesh, e.g. --mesh x=8");
  Stopwatch total;
  SpmdProgram program;
  program.module = per_device;
  program.module.set_num_partitions(num_devices);
  program.num_devices = num_devices;
  program.loops = LoopOptimizations{false, false};  // XLA's output: pipelined as written
  remove_stop_gradients(program.module);
  program.stats.instructions_annotated = program.module.entry().size();
  program.stats.instructions_partitioned = program.module.entry().size();
  bool has_fusions = false;
  for (const Computation& comp : program.module.computations())
    for (const Instruction& instr : comp.instructions())
      has_fusions = has_fusions || instr.opcode == Opcode::kFusion;
  // The parser orders each computation operands-first, keeping source order
  // otherwise, so a scheduled module's ids are XLA's order.
  plan_program(program, MemoryPlanOptions{},
               PlanChoices{.fuse = !has_fusions, .keep_order = per_device.is_scheduled()});
  program.stats.remat_applied = "none";
  count_module_collectives(program.module, program.stats.spmd);
  program.stats.total_wall_s = total.seconds();
  return program;
}

SpmdProgram compile(const Module& annotated, const CompileOptions& options) {
  if (options.num_devices < 1)
    throw UserError(fmt::format("cannot compile for {} devices", options.num_devices),
                    "the mesh must have at least one device");
  if (options.remat_auto && options.hbm_budget_bytes < 0)
    throw UserError(
        fmt::format("negative HBM budget {} B for remat auto", options.hbm_budget_bytes));
  const bool auto_remat = options.training && options.remat_auto && options.hbm_budget_bytes > 0;
  if (!auto_remat) return compile_once(annotated, options, options.training);
  return compile_with_auto_remat(remat_choices_by_recompute(), options.hbm_budget_bytes,
                                 [&](const RematChoice& choice) {
                                   TrainingStepOptions training = *options.training;
                                   training.remat = choice.kind;
                                   training.remat_policy = choice.policy;
                                   return compile_once(annotated, options, training);
                                 });
}

PartitionResult partition_module(Module module, const PartitionRequest& request) {
  verify_module(module);
  remove_stop_gradients(module);  // as compile() does: no gradient is taken here
  PropagationOptions propagation;
  propagation.propagate_to_parameters = request.propagate_to_parameters;
  propagation.propagate_to_output = request.propagate_to_output;
  propagation.allow_to_parameters = request.allow_to_parameters;
  propagation.allow_to_output = request.allow_to_output;
  propagation.is_spmd = request.is_spmd;
  propagate_shardings(module, propagation);
  PartitionResult out;
  if (request.propagate_only) {
    out.module = std::move(module);
    return out;
  }
  SpmdResult result = partition_spmd_with_stats(module, request.spmd);
  out.module = std::move(result.module);
  if (!request.verify) return out;
  // Over the interpreter's limits at full shapes, the same module is checked
  // at reduced shapes (spmd/verify_shrink.h), and says so.
  const VerifyPlan plan = plan_verify(module, out.module, request.spmd, request.verify_limit_bytes,
                                      request.verify_full_only);
  const Module& annotated = plan.reduced ? plan.reduced->annotated : module;
  const Module& program = plan.reduced ? plan.reduced->partitioned : out.module;
  const VerifyTolerance tolerance = verify_tolerance(annotated, program);
  VerifyOptions verify_options;
  verify_options.tolerance = tolerance.tolerance;
  verify_options.scale = tolerance.scale;
  const VerifyResult v = verify_partitioning(annotated, program, verify_options);
  out.verified = true;
  out.verify_ok = v.ok;
  const std::string at = plan.reduced_text();
  if (plan.reduced && !plan.reduced->structure_difference.empty())
    out.verify_lines.push_back(
        fmt::format("verify: note: at reduced shapes the partitioned program has other opcode "
                    "counts than at full "
                    "shapes ({})",
                    plan.reduced->structure_difference));
  if (!v.ok) {
    out.verify_lines.push_back(
        fmt::format("verify: MISMATCH{} ({} devices): {}", at, v.devices, v.first_mismatch));
    return out;
  }
  const std::string scale =
      tolerance.scale == CompareScale::kLeafRms
          ? fmt::format(" of the RMS, for sums of {} at u = 2^{}", tolerance.longest_sum,
                        std::ilogb(tolerance.unit_roundoff))
          : "";
  out.verify_lines.push_back(
      fmt::format("verify: ok{} ({} devices, max abs error {:g}, relative tolerance {:g}{}; "
                  "estimated {}, {:.3g} element-ops)",
                  at, v.devices, v.max_abs_error, tolerance.tolerance, scale,
                  bytes_text(plan.estimate.peak_bytes), plan.estimate.element_ops));
  return out;
}

}  // namespace podsim::compiler
