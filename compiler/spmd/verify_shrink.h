// Reduced shapes for `podsim partition --verify`: when the reference
// interpreter cannot afford a module at its real shapes (XLA's tests use
// f32[8192,8192] operands), the same module with its large dims divided by a
// factor k is verified instead. Every dim shrinks by one rule (ShrinkRule, so
// equal dims stay equal); what the module relates is re-derived: slice and
// pad offsets, dynamic-slice and gather sizes, full-size windows,
// convolution windows, dilations and group counts, reshape result shapes
// (split/merge groups), and every other result shape by shape inference. A
// candidate is kept only if the shrunk module passes the verifier and every
// sharded dim keeps its divisibility by its tile count
// (docs/hlo-input.md#verify-at-reduced-shapes).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "compiler/ir/module.h"

namespace podsim::compiler {

// How dims shrink. A dim of size d becomes
//   d / factor, when factor divides d and the quotient is >= min_dim;
//   else, with residue_modulus L > 0, the largest d' <= d / factor with
//   d' = d (mod L), when that is >= min_dim (approximate: L is the lcm of the
//   module's tile counts, so every tile count divides d' exactly when it
//   divides d, and an uneven dim keeps its remainder, hence its padding);
//   else d.
// Sizes in `pinned` keep their size (a sharded dim whose quotient would lose
// its divisibility by the tile count, say). One rule for every dim of the
// module, so equal dims stay equal.
struct ShrinkRule {
  int64_t factor = 1;
  int64_t min_dim = 1;
  int64_t residue_modulus = 0;  // 0: exact division only
  std::set<int64_t> pinned;
  int64_t dim(int64_t d) const;
};

struct ShrinkOutcome {
  std::optional<Module> module;  // set when the shrunk module is valid
  std::string why_not;           // otherwise: what refused it
};

// The module with its dims divided by `factor` (see the file comment).
// Refuses (why_not) when a non-splat constant would have to shrink, when a
// reshape cannot be re-derived, or when the result fails the verifier.
ShrinkOutcome shrink_module(const Module& module, const ShrinkRule& rule);

// Whether every instruction's sharded dims keep, in `shrunk`, their
// divisibility by the dim's tile count and at least one element per tile
// where they had it (so padding behaviour is the same). When not, `problem`
// names the first instruction and dim that does not, `size` its full size.
struct ShardingCheck {
  std::string problem;  // empty: all keep
  int64_t size = 0;
};
ShardingCheck check_shrunk_shardings(const Module& original, const Module& shrunk);

// shrink_module, pinning each sharded dim size that check_shrunk_shardings
// reports and trying again, until the shardings keep or the module is refused.
ShrinkOutcome shrink_keeping_shardings(const Module& module, ShrinkRule rule);

// The least common multiple of the module's data tile counts (1 when none).
int64_t tile_count_lcm(const Module& module);

}  // namespace podsim::compiler
