// Test-value helpers of the interpreter: seeded random literals and
// tolerance-based comparison (used by the partitioner's verify mode).
#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/interpreter/interpreter.h"

namespace podsim::compiler {

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a tiny generator whose output is
// identical on every platform, unlike std:: distributions.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Literal random_leaf(const Shape& shape, uint64_t& state) {
  Literal result(shape);
  const DType dt = shape.dtype();
  const int bits = integral_bits(dt);
  for (double& v : result.mutable_values()) {
    const uint64_t r = splitmix64(state);
    if (dt == DType::kToken) {
      v = 0;
    } else if (is_floating(dt) || is_complex(dt)) {
      v = static_cast<double>(static_cast<int64_t>(r % 129) - 64) / 64.0;  // k/64, k in [-64, 64]
      if (significand_bits(dt) < 8)
        v = round_to_dtype(dt, v);  // f8: k/64 needs 7 bits; the nearest value it holds
    } else if (is_signed_integral(dt)) {
      // [-8, 8], or the whole range of s4 / s2.
      v = bits >= 5 ? static_cast<double>(static_cast<int64_t>(r % 17) - 8)
                    : static_cast<double>(static_cast<int64_t>(r % (uint64_t{1} << bits)) -
                                          (int64_t{1} << (bits - 1)));
    } else if (is_integral(dt)) {
      v = static_cast<double>(r %
                              (bits >= 4 ? 16 : uint64_t{1} << bits));  // [0, 15], or u2's [0, 3]
    } else {
      v = static_cast<double>(r & 1u);
    }
  }
  return result;
}

Literal random_value(const Shape& shape, uint64_t& state) {
  if (!shape.is_tuple()) return random_leaf(shape, state);
  std::vector<Literal> elements;
  for (const Shape& s : shape.tuple_shapes()) elements.push_back(random_value(s, state));
  return Literal::tuple(std::move(elements));
}

std::string index_text(const Shape& shape, size_t linear) {
  std::vector<int64_t> index(static_cast<size_t>(shape.rank()));
  auto rest = static_cast<int64_t>(linear);
  for (int i = shape.rank() - 1; i >= 0; --i) {
    index[static_cast<size_t>(i)] = rest % shape.dim(i);
    rest /= shape.dim(i);
  }
  return fmt::format("[{}]", fmt::join(index, ","));
}

void compare_into(const Literal& expected, const Literal& actual, double tolerance,
                  CompareScale scale, const std::string& path, Comparison& result) {
  auto mismatch = [&](std::string text) {
    if (result.ok) result.first_mismatch = std::move(text);
    result.ok = false;
  };
  if (!(expected.shape() == actual.shape())) {
    mismatch(fmt::format("{}shape: expected {}, got {}", path, expected.shape().to_string(false),
                         actual.shape().to_string(false)));
    return;
  }
  if (expected.is_tuple()) {
    for (size_t i = 0; i < expected.elements().size(); ++i)
      compare_into(expected.elements()[i], actual.elements()[i], tolerance, scale,
                   fmt::format("{}{{{}}}", path, i), result);
    return;
  }
  const bool floating =
      is_floating(expected.shape().dtype()) || is_complex(expected.shape().dtype());
  // The leaf's RMS over its finite values (kLeafRms).
  double rms = 0;
  if (scale == CompareScale::kLeafRms && floating) {
    double sum = 0;
    size_t count = 0;
    for (double e : expected.values())
      if (std::isfinite(e)) {
        sum += e * e;
        ++count;
      }
    rms = count ? std::sqrt(sum / static_cast<double>(count)) : 0.0;
  }
  for (size_t i = 0; i < expected.values().size(); ++i) {
    const double e = expected.values()[i];
    const double a = actual.values()[i];
    bool equal = false;
    if (std::isnan(e) || std::isnan(a)) {
      equal = std::isnan(e) && std::isnan(a);
    } else if (std::isinf(e) || std::isinf(a) || !floating) {
      equal = e == a;
      if (equal || !floating)
        result.max_abs_error = std::max(result.max_abs_error, equal ? 0.0 : std::fabs(e - a));
    } else {
      const double error = std::fabs(e - a);
      result.max_abs_error = std::max(result.max_abs_error, error);
      equal = error <= tolerance * (1.0 + std::max(std::fabs(e), rms));
    }
    if (!equal)
      mismatch(
          fmt::format("{}{}: expected {}, got {}", path, index_text(expected.shape(), i), e, a));
  }
}

}  // namespace

Literal random_literal(const Shape& shape, uint64_t seed) {
  uint64_t state = seed;
  return random_value(shape, state);
}

Comparison compare_literals(const Literal& expected, const Literal& actual, double tolerance,
                            CompareScale scale) {
  Comparison result;
  compare_into(expected, actual, tolerance, scale, "", result);
  return result;
}

}  // namespace podsim::compiler
