// Fusion planning (XLA instruction fusion, re-derived): which instructions
// of a computation run as one kernel. Two kinds of groups:
//  - output fusion: a dot/convolution with the chain of single-user
//    elementwise consumers after it (bias add, activation) as the root; the
//    chain may end in a dynamic-update-slice that writes it (as the update)
//    in place into a buffer, as a windowed einsum's loop writes each output
//    shard (XLA's in-place dynamic-update-slice fusion);
//  - loop/input fusion: a consumer (elementwise, layout op, reduce,
//    dot/convolution) absorbs its loop-fusible producers (elementwise,
//    convert, broadcast, reshape, transpose, slice, pad, concatenate,
//    reverse, dynamic-slice, iota, constant) whose every user is already in
//    the group.
// Multi-output fusion (XLA's producer-consumer multi-output fusion): a
// reduce's kernel takes in a loop kernel whose result it reduces (the
// loop's root of the reduce's input shape, e.g. exp(x - max) under
// sum(exp(x - max))) and writes both results, when every other reader of
// that result comes after the reduce (so the merged kernel has no path
// back into itself and stays at its root's place), neither waits for a
// collective, and the loop kernel frees no more than it writes (the inputs
// it reads last, at most its result's bytes: moved to the reduce's place,
// it must not keep a bigger value alive). The loop's root is then a
// non-root member read outside the group: an extra output, written by the
// kernel (sim/op_cost.h) with a buffer of its own (memory_plan.h).
// Never fused: parameters, collectives, while/call, tuples, custom-calls.
// An instruction that reads a collective result is never fused into a
// consumer and absorbs only broadcast/iota/constant producers and slices /
// dynamic-slices (which then absorb only what it may): fusing independent
// work into its kernel would make that work wait for the collective instead
// of overlapping it, while a slice is only the kernel's operand read at
// other addresses (a windowed einsum's dot reads its shard of the gathered
// operand through a fused dynamic-slice).
// A value with users outside the group is never fused into it, except a
// cheap op (XLA's instruction fusion: not "expensive", i.e. no
// transcendental, divide, power or remainder) whose every user can fuse
// it and that reads no more than it writes (its inputs, through other
// duplicated ops, at most its own bytes: an expansion such as a broadcast,
// broadcast(reduce), a one-hot mask, a dynamic-slice of a broadcast
// constant, and a same-size op such as a convert, a transpose or g * g): it
// is duplicated into every group that uses it (listed in each group's
// members; group_of names the group of the first user) and takes no HBM
// buffer of its own (the schedule folds it into those groups' units,
// schedule.h). A chain of such ops is recomputed whole (the concatenate
// of token ids under a one-hot). A broadcast/iota/constant is
// never a kernel of its own; other duplicable ops with a user that ends in
// no group become one. Other scalar ops are never duplicated (nothing to
// save).
#pragma once

#include "compiler/ir/module.h"
#include "compiler/backend/program.h"

namespace podsim::compiler {

// A cheap op whose inputs are at most 1/kExpansionRatio of its bytes is an
// expansion the memory plan recomputes in its readers instead of writing it
// (memory_plan.h); fusion duplicates any cheap op reading at most its own
// bytes (above).
inline constexpr int64_t kExpansionRatio = 8;

// May this op be fused into a consumer (as a non-root member)?
bool is_loop_fusible(Opcode op);
// Broadcast, iota and constant: recomputed inside each consumer kernel,
// never a kernel of their own.
bool is_free_to_recompute(Opcode op);
// Loop-fusible and not expensive: may be recomputed in several groups (the
// schedule and memory plan treat such a member listed in several groups as
// recomputed in each).
bool is_cheap_to_duplicate(Opcode op);

// Groups in members-by-id order (a topological order; the last is the root).
FusionPlan plan_fusion(const Computation& computation);

// Per instruction: may plan_fusion recompute it inside its readers' kernels
// (the duplication rule above)? A group member read outside its group that
// is not one of these is a multi-output fusion's extra output.
std::vector<bool> duplicable_ops(const Computation& computation);

// Instructions that appear in more than one group (duplicated cheap ops).
std::vector<bool> duplicated_members(const FusionPlan& plan, int instruction_count);

}  // namespace podsim::compiler
