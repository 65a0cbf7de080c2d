// Test helpers: small forward modules built op by op, and a central finite
// difference check of build_gradient_module's gradients.
//
// Tolerance derivation (f64 everywhere): the central difference
// (f(x+h) - f(x-h)) / 2h has truncation error h^2/6 |f'''| and rounding
// error ~ eps |f| / h. With h = 1e-5, |f'''| and |f| of order 10 for the
// small tensors used here (values in [-1, 1]), both are below 1e-8; a
// tolerance of 1e-6 relative (compare_literals: |e - a| <= tol (1 + |e|))
// is two orders above that and orders below a wrong gradient (>= 1/64).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/builder.h"
#include "compiler/training/autodiff.h"
#include "compiler/training/ir_helpers.h"

namespace podsim::compiler::testing {

// Builds `name(params...) = sum(value * probe)` with probe a fixed
// pseudo-random constant, so every element of `value` gets its own weight.
struct ForwardBuilder {
  Module module{"forward"};
  training::ReducerCache reducers{&module};
  ComputationBuilder b{"main", &module};
  int64_t next_param = 0;

  InstrId param(Shape shape, const std::string& name) {
    InstrId p = b.parameter(next_param++, std::move(shape), name);
    b.set_op_name(p, "param/" + name);
    return p;
  }
  InstrId input(Shape shape, const std::string& name) {
    InstrId p = b.parameter(next_param++, std::move(shape), name);
    b.set_op_name(p, "input/" + name);
    return p;
  }
  // Finishes with loss = sum(value * probe) converted to the value dtype.
  Module finish(InstrId value, uint64_t probe_seed = 99) {
    InstrId probe = b.constant(random_literal(b.shape(value), probe_seed));
    InstrId loss = training::reduce_sum_all(b, reducers, b.binary(Opcode::kMultiply, value, probe));
    module.set_entry(module.add_computation(std::move(b).build(loss)));
    return module;
  }
};

// Default arguments: random_literal per parameter (seed 1000 + number).
std::vector<Literal> default_args(const Module& forward);

// Evaluates build_gradient_module(forward) and checks every gradient element
// of every floating parameter against central differences of evaluate().
// Also returns the gradient module's result for further checks.
Literal check_gradients(const Module& forward, const std::vector<Literal>& args,
                        double tolerance = 1e-6, RematChoice remat = {});

}  // namespace podsim::compiler::testing
