// Evaluator: lock-step evaluation of a computation on a set of lanes (one
// lane per simulated device). values[lane][instr] hold the results; every
// instruction is evaluated on all lanes before the next, so collectives read
// the other lanes' operands directly. While loops evaluate their condition on
// all lanes and require agreement; calls and loop bodies run in lock-step too,
// so they may contain collectives. An infeed gives the k-th seeded value of
// its shape on every device, or, in a partitioned program whose infeed is
// per shard, the device's tile of the seeded global value.
// Scalar combiners (reduce bodies, ...) run
// per lane through cached ScalarFunctions. Internal to the interpreter.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "compiler/interpreter/local_ops.h"
#include "compiler/interpreter/scalar_function.h"
#include "compiler/ir/module.h"

namespace podsim::compiler::interp {

class Evaluator : public ComputationRunner {
 public:
  Evaluator(const Module& module, int64_t num_devices)
      : module_(module), num_devices_(num_devices) {}

  // args[lane][parameter number]; lane l runs as partition partition_ids[l].
  // Returns the root value per lane.
  std::vector<Literal> run(CompId computation, std::vector<std::vector<Literal>> args,
                           const std::vector<int64_t>& partition_ids);
  Literal run_single(CompId computation, std::vector<Literal> args, int64_t partition_id) override;

  // Upper bound on while-loop trips before the interpreter gives up.
  static constexpr int64_t kMaxWhileIterations = int64_t{1} << 24;
  // Seed of the first infeed's value (docs/compiler.md#interpreter-semantics).
  static constexpr uint64_t kInfeedSeed = 0x1f5eed00;

 private:
  const ScalarFunction& combiner(CompId computation, int64_t partition_id);
  // One instruction on every lane: collectives across lanes, others per lane.
  std::vector<Literal> evaluate_plain(const Instruction& instr,
                                      const std::vector<Operands>& per_lane,
                                      const std::vector<int64_t>& partition_ids);
  std::vector<Literal> evaluate_conditional(const Instruction& instr,
                                            const std::vector<Operands>& per_lane,
                                            const std::vector<int64_t>& partition_ids);
  std::vector<Literal> evaluate_async(const Instruction& instr,
                                      const std::vector<Operands>& per_lane,
                                      const std::vector<int64_t>& partition_ids);
  std::vector<Literal> evaluate_while(const Instruction& instr, std::vector<Literal> init,
                                      const std::vector<int64_t>& partition_ids);

  const Module& module_;
  int64_t num_devices_;
  std::map<std::pair<CompId, int64_t>, std::unique_ptr<ScalarFunction>> combiners_;
  std::map<int64_t, uint64_t> infeeds_taken_;  // partition id -> infeeds run so far
};

}  // namespace podsim::compiler::interp
