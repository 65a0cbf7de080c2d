// ScalarFunction: fast application of scalar combiner bodies (see header).
#include "compiler/interpreter/scalar_function.h"

#include <cassert>

#include "compiler/interpreter/local_ops.h"
#include "compiler/interpreter/scalar_ops.h"

namespace podsim::compiler::interp {

namespace {

bool is_scalar_array(const Shape& s) { return s.is_array() && s.rank() == 0; }

bool supported_in_scalar_program(const Instruction& in, bool is_root) {
  if (in.opcode == Opcode::kTuple) {
    return is_root;  // operands are checked by their own instructions
  }
  if (!is_scalar_array(in.shape) || is_complex(in.shape.dtype())) return false;
  switch (in.opcode) {
    case Opcode::kIsFinite:
    case Opcode::kReducePrecision:
    case Opcode::kReal:
    case Opcode::kImag:
    case Opcode::kComplex:
      return false;  // not one-dtype element functions
    case Opcode::kConstant:
      return in.attrs.literal && !in.attrs.literal->is_tuple() &&
             in.attrs.literal->values().size() == 1;
    case Opcode::kBitcastConvert:
      return true;  // scalar to scalar: the same width (checked by the verifier)
    case Opcode::kParameter:
    case Opcode::kCompare:
    case Opcode::kSelect:
    case Opcode::kClamp:
      return true;
    default:
      return is_elementwise_unary(in.opcode) || is_elementwise_binary(in.opcode);
  }
}

}  // namespace

ScalarFunction::ScalarFunction(const Module& module, CompId computation, int64_t partition_id,
                               ComputationRunner* runner)
    : module_(&module),
      computation_(&module.computation(computation)),
      computation_id_(computation),
      partition_id_(partition_id),
      runner_(runner) {
  const Computation& c = *computation_;
  parameter_ids_ = c.parameters();
  num_parameters_ = static_cast<int>(parameter_ids_.size());
  const Instruction& root = c.root_instr();
  num_results_ = root.shape.is_tuple() ? static_cast<int>(root.shape.tuple_shapes().size()) : 1;

  if (is_scalar_program()) {
    mode_ = Mode::kScalarProgram;
    slots_.assign(static_cast<size_t>(c.size()), 0.0);
    if (num_parameters_ == 2 && num_results_ == 1) {
      if (root.opcode == Opcode::kParameter) {
        mode_ = Mode::kReturnParameter;
        returned_parameter_ = static_cast<int>(root.attrs.parameter_number);
      } else if (is_elementwise_binary(root.opcode) && root.opcode != Opcode::kCompare) {
        const Instruction& lhs = c.instr(root.operand(0));
        const Instruction& rhs = c.instr(root.operand(1));
        if (lhs.opcode == Opcode::kParameter && rhs.opcode == Opcode::kParameter &&
            lhs.attrs.parameter_number != rhs.attrs.parameter_number) {
          mode_ = Mode::kBinary;
          binary_op_ = root.opcode;
          dtype_ = root.shape.dtype();
          swapped_ = lhs.attrs.parameter_number == 1;
        }
      }
    }
  }
}

bool ScalarFunction::is_scalar_program() const {
  const Computation& c = *computation_;
  for (InstrId i = 0; i < c.size(); ++i)
    if (!supported_in_scalar_program(c.instr(i), i == c.root())) return false;
  const Instruction& root = c.root_instr();
  if (root.opcode == Opcode::kTuple) {
    for (InstrId op : root.operands)
      if (!is_scalar_array(c.instr(op).shape)) return false;
  }
  return true;
}

void ScalarFunction::apply(const double* args, double* results) const {
  switch (mode_) {
    case Mode::kBinary:
      results[0] = swapped_ ? binary_value(binary_op_, dtype_, args[1], args[0])
                            : binary_value(binary_op_, dtype_, args[0], args[1]);
      return;
    case Mode::kReturnParameter:
      results[0] = args[returned_parameter_];
      return;
    case Mode::kScalarProgram: {
      const Computation& c = *computation_;
      auto slot = [&](InstrId id) { return slots_[static_cast<size_t>(id)]; };
      for (InstrId i = 0; i < c.size(); ++i) {
        const Instruction& in = c.instr(i);
        const DType dt = in.shape.dtype();
        double v = 0.0;
        switch (in.opcode) {
          case Opcode::kParameter:
            v = args[in.attrs.parameter_number];
            break;
          case Opcode::kConstant:
            v = in.attrs.literal->values().at(0);
            break;
          case Opcode::kTuple:
            continue;
          case Opcode::kConvert:
            v = convert_value(c.instr(in.operand(0)).shape.dtype(), dt, slot(in.operand(0)));
            break;
          case Opcode::kBitcastConvert:
            v = bitcast_convert_scalar(in, c.instr(in.operand(0)).shape.dtype(), dt,
                                       slot(in.operand(0)));
            break;
          case Opcode::kCompare:
            v = compare_value(in.attrs.comparison, slot(in.operand(0)), slot(in.operand(1))) ? 1.0
                                                                                             : 0.0;
            break;
          case Opcode::kSelect:
            v = slot(in.operand(0)) != 0.0 ? slot(in.operand(1)) : slot(in.operand(2));
            break;
          case Opcode::kClamp:
            v = binary_value(
                Opcode::kMinimum, dt,
                binary_value(Opcode::kMaximum, dt, slot(in.operand(1)), slot(in.operand(0))),
                slot(in.operand(2)));
            break;
          default:
            if (is_elementwise_unary(in.opcode)) {
              v = unary_value(in.opcode, dt, slot(in.operand(0)));
            } else {
              v = binary_value(in.opcode, dt, slot(in.operand(0)), slot(in.operand(1)));
            }
            break;
        }
        slots_[static_cast<size_t>(i)] = v;
      }
      const Instruction& root = c.root_instr();
      if (root.opcode == Opcode::kTuple) {
        for (int r = 0; r < root.operand_count(); ++r) results[r] = slot(root.operand(r));
      } else {
        results[0] = slot(c.root());
      }
      return;
    }
    case Mode::kGeneral: {
      const Computation& c = *computation_;
      std::vector<Literal> literals;
      for (InstrId p : parameter_ids_) {
        const Instruction& param = c.instr(p);
        const Shape& s = param.shape;
        literals.push_back(Literal(s, {args[param.attrs.parameter_number]}));
      }
      Literal out = runner_->run_single(computation_id_, std::move(literals), partition_id_);
      if (out.is_tuple()) {
        for (int r = 0; r < num_results_; ++r) results[r] = out.element(r).values().at(0);
      } else {
        results[0] = out.values().at(0);
      }
      return;
    }
  }
}

}  // namespace podsim::compiler::interp
