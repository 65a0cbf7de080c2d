// GSPMD-style pipelining (placeholder; see pipelined_forward.cc).
#pragma once

#include <cstdint>

#include "compiler/ir/module.h"

namespace podsim::compiler {

// UserError unless `forward` was built by build_pipelined_forward with
// `stages` stages.
void check_pipelined_forward(const Module& forward, int64_t stages);

}  // namespace podsim::compiler
