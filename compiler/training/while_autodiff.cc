// Autodiff of while loops. Not implemented yet: every active while is a
// UserError.
#include "compiler/training/while_autodiff.h"

#include <fmt/format.h>

#include "common/error.h"

namespace podsim::compiler {

WhileAdjoint emit_while_adjoint(const WhileAdjointContext& context, const std::vector<InstrId>&) {
  const Instruction& in = context.source.instr(context.while_id);
  throw UserError(in.location, fmt::format("autodiff: while loop '{}' is not supported yet", in.name),
                  "unroll the repeated layers");
}

}  // namespace podsim::compiler
