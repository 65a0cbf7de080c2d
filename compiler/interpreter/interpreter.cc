// Public entry points of the reference interpreter (see interpreter.h).
#include "compiler/interpreter/interpreter.h"

#include <fmt/format.h>

#include "compiler/interpreter/cost_estimate.h"
#include "compiler/interpreter/evaluator.h"

namespace podsim::compiler {

namespace {

void check_entry(const Module& module) {
  if (module.entry_id() < 0 || module.entry_id() >= module.computation_count())
    throw UserError(fmt::format("module '{}' has no entry computation", module.name()));
  check_interpretable(module);
}

}  // namespace

Literal evaluate(const Module& module, const std::vector<Literal>& args) {
  check_entry(module);
  interp::Evaluator evaluator(module, 1);
  return evaluator.run_single(module.entry_id(), args, 0);
}

std::vector<Literal> evaluate_spmd(const Module& module,
                                   const std::vector<std::vector<Literal>>& args_per_device) {
  check_entry(module);
  if (args_per_device.empty()) throw UserError("evaluate_spmd needs at least one device");
  const auto num_devices = static_cast<int64_t>(args_per_device.size());
  std::vector<int64_t> partition_ids;
  for (int64_t d = 0; d < num_devices; ++d) partition_ids.push_back(d);
  interp::Evaluator evaluator(module, num_devices);
  return evaluator.run(module.entry_id(), args_per_device, partition_ids);
}

}  // namespace podsim::compiler
