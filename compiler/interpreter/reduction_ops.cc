// Reductions: reduce (variadic) and reduce-window (variadic), applying the
// called combiner through ScalarFunction. Elements are combined in row-major
// order of the input; the combiner takes (accumulators..., values...).
#include <algorithm>

#include <fmt/format.h>

#include "compiler/interpreter/local_ops.h"

namespace podsim::compiler::interp {

namespace {

const Shape& result_leaf_shape(const Instruction& instr, int i) {
  return instr.shape.is_tuple() ? instr.shape.tuple_shape(i) : instr.shape;
}

Literal pack_results(const Instruction& instr, std::vector<Literal> leaves) {
  if (!instr.shape.is_tuple()) return std::move(leaves.at(0));
  return Literal::tuple(std::move(leaves));
}

// Splits variadic operands (inputs..., inits...) and checks their shapes.
int split_variadic(const Instruction& instr, const Operands& operands) {
  if (operands.empty() || operands.size() % 2 != 0)
    fail(instr, "needs inputs and as many init values");
  const int n = static_cast<int>(operands.size() / 2);
  const int results =
      instr.shape.is_tuple() ? static_cast<int>(instr.shape.tuple_shapes().size()) : 1;
  if (results != n) fail(instr, fmt::format("{} inputs but {} results", n, results));
  for (int i = 0; i < n; ++i) {
    const Literal& in = *operands[static_cast<size_t>(i)];
    const Literal& init = *operands[static_cast<size_t>(n + i)];
    if (in.is_tuple() || in.shape().dims() != operands[0]->shape().dims())
      fail(instr, "inputs differ in shape");
    if (init.is_tuple() || init.shape().rank() != 0) fail(instr, "init values must be scalars");
    if (result_leaf_shape(instr, i).is_tuple()) fail(instr, "result leaves must be arrays");
  }
  return n;
}

}  // namespace

void check_combiner(const Instruction& instr, const Module& module, CompId body, int num_values) {
  if (body < 0 || body >= module.computation_count()) fail(instr, "called computation missing");
  const Computation& c = module.computation(body);
  const auto params = c.parameters();
  if (static_cast<int>(params.size()) != 2 * num_values)
    fail(instr, fmt::format("combiner '{}' takes {} parameters, expected {}", c.name(),
                            params.size(), 2 * num_values));
  for (InstrId p : params)
    if (!c.instr(p).shape.is_scalar())
      fail(instr, fmt::format("combiner '{}' parameters must be scalars", c.name()));
  const Shape& root = c.root_instr().shape;
  const bool ok = num_values == 1 ? root.is_scalar()
                                  : root.is_tuple() &&
                                        static_cast<int>(root.tuple_shapes().size()) == num_values;
  if (!ok) fail(instr, fmt::format("combiner '{}' must return {} scalar(s)", c.name(), num_values));
}

Literal eval_reduce(const Instruction& instr, const Operands& operands, const OpContext& context) {
  const int n = split_variadic(instr, operands);
  check_combiner(instr, context.module, instr.to_apply(), n);
  const ScalarFunction& combine = context.combiner(instr.to_apply());
  const Shape& in_shape = operands[0]->shape();
  std::vector<bool> reduced(static_cast<size_t>(in_shape.rank()), false);
  for (int64_t d : instr.attrs.dimensions) {
    if (d < 0 || d >= in_shape.rank()) fail(instr, "reduce dimension out of range");
    reduced[static_cast<size_t>(d)] = true;
  }
  std::vector<int64_t> out_dims;
  for (int i = 0; i < in_shape.rank(); ++i)
    if (!reduced[static_cast<size_t>(i)]) out_dims.push_back(in_shape.dim(i));
  for (int r = 0; r < n; ++r)
    if (result_leaf_shape(instr, r).dims() != out_dims)
      fail(instr, "result shape does not match the reduced input");

  // Each input dim's stride in the output (0 for reduced dims).
  const auto out_strides = row_major_strides(out_dims);
  std::vector<int64_t> to_out(static_cast<size_t>(in_shape.rank()), 0);
  for (int i = 0, j = 0; i < in_shape.rank(); ++i)
    if (!reduced[static_cast<size_t>(i)])
      to_out[static_cast<size_t>(i)] = out_strides[static_cast<size_t>(j++)];

  std::vector<Literal> acc;
  for (int r = 0; r < n; ++r) {
    acc.emplace_back(result_leaf_shape(instr, r));
    std::fill(acc.back().mutable_values().begin(), acc.back().mutable_values().end(),
              operands[static_cast<size_t>(n + r)]->values()[0]);
  }
  std::vector<double> args(static_cast<size_t>(2 * n)), results(static_cast<size_t>(n));
  size_t k = 0;
  for_each_index(in_shape.dims(), [&](const std::vector<int64_t>& idx) {
    int64_t o = 0;
    for (size_t i = 0; i < idx.size(); ++i) o += idx[i] * to_out[i];
    const auto uo = static_cast<size_t>(o);
    if (n == 1) {
      double& a = acc[0].mutable_values()[uo];
      a = combine.apply(a, operands[0]->values()[k]);
    } else {
      for (int r = 0; r < n; ++r) {
        args[static_cast<size_t>(r)] = acc[static_cast<size_t>(r)].values()[uo];
        args[static_cast<size_t>(n + r)] = operands[static_cast<size_t>(r)]->values()[k];
      }
      combine.apply(args.data(), results.data());
      for (int r = 0; r < n; ++r)
        acc[static_cast<size_t>(r)].mutable_values()[uo] = results[static_cast<size_t>(r)];
    }
    ++k;
  });
  return pack_results(instr, std::move(acc));
}

// Output size per dim: padded base (n-1)*base_dilation + 1 + low + high, window
// extent (size-1)*window_dilation + 1, out = (padded - extent) / stride + 1.
// Window element w of output o reads base position o*stride + w*wd - low,
// which is an input element when it lies in range and on the dilation grid.
Literal eval_reduce_window(const Instruction& instr, const Operands& operands,
                           const OpContext& context) {
  const int n = split_variadic(instr, operands);
  check_combiner(instr, context.module, instr.to_apply(), n);
  const ScalarFunction& combine = context.combiner(instr.to_apply());
  const Shape& in_shape = operands[0]->shape();
  const auto& window = instr.attrs.window;
  const int rank = in_shape.rank();
  if (static_cast<int>(window.size()) != rank)
    fail(instr, "window rank differs from the operand rank");
  std::vector<int64_t> out_dims, window_sizes;
  for (int i = 0; i < rank; ++i) {
    const WindowDim& w = window[static_cast<size_t>(i)];
    if (w.size < 1 || w.stride < 1 || w.base_dilation < 1 || w.window_dilation < 1)
      fail(instr, "window sizes, strides and dilations must be positive");
    const int64_t padded = (in_shape.dim(i) - 1) * w.base_dilation + 1 + w.pad_low + w.pad_high;
    const int64_t extent = (w.size - 1) * w.window_dilation + 1;
    out_dims.push_back(padded < extent || in_shape.dim(i) == 0 ? 0
                                                               : (padded - extent) / w.stride + 1);
    window_sizes.push_back(w.size);
  }
  for (int r = 0; r < n; ++r)
    if (result_leaf_shape(instr, r).dims() != out_dims)
      fail(instr, "result shape does not match the window");

  const auto in_strides = row_major_strides(in_shape.dims());
  std::vector<Literal> acc;
  for (int r = 0; r < n; ++r) acc.emplace_back(result_leaf_shape(instr, r));
  std::vector<double> args(static_cast<size_t>(2 * n)), state(static_cast<size_t>(n));
  size_t k = 0;
  std::vector<int64_t> tap;  // reused across output elements
  for_each_index(out_dims, [&](const std::vector<int64_t>& out_idx) {
    for (int r = 0; r < n; ++r)
      state[static_cast<size_t>(r)] = operands[static_cast<size_t>(n + r)]->values()[0];
    for_each_index_in(window_sizes, tap, [&](const std::vector<int64_t>& w_idx) {
      int64_t offset = 0;
      for (int i = 0; i < rank; ++i) {
        const auto ui = static_cast<size_t>(i);
        const WindowDim& w = window[ui];
        const int64_t p = out_idx[ui] * w.stride + w_idx[ui] * w.window_dilation - w.pad_low;
        if (p < 0 || p > (in_shape.dim(i) - 1) * w.base_dilation || p % w.base_dilation != 0)
          return;
        offset += (p / w.base_dilation) * in_strides[ui];
      }
      for (int r = 0; r < n; ++r) {
        args[static_cast<size_t>(r)] = state[static_cast<size_t>(r)];
        args[static_cast<size_t>(n + r)] =
            operands[static_cast<size_t>(r)]->values()[static_cast<size_t>(offset)];
      }
      combine.apply(args.data(), state.data());
    });
    for (int r = 0; r < n; ++r)
      acc[static_cast<size_t>(r)].mutable_values()[k] = state[static_cast<size_t>(r)];
    ++k;
  });
  return pack_results(instr, std::move(acc));
}

}  // namespace podsim::compiler::interp
