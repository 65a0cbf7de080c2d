// Sharding propagation (GSPMD completion, docs/reference/gspmd.md#propagation):
// from the user's few annotations, give every instruction of every reachable
// computation a sharding. Forward (operands -> result) and backward (users ->
// operand) passes iterate to a fixed point at four aggressiveness levels
// (0: pass-through ops only; 1: all ops and merging of partial shardings;
// 2: + backward through broadcast; 3: + forward through broadcast). A sharding
// is only ever replaced by a strictly better one, and user annotations are
// never overwritten, so the loop terminates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/module.h"

namespace podsim::compiler {

struct PropagationOptions {
  // Devices the shardings are validated against; 0 = module.num_partitions().
  int64_t num_devices = 0;
  // May propagation choose shardings for unannotated entry parameters and
  // the entry root? (XLA's allow_spmd_sharding_propagation_to_parameters /
  // _to_output.) podsim defaults to yes: weights are parameters.
  // The module's own allow_spmd_sharding_propagation_* flags apply as well
  // (Module::propagation_to_parameters / _to_output).
  bool propagate_to_parameters = true;
  bool propagate_to_output = true;
  // XLA's vectors themselves (--allow-spmd-sharding-propagation-to-*): one
  // per entry parameter (or per leaf of a single tuple parameter), one per
  // leaf of the entry result; a vector of any other length (one value)
  // applies "any true" to all, as XLA does. Given, XLA's boundary
  // rules apply to that side: an allowed parameter / output leaf is not
  // final even when annotated (a better sharding may replace it), a
  // disallowed one keeps its annotation (else replicated), and a propagated
  // sharding that does not divide the leaf's dims evenly becomes replicated
  // (checked where the vector maps one flag per parameter / result leaf, or
  // the result is one array). Empty: the two bools above.
  std::vector<bool> allow_to_parameters;
  std::vector<bool> allow_to_output;
  // XLA's is_spmd: false propagates for a non-SPMD program (no merging of
  // partial shardings, a reduce over a tiled dim is replicated, see
  // docs/reference/gspmd.md#non-spmd-mode).
  bool is_spmd = true;
  // Sweeps skip a rule whose inputs did not change since it last ran without
  // a change (propagation.cc: same results, faster). true re-runs every rule
  // in every sweep: only for tests that check the skip changes nothing.
  bool rerun_every_rule = false;
  // Shardy meshes, the module's xla.sdy.meshes frontend attribute
  // ("{mesh = #sdy.mesh<[\"x\"=8]>}"), for xla.sdy.sharding annotations that
  // name a mesh (compiler/sharding/shardy.h). Empty: the module's own
  // xla.sdy.meshes (Module::frontend_attributes), if any.
  std::string sdy_meshes;
};

struct PropagationStats {
  int64_t sweeps = 0;                // forward+backward sweeps over all levels
  int64_t changes = 0;               // sharding improvements applied
  int64_t annotated = 0;             // user annotations found
  int64_t defaulted_replicated = 0;  // instructions nothing reached (replicated)
};

// Completes Instruction::sharding of every instruction (XLA text form).
// Throws UserError on an invalid annotation (bad text, device ids out of
// range, rank mismatch), positioned at the instruction.
PropagationStats propagate_shardings(Module& module, const PropagationOptions& options = {});

}  // namespace podsim::compiler
