// What running a module in the reference interpreter costs, estimated without
// running it, and which instructions it cannot run at all. `podsim partition
// --verify` checks both before it interprets anything, so a module too large
// for the interpreter is refused with a message instead of being killed for
// memory, and a module with rng / outfeed / unknown custom-calls is refused
// with one message naming every such instruction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/ir/trip_count.h"

namespace podsim::compiler {

struct InterpreterEstimate {
  // Peak bytes of the values the evaluator holds at once: every element is a
  // double (8 bytes, 16 for complex), values die after their last use, a
  // called computation's peak adds to its caller's live set, and `lanes`
  // devices each hold their own copy (lock-step evaluation).
  double peak_bytes = 0;
  // Work in element operations: elements read and written per instruction,
  // multiply-accumulates for dot and convolution (weighted), a body's
  // instructions per element for reduce-like ops, loop bodies times their
  // trip count.
  double element_ops = 0;
  // Bytes of the entry's parameters and root (per lane).
  double parameter_bytes = 0;
  double root_bytes = 0;
  // While loops whose trip count known_trip_count (trip_count.h) cannot
  // derive (counted once).
  int64_t unknown_trip_loops = 0;
};

// A convolution multiply-accumulate counts as this many element operations:
// the interpreter's convolution walks the input features with the layout's
// stride, so it runs 1.3e8 to 2.9e8 MAC/s (measured: XLA's padded f01b
// weight-gradient convolution, a 3x3 b01f one; one core) against 1.6e9 for
// dots.
inline constexpr double kConvolutionMacWeight = 5;

// Bytes the interpreter uses for one value of `shape` (8 per element, 16 for
// complex, plus a fixed per-array overhead for the Literal itself).
double interpreter_value_bytes(const Shape& shape);

InterpreterEstimate estimate_interpreter(const Module& module, int64_t lanes = 1);

// Instructions reachable from the entry that the interpreter cannot run:
// ops without a defined value (rng, rng-bit-generator, stochastic-convert,
// outfeed, send/recv, custom-calls other than the identity
// annotations and TopK), ragged-all-to-all, and ops other than elementwise,
// dot, fft, reshape/bitcast and control flow on complex values. Empty when
// the module is runnable.
std::vector<const Instruction*> uninterpretable_instructions(const Module& module);

// Throws one UserError naming every instruction the interpreter cannot run
// grouped by kind, e.g. "the interpreter cannot run 3 instructions:
// custom-call 'foo' (x2), rng (x1), transpose on complex values (x1)";
// returns when there is none.
void check_interpretable(const Module& module);

}  // namespace podsim::compiler
