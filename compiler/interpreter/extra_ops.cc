// XLA's less common per-device ops: bitcast, bitcast-convert, sort, topk,
// fft, map, select-and-scatter, cholesky, triangular-solve, batch-norm
// (training / inference / grad), and the value-preserving ops
// (opt-barrier, domain, add-dependency, after-all, set-dimension-size,
// get-dimension-size, dynamic-reshape). Semantics follow XLA's operation
// semantics; dense linear algebra is computed in double, then rounded.
#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <numbers>

#include <fmt/format.h>

#include "compiler/interpreter/local_ops.h"

namespace podsim::compiler::interp {

namespace {

using Complex = std::complex<double>;

const Literal& array(const Instruction& instr, const Operands& operands, size_t i) {
  if (i >= operands.size() || operands[i]->is_tuple())
    fail(instr, fmt::format("operand {} must be an array", i));
  return *operands[i];
}

// ---- bitcast -------------------------------------------------------------

// The row-major multi-index order of `shape`'s elements as they sit in
// memory under its layout (minor_to_major; none = row-major):
// physical[p] = row-major linear index of the p-th element in memory.
std::vector<int64_t> physical_order(const Shape& shape) {
  const int64_t n = shape.num_elements();
  std::vector<int64_t> order(static_cast<size_t>(n));
  const auto& layout = shape.layout();
  if (layout.empty()) {
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    return order;
  }
  const auto strides = row_major_strides(shape.dims());
  std::vector<int64_t> major_to_minor(layout.rbegin(), layout.rend());
  std::vector<int64_t> dims;
  for (int64_t d : major_to_minor) dims.push_back(shape.dim(static_cast<int>(d)));
  size_t p = 0;
  for_each_index(dims, [&](const std::vector<int64_t>& index) {
    int64_t linear = 0;
    for (size_t k = 0; k < index.size(); ++k)
      linear += index[k] * strides[static_cast<size_t>(major_to_minor[k])];
    order[p++] = linear;
  });
  return order;
}

bool is_permutation_layout(const Shape& shape) {
  if (shape.layout().empty()) return true;
  std::vector<int64_t> sorted = shape.layout();
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i)) return false;
  return static_cast<int>(sorted.size()) == shape.rank();
}

}  // namespace

// bitcast reinterprets the buffer: the operand's elements in memory order
// (its layout) are the result's elements in memory order (its layout). With
// equal or absent layouts that is a row-major reshape.
Literal eval_bitcast(const Instruction& instr, const Literal& operand) {
  if (operand.is_tuple() || operand.shape().num_elements() != instr.shape.num_elements() ||
      operand.shape().dtype() != instr.shape.dtype())
    fail(instr,
         "bitcast must keep the element type and count (use bitcast-convert to change the type)");
  const Shape& from = operand.shape();
  if (!is_permutation_layout(from) || !is_permutation_layout(instr.shape))
    fail(instr, "layout is not a permutation");
  if (from.layout() == instr.shape.layout() ||
      (from.layout().empty() && instr.shape.layout().empty()) || from.num_elements() == 0)
    return Literal(instr.shape, operand.values());
  const auto in_order = physical_order(from);
  const auto out_order = physical_order(instr.shape);
  const int64_t per = Literal::values_per_element(instr.shape.dtype());
  Literal result(instr.shape);
  auto& out = result.mutable_values();
  for (size_t p = 0; p < in_order.size(); ++p)
    for (int64_t c = 0; c < per; ++c)
      out[static_cast<size_t>(out_order[p] * per + c)] =
          operand.values()[static_cast<size_t>(in_order[p] * per + c)];
  return result;
}

namespace {

// ---- bitcast-convert -----------------------------------------------------

// IEEE binary16 bits of a value already rounded to f16.
uint64_t f16_bits(double v) {
  const uint64_t sign = std::signbit(v) ? 0x8000u : 0u;
  const double a = std::fabs(v);
  if (std::isnan(v)) return sign | 0x7E00u;
  if (std::isinf(v)) return sign | 0x7C00u;
  if (a == 0.0) return sign;
  int exp = 0;
  const double m = std::frexp(a, &exp);  // a = m * 2^exp, m in [0.5, 1)
  const int e = exp - 1;                 // a = (2m) * 2^e
  if (e < -14) return sign | static_cast<uint64_t>(std::nearbyint(a * std::ldexp(1.0, 24)));
  return sign | (static_cast<uint64_t>(e + 15) << 10) |
         static_cast<uint64_t>(std::nearbyint((2 * m - 1) * 1024));
}

double f16_value(uint64_t bits) {
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  const int e = static_cast<int>((bits >> 10) & 0x1F);
  const double m = static_cast<double>(bits & 0x3FF);
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31) return m == 0 ? sign * INFINITY : NAN;
  return sign * std::ldexp(1024 + m, e - 25);
}

// Little-endian bytes of one element's bit pattern (real component).
uint64_t element_bits(const Instruction& instr, DType t, double v) {
  switch (t) {
    case DType::kF32:
    case DType::kC64:
      return std::bit_cast<uint32_t>(static_cast<float>(v));
    case DType::kF64:
    case DType::kC128:
      return std::bit_cast<uint64_t>(v);
    case DType::kBF16:
      return std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16;
    case DType::kF16:
      return f16_bits(v);
    case DType::kPred:
      return v != 0.0 ? 1 : 0;
    default:
      break;
  }
  if (is_integral(t) && integral_bits(t) % 8 == 0) {
    const auto i = static_cast<int64_t>(v);
    const int bits = integral_bits(t);
    return bits == 64 ? static_cast<uint64_t>(i)
                      : static_cast<uint64_t>(i) & ((uint64_t{1} << bits) - 1);
  }
  fail(instr,
       fmt::format("bitcast-convert of {} is not supported by the interpreter", dtype_name(t)));
}

double element_value(const Instruction& instr, DType t, uint64_t bits) {
  switch (t) {
    case DType::kF32:
    case DType::kC64:
      return std::bit_cast<float>(static_cast<uint32_t>(bits));
    case DType::kF64:
    case DType::kC128:
      return std::bit_cast<double>(bits);
    case DType::kBF16:
      return std::bit_cast<float>(static_cast<uint32_t>(bits << 16));
    case DType::kF16:
      return f16_value(bits);
    case DType::kPred:
      return bits != 0 ? 1.0 : 0.0;
    default:
      break;
  }
  if (is_integral(t) && integral_bits(t) % 8 == 0) {
    const int bits_n = integral_bits(t);
    if (!is_signed_integral(t)) return static_cast<double>(bits);
    const uint64_t sign = uint64_t{1} << (bits_n - 1);
    const int64_t value = (bits & sign) ? static_cast<int64_t>(bits | ~((sign << 1) - 1))
                                        : static_cast<int64_t>(bits);
    return static_cast<double>(bits_n == 64 ? static_cast<int64_t>(bits) : value);
  }
  fail(instr,
       fmt::format("bitcast-convert to {} is not supported by the interpreter", dtype_name(t)));
}

// Component width in bytes (a complex element is two components).
int64_t component_bytes(DType t) { return is_complex(t) ? dtype_bytes(t) / 2 : dtype_bytes(t); }

}  // namespace

double bitcast_convert_scalar(const Instruction& instr, DType from, DType to, double value) {
  return element_value(instr, to, element_bits(instr, from, value));
}

// bitcast-convert: the operand's bytes (row-major, each element
// little-endian) read as the result type; a width change adds or removes
// the minor-most dim (f32[n] -> u8[n,4]), which keeps the byte stream.
Literal eval_bitcast_convert(const Instruction& instr, const Literal& operand) {
  const DType from = operand.shape().dtype();
  const DType to = instr.shape.dtype();
  if (operand.is_tuple()) fail(instr, "operand must be an array");
  const int64_t fb = component_bytes(from), tb = component_bytes(to);
  std::vector<uint8_t> bytes;
  bytes.reserve(operand.values().size() * static_cast<size_t>(fb));
  for (double v : operand.values()) {
    const uint64_t bits = element_bits(instr, from, v);
    for (int64_t b = 0; b < fb; ++b) bytes.push_back(static_cast<uint8_t>(bits >> (8 * b)));
  }
  Literal result(instr.shape);
  auto& out = result.mutable_values();
  if (static_cast<int64_t>(out.size()) * tb != static_cast<int64_t>(bytes.size()))
    fail(instr, fmt::format("{} bytes do not make {} (sizes must match up to the minor-most dim)",
                            bytes.size(), instr.shape.to_string(false)));
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t bits = 0;
    for (int64_t b = 0; b < tb; ++b)
      bits |= static_cast<uint64_t>(bytes[i * static_cast<size_t>(tb) + static_cast<size_t>(b)])
              << (8 * b);
    out[i] = element_value(instr, to, bits);
  }
  return result;
}

namespace {

// Calls fn(base, stride, n) for every 1-D line of `dims` along `dim`
// (base = row-major linear index of the line's first element).
template <typename Fn>
void for_each_line(const std::vector<int64_t>& dims, int64_t dim, Fn&& fn) {
  const auto d = static_cast<size_t>(dim);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < d; ++i) outer *= dims[i];
  for (size_t i = d + 1; i < dims.size(); ++i) inner *= dims[i];
  const int64_t n = dims[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) fn(o * n * inner + i, inner, n);
}

}  // namespace

// sort: every operand permuted alike along `dimensions[0]` by the comparator
// (2N scalars: operand i's lhs and rhs at parameters 2i, 2i+1; true = less).
// A stable sort is used whether or not is_stable is set (a valid order).
Literal eval_sort(const Instruction& instr, const Operands& operands, const OpContext& context) {
  if (operands.empty()) fail(instr, "needs an operand");
  const Shape& shape = array(instr, operands, 0).shape();
  for (size_t i = 0; i < operands.size(); ++i)
    if (array(instr, operands, i).shape().dims() != shape.dims())
      fail(instr, "operands differ in dims");
  if (instr.attrs.dimensions.size() != 1 || instr.attrs.dimensions[0] < 0 ||
      instr.attrs.dimensions[0] >= shape.rank())
    fail(instr, "needs one sort dimension within the rank");
  const ScalarFunction& less = context.combiner(instr.to_apply());
  if (less.num_parameters() != 2 * static_cast<int>(operands.size()) || less.num_results() != 1)
    fail(instr, "comparator must take two scalars per operand and return a pred");
  std::vector<Literal> sorted;
  for (const Literal* op : operands) sorted.push_back(*op);
  std::vector<double> args(2 * operands.size());
  std::vector<int64_t> perm;
  for_each_line(
      shape.dims(), instr.attrs.dimensions[0], [&](int64_t base, int64_t stride, int64_t n) {
        perm.resize(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
        std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
          for (size_t k = 0; k < operands.size(); ++k) {
            args[2 * k] = operands[k]->values()[static_cast<size_t>(base + a * stride)];
            args[2 * k + 1] = operands[k]->values()[static_cast<size_t>(base + b * stride)];
          }
          double r = 0;
          less.apply(args.data(), &r);
          return r != 0.0;
        });
        for (size_t k = 0; k < operands.size(); ++k)
          for (int64_t i = 0; i < n; ++i)
            sorted[k].mutable_values()[static_cast<size_t>(base + i * stride)] =
                operands[k]
                    ->values()[static_cast<size_t>(base + perm[static_cast<size_t>(i)] * stride)];
      });
  if (sorted.size() == 1) return std::move(sorted[0]);
  return Literal::tuple(std::move(sorted));
}

// topk(x), k: the k largest (or smallest, largest=false) of the last dim in
// order, ties by lower index, and their s32 indices: tuple(values, indices).
// XLA's custom-call "TopK" is the same with k = the result's last dim and
// the order given by its comparator (value a, value b, index a, index b).
Literal eval_topk(const Instruction& instr, const Literal& operand, const OpContext& context) {
  const Shape& shape = operand.shape();
  if (operand.is_tuple() || shape.rank() < 1) fail(instr, "operand must be an array of rank >= 1");
  if (!instr.shape.is_tuple() || instr.shape.tuple_shapes().size() != 2 ||
      instr.shape.tuple_shape(0).rank() < 1)
    fail(instr, "result must be (values, indices)");
  const bool custom = instr.opcode == Opcode::kCustomCall;
  const Shape& values_shape = instr.shape.tuple_shape(0);
  const int64_t k = custom ? values_shape.dim(values_shape.rank() - 1) : instr.attrs.k;
  const int64_t n = shape.dim(shape.rank() - 1);
  if (k < 0 || k > n) fail(instr, fmt::format("k = {} is outside [0, {}]", k, n));
  const ScalarFunction* comparator = nullptr;
  if (!instr.called.empty()) {
    comparator = &context.combiner(instr.to_apply());
    if (comparator->num_parameters() != 2 && comparator->num_parameters() != 4)
      fail(instr, "comparator must take (a, b) or (a, b, index a, index b)");
  }
  Literal values(values_shape), indices(instr.shape.tuple_shape(1));
  const int64_t rows = n == 0 ? 0 : shape.num_elements() / n;
  std::vector<int64_t> perm(static_cast<size_t>(n));
  const bool largest = instr.attrs.largest;
  double args[4] = {0, 0, 0, 0};
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = operand.values().data() + r * n;
    for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      if (!comparator) return largest ? row[a] > row[b] : row[a] < row[b];
      args[0] = row[a];
      args[1] = row[b];
      args[2] = static_cast<double>(a);
      args[3] = static_cast<double>(b);
      double less = 0;
      comparator->apply(args, &less);
      return less != 0.0;
    });
    for (int64_t i = 0; i < k; ++i) {
      values.mutable_values()[static_cast<size_t>(r * k + i)] = row[perm[static_cast<size_t>(i)]];
      indices.mutable_values()[static_cast<size_t>(r * k + i)] =
          static_cast<double>(perm[static_cast<size_t>(i)]);
    }
  }
  return Literal::tuple({std::move(values), std::move(indices)});
}

namespace {

// In-place 1-D DFT of every line along `dim`: X[k] = sum_n x[n] w^(nk),
// w = exp(-+2 pi i / n), scaled by 1/n for the inverse (naive, O(n^2)).
void dft_along(std::vector<Complex>& data, const std::vector<int64_t>& dims, int64_t dim,
               bool inverse) {
  std::vector<Complex> line, out;
  const int64_t n = dims[static_cast<size_t>(dim)];
  std::vector<Complex> twiddle(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    twiddle[static_cast<size_t>(j)] =
        std::polar(1.0, (inverse ? 2 : -2) * std::numbers::pi * static_cast<double>(j) /
                            static_cast<double>(n));
  for_each_line(dims, dim, [&](int64_t base, int64_t stride, int64_t len) {
    line.resize(static_cast<size_t>(len));
    out.assign(static_cast<size_t>(len), Complex(0, 0));
    for (int64_t i = 0; i < len; ++i)
      line[static_cast<size_t>(i)] = data[static_cast<size_t>(base + i * stride)];
    for (int64_t kk = 0; kk < len; ++kk) {
      Complex s(0, 0);
      for (int64_t j = 0; j < len; ++j)
        s += line[static_cast<size_t>(j)] * twiddle[static_cast<size_t>((j * kk) % len)];
      out[static_cast<size_t>(kk)] = inverse ? s / static_cast<double>(len) : s;
    }
    for (int64_t i = 0; i < len; ++i)
      data[static_cast<size_t>(base + i * stride)] = out[static_cast<size_t>(i)];
  });
}

}  // namespace

// fft over the last fft_length.size() dims: FFT / IFFT complex -> complex;
// RFFT real -> complex keeping the last dim's first L/2 + 1 entries; IRFFT
// the inverse, completing the last dim by Hermitian symmetry
// (X[L - k] = conj(X[k])) and returning the real part.
Literal eval_fft(const Instruction& instr, const Literal& operand) {
  const std::string& type = instr.attrs.fft_type;
  const auto& lengths = instr.attrs.fft_length;
  const Shape& in_shape = operand.shape();
  const auto rank = static_cast<int64_t>(in_shape.rank());
  const auto L = static_cast<int64_t>(lengths.size());
  if (operand.is_tuple() || L < 1 || L > 3 || L > rank)
    fail(instr, "fft_length must name 1 to 3 trailing dims");
  const bool real_in = type == "RFFT";
  if (type != "FFT" && type != "IFFT" && type != "RFFT" && type != "IRFFT")
    fail(instr, fmt::format("unknown fft_type '{}'", type));
  if (real_in == is_complex(in_shape.dtype()))
    fail(instr, "operand type does not match the fft_type");
  // Complex working buffer with the full (un-truncated) transform dims.
  std::vector<int64_t> dims = in_shape.dims();
  for (int64_t i = 0; i < L; ++i) {
    const auto d = static_cast<size_t>(rank - L + i);
    const int64_t expected = (type == "IRFFT" && i == L - 1)
                                 ? lengths[static_cast<size_t>(i)] / 2 + 1
                                 : lengths[static_cast<size_t>(i)];
    if (dims[d] != expected)
      fail(instr, fmt::format("dim {} is {}, fft_length needs {}", d, dims[d], expected));
  }
  std::vector<Complex> data(static_cast<size_t>(in_shape.num_elements()));
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = real_in ? Complex(operand.values()[i], 0)
                      : Complex(operand.values()[2 * i], operand.values()[2 * i + 1]);
  const bool inverse = type == "IFFT" || type == "IRFFT";
  const int64_t last_transformed = type == "IRFFT" ? L - 1 : L;  // IRFFT's last dim is done below
  for (int64_t i = 0; i < last_transformed; ++i) dft_along(data, dims, rank - L + i, inverse);
  const DType out_type = instr.shape.dtype();
  Literal result(instr.shape);
  auto& out = result.mutable_values();
  if (type == "FFT" || type == "IFFT") {
    for (size_t i = 0; i < data.size(); ++i) {
      out[2 * i] = round_to_dtype(out_type, data[i].real());
      out[2 * i + 1] = round_to_dtype(out_type, data[i].imag());
    }
    return result;
  }
  const int64_t n = lengths.back();
  const int64_t half = n / 2 + 1;
  const int64_t rows = static_cast<int64_t>(data.size()) / dims.back();
  if (type == "RFFT") {
    if (instr.shape.num_elements() != rows * half)
      fail(instr, "result shape does not hold L/2 + 1 outputs");
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t kk = 0; kk < half; ++kk) {
        const Complex v = data[static_cast<size_t>(r * n + kk)];
        out[static_cast<size_t>(2 * (r * half + kk))] = round_to_dtype(out_type, v.real());
        out[static_cast<size_t>(2 * (r * half + kk) + 1)] = round_to_dtype(out_type, v.imag());
      }
    return result;
  }
  // IRFFT: x[j] = 1/n sum_k X[k] e^(2 pi i jk/n), X[k] = conj(X[n - k]) for k >= half.
  if (instr.shape.num_elements() != rows * n) fail(instr, "result shape does not hold L outputs");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      Complex s(0, 0);
      for (int64_t kk = 0; kk < n; ++kk) {
        const Complex X = kk < half ? data[static_cast<size_t>(r * half + kk)]
                                    : std::conj(data[static_cast<size_t>(r * half + (n - kk))]);
        s += X * std::polar(1.0, 2 * std::numbers::pi * static_cast<double>((j * kk) % n) /
                                     static_cast<double>(n));
      }
      out[static_cast<size_t>(r * n + j)] =
          round_to_dtype(out_type, s.real() / static_cast<double>(n));
    }
  return result;
}

// map: the scalar computation applied element by element across operands.
Literal eval_map(const Instruction& instr, const Operands& operands, const OpContext& context) {
  const ScalarFunction& fn = context.combiner(instr.to_apply());
  if (fn.num_parameters() != static_cast<int>(operands.size()) || fn.num_results() != 1)
    fail(instr, "computation must take one scalar per operand and return one");
  for (size_t i = 0; i < operands.size(); ++i)
    if (array(instr, operands, i).shape().dims() != instr.shape.dims())
      fail(instr, "operand dims differ from the result");
  Literal result(instr.shape);
  std::vector<double> args(operands.size());
  auto& out = result.mutable_values();
  for (size_t e = 0; e < out.size(); ++e) {
    for (size_t i = 0; i < operands.size(); ++i) args[i] = operands[i]->values()[e];
    fn.apply(args.data(), &out[e]);
  }
  return result;
}

// select-and-scatter(operand, source, init): for each window (one per source
// element) the selected operand element is the first valid one that the
// select computation keeps against every later one (select(cur, e) false ->
// e); the source value is scattered into it with the scatter computation.
// Padding positions are never selected. Result starts at init.
Literal eval_select_and_scatter(const Instruction& instr, const Operands& operands,
                                const OpContext& context) {
  if (operands.size() != 3 || instr.called.size() != 2)
    fail(instr, "needs operand, source, init and two computations");
  const Literal& operand = array(instr, operands, 0);
  const Literal& source = array(instr, operands, 1);
  const Literal& init = array(instr, operands, 2);
  const auto& window = instr.attrs.window;
  const int rank = operand.shape().rank();
  if (static_cast<int>(window.size()) != rank || source.shape().rank() != rank ||
      !init.shape().is_scalar())
    fail(instr, "window, operand and source ranks differ (or init is not a scalar)");
  const ScalarFunction& select = context.combiner(instr.called[0]);
  const ScalarFunction& scatter = context.combiner(instr.called[1]);
  Literal result(instr.shape);
  std::fill(result.mutable_values().begin(), result.mutable_values().end(), init.values()[0]);
  std::vector<int64_t> wdims;
  for (const WindowDim& w : window) wdims.push_back(w.size);
  std::vector<int64_t> pos(static_cast<size_t>(rank)), best(static_cast<size_t>(rank)), tap;
  for_each_index(source.shape().dims(), [&](const std::vector<int64_t>& s) {
    bool have = false;
    double best_value = 0;
    for_each_index_in(wdims, tap, [&](const std::vector<int64_t>& w) {
      for (int d = 0; d < rank; ++d) {
        const WindowDim& wd = window[static_cast<size_t>(d)];
        const auto u = static_cast<size_t>(d);
        pos[u] = s[u] * wd.stride + w[u] * wd.window_dilation - wd.pad_low;
        if (pos[u] < 0 || pos[u] >= operand.shape().dim(d)) return;
      }
      const double v = operand.at(pos);
      if (have) {
        const double args[2] = {best_value, v};
        double keep = 0;
        select.apply(args, &keep);
        if (keep != 0.0) return;
      }
      have = true;
      best_value = v;
      best = pos;
    });
    if (!have) return;
    const int64_t at = result.linear_index(best);
    auto& out = result.mutable_values();
    out[static_cast<size_t>(at)] = scatter.apply(out[static_cast<size_t>(at)], source.at(s));
  });
  return result;
}

namespace {

// Calls fn(offset) for each n x n matrix of a [..., n, n] (or [..., m, n]) batch.
int64_t batch_count(const Shape& s) {
  int64_t b = 1;
  for (int i = 0; i + 2 < s.rank(); ++i) b *= s.dim(i);
  return b;
}

}  // namespace

// cholesky(a): lower=true gives L with a = L L^T from a's lower triangle;
// lower=false gives U with a = U^T U from its upper triangle. The other
// triangle is zero; a matrix that is not positive definite gives NaNs.
Literal eval_cholesky(const Instruction& instr, const Literal& a) {
  const Shape& s = a.shape();
  if (a.is_tuple() || s.rank() < 2 || s.dim(s.rank() - 1) != s.dim(s.rank() - 2))
    fail(instr, "operand must be [..., n, n]");
  const int64_t n = s.dim(s.rank() - 1);
  const bool lower = instr.attrs.lower;
  Literal result(instr.shape);
  const DType t = instr.shape.dtype();
  for (int64_t b = 0; b < batch_count(s); ++b) {
    const double* A = a.values().data() + b * n * n;
    // Work on the lower form: M(i, j) = A(i, j) (lower) or A(j, i) (upper).
    auto M = [&](int64_t i, int64_t j) { return lower ? A[i * n + j] : A[j * n + i]; };
    std::vector<double> L(static_cast<size_t>(n * n), 0.0);
    for (int64_t j = 0; j < n; ++j) {
      double d = M(j, j);
      for (int64_t k = 0; k < j; ++k)
        d -= L[static_cast<size_t>(j * n + k)] * L[static_cast<size_t>(j * n + k)];
      const double ljj = std::sqrt(d);
      L[static_cast<size_t>(j * n + j)] = ljj;
      for (int64_t i = j + 1; i < n; ++i) {
        double v = M(i, j);
        for (int64_t k = 0; k < j; ++k)
          v -= L[static_cast<size_t>(i * n + k)] * L[static_cast<size_t>(j * n + k)];
        L[static_cast<size_t>(i * n + j)] = v / ljj;
      }
    }
    double* out = result.mutable_values().data() + b * n * n;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        out[i * n + j] = round_to_dtype(
            t, lower ? L[static_cast<size_t>(i * n + j)] : L[static_cast<size_t>(j * n + i)]);
  }
  return result;
}

// triangular-solve(a, b): left_side solves op(a) x = b, otherwise x op(a) = b,
// with op = identity, transpose or adjoint (= transpose for reals), a's
// lower or upper triangle only, and a unit diagonal when unit_diagonal.
Literal eval_triangular_solve(const Instruction& instr, const Literal& a, const Literal& b) {
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  if (a.is_tuple() || b.is_tuple() || as.rank() < 2 || bs.rank() != as.rank())
    fail(instr, "operands must be [..., n, n] and [..., m, k]");
  const int64_t n = as.dim(as.rank() - 1);
  const int64_t rows = bs.dim(bs.rank() - 2), cols = bs.dim(bs.rank() - 1);
  const bool left = instr.attrs.left_side;
  if (as.dim(as.rank() - 2) != n || (left ? rows : cols) != n)
    fail(instr, "a's size does not match b");
  const bool transpose =
      instr.attrs.transpose_a == "TRANSPOSE" || instr.attrs.transpose_a == "ADJOINT";
  const DType t = instr.shape.dtype();
  Literal result(instr.shape);
  for (int64_t batch = 0; batch < batch_count(as); ++batch) {
    const double* A = a.values().data() + batch * n * n;
    // T = op(tri(a)); for the right side solve T^T y = b^T instead.
    std::vector<double> T(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const bool in_triangle = instr.attrs.lower ? j <= i : j >= i;
        double v = in_triangle ? A[i * n + j] : 0.0;
        if (i == j && instr.attrs.unit_diagonal) v = 1.0;
        const bool flip = transpose != !left;  // right side: transpose once more
        T[static_cast<size_t>(flip ? j * n + i : i * n + j)] = v;
      }
    const bool t_lower = instr.attrs.lower != (transpose != !left);
    const int64_t rhs_count = left ? cols : rows;
    const double* B = b.values().data() + batch * rows * cols;
    double* X = result.mutable_values().data() + batch * rows * cols;
    // Element (i, r) of the r-th right-hand side (a column of b, or a row on the right side).
    auto bidx = [&](int64_t i, int64_t r) { return left ? i * cols + r : r * cols + i; };
    std::vector<double> x(static_cast<size_t>(n));
    for (int64_t r = 0; r < rhs_count; ++r) {
      for (int64_t step = 0; step < n; ++step) {
        const int64_t i = t_lower ? step : n - 1 - step;
        double v = B[bidx(i, r)];
        for (int64_t step2 = 0; step2 < step; ++step2) {
          const int64_t j = t_lower ? step2 : n - 1 - step2;
          v -= T[static_cast<size_t>(i * n + j)] * x[static_cast<size_t>(j)];
        }
        x[static_cast<size_t>(i)] = v / T[static_cast<size_t>(i * n + i)];
      }
      for (int64_t i = 0; i < n; ++i) X[bidx(i, r)] = round_to_dtype(t, x[static_cast<size_t>(i)]);
    }
  }
  return result;
}

namespace {

struct FeatureStats {
  std::vector<double> mean, var;
};

// Per-feature mean and (biased) variance over every other dim.
FeatureStats feature_stats(const Literal& x, int64_t feature) {
  const auto& dims = x.shape().dims();
  const int64_t f = dims[static_cast<size_t>(feature)];
  FeatureStats s{std::vector<double>(static_cast<size_t>(f), 0.0),
                 std::vector<double>(static_cast<size_t>(f), 0.0)};
  const double count =
      static_cast<double>(x.shape().num_elements()) / static_cast<double>(std::max<int64_t>(f, 1));
  for_each_line(dims, feature, [&](int64_t base, int64_t stride, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      s.mean[static_cast<size_t>(i)] += x.values()[static_cast<size_t>(base + i * stride)];
  });
  for (double& m : s.mean) m /= count;
  for_each_line(dims, feature, [&](int64_t base, int64_t stride, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const double d =
          x.values()[static_cast<size_t>(base + i * stride)] - s.mean[static_cast<size_t>(i)];
      s.var[static_cast<size_t>(i)] += d * d;
    }
  });
  for (double& v : s.var) v /= count;
  return s;
}

// y = scale (x - mean) / sqrt(var + eps) + offset per feature.
Literal normalize(const Shape& shape, const Literal& x, int64_t feature,
                  const std::vector<double>& scale, const std::vector<double>& offset,
                  const std::vector<double>& mean, const std::vector<double>& var, double eps) {
  Literal y(shape);
  const DType t = shape.dtype();
  for_each_line(x.shape().dims(), feature, [&](int64_t base, int64_t stride, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const auto u = static_cast<size_t>(i);
      const auto at = static_cast<size_t>(base + i * stride);
      y.mutable_values()[at] = round_to_dtype(
          t, scale[u] * (x.values()[at] - mean[u]) / std::sqrt(var[u] + eps) + offset[u]);
    }
  });
  return y;
}

Literal vector_literal(const Shape& shape, const std::vector<double>& v) {
  std::vector<double> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = round_to_dtype(shape.dtype(), v[i]);
  return Literal(shape, std::move(r));
}

}  // namespace

Literal eval_batch_norm(const Instruction& instr, const Operands& operands) {
  const Literal& x = array(instr, operands, 0);
  const int64_t feature = instr.attrs.feature_index;
  if (feature < 0 || feature >= x.shape().rank()) fail(instr, "feature_index out of range");
  const int64_t f = x.shape().dim(static_cast<int>(feature));
  auto vec = [&](size_t i) {
    const Literal& v = array(instr, operands, i);
    if (v.shape().rank() != 1 || v.shape().dim(0) != f)
      fail(instr, fmt::format("operand {} must be [{}]", i, f));
    return v.values();
  };
  const double eps = instr.attrs.epsilon;
  switch (instr.opcode) {
    case Opcode::kBatchNormInference: {
      if (operands.size() != 5) fail(instr, "takes operand, scale, offset, mean, variance");
      return normalize(instr.shape, x, feature, vec(1), vec(2), vec(3), vec(4), eps);
    }
    case Opcode::kBatchNormTraining: {
      if (operands.size() != 3 || !instr.shape.is_tuple() || instr.shape.tuple_shapes().size() != 3)
        fail(instr, "takes operand, scale, offset and returns (output, mean, variance)");
      const FeatureStats s = feature_stats(x, feature);
      return Literal::tuple(
          {normalize(instr.shape.tuple_shape(0), x, feature, vec(1), vec(2), s.mean, s.var, eps),
           vector_literal(instr.shape.tuple_shape(1), s.mean),
           vector_literal(instr.shape.tuple_shape(2), s.var)});
    }
    default:
      break;
  }
  // batch-norm-grad(x, scale, mean, var, dy) -> (dx, dscale, doffset), with
  // sigma = sqrt(var + eps), m elements per feature (XLA's formula):
  //   doffset = sum dy;  dscale = sum dy (x - mean) / sigma;
  //   dx = scale / (sigma m) (m dy - sum dy - (x - mean) / sigma^2 sum dy (x - mean)).
  if (operands.size() != 5 || !instr.shape.is_tuple() || instr.shape.tuple_shapes().size() != 3)
    fail(instr,
         "takes operand, scale, mean, variance, grad_output and returns (grad_operand, grad_scale, "
         "grad_offset)");
  const Literal& dy = array(instr, operands, 4);
  if (dy.shape().dims() != x.shape().dims())
    fail(instr, "grad_output dims differ from the operand");
  const auto scale = vec(1), mean = vec(2), var = vec(3);
  std::vector<double> sum_dy(static_cast<size_t>(f), 0.0), sum_dy_xc(static_cast<size_t>(f), 0.0);
  for_each_line(x.shape().dims(), feature, [&](int64_t base, int64_t stride, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const auto u = static_cast<size_t>(i);
      const auto at = static_cast<size_t>(base + i * stride);
      sum_dy[u] += dy.values()[at];
      sum_dy_xc[u] += dy.values()[at] * (x.values()[at] - mean[u]);
    }
  });
  const double m =
      static_cast<double>(x.shape().num_elements()) / static_cast<double>(std::max<int64_t>(f, 1));
  Literal dx(instr.shape.tuple_shape(0));
  const DType t = dx.shape().dtype();
  for_each_line(x.shape().dims(), feature, [&](int64_t base, int64_t stride, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const auto u = static_cast<size_t>(i);
      const auto at = static_cast<size_t>(base + i * stride);
      const double var_eps = var[u] + eps;
      const double sigma = std::sqrt(var_eps);
      dx.mutable_values()[at] =
          round_to_dtype(t, scale[u] / (sigma * m) *
                                (m * dy.values()[at] - sum_dy[u] -
                                 (x.values()[at] - mean[u]) / var_eps * sum_dy_xc[u]));
    }
  });
  std::vector<double> dscale(static_cast<size_t>(f));
  for (size_t u = 0; u < dscale.size(); ++u) dscale[u] = sum_dy_xc[u] / std::sqrt(var[u] + eps);
  return Literal::tuple({std::move(dx), vector_literal(instr.shape.tuple_shape(1), dscale),
                         vector_literal(instr.shape.tuple_shape(2), sum_dy)});
}

}  // namespace podsim::compiler::interp
