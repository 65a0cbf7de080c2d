#include "compiler/training/pipelined_forward.h"

#include "common/error.h"

namespace podsim::compiler {

void check_pipelined_forward(const Module&, int64_t) {
  throw UserError({}, "training step: pipeline_stages > 1 is not supported yet", "");
}

}  // namespace podsim::compiler
