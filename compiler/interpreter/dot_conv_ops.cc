// Dot (general batch/contracting dims) and convolution (XLA ConvDims with
// window strides, padding, lhs/rhs dilation, reversal, feature and batch
// groups). Float results accumulate in double and are rounded once; integer
// results accumulate in wrapping 64-bit integers. A sparse dot (N:M structured
// sparsity) expands its stored operand to the logical one, then runs the dot.
#include <complex>
#include <cstdint>

#include <fmt/format.h>

#include "compiler/interpreter/local_ops.h"
#include "compiler/ir/shape_inference.h"

namespace podsim::compiler::interp {

namespace {

// Sums products in double, or in wrapping int64 for integer result types.
class Accumulator {
 public:
  explicit Accumulator(DType result) : integral_(!is_floating(result)), dtype_(result) {}
  void reset() {
    real_ = 0.0;
    integer_ = 0;
  }
  void add(double a, double b) {
    if (integral_) {
      const auto product = static_cast<uint64_t>(static_cast<int64_t>(a)) *
                           static_cast<uint64_t>(static_cast<int64_t>(b));
      integer_ = static_cast<int64_t>(static_cast<uint64_t>(integer_) + product);
    } else {
      real_ += a * b;
    }
  }
  double result() const {
    return round_to_dtype(dtype_, integral_ ? static_cast<double>(integer_) : real_);
  }

 private:
  bool integral_;
  DType dtype_;
  double real_ = 0.0;
  int64_t integer_ = 0;
};

std::vector<int64_t> free_dims(int rank, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contracting) {
  std::vector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d) {
    bool used = false;
    for (int64_t b : batch) used |= b == d;
    for (int64_t c : contracting) used |= c == d;
    if (!used) free.push_back(d);
  }
  return free;
}

// The batch, feature and spatial labels of one operand must be a permutation of its dims.
void check_labels(const Instruction& instr, std::vector<int64_t> labels, const char* what) {
  std::vector<bool> seen(labels.size(), false);
  for (int64_t d : labels) {
    if (d < 0 || d >= static_cast<int64_t>(labels.size()) || seen[static_cast<size_t>(d)])
      fail(instr, fmt::format("{} dimension labels are not a permutation of its dims", what));
    seen[static_cast<size_t>(d)] = true;
  }
}

void check_dims_in_range(const Instruction& instr, const std::vector<int64_t>& dims, int rank) {
  for (int64_t d : dims)
    if (d < 0 || d >= rank)
      fail(instr, fmt::format("dimension {} out of range for rank {}", d, rank));
}

}  // namespace

// The logical operand a sparse dot's stored operand stands for
// (docs/hlo-input.md#sparse-dot): stored element j along the sparse dim
// belongs to group j / n and lands at g * m + f_j, where f_j is the j-th
// ceil(log2 m)-bit field of the metadata row, fields packed from the least
// significant bit of each metadata element; other positions are zero.
Literal expand_sparse_operand(const Instruction& instr, const Literal& stored, const Literal& meta,
                              const DotSparsity& sparsity) {
  const Shape& ss = stored.shape();
  const Shape& ms = meta.shape();
  if (is_complex(ss.dtype())) fail(instr, "sparse dot on complex values");
  if (sparsity.dim < 0 || sparsity.dim >= ss.rank()) fail(instr, "sparse dimension out of range");
  const auto d = static_cast<size_t>(sparsity.dim);
  const int64_t stored_size = ss.dims()[d];
  if (stored_size % sparsity.n != 0)
    fail(instr, fmt::format("sparse dimension holds {} values, not a multiple of n = {}",
                            stored_size, sparsity.n));
  if (!is_integral(ms.dtype()) || ms.rank() != ss.rank())
    fail(instr, "sparsity metadata must be an integer array of the stored operand's rank");
  const int index_bits = sparsity.index_bits();
  const int64_t fields_per_element = sparsity.values_per_element(ms.dtype());
  for (size_t i = 0; i < ss.dims().size(); ++i) {
    const bool fits =
        i == d ? ms.dims()[i] * fields_per_element >= stored_size : ms.dims()[i] == ss.dims()[i];
    if (!fits)
      fail(
          instr,
          fmt::format(
              "sparsity metadata {} does not describe the stored operand {} ({} indices of {} bits "
              "per element along the sparse dimension)",
              ms.to_string(), ss.to_string(), fields_per_element, index_bits));
  }
  Literal dense(sparsity.logical_shape(ss));
  const uint64_t field_mask = (uint64_t{1} << index_bits) - 1;
  const uint64_t element_mask = integral_bits(ms.dtype()) >= 64
                                    ? ~uint64_t{0}
                                    : (uint64_t{1} << integral_bits(ms.dtype())) - 1;
  std::vector<int64_t> meta_index, dense_index;
  for_each_index(ss.dims(), [&](const std::vector<int64_t>& idx) {
    const int64_t j = idx[d];
    meta_index = idx;
    meta_index[d] = j / fields_per_element;
    const auto word =
        static_cast<uint64_t>(static_cast<int64_t>(meta.at(meta_index))) & element_mask;
    const auto field =
        static_cast<int64_t>((word >> ((j % fields_per_element) * index_bits)) & field_mask);
    if (field >= sparsity.m)
      fail(instr, fmt::format("sparsity metadata index {} is out of range for {}:{} sparsity",
                              field, sparsity.n, sparsity.m));
    dense_index = idx;
    dense_index[d] = j / sparsity.n * sparsity.m + field;
    const int64_t at = dense.linear_index(dense_index);
    dense.mutable_values()[static_cast<size_t>(at)] +=
        stored.values()[static_cast<size_t>(stored.linear_index(idx))];
  });
  return dense;
}

// out[batch..., lhs_free..., rhs_free...] = sum_c lhs[...] * rhs[...].
Literal eval_dot(const Instruction& instr, const Literal& lhs, const Literal& rhs) {
  const DotDims& dd = instr.attrs.dot;
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  check_dims_in_range(instr, dd.lhs_batch, ls.rank());
  check_dims_in_range(instr, dd.lhs_contracting, ls.rank());
  check_dims_in_range(instr, dd.rhs_batch, rs.rank());
  check_dims_in_range(instr, dd.rhs_contracting, rs.rank());
  if (dd.lhs_batch.size() != dd.rhs_batch.size() ||
      dd.lhs_contracting.size() != dd.rhs_contracting.size())
    fail(instr, "lhs and rhs have different numbers of batch or contracting dims");
  const auto lhs_free = free_dims(ls.rank(), dd.lhs_batch, dd.lhs_contracting);
  const auto rhs_free = free_dims(rs.rank(), dd.rhs_batch, dd.rhs_contracting);
  const auto ls_strides = row_major_strides(ls.dims());
  const auto rs_strides = row_major_strides(rs.dims());

  // Output dims and, per output dim, the strides into lhs and rhs.
  std::vector<int64_t> out_dims, out_lhs_stride, out_rhs_stride;
  for (size_t i = 0; i < dd.lhs_batch.size(); ++i) {
    const auto lb = static_cast<size_t>(dd.lhs_batch[i]);
    const auto rb = static_cast<size_t>(dd.rhs_batch[i]);
    if (ls.dims()[lb] != rs.dims()[rb]) fail(instr, "batch dimension sizes differ");
    out_dims.push_back(ls.dims()[lb]);
    out_lhs_stride.push_back(ls_strides[lb]);
    out_rhs_stride.push_back(rs_strides[rb]);
  }
  for (int64_t d : lhs_free) {
    out_dims.push_back(ls.dims()[static_cast<size_t>(d)]);
    out_lhs_stride.push_back(ls_strides[static_cast<size_t>(d)]);
    out_rhs_stride.push_back(0);
  }
  for (int64_t d : rhs_free) {
    out_dims.push_back(rs.dims()[static_cast<size_t>(d)]);
    out_lhs_stride.push_back(0);
    out_rhs_stride.push_back(rs_strides[static_cast<size_t>(d)]);
  }
  if (instr.shape.is_tuple() || instr.shape.dims() != out_dims)
    fail(instr, "result shape does not match the dot");

  // Offsets of every contracting position in lhs and rhs.
  std::vector<int64_t> contract_sizes;
  for (size_t i = 0; i < dd.lhs_contracting.size(); ++i) {
    const auto lc = static_cast<size_t>(dd.lhs_contracting[i]);
    const auto rc = static_cast<size_t>(dd.rhs_contracting[i]);
    if (ls.dims()[lc] != rs.dims()[rc]) fail(instr, "contracting dimension sizes differ");
    contract_sizes.push_back(ls.dims()[lc]);
  }
  std::vector<int64_t> lhs_offsets, rhs_offsets;
  for_each_index(contract_sizes, [&](const std::vector<int64_t>& idx) {
    int64_t lo = 0, ro = 0;
    for (size_t i = 0; i < idx.size(); ++i) {
      lo += idx[i] * ls_strides[static_cast<size_t>(dd.lhs_contracting[i])];
      ro += idx[i] * rs_strides[static_cast<size_t>(dd.rhs_contracting[i])];
    }
    lhs_offsets.push_back(lo);
    rhs_offsets.push_back(ro);
  });

  Literal result(instr.shape);
  const auto& a = lhs.values();
  const auto& b = rhs.values();
  if (is_complex(instr.shape.dtype())) {
    // Complex: (re, im) pairs, so element offsets are doubled; accumulate in
    // complex<double>, round each part once.
    if (!is_complex(ls.dtype()) || !is_complex(rs.dtype()))
      fail(instr, "complex dot needs complex operands");
    const DType dt = instr.shape.dtype();
    size_t k = 0;
    for_each_index(out_dims, [&](const std::vector<int64_t>& idx) {
      int64_t lhs_base = 0, rhs_base = 0;
      for (size_t i = 0; i < idx.size(); ++i) {
        lhs_base += idx[i] * out_lhs_stride[i];
        rhs_base += idx[i] * out_rhs_stride[i];
      }
      std::complex<double> sum(0, 0);
      for (size_t c = 0; c < lhs_offsets.size(); ++c) {
        const auto li = static_cast<size_t>(2 * (lhs_base + lhs_offsets[c]));
        const auto ri = static_cast<size_t>(2 * (rhs_base + rhs_offsets[c]));
        sum += std::complex<double>(a[li], a[li + 1]) * std::complex<double>(b[ri], b[ri + 1]);
      }
      result.mutable_values()[2 * k] = round_to_dtype(dt, sum.real());
      result.mutable_values()[2 * k + 1] = round_to_dtype(dt, sum.imag());
      ++k;
    });
    return result;
  }
  if (!is_floating(instr.shape.dtype())) {
    Accumulator acc(instr.shape.dtype());
    size_t k = 0;
    for_each_index(out_dims, [&](const std::vector<int64_t>& idx) {
      int64_t lhs_base = 0, rhs_base = 0;
      for (size_t i = 0; i < idx.size(); ++i) {
        lhs_base += idx[i] * out_lhs_stride[i];
        rhs_base += idx[i] * out_rhs_stride[i];
      }
      acc.reset();
      for (size_t c = 0; c < lhs_offsets.size(); ++c)
        acc.add(a[static_cast<size_t>(lhs_base + lhs_offsets[c])],
                b[static_cast<size_t>(rhs_base + rhs_offsets[c])]);
      result.mutable_values()[k++] = acc.result();
    });
    return result;
  }
  // Floats: pack lhs as [batch, lhs_free, contraction] and rhs as [batch,
  // rhs_free, contraction] so every output is a contiguous dot product; the
  // sum runs over the contraction in the same order as the unpacked loop,
  // so the result is the same to the bit.
  const size_t batch_rank = dd.lhs_batch.size();
  auto bases = [&](const std::vector<int64_t>& strides, size_t free_begin, size_t free_end) {
    std::vector<int64_t> dims, dim_strides, out;
    for (size_t i = 0; i < batch_rank; ++i) {
      dims.push_back(out_dims[i]);
      dim_strides.push_back(strides[i]);
    }
    for (size_t i = free_begin; i < free_end; ++i) {
      dims.push_back(out_dims[i]);
      dim_strides.push_back(strides[i]);
    }
    for_each_index(dims, [&](const std::vector<int64_t>& idx) {
      int64_t base = 0;
      for (size_t i = 0; i < idx.size(); ++i) base += idx[i] * dim_strides[i];
      out.push_back(base);
    });
    return out;
  };
  const size_t lhs_free_end = batch_rank + lhs_free.size();
  const std::vector<int64_t> row_bases = bases(out_lhs_stride, batch_rank, lhs_free_end);
  const std::vector<int64_t> col_bases = bases(out_rhs_stride, lhs_free_end, out_dims.size());
  int64_t batches = 1;
  for (size_t i = 0; i < batch_rank; ++i) batches *= out_dims[i];
  const size_t K = lhs_offsets.size();
  const size_t M = batches == 0 ? 0 : row_bases.size() / static_cast<size_t>(batches);
  const size_t N = batches == 0 ? 0 : col_bases.size() / static_cast<size_t>(batches);
  std::vector<double> L(row_bases.size() * K), R(col_bases.size() * K);
  for (size_t r = 0; r < row_bases.size(); ++r)
    for (size_t c = 0; c < K; ++c)
      L[r * K + c] = a[static_cast<size_t>(row_bases[r] + lhs_offsets[c])];
  for (size_t r = 0; r < col_bases.size(); ++r)
    for (size_t c = 0; c < K; ++c)
      R[r * K + c] = b[static_cast<size_t>(col_bases[r] + rhs_offsets[c])];
  const DType dt = instr.shape.dtype();
  double* out = result.mutable_values().data();
  for (size_t bt = 0; bt < static_cast<size_t>(batches); ++bt)
    for (size_t m = 0; m < M; ++m) {
      const double* lrow = L.data() + (bt * M + m) * K;
      double* orow = out + (bt * M + m) * N;
      size_t n = 0;
      for (; n + 4 <= N; n += 4) {  // four independent sums share the lhs row
        const double* r0 = R.data() + (bt * N + n) * K;
        const double* r1 = r0 + K;
        const double* r2 = r1 + K;
        const double* r3 = r2 + K;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t c = 0; c < K; ++c) {
          const double x = lrow[c];
          s0 += x * r0[c];
          s1 += x * r1[c];
          s2 += x * r2[c];
          s3 += x * r3[c];
        }
        orow[n] = round_to_dtype(dt, s0);
        orow[n + 1] = round_to_dtype(dt, s1);
        orow[n + 2] = round_to_dtype(dt, s2);
        orow[n + 3] = round_to_dtype(dt, s3);
      }
      for (; n < N; ++n) {
        const double* r0 = R.data() + (bt * N + n) * K;
        double s0 = 0;
        for (size_t c = 0; c < K; ++c) s0 += lrow[c] * r0[c];
        orow[n] = round_to_dtype(dt, s0);
      }
    }
  return result;
}

// A dot with a third (metadata) operand: N:M structured sparsity on one side.
Literal eval_sparse_dot(const Instruction& instr, const Literal& lhs, const Literal& rhs,
                        const Literal& meta) {
  const std::optional<DotSparsity> sparsity = dot_sparsity(instr.attrs);
  if (!sparsity)
    fail(instr, "a dot with three operands needs a sparsity=L.dim@n:m (or R.) attribute");
  if (sparsity->operand == 0)
    return eval_dot(instr, expand_sparse_operand(instr, lhs, meta, *sparsity), rhs);
  return eval_dot(instr, lhs, expand_sparse_operand(instr, rhs, meta, *sparsity));
}

// For output (batch b, feature o, spatial s) with G feature groups and B
// batch groups (XLA operation semantics):
//   feature group g = o / (O / G) reads input features g*KC + kc, kc < KC;
//   batch group  h = o / (O / B) reads input batch h*(N/B) + b;
//   spatial: kernel tap k reads base position s*stride + k*rhs_dilation - pad_low,
//   an input element when on the lhs-dilation grid; reversal flips the tap.
Literal eval_convolution(const Instruction& instr, const Literal& lhs, const Literal& rhs) {
  const ConvDims& cd = instr.attrs.conv;
  const auto& window = instr.attrs.window;
  const Shape& ls = lhs.shape();
  const Shape& ks = rhs.shape();
  const Shape& os = instr.shape;
  const size_t spatial = window.size();
  if (lhs.is_tuple() || rhs.is_tuple() || os.is_tuple() || cd.input_spatial.size() != spatial ||
      cd.kernel_spatial.size() != spatial || cd.output_spatial.size() != spatial ||
      ls.rank() != static_cast<int>(spatial + 2) || ks.rank() != ls.rank() ||
      os.rank() != ls.rank())
    fail(instr, "convolution ranks and dimension labels do not match");
  auto with = [](std::vector<int64_t> spatial_dims, int64_t a, int64_t b) {
    spatial_dims.push_back(a);
    spatial_dims.push_back(b);
    return spatial_dims;
  };
  check_labels(instr, with(cd.input_spatial, cd.input_batch, cd.input_feature), "input");
  check_labels(instr, with(cd.kernel_spatial, cd.kernel_input_feature, cd.kernel_output_feature),
               "kernel");
  check_labels(instr, with(cd.output_spatial, cd.output_batch, cd.output_feature), "output");
  const int64_t groups = instr.attrs.feature_group_count;
  const int64_t batch_groups = instr.attrs.batch_group_count;
  const int64_t n = ls.dim(static_cast<int>(cd.input_batch));
  const int64_t c = ls.dim(static_cast<int>(cd.input_feature));
  const int64_t kc = ks.dim(static_cast<int>(cd.kernel_input_feature));
  const int64_t o = ks.dim(static_cast<int>(cd.kernel_output_feature));
  if (groups < 1 || batch_groups < 1 || c != kc * groups || o % groups != 0 ||
      n % batch_groups != 0 || o % batch_groups != 0)
    fail(instr, fmt::format("feature/batch group counts {}/{} do not divide the features", groups,
                            batch_groups));
  if (os.dim(static_cast<int>(cd.output_batch)) != n / batch_groups ||
      os.dim(static_cast<int>(cd.output_feature)) != o)
    fail(instr, "result batch or feature size does not match the convolution");
  std::vector<int64_t> kernel_sizes;
  for (size_t i = 0; i < spatial; ++i) {
    const WindowDim& w = window[i];
    const int64_t in = ls.dim(static_cast<int>(cd.input_spatial[i]));
    const int64_t k = ks.dim(static_cast<int>(cd.kernel_spatial[i]));
    if (w.size != k || w.stride < 1 || w.base_dilation < 1 || w.window_dilation < 1)
      fail(instr, "window does not match the kernel");
    const int64_t padded = (in - 1) * w.base_dilation + 1 + w.pad_low + w.pad_high;
    const int64_t extent = (k - 1) * w.window_dilation + 1;
    const int64_t expected = (in == 0 || padded < extent) ? 0 : (padded - extent) / w.stride + 1;
    if (os.dim(static_cast<int>(cd.output_spatial[i])) != expected)
      fail(instr, fmt::format("output spatial dim {} should be {}", i, expected));
    kernel_sizes.push_back(k);
  }

  const auto l_strides = row_major_strides(ls.dims());
  const auto k_strides = row_major_strides(ks.dims());
  const int64_t out_features_per_group = o / groups;
  const int64_t out_features_per_batch_group = o / batch_groups;
  const int64_t batch_per_group = n / batch_groups;
  Literal result(os);
  Accumulator acc(os.dtype());
  size_t k = 0;
  std::vector<int64_t> tap_index;  // reused across output elements
  for_each_index(os.dims(), [&](const std::vector<int64_t>& out_idx) {
    const int64_t ob = out_idx[static_cast<size_t>(cd.output_batch)];
    const int64_t of = out_idx[static_cast<size_t>(cd.output_feature)];
    const int64_t feature_group = of / out_features_per_group;
    const int64_t in_batch = (of / out_features_per_batch_group) * batch_per_group + ob;
    acc.reset();
    for_each_index_in(kernel_sizes, tap_index, [&](const std::vector<int64_t>& tap) {
      int64_t l_off = in_batch * l_strides[static_cast<size_t>(cd.input_batch)];
      int64_t k_off = of * k_strides[static_cast<size_t>(cd.kernel_output_feature)];
      for (size_t i = 0; i < spatial; ++i) {
        const WindowDim& w = window[i];
        const int64_t s = out_idx[static_cast<size_t>(cd.output_spatial[i])];
        const int64_t p = s * w.stride + tap[i] * w.window_dilation - w.pad_low;
        const int64_t in = ls.dim(static_cast<int>(cd.input_spatial[i]));
        if (p < 0 || p > (in - 1) * w.base_dilation || p % w.base_dilation != 0) return;
        l_off += (p / w.base_dilation) * l_strides[static_cast<size_t>(cd.input_spatial[i])];
        const int64_t kernel_pos = w.reversal ? kernel_sizes[i] - 1 - tap[i] : tap[i];
        k_off += kernel_pos * k_strides[static_cast<size_t>(cd.kernel_spatial[i])];
      }
      for (int64_t f = 0; f < kc; ++f) {
        const int64_t in_feature = feature_group * kc + f;
        acc.add(lhs.values()[static_cast<size_t>(
                    l_off + in_feature * l_strides[static_cast<size_t>(cd.input_feature)])],
                rhs.values()[static_cast<size_t>(
                    k_off + f * k_strides[static_cast<size_t>(cd.kernel_input_feature)])]);
      }
    });
    result.mutable_values()[k++] = acc.result();
  });
  return result;
}

}  // namespace podsim::compiler::interp
