// Overflow-checked int64 arithmetic for sizes that come from user input
// (element counts, bytes, device counts). A product of user-given dims can
// exceed 2^63 and signed overflow is undefined behaviour, so code that
// multiplies such sizes asks here and gets nullopt instead of a wrapped value.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace podsim {

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) return std::nullopt;
  return result;
}

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) return std::nullopt;
  return result;
}

// The product of all factors (1 for none); nullopt when it overflows int64.
inline std::optional<int64_t> checked_product(std::initializer_list<int64_t> factors) {
  int64_t result = 1;
  for (int64_t f : factors)
    if (__builtin_mul_overflow(result, f, &result)) return std::nullopt;
  return result;
}

// Optional-propagating forms, for chains of sums of products: nullopt in,
// nullopt out.
inline std::optional<int64_t> checked_mul(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a || !b) return std::nullopt;
  return checked_mul(*a, *b);
}

inline std::optional<int64_t> checked_add(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a || !b) return std::nullopt;
  return checked_add(*a, *b);
}

}  // namespace podsim
