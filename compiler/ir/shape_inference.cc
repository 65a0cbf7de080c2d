// Shape inference for every opcode, following XLA's ShapeInference rules
// (xla/service/shape_inference.cc semantics, re-derived from the operation
// semantics documentation: output sizes of slices, pads, windows, dots,
// convolutions and gathers are the standard formulas quoted inline).
#include "compiler/ir/shape_inference.h"

#include <algorithm>
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
                    fmt::format("{} '{}': {}", opcode_name(instr_.opcode), instr_.name, what), hint);
  }
  void expect_operands(size_t n) const {
    if (ops_.size() != n)
      fail(fmt::format("expected {} operand(s), got {}", n, ops_.size()));
  }
  const Shape& array_operand(size_t i) const {
    const Shape& s = *ops_[i];
    if (!s.is_array()) fail(fmt::format("operand {} must be an array, got {}", i, s.to_string(false)));
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
      fail(fmt::format("element types differ: {} vs {}", dtype_name(a.dtype()), dtype_name(b.dtype())));
  }
  const Computation* callee(size_t i) const {
    if (instr_.called.size() <= i) fail("missing called computation");
    if (!ctx_.module) return nullptr;
    CompId id = instr_.called[i];
    if (id < 0 || id >= ctx_.module->computation_count()) fail("called computation id out of range");
    return &ctx_.module->computation(id);
  }
  int64_t group_size() const {
    int64_t devices = ctx_.module ? std::max(ctx_.num_devices, ctx_.module->num_partitions()) : ctx_.num_devices;
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
  Shape all_gather();
  int64_t divisible_collective_dim(const Shape& x) const;
  Shape reduce_scatter();
  Shape all_to_all();

  const Instruction& instr_;
  const std::vector<const Shape*>& ops_;
  const ShapeInferenceContext& ctx_;
};

Shape Inferrer::elementwise_unary() {
  expect_operands(1);
  const Shape& x = array_operand(0);
  if (instr_.opcode == Opcode::kConvert) return Shape(instr_.shape.dtype(), x.dims());
  if (instr_.opcode == Opcode::kNot && !(x.dtype() == DType::kPred || is_integral(x.dtype())))
    fail("not needs pred or integer operands");
  return Shape(x.dtype(), x.dims());
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
  return Shape(a.dtype(), a.dims());
}

Shape Inferrer::broadcast() {
  expect_operands(1);
  const Shape& x = array_operand(0);
  const auto& out = instr_.shape.dims();
  const auto& map = instr_.attrs.dimensions;
  if (static_cast<int>(map.size()) != x.rank())
    fail(fmt::format("dimensions={{{}}} must have one entry per operand dim ({})", fmt::join(map, ","), x.rank()));
  check_unique_dims(map, static_cast<int>(out.size()), "broadcast dimension");
  for (int i = 0; i < x.rank(); ++i)
    if (out[static_cast<size_t>(map[static_cast<size_t>(i)])] != x.dim(i))
      fail(fmt::format("operand dim {} (size {}) maps to output dim {} of size {}", i, x.dim(i),
                       map[static_cast<size_t>(i)], out[static_cast<size_t>(map[static_cast<size_t>(i)])]));
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
      fail(fmt::format("slice [{}:{}:{}] invalid for dim {} of size {}", s.start, s.limit, s.stride, i, x.dim(i)));
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
  if (static_cast<int>(sizes.size()) != x.rank()) fail("dynamic_slice_sizes needs one size per dim");
  for (int i = 0; i < x.rank(); ++i)
    if (sizes[static_cast<size_t>(i)] < 0 || sizes[static_cast<size_t>(i)] > x.dim(i))
      fail(fmt::format("slice size {} invalid for dim {} of size {}", sizes[static_cast<size_t>(i)], i, x.dim(i)));
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
  if (!(t == f)) fail(fmt::format("branches differ: {} vs {}", t.to_string(false), f.to_string(false)));
  if (!p.is_scalar() && p.dims() != t.dims()) fail("predicate dims must match the branches (or be scalar)");
  return Shape(t.dtype(), t.dims());
}

Shape Inferrer::clamp() {
  expect_operands(3);
  const Shape& lo = array_operand(0);
  const Shape& x = array_operand(1);
  const Shape& hi = array_operand(2);
  for (const Shape* b : {&lo, &hi}) {
    check_same_dtype(*b, x);
    if (!b->is_scalar() && b->dims() != x.dims()) fail("clamp bounds must be scalars or match the operand");
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

Shape Inferrer::reduce_window() {
  expect_operands(2);
  const Shape& x = array_operand(0);
  const Shape& init = array_operand(1);
  if (!init.is_scalar()) fail("init value must be a scalar");
  check_same_dtype(x, init);
  const auto& w = instr_.attrs.window;
  if (static_cast<int>(w.size()) != x.rank()) fail("window needs one entry per operand dim");
  std::vector<int64_t> out;
  for (int i = 0; i < x.rank(); ++i) out.push_back(window_output(x.dim(i), w[static_cast<size_t>(i)]));
  callee(0);
  return Shape(x.dtype(), out);
}

Shape Inferrer::dot() {
  expect_operands(2);
  const Shape& l = array_operand(0);
  const Shape& r = array_operand(1);
  const DotDims& d = instr_.attrs.dot;
  if (d.lhs_batch.size() != d.rhs_batch.size()) fail("lhs and rhs batch dims differ in count");
  if (d.lhs_contracting.size() != d.rhs_contracting.size()) fail("lhs and rhs contracting dims differ in count");
  std::vector<int64_t> lhs_used = d.lhs_batch, rhs_used = d.rhs_batch;
  lhs_used.insert(lhs_used.end(), d.lhs_contracting.begin(), d.lhs_contracting.end());
  rhs_used.insert(rhs_used.end(), d.rhs_contracting.begin(), d.rhs_contracting.end());
  check_unique_dims(lhs_used, l.rank(), "lhs dot dimension");
  check_unique_dims(rhs_used, r.rank(), "rhs dot dimension");
  for (size_t i = 0; i < d.lhs_batch.size(); ++i)
    if (l.dim(static_cast<int>(d.lhs_batch[i])) != r.dim(static_cast<int>(d.rhs_batch[i])))
      fail(fmt::format("batch dim sizes differ: lhs {} vs rhs {}", l.dim(static_cast<int>(d.lhs_batch[i])),
                       r.dim(static_cast<int>(d.rhs_batch[i]))));
  for (size_t i = 0; i < d.lhs_contracting.size(); ++i)
    if (l.dim(static_cast<int>(d.lhs_contracting[i])) != r.dim(static_cast<int>(d.rhs_contracting[i])))
      fail(fmt::format("contracting dim sizes differ: lhs {} vs rhs {}",
                       l.dim(static_cast<int>(d.lhs_contracting[i])), r.dim(static_cast<int>(d.rhs_contracting[i]))));
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
    fail(fmt::format("input features {} / feature_group_count {} must equal kernel input features {}",
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
    out[static_cast<size_t>(c.output_spatial[i])] = window_output(in.dim(static_cast<int>(c.input_spatial[i])), w);
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
  if (static_cast<int>(sizes.size()) != x.rank()) fail("slice_sizes needs one entry per operand dim");
  if (g.index_vector_dim < 0 || g.index_vector_dim > idx.rank()) fail("index_vector_dim out of range");
  int64_t index_len = g.index_vector_dim == idx.rank() ? 1 : idx.dim(static_cast<int>(g.index_vector_dim));
  if (static_cast<int64_t>(g.start_index_map.size()) != index_len)
    fail(fmt::format("start_index_map has {} entries, index vectors have {}", g.start_index_map.size(), index_len));
  check_unique_dims(g.start_index_map, x.rank(), "start_index_map entry");
  std::vector<int64_t> dropped = g.collapsed_slice_dims;
  dropped.insert(dropped.end(), g.operand_batching_dims.begin(), g.operand_batching_dims.end());
  check_unique_dims(dropped, x.rank(), "collapsed/batching operand dim");
  for (int64_t d : dropped)
    if (sizes[static_cast<size_t>(d)] > 1) fail(fmt::format("collapsed dim {} must have slice size <= 1", d));
  for (int i = 0; i < x.rank(); ++i)
    if (sizes[static_cast<size_t>(i)] < 0 || sizes[static_cast<size_t>(i)] > x.dim(i))
      fail(fmt::format("slice size {} invalid for operand dim {}", sizes[static_cast<size_t>(i)], i));
  std::vector<int64_t> offset_sizes;
  for (int i = 0; i < x.rank(); ++i)
    if (std::find(dropped.begin(), dropped.end(), i) == dropped.end())
      offset_sizes.push_back(sizes[static_cast<size_t>(i)]);
  if (offset_sizes.size() != g.offset_dims.size())
    fail(fmt::format("offset_dims has {} entries, expected {}", g.offset_dims.size(), offset_sizes.size()));
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

Shape Inferrer::scatter() {
  expect_operands(3);
  const Shape& x = array_operand(0);
  const Shape& idx = array_operand(1);
  const Shape& upd = array_operand(2);
  if (!is_integral(idx.dtype())) fail("scatter indices must be integers");
  check_same_dtype(x, upd);
  const ScatterDims& s = instr_.attrs.scatter;
  if (s.index_vector_dim < 0 || s.index_vector_dim > idx.rank()) fail("index_vector_dim out of range");
  int64_t scatter_rank = idx.rank() - (s.index_vector_dim < idx.rank() ? 1 : 0);
  if (upd.rank() != static_cast<int>(s.update_window_dims.size() + static_cast<size_t>(scatter_rank)))
    fail(fmt::format("updates rank {} must be update_window_dims ({}) + scatter dims ({})", upd.rank(),
                     s.update_window_dims.size(), scatter_rank));
  if (x.rank() != static_cast<int>(s.update_window_dims.size() + s.inserted_window_dims.size() +
                                   s.input_batching_dims.size()))
    fail("operand rank must equal update window dims + inserted window dims + batching dims");
  callee(0);
  return Shape(x.dtype(), x.dims());
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
        fail(fmt::format("'{}' must take one parameter of shape {}", c.name(), init.to_string(false)));
    };
    check_param(*cond);
    check_param(*body);
    if (!(cond->root_instr().shape == Shape::scalar(DType::kPred)))
      fail(fmt::format("condition '{}' must return pred[]", cond->name()));
    if (!(body->root_instr().shape == init))
      fail(fmt::format("body '{}' must return the loop state shape {}", body->name(), init.to_string(false)));
  }
  return init;
}

Shape Inferrer::call() {
  const Computation* c = callee(0);
  if (!c) return instr_.shape;
  auto params = c->parameters();
  if (params.size() != ops_.size())
    fail(fmt::format("'{}' takes {} parameters, called with {}", c->name(), params.size(), ops_.size()));
  for (size_t i = 0; i < params.size(); ++i)
    if (!(c->instr(params[i]).shape == *ops_[i]))
      fail(fmt::format("argument {} has shape {}, '{}' expects {}", i, ops_[i]->to_string(false), c->name(),
                       c->instr(params[i]).shape.to_string(false)));
  return c->root_instr().shape;
}

Shape Inferrer::all_gather() {
  expect_operands(1);
  const Shape& x = array_operand(0);
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
    fail(fmt::format("dim {} of size {} is not divisible by the group size {}", d, x.dim(static_cast<int>(d)), g));
  return d;
}

Shape Inferrer::reduce_scatter() {
  expect_operands(1);
  const Shape& x = array_operand(0);
  int64_t d = divisible_collective_dim(x);
  std::vector<int64_t> out = x.dims();
  out[static_cast<size_t>(d)] /= group_size();
  return Shape(x.dtype(), out);
}

Shape Inferrer::all_to_all() {
  expect_operands(1);
  const Shape& x = array_operand(0);
  divisible_collective_dim(x);
  return x;
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
        fail(fmt::format("literal of shape {} does not match {}", instr_.attrs.literal->shape().to_string(false),
                         instr_.shape.to_string(false)));
      return instr_.shape;
    case Opcode::kIota:
      expect_operands(0);
      if (!instr_.shape.is_array()) fail("iota must produce an array");
      check_dim_index(instr_.attrs.iota_dimension, instr_.shape.rank(), "iota_dimension");
      return instr_.shape;
    case Opcode::kBroadcast: return broadcast();
    case Opcode::kReshape: {
      expect_operands(1);
      const Shape& x = array_operand(0);
      Shape out(x.dtype(), instr_.shape.dims());
      if (out.num_elements() != x.num_elements())
        fail(fmt::format("cannot reshape {} to {}: element counts differ", x.to_string(false), out.to_string(false)));
      return out;
    }
    case Opcode::kTranspose: {
      expect_operands(1);
      const Shape& x = array_operand(0);
      const auto& perm = instr_.attrs.dimensions;
      if (static_cast<int>(perm.size()) != x.rank()) fail("permutation must have one entry per dim");
      check_unique_dims(perm, x.rank(), "permutation entry");
      std::vector<int64_t> out;
      for (int64_t p : perm) out.push_back(x.dim(static_cast<int>(p)));
      return Shape(x.dtype(), out);
    }
    case Opcode::kSlice: return slice();
    case Opcode::kPad: return pad();
    case Opcode::kConcatenate: return concatenate();
    case Opcode::kReverse: {
      expect_operands(1);
      const Shape& x = array_operand(0);
      check_unique_dims(instr_.attrs.dimensions, x.rank(), "reverse dimension");
      return x;
    }
    case Opcode::kDynamicSlice: return dynamic_slice();
    case Opcode::kDynamicUpdateSlice: return dynamic_update_slice();
    case Opcode::kSelect: return select();
    case Opcode::kClamp: return clamp();
    case Opcode::kReduce: return reduce();
    case Opcode::kReduceWindow: return reduce_window();
    case Opcode::kDot: return dot();
    case Opcode::kConvolution: return convolution();
    case Opcode::kGather: return gather();
    case Opcode::kScatter: return scatter();
    case Opcode::kWhile: return while_loop();
    case Opcode::kCall: return call();
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
      expect_operands(1);
      callee(0);
      return array_operand(0);
    case Opcode::kAllGather: return all_gather();
    case Opcode::kReduceScatter: callee(0); return reduce_scatter();
    case Opcode::kAllToAll: return all_to_all();
    case Opcode::kCollectivePermute:
      expect_operands(1);
      return array_operand(0);
    case Opcode::kCustomCall: return instr_.shape;
    default: break;
  }
  fail("no shape rule for this opcode");
}

}  // namespace

Shape infer_shape(const Instruction& instr, const std::vector<const Shape*>& operand_shapes,
                  const ShapeInferenceContext& context) {
  return Inferrer(instr, operand_shapes, context).run();
}

}  // namespace podsim::compiler
