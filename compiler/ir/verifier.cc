// Module verifier: structure, then shapes via shape inference.
#include "compiler/ir/verifier.h"

#include <set>

#include <fmt/format.h>

#include "compiler/ir/shape_inference.h"

namespace podsim::compiler {

namespace {

void verify_computation(const Module& module, const Computation& comp) {
  if (comp.size() == 0) throw UserError(fmt::format("computation '{}' is empty", comp.name()));
  if (comp.root() < 0 || comp.root() >= comp.size())
    throw UserError(fmt::format("computation '{}' has no valid root", comp.name()));
  std::set<std::string> names;
  std::set<int64_t> param_numbers;
  ShapeInferenceContext ctx{&module, module.num_partitions()};
  for (InstrId id = 0; id < comp.size(); ++id) {
    const Instruction& instr = comp.instr(id);
    auto fail = [&](const std::string& what, const std::string& hint = "") {
      throw UserError(instr.location,
                      fmt::format("{} '{}' in '{}': {}", opcode_name(instr.opcode), instr.name,
                                  comp.name(), what),
                      hint);
    };
    if (!names.insert(instr.name).second) fail("duplicate instruction name");
    for (InstrId op : instr.operands) {
      if (op < 0 || op >= comp.size()) fail(fmt::format("operand id {} out of range", op));
      if (op >= id)
        fail(fmt::format("operand '{}' is not defined before its use", comp.instr(op).name),
             "instructions must be in topological order (a cycle?)");
    }
    for (CompId c : instr.called)
      if (c < 0 || c >= module.computation_count())
        fail(fmt::format("called computation id {} out of range", c));
    if (instr.opcode == Opcode::kParameter) {
      int64_t n = instr.attrs.parameter_number;
      if (n < 0) fail("negative parameter number");
      if (!param_numbers.insert(n).second) fail(fmt::format("parameter number {} used twice", n));
    }
    std::vector<const Shape*> shapes;
    for (InstrId op : instr.operands) shapes.push_back(&comp.instr(op).shape);
    Shape inferred = infer_shape(instr, shapes, ctx);
    if (!(inferred == instr.shape))
      fail(fmt::format("declared shape {} but the operands give {}", instr.shape.to_string(false),
                       inferred.to_string(false)));
  }
  if (!param_numbers.empty() &&
      *param_numbers.rbegin() != static_cast<int64_t>(param_numbers.size()) - 1)
    throw UserError(fmt::format("computation '{}': parameter numbers must be 0..{}", comp.name(),
                                param_numbers.size() - 1));
}

}  // namespace

void verify_module(const Module& module) {
  if (module.entry_id() < 0 || module.entry_id() >= module.computation_count())
    throw UserError(fmt::format("module '{}' has no entry computation", module.name()));
  std::set<std::string> names;
  for (const Computation& c : module.computations()) {
    if (!names.insert(c.name()).second)
      throw UserError(
          fmt::format("module '{}': duplicate computation name '{}'", module.name(), c.name()));
    verify_computation(module, c);
  }
}

}  // namespace podsim::compiler
