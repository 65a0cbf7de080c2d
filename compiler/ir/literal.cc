// Literal construction, dtype rounding and XLA text of values.
#include "compiler/ir/literal.h"

#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace podsim::compiler {

Literal::Literal(Shape shape) : shape_(std::move(shape)) {
  if (shape_.is_tuple()) {
    for (const auto& s : shape_.tuple_shapes()) elements_.emplace_back(s);
  } else {
    values_.assign(static_cast<size_t>(shape_.num_elements() * values_per_element(shape_.dtype())),
                   0.0);
  }
}

int64_t Literal::values_per_element(DType dtype) { return is_complex(dtype) ? 2 : 1; }

Literal::Literal(Shape shape, std::vector<double> values)
    : shape_(std::move(shape)), values_(std::move(values)) {
  assert(shape_.is_array() && static_cast<int64_t>(values_.size()) ==
                                  shape_.num_elements() * values_per_element(shape_.dtype()));
}

Literal Literal::scalar(DType dtype, double value) {
  return Literal(Shape::scalar(dtype), {round_to_dtype(dtype, value)});
}

Literal Literal::tuple(std::vector<Literal> elements) {
  Literal l;
  std::vector<Shape> shapes;
  for (const auto& e : elements) shapes.push_back(e.shape());
  l.shape_ = Shape::tuple(std::move(shapes));
  l.elements_ = std::move(elements);
  return l;
}

int64_t Literal::linear_index(const std::vector<int64_t>& index) const {
  assert(static_cast<int>(index.size()) == shape_.rank());
  int64_t linear = 0;
  for (int i = 0; i < shape_.rank(); ++i) {
    assert(index[static_cast<size_t>(i)] >= 0 && index[static_cast<size_t>(i)] < shape_.dim(i));
    linear = linear * shape_.dim(i) + index[static_cast<size_t>(i)];
  }
  return linear * values_per_element(shape_.dtype());
}

namespace {
// bf16 = the top 16 bits of an f32, rounded to nearest even.
double round_bf16(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return v;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7FFFu + lsb;
  bits &= 0xFFFF0000u;
  return static_cast<double>(std::bit_cast<float>(bits));
}
// f16: IEEE binary16 (10 mantissa bits, exponent range [-14, 15]); rounding by
// scaling into the representable grid, nearest even.
double round_f16(double v) {
  if (!std::isfinite(v) || v == 0.0) return v;
  double a = std::fabs(v);
  if (a >= 65520.0) return std::copysign(INFINITY, v);
  int exp;
  std::frexp(a, &exp);  // a = m * 2^exp, m in [0.5, 1)
  int e = std::max(exp - 1, -14);
  double quantum = std::ldexp(1.0, e - 10);
  return std::copysign(std::nearbyint(a / quantum) * quantum, v);
}
// A binary float with `mantissa` stored bits and smallest normal exponent
// `min_exponent`, rounded to nearest even; past `max_finite` it overflows to
// infinity, or to NaN for the formats without one (XLA's f8 "fn"/"fnuz").
double round_small_float(double v, int mantissa, int min_exponent, double max_finite,
                         bool has_inf) {
  if (!std::isfinite(v) || v == 0.0) return v;
  double a = std::fabs(v);
  int exp;
  std::frexp(a, &exp);  // a = m * 2^exp, m in [0.5, 1)
  int e = std::max(exp - 1, min_exponent);
  double quantum = std::ldexp(1.0, e - mantissa);
  double r = std::nearbyint(a / quantum) * quantum;
  if (r > max_finite) return has_inf ? std::copysign(INFINITY, v) : NAN;
  return std::copysign(r, v);
}
double wrap_signed(double v, int bits) {
  double t = std::trunc(v);
  if (!std::isfinite(t)) return 0.0;
  double m = std::ldexp(1.0, bits);
  double r = std::fmod(t, m);
  if (r < 0) r += m;
  if (r >= m / 2) r -= m;
  return r;
}
double wrap_unsigned(double v, int bits) {
  double t = std::trunc(v);
  if (!std::isfinite(t)) return 0.0;
  double m = std::ldexp(1.0, bits);
  double r = std::fmod(t, m);
  if (r < 0) r += m;
  return r;
}
}  // namespace

double round_to_dtype(DType dtype, double value) {
  switch (dtype) {
    case DType::kPred:
      return value != 0.0 ? 1.0 : 0.0;
    case DType::kS8:
      return wrap_signed(value, 8);
    case DType::kS32:
      return wrap_signed(value, 32);
    case DType::kS64:
      return std::trunc(value);  // beyond 2^53 doubles lose precision anyway
    case DType::kU8:
      return wrap_unsigned(value, 8);
    case DType::kU32:
      return wrap_unsigned(value, 32);
    case DType::kBF16:
      return round_bf16(value);
    case DType::kF16:
      return round_f16(value);
    case DType::kF32:
      return static_cast<double>(static_cast<float>(value));
    case DType::kF64:
      return value;
    case DType::kS16:
      return wrap_signed(value, 16);
    case DType::kS4:
      return wrap_signed(value, 4);
    case DType::kS2:
      return wrap_signed(value, 2);
    case DType::kU16:
      return wrap_unsigned(value, 16);
    case DType::kU64:
      return std::trunc(value) < 0 ? 0.0 : std::trunc(value);  // doubles hold 53 bits
    case DType::kU4:
      return wrap_unsigned(value, 4);
    case DType::kU2:
      return wrap_unsigned(value, 2);
    // f8 formats (OCP FP8 and the fnuz variants; ml_dtypes' parameters).
    case DType::kF8E4M3FN:
      return round_small_float(value, 3, -6, 448.0, false);
    case DType::kF8E5M2:
      return round_small_float(value, 2, -14, 57344.0, true);
    case DType::kF8E4M3FNUZ:
      return round_small_float(value, 3, -7, 240.0, false);
    case DType::kF8E5M2FNUZ:
      return round_small_float(value, 2, -15, 57344.0, false);
    case DType::kF8E4M3B11FNUZ:
      return round_small_float(value, 3, -10, 30.0, false);
    case DType::kF8E4M3:
      return round_small_float(value, 3, -6, 240.0, true);
    case DType::kF8E3M4:
      return round_small_float(value, 4, -2, 15.5, true);
    case DType::kC64:
      return static_cast<double>(static_cast<float>(value));  // one component
    case DType::kC128:
      return value;
    case DType::kToken:
      return 0.0;
  }
  return value;
}

namespace {
std::string format_element(DType dtype, double v) {
  if (dtype == DType::kPred) return v != 0.0 ? "true" : "false";
  if (is_integral(dtype)) return fmt::format("{}", static_cast<int64_t>(v));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);  // shortest round-trip representation
}

void append_values(const Literal& lit, int dim, int64_t& offset, std::string& out) {
  const Shape& s = lit.shape();
  if (dim == s.rank()) {
    if (is_complex(s.dtype())) {  // XLA: "(re, im)"
      out += '(';
      out += format_element(s.dtype(), lit.values()[static_cast<size_t>(offset++)]);
      out += ", ";
      out += format_element(s.dtype(), lit.values()[static_cast<size_t>(offset++)]);
      out += ')';
      return;
    }
    out += format_element(s.dtype(), lit.values()[static_cast<size_t>(offset++)]);
    return;
  }
  out += "{ ";
  for (int64_t i = 0; i < s.dim(dim); ++i) {
    if (i) out += ", ";
    append_values(lit, dim + 1, offset, out);
  }
  out += " }";
}
}  // namespace

std::string Literal::values_to_string() const {
  if (is_tuple()) {
    std::string out = "(";
    for (size_t i = 0; i < elements_.size(); ++i) {
      if (i) out += ", ";
      out += elements_[i].values_to_string();
    }
    return out + ")";
  }
  std::string out;
  int64_t offset = 0;
  if (shape_.rank() > 0 && shape_.num_elements() == 0) return "{}";
  append_values(*this, 0, offset, out);
  return out;
}

}  // namespace podsim::compiler
