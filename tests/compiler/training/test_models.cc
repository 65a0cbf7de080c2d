// Small forward modules for the training tests (see test_models.h).
#include "test_models.h"

#include <fmt/format.h>

#include "compiler/ir/builder.h"
#include "compiler/training/ir_helpers.h"

namespace podsim::compiler::testing {

Module two_layer_mlp(DType t, int64_t batch) { return mlp_stack(t, batch, 2); }

Module mlp_stack(DType t, int64_t batch, int64_t layer_count) {
  const int64_t d = 8, hidden = 16;
  Module m("mlp");
  training::ReducerCache reducers(&m);
  ComputationBuilder b("main", &m);
  int64_t number = 0;
  auto param = [&](Shape s, const std::string& name, const std::string& role) {
    InstrId p = b.parameter(number++, std::move(s), fmt::format("{}", name));
    b.set_op_name(p, role + "/" + name);
    return p;
  };
  struct Layer {
    InstrId w_in, w_out, scale;
  };
  std::vector<Layer> layers;
  for (int l = 0; l < layer_count; ++l) {
    std::string prefix = fmt::format("layer_{}/", l);
    layers.push_back({param(Shape(t, {d, hidden}), prefix + "w_in", "param"),
                      param(Shape(t, {hidden, d}), prefix + "w_out", "param"),
                      param(Shape(t, {d}), prefix + "scale", "param")});
  }
  InstrId x = param(Shape(t, {batch, d}), "x", "input");
  InstrId target = param(Shape(t, {batch, d}), "target", "input");
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  for (int l = 0; l < layer_count; ++l) {
    b.set_op_name_scope(fmt::format("fwd/layer_{}/ffn", l));
    InstrId h = b.dot(x, layers[static_cast<size_t>(l)].w_in, mm);
    InstrId a = b.binary(Opcode::kMultiply, b.unary(Opcode::kTanh, h), h);
    InstrId y = b.dot(a, layers[static_cast<size_t>(l)].w_out, mm);
    InstrId r = b.binary(Opcode::kAdd, x, y);
    b.set_op_name_scope(fmt::format("fwd/layer_{}/norm", l));
    InstrId ms = b.binary(Opcode::kMultiply,
                          training::reduce_sum(b, reducers, b.binary(Opcode::kMultiply, r, r), {1}),
                          b.broadcast(b.scalar_constant(t, 1.0 / d), {batch}, {}));
    InstrId inv =
        b.unary(Opcode::kRsqrt,
                b.binary(Opcode::kAdd, ms, b.broadcast(b.scalar_constant(t, 1), {batch}, {})));
    x = b.binary(Opcode::kMultiply,
                 b.binary(Opcode::kMultiply, r, b.broadcast(inv, {batch, d}, {0})),
                 b.broadcast(layers[static_cast<size_t>(l)].scale, {batch, d}, {1}));
  }
  b.set_op_name_scope("fwd/loss");
  InstrId diff = b.binary(Opcode::kSubtract, x, target);
  InstrId sum = training::reduce_sum_all(b, reducers, b.binary(Opcode::kMultiply, diff, diff));
  InstrId loss = b.binary(Opcode::kMultiply, sum, b.scalar_constant(t, 1.0 / (batch * d)));
  m.set_entry(m.add_computation(std::move(b).build(loss)));
  return m;
}

}  // namespace podsim::compiler::testing
