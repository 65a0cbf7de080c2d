// remat "auto" (compile.h): like XLA's rematerialization pass, recompute only
// as much as needed to fit the HBM budget. The pipeline compiles with the
// choices in order of increasing recomputation (training/remat.h:
// none, selective policies, full) and keeps the first whose memory plan
// fits; if none fits, the last (most recomputation) is kept and the program
// reports a peak above the budget -- not hidden.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/backend/program.h"
#include "compiler/training/remat.h"

namespace podsim::compiler {

using CompileOneChoice = std::function<SpmdProgram(const RematChoice&)>;

// Sets stats.remat_applied (the choice's name) and stats.remat_attempts.
// `choices` must not be empty.
SpmdProgram compile_with_auto_remat(const std::vector<RematChoice>& choices,
                                    int64_t hbm_budget_bytes, const CompileOneChoice& compile_one);

}  // namespace podsim::compiler
