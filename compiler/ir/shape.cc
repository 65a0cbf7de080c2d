// Shape helpers and XLA text rendering of shapes.
#include "compiler/ir/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace podsim::compiler {

Shape Shape::tuple(std::vector<Shape> elements) {
  Shape s;
  s.tuple_shapes_ = std::move(elements);
  return s;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

namespace {
void collect_leaves(const Shape& s, std::vector<const Shape*>& out) {
  if (!s.is_tuple()) {
    out.push_back(&s);
    return;
  }
  for (const auto& e : s.tuple_shapes()) collect_leaves(e, out);
}
}  // namespace

std::vector<const Shape*> Shape::leaves() const {
  std::vector<const Shape*> out;
  collect_leaves(*this, out);
  return out;
}

int64_t Shape::leaf_count() const {
  if (!is_tuple_) return 1;
  int64_t n = 0;
  for (const auto& e : tuple_shapes_) n += e.leaf_count();
  return n;
}

int64_t Shape::byte_size() const {
  if (!is_tuple_) return num_elements() * dtype_bytes(dtype_);
  int64_t total = 0;
  for (const auto& s : tuple_shapes_) total += s.byte_size();
  return total;
}

bool Shape::operator==(const Shape& other) const {
  if (is_tuple_ != other.is_tuple_) return false;
  if (is_tuple_) return tuple_shapes_ == other.tuple_shapes_;
  return dtype_ == other.dtype_ && dims_ == other.dims_;
}

std::string Shape::to_string(bool print_layout) const {
  if (is_tuple_) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_shapes_.size(); ++i) {
      if (i) out += ", ";
      out += tuple_shapes_[i].to_string(print_layout);
    }
    return out + ")";
  }
  std::string out = fmt::format("{}[{}]", dtype_name(dtype_), fmt::join(dims_, ","));
  if (print_layout && !layout_.empty()) out += fmt::format("{{{}}}", fmt::join(layout_, ","));
  return out;
}

}  // namespace podsim::compiler
