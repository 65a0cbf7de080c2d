// Implementation of the training transforms' IR helpers (see ir_helpers.h).
#include "compiler/training/ir_helpers.h"

#include <fmt/format.h>

#include <numeric>
#include <unordered_set>

namespace podsim::compiler::training {

InstrId filled(ComputationBuilder& b, const Shape& shape_ref, double value) {
  const Shape shape = shape_ref;  // may point into b's instructions, which grow below
  InstrId scalar = b.scalar_constant(shape.dtype(), value);
  if (shape.rank() == 0) return scalar;
  return b.broadcast(scalar, shape.dims(), {});
}

InstrId reduce_sum(ComputationBuilder& b, ReducerCache& reducers, InstrId x,
                   std::vector<int64_t> dims) {
  if (dims.empty()) return x;
  const DType dtype = b.shape(x).dtype();
  InstrId zero = b.scalar_constant(dtype, 0.0);
  return b.reduce({x}, {zero}, std::move(dims), reducers.get(Opcode::kAdd, dtype));
}

InstrId reduce_sum_all(ComputationBuilder& b, ReducerCache& reducers, InstrId x) {
  std::vector<int64_t> dims(static_cast<size_t>(b.shape(x).rank()));
  std::iota(dims.begin(), dims.end(), 0);
  return reduce_sum(b, reducers, x, dims);
}

InstrId annotate_sharding(ComputationBuilder& b, InstrId x, const std::string& sharding_text) {
  if (sharding_text.empty()) return x;
  InstrId annotated = b.custom_call({x}, "Sharding", Shape(b.shape(x)));
  b.set_sharding(annotated, sharding_text);
  return annotated;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::string_view strip_fwd_prefix(std::string_view op_name) {
  return starts_with(op_name, "fwd/") ? op_name.substr(4) : op_name;
}

void make_names_unique(Computation& computation) {
  std::unordered_set<std::string> seen;
  seen.reserve(static_cast<size_t>(computation.size()) * 2);
  int64_t counter = 0;
  for (Instruction& in : computation.mutable_instructions()) {
    if (seen.insert(in.name).second) continue;
    std::string candidate;
    do {
      candidate = fmt::format("{}.t{}", in.name, counter++);
    } while (seen.count(candidate));
    in.name = candidate;
    seen.insert(in.name);
  }
}

std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inverse;
}

}  // namespace podsim::compiler::training
