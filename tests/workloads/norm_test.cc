// The two norms and the softmax of ModelGraph evaluated in the interpreter on
// x = [[1, 2], [3, 4]] with scale 2, against hand-computed values:
//   rms:   x / sqrt(mean(x^2) + 1e-6) * 2   row means of squares 2.5, 12.5
//   layer: (x - mean) / sqrt(var + 1e-6) * 2  row means 1.5, 3.5, variances 0.25
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/interpreter/interpreter.h"
#include "workloads/model_graph.h"

namespace podsim::workloads {
namespace {

using compiler::DType;
using compiler::Opcode;
using compiler::Shape;

compiler::Literal normalized(bool rms) {
  compiler::Module module("norm");
  ModelGraph g(module, DType::kF32, DType::kF32);
  compiler::ComputationBuilder& b = g.builder();
  const Shape s(DType::kF32, {2, 2});
  // x[i][j] = 2 i + j + 1
  InstrId x = g.binary(Opcode::kAdd,
                       g.binary(Opcode::kMultiply, b.iota(s, 0), g.full(2, {2, 2}, DType::kF32)),
                       g.binary(Opcode::kAdd, b.iota(s, 1), g.full(1, {2, 2}, DType::kF32)));
  InstrId scale = g.full(2, {2}, DType::kF32);
  g.finish(rms ? g.rms_norm(x, scale) : g.layer_norm(x, scale), "normed");
  return compiler::evaluate(module, {});
}

TEST(Norms, RmsNormDividesByTheRootMeanSquareWithoutCentering) {
  const compiler::Literal y = normalized(/*rms=*/true);
  EXPECT_NEAR(y.at({0, 0}), 2 * 1 / std::sqrt(2.5), 1e-5);
  EXPECT_NEAR(y.at({0, 1}), 2 * 2 / std::sqrt(2.5), 1e-5);
  EXPECT_NEAR(y.at({1, 0}), 2 * 3 / std::sqrt(12.5), 1e-5);
  EXPECT_NEAR(y.at({1, 1}), 2 * 4 / std::sqrt(12.5), 1e-5);
}

TEST(Norms, LayerNormCentersThenDividesByTheStandardDeviation) {
  const compiler::Literal y = normalized(/*rms=*/false);
  // (x - mean) / 0.5 * 2 = -2 and 2 in both rows.
  EXPECT_NEAR(y.at({0, 0}), -2, 1e-4);
  EXPECT_NEAR(y.at({0, 1}), 2, 1e-4);
  EXPECT_NEAR(y.at({1, 0}), -2, 1e-4);
  EXPECT_NEAR(y.at({1, 1}), 2, 1e-4);
}

// softmax([1, 2, 3]) = e^k / (e + e^2 + e^3): 0.0900306, 0.2447285, 0.6652410
// (Lingvo's exp(x - logsumexp(x)) form gives the same values).
TEST(Norms, SoftmaxIsNormalisedExponentials) {
  compiler::Module module("softmax");
  ModelGraph g(module, DType::kF32, DType::kF32);
  InstrId x = g.binary(Opcode::kAdd, g.builder().iota(Shape(DType::kF32, {3}), 0),
                       g.full(1, {3}, DType::kF32));
  g.finish(g.softmax(x), "probs");
  const compiler::Literal y = compiler::evaluate(module, {});
  EXPECT_NEAR(y.at({0}), 0.0900306, 1e-6);
  EXPECT_NEAR(y.at({1}), 0.2447285, 1e-6);
  EXPECT_NEAR(y.at({2}), 0.6652410, 1e-6);
}

}  // namespace
}  // namespace podsim::workloads
