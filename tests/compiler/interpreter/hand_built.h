// Modules built instruction by instruction, for ops the HLO reader does not
// read yet (the interpreter tests of XLA's newer ops).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/ir/module.h"

namespace podsim::compiler::testing {

// Appends instructions to one computation of `module`:
//   HandBuilt b(m, "main");
//   InstrId x = b.param(0, Shape(DType::kF32, {4}));
//   InstrId y = b.op(Opcode::kCbrt, Shape(DType::kF32, {4}), {x});
//   CompId c = b.finish(y);
class HandBuilt {
 public:
  HandBuilt(Module& module, std::string name) : module_(module), computation_(std::move(name)) {}

  InstrId param(int64_t number, Shape shape) {
    Instruction in;
    in.opcode = Opcode::kParameter;
    in.attrs.parameter_number = number;
    in.shape = std::move(shape);
    return add(std::move(in));
  }
  InstrId constant(Literal value) {
    Instruction in;
    in.opcode = Opcode::kConstant;
    in.shape = value.shape();
    in.attrs.literal = std::move(value);
    return add(std::move(in));
  }
  // An op; `set` fills its attributes / called computations.
  InstrId op(Opcode opcode, Shape shape, std::vector<InstrId> operands,
             const std::function<void(Instruction&)>& set = {}) {
    Instruction in;
    in.opcode = opcode;
    in.shape = std::move(shape);
    in.operands = std::move(operands);
    if (set) set(in);
    return add(std::move(in));
  }
  CompId finish(InstrId root) {
    computation_.set_root(root);
    return module_.add_computation(std::move(computation_));
  }
  // Finishes as the module's entry.
  CompId finish_entry(InstrId root) {
    const CompId id = finish(root);
    module_.set_entry(id);
    return id;
  }

 private:
  InstrId add(Instruction in) {
    in.name = fmt::format("i{}", computation_.size());
    return computation_.append(std::move(in));
  }
  Module& module_;
  Computation computation_;
};

// A scalar computation (a, b) -> op(a, b) (compare ops get `direction`).
inline CompId scalar_fn(Module& m, Opcode op, DType in, DType out,
                        ComparisonDirection direction = ComparisonDirection::kLt) {
  HandBuilt b(m, fmt::format("fn{}", m.computation_count()));
  const InstrId x = b.param(0, Shape::scalar(in));
  const InstrId y = b.param(1, Shape::scalar(in));
  return b.finish(b.op(op, Shape::scalar(out), {x, y},
                       [&](Instruction& i) { i.attrs.comparison = direction; }));
}

}  // namespace podsim::compiler::testing
