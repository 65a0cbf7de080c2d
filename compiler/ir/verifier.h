// Verifier: checks a module's structural and shape invariants (topological
// operand order, ids in range, unique names, parameters, called computations'
// signatures, and every instruction's shape against shape inference).
// Violations are UserErrors positioned at the offending instruction.
#pragma once

#include "compiler/ir/module.h"

namespace podsim::compiler {

void verify_module(const Module& module);

}  // namespace podsim::compiler
