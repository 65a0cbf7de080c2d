// remat "auto" selection (remat_auto.h).
#include "compiler/backend/remat_auto.h"

#include <cassert>

namespace podsim::compiler {

SpmdProgram compile_with_auto_remat(const std::vector<RematChoice>& choices,
                                    int64_t hbm_budget_bytes, const CompileOneChoice& compile_one) {
  assert(!choices.empty());
  SpmdProgram program;
  int64_t attempts = 0;
  double wall_s = 0;
  for (const RematChoice& choice : choices) {
    program = compile_one(choice);
    ++attempts;
    wall_s += program.stats.total_wall_s;
    program.stats.remat_applied = choice.name();
    if (program.memory.peak_bytes <= hbm_budget_bytes) break;
  }
  program.stats.remat_attempts = attempts;
  program.stats.total_wall_s = wall_s;  // every attempt is compile time
  return program;
}

}  // namespace podsim::compiler
