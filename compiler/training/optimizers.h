// Optimizer updates as IR (SGD, Adam, AdamW, Adafactor) for one weight, plus the
// optimizer slots each needs. Formulas are in optimizers.cc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/training/ir_helpers.h"
#include "compiler/training/training_step.h"

namespace podsim::compiler {

enum class SlotLayout {
  kLikeWeight,   // same shape as the weight
  kRowStats,     // the weight's dims without the last (Adafactor row statistics)
  kColumnStats,  // the weight's dims without the second to last (column statistics)
};

struct OptimizerSlot {
  std::string name;  // "m", "v", "v_row", "v_col"
  SlotLayout layout = SlotLayout::kLikeWeight;
  Shape shape;
};

// The registry of the optimizers implemented here, by the name a workload
// gives (training.optimizer), with the options each starts from.
struct OptimizerEntry {
  OptimizerKind kind;
  std::string_view name;
  OptimizerOptions defaults;
};
const std::vector<OptimizerEntry>& optimizers();
// The registry entry's defaults of `kind`.
OptimizerOptions optimizer_defaults(OptimizerKind kind);

// The per-weight slots of the optimizer for a weight of `weight_shape`.
std::vector<OptimizerSlot> optimizer_slots(const OptimizerOptions& options,
                                           const Shape& weight_shape);
// Adam and AdamW keep a global step count (a scalar f32 "opt_state/global/step") for
// its bias correction; the other optimizers keep none.
bool optimizer_needs_step(const OptimizerOptions& options);

struct OptimizerInputs {
  InstrId weight = kNoId;
  InstrId gradient = kNoId;    // same shape and dtype as the weight
  std::vector<InstrId> slots;  // in optimizer_slots order
  InstrId step = kNoId;        // the step count before this update (Adam, AdamW only)
};

struct OptimizerUpdate {
  InstrId new_weight = kNoId;
  std::vector<InstrId> new_slots;
};

// Emits the update of one weight into `b` (the caller sets the op_name scope).
OptimizerUpdate emit_optimizer_update(ComputationBuilder& b, training::ReducerCache& reducers,
                                      const OptimizerOptions& options,
                                      const OptimizerInputs& inputs);

}  // namespace podsim::compiler
