// ModelGraph implementation (see model_graph.h).
#include "workloads/model_graph.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <numeric>

namespace podsim::workloads {
namespace {
// HLO instruction names: "layer_3/ffn/wi" -> "layer_3.ffn.wi".
std::string instruction_name(const std::string& prefix, std::string name) {
  for (char& c : name)
    if (c == '/') c = '.';
  return prefix + "." + name;
}
}  // namespace

using compiler::ComparisonDirection;
using compiler::DotDims;
using compiler::Opcode;
using compiler::Shape;

ModelGraph::ModelGraph(compiler::Module& module, DType activation_dtype, DType param_dtype,
                       std::string computation_name)
    : module_(module),
      builder_(std::move(computation_name), &module),
      activation_(activation_dtype),
      param_(param_dtype) {}

InstrId ModelGraph::weight_parameter(const std::string& name, std::vector<int64_t> dims,
                                     const std::optional<std::string>& sharding) {
  weights_.push_back(WeightRecord{name, dims, sharding});
  if (weight_source_) return weight_source_(weights_.size() - 1, weights_.back());
  InstrId p = builder_.parameter(next_parameter_++, Shape(param_, std::move(dims)),
                                 instruction_name("param", name));
  builder_.set_op_name(p, "param/" + name);
  if (sharding) builder_.set_sharding(p, *sharding);
  return p;
}

InstrId ModelGraph::weight(const std::string& name, std::vector<int64_t> dims,
                           const std::optional<std::string>& sharding) {
  return convert(weight_parameter(name, std::move(dims), sharding), activation_);
}

InstrId ModelGraph::argument(const std::string& name, Shape shape) {
  return builder_.parameter(next_parameter_++, std::move(shape), name);
}

InstrId ModelGraph::input(const std::string& name, Shape shape,
                          const std::optional<std::string>& sharding) {
  InstrId p =
      builder_.parameter(next_parameter_++, std::move(shape), instruction_name("input", name));
  builder_.set_op_name(p, "input/" + name);
  if (sharding) builder_.set_sharding(p, *sharding);
  return p;
}

InstrId ModelGraph::annotate(InstrId value, const std::optional<std::string>& sharding) {
  if (!sharding) return value;
  InstrId a = builder_.custom_call({value}, "Sharding", shape(value));
  builder_.set_sharding(a, *sharding);
  return a;
}

InstrId ModelGraph::einsum(const std::string& spec, InstrId lhs, InstrId rhs,
                           const std::string& name, std::optional<DType> result) {
  const auto comma = spec.find(',');
  const auto arrow = spec.find("->");
  assert(comma != std::string::npos && arrow != std::string::npos);
  const std::string a = spec.substr(0, comma), b = spec.substr(comma + 1, arrow - comma - 1),
                    out = spec.substr(arrow + 2);
  assert(static_cast<int>(a.size()) == shape(lhs).rank() &&
         static_cast<int>(b.size()) == shape(rhs).rank());
  auto has = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
  DotDims dims;
  std::string batch, lhs_free, rhs_free;
  for (size_t i = 0; i < a.size(); ++i) {
    const char c = a[i];
    if (has(b, c) && has(out, c)) {
      dims.lhs_batch.push_back(static_cast<int64_t>(i));
      dims.rhs_batch.push_back(static_cast<int64_t>(b.find(c)));
      batch += c;
    } else if (has(b, c)) {
      dims.lhs_contracting.push_back(static_cast<int64_t>(i));
      dims.rhs_contracting.push_back(static_cast<int64_t>(b.find(c)));
    } else {
      assert(has(out, c));
      lhs_free += c;
    }
  }
  for (char c : b)
    if (!has(a, c)) rhs_free += c;
  InstrId dot = builder_.dot(lhs, rhs, dims, result ? result : std::optional<DType>(activation_));
  const std::string op_name = name.empty() ? "" : builder_.op_name_scope() + "/" + name;
  if (!op_name.empty()) builder_.set_op_name(dot, op_name);
  const std::string natural = batch + lhs_free + rhs_free;
  assert(natural.size() == out.size());
  if (natural == out) return dot;
  std::vector<int64_t> permutation;
  for (char c : out) permutation.push_back(static_cast<int64_t>(natural.find(c)));
  InstrId transposed = builder_.transpose(dot, permutation);
  if (!op_name.empty()) builder_.set_op_name(transposed, op_name);
  return transposed;
}

InstrId ModelGraph::full(double value, std::vector<int64_t> dims, DType dtype) {
  InstrId scalar = builder_.scalar_constant(dtype, value);
  if (dims.empty()) return scalar;
  return builder_.broadcast(scalar, std::move(dims), {});
}

compiler::CompId ModelGraph::reducer(Opcode op, DType dtype) {
  auto key = std::make_pair(op, dtype);
  auto it = reducers_.find(key);
  if (it != reducers_.end()) return it->second;
  const std::string name =
      fmt::format("{}_{}", compiler::opcode_name(op), compiler::dtype_name(dtype));
  // Another graph of the same module (a stage body) may have added it already.
  compiler::CompId id = module_.find_computation(name);
  if (id == compiler::kNoId)
    id = module_.add_computation(compiler::scalar_binary_computation(name, op, dtype));
  reducers_[key] = id;
  return id;
}

InstrId ModelGraph::reduce(Opcode op, InstrId value, std::vector<int64_t> dimensions) {
  const DType dtype = shape(value).dtype();
  double init = 0;
  if (op == Opcode::kMaximum) init = compiler::is_floating(dtype) ? -INFINITY : -2147483648.0;
  if (op == Opcode::kMinimum) init = compiler::is_floating(dtype) ? INFINITY : 2147483647.0;
  InstrId init_value = builder_.scalar_constant(dtype, init);
  return builder_.reduce({value}, {init_value}, std::move(dimensions), reducer(op, dtype));
}

InstrId ModelGraph::expand_last(InstrId reduced, const std::vector<int64_t>& full_dims) {
  std::vector<int64_t> kept(full_dims.size() - 1);
  std::iota(kept.begin(), kept.end(), 0);
  return builder_.broadcast(reduced, full_dims, kept);
}

InstrId ModelGraph::mean_last(InstrId x) {
  const std::vector<int64_t> d = dims(x);
  std::vector<int64_t> reduced_dims(d.begin(), d.end() - 1);
  InstrId inv_width = full(1.0 / static_cast<double>(d.back()), reduced_dims, shape(x).dtype());
  return binary(Opcode::kMultiply, reduce(Opcode::kAdd, x, {static_cast<int64_t>(d.size()) - 1}),
                inv_width);
}

// x * rsqrt(mean_square + 1e-6) * scale, mean_square reduced over x's last dim.
InstrId ModelGraph::divide_by_root(InstrId x, InstrId mean_square, InstrId scale) {
  const std::vector<int64_t> d = dims(x);
  InstrId inv_root =
      unary(Opcode::kRsqrt, binary(Opcode::kAdd, mean_square, full_like(1e-6, mean_square)));
  InstrId normed = binary(Opcode::kMultiply, x, expand_last(inv_root, d));
  return binary(Opcode::kMultiply, normed,
                broadcast(scale, d, {static_cast<int64_t>(d.size()) - 1}));
}

InstrId ModelGraph::layer_norm(InstrId x, InstrId scale) {
  InstrId centered = binary(Opcode::kSubtract, x, expand_last(mean_last(x), dims(x)));
  return divide_by_root(centered, mean_last(binary(Opcode::kMultiply, centered, centered)), scale);
}

InstrId ModelGraph::rms_norm(InstrId x, InstrId scale) {
  return divide_by_root(x, mean_last(binary(Opcode::kMultiply, x, x)), scale);
}

// Lingvo's formulation (gshard_builder.py Attention _Softmax): exp(x - lse),
// lse = log(sum(exp(x - m))) + m with m = max(stop_gradient(x)). The
// exponentials of the sum are consumed by the reduction alone (one read of x,
// nothing written) and the probabilities are recomputed where they are used,
// so no normalised copy is materialised for a single consumer; m carries no
// gradient (softmax is shift-invariant), so the backward skips the max's.
InstrId ModelGraph::softmax(InstrId x) {
  const std::vector<int64_t> d = dims(x);
  const int64_t last = static_cast<int64_t>(d.size()) - 1;
  InstrId m = stop_gradient(reduce(Opcode::kMaximum, x, {last}));
  InstrId sum = reduce(
      Opcode::kAdd, unary(Opcode::kExp, binary(Opcode::kSubtract, x, expand_last(m, d))), {last});
  InstrId log_sum_exp = binary(Opcode::kAdd, unary(Opcode::kLog, sum), m);
  return unary(Opcode::kExp, binary(Opcode::kSubtract, x, expand_last(log_sum_exp, d)));
}

InstrId ModelGraph::stop_gradient(InstrId x) {
  return builder_.custom_call({x}, compiler::kStopGradientTarget, shape(x));
}

InstrId ModelGraph::gelu(InstrId a) {
  InstrId cube = binary(Opcode::kMultiply, binary(Opcode::kMultiply, a, a), a);
  InstrId inner = binary(Opcode::kAdd, a, binary(Opcode::kMultiply, cube, full_like(0.044715, a)));
  InstrId t =
      unary(Opcode::kTanh, binary(Opcode::kMultiply, inner, full_like(std::sqrt(2.0 / M_PI), a)));
  InstrId half_a = binary(Opcode::kMultiply, a, full_like(0.5, a));
  return binary(Opcode::kMultiply, half_a, binary(Opcode::kAdd, t, full_like(1.0, a)));
}

InstrId ModelGraph::relu(InstrId a) { return binary(Opcode::kMaximum, a, full_like(0.0, a)); }

InstrId ModelGraph::one_hot(InstrId indices, int64_t depth, DType dtype) {
  std::vector<int64_t> d = dims(indices);
  std::vector<int64_t> kept(d.size());
  std::iota(kept.begin(), kept.end(), 0);
  d.push_back(depth);
  const DType index_type = shape(indices).dtype();
  InstrId positions = builder_.iota(Shape(index_type, d), static_cast<int64_t>(d.size()) - 1);
  InstrId spread = broadcast(indices, d, kept);
  InstrId hit = builder_.compare(spread, positions, ComparisonDirection::kEq);
  return builder_.convert(hit, dtype);
}

void ModelGraph::finish(InstrId root, const std::string& name) {
  module_.set_name(name);
  module_.set_entry(module_.add_computation(std::move(builder_).build(root)));
}

compiler::CompId ModelGraph::build_computation(InstrId root) {
  return module_.add_computation(std::move(builder_).build(root));
}

}  // namespace podsim::workloads
