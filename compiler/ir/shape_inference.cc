// Shape inference for every opcode, following XLA's ShapeInference rules
// (xla/service/shape_inference.cc semantics, re-derived from the operation
// semantics documentation: output sizes of slices, pads, windows, dots,
// convolutions and gathers are the standard formulas quoted inline).
#include "compiler/ir/shape_inference.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace podsim::compiler {

namespace {

class Inferrer {
 public:
  Inferrer(const Instruction& instr, const std::vector<const Shape*>& operands,
           const ShapeInferenceContext& ctx)
      : instr_(instr), ops_(operands), ctx_(ctx) {}

  Shape run();

 private:
  [[noreturn]] void fail(const std::string& what, const std::string& hint = "") const {
    throw UserError(instr_.location,
                    fmt::format("{} '{}': {}", opcode_name(instr_.opcode), instr_.name, what),
                    hint);
  }
  void expect_operands(size_t n) const {
    if (ops_.size() != n) fail(fmt::format("expected {} operand(s), got {}", n, ops_.size()));
  }
  const Shape& array_operand(size_t i) const {
    const Shape& s = *ops_[i];
    if (!s.is_array())
      fail(fmt::format("operand {} must be an array, got {}", i, s.to_string(false)));
    return s;
  }
  void check_dim_index(int64_t d, int rank, const char* what) const {
    if (d < 0 || d >= rank) fail(fmt::format("{} {} out of range for rank {}", what, d, rank));
  }
  void check_unique_dims(const std::vector<int64_t>& dims, int rank, const char* what) const {
    std::set<int64_t> seen;
    for (int64_t d : dims) {
      check_dim_index(d, rank, what);
      if (!seen.insert(d).second) fail(fmt::format("{} {} repeated", what, d));
    }
  }
  void check_scalar_int(size_t i) const {
    const Shape& s = array_operand(i);
    if (!s.is_scalar() || !is_integral(s.dtype()))
      fail(fmt::format("operand {} must be an integer scalar, got {}", i, s.to_string(false)));
  }
  void check_same_dtype(const Shape& a, const Shape& b) const {
    if (a.dtype() != b.dtype())
      fail(fmt::format("element types differ: {} vs {}", dtype_name(a.dtype()),
                       dtype_name(b.dtype())));
  }
  const Computation* callee(size_t i) const {
    if (instr_.called.size() <= i) fail("missing called computation");
    if (!ctx_.module) return nullptr;
    CompId id = instr_.called[i];
    if (id < 0 || id >= ctx_.module->computation_count())
      fail("called computation id out of range");
    return &ctx_.module->computation(id);
  }
  int64_t group_size() const {
    int64_t devices =
        ctx_.module ? std::max(ctx_.num_devices, ctx_.module->num_partitions()) : ctx_.num_devices;
    return instr_.attrs.replica_groups.group_size(devices);
  }
  int64_t collective_dim(const Shape& s) const {
    if (instr_.attrs.dimensions.size() != 1) fail("expected exactly one entry in dimensions={}");
    int64_t d = instr_.attrs.dimensions[0];
    check_dim_index(d, s.rank(), "dimension");
    return d;
  }

  // Output extent of a windowed dimension: the base is dilated and padded,
  // the window dilated; out = floor((padded - window) / stride) + 1.
  int64_t window_output(int64_t in, const WindowDim& w) const {
    if (w.size < 1 || w.stride < 1 || w.base_dilation < 1 || w.window_dilation < 1)
      fail("window size, stride and dilations must be >= 1");
    int64_t dilated_in = in == 0 ? 0 : (in - 1) * w.base_dilation + 1;
    int64_t padded = dilated_in + w.pad_low + w.pad_high;
    int64_t dilated_window = (w.size - 1) * w.window_dilation + 1;
    if (padded < dilated_window) return 0;
    return (padded - dilated_window) / w.stride + 1;
  }

  Shape elementwise_unary();
  Shape elementwise_binary();
  Shape broadcast();
  Shape slice();
  Shape pad();
  Shape concatenate();
  Shape dynamic_slice();
  Shape dynamic_update_slice();
  Shape select();
  Shape clamp();
  Shape reduce();
  Shape reduce_window();
  Shape dot();
  Shape convolution();
  Shape gather();
  Shape scatter();
  Shape while_loop();
  Shape call();
  Shape per_operand(Shape (Inferrer::*one)(const Shape&) const) const;
  Shape all_reduce_one(const Shape& x) const;
  Shape all_gather_one(const Shape& x) const;
  int64_t divisible_collective_dim(const Shape& x) const;
  Shape reduce_scatter_one(const Shape& x) const;
  Shape all_to_all();
  Shape bitcast_convert();
  Shape sort();
  Shape topk();
  Shape fft();
  Shape conditional();
  Shape select_and_scatter();
  Shape map();
  Shape fusion();
  Shape batch_norm();
  Shape triangular_solve();
  Shape cholesky();
  const Shape& tuple_operand_element(size_t operand, int64_t index) const;
  Shape async_start();

  const Instruction& instr_;
  const std::vector<const Shape*>& ops_;
  const ShapeInferenceContext& ctx_;
};

// The real type of a complex one (c64 -> f32, c128 -> f64); others unchanged.
DType real_part_type(DType t) {
  if (t == DType::kC64) return DType::kF32;
  if (t == DType::kC128) return DType::kF64;
  return t;
}

Shape Inferrer::elementwise_unary() {
  expect_operands(1);
  const Opcode op = instr_.opcode;
  if (op == Opcode::kCopy && ops_[0]->is_tuple()) return *ops_[0];  // XLA copies tuples too
  const Shape& x = array_operand(0);
  const DType t = x.dtype();
  switch (op) {
    case Opcode::kConvert:
      return Shape(instr_.shape.dtype(), x.dims());
    case Opcode::kNot:
      if (!(t == DType::kPred || is_integral(t))) fail("not needs pred or integer operands");
      break;
    case Opcode::kIsFinite:
      if (!is_floating(t))
        fail(fmt::format("is-finite needs a floating-point operand, got {}", dtype_name(t)));
      return Shape(DType::kPred, x.dims());
    case Opcode::kReal:
    case Opcode::kImag:
    case Opcode::kAbs:  // XLA: abs of a complex value is its (real) magnitude
      if (op != Opcode::kAbs && !is_floating(t) && !is_complex(t))
        fail(fmt::format("{} needs a floating-point or complex operand", opcode_name(op)));
      return Shape(real_part_type(t), x.dims());
    case Opcode::kPopcnt:
    case Opcode::kClz:
      if (!is_integral(t))
        fail(fmt::format("{} needs an integer operand, got {}", opcode_name(op), dtype_name(t)));
      break;
    case Opcode::kReducePrecision:
      if (!is_floating(t)) fail("reduce-precision needs a floating-point operand");
      if (instr_.attrs.exponent_bits < 1 || instr_.attrs.mantissa_bits < 0)
        fail(fmt::format(
            "exponent_bits={} mantissa_bits={}: need exponent_bits >= 1 and mantissa_bits >= 0",
            instr_.attrs.exponent_bits, instr_.attrs.mantissa_bits));
      break;
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kCbrt:
    case Opcode::kTan:
    case Opcode::kErf:
      if (!is_floating(t) && !is_complex(t))
        fail(fmt::format("{} needs a floating-point operand, got {}", opcode_name(op),
                         dtype_name(t)));
      break;
    default:
      break;
  }
  return Shape(t, x.dims());
}

Shape Inferrer::elementwise_binary() {
  expect_operands(2);
  const Shape& a = array_operand(0);
  const Shape& b = array_operand(1);
  if (a.dims() != b.dims())
    fail(fmt::format("operand dims differ: {} vs {}", a.to_string(false), b.to_string(false)),
         "HLO has no implicit broadcasting; insert a broadcast");
  check_same_dtype(a, b);
  Opcode op = instr_.opcode;
  if ((op == Opcode::kAnd || op == Opcode::kOr || op == Opcode::kXor) &&
      !(a.dtype() == DType::kPred || is_integral(a.dtype())))
    fail("logical ops need pred or integer operands");
  if (op == Opcode::kCompare) return Shape(DType::kPred, a.dims());
  if ((op == Opcode::kShiftLeft || op == Opcode::kShiftRightLogical ||
       op == Opcode::kShiftRightArithmetic) &&
      !is_integral(a.dtype()))
    fail("shifts need integer operands");
  if (op == Opcode::kComplex) {  // complex(re, im): f32 -> c64, f64 -> c128
    if (a.dtype() != DType::kF32 && a.dtype() != DType::kF64)
      fail(fmt::format("complex needs f32 or f64 parts, got {}", dtype_name(a.dtype())));
    return Shape(a.dtype() == DType::kF32 ? DType::kC64 : DType::kC128, a.dims());
  }
  return Shape(a.dtype(), a.dims());
}

Shape Inferrer::broadcast() {
  expect_operands(1);
  const Shape& x = array_operand(0);
  const auto& out = instr_.shape.dims();
  const auto& map = instr_.attrs.dimensions;
  if (static_cast<int>(map.size()) != x.rank())
    fail(fmt::format("dimensions={{{}}} must have one entry per operand dim ({})",
                     fmt::join(map, ","), x.rank()));
  check_unique_dims(map, static_cast<int>(out.size()), "broadcast dimension");
  for (int i = 0; i < x.rank(); ++i)
    if (out[static_cast<size_t>(map[static_cast<size_t>(i)])] != x.dim(i))
      fail(fmt::format("operand dim {} (size {}) maps to output dim {} of size {}", i, x.dim(i),
                       map[static_cast<size_t>(i)],
                       out[static_cast<size_t>(map[static_cast<size_t>(i)])]));
  return Shape(x.dtype(), out);
}

Shape Inferrer::slice() {
  expect_operands(1);
  const Shape& x = array_operand(0);
  const auto& sl = instr_.attrs.slice;
  if (static_cast<int>(sl.size()) != x.rank()) fail("slice needs one [start:limit:stride] per dim");
  std::vector<int64_t> out;
  for (int i = 0; i < x.rank(); ++i) {
    const SliceDim& s = sl[static_cast<size_t>(i)];
    if (s.start < 0 || s.start > s.limit || s.limit > x.dim(i) || s.stride < 1)
      fail(fmt::format("slice [{}:{}:{}] invalid for dim {} of size {}", s.start, s.limit, s.stride,
                       i, x.dim(i)));
    out.push_back((s.limit - s.start + s.stride - 1) / s.stride);  // ceil((limit-start)/stride)
  }
  return Shape(x.dtype(), out);
}

Shape Inferrer::pad() {
  expect_operands(2);
  const Shape& x = array_operand(0);
  const Shape& v = array_operand(1);
  if (!v.is_scalar()) fail("padding value must be a scalar");
  check_same_dtype(x, v);
  const auto& p = instr_.attrs.padding;
  if (static_cast<int>(p.size()) != x.rank()) fail("padding needs one low_high_interior per dim");
  std::vector<int64_t> out;
  for (int i = 0; i < x.rank(); ++i) {
    const PadDim& d = p[static_cast<size_t>(i)];
    if (d.interior < 0) fail("interior padding must be >= 0");
    // size = low + high + dim + (dim - 1) * interior
    int64_t n = d.low + d.high + x.dim(i) + std::max<int64_t>(x.dim(i) - 1, 0) * d.interior;
    if (n < 0) fail(fmt::format("padding makes dim {} negative", i));
    out.push_back(n);
  }
  return Shape(x.dtype(), out);
}

Shape Inferrer::concatenate() {
  if (ops_.empty()) fail("needs at least one operand");
  const Shape& first = array_operand(0);
  if (instr_.attrs.dimensions.size() != 1) fail("expected dimensions={d}");
  int64_t dim = instr_.attrs.dimensions[0];
  check_dim_index(dim, first.rank(), "concatenate dimension");
  std::vector<int64_t> out = first.dims();
  for (size_t i = 1; i < ops_.size(); ++i) {
    const Shape& s = array_operand(i);
    check_same_dtype(first, s);
    if (s.rank() != first.rank()) fail("operands must have equal rank");
    for (int d = 0; d < s.rank(); ++d)
      if (d != dim && s.dim(d) != first.dim(d))
        fail(fmt::format("operand {} dim {} is {}, expected {}", i, d, s.dim(d), first.dim(d)));
    out[static_cast<size_t>(dim)] += s.dim(static_cast<int>(dim));
  }
  return Shape(first.dtype(), out);
}

Shape Inferrer::dynamic_slice() {
  if (ops_.empty()) fail("needs an operand");
  const Shape& x = array_operand(0);
  expect_operands(static_cast<size_t>(x.rank()) + 1);
  for (size_t i = 1; i < ops_.size(); ++i) check_scalar_int(i);
  const auto& sizes = instr_.attrs.dynamic_slice_sizes;
  if (static_cast<int>(sizes.size()) != x.rank())
    fail("dynamic_slice_sizes needs one size per dim");
  for (int i = 0; i < x.rank(); ++i)
    if (sizes[static_cast<size_t>(i)] < 0 || sizes[static_cast<size_t>(i)] > x.dim(i))
      fail(fmt::format("slice size {} invalid for dim {} of size {}", sizes[static_cast<size_t>(i)],
                       i, x.dim(i)));
  return Shape(x.dtype(), sizes);
}

Shape Inferrer::dynamic_update_slice() {
  if (ops_.size() < 2) fail("needs operand and update");
  const Shape& x = array_operand(0);
  const Shape& u = array_operand(1);
  expect_operands(static_cast<size_t>(x.rank()) + 2);
  for (size_t i = 2; i < ops_.size(); ++i) check_scalar_int(i);
  check_same_dtype(x, u);
  if (u.rank() != x.rank()) fail("update rank must equal operand rank");
  for (int i = 0; i < x.rank(); ++i)
    if (u.dim(i) > x.dim(i)) fail(fmt::format("update dim {} larger than operand", i));
  return Shape(x.dtype(), x.dims());
}

Shape Inferrer::select() {
  expect_operands(3);
  const Shape& p = array_operand(0);
  const Shape& t = array_operand(1);
  const Shape& f = array_operand(2);
  if (p.dtype() != DType::kPred) fail("predicate must be pred");
  if (!(t == f))
    fail(fmt::format("branches differ: {} vs {}", t.to_string(false), f.to_string(false)));
  if (!p.is_scalar() && p.dims() != t.dims())
    fail("predicate dims must match the branches (or be scalar)");
  return Shape(t.dtype(), t.dims());
}

Shape Inferrer::clamp() {
  expect_operands(3);
  const Shape& lo = array_operand(0);
  const Shape& x = array_operand(1);
  const Shape& hi = array_operand(2);
  for (const Shape* b : {&lo, &hi}) {
    check_same_dtype(*b, x);
    if (!b->is_scalar() && b->dims() != x.dims())
      fail("clamp bounds must be scalars or match the operand");
  }
  return Shape(x.dtype(), x.dims());
}

Shape Inferrer::reduce() {
  if (ops_.empty() || ops_.size() % 2 != 0) fail("needs N operands and N init values");
  size_t n = ops_.size() / 2;
  const Shape& first = array_operand(0);
  check_unique_dims(instr_.attrs.dimensions, first.rank(), "reduce dimension");
  std::vector<int64_t> out;
  for (int d = 0; d < first.rank(); ++d)
    if (std::find(instr_.attrs.dimensions.begin(), instr_.attrs.dimensions.end(), d) ==
        instr_.attrs.dimensions.end())
      out.push_back(first.dim(d));
  std::vector<Shape> results;
  for (size_t i = 0; i < n; ++i) {
    const Shape& s = array_operand(i);
    const Shape& init = array_operand(n + i);
    if (s.dims() != first.dims()) fail("reduce operands must have equal dims");
    if (!init.is_scalar()) fail("init values must be scalars");
    check_same_dtype(s, init);
    results.emplace_back(s.dtype(), out);
  }
  if (const Computation* body = callee(0)) {
    if (static_cast<int>(body->parameters().size()) != static_cast<int>(2 * n))
      fail(fmt::format("reducer '{}' must take {} parameters", body->name(), 2 * n));
  }
  return n == 1 ? results[0] : Shape::tuple(std::move(results));
}

// reduce-window(x_0..x_{n-1}, init_0..init_{n-1}): one windowed result per
// operand, a tuple when variadic.
Shape Inferrer::reduce_window() {
  if (ops_.empty() || ops_.size() % 2 != 0) fail("needs N operands and N init values");
  const size_t n = ops_.size() / 2;
  const Shape& first = array_operand(0);
  const auto& w = instr_.attrs.window;
  if (static_cast<int>(w.size()) != first.rank()) fail("window needs one entry per operand dim");
  std::vector<int64_t> out;
  for (int i = 0; i < first.rank(); ++i)
    out.push_back(window_output(first.dim(i), w[static_cast<size_t>(i)]));
  std::vector<Shape> results;
  for (size_t i = 0; i < n; ++i) {
    const Shape& x = array_operand(i);
    const Shape& init = array_operand(n + i);
    if (x.dims() != first.dims()) fail("reduce-window operands must have equal dims");
    if (!init.is_scalar()) fail("init values must be scalars");
    check_same_dtype(x, init);
    results.emplace_back(x.dtype(), out);
  }
  callee(0);
  return n == 1 ? results[0] : Shape::tuple(std::move(results));
}

Shape Inferrer::dot() {
  std::optional<Shape> sparse_logical[2];
  const auto sparsity = dot_sparsity(instr_.attrs);
  if (sparsity) {
    expect_operands(3);  // lhs, rhs, sparsity metadata
    const Shape& stored = array_operand(static_cast<size_t>(sparsity->operand));
    check_dim_index(sparsity->dim, stored.rank(), "sparse dimension");
    sparse_logical[static_cast<size_t>(sparsity->operand)] = sparsity->logical_shape(stored);
  } else {
    expect_operands(2);
  }
  const Shape& l = sparse_logical[0] ? *sparse_logical[0] : array_operand(0);
  const Shape& r = sparse_logical[1] ? *sparse_logical[1] : array_operand(1);
  const DotDims& d = instr_.attrs.dot;
  if (d.lhs_batch.size() != d.rhs_batch.size()) fail("lhs and rhs batch dims differ in count");
  if (d.lhs_contracting.size() != d.rhs_contracting.size())
    fail("lhs and rhs contracting dims differ in count");
  std::vector<int64_t> lhs_used = d.lhs_batch, rhs_used = d.rhs_batch;
  lhs_used.insert(lhs_used.end(), d.lhs_contracting.begin(), d.lhs_contracting.end());
  rhs_used.insert(rhs_used.end(), d.rhs_contracting.begin(), d.rhs_contracting.end());
  check_unique_dims(lhs_used, l.rank(), "lhs dot dimension");
  check_unique_dims(rhs_used, r.rank(), "rhs dot dimension");
  for (size_t i = 0; i < d.lhs_batch.size(); ++i)
    if (l.dim(static_cast<int>(d.lhs_batch[i])) != r.dim(static_cast<int>(d.rhs_batch[i])))
      fail(fmt::format("batch dim sizes differ: lhs {} vs rhs {}",
                       l.dim(static_cast<int>(d.lhs_batch[i])),
                       r.dim(static_cast<int>(d.rhs_batch[i]))));
  for (size_t i = 0; i < d.lhs_contracting.size(); ++i)
    if (l.dim(static_cast<int>(d.lhs_contracting[i])) !=
        r.dim(static_cast<int>(d.rhs_contracting[i])))
      fail(fmt::format("contracting dim sizes differ: lhs {} vs rhs {}",
                       l.dim(static_cast<int>(d.lhs_contracting[i])),
                       r.dim(static_cast<int>(d.rhs_contracting[i]))));
  // Output: batch dims, then lhs free dims, then rhs free dims (XLA DotGeneral).
  std::vector<int64_t> out;
  for (int64_t b : d.lhs_batch) out.push_back(l.dim(static_cast<int>(b)));
  for (int i = 0; i < l.rank(); ++i)
    if (std::find(lhs_used.begin(), lhs_used.end(), i) == lhs_used.end()) out.push_back(l.dim(i));
  for (int i = 0; i < r.rank(); ++i)
    if (std::find(rhs_used.begin(), rhs_used.end(), i) == rhs_used.end()) out.push_back(r.dim(i));
  return Shape(instr_.shape.is_array() ? instr_.shape.dtype() : l.dtype(), out);
}

Shape Inferrer::convolution() {
  expect_operands(2);
  const Shape& in = array_operand(0);
  const Shape& k = array_operand(1);
  const ConvDims& c = instr_.attrs.conv;
  const size_t spatial = c.input_spatial.size();
  if (c.kernel_spatial.size() != spatial || c.output_spatial.size() != spatial)
    fail("dim_labels must name the same number of spatial dims for input, kernel and output");
  if (in.rank() != static_cast<int>(spatial) + 2 || k.rank() != static_cast<int>(spatial) + 2)
    fail("input and kernel rank must be spatial dims + 2");
  if (instr_.attrs.window.size() != spatial) fail("window needs one entry per spatial dim");
  const int64_t fgc = instr_.attrs.feature_group_count, bgc = instr_.attrs.batch_group_count;
  if (fgc < 1 || bgc < 1) fail("group counts must be >= 1");
  const int64_t batch = in.dim(static_cast<int>(c.input_batch));
  const int64_t in_features = in.dim(static_cast<int>(c.input_feature));
  const int64_t k_in = k.dim(static_cast<int>(c.kernel_input_feature));
  const int64_t k_out = k.dim(static_cast<int>(c.kernel_output_feature));
  // XLA: input features = kernel input features * feature_group_count, and the
  // kernel's output features are divisible by both group counts.
  if (in_features % fgc != 0 || in_features / fgc != k_in)
    fail(fmt::format(
        "input features {} / feature_group_count {} must equal kernel input features {}",
        in_features, fgc, k_in));
  if (k_out % fgc != 0 || k_out % bgc != 0)
    fail("kernel output features must be divisible by the group counts");
  if (batch % bgc != 0) fail("batch must be divisible by batch_group_count");
  std::vector<int64_t> out(spatial + 2, 0);
  out[static_cast<size_t>(c.output_batch)] = batch / bgc;
  out[static_cast<size_t>(c.output_feature)] = k_out;
  for (size_t i = 0; i < spatial; ++i) {
    WindowDim w = instr_.attrs.window[i];
    int64_t ksize = k.dim(static_cast<int>(c.kernel_spatial[i]));
    if (w.size != ksize)
      fail(fmt::format("window size {} differs from kernel spatial size {}", w.size, ksize));
    out[static_cast<size_t>(c.output_spatial[i])] =
        window_output(in.dim(static_cast<int>(c.input_spatial[i])), w);
  }
  return Shape(instr_.shape.is_array() ? instr_.shape.dtype() : in.dtype(), out);
}

Shape Inferrer::gather() {
  expect_operands(2);
  const Shape& x = array_operand(0);
  const Shape& idx = array_operand(1);
  if (!is_integral(idx.dtype())) fail("start indices must be integers");
  const GatherDims& g = instr_.attrs.gather;
  const auto& sizes = instr_.attrs.gather_slice_sizes;
  if (static_cast<int>(sizes.size()) != x.rank())
    fail("slice_sizes needs one entry per operand dim");
  if (g.index_vector_dim < 0 || g.index_vector_dim > idx.rank())
    fail("index_vector_dim out of range");
  int64_t index_len =
      g.index_vector_dim == idx.rank() ? 1 : idx.dim(static_cast<int>(g.index_vector_dim));
  if (static_cast<int64_t>(g.start_index_map.size()) != index_len)
    fail(fmt::format("start_index_map has {} entries, index vectors have {}",
                     g.start_index_map.size(), index_len));
  check_unique_dims(g.start_index_map, x.rank(), "start_index_map entry");
  std::vector<int64_t> dropped = g.collapsed_slice_dims;
  dropped.insert(dropped.end(), g.operand_batching_dims.begin(), g.operand_batching_dims.end());
  check_unique_dims(dropped, x.rank(), "collapsed/batching operand dim");
  for (int64_t d : dropped)
    if (sizes[static_cast<size_t>(d)] > 1)
      fail(fmt::format("collapsed dim {} must have slice size <= 1", d));
  for (int i = 0; i < x.rank(); ++i)
    if (sizes[static_cast<size_t>(i)] < 0 || sizes[static_cast<size_t>(i)] > x.dim(i))
      fail(fmt::format("slice size {} invalid for operand dim {}", sizes[static_cast<size_t>(i)],
                       i));
  std::vector<int64_t> offset_sizes;
  for (int i = 0; i < x.rank(); ++i)
    if (std::find(dropped.begin(), dropped.end(), i) == dropped.end())
      offset_sizes.push_back(sizes[static_cast<size_t>(i)]);
  if (offset_sizes.size() != g.offset_dims.size())
    fail(fmt::format("offset_dims has {} entries, expected {}", g.offset_dims.size(),
                     offset_sizes.size()));
  std::vector<int64_t> batch_sizes;
  for (int i = 0; i < idx.rank(); ++i)
    if (i != g.index_vector_dim) batch_sizes.push_back(idx.dim(i));
  const int out_rank = static_cast<int>(offset_sizes.size() + batch_sizes.size());
  check_unique_dims(g.offset_dims, out_rank, "offset dim");
  std::vector<int64_t> out(static_cast<size_t>(out_rank));
  size_t next_offset = 0, next_batch = 0;
  std::vector<int64_t> sorted_offsets = g.offset_dims;
  std::sort(sorted_offsets.begin(), sorted_offsets.end());
  for (int i = 0; i < out_rank; ++i) {
    if (std::binary_search(sorted_offsets.begin(), sorted_offsets.end(), i))
      out[static_cast<size_t>(i)] = offset_sizes[next_offset++];
    else
      out[static_cast<size_t>(i)] = batch_sizes[next_batch++];
  }
  return Shape(x.dtype(), out);
}

// scatter(x_0..x_{n-1}, indices, u_0..u_{n-1}): one result per operand, a
// tuple when variadic; every operand (and update) has the first one's dims.
Shape Inferrer::scatter() {
  if (ops_.size() < 3 || ops_.size() % 2 == 0)
    fail(fmt::format("expected 2N+1 operands, got {}", ops_.size()));
  const size_t n = (ops_.size() - 1) / 2;
  const Shape& x = array_operand(0);
  const Shape& idx = array_operand(n);
  const Shape& upd = array_operand(n + 1);
  if (!is_integral(idx.dtype())) fail("scatter indices must be integers");
  std::vector<Shape> results;
  for (size_t i = 0; i < n; ++i) {
    const Shape& xi = array_operand(i);
    const Shape& ui = array_operand(n + 1 + i);
    if (xi.dims() != x.dims() || ui.dims() != upd.dims())
      fail("variadic scatter operands must have equal dims");
    check_same_dtype(xi, ui);
    results.emplace_back(xi.dtype(), xi.dims());
  }
  const ScatterDims& s = instr_.attrs.scatter;
  if (s.index_vector_dim < 0 || s.index_vector_dim > idx.rank())
    fail("index_vector_dim out of range");
  int64_t scatter_rank = idx.rank() - (s.index_vector_dim < idx.rank() ? 1 : 0);
  if (upd.rank() !=
      static_cast<int>(s.update_window_dims.size() + static_cast<size_t>(scatter_rank)))
    fail(fmt::format("updates rank {} must be update_window_dims ({}) + scatter dims ({})",
                     upd.rank(), s.update_window_dims.size(), scatter_rank));
  if (x.rank() != static_cast<int>(s.update_window_dims.size() + s.inserted_window_dims.size() +
                                   s.input_batching_dims.size()))
    fail("operand rank must equal update window dims + inserted window dims + batching dims");
  callee(0);
  return n == 1 ? results[0] : Shape::tuple(std::move(results));
}

Shape Inferrer::while_loop() {
  expect_operands(1);
  const Shape& init = *ops_[0];
  const Computation* cond = callee(0);
  const Computation* body = callee(1);
  if (cond && body) {
    auto check_param = [&](const Computation& c) {
      auto params = c.parameters();
      if (params.size() != 1 || !(c.instr(params[0]).shape == init))
        fail(fmt::format("'{}' must take one parameter of shape {}", c.name(),
                         init.to_string(false)));
    };
    check_param(*cond);
    check_param(*body);
    if (!(cond->root_instr().shape == Shape::scalar(DType::kPred)))
      fail(fmt::format("condition '{}' must return pred[]", cond->name()));
    if (!(body->root_instr().shape == init))
      fail(fmt::format("body '{}' must return the loop state shape {}", body->name(),
                       init.to_string(false)));
  }
  return init;
}

Shape Inferrer::call() {
  const Computation* c = callee(0);
  if (!c) return instr_.shape;
  auto params = c->parameters();
  if (params.size() != ops_.size())
    fail(fmt::format("'{}' takes {} parameters, called with {}", c->name(), params.size(),
                     ops_.size()));
  for (size_t i = 0; i < params.size(); ++i)
    if (!(c->instr(params[i]).shape == *ops_[i]))
      fail(fmt::format("argument {} has shape {}, '{}' expects {}", i, ops_[i]->to_string(false),
                       c->name(), c->instr(params[i]).shape.to_string(false)));
  return c->root_instr().shape;
}

// Collectives combined by XLA (all-reduce, all-gather, reduce-scatter
// combiners; tuple all-to-all) take several operands and return a tuple of
// the per-operand results.
Shape Inferrer::per_operand(Shape (Inferrer::*one)(const Shape&) const) const {
  if (ops_.empty()) fail("needs at least one operand");
  if (ops_.size() == 1) return (this->*one)(array_operand(0));
  std::vector<Shape> results;
  for (size_t i = 0; i < ops_.size(); ++i) results.push_back((this->*one)(array_operand(i)));
  return Shape::tuple(std::move(results));
}

Shape Inferrer::all_reduce_one(const Shape& x) const { return x; }

Shape Inferrer::all_gather_one(const Shape& x) const {
  int64_t d = collective_dim(x);
  std::vector<int64_t> out = x.dims();
  out[static_cast<size_t>(d)] *= group_size();
  return Shape(x.dtype(), out);
}

// Reduce-scatter and all-to-all split their dimension into group-size parts.
int64_t Inferrer::divisible_collective_dim(const Shape& x) const {
  int64_t d = collective_dim(x);
  int64_t g = group_size();
  if (x.dim(static_cast<int>(d)) % g != 0)
    fail(fmt::format("dim {} of size {} is not divisible by the group size {}", d,
                     x.dim(static_cast<int>(d)), g));
  return d;
}

Shape Inferrer::reduce_scatter_one(const Shape& x) const {
  int64_t d = divisible_collective_dim(x);
  std::vector<int64_t> out = x.dims();
  out[static_cast<size_t>(d)] /= group_size();
  return Shape(x.dtype(), out);
}

Shape Inferrer::all_to_all() {
  if (ops_.size() == 1) {
    const Shape& x = array_operand(0);
    divisible_collective_dim(x);
    return x;
  }
  // Tuple all-to-all: operand i is the chunk sent to group member i; no
  // split dimension, every chunk the same shape.
  if (ops_.empty()) fail("needs at least one operand");
  if (!instr_.attrs.dimensions.empty())
    fail("an all-to-all of several operands takes no dimensions={}");
  if (static_cast<int64_t>(ops_.size()) != group_size())
    fail(fmt::format("{} operands for a group of {}", ops_.size(), group_size()));
  std::vector<Shape> results;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!(array_operand(i) == array_operand(0)))
      fail("tuple all-to-all chunks must have equal shapes");
    results.push_back(*ops_[i]);
  }
  return Shape::tuple(std::move(results));
}

// bitcast-convert to a type of another width: wider -> narrower appends a
// minor dim of in/out bytes; narrower -> wider needs that minor dim and
// removes it (XLA ShapeInference::InferBitcastConvertShape).
Shape Inferrer::bitcast_convert() {
  expect_operands(1);
  const Shape& x = array_operand(0);
  const DType to = instr_.shape.is_array() ? instr_.shape.dtype() : x.dtype();
  const int64_t in_bytes = dtype_bytes(x.dtype()), out_bytes = dtype_bytes(to);
  if (in_bytes == 0 || out_bytes == 0 || is_complex(x.dtype()) != is_complex(to))
    fail(fmt::format("cannot bitcast-convert {} to {}", dtype_name(x.dtype()), dtype_name(to)));
  std::vector<int64_t> dims = x.dims();
  if (in_bytes > out_bytes) {
    dims.push_back(in_bytes / out_bytes);
  } else if (in_bytes < out_bytes) {
    if (dims.empty() || dims.back() != out_bytes / in_bytes)
      fail(fmt::format("bitcast-convert {} to {} needs a minor dim of {}, got {}",
                       dtype_name(x.dtype()), dtype_name(to), out_bytes / in_bytes,
                       x.to_string(false)),
           "the narrower operand's last dim holds the pieces of one wider element");
    dims.pop_back();
  }
  return Shape(to, dims);
}

// sort: every operand has the same dims; one result per operand (a tuple
// when variadic); the comparator takes two scalars per operand.
Shape Inferrer::sort() {
  if (ops_.empty()) fail("needs at least one operand");
  const Shape& first = array_operand(0);
  if (instr_.attrs.dimensions.size() != 1)
    fail("expected dimensions={d} naming the sort dimension");
  check_dim_index(instr_.attrs.dimensions[0], first.rank(), "sort dimension");
  std::vector<Shape> results;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Shape& s = array_operand(i);
    if (s.dims() != first.dims())
      fail(fmt::format("operand {} is {} but operand 0 is {}", i, s.to_string(false),
                       first.to_string(false)));
    results.push_back(s);
  }
  if (const Computation* cmp = callee(0)) {
    if (cmp->parameters().size() != 2 * ops_.size())
      fail(fmt::format("comparator '{}' must take {} parameters (two per operand)", cmp->name(),
                       2 * ops_.size()));
    if (!(cmp->root_instr().shape == Shape::scalar(DType::kPred)))
      fail(fmt::format("comparator '{}' must return pred[]", cmp->name()));
  }
  return ops_.size() == 1 ? results[0] : Shape::tuple(std::move(results));
}

// topk(x[..., n]), k -> (values[..., k], s32 indices[..., k]).
Shape Inferrer::topk() {
  expect_operands(1);
  const Shape& x = array_operand(0);
  if (x.rank() < 1) fail("operand must have rank >= 1");
  const int64_t k = instr_.attrs.k;
  if (k < 0 || k > x.dims().back())
    fail(fmt::format("k={} out of range for a last dim of {}", k, x.dims().back()));
  std::vector<int64_t> dims = x.dims();
  dims.back() = k;
  return Shape::tuple({Shape(x.dtype(), dims), Shape(DType::kS32, dims)});
}

// fft over the last fft_length.size() dims: FFT/IFFT complex -> complex;
// RFFT real -> complex, last dim n -> n/2+1; IRFFT complex -> real, last dim
// n/2+1 -> n (XLA ShapeInference::InferFftShape).
Shape Inferrer::fft() {
  expect_operands(1);
  const Shape& x = array_operand(0);
  const auto& len = instr_.attrs.fft_length;
  if (len.empty() || len.size() > 3) fail("fft_length needs 1 to 3 entries");
  if (static_cast<int>(len.size()) > x.rank())
    fail("fft_length has more entries than the operand has dims");
  const std::string& type = instr_.attrs.fft_type;
  const size_t first = static_cast<size_t>(x.rank()) - len.size();
  std::vector<int64_t> dims = x.dims();
  auto check_dims = [&](size_t upto, const char* what) {
    for (size_t i = 0; i < upto; ++i)
      if (dims[first + i] != len[i])
        fail(fmt::format("{} dim {} is {} but fft_length says {}", what, first + i, dims[first + i],
                         len[i]));
  };
  if (type == "FFT" || type == "IFFT") {
    if (!is_complex(x.dtype())) fail(fmt::format("{} needs a complex operand", type));
    check_dims(len.size(), "operand");
    return x;
  }
  if (type == "RFFT") {
    if (x.dtype() != DType::kF32 && x.dtype() != DType::kF64)
      fail("RFFT needs an f32 or f64 operand");
    check_dims(len.size(), "operand");
    dims.back() = len.back() / 2 + 1;
    return Shape(x.dtype() == DType::kF32 ? DType::kC64 : DType::kC128, dims);
  }
  if (type == "IRFFT") {
    if (!is_complex(x.dtype())) fail("IRFFT needs a complex operand");
    check_dims(len.size() - 1, "operand");
    if (dims.back() != len.back() / 2 + 1)
      fail(fmt::format("IRFFT operand's last dim is {} but fft_length {} needs {}", dims.back(),
                       len.back(), len.back() / 2 + 1));
    dims.back() = len.back();
    return Shape(real_part_type(x.dtype()), dims);
  }
  fail(fmt::format("unknown fft_type '{}'", type), "fft types: FFT, IFFT, RFFT, IRFFT");
}

// conditional(selector, arg_0, ..., arg_{n-1}): a pred selector picks
// between two branches, an s32 one among n; branch i takes arg i; every
// branch returns the same shape, the conditional's.
Shape Inferrer::conditional() {
  if (ops_.empty()) fail("needs a selector operand");
  const Shape& selector = array_operand(0);
  if (!selector.is_scalar() ||
      (selector.dtype() != DType::kPred && selector.dtype() != DType::kS32))
    fail(fmt::format("the selector must be pred[] or s32[], got {}", selector.to_string(false)));
  const size_t branches = instr_.called.size();
  if (branches == 0) fail("needs at least one branch computation");
  if (selector.dtype() == DType::kPred && branches != 2)
    fail("a pred selector needs exactly two branches");
  expect_operands(branches + 1);
  if (!ctx_.module) return instr_.shape;
  std::optional<Shape> result;
  for (size_t b = 0; b < branches; ++b) {
    const Computation* branch = callee(b);
    auto params = branch->parameters();
    if (params.size() != 1 || !(branch->instr(params[0]).shape == *ops_[b + 1]))
      fail(fmt::format("branch '{}' must take one parameter of shape {}", branch->name(),
                       ops_[b + 1]->to_string(false)));
    const Shape& root = branch->root_instr().shape;
    if (result && !(root == *result))
      fail(fmt::format("branch '{}' returns {} but branch 0 returns {}", branch->name(),
                       root.to_string(false), result->to_string(false)));
    result = root;
  }
  return *result;
}

// select-and-scatter(operand, source, init): source has the window's output
// dims over operand; the result is the operand's shape.
Shape Inferrer::select_and_scatter() {
  expect_operands(3);
  const Shape& x = array_operand(0);
  const Shape& src = array_operand(1);
  const Shape& init = array_operand(2);
  if (!init.is_scalar()) fail("init value must be a scalar");
  check_same_dtype(src, init);
  const auto& w = instr_.attrs.window;
  if (static_cast<int>(w.size()) != x.rank()) fail("window needs one entry per operand dim");
  std::vector<int64_t> windows;
  for (int i = 0; i < x.rank(); ++i)
    windows.push_back(window_output(x.dim(i), w[static_cast<size_t>(i)]));
  if (src.dims() != windows)
    fail(fmt::format("source is {} but the window over the operand gives [{}]",
                     src.to_string(false), fmt::join(windows, ",")));
  callee(0);
  callee(1);
  return Shape(x.dtype(), x.dims());
}

// map(x_0, ..., x_{n-1}), to_apply=f: same dims, f's scalar result type.
Shape Inferrer::map() {
  if (ops_.empty()) fail("needs at least one operand");
  const Shape& first = array_operand(0);
  for (size_t i = 1; i < ops_.size(); ++i)
    if (array_operand(i).dims() != first.dims()) fail("map operands must have equal dims");
  const Computation* f = callee(0);
  if (!f)
    return Shape(instr_.shape.is_array() ? instr_.shape.dtype() : first.dtype(), first.dims());
  if (f->parameters().size() != ops_.size())
    fail(fmt::format("'{}' takes {} parameters, map has {} operands", f->name(),
                     f->parameters().size(), ops_.size()));
  const Shape& root = f->root_instr().shape;
  if (!root.is_scalar()) fail(fmt::format("'{}' must return a scalar", f->name()));
  return Shape(root.dtype(), first.dims());
}

// fusion: the fused computation's root shape, its parameters the operands.
Shape Inferrer::fusion() {
  const Computation* f = callee(0);
  if (!f) return instr_.shape;
  if (f->parameters().size() != ops_.size())
    fail(fmt::format("fused computation '{}' takes {} parameters, fusion has {} operands",
                     f->name(), f->parameters().size(), ops_.size()));
  return f->root_instr().shape;
}

// batch-norm-training(x, scale, offset) -> (x, mean[f], var[f]);
// batch-norm-inference(x, scale, offset, mean, var) -> x;
// batch-norm-grad(x, scale, mean, var, grad_y) -> (grad_x, grad_scale[f], grad_offset[f]).
Shape Inferrer::batch_norm() {
  const Opcode op = instr_.opcode;
  expect_operands(op == Opcode::kBatchNormTraining ? 3 : 5);
  const Shape& x = array_operand(0);
  if (!is_floating(x.dtype())) fail("batch norm needs a floating-point operand");
  check_dim_index(instr_.attrs.feature_index, x.rank(), "feature_index");
  const Shape feature(x.dtype(), {x.dim(static_cast<int>(instr_.attrs.feature_index))});
  for (size_t i = 1; i < ops_.size(); ++i) {
    const bool full = op == Opcode::kBatchNormGrad && i == 4;
    const Shape& expected = full ? x : feature;
    if (!(array_operand(i) == expected))
      fail(fmt::format("operand {} is {}, expected {}", i, ops_[i]->to_string(false),
                       expected.to_string(false)));
  }
  if (op == Opcode::kBatchNormInference) return x;
  return Shape::tuple({x, feature, feature});
}

// triangular-solve(a[..., m, m], b[..., m, n] or [..., n, m] when !left_side) -> b.
Shape Inferrer::triangular_solve() {
  expect_operands(2);
  const Shape& a = array_operand(0);
  const Shape& b = array_operand(1);
  check_same_dtype(a, b);
  if (a.rank() < 2 || a.rank() != b.rank()) fail("a and b need equal rank >= 2");
  const int r = a.rank();
  if (a.dim(r - 1) != a.dim(r - 2))
    fail(fmt::format("a must be square in its minor dims, got {}", a.to_string(false)));
  const int64_t solved = instr_.attrs.left_side ? b.dim(r - 2) : b.dim(r - 1);
  if (solved != a.dim(r - 1))
    fail(fmt::format("b's {} dim is {} but a is {}x{}",
                     instr_.attrs.left_side ? "second-minor" : "minor", solved, a.dim(r - 1),
                     a.dim(r - 1)));
  for (int i = 0; i < r - 2; ++i)
    if (a.dim(i) != b.dim(i)) fail("a and b batch dims differ");
  return b;
}

Shape Inferrer::cholesky() {
  expect_operands(1);
  const Shape& a = array_operand(0);
  if (a.rank() < 2 || a.dim(a.rank() - 1) != a.dim(a.rank() - 2))
    fail(fmt::format("operand must be square in its minor dims, got {}", a.to_string(false)));
  return a;
}

// Element `index` of tuple operand `operand` (async done ops read their result there).
const Shape& Inferrer::tuple_operand_element(size_t operand, int64_t index) const {
  const Shape& t = *ops_[operand];
  if (!t.is_tuple() || index >= static_cast<int64_t>(t.tuple_shapes().size()))
    fail(fmt::format("operand {} must be a tuple of at least {} elements, got {}", operand,
                     index + 1, t.to_string(false)));
  return t.tuple_shape(static_cast<int>(index));
}

// A start op's written tuple begins (operands, result, ...): the operands
// (one operand alone for all-gather-start, copy-start and
// collective-permute-start; a tuple of them for async-start) and the
// result the wrapped op gives them. Context elements after these are not
// checked. copy-start is (destination, source, context).
Shape Inferrer::async_start() {
  const Shape& written = instr_.shape;
  if (!written.is_tuple() || written.tuple_shapes().size() < 2)
    fail(fmt::format("result must be a tuple (operands, result, ...), got {}",
                     written.to_string(false)));
  const Opcode op = instr_.opcode;
  Shape operands;
  if (op == Opcode::kAsyncStart || (op == Opcode::kAllGatherStart && ops_.size() > 1)) {
    std::vector<Shape> elems;
    for (const Shape* s : ops_) elems.push_back(*s);
    operands = Shape::tuple(std::move(elems));
  } else {
    expect_operands(1);
    operands = *ops_[0];
  }
  const size_t operands_at = op == Opcode::kCopyStart ? 1 : 0;
  if (!(written.tuple_shape(static_cast<int>(operands_at)) == operands))
    fail(fmt::format("tuple element {} must be the operands {}, got {}", operands_at,
                     operands.to_string(false),
                     written.tuple_shape(static_cast<int>(operands_at)).to_string(false)));
  // The result: what the wrapped op gives, inferred as if it ran alone.
  std::optional<Shape> result;
  if (op == Opcode::kCopyStart || op == Opcode::kCollectivePermuteStart) {
    result = *ops_[0];
  } else if (op == Opcode::kAllGatherStart || instr_.attrs.async_wrapped) {
    Instruction wrapped = instr_;
    wrapped.opcode =
        op == Opcode::kAllGatherStart ? Opcode::kAllGather : *instr_.attrs.async_wrapped;
    wrapped.attrs.async_wrapped.reset();
    wrapped.shape = written.tuple_shape(op == Opcode::kCopyStart ? 0 : 1);
    result = Inferrer(wrapped, ops_, ctx_).run();
  } else if (const Computation* body = callee(0)) {
    result = body->root_instr().shape;
  }
  const int result_at = op == Opcode::kCopyStart ? 0 : 1;
  if (result && !(written.tuple_shape(result_at) == *result))
    fail(fmt::format("tuple element {} must be the result {}, got {}", result_at,
                     result->to_string(false), written.tuple_shape(result_at).to_string(false)));
  return written;
}

Shape Inferrer::run() {
  const Opcode op = instr_.opcode;
  // XLA copies whole tuples too (the copy of a tuple is the same tuple).
  if (op == Opcode::kCopy && ops_.size() == 1 && ops_[0]->is_tuple()) return *ops_[0];
  if (is_elementwise_unary(op)) return elementwise_unary();
  if (is_elementwise_binary(op)) return elementwise_binary();
  switch (op) {
    case Opcode::kParameter:
      expect_operands(0);
      return instr_.shape;
    case Opcode::kConstant:
      expect_operands(0);
      if (instr_.attrs.literal && !(instr_.attrs.literal->shape() == instr_.shape))
        fail(fmt::format("literal of shape {} does not match {}",
                         instr_.attrs.literal->shape().to_string(false),
                         instr_.shape.to_string(false)));
      return instr_.shape;
    case Opcode::kIota:
      expect_operands(0);
      if (!instr_.shape.is_array()) fail("iota must produce an array");
      check_dim_index(instr_.attrs.iota_dimension, instr_.shape.rank(), "iota_dimension");
      return instr_.shape;
    case Opcode::kBroadcast:
      return broadcast();
    case Opcode::kReshape: {
      expect_operands(1);
      const Shape& x = array_operand(0);
      Shape out(x.dtype(), instr_.shape.dims());
      if (out.num_elements() != x.num_elements())
        fail(fmt::format("cannot reshape {} to {}: element counts differ", x.to_string(false),
                         out.to_string(false)));
      return out;
    }
    case Opcode::kTranspose: {
      expect_operands(1);
      const Shape& x = array_operand(0);
      const auto& perm = instr_.attrs.dimensions;
      if (static_cast<int>(perm.size()) != x.rank())
        fail("permutation must have one entry per dim");
      check_unique_dims(perm, x.rank(), "permutation entry");
      std::vector<int64_t> out;
      for (int64_t p : perm) out.push_back(x.dim(static_cast<int>(p)));
      return Shape(x.dtype(), out);
    }
    case Opcode::kSlice:
      return slice();
    case Opcode::kPad:
      return pad();
    case Opcode::kConcatenate:
      return concatenate();
    case Opcode::kReverse: {
      expect_operands(1);
      const Shape& x = array_operand(0);
      check_unique_dims(instr_.attrs.dimensions, x.rank(), "reverse dimension");
      return x;
    }
    case Opcode::kDynamicSlice:
      return dynamic_slice();
    case Opcode::kDynamicUpdateSlice:
      return dynamic_update_slice();
    case Opcode::kSelect:
      return select();
    case Opcode::kClamp:
      return clamp();
    case Opcode::kReduce:
      return reduce();
    case Opcode::kReduceWindow:
      return reduce_window();
    case Opcode::kDot:
      return dot();
    case Opcode::kConvolution:
      return convolution();
    case Opcode::kGather:
      return gather();
    case Opcode::kScatter:
      return scatter();
    case Opcode::kWhile:
      return while_loop();
    case Opcode::kCall:
      return call();
    case Opcode::kTuple: {
      std::vector<Shape> elems;
      for (const Shape* s : ops_) elems.push_back(*s);
      return Shape::tuple(std::move(elems));
    }
    case Opcode::kGetTupleElement: {
      expect_operands(1);
      const Shape& t = *ops_[0];
      if (!t.is_tuple()) fail("operand must be a tuple");
      int64_t i = instr_.attrs.tuple_index;
      if (i < 0 || i >= static_cast<int64_t>(t.tuple_shapes().size()))
        fail(fmt::format("index {} out of range for a tuple of {}", i, t.tuple_shapes().size()));
      return t.tuple_shape(static_cast<int>(i));
    }
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
      expect_operands(0);
      return Shape::scalar(DType::kU32);
    case Opcode::kAllReduce:
      callee(0);
      return per_operand(&Inferrer::all_reduce_one);
    case Opcode::kAllGather:
      return per_operand(&Inferrer::all_gather_one);
    case Opcode::kReduceScatter:
      callee(0);
      return per_operand(&Inferrer::reduce_scatter_one);
    case Opcode::kAllToAll:
      return all_to_all();
    case Opcode::kCollectivePermute:
      expect_operands(1);
      return array_operand(0);
    case Opcode::kCustomCall:
      return instr_.shape;
    case Opcode::kBitcast:
      // A layout-changing reinterpretation: the written shape, same bytes.
      expect_operands(1);
      if (!instr_.shape.is_array() || instr_.shape.byte_size() != array_operand(0).byte_size())
        fail(fmt::format("bitcast from {} to {} changes the byte size", ops_[0]->to_string(false),
                         instr_.shape.to_string(false)));
      return instr_.shape;
    case Opcode::kBitcastConvert:
      return bitcast_convert();
    case Opcode::kStochasticConvert: {
      expect_operands(2);
      const Shape& x = array_operand(0);
      const Shape& bits = array_operand(1);
      if (bits.dims() != x.dims() || !is_integral(bits.dtype()) || is_signed_integral(bits.dtype()))
        fail("random bits must be unsigned integers with the operand's dims");
      return Shape(instr_.shape.is_array() ? instr_.shape.dtype() : x.dtype(), x.dims());
    }
    case Opcode::kOptimizationBarrier:
      expect_operands(1);
      return *ops_[0];
    case Opcode::kSort:
      return sort();
    case Opcode::kTopK:
      return topk();
    case Opcode::kFft:
      return fft();
    case Opcode::kRng: {
      // rng(a, b): scalar parameters of the result's element type.
      expect_operands(2);
      for (size_t i = 0; i < 2; ++i)
        if (!array_operand(i).is_scalar() ||
            (instr_.shape.is_array() && ops_[i]->dtype() != instr_.shape.dtype()))
          fail(fmt::format("operand {} must be a scalar of the result's element type", i));
      if (instr_.attrs.rng_distribution.empty())
        fail("needs distribution=rng_uniform or rng_normal");
      return instr_.shape;
    }
    case Opcode::kRngGetAndUpdateState:
    case Opcode::kDynamicReshape:
      return instr_.shape;
    // The tuples of these hold state, context and buffer elements that vary
    // with the XLA version: the written shape is taken, and only its stable
    // elements are checked.
    case Opcode::kRngBitGenerator:
      // (new state, bits): the state keeps the operand's shape. An array
      // (the bits alone) is accepted too, as XLA's own tests write it.
      expect_operands(1);
      if (instr_.shape.is_tuple() &&
          (instr_.shape.tuple_shapes().size() != 2 || !(instr_.shape.tuple_shape(0) == *ops_[0])))
        fail(fmt::format("result must be (state {}, bits), got {}", ops_[0]->to_string(false),
                         instr_.shape.to_string(false)));
      return instr_.shape;
    case Opcode::kInfeed:
    case Opcode::kRecv: {
      // infeed: (data, token[]); recv: (data, u32[] context, token[]).
      expect_operands(1);
      if (!(*ops_[0] == Shape::scalar(DType::kToken))) fail("the operand must be a token");
      const size_t n = instr_.opcode == Opcode::kInfeed ? 2 : 3;
      if (!instr_.shape.is_tuple() || instr_.shape.tuple_shapes().size() != n ||
          !(instr_.shape.tuple_shapes().back() == Shape::scalar(DType::kToken)))
        fail(fmt::format("result must be a {}-tuple ending in token[], got {}", n,
                         instr_.shape.to_string(false)));
      return instr_.shape;
    }
    case Opcode::kCopyStart:
    case Opcode::kAllGatherStart:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kAsyncStart:
      return async_start();
    case Opcode::kConditional:
      return conditional();
    case Opcode::kSelectAndScatter:
      return select_and_scatter();
    case Opcode::kMap:
      return map();
    case Opcode::kFusion:
      return fusion();
    case Opcode::kAfterAll:
      for (size_t i = 0; i < ops_.size(); ++i)
        if (!(*ops_[i] == Shape::scalar(DType::kToken)))
          fail(fmt::format("operand {} must be a token", i));
      return Shape::scalar(DType::kToken);
    case Opcode::kAddDependency:
      expect_operands(2);
      return *ops_[0];
    case Opcode::kDomain:
      expect_operands(1);
      return *ops_[0];
    case Opcode::kGetDimensionSize: {
      expect_operands(1);
      const Shape& x = array_operand(0);
      if (instr_.attrs.dimensions.size() != 1) fail("expected dimensions={d}");
      check_dim_index(instr_.attrs.dimensions[0], x.rank(), "dimension");
      return Shape::scalar(DType::kS32);
    }
    case Opcode::kSetDimensionSize: {
      expect_operands(2);
      const Shape& x = array_operand(0);
      if (instr_.attrs.dimensions.size() != 1) fail("expected dimensions={d}");
      check_dim_index(instr_.attrs.dimensions[0], x.rank(), "dimension");
      check_scalar_int(1);
      return x;
    }
    case Opcode::kCholesky:
      return cholesky();
    case Opcode::kTriangularSolve:
      return triangular_solve();
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad:
      return batch_norm();
    case Opcode::kOutfeed:
      expect_operands(2);
      return Shape::scalar(DType::kToken);
    case Opcode::kSend: {
      // send(data, token) -> (data, u32[] context, token[]).
      expect_operands(2);
      return Shape::tuple({*ops_[0], Shape::scalar(DType::kU32), Shape::scalar(DType::kToken)});
    }
    case Opcode::kSendDone:
      expect_operands(1);
      return Shape::scalar(DType::kToken);
    case Opcode::kRecvDone:
      // recv-done((data, u32[], token[])) -> (data, token[]).
      expect_operands(1);
      return Shape::tuple({tuple_operand_element(0, 0), Shape::scalar(DType::kToken)});
    case Opcode::kCopyDone:
      expect_operands(1);
      return tuple_operand_element(0, 0);
    case Opcode::kAllReduceStart:
      callee(0);
      return per_operand(&Inferrer::all_reduce_one);
    case Opcode::kAllReduceDone:
    case Opcode::kAsyncUpdate:
      expect_operands(1);
      return *ops_[0];
    case Opcode::kAllGatherDone:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kAsyncDone:
      // The start's tuple holds (operands, result, contexts...).
      expect_operands(1);
      return tuple_operand_element(0, 1);
    case Opcode::kRaggedAllToAll:
      // (input, output, input_offsets, send_sizes, output_offsets, recv_sizes) -> output.
      expect_operands(6);
      return array_operand(1);
    case Opcode::kCollectiveBroadcast:
      expect_operands(1);
      return *ops_[0];
    default:
      break;
  }
  fail("no shape rule for this opcode");
}

}  // namespace

std::optional<DotSparsity> dot_sparsity(const Attributes& attrs) {
  for (const auto& [key, value] : attrs.extra) {
    if (key != "sparsity") continue;
    long long dim = 0, n = 0, m = 0;
    char side = 0;
    if (std::sscanf(value.c_str(), "%c.%lld@%lld:%lld", &side, &dim, &n, &m) != 4 || n < 1 ||
        m < n || (side != 'L' && side != 'R'))
      return std::nullopt;
    return DotSparsity{side == 'R' ? 1 : 0, dim, n, m};
  }
  return std::nullopt;
}

int DotSparsity::index_bits() const {
  int bits = 1;
  while ((int64_t{1} << bits) < m) ++bits;
  return bits;
}

int64_t DotSparsity::values_per_element(DType meta) const {
  return std::max<int64_t>(1, integral_bits(meta) / index_bits());
}

Shape DotSparsity::logical_shape(const Shape& stored) const {
  std::vector<int64_t> dims = stored.dims();
  dims[static_cast<size_t>(dim)] = dims[static_cast<size_t>(dim)] * m / n;
  return Shape(stored.dtype(), dims);
}

Shape infer_shape(const Instruction& instr, const std::vector<const Shape*>& operand_shapes,
                  const ShapeInferenceContext& context) {
  return Inferrer(instr, operand_shapes, context).run();
}

}  // namespace podsim::compiler
