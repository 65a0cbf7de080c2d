// Literal: a host tensor value (or tuple of values). Used for constants in the
// IR and as the value type of the reference interpreter. Elements are stored
// as double whatever the dtype: exact for every integer dtype podsim models
// (|x| < 2^53) and for f32/bf16/f16; ops round results back to the dtype.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/shape.h"

namespace podsim::compiler {

// Complex arrays (c64, c128) hold two doubles per element, (real, imag)
// interleaved: values()[2i] and values()[2i + 1]; at/set/linear_index then
// address the real part of the element (the imaginary part follows it).
class Literal {
 public:
  static int64_t values_per_element(DType dtype);
  Literal() = default;            // empty tuple
  explicit Literal(Shape shape);  // zero-filled array, or tuple of zero leaves
  Literal(Shape shape,
          std::vector<double> values);  // array; values.size() == elements (x2 complex)
  static Literal scalar(DType dtype, double value);
  static Literal tuple(std::vector<Literal> elements);

  const Shape& shape() const { return shape_; }
  bool is_tuple() const { return shape_.is_tuple(); }
  const std::vector<double>& values() const { return values_; }
  std::vector<double>& mutable_values() { return values_; }
  double at(const std::vector<int64_t>& index) const { return values_[linear_index(index)]; }
  void set(const std::vector<int64_t>& index, double v) { values_[linear_index(index)] = v; }
  double scalar_value() const { return values_.at(0); }
  const std::vector<Literal>& elements() const { return elements_; }
  std::vector<Literal>& mutable_elements() { return elements_; }
  const Literal& element(int i) const { return elements_[static_cast<size_t>(i)]; }

  // Row-major linear index of a multi-index (no bounds check beyond assert).
  int64_t linear_index(const std::vector<int64_t>& index) const;

  bool operator==(const Literal& other) const {
    return shape_ == other.shape_ && values_ == other.values_ && elements_ == other.elements_;
  }

  // XLA text of the value part, e.g. "{ {1, 2}, {3, 4} }" or "42" for a scalar,
  // "true"/"false" for pred.
  std::string values_to_string() const;

 private:
  Shape shape_;
  std::vector<double> values_;     // arrays: row-major elements
  std::vector<Literal> elements_;  // tuples
};

// Rounds a double to what the dtype can represent (f32 rounding, bf16 round to
// nearest even, integer wrap-around, pred to 0/1).
double round_to_dtype(DType dtype, double value);

// Calls fn(index) for every multi-index of dims in row-major order, in a
// caller-owned index vector (inner loops that must not allocate per call).
template <typename Fn>
void for_each_index_in(const std::vector<int64_t>& dims, std::vector<int64_t>& index, Fn&& fn) {
  for (int64_t d : dims)
    if (d == 0) return;
  index.assign(dims.size(), 0);
  while (true) {
    fn(static_cast<const std::vector<int64_t>&>(index));
    int k = static_cast<int>(dims.size()) - 1;
    while (k >= 0) {
      if (++index[static_cast<size_t>(k)] < dims[static_cast<size_t>(k)]) break;
      index[static_cast<size_t>(k)] = 0;
      --k;
    }
    if (k < 0) return;
  }
}

// Calls fn(index) for every multi-index of dims in row-major order.
template <typename Fn>
void for_each_index(const std::vector<int64_t>& dims, Fn&& fn) {
  std::vector<int64_t> index;
  for_each_index_in(dims, index, std::forward<Fn>(fn));
}

}  // namespace podsim::compiler
