// Vectorisation of a computation over a new leading dim (a "vmap"): every
// value that depends on a parameter gets a leading dim of `batch` entries
// and entry i of the result is the computation applied to entry i of each
// parameter. Used by pipelining to run every stage's layer at once on
// stage-stacked weights and activations (GSPMD section 3.3).
//
// Supported ops: parameter, constant, iota (left unbatched), elementwise
// unary/binary/select/clamp/convert, broadcast, reshape, transpose, slice,
// pad (unbatched pad value), concatenate, reduce (unbatched init), dot,
// tuple/get-tuple-element are not (array bodies only), "Sharding" custom
// calls (dropped: their sharding is for the unbatched shape). Anything else
// is a UserError.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/builder.h"

namespace podsim::compiler {

// Emits `body` into `b` with every parameter p replaced by batched_args[p]
// (ids in b whose shapes are [batch] + the parameter's shape); returns the
// batched root ([batch] + root shape). op_names are kept, with `scope`
// prepended to their part after "fwd/" when scope is not empty
// ("fwd/ffn" -> "fwd/<scope>/ffn").
InstrId emit_vectorized(ComputationBuilder& b, const Computation& body,
                        const std::vector<InstrId>& batched_args, int64_t batch,
                        const std::string& scope);

}  // namespace podsim::compiler
