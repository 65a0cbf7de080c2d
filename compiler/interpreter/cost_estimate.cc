// Static estimate of the interpreter's memory and work, and the check for
// instructions it cannot run (see cost_estimate.h). The memory model follows
// the Evaluator: a value lives from its instruction to its last use (the root
// until the end), a while loop copies its state, calls copy their arguments.
#include "compiler/interpreter/cost_estimate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "compiler/ir/flash_attention.h"
#include "compiler/ir/shape_inference.h"
#include "compiler/ir/trip_count.h"

namespace podsim::compiler {

namespace {

// A Literal's own footprint (shape, vectors, padding) besides its elements.
constexpr double kLiteralOverheadBytes = 256;

double elements(const Shape& shape) {
  double n = 0;
  for (const Shape* leaf : shape.leaves()) n += static_cast<double>(leaf->num_elements());
  return n;
}

struct CompCost {
  double peak_bytes = 0;  // per lane, including its parameters
  double element_ops = 0;
  int64_t unknown_trip_loops = 0;
};

class Estimator {
 public:
  explicit Estimator(const Module& module) : module_(module) {}

  const CompCost& cost(CompId id) {
    auto it = memo_.find(id);
    if (it != memo_.end()) return it->second;
    memo_[id] = CompCost{};  // guards against recursion (invalid modules)
    CompCost c = compute(id);
    return memo_[id] = c;
  }

  // Instructions of a scalar body (reduce / sort comparators), the per-element work.
  double body_size(CompId id) {
    if (id < 0 || id >= module_.computation_count()) return 1;
    return std::max(1.0, static_cast<double>(module_.computation(id).size()));
  }

 private:
  CompCost compute(CompId id) {
    CompCost out;
    if (id < 0 || id >= module_.computation_count()) return out;
    const Computation& comp = module_.computation(id);
    std::vector<InstrId> last(static_cast<size_t>(comp.size()), -1);
    for (InstrId i = 0; i < comp.size(); ++i)
      for (InstrId op : comp.instr(i).operands)
        if (op >= 0 && op < i) last[static_cast<size_t>(op)] = i;
    double live = 0;
    for (InstrId i = 0; i < comp.size(); ++i) {
      const Instruction& in = comp.instr(i);
      const double result = interpreter_value_bytes(in.shape);
      double temp = 0;
      out.element_ops += instruction_ops(comp, in, temp, out.unknown_trip_loops);
      out.peak_bytes = std::max(out.peak_bytes, live + result + temp);
      live += result;
      for (InstrId op : in.operands)
        if (op >= 0 && op < i && last[static_cast<size_t>(op)] == i && op != comp.root())
          live -= interpreter_value_bytes(comp.instr(op).shape);
    }
    return out;
  }

  double operand_elements(const Computation& comp, const Instruction& in) {
    double n = 0;
    for (InstrId op : in.operands)
      if (op >= 0 && op < comp.size()) n += elements(comp.instr(op).shape);
    return n;
  }

  double operand_bytes(const Computation& comp, const Instruction& in) {
    double n = 0;
    for (InstrId op : in.operands)
      if (op >= 0 && op < comp.size()) n += interpreter_value_bytes(comp.instr(op).shape);
    return n;
  }

  const Shape* operand_shape(const Computation& comp, const Instruction& in, int i) {
    if (i >= in.operand_count()) return nullptr;
    const InstrId op = in.operand(i);
    if (op < 0 || op >= comp.size()) return nullptr;
    return &comp.instr(op).shape;
  }

  // Work of one instruction; sets `temp` to the bytes it holds besides its
  // result while it runs (called computations, copies).
  double instruction_ops(const Computation& comp, const Instruction& in, double& temp,
                         int64_t& unknown_loops) {
    const double out = elements(in.shape);
    const double touched = out + operand_elements(comp, in);
    const bool topk_call =
        in.opcode == Opcode::kCustomCall && in.attrs.custom_call_target == "TopK";
    switch (topk_call ? Opcode::kTopK : in.opcode) {
      case Opcode::kDot: {
        double k = 1;
        if (const Shape* lhs = operand_shape(comp, in, 0); lhs && lhs->is_array())
          for (int64_t d : in.attrs.dot.lhs_contracting)
            if (d >= 0 && d < lhs->rank()) k *= static_cast<double>(lhs->dim(static_cast<int>(d)));
        temp = operand_bytes(comp, in);  // float dots pack both operands
        if (const std::optional<DotSparsity> sparse = dot_sparsity(in.attrs);
            sparse && in.operand_count() == 3) {
          // The stored operand is expanded to its logical size (m / n times) first.
          const double expansion = static_cast<double>(sparse->m) / static_cast<double>(sparse->n);
          if (const Shape* stored = operand_shape(comp, in, sparse->operand))
            temp += 2 * interpreter_value_bytes(*stored) * expansion;
          const auto& contracting = in.attrs.dot.lhs_contracting;
          if (sparse->operand == 0 &&
              std::find(contracting.begin(), contracting.end(), sparse->dim) != contracting.end())
            k *= expansion;  // the contracting size above was the stored one
        }
        return touched + out * k;
      }
      case Opcode::kConvolution: {
        // MACs per output element: the kernel's elements per output feature.
        double per_output = 1;
        if (const Shape* kernel = operand_shape(comp, in, 1); kernel && kernel->is_array()) {
          const int64_t f = in.attrs.conv.kernel_output_feature;
          const double features = f >= 0 && f < kernel->rank()
                                      ? static_cast<double>(kernel->dim(static_cast<int>(f)))
                                      : 1;
          per_output = static_cast<double>(kernel->num_elements()) / std::max(1.0, features);
        }
        return touched + out * per_output * kConvolutionMacWeight;
      }
      case Opcode::kReduce:
      case Opcode::kMap:
        return touched + operand_elements(comp, in) * body_size(in.to_apply());
      case Opcode::kReduceWindow: {
        double window = 1;
        for (const WindowDim& w : in.attrs.window) window *= static_cast<double>(w.size);
        return touched + out * window * body_size(in.to_apply());
      }
      case Opcode::kSelectAndScatter: {
        double window = 1;
        for (const WindowDim& w : in.attrs.window) window *= static_cast<double>(w.size);
        double bodies = 0;
        for (CompId c : in.called) bodies += body_size(c);
        return touched + out * window * std::max(1.0, bodies);
      }
      case Opcode::kScatter:
        return touched + operand_elements(comp, in) * body_size(in.to_apply());
      case Opcode::kSort:
      case Opcode::kTopK: {
        temp = 2 * interpreter_value_bytes(in.shape);  // operand copies and the permutation
        const Shape* first = operand_shape(comp, in, 0);
        double n = first && first->is_array() && first->rank() > 0
                       ? static_cast<double>(first->dim(first->rank() - 1))
                       : 1;
        if (in.opcode == Opcode::kSort && first && first->is_array() &&
            !in.attrs.dimensions.empty()) {  // else last dim
          const int64_t d = in.attrs.dimensions[0];
          if (d >= 0 && d < first->rank()) n = static_cast<double>(first->dim(static_cast<int>(d)));
        }
        const double count =
            first && first->is_array() ? static_cast<double>(first->num_elements()) : 0;
        return touched +
               count * std::max(1.0, std::log2(std::max(2.0, n))) * body_size(in.to_apply());
      }
      case Opcode::kFft: {
        double length = 1;
        for (int64_t l : in.attrs.fft_length) length *= static_cast<double>(l);
        temp = interpreter_value_bytes(in.shape);
        return touched + out * length;
      }
      case Opcode::kCholesky:
      case Opcode::kTriangularSolve: {
        const Shape* a = operand_shape(comp, in, 0);
        const double n =
            a && a->is_array() && a->rank() >= 1 ? static_cast<double>(a->dim(a->rank() - 1)) : 1;
        return touched + out * n;
      }
      case Opcode::kWhile: {
        const CompCost cond = cost(in.while_condition());
        const CompCost body = cost(in.while_body());
        const double state = interpreter_value_bytes(in.shape);
        temp = 2 * state + std::max(cond.peak_bytes, body.peak_bytes);
        std::optional<int64_t> trips = known_trip_count(module_, comp, in);
        unknown_loops += cond.unknown_trip_loops + body.unknown_trip_loops + (trips ? 0 : 1);
        const double n = trips ? static_cast<double>(*trips) : 1.0;
        return touched + (n + 1) * cond.element_ops + n * body.element_ops;
      }
      case Opcode::kConditional: {
        double ops = 0, peak = 0;
        for (CompId c : in.called) {
          const CompCost& branch = cost(c);
          ops = std::max(ops, branch.element_ops);
          peak = std::max(peak, branch.peak_bytes);
          unknown_loops += branch.unknown_trip_loops;
        }
        temp = peak;
        return touched + ops;
      }
      case Opcode::kCall:
      case Opcode::kFusion:
      case Opcode::kAsyncStart: {
        if (in.called.empty()) break;
        const CompCost& callee = cost(in.to_apply());
        unknown_loops += callee.unknown_trip_loops;
        temp = callee.peak_bytes + operand_bytes(comp, in);
        return touched + callee.element_ops;
      }
      default:
        break;
    }
    if (is_collective(in.opcode) || is_async_start(in.opcode)) {
      // Group folds and gathered copies: one extra result-sized value.
      temp = interpreter_value_bytes(in.shape);
      return touched + out * body_size(in.to_apply());
    }
    return touched;
  }

  const Module& module_;
  std::map<CompId, CompCost> memo_;
};

// Reachable computations from the entry, entry first.
std::vector<CompId> reachable(const Module& module) {
  std::vector<CompId> order;
  std::vector<bool> seen(static_cast<size_t>(module.computation_count()), false);
  std::vector<CompId> stack;
  if (module.entry_id() >= 0 && module.entry_id() < module.computation_count())
    stack.push_back(module.entry_id());
  while (!stack.empty()) {
    const CompId c = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(c)]) continue;
    seen[static_cast<size_t>(c)] = true;
    order.push_back(c);
    for (const Instruction& in : module.computation(c).instructions())
      for (CompId callee : in.called)
        if (callee >= 0 && callee < module.computation_count() &&
            !seen[static_cast<size_t>(callee)])
          stack.push_back(callee);
  }
  return order;
}

bool is_identity_custom_call(const std::string& target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" ||
         target == "SPMDShardToFullShape" || target == kStopGradientTarget ||
         target == "MoveToHost" || target == "MoveToDevice";
}

bool has_complex_leaf(const Shape& shape) {
  for (const Shape* leaf : shape.leaves())
    if (is_complex(leaf->dtype())) return true;
  return false;
}

// Ops the interpreter runs on complex (c64, c128) values; the others index
// elements as single doubles and refuse complex operands or results.
bool runs_on_complex(const Instruction& in) {
  if (is_elementwise_unary(in.opcode) || is_elementwise_binary(in.opcode)) return true;
  switch (in.opcode) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kReshape:
    case Opcode::kDynamicReshape:
    case Opcode::kBitcast:
    case Opcode::kBitcastConvert:
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kDynamicSlice:
    case Opcode::kAllGather:
    case Opcode::kCopy:
    case Opcode::kFft:
    case Opcode::kDot:
    case Opcode::kOptimizationBarrier:
    case Opcode::kDomain:
    case Opcode::kAddDependency:
    case Opcode::kSetDimensionSize:
    case Opcode::kGetDimensionSize:
    case Opcode::kCustomCall:  // the identity annotations
    case Opcode::kWhile:
    case Opcode::kCall:
    case Opcode::kFusion:
    case Opcode::kConditional:
      return true;
    default:
      return false;
  }
}

bool has_no_defined_value(const Instruction& in) {
  switch (in.opcode) {
    case Opcode::kRng:
    case Opcode::kRngBitGenerator:
    case Opcode::kRngGetAndUpdateState:
    case Opcode::kStochasticConvert:
    case Opcode::kOutfeed:
    case Opcode::kSend:
    case Opcode::kSendDone:
    case Opcode::kRecv:
    case Opcode::kRecvDone:
      return true;
    case Opcode::kCustomCall:
      return !is_identity_custom_call(in.attrs.custom_call_target) &&
             in.attrs.custom_call_target != "TopK" && !is_flash_attention(in) &&
             !is_flash_attention_bwd(in);
    case Opcode::kAsyncStart:
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone:
      if (in.attrs.async_wrapped) {
        Instruction wrapped = in;
        wrapped.opcode = *in.attrs.async_wrapped;
        return has_no_defined_value(wrapped);
      }
      return false;
    default:
      return false;
  }
}

// An op the interpreter does not run on complex values with such a value.
bool complex_unsupported(const Computation& comp, const Instruction& in) {
  if (runs_on_complex(in)) return false;
  if (has_complex_leaf(in.shape)) return true;
  for (InstrId op : in.operands)
    if (op >= 0 && op < comp.size() && has_complex_leaf(comp.instr(op).shape)) return true;
  return false;
}

std::string kind_of(const Instruction& in) {
  const Opcode op = in.attrs.async_wrapped &&
                            (in.opcode == Opcode::kAsyncStart ||
                             in.opcode == Opcode::kAsyncUpdate || in.opcode == Opcode::kAsyncDone)
                        ? *in.attrs.async_wrapped
                        : in.opcode;
  if (op == Opcode::kCustomCall)
    return fmt::format("custom-call '{}'", in.attrs.custom_call_target);
  return std::string(opcode_name(op));
}

}  // namespace

double interpreter_value_bytes(const Shape& shape) {
  double bytes = kLiteralOverheadBytes;
  for (const Shape* leaf : shape.leaves())
    bytes += static_cast<double>(leaf->num_elements()) * (is_complex(leaf->dtype()) ? 16.0 : 8.0) +
             kLiteralOverheadBytes;
  return bytes;
}

InterpreterEstimate estimate_interpreter(const Module& module, int64_t lanes) {
  InterpreterEstimate e;
  if (module.entry_id() < 0 || module.entry_id() >= module.computation_count()) return e;
  Estimator estimator(module);
  const CompCost& entry = estimator.cost(module.entry_id());
  const auto n = static_cast<double>(std::max<int64_t>(1, lanes));
  e.peak_bytes = n * entry.peak_bytes;
  e.element_ops = n * entry.element_ops;
  e.unknown_trip_loops = entry.unknown_trip_loops;
  for (InstrId p : module.entry().parameters())
    e.parameter_bytes += interpreter_value_bytes(module.entry().instr(p).shape);
  if (module.entry().root() >= 0)
    e.root_bytes = interpreter_value_bytes(module.entry().root_instr().shape);
  return e;
}

std::vector<const Instruction*> uninterpretable_instructions(const Module& module) {
  std::vector<const Instruction*> out;
  for (CompId c : reachable(module))
    for (const Instruction& in : module.computation(c).instructions())
      if (has_no_defined_value(in) || complex_unsupported(module.computation(c), in))
        out.push_back(&in);
  return out;
}

void check_interpretable(const Module& module) {
  const std::vector<const Instruction*> bad = uninterpretable_instructions(module);
  if (bad.empty()) return;
  std::vector<std::pair<std::string, int64_t>> kinds;  // first-appearance order
  for (const Instruction* in : bad) {
    const std::string kind =
        has_no_defined_value(*in) ? kind_of(*in) : kind_of(*in) + " on complex values";
    auto it =
        std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == kind; });
    if (it == kinds.end())
      kinds.emplace_back(kind, 1);
    else
      ++it->second;
  }
  std::string list;
  for (const auto& [kind, count] : kinds)
    list += fmt::format("{}{} (x{})", list.empty() ? "" : ", ", kind, count);
  throw UserError(
      bad.front()->location,
      fmt::format("the interpreter cannot run {} instruction{}: {}", bad.size(),
                  bad.size() == 1 ? "" : "s", list),
      "these ops have no value the reference interpreter can compute (random numbers, host "
      "transfers, unknown custom-calls) or are not implemented there (ragged-all-to-all, data "
      "movement and reductions of complex values); verify a module without them, e.g. with their "
      "results passed in as parameters");
}

}  // namespace podsim::compiler
