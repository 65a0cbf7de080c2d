// known_trip_count (trip_count.h): the iteration count of a counted while loop,
// derived the way XLA's while-loop analysis does for the common pattern
//   init:  tuple(..., constant(start), ...)
//   cond:  compare(get-tuple-element(state, k), limit), direction=LT|LE|GT|GE|NE
//   body:  element k of the root tuple = add(get-tuple-element(state, k), constant(step))
// where limit is a constant or a loop-invariant tuple element whose initial
// value is a constant. When the pattern does not match, a
// backend_config={"known_trip_count":{"n":"N"}} on the while (what XLA
// writes after its own analysis) is used instead.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "compiler/ir/trip_count.h"

namespace podsim::compiler {
namespace {

const Computation* computation_holding(const Module& module, const Instruction& instr) {
  for (const Computation& comp : module.computations()) {
    const auto& instrs = comp.instructions();
    if (!instrs.empty() && &instr >= instrs.data() && &instr < instrs.data() + instrs.size())
      return &comp;
  }
  // A copy of the instruction: the computation with a while of that name and
  // the same condition/body.
  for (const Computation& comp : module.computations()) {
    InstrId id = comp.find(instr.name);
    if (id != kNoId && comp.instr(id).opcode == Opcode::kWhile &&
        comp.instr(id).called == instr.called)
      return &comp;
  }
  return nullptr;
}

std::optional<int64_t> integer_constant(const Instruction& instr) {
  if (instr.opcode != Opcode::kConstant || !instr.attrs.literal) return std::nullopt;
  const Literal& lit = *instr.attrs.literal;
  if (lit.is_tuple() || !lit.shape().is_scalar() || !is_integral(lit.shape().dtype()))
    return std::nullopt;
  return static_cast<int64_t>(lit.scalar_value());
}

// Tuple index k when instr is get-tuple-element(parameter 0, k), also
// through get-tuple-element(tuple(..., e_j, ...), j) -> e_j (a copied body).
std::optional<int64_t> state_element_index(const Computation& comp, const Instruction& instr_ref) {
  const Instruction* at = &instr_ref;
  while (at->opcode == Opcode::kGetTupleElement &&
         comp.instr(at->operand(0)).opcode == Opcode::kTuple)
    at = &comp.instr(comp.instr(at->operand(0)).operand(static_cast<int>(at->attrs.tuple_index)));
  const Instruction& instr = *at;
  if (instr.opcode != Opcode::kGetTupleElement) return std::nullopt;
  const Instruction& src = comp.instr(instr.operand(0));
  if (src.opcode != Opcode::kParameter || src.attrs.parameter_number != 0) return std::nullopt;
  return instr.attrs.tuple_index;
}

struct LoopParts {
  const Computation& outer;  // holds the while
  const Instruction& init;   // the while's operand
  const Computation& condition;
  const Computation& body;
};

// Initial value of state element k when the init is a tuple with a constant there.
std::optional<int64_t> initial_constant(const LoopParts& loop, int64_t k) {
  if (loop.init.opcode != Opcode::kTuple || k >= loop.init.operand_count()) return std::nullopt;
  return integer_constant(loop.outer.instr(loop.init.operand(static_cast<int>(k))));
}

// True when the body passes state element k through unchanged.
bool is_loop_invariant(const LoopParts& loop, int64_t k) {
  const Instruction& root = loop.body.root_instr();
  if (root.opcode != Opcode::kTuple || k >= root.operand_count()) return false;
  return state_element_index(loop.body, loop.body.instr(root.operand(static_cast<int>(k)))) == k;
}

// A condition operand whose value is the same every iteration and known.
std::optional<int64_t> invariant_value(const LoopParts& loop, const Instruction& instr) {
  if (auto c = integer_constant(instr)) return c;
  auto k = state_element_index(loop.condition, instr);
  if (k && is_loop_invariant(loop, *k)) return initial_constant(loop, *k);
  return std::nullopt;
}

// Step of the counter at state element k: root element k = counter + constant.
std::optional<int64_t> counter_step(const LoopParts& loop, int64_t k) {
  const Instruction& root = loop.body.root_instr();
  if (root.opcode != Opcode::kTuple || k >= root.operand_count()) return std::nullopt;
  const Instruction& next = loop.body.instr(root.operand(static_cast<int>(k)));
  if (next.opcode != Opcode::kAdd) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const Instruction& counter = loop.body.instr(next.operand(side));
    const Instruction& step = loop.body.instr(next.operand(1 - side));
    if (state_element_index(loop.body, counter) == k) return integer_constant(step);
  }
  return std::nullopt;
}

// ceil(a / b) for b > 0, any sign of a.
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Iterations of `for (i = start; i <dir> limit; i += step)` on integers.
std::optional<int64_t> iterations(int64_t start, int64_t limit, int64_t step,
                                  ComparisonDirection dir) {
  if (step == 0) return std::nullopt;  // runs forever or never: not a counted loop
  switch (dir) {
    case ComparisonDirection::kLt:  // i < limit: (limit - start) / step rounded up
      if (step < 0) return start < limit ? std::nullopt : std::optional<int64_t>(0);
      return std::max<int64_t>(0, ceil_div(limit - start, step));
    case ComparisonDirection::kLe:  // i <= limit  <=>  i < limit + 1 on integers
      return iterations(start, limit + 1, step, ComparisonDirection::kLt);
    case ComparisonDirection::kGt:  // mirror of LT: negate counter and limit
      return iterations(-start, -limit, -step, ComparisonDirection::kLt);
    case ComparisonDirection::kGe:
      return iterations(-start, -limit + 1, -step, ComparisonDirection::kLt);
    case ComparisonDirection::kNe: {  // terminates only if limit is hit exactly
      int64_t distance = limit - start;
      if (distance % step != 0 || distance / step < 0) return std::nullopt;
      return distance / step;
    }
    case ComparisonDirection::kEq:  // i == limit: at most one iteration unless step 0
      return start == limit ? 1 : 0;
  }
  return std::nullopt;
}

// The direction seen from the counter when it is the compare's right operand.
ComparisonDirection swapped(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kLt:
      return ComparisonDirection::kGt;
    case ComparisonDirection::kLe:
      return ComparisonDirection::kGe;
    case ComparisonDirection::kGt:
      return ComparisonDirection::kLt;
    case ComparisonDirection::kGe:
      return ComparisonDirection::kLe;
    default:
      return d;
  }
}

std::optional<int64_t> derived_trip_count(const LoopParts& loop) {
  const Instruction& cmp = loop.condition.root_instr();
  if (cmp.opcode != Opcode::kCompare) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    auto k = state_element_index(loop.condition, loop.condition.instr(cmp.operand(side)));
    if (!k) continue;
    auto limit = invariant_value(loop, loop.condition.instr(cmp.operand(1 - side)));
    auto start = initial_constant(loop, *k);
    auto step = counter_step(loop, *k);
    if (!limit || !start || !step) continue;
    ComparisonDirection dir = side == 0 ? cmp.attrs.comparison : swapped(cmp.attrs.comparison);
    if (auto n = iterations(*start, *limit, *step, dir)) return n;
  }
  return std::nullopt;
}

// XLA's backend_config={"known_trip_count":{"n":"10"}} (n may be quoted or not).
std::optional<int64_t> backend_config_trip_count(const std::string& config) {
  size_t key = config.find("\"known_trip_count\"");
  if (key == std::string::npos) return std::nullopt;
  size_t n = config.find("\"n\"", key);
  if (n == std::string::npos) return std::nullopt;
  size_t pos = config.find(':', n);
  if (pos == std::string::npos) return std::nullopt;
  ++pos;
  while (pos < config.size() && (config[pos] == ' ' || config[pos] == '"')) ++pos;
  const char* begin = config.c_str() + pos;
  char* end = nullptr;
  long long value = std::strtoll(begin, &end, 10);
  if (end == begin || value < 0) return std::nullopt;
  return static_cast<int64_t>(value);
}

}  // namespace

namespace {

std::optional<int64_t> trip_count_in(const Module& module, const Computation* outer,
                                     const Instruction& while_instr) {
  if (while_instr.opcode != Opcode::kWhile || while_instr.called.size() != 2 ||
      while_instr.operand_count() != 1)
    return std::nullopt;
  if (outer) {
    const Computation& condition = module.computation(while_instr.while_condition());
    const Computation& body = module.computation(while_instr.while_body());
    if (condition.root() >= 0 && body.root() >= 0) {
      LoopParts loop{*outer, outer->instr(while_instr.operand(0)), condition, body};
      if (auto n = derived_trip_count(loop)) return n;
    }
  }
  return backend_config_trip_count(while_instr.attrs.backend_config);
}

}  // namespace

std::optional<int64_t> known_trip_count(const Module& module, const Instruction& while_instr) {
  return trip_count_in(module, computation_holding(module, while_instr), while_instr);
}

std::optional<int64_t> known_trip_count(const Module& module, const Computation& caller,
                                        const Instruction& while_instr) {
  return trip_count_in(module, &caller, while_instr);
}

}  // namespace podsim::compiler
