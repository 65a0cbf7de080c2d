// Helpers for the interpreter tests: modules come from HLO text (parsed and
// verified, so a typo in a test fails loudly), literals from dims + values.
#pragma once

#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/verifier.h"

namespace podsim::compiler::testing {

inline Module parse_verified(std::string_view hlo) {
  Module m = parse_hlo(hlo, "test");
  verify_module(m);
  return m;
}

inline Literal lit(DType dtype, std::vector<int64_t> dims, std::vector<double> values) {
  return Literal(Shape(dtype, std::move(dims)), std::move(values));
}
inline Literal f32(std::vector<int64_t> dims, std::vector<double> values) {
  return lit(DType::kF32, std::move(dims), std::move(values));
}
inline Literal s32(std::vector<int64_t> dims, std::vector<double> values) {
  return lit(DType::kS32, std::move(dims), std::move(values));
}

// Evaluates on one device.
inline Literal run(std::string_view hlo, const std::vector<Literal>& args = {}) {
  return evaluate(parse_verified(hlo), args);
}

// Values 0, 1, 2, ... of a shape (handy inputs whose positions are visible).
inline Literal iota_literal(DType dtype, std::vector<int64_t> dims) {
  Literal l{Shape(dtype, dims)};
  for (size_t i = 0; i < l.values().size(); ++i) l.mutable_values()[i] = static_cast<double>(i);
  return l;
}

}  // namespace podsim::compiler::testing
