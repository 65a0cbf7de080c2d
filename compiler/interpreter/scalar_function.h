// ScalarFunction: a called computation applied to scalars, as reduce,
// reduce-window, scatter, all-reduce and reduce-scatter do once per element.
// It is the interpreter's hot path, so three cheaper forms are recognised
// before falling back to a full evaluation of the computation:
//   - a single binary op of the two parameters (add, maximum, ...);
//   - a body that returns one of its parameters (scatter "assign");
//   - a body of scalar elementwise ops only (e.g. argmax's compare/select),
//     run over a flat array of doubles.
// Internal to the interpreter.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"

namespace podsim::compiler::interp {

// Evaluates a computation on one device; implemented by the Evaluator.
class ComputationRunner {
 public:
  virtual ~ComputationRunner() = default;
  virtual Literal run_single(CompId computation, std::vector<Literal> args,
                             int64_t partition_id) = 0;
};

class ScalarFunction {
 public:
  // The computation takes 2N scalars (N accumulators, then N new values)
  // and returns a scalar (N == 1) or a tuple of N scalars.
  ScalarFunction(const Module& module, CompId computation, int64_t partition_id,
                 ComputationRunner* runner);

  int num_results() const { return num_results_; }
  int num_parameters() const { return num_parameters_; }
  // args: num_parameters() values; results: num_results() values.
  void apply(const double* args, double* results) const;
  double apply(double accumulator, double value) const {
    const double args[2] = {accumulator, value};
    double result = 0.0;
    apply(args, &result);
    return result;
  }

 private:
  enum class Mode { kBinary, kReturnParameter, kScalarProgram, kGeneral };
  bool is_scalar_program() const;

  const Module* module_;
  const Computation* computation_;
  CompId computation_id_;
  int64_t partition_id_;
  ComputationRunner* runner_;
  Mode mode_ = Mode::kGeneral;
  int num_results_ = 1;
  int num_parameters_ = 0;
  std::vector<InstrId> parameter_ids_;  // ordered by parameter number
  // kBinary
  Opcode binary_op_ = Opcode::kAdd;
  DType dtype_ = DType::kF32;
  bool swapped_ = false;  // root is op(param1, param0)
  // kReturnParameter
  int returned_parameter_ = 0;
  // kScalarProgram scratch (one slot per instruction)
  mutable std::vector<double> slots_;
};

}  // namespace podsim::compiler::interp
