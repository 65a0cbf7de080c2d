// Vector-Jacobian products of the array ops (see vjp_rules.h). Notation in
// comments: x, y operands, z the result, g = dL/dz.
// Non-smooth points: max/min send the whole adjoint to the first operand on
// ties (x >= y for max, x <= y for min); a max/min reduce splits it evenly
// among tied elements; abs has derivative 0 at 0 (sign); sign/floor/ceil
// have derivative 0. Gather assumes in-range indices (gather clamps, the
// scatter-add of its adjoint skips out-of-range windows).
#include "compiler/training/vjp_rules.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "compiler/ir/flash_attention.h"

namespace podsim::compiler::training {

namespace {

[[noreturn]] void unsupported(const Instruction& in, const std::string& why = "") {
  throw UserError(
      in.location,
      fmt::format("autodiff: cannot differentiate '{}' ({}){}", in.name, opcode_name(in.opcode),
                  why.empty() ? "" : ": " + why),
      "training graphs may use dot, elementwise, broadcast, reduce (add/max/min), reshape, "
      "transpose, slice/pad/concatenate, gather/scatter, select, convert and counted while loops");
}

struct Rule {
  VjpContext& ctx;
  const Instruction& in;
  InstrId id;
  InstrId g;
  std::vector<OperandAdjoint> out;

  ComputationBuilder& b() { return ctx.b; }
  bool wants(int operand) const { return ctx.active[static_cast<size_t>(in.operand(operand))]; }
  InstrId x(int operand) { return ctx.residuals.get(in.operand(operand)); }
  InstrId z() { return ctx.residuals.get(id); }
  const Shape& operand_shape(int operand) const {
    return ctx.source.instr(in.operand(operand)).shape;
  }
  void give(int operand, InstrId adjoint) {
    if (wants(operand)) out.push_back({operand, adjoint});
  }
  InstrId mul(InstrId a, InstrId c) { return b().binary(Opcode::kMultiply, a, c); }
  InstrId div(InstrId a, InstrId c) { return b().binary(Opcode::kDivide, a, c); }
  InstrId sub(InstrId a, InstrId c) { return b().binary(Opcode::kSubtract, a, c); }
  InstrId add(InstrId a, InstrId c) { return b().binary(Opcode::kAdd, a, c); }
  InstrId neg(InstrId a) { return b().unary(Opcode::kNegate, a); }
  InstrId fill(double v) { return filled(b(), in.shape, v); }
  InstrId zeros_like_operand(int operand) { return filled(b(), operand_shape(operand), 0.0); }

  void unary();
  void binary();
  void broadcast();
  void slice();
  void pad();
  void concatenate();
  void reduce();
  void dot();
  void gather();
  void scatter();
};

void Rule::unary() {
  switch (in.opcode) {
    case Opcode::kNegate:
      give(0, neg(g));
      return;
    case Opcode::kCopy:
      give(0, g);
      return;
    case Opcode::kExp:
      give(0, mul(g, z()));
      return;  // dz/dx = e^x = z
    case Opcode::kExpm1:
      give(0, mul(g, add(z(), fill(1))));
      return;  // e^x = z + 1
    case Opcode::kLog:
      give(0, div(g, x(0)));
      return;  // 1/x
    case Opcode::kLog1p:
      give(0, div(g, add(x(0), fill(1))));
      return;              // 1/(1+x)
    case Opcode::kTanh: {  // 1 - z^2
      InstrId zz = z();
      give(0, mul(g, sub(fill(1), mul(zz, zz))));
      return;
    }
    case Opcode::kSqrt:
      give(0, div(g, mul(z(), fill(2))));
      return;             // 1/(2 sqrt x)
    case Opcode::kRsqrt:  // -x^-3/2 / 2 = -z/(2x)
      give(0, mul(g, div(mul(z(), fill(-0.5)), x(0))));
      return;
    case Opcode::kAbs:
      give(0, mul(g, b().unary(Opcode::kSign, x(0))));
      return;
    case Opcode::kSign:
    case Opcode::kFloor:
    case Opcode::kCeil:
      return;  // derivative 0 almost everywhere
    case Opcode::kCos:
      give(0, neg(mul(g, b().unary(Opcode::kSin, x(0)))));
      return;
    case Opcode::kSin:
      give(0, mul(g, b().unary(Opcode::kCos, x(0))));
      return;
    case Opcode::kLogistic: {  // z (1 - z)
      InstrId zz = z();
      give(0, mul(g, mul(zz, sub(fill(1), zz))));
      return;
    }
    case Opcode::kConvert:
      if (is_floating(operand_shape(0).dtype())) give(0, b().convert(g, operand_shape(0).dtype()));
      return;
    default:
      unsupported(in);
  }
}

void Rule::binary() {
  switch (in.opcode) {
    case Opcode::kAdd:
      give(0, g);
      give(1, g);
      return;
    case Opcode::kSubtract:
      give(0, g);
      if (wants(1)) give(1, neg(g));
      return;
    case Opcode::kMultiply:
      if (wants(0)) give(0, mul(g, x(1)));
      if (wants(1)) give(1, mul(g, x(0)));
      return;
    case Opcode::kDivide: {  // z = x / y: dx = g / y, dy = -g z / y
      InstrId y = x(1);
      if (wants(0)) give(0, div(g, y));
      if (wants(1)) give(1, neg(div(mul(g, z()), y)));
      return;
    }
    case Opcode::kMaximum:
    case Opcode::kMinimum: {
      auto dir =
          in.opcode == Opcode::kMaximum ? ComparisonDirection::kGe : ComparisonDirection::kLe;
      InstrId first_wins = b().compare(x(0), x(1), dir);
      InstrId zero = fill(0);
      if (wants(0)) give(0, b().select(first_wins, g, zero));
      if (wants(1)) give(1, b().select(first_wins, zero, g));
      return;
    }
    case Opcode::kPower: {  // z = x^y: dx = g y x^(y-1), dy = g z log x
      InstrId base = x(0), exponent = x(1);
      if (wants(0))
        give(0, mul(g, mul(exponent, b().binary(Opcode::kPower, base, sub(exponent, fill(1))))));
      if (wants(1)) give(1, mul(g, mul(z(), b().unary(Opcode::kLog, base))));
      return;
    }
    default:
      unsupported(in);
  }
}

void Rule::broadcast() {
  // z[out] = x[out dims `dimensions`]: dx = sum of g over the other out dims,
  // then put the kept dims (ascending in the output) into operand order.
  const std::vector<int64_t>& dims = in.attrs.dimensions;
  std::vector<int64_t> summed;
  for (int64_t d = 0; d < in.shape.rank(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) summed.push_back(d);
  InstrId reduced = reduce_sum(b(), ctx.reducers, g, summed);
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != dims) {
    std::vector<int64_t> perm;
    for (int64_t d : dims)
      perm.push_back(std::lower_bound(sorted.begin(), sorted.end(), d) - sorted.begin());
    reduced = b().transpose(reduced, perm);
  }
  give(0, reduced);
}

void Rule::slice() {
  // The adjoint is g scattered back: zero padding before/after and between
  // strided elements.
  std::vector<PadDim> padding;
  const Shape& s = operand_shape(0);
  for (int d = 0; d < s.rank(); ++d) {
    const SliceDim& sd = in.attrs.slice[static_cast<size_t>(d)];
    int64_t n = in.shape.dim(d);
    int64_t last = n == 0 ? sd.start : sd.start + (n - 1) * sd.stride + 1;
    padding.push_back({sd.start, s.dim(d) - last, n == 0 ? 0 : sd.stride - 1});
  }
  give(0, b().pad(g, b().scalar_constant(in.shape.dtype(), 0), padding));
}

void Rule::pad() {
  // Undo cropping (negative low/high) with zeros, then take every
  // (interior+1)-th element starting at the (non-negative) low padding.
  const Shape& s = operand_shape(0);
  std::vector<PadDim> uncrop;
  bool crops = false;
  for (const PadDim& p : in.attrs.padding) {
    uncrop.push_back({std::max<int64_t>(-p.low, 0), std::max<int64_t>(-p.high, 0), 0});
    crops |= p.low < 0 || p.high < 0;
  }
  InstrId full = crops ? b().pad(g, b().scalar_constant(in.shape.dtype(), 0), uncrop) : g;
  std::vector<SliceDim> window;
  for (int d = 0; d < s.rank(); ++d) {
    const PadDim& p = in.attrs.padding[static_cast<size_t>(d)];
    int64_t start = std::max<int64_t>(p.low, 0);
    int64_t stride = p.interior + 1;
    window.push_back({start, s.dim(d) == 0 ? start : start + (s.dim(d) - 1) * stride + 1, stride});
  }
  InstrId operand_adjoint = b().slice(full, window);
  give(0, operand_adjoint);
  if (wants(1))  // the padding value appears wherever the operand does not
    give(1, sub(reduce_sum_all(b(), ctx.reducers, g),
                reduce_sum_all(b(), ctx.reducers, operand_adjoint)));
}

void Rule::concatenate() {
  int64_t dim = in.attrs.dimensions.at(0);
  int64_t offset = 0;
  for (int k = 0; k < in.operand_count(); ++k) {
    const Shape& s = operand_shape(k);
    if (wants(k)) {
      std::vector<SliceDim> window;
      for (int d = 0; d < s.rank(); ++d)
        window.push_back(d == dim ? SliceDim{offset, offset + s.dim(d), 1}
                                  : SliceDim{0, s.dim(d), 1});
      give(k, b().slice(g, window));
    }
    offset += s.dim(static_cast<int>(dim));
  }
}

void Rule::reduce() {
  if (in.operand_count() != 2) unsupported(in, "variadic reduce");
  ReducerKind kind = classify_reducer(ctx.module.computation(in.to_apply()));
  const Shape& s = operand_shape(0);
  const std::vector<int64_t>& reduced = in.attrs.dimensions;
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < s.rank(); ++d)
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) kept.push_back(d);
  InstrId g_full = b().broadcast(g, s.dims(), kept);
  if (kind == ReducerKind::kAdd) {
    give(0, g_full);
    if (wants(1)) give(1, reduce_sum_all(b(), ctx.reducers, g));  // init enters every output once
    return;
  }
  if (kind != ReducerKind::kMax && kind != ReducerKind::kMin)
    unsupported(in, "reduce body is not add/max/min");
  if (wants(1)) unsupported(in, "gradient of a max/min reduce's init value");
  // dx = g / (number of maxima) where x equals the result, else 0.
  InstrId is_extreme =
      b().compare(x(0), b().broadcast(z(), s.dims(), kept), ComparisonDirection::kEq);
  InstrId ones = filled(b(), s, 1.0);
  InstrId zeros = filled(b(), s, 0.0);
  InstrId count = reduce_sum(b(), ctx.reducers, b().select(is_extreme, ones, zeros), reduced);
  InstrId share = b().broadcast(div(g, count), s.dims(), kept);
  give(0, b().select(is_extreme, share, zeros));
}

// Adjoint of one dot operand A (the other is B): dot(g, B) contracting g's
// B-free dims with B's free dims, batch with batch, gives
// [batch, A free, B contracting (ascending)], transposed into A's order.
InstrId dot_operand_adjoint(ComputationBuilder& b, const DotDims& d, bool for_lhs, InstrId g,
                            InstrId other, const Shape& a_shape, const Shape& b_shape) {
  const auto& a_batch = for_lhs ? d.lhs_batch : d.rhs_batch;
  const auto& a_contr = for_lhs ? d.lhs_contracting : d.rhs_contracting;
  const auto& b_batch = for_lhs ? d.rhs_batch : d.lhs_batch;
  const auto& b_contr = for_lhs ? d.rhs_contracting : d.lhs_contracting;
  auto free_dims = [](int rank, const std::vector<int64_t>& batch,
                      const std::vector<int64_t>& contr) {
    std::vector<int64_t> free;
    for (int64_t i = 0; i < rank; ++i)
      if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
          std::find(contr.begin(), contr.end(), i) == contr.end())
        free.push_back(i);
    return free;
  };
  std::vector<int64_t> a_free = free_dims(a_shape.rank(), a_batch, a_contr);
  std::vector<int64_t> b_free = free_dims(b_shape.rank(), b_batch, b_contr);
  const int64_t nb = static_cast<int64_t>(a_batch.size());
  const int64_t lhs_free_count = static_cast<int64_t>(for_lhs ? a_free.size() : b_free.size());
  const int64_t b_free_start = for_lhs ? nb + lhs_free_count : nb;

  DotDims gd;
  for (int64_t i = 0; i < nb; ++i) gd.lhs_batch.push_back(i);
  gd.rhs_batch = b_batch;
  for (size_t k = 0; k < b_free.size(); ++k)
    gd.lhs_contracting.push_back(b_free_start + static_cast<int64_t>(k));
  gd.rhs_contracting = b_free;
  InstrId product = b.dot(g, other, gd, a_shape.dtype());

  std::vector<int64_t> b_contr_sorted = b_contr;
  std::sort(b_contr_sorted.begin(), b_contr_sorted.end());
  std::vector<int64_t> position(static_cast<size_t>(a_shape.rank()));
  for (int64_t i = 0; i < nb; ++i)
    position[static_cast<size_t>(a_batch[static_cast<size_t>(i)])] = i;
  for (size_t k = 0; k < a_free.size(); ++k)
    position[static_cast<size_t>(a_free[k])] = nb + static_cast<int64_t>(k);
  for (size_t j = 0; j < a_contr.size(); ++j) {
    int64_t rank = std::lower_bound(b_contr_sorted.begin(), b_contr_sorted.end(), b_contr[j]) -
                   b_contr_sorted.begin();
    position[static_cast<size_t>(a_contr[j])] = nb + static_cast<int64_t>(a_free.size()) + rank;
  }
  bool identity = true;
  for (size_t i = 0; i < position.size(); ++i) identity &= position[i] == static_cast<int64_t>(i);
  return identity ? product : b.transpose(product, position);
}

void Rule::dot() {
  const DotDims& d = in.attrs.dot;
  if (wants(0))
    give(0, dot_operand_adjoint(b(), d, true, g, x(1), operand_shape(0), operand_shape(1)));
  if (wants(1))
    give(1, dot_operand_adjoint(b(), d, false, g, x(0), operand_shape(1), operand_shape(0)));
}

void Rule::gather() {
  // The adjoint of a gather is a scatter-add of g into zeros with the
  // mirrored dimension numbers.
  const GatherDims& gd = in.attrs.gather;
  ScatterDims sd;
  sd.update_window_dims = gd.offset_dims;
  sd.inserted_window_dims = gd.collapsed_slice_dims;
  sd.scatter_dims_to_operand_dims = gd.start_index_map;
  sd.input_batching_dims = gd.operand_batching_dims;
  sd.scatter_indices_batching_dims = gd.start_indices_batching_dims;
  sd.index_vector_dim = gd.index_vector_dim;
  DType dtype = in.shape.dtype();
  give(0, b().scatter(zeros_like_operand(0), x(1), g, sd, ctx.reducers.get(Opcode::kAdd, dtype)));
}

void Rule::scatter() {
  if (in.operand_count() != 3) unsupported(in, "variadic scatter");
  ReducerKind kind = classify_reducer(ctx.module.computation(in.to_apply()));
  if (kind != ReducerKind::kAdd && kind != ReducerKind::kOverwrite)
    unsupported(in, "scatter body is neither add nor overwrite");
  const ScatterDims& sd = in.attrs.scatter;
  InstrId indices = x(1);
  if (wants(0)) {
    if (kind == ReducerKind::kAdd) {
      give(0, g);
    } else {  // overwritten elements do not reach the result
      give(0, b().scatter(g, indices, zeros_like_operand(2), sd, in.to_apply()));
    }
  }
  if (wants(2)) {
    GatherDims gd;
    gd.offset_dims = sd.update_window_dims;
    gd.collapsed_slice_dims = sd.inserted_window_dims;
    gd.start_index_map = sd.scatter_dims_to_operand_dims;
    gd.operand_batching_dims = sd.input_batching_dims;
    gd.start_indices_batching_dims = sd.scatter_indices_batching_dims;
    gd.index_vector_dim = sd.index_vector_dim;
    const Shape& operand = operand_shape(0);
    const Shape& updates = operand_shape(2);
    std::vector<int64_t> slice_sizes;
    size_t window = 0;
    for (int64_t d = 0; d < operand.rank(); ++d) {
      auto in_list = [d](const std::vector<int64_t>& v) {
        return std::find(v.begin(), v.end(), d) != v.end();
      };
      if (in_list(sd.inserted_window_dims) || in_list(sd.input_batching_dims)) {
        slice_sizes.push_back(1);
      } else {
        slice_sizes.push_back(updates.dim(static_cast<int>(sd.update_window_dims.at(window++))));
      }
    }
    give(2, b().gather(g, indices, gd, slice_sizes));
  }
}

}  // namespace

ReducerKind classify_reducer(const Computation& body) {
  const Instruction& root = body.root_instr();
  if (root.opcode == Opcode::kParameter) {
    return root.attrs.parameter_number == 1 ? ReducerKind::kOverwrite : ReducerKind::kOther;
  }
  if (root.operand_count() != 2) return ReducerKind::kOther;
  const Instruction& a = body.instr(root.operand(0));
  const Instruction& c = body.instr(root.operand(1));
  if (a.opcode != Opcode::kParameter || c.opcode != Opcode::kParameter) return ReducerKind::kOther;
  if (a.attrs.parameter_number == c.attrs.parameter_number) return ReducerKind::kOther;
  switch (root.opcode) {
    case Opcode::kAdd:
      return ReducerKind::kAdd;
    case Opcode::kMaximum:
      return ReducerKind::kMax;
    case Opcode::kMinimum:
      return ReducerKind::kMin;
    default:
      return ReducerKind::kOther;
  }
}

std::vector<OperandAdjoint> array_vjp(VjpContext& ctx, InstrId id, InstrId g) {
  const Instruction& in = ctx.source.instr(id);
  if (in.shape.is_tuple() || !is_floating(in.shape.dtype()))
    return {};  // no gradient through integers
  Rule r{ctx, in, id, g, {}};
  if (is_elementwise_unary(in.opcode)) {
    r.unary();
    return std::move(r.out);
  }
  if (is_elementwise_binary(in.opcode)) {
    r.binary();
    return std::move(r.out);
  }
  ComputationBuilder& b = ctx.b;
  switch (in.opcode) {
    case Opcode::kConstant:
    case Opcode::kIota:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
      return {};
    case Opcode::kBroadcast:
      r.broadcast();
      break;
    case Opcode::kReshape:
      r.give(0, b.reshape(g, r.operand_shape(0).dims()));
      break;
    case Opcode::kTranspose:
      r.give(0, b.transpose(g, inverse_permutation(in.attrs.dimensions)));
      break;
    case Opcode::kSlice:
      r.slice();
      break;
    case Opcode::kPad:
      r.pad();
      break;
    case Opcode::kConcatenate:
      r.concatenate();
      break;
    case Opcode::kReverse:
      r.give(0, b.reverse(g, in.attrs.dimensions));
      break;
    case Opcode::kDynamicSlice: {
      std::vector<InstrId> starts;
      for (int k = 1; k < in.operand_count(); ++k) starts.push_back(r.x(k));
      r.give(0, b.dynamic_update_slice(r.zeros_like_operand(0), g, starts));
      break;
    }
    case Opcode::kDynamicUpdateSlice: {
      std::vector<InstrId> starts;
      for (int k = 2; k < in.operand_count(); ++k) starts.push_back(r.x(k));
      if (r.wants(0)) r.give(0, b.dynamic_update_slice(g, r.zeros_like_operand(1), starts));
      if (r.wants(1)) r.give(1, b.dynamic_slice(g, starts, r.operand_shape(1).dims()));
      break;
    }
    case Opcode::kSelect: {
      InstrId pred = r.x(0);
      if (ctx.source.instr(in.operand(0)).shape.rank() != in.shape.rank())
        pred = b.broadcast(pred, in.shape.dims(), {});
      InstrId zero = r.fill(0);
      if (r.wants(1)) r.give(1, b.select(pred, g, zero));
      if (r.wants(2)) r.give(2, b.select(pred, zero, g));
      break;
    }
    case Opcode::kClamp: {  // clamp(lo, x, hi)
      if (r.wants(0) || r.wants(2)) unsupported(in, "gradient of clamp bounds");
      auto full = [&](int k) {
        InstrId v = r.x(k);
        return r.operand_shape(k).rank() == in.shape.rank() ? v
                                                            : b.broadcast(v, in.shape.dims(), {});
      };
      InstrId above = b.compare(r.x(1), full(0), ComparisonDirection::kGe);
      InstrId below = b.compare(r.x(1), full(2), ComparisonDirection::kLe);
      InstrId inside = b.binary(Opcode::kAnd, above, below);
      r.give(1, b.select(inside, g, r.fill(0)));
      break;
    }
    case Opcode::kReduce:
      r.reduce();
      break;
    case Opcode::kDot:
      r.dot();
      break;
    case Opcode::kGather:
      r.gather();
      break;
    case Opcode::kScatter:
      r.scatter();
      break;
    case Opcode::kCustomCall:
      if (in.attrs.custom_call_target != "Sharding") unsupported(in);
      // The adjoint keeps the annotation's layout (with_sharding_constraint).
      r.give(0, annotate_sharding(b, g, in.sharding.value_or("")));
      break;
    default:
      unsupported(in);
  }
  return std::move(r.out);
}

std::vector<OperandAdjoint> flash_attention_vjp(VjpContext& ctx, InstrId id,
                                                const std::vector<InstrId>& result_adjoints) {
  const Instruction& in = ctx.source.instr(id);
  if (result_adjoints.size() > 1 && result_adjoints[1] != kNoId)
    unsupported(in, "the gradient of the log-sum-exp result is not supported");
  if (result_adjoints.empty() || result_adjoints[0] == kNoId) return {};
  Rule r{ctx, in, id, result_adjoints[0], {}};
  ComputationBuilder& b = ctx.b;
  InstrId call = ctx.residuals.get(id);
  const FlashAttentionGrads grads =
      flash_attention_bwd(b, r.x(0), r.x(1), r.x(2), b.get_tuple_element(call, 0),
                          b.get_tuple_element(call, 1), r.g, flash_config(in));
  r.give(0, grads.dq);
  r.give(1, grads.dk);
  r.give(2, grads.dv);
  return std::move(r.out);
}

}  // namespace podsim::compiler::training
