// Rematerialization: which forward values the backward pass reads as saved and which it
// recomputes ("recompute/<scope>" clones next to their backward use). Layers are "fwd/layer_<k>/";
// their outputs (checkpoints) are always saved; none saves all, full recomputes the rest of a
// layer, save_dots saves dot/convolution outputs too, minimal only those of dots without batch
// dimensions (JAX's checkpoint_dots_with_no_batch_dims). Outside layers nothing is recomputed.
// docs/compiler.md#rematerialization
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/training/training_step.h"

namespace podsim::compiler {

// The policies the compile pipeline's remat "auto" tries, least recompute
// first: none, save_dots, full.
struct RematChoice {
  RematKind kind = RematKind::kNone;
  std::string policy;        // kSelective only
  std::string name() const;  // "none", "save_dots", "full"
};
std::vector<RematChoice> remat_choices_by_recompute();
// Selective policy names build_training_step accepts.
std::vector<std::string> selective_remat_policies();

// FLOPs of one instruction as the report counts them: dot and convolution
// 2 per multiply-accumulate, every other op 0 (HFU counts matmul FLOPs).
double matmul_flops(const Instruction& instr, const Computation& computation);

class ResidualProvider {
 public:
  // forward_map[i]: the id in `builder` of source instruction i. UserError
  // for an unknown selective policy name.
  ResidualProvider(const Computation& source, const std::vector<InstrId>& forward_map,
                   RematChoice choice, ComputationBuilder& builder);

  // The value of source instruction `id` for use in the backward pass.
  InstrId get(InstrId id);

  double recomputed_flops() const { return recomputed_flops_; }
  int64_t recomputed_instructions() const { return recomputed_instructions_; }

 private:
  bool recompute(InstrId id) const;

  const Computation& source_;
  const std::vector<InstrId>& forward_map_;
  ComputationBuilder& builder_;
  std::vector<int32_t> layer_of_;    // -1 = not in a layer
  std::vector<bool> recompute_;      // decided once per instruction
  std::vector<InstrId> recomputed_;  // memo: clone id or kNoId
  double recomputed_flops_ = 0;
  int64_t recomputed_instructions_ = 0;
};

}  // namespace podsim::compiler
