// Readers for HLO shapes, literals and structured attribute values.
#include "compiler/hlo/hlo_values.h"

#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace podsim::compiler::hlo_detail {

namespace {
constexpr const char* kDtypeHint =
    "known element types: pred s2 s4 s8 s16 s32 s64 u2 u4 u8 u16 u32 u64 bf16 f16 f32 f64 f8e4m3fn "
    "f8e5m2 "
    "f8e4m3fnuz f8e5m2fnuz f8e4m3b11fnuz f8e4m3 f8e3m4 c64 c128 token";

// Reads 'x'-separated integers ("3x3"); the first integer is required.
std::vector<int64_t> read_x_separated(HloCursor& c, std::string_view what) {
  std::vector<int64_t> values{c.integer(what)};
  while (c.peek_raw() == 'x') {
    c.set_pos(c.pos() + 1);
    values.push_back(c.integer(what));
  }
  return values;
}
}  // namespace

bool at_shape(HloCursor& c) {
  char next = c.peek();
  if (next == '(') return true;
  if (next == '%') return false;
  std::string_view n = c.peek_name();
  if (n.empty()) return false;
  size_t after = c.pos() + n.size();
  return after < c.text().size() && c.text()[after] == '[';
}

Shape read_shape(HloCursor& c) {
  if (c.consume('(')) {
    std::vector<Shape> elements;
    if (!c.consume(')')) {
      do {
        elements.push_back(read_shape(c));
      } while (c.consume(','));
      c.expect(')');
    }
    return Shape::tuple(std::move(elements));
  }
  size_t dtype_pos = c.pos();
  c.skip_space();
  dtype_pos = c.pos();
  std::string_view dtype_text = c.name("a shape");
  auto dtype = parse_dtype(dtype_text);
  if (!dtype)
    c.fail_at(dtype_pos, fmt::format("unknown element type '{}'", dtype_text), kDtypeHint);
  c.expect('[');
  std::vector<int64_t> dims;
  if (!c.consume(']')) {
    do {
      // A bounded dynamic dim "<=8" is read as its bound (XLA's static upper size).
      c.consume_text("<=");
      size_t p = c.pos();
      int64_t d = c.integer("a dimension size");
      if (d < 0) c.fail_at(p, fmt::format("negative dimension size {}", d));
      dims.push_back(d);
    } while (c.consume(','));
    c.expect(']');
  }
  // Sizes must stay far from int64 overflow everywhere downstream (bytes,
  // FLOPs, sums over many values): one array is capped at 2^60 bytes (1 EiB).
  int64_t bytes = dtype_bytes(*dtype);
  for (int64_t d : dims)
    if (__builtin_mul_overflow(bytes, d, &bytes) || bytes > (int64_t{1} << 60))
      c.fail_at(
          dtype_pos,
          fmt::format("shape {}[{}] is larger than 2^60 bytes", dtype_text, fmt::join(dims, ",")),
          "podsim models arrays up to 1 EiB; check the dimension sizes");
  Shape shape(*dtype, std::move(dims));
  // A layout follows the ']' directly; "f32[] {" is a scalar then a body.
  if (c.peek_raw() == '{') {
    c.set_pos(c.pos() + 1);
    std::vector<int64_t> minor_to_major;
    if (c.peek() != '}' && c.peek() != ':') {
      do {
        minor_to_major.push_back(c.integer("a layout dimension"));
      } while (c.consume(','));
    }
    if (c.consume(':')) {  // tiling / memory space: skip to the closing brace
      int depth = 0;
      while (true) {
        char ch = c.peek_raw();
        if (ch == '\0') c.fail_expected("'}' closing the layout");
        if (ch == '}' && depth == 0) break;
        if (ch == '(') ++depth;
        if (ch == ')') --depth;
        c.set_pos(c.pos() + 1);
      }
    }
    c.expect('}');
    if (!minor_to_major.empty() && static_cast<int>(minor_to_major.size()) != shape.rank())
      c.fail_at(c.pos() - 1, fmt::format("layout has {} entries but the shape has rank {}",
                                         minor_to_major.size(), shape.rank()));
    shape.set_layout(std::move(minor_to_major));
  }
  return shape;
}

std::vector<int64_t> read_int_list(HloCursor& c) {
  c.expect('{');
  std::vector<int64_t> values;
  if (c.consume('}')) return values;
  do {
    values.push_back(c.integer("an integer"));
  } while (c.consume(','));
  c.expect('}');
  return values;
}

std::vector<std::vector<int64_t>> read_int_list_list(HloCursor& c) {
  c.expect('{');
  std::vector<std::vector<int64_t>> lists;
  if (c.consume('}')) return lists;
  do {
    lists.push_back(read_int_list(c));
  } while (c.consume(','));
  c.expect('}');
  return lists;
}

std::vector<SliceDim> read_slice(HloCursor& c) {
  c.expect('{');
  std::vector<SliceDim> dims;
  if (c.consume('}')) return dims;
  do {
    c.expect('[');
    SliceDim d;
    d.start = c.integer("a slice start");
    c.expect(':');
    d.limit = c.integer("a slice limit");
    if (c.consume(':')) d.stride = c.integer("a slice stride");
    c.expect(']');
    dims.push_back(d);
  } while (c.consume(','));
  c.expect('}');
  return dims;
}

std::vector<PadDim> read_padding(HloCursor& c) {
  std::vector<PadDim> dims;
  do {
    PadDim d;
    d.low = c.integer("a padding low edge (low_high[_interior])");
    if (c.peek_raw() != '_') c.fail_expected("'_' between padding low and high");
    c.set_pos(c.pos() + 1);
    d.high = c.integer("a padding high edge");
    if (c.peek_raw() == '_') {
      c.set_pos(c.pos() + 1);
      d.interior = c.integer("an interior padding");
    }
    dims.push_back(d);
    if (c.peek_raw() != 'x') break;
    c.set_pos(c.pos() + 1);
  } while (true);
  return dims;
}

std::vector<WindowDim> read_window(HloCursor& c) {
  c.expect('{');
  std::vector<WindowDim> dims;
  bool have_size = false;
  auto check_count = [&](size_t pos, size_t count, std::string_view key) {
    if (!have_size) c.fail_at(pos, fmt::format("window '{}' given before 'size'", key));
    if (count != dims.size())
      c.fail_at(pos,
                fmt::format("window '{}' has {} dims but 'size' has {}", key, count, dims.size()));
  };
  while (!c.consume('}')) {
    size_t key_pos = c.pos();
    std::string key(
        c.name("a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal) or '}'"));
    c.expect('=');
    size_t value_pos = c.pos();
    if (key == "size") {
      auto sizes = read_x_separated(c, "a window size");
      dims.assign(sizes.size(), WindowDim{});
      for (size_t i = 0; i < sizes.size(); ++i) dims[i].size = sizes[i];
      have_size = true;
    } else if (key == "pad") {
      auto pads = read_padding(c);
      check_count(value_pos, pads.size(), key);
      for (size_t i = 0; i < pads.size(); ++i) {
        dims[i].pad_low = pads[i].low;
        dims[i].pad_high = pads[i].high;
      }
    } else if (key == "stride" || key == "lhs_dilate" || key == "rhs_dilate" ||
               key == "rhs_reversal") {
      auto values = read_x_separated(c, "a window value");
      check_count(value_pos, values.size(), key);
      for (size_t i = 0; i < values.size(); ++i) {
        if (key == "stride") dims[i].stride = values[i];
        if (key == "lhs_dilate") dims[i].base_dilation = values[i];
        if (key == "rhs_dilate") dims[i].window_dilation = values[i];
        if (key == "rhs_reversal") dims[i].reversal = values[i] != 0;
      }
    } else {
      c.fail_at(key_pos, fmt::format("unknown window field '{}'", key),
                "window fields: size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal");
    }
  }
  return dims;
}

namespace {
// One side of dim labels, e.g. "b01f": returns the position of each letter
// and of each spatial digit (digit k -> spatial[k]).
struct LabelPositions {
  int64_t first = -1, second = -1;  // 'b'/'f' or 'i'/'o'
  std::vector<int64_t> spatial;
};

LabelPositions read_labels(HloCursor& c, char first, char second, std::string_view side) {
  size_t start = c.pos();
  LabelPositions out;
  std::vector<int64_t> spatial_at(10, -1);
  int64_t index = 0;
  int spatial_count = 0;
  while (true) {
    char ch = c.peek_raw();
    if (ch == first && out.first < 0) {
      out.first = index;
    } else if (ch == second && out.second < 0) {
      out.second = index;
    } else if (std::isdigit(static_cast<unsigned char>(ch)) &&
               spatial_at[static_cast<size_t>(ch - '0')] < 0) {
      spatial_at[static_cast<size_t>(ch - '0')] = index;
      ++spatial_count;
    } else {
      break;
    }
    c.set_pos(c.pos() + 1);
    ++index;
  }
  if (out.first < 0 || out.second < 0)
    c.fail_at(start,
              fmt::format("{} dim labels need '{}' and '{}' exactly once", side, first, second),
              "dim_labels look like b01f_01io->b01f");
  for (int k = 0; k < spatial_count; ++k) {
    if (spatial_at[static_cast<size_t>(k)] < 0)
      c.fail_at(start, fmt::format("{} dim labels miss spatial dim {}", side, k));
    out.spatial.push_back(spatial_at[static_cast<size_t>(k)]);
  }
  return out;
}
}  // namespace

ConvDims read_dim_labels(HloCursor& c) {
  c.skip_space();
  size_t start = c.pos();
  LabelPositions input = read_labels(c, 'b', 'f', "input");
  if (c.peek_raw() != '_') c.fail_expected("'_' after the input dim labels");
  c.set_pos(c.pos() + 1);
  LabelPositions kernel = read_labels(c, 'i', 'o', "kernel");
  if (c.text().substr(c.pos(), 2) != "->") c.fail_expected("'->' after the kernel dim labels");
  c.set_pos(c.pos() + 2);
  LabelPositions output = read_labels(c, 'b', 'f', "output");
  if (input.spatial.size() != kernel.spatial.size() ||
      input.spatial.size() != output.spatial.size())
    c.fail_at(start,
              "dim labels have different numbers of spatial dims on input, kernel and output");
  ConvDims d;
  d.input_batch = input.first;
  d.input_feature = input.second;
  d.input_spatial = input.spatial;
  d.kernel_input_feature = kernel.first;
  d.kernel_output_feature = kernel.second;
  d.kernel_spatial = kernel.spatial;
  d.output_batch = output.first;
  d.output_feature = output.second;
  d.output_spatial = output.spatial;
  return d;
}

ReplicaGroups read_replica_groups(HloCursor& c) {
  ReplicaGroups groups;
  if (c.peek() == '{') {
    groups.explicit_groups = read_int_list_list(c);
    return groups;
  }
  size_t start = c.pos();
  c.expect('[');
  IotaGroups iota;
  iota.num_groups = c.integer("the number of groups");
  c.expect(',');
  iota.group_size = c.integer("the group size");
  c.expect(']');
  c.expect_text("<=");
  c.expect('[');
  do {
    iota.reshape_dims.push_back(c.integer("an iota reshape dim"));
  } while (c.consume(','));
  c.expect(']');
  if (c.peek_raw() == 'T') {
    c.set_pos(c.pos() + 1);
    c.expect('(');
    do {
      iota.transpose_perm.push_back(c.integer("a transpose dim"));
    } while (c.consume(','));
    c.expect(')');
  }
  int64_t product = 1;
  for (int64_t d : iota.reshape_dims) product *= d;
  if (product != iota.num_groups * iota.group_size)
    c.fail_at(
        start,
        fmt::format("iota replica groups [{},{}] need {} devices but the reshape dims hold {}",
                    iota.num_groups, iota.group_size, iota.num_groups * iota.group_size, product));
  if (!iota.transpose_perm.empty() && iota.transpose_perm.size() != iota.reshape_dims.size())
    c.fail_at(start,
              "iota replica groups: the transpose has a different rank than the reshape dims");
  groups.iota = std::move(iota);
  return groups;
}

std::vector<std::pair<int64_t, int64_t>> read_source_target_pairs(HloCursor& c) {
  size_t start = c.pos();
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const auto& pair : read_int_list_list(c)) {
    if (pair.size() != 2)
      c.fail_at(start, "each source_target_pairs entry needs exactly two ids {source,target}");
    pairs.emplace_back(pair[0], pair[1]);
  }
  return pairs;
}

namespace {
void read_array_values(HloCursor& c, DType dtype, std::vector<double>& out) {
  if (c.consume('{')) {
    if (c.consume('}')) return;
    do {
      read_array_values(c, dtype, out);
    } while (c.consume(','));
    c.expect('}');
    return;
  }
  if (is_complex(dtype)) {  // "(re, im)"; a plain number is (re, 0)
    if (c.consume('(')) {
      out.push_back(round_to_dtype(dtype, c.number("the real part of a complex value")));
      c.expect(',');
      out.push_back(round_to_dtype(dtype, c.number("the imaginary part of a complex value")));
      c.expect(')');
    } else {
      out.push_back(round_to_dtype(dtype, c.number("a complex literal value '(re, im)'")));
      out.push_back(0.0);
    }
    return;
  }
  out.push_back(round_to_dtype(dtype, c.number("a literal value")));
}
}  // namespace

Literal read_literal(HloCursor& c, const Shape& shape) {
  c.skip_space();
  size_t start = c.pos();
  if (shape.is_tuple()) {
    c.expect('(');
    std::vector<Literal> elements;
    for (int i = 0; i < static_cast<int>(shape.tuple_shapes().size()); ++i) {
      if (i > 0) c.expect(',');
      elements.push_back(read_literal(c, shape.tuple_shape(i)));
    }
    c.expect(')');
    return Literal::tuple(std::move(elements));
  }
  if (c.text().substr(start, 5) == "{...}")
    c.fail_at(start, "constant values are elided ('{...}')",
              "dump the HLO with large constants printed (XLA's print_large_constants)");
  std::vector<double> values;
  read_array_values(c, shape.dtype(), values);
  const int64_t per_element = Literal::values_per_element(shape.dtype());
  if (static_cast<int64_t>(values.size()) != shape.num_elements() * per_element)
    c.fail_at(start,
              fmt::format("constant has {} values but shape {} needs {}",
                          static_cast<int64_t>(values.size()) / per_element, shape.to_string(false),
                          shape.num_elements()),
              "list one value per element, nested in braces per dimension");
  return Literal(shape, std::move(values));
}

}  // namespace podsim::compiler::hlo_detail
