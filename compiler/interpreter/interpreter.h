// Reference interpreter: the correctness oracle of the SPMD partitioner. evaluate() runs a
// module's entry computation on one device (partition id 0); evaluate_spmd() runs it on N devices
// in lock-step so collectives exchange among them; verify compares with compare_literals().
// Semantics follow XLA's HLO operation semantics, in double (integers in 64 bits) rounded to the
// result dtype; dot/convolution round once, reductions at every step in row-major/group order.
// Choices where XLA leaves the result implementation-defined:
// docs/compiler.md#interpreter-semantics
// Errors a user can cause (argument count/shape, unsupported custom-call, diverging while
// conditions) are UserErrors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"

namespace podsim::compiler {

// Runs the entry computation on one device (partition id 0, replica id 0).
Literal evaluate(const Module& module, const std::vector<Literal>& args);

// Runs the entry computation on N = args_per_device.size() devices in
// lock-step; device d has partition id d. Returns the root value per device.
std::vector<Literal> evaluate_spmd(const Module& module,
                                   const std::vector<std::vector<Literal>>& args_per_device);

// A seeded pseudo-random value of `shape` (tuples leaf by leaf). Floats are
// multiples of 1/64 in [-1, 1] (exact in bf16 and above, so sums and products
// of few terms are exact in f32 whatever the order; f8 rounds them to its
// nearest value), complex numbers have such real and imaginary parts, signed
// integers are in [-8, 8] (s4, s2: their whole range), unsigned in [0, 15]
// (u2: [0, 3]), preds 0/1, tokens 0. Same seed, same value everywhere.
Literal random_literal(const Shape& shape, uint64_t seed);

struct Comparison {
  bool ok = true;
  double max_abs_error = 0.0;
  std::string first_mismatch;  // empty when ok
};

// What a floating element's error is relative to: its own magnitude, or
// the larger of that and its leaf's RMS value (for sums rounded at every
// step, whose error follows the partial sums' size even where the result
// cancels to near zero).
enum class CompareScale : uint8_t { kElement, kLeafRms };

// Compares leaf by leaf. Floating (and complex) elements match when
// |expected - actual| <= tolerance * (1 + |expected|) (kLeafRms: 1 +
// max(|expected|, RMS of the expected leaf)); NaN matches NaN, an infinity
// only the same infinity; integer and pred elements must be equal. Shape
// differences are mismatches too.
Comparison compare_literals(const Literal& expected, const Literal& actual, double tolerance,
                            CompareScale scale = CompareScale::kElement);

}  // namespace podsim::compiler
