// Per-op sharding inference rules (docs/reference/gspmd.md#per-op-rules): forward
// (operands -> result) and backward (a user's sharding -> one operand).
// Pure functions of the current propagation state.
#pragma once

#include <optional>
#include <vector>

#include "compiler/propagation/propagation_state.h"

namespace podsim::compiler::propagation {

// Level dependence (propagation.cc keeps a rule's "ran without a change"
// mark across levels 1 -> 2 -> 3 and relies on this list; keep it exact):
// level 0 -> 1 changes most rules; 2 adds only backward_candidate through a
// broadcast user; 3 adds only forward_candidates of a broadcast.
//
// Candidate shardings for the result of `r`, best first, at `level` (0..3).
// The engine offers them in order (so partial shardings can merge).
std::vector<Sharding> forward_candidates(const PropagationState& state, ValueRef r, int level);

// Candidate sharding for operand `operand_index` of `user`, from the user's
// current sharding (and, for dots, the other operand's).
std::optional<Sharding> backward_candidate(const PropagationState& state, ValueRef user,
                                           int operand_index, int level);

// Ops that propagate at level 0 (pass-through, no choice involved).
bool is_pass_through(Opcode op);

}  // namespace podsim::compiler::propagation
