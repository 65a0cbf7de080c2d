// Data-movement ops: iota, broadcast, reshape (row-major), transpose, slice,
// pad, concatenate, reverse, dynamic-slice, dynamic-update-slice. Most are a
// strided copy: result element idx reads source offset + sum_j idx[j]*stride[j].
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "compiler/interpreter/local_ops.h"

namespace podsim::compiler::interp {

namespace {

// dst[k] (k row-major over dims) = src[offset + sum_j idx[j] * src_strides[j]].
void strided_read(const std::vector<int64_t>& dims, const std::vector<int64_t>& src_strides,
                  int64_t offset, const double* src, double* dst) {
  for (int64_t d : dims)
    if (d == 0) return;
  const size_t rank = dims.size();
  std::vector<int64_t> index(rank, 0);
  int64_t src_pos = offset;
  int64_t k = 0;
  while (true) {
    dst[k++] = src[src_pos];
    int j = static_cast<int>(rank) - 1;
    while (j >= 0) {
      const auto uj = static_cast<size_t>(j);
      src_pos += src_strides[uj];
      if (++index[uj] < dims[uj]) break;
      src_pos -= src_strides[uj] * dims[uj];
      index[uj] = 0;
      --j;
    }
    if (j < 0) return;
  }
}

// dst[offset + sum_j idx[j] * dst_strides[j]] = src[k] (k row-major over dims).
void strided_write(const std::vector<int64_t>& dims, const std::vector<int64_t>& dst_strides,
                   int64_t offset, const double* src, double* dst) {
  for (int64_t d : dims)
    if (d == 0) return;
  int64_t k = 0;
  for_each_index(dims, [&](const std::vector<int64_t>& idx) {
    int64_t pos = offset;
    for (size_t j = 0; j < dims.size(); ++j) pos += idx[j] * dst_strides[j];
    dst[pos] = src[k++];
  });
}

void check_array(const Instruction& instr, const Literal& operand, int expected_rank) {
  if (operand.is_tuple() || operand.shape().rank() != expected_rank)
    fail(instr, fmt::format("operand has shape {}, expected rank {}",
                            operand.shape().to_string(false), expected_rank));
}

// Start indices of dynamic-slice / dynamic-update-slice: either one scalar
// operand per dimension (from operand `first`) or one rank-1 vector operand.
std::vector<int64_t> start_indices(const Instruction& instr, const Operands& operands, size_t first,
                                   int rank) {
  std::vector<int64_t> starts;
  if (operands.size() == first + 1 && operands[first]->shape().rank() == 1) {
    for (double v : operands[first]->values()) starts.push_back(static_cast<int64_t>(v));
  } else {
    for (size_t i = first; i < operands.size(); ++i) {
      if (operands[i]->shape().rank() != 0) fail(instr, "start indices must be scalars");
      starts.push_back(static_cast<int64_t>(operands[i]->values()[0]));
    }
  }
  if (static_cast<int>(starts.size()) != rank)
    fail(instr, fmt::format("{} start indices for a rank-{} operand", starts.size(), rank));
  return starts;
}

// XLA clamps a dynamic start into [0, dim - size].
int64_t clamp_start(int64_t start, int64_t dim, int64_t size) {
  return std::clamp<int64_t>(start, 0, std::max<int64_t>(dim - size, 0));
}

}  // namespace

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[static_cast<size_t>(i)] =
        strides[static_cast<size_t>(i) + 1] * dims[static_cast<size_t>(i) + 1];
  return strides;
}

Literal eval_iota(const Instruction& instr) {
  const Shape& shape = instr.shape;
  const int64_t dim = instr.attrs.iota_dimension;
  if (dim < 0 || dim >= shape.rank()) fail(instr, "iota_dimension out of range");
  Literal result(shape);
  auto& values = result.mutable_values();
  int64_t k = 0;
  for_each_index(shape.dims(), [&](const std::vector<int64_t>& idx) {
    values[static_cast<size_t>(k++)] =
        round_to_dtype(shape.dtype(), static_cast<double>(idx[static_cast<size_t>(dim)]));
  });
  return result;
}

namespace {
// A complex array as a real one with a trailing dimension of 2 (the
// literal's (real, imag) pairs), for ops that only move elements.
Shape as_pairs(const Shape& shape) {
  std::vector<int64_t> dims = shape.dims();
  dims.push_back(2);
  return Shape(DType::kF64, dims);
}

// Runs `op` (broadcast or transpose, whose dimensions list maps result dims)
// on a complex operand as on its real pairs array, the pair dim mapped last.
template <typename Op>
Literal on_pairs(const Instruction& instr, const Literal& operand, Op op) {
  Instruction pairs = instr;
  pairs.shape = as_pairs(instr.shape);
  pairs.attrs.dimensions.push_back(instr.shape.rank());
  Literal r = op(pairs, Literal(as_pairs(operand.shape()), operand.values()));
  return Literal(instr.shape, std::move(r.mutable_values()));
}
}  // namespace

Literal eval_broadcast(const Instruction& instr, const Literal& operand) {
  if (!operand.is_tuple() && is_complex(operand.shape().dtype()))
    return on_pairs(instr, operand, eval_broadcast);
  const Shape& out = instr.shape;
  const auto& dims = instr.attrs.dimensions;
  check_array(instr, operand, static_cast<int>(dims.size()));
  const auto in_strides = row_major_strides(operand.shape().dims());
  std::vector<int64_t> src_strides(static_cast<size_t>(out.rank()), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= out.rank() ||
        out.dim(static_cast<int>(dims[i])) != operand.shape().dim(static_cast<int>(i)))
      fail(instr, fmt::format("broadcast dimension {} does not match the result shape", i));
    src_strides[static_cast<size_t>(dims[i])] = in_strides[i];
  }
  Literal result(out);
  strided_read(out.dims(), src_strides, 0, operand.values().data(), result.mutable_values().data());
  return result;
}

Literal eval_reshape(const Instruction& instr, const Literal& operand) {
  if (operand.is_tuple() || operand.shape().num_elements() != instr.shape.num_elements())
    fail(instr, "reshape changes the number of elements");
  return Literal(instr.shape, operand.values());
}

Literal eval_transpose(const Instruction& instr, const Literal& operand) {
  if (!operand.is_tuple() && is_complex(operand.shape().dtype()))
    return on_pairs(instr, operand, eval_transpose);
  const auto& perm = instr.attrs.dimensions;
  check_array(instr, operand, static_cast<int>(perm.size()));
  const auto in_strides = row_major_strides(operand.shape().dims());
  std::vector<int64_t> src_strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= operand.shape().rank() ||
        instr.shape.dim(static_cast<int>(i)) != operand.shape().dim(static_cast<int>(perm[i])))
      fail(instr, "transpose permutation does not match the shapes");
    src_strides[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  Literal result(instr.shape);
  strided_read(instr.shape.dims(), src_strides, 0, operand.values().data(),
               result.mutable_values().data());
  return result;
}

Literal eval_slice(const Instruction& instr, const Literal& operand) {
  const auto& slice = instr.attrs.slice;
  check_array(instr, operand, static_cast<int>(slice.size()));
  const auto in_strides = row_major_strides(operand.shape().dims());
  std::vector<int64_t> src_strides(slice.size());
  int64_t offset = 0;
  for (size_t i = 0; i < slice.size(); ++i) {
    const SliceDim& s = slice[i];
    const int64_t n = operand.shape().dim(static_cast<int>(i));
    // Result size along a dim: ceil((limit - start) / stride).
    if (s.stride < 1 || s.start < 0 || s.limit > n || s.start > s.limit ||
        instr.shape.dim(static_cast<int>(i)) != (s.limit - s.start + s.stride - 1) / s.stride)
      fail(instr, fmt::format("slice [{}:{}:{}] invalid for dimension {} of size {}", s.start,
                              s.limit, s.stride, i, n));
    src_strides[i] = in_strides[i] * s.stride;
    offset += s.start * in_strides[i];
  }
  Literal result(instr.shape);
  strided_read(instr.shape.dims(), src_strides, offset, operand.values().data(),
               result.mutable_values().data());
  return result;
}

// Operand element i lands at low + i * (interior + 1); positions outside
// [0, out) are cropped (negative low/high), everything else is the pad value.
Literal eval_pad(const Instruction& instr, const Literal& operand, const Literal& padding_value) {
  const auto& padding = instr.attrs.padding;
  check_array(instr, operand, static_cast<int>(padding.size()));
  const Shape& out = instr.shape;
  for (size_t i = 0; i < padding.size(); ++i) {
    const int64_t n = operand.shape().dim(static_cast<int>(i));
    const PadDim& p = padding[i];
    const int64_t expected = p.low + p.high + n + std::max<int64_t>(n - 1, 0) * p.interior;
    if (p.interior < 0 || out.dim(static_cast<int>(i)) != expected)
      fail(instr, fmt::format("padding of dimension {} does not give the result size", i));
  }
  Literal result(out);
  std::fill(result.mutable_values().begin(), result.mutable_values().end(),
            padding_value.values().at(0));
  const auto out_strides = row_major_strides(out.dims());
  int64_t k = 0;
  for_each_index(operand.shape().dims(), [&](const std::vector<int64_t>& idx) {
    const double v = operand.values()[static_cast<size_t>(k++)];
    int64_t pos = 0;
    for (size_t i = 0; i < idx.size(); ++i) {
      const int64_t p = padding[i].low + idx[i] * (padding[i].interior + 1);
      if (p < 0 || p >= out.dim(static_cast<int>(i))) return;
      pos += p * out_strides[i];
    }
    result.mutable_values()[static_cast<size_t>(pos)] = v;
  });
  return result;
}

Literal eval_concatenate(const Instruction& instr, const Operands& operands) {
  if (instr.attrs.dimensions.size() != 1) fail(instr, "concatenate needs exactly one dimension");
  const int64_t dim = instr.attrs.dimensions[0];
  const Shape& out = instr.shape;
  if (dim < 0 || dim >= out.rank()) fail(instr, "concatenate dimension out of range");
  const auto out_strides = row_major_strides(out.dims());
  Literal result(out);
  int64_t position = 0;
  for (const Literal* op : operands) {
    check_array(instr, *op, out.rank());
    for (int i = 0; i < out.rank(); ++i)
      if (i != dim && op->shape().dim(i) != out.dim(i))
        fail(instr, "concatenate operand shapes differ");
    if (position + op->shape().dim(static_cast<int>(dim)) > out.dim(static_cast<int>(dim)))
      fail(instr, "concatenate operands exceed the result size");
    strided_write(op->shape().dims(), out_strides, position * out_strides[static_cast<size_t>(dim)],
                  op->values().data(), result.mutable_values().data());
    position += op->shape().dim(static_cast<int>(dim));
  }
  if (position != out.dim(static_cast<int>(dim)))
    fail(instr, "concatenate operands do not fill the result");
  return result;
}

Literal eval_reverse(const Instruction& instr, const Literal& operand) {
  if (operand.is_tuple() || !(operand.shape() == instr.shape))
    fail(instr, "reverse changes the shape");
  auto strides = row_major_strides(operand.shape().dims());
  int64_t offset = 0;
  for (int64_t d : instr.attrs.dimensions) {
    if (d < 0 || d >= operand.shape().rank()) fail(instr, "reverse dimension out of range");
    const auto ud = static_cast<size_t>(d);
    offset += (operand.shape().dim(static_cast<int>(d)) - 1) * strides[ud];
    strides[ud] = -strides[ud];
  }
  Literal result(instr.shape);
  strided_read(instr.shape.dims(), strides, offset, operand.values().data(),
               result.mutable_values().data());
  return result;
}

Literal eval_dynamic_slice(const Instruction& instr, const Operands& operands) {
  const Literal& operand = *operands.at(0);
  if (!operand.is_tuple() && is_complex(operand.shape().dtype())) {
    // The real pairs array, sliced whole along the trailing pair dim.
    std::vector<double> starts;
    for (int64_t v : start_indices(instr, operands, 1, operand.shape().rank()))
      starts.push_back(static_cast<double>(v));
    starts.push_back(0);
    const Literal pairs(as_pairs(operand.shape()), operand.values());
    const Literal index(Shape(DType::kS64, {static_cast<int64_t>(starts.size())}), starts);
    Instruction real = instr;
    real.shape = as_pairs(instr.shape);
    real.attrs.dynamic_slice_sizes.push_back(2);
    Literal r = eval_dynamic_slice(real, {&pairs, &index});
    return Literal(instr.shape, std::move(r.mutable_values()));
  }
  const auto& sizes = instr.attrs.dynamic_slice_sizes;
  check_array(instr, operand, static_cast<int>(sizes.size()));
  const auto starts = start_indices(instr, operands, 1, operand.shape().rank());
  const auto in_strides = row_major_strides(operand.shape().dims());
  int64_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t n = operand.shape().dim(static_cast<int>(i));
    if (sizes[i] < 0 || sizes[i] > n || instr.shape.dim(static_cast<int>(i)) != sizes[i])
      fail(instr,
           fmt::format("dynamic slice size {} invalid for dimension of size {}", sizes[i], n));
    offset += clamp_start(starts[i], n, sizes[i]) * in_strides[i];
  }
  Literal result(instr.shape);
  strided_read(instr.shape.dims(), in_strides, offset, operand.values().data(),
               result.mutable_values().data());
  return result;
}

Literal eval_dynamic_update_slice(const Instruction& instr, const Operands& operands) {
  const Literal& operand = *operands.at(0);
  const Literal& update = *operands.at(1);
  const int rank = operand.shape().rank();
  check_array(instr, update, rank);
  const auto starts = start_indices(instr, operands, 2, rank);
  const auto strides = row_major_strides(operand.shape().dims());
  int64_t offset = 0;
  for (int i = 0; i < rank; ++i) {
    const int64_t n = operand.shape().dim(i);
    if (update.shape().dim(i) > n) fail(instr, "update is larger than the operand");
    offset += clamp_start(starts[static_cast<size_t>(i)], n, update.shape().dim(i)) *
              strides[static_cast<size_t>(i)];
  }
  Literal result = operand;
  strided_write(update.shape().dims(), strides, offset, update.values().data(),
                result.mutable_values().data());
  return result;
}

}  // namespace podsim::compiler::interp
