// SpmdProgram: what the compiler hands to the simulator (docs/design.md data
// flow): one per-device program plus its schedule, fusion plan, memory plan
// and compile statistics. A plain value type; sim/ and reports/ only read it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/spmd/partitioner.h"

namespace podsim::compiler {

// What a live value is, for the memory breakdown (docs/design.md, "Hardware and simulation":
// memory). Derived from op_name prefixes (compiler/training/training_step.h): "param/" weights,
// "opt_state/" slots, "input/" inputs, "bwd/" results that feed the optimizer are gradients, "fwd/"
// values live into the backward pass are activations kept for backward; collective results are
// collective buffers while their collective runs; everything else is a temporary.
enum class ValueRole {
  kParameter,
  kOptimizerState,
  kInput,
  kGradient,
  kActivation,
  kTemporary,
  kCollectiveBuffer
};
const char* value_role_name(ValueRole role);

// Ops fused into one kernel: read their external inputs from HBM once, write
// the root once, intermediates stay in vector memory (XLA loop/output
// fusion). Per computation.
// A broadcast/iota/constant may be duplicated into several groups (it is
// recomputed in each kernel; compiler/backend/fusion.h): it is then listed in
// each of those groups' members and group_of names one of them.
struct FusionGroup {
  std::vector<InstrId> members;  // in schedule order; the last is the root
};
struct FusionPlan {
  std::vector<int32_t> group_of;  // per instruction: index into groups, -1 = unfused
  std::vector<FusionGroup> groups;
};

struct MemoryBreakdown {
  std::map<ValueRole, int64_t> bytes;  // per role, at the peak
  int64_t total() const;
};

struct MemoryPlan {
  int64_t peak_bytes = 0;  // per device
  MemoryBreakdown at_peak;
  InstrId peak_at = kNoId;  // entry instruction at which the peak occurs
  // The option it was planned with (memory_plan.h), to replan it for a report.
  bool outputs_alias_parameters = false;
};

struct CompileStats {
  SpmdStats spmd;
  int64_t instructions_annotated = 0;    // entry instructions before partitioning
  int64_t instructions_partitioned = 0;  // entry, as the partitioner emitted it
  // Removed from the partitioned program before fusion (pipeline/cleanup.h).
  int64_t sharding_markers_removed = 0;
  int64_t dead_instructions_removed = 0;
  std::string remat_applied;    // "none", "full", "save_dots", ...
  double recomputed_flops = 0;  // global, 2 per MAC
  double propagate_wall_s = 0;
  double partition_wall_s = 0;
  double total_wall_s = 0;
  // Further phases (pipeline helper's extension): training-step build,
  // fusion, scheduling, memory planning; remat_attempts = compiles run by
  // remat "auto" (1 when it was not used).
  double training_wall_s = 0;
  double fusion_wall_s = 0;
  double schedule_wall_s = 0;
  double memory_wall_s = 0;
  int64_t remat_attempts = 1;
  int64_t fusion_groups = 0;  // over all computations
};

// XLA's loop optimisations for counted while loops, applied by the simulator when it runs the
// loop: the collective pipeliner's all-gather one iteration early and reduce-scatter consumers
// one iteration late. Off for compile_as_is (already pipelined).
// docs/loops.md#xlas-loop-optimisations-simstep_programcc
struct LoopOptimizations {
  bool pipelined_all_gather = true;
  bool pipelined_reduce_scatter = true;
};

// How the collectives run (XLA's TPU flags --xla_enable_async_all_gather, ..._all_reduce, ...,
// --xla_tpu_enable_async_collective_fusion):
// a kind in `async` runs on a collective stream beside compute; any other kind is synchronous,
// the compute stream waits for it to end. docs/simulator.md#synchronous-collectives
struct CollectiveExecution {
  // Collective opcodes (kAllGather, kReduceScatter, kAllReduce, kAllToAll, kCollectivePermute;
  // async start/done pairs count as their synchronous kind).
  std::set<Opcode> async = {Opcode::kAllGather, Opcode::kReduceScatter, Opcode::kAllReduce,
                            Opcode::kAllToAll, Opcode::kCollectivePermute};
  bool is_async(Opcode kind) const { return async.count(kind) > 0; }
  // XLA TPU's async collective fusion (--xla_tpu_enable_async_collective_fusion): a
  // reduce-scatter's or all-reduce's reductions run inside the collective, beside compute. Off:
  // they run as TensorCore kernels on the compute stream. docs/simulator.md#collective-fusion
  bool fusion = true;
};

struct SpmdProgram {
  Module module;            // the per-device program; its entry is one step
  int64_t num_devices = 1;  // module.num_partitions()
  // Execution order per computation (indexed by CompId; a topological order
  // chosen by the scheduler: collectives start as early as their operands
  // allow, their users as late as possible, to hide communication).
  std::vector<std::vector<InstrId>> schedule;
  std::vector<FusionPlan> fusion;  // per computation, indexed by CompId
  MemoryPlan memory;
  CompileStats stats;
  // compile() sets them from CompileOptions (default on); a program built
  // otherwise runs its loops as written.
  LoopOptimizations loops = {false, false};
  // compile() sets it from CompileOptions; default: every collective asynchronous.
  CollectiveExecution collectives = {};
};

}  // namespace podsim::compiler
