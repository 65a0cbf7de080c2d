// Shapes: an element type with dimensions (an array), or a tuple of shapes.
// An optional layout (minor_to_major) is kept only so HLO text round-trips;
// podsim's semantics never depend on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/dtype.h"

namespace podsim::compiler {

class Shape {
 public:
  Shape() = default;  // an empty tuple
  Shape(DType dtype, std::vector<int64_t> dims)
      : dtype_(dtype), dims_(std::move(dims)), is_tuple_(false) {}
  static Shape tuple(std::vector<Shape> elements);
  static Shape scalar(DType dtype) { return Shape(dtype, {}); }

  bool is_tuple() const { return is_tuple_; }
  bool is_array() const { return !is_tuple_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  int rank() const { return static_cast<int>(dims_.size()); }
  bool is_scalar() const { return !is_tuple_ && dims_.empty(); }
  int64_t num_elements() const;  // arrays only
  int64_t byte_size() const;     // arrays: elements * dtype bytes; tuples: sum of leaves
  const std::vector<Shape>& tuple_shapes() const { return tuple_shapes_; }
  const Shape& tuple_shape(int i) const { return tuple_shapes_[static_cast<size_t>(i)]; }
  // The array leaves of a (possibly nested) tuple in pre-order; an array is
  // its own single leaf. Pointers into this shape.
  std::vector<const Shape*> leaves() const;
  int64_t leaf_count() const;

  const std::vector<int64_t>& layout() const { return layout_; }  // minor_to_major; may be empty
  void set_layout(std::vector<int64_t> minor_to_major) { layout_ = std::move(minor_to_major); }
  void set_dtype(DType t) { dtype_ = t; }
  void set_dims(std::vector<int64_t> dims) { dims_ = std::move(dims); }
  std::vector<Shape>& mutable_tuple_shapes() { return tuple_shapes_; }

  // Equality ignores layouts.
  bool operator==(const Shape& other) const;
  bool same_dims_and_type(const Shape& other) const { return *this == other; }

  // XLA text: "f32[8,16]{1,0}", "(f32[2], s32[])"; print_layout=false omits {..}.
  std::string to_string(bool print_layout = true) const;

 private:
  DType dtype_ = DType::kF32;
  std::vector<int64_t> dims_;
  std::vector<int64_t> layout_;
  bool is_tuple_ = true;
  std::vector<Shape> tuple_shapes_;
};

}  // namespace podsim::compiler
