// Finite-difference gradient checking (see gradient_check.h).
#include "gradient_check.h"

#include <fmt/format.h>

namespace podsim::compiler::testing {

std::vector<Literal> default_args(const Module& forward) {
  std::vector<Literal> args;
  for (InstrId p : forward.entry().parameters()) {
    const Instruction& in = forward.entry().instr(p);
    args.push_back(
        random_literal(in.shape, 1000 + static_cast<uint64_t>(in.attrs.parameter_number)));
  }
  return args;
}

Literal check_gradients(const Module& forward, const std::vector<Literal>& args, double tolerance,
                        RematChoice remat) {
  Module grad_module = build_gradient_module(forward, remat);
  Literal result = evaluate(grad_module, args);
  Literal loss = evaluate(forward, args);
  EXPECT_NEAR(result.element(0).scalar_value(), loss.scalar_value(), 1e-12);
  const double h = 1e-5;
  int output = 1;
  for (size_t p = 0; p < args.size(); ++p) {
    const Shape& shape = args[p].shape();
    if (!shape.is_array() || !is_floating(shape.dtype())) continue;
    const Literal& analytic = result.element(output++);
    Literal numeric(shape);
    for (size_t k = 0; k < args[p].values().size(); ++k) {
      std::vector<Literal> plus = args, minus = args;
      plus[p].mutable_values()[k] += h;
      minus[p].mutable_values()[k] -= h;
      numeric.mutable_values()[k] =
          (evaluate(forward, plus).scalar_value() - evaluate(forward, minus).scalar_value()) /
          (2 * h);
    }
    Comparison c = compare_literals(numeric, analytic, tolerance);
    EXPECT_TRUE(c.ok) << "parameter " << p << ": " << c.first_mismatch;
  }
  return result;
}

}  // namespace podsim::compiler::testing
