// Rematerialization: which forward values the backward pass reads as saved
// (the original instruction) and which it recomputes ("recompute/<scope>"
// clones emitted next to their backward use).
//
// Layers are recognised by op_name: "fwd/layer_<k>/..." belongs to layer
// "layer_<k>" (training_step.h contract). A layer's checkpoints are its
// values used outside the layer (its outputs); they are always saved.
//   none        every forward value is saved.
//   full        inside a layer only the checkpoints are saved; every other
//               value the backward needs is recomputed from them.
//   save_dots   (selective) as full, but dot/convolution outputs are saved
//               too: only the cheap elementwise/data-movement ops between
//               matmuls are recomputed.
// Values outside any layer (embedding, loss, parameters) are never recomputed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/training/training_step.h"

namespace podsim::compiler {

// The policies the compile pipeline's remat "auto" tries, least recompute
// first: none, the selective policies, full.
struct RematChoice {
  RematKind kind = RematKind::kNone;
  std::string policy;  // kSelective only
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
  std::vector<int32_t> layer_of_;     // -1 = not in a layer
  std::vector<bool> recompute_;       // decided once per instruction
  std::vector<InstrId> recomputed_;   // memo: clone id or kNoId
  double recomputed_flops_ = 0;
  int64_t recomputed_instructions_ = 0;
};

}  // namespace podsim::compiler
