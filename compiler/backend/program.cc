// Small out-of-line pieces of the SpmdProgram value types (program.h).
#include "compiler/backend/program.h"

namespace podsim::compiler {

const char* value_role_name(ValueRole role) {
  switch (role) {
    case ValueRole::kParameter:
      return "parameters";
    case ValueRole::kOptimizerState:
      return "optimizer_state";
    case ValueRole::kInput:
      return "inputs";
    case ValueRole::kGradient:
      return "gradients";
    case ValueRole::kActivation:
      return "activations";
    case ValueRole::kTemporary:
      return "temporaries";
    case ValueRole::kCollectiveBuffer:
      return "collective_buffers";
  }
  return "unknown";
}

int64_t MemoryBreakdown::total() const {
  int64_t sum = 0;
  for (const auto& [role, bytes] : bytes) sum += bytes;
  return sum;
}

}  // namespace podsim::compiler
