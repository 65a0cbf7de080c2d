// Shardy sharding text -> Sharding (see shardy.h for the conversion rule).
#include "compiler/sharding/shardy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace podsim::compiler {

namespace {

// A small cursor over one attribute's text; errors point into it.
class Cursor {
 public:
  Cursor(std::string_view text, const SourceLocation& where) : text_(text), where_(where) {}

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= text_.size();
  }
  bool consume(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!consume(token)) fail(fmt::format("expected '{}'", token));
  }
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  int64_t integer() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (start == pos_ || pos_ - start > 15) fail("expected an integer");
    return std::stoll(std::string(text_.substr(start, pos_ - start)));
  }
  std::string quoted() {
    skip_space();
    if (peek() != '"') fail("expected a quoted name");
    ++pos_;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out += text_[pos_++];
    }
    if (pos_ >= text_.size()) fail("unterminated quoted name");
    ++pos_;
    return out;
  }
  std::string identifier() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
            text_[pos_] == '.' || text_[pos_] == '-' || text_[pos_] == '$'))
      ++pos_;
    if (start == pos_) fail("expected a name");
    return std::string(text_.substr(start, pos_ - start));
  }
  [[noreturn]] void fail(const std::string& message) const {
    SourceLocation at = where_;
    if (at.column > 0) at.column += static_cast<int>(pos_);
    throw UserError(
        at, fmt::format("Shardy sharding: {} in '{}'", message, text_),
        "write e.g. #sdy.sharding<@mesh, [{\"x\"}, {}]> with the mesh in xla.sdy.meshes");
  }

 private:
  std::string_view text_;
  SourceLocation where_;
  size_t pos_ = 0;
};

SdyMesh read_mesh_body(Cursor& c) {
  // mesh<["x"=2, "y"=4], device_ids=[...]>  (the "#sdy." prefix already read or absent)
  SdyMesh mesh;
  c.expect("mesh<");
  c.expect("[");
  if (!c.consume("]")) {
    do {
      std::string name = c.quoted();
      c.expect("=");
      int64_t size = c.integer();
      if (size < 1) c.fail("a mesh axis size must be at least 1");
      mesh.axes.emplace_back(std::move(name), size);
    } while (c.consume(","));
    c.expect("]");
  }
  if (c.consume(",")) {
    c.expect("device_ids");
    c.expect("=");
    c.expect("[");
    if (!c.consume("]")) {
      do mesh.device_ids.push_back(c.integer());
      while (c.consume(","));
      c.expect("]");
    }
  }
  c.expect(">");
  return mesh;
}

struct AxisRef {
  std::string name;
  int64_t pre_size = 1;  // sub-axis: product of the parts before it
  int64_t size = 0;      // 0: the whole axis
};

struct TensorSharding {
  std::optional<SdyMesh> inline_mesh;
  std::string mesh_name;
  std::vector<std::vector<AxisRef>> dims;
  std::vector<bool> open;
};

TensorSharding read_tensor_sharding(Cursor& c) {
  TensorSharding t;
  if (c.consume("@")) {
    t.mesh_name = c.identifier();
  } else {
    c.consume("#sdy.");
    t.inline_mesh = read_mesh_body(c);
  }
  c.expect(",");
  c.expect("[");
  if (!c.consume("]")) {
    do {
      c.expect("{");
      std::vector<AxisRef> axes;
      bool open = false;
      while (!c.consume("}")) {
        if (c.consume("?")) {
          open = true;
          continue;
        }
        AxisRef ref;
        ref.name = c.quoted();
        if (c.consume(":")) {
          c.expect("(");
          ref.pre_size = c.integer();
          c.expect(")");
          ref.size = c.integer();
          if (ref.pre_size < 1 || ref.size < 1) c.fail("a sub-axis needs positive sizes");
        }
        axes.push_back(std::move(ref));
        if (!c.consume(",") && c.peek() != '}') c.fail("expected ',' or '}'");
      }
      if (c.consume("p")) c.integer();  // priority: not modelled
      t.dims.push_back(std::move(axes));
      t.open.push_back(open);
    } while (c.consume(","));
    c.expect("]");
  }
  // replicated={...}, unreduced={...}: axes that are unused anyway.
  while (c.consume(",")) {
    c.identifier();
    c.expect("=");
    c.expect("{");
    while (!c.consume("}")) {
      c.quoted();
      if (c.consume(":")) {
        c.expect("(");
        c.integer();
        c.expect(")");
        c.integer();
      }
      c.consume(",");
    }
  }
  return t;
}

// One factor of a mesh axis: [lo, hi) of its pre-size range, size hi/lo.
struct Factor {
  std::string axis;
  int64_t lo = 1, hi = 1;
};

Sharding to_sharding(const TensorSharding& t, const SdyMesh& mesh, Cursor& c) {
  if (mesh.axes.empty()) {
    if (mesh.device_ids.size() == 1) return Sharding::maximal(mesh.device_ids[0]);
    return Sharding::replicated();
  }
  // Split points of each axis: 1, its size and every sub-axis boundary.
  std::map<std::string, std::set<int64_t>, std::less<>> cuts;
  std::map<std::string, int64_t, std::less<>> sizes;
  for (const auto& [name, size] : mesh.axes) {
    cuts[name] = {1, size};
    sizes[name] = size;
  }
  for (const auto& dim : t.dims)
    for (const AxisRef& ref : dim) {
      auto it = sizes.find(ref.name);
      if (it == sizes.end()) c.fail(fmt::format("unknown mesh axis \"{}\"", ref.name));
      if (ref.size == 0) continue;
      if (it->second % (ref.pre_size * ref.size) != 0)
        c.fail(fmt::format("sub-axis \"{}\":({}){} does not divide the axis size {}", ref.name,
                           ref.pre_size, ref.size, it->second));
      cuts[ref.name].insert(ref.pre_size);
      cuts[ref.name].insert(ref.pre_size * ref.size);
    }
  std::vector<Factor> factors;
  for (const auto& [name, size] : mesh.axes) {
    const std::set<int64_t>& points = cuts[name];
    for (auto it = points.begin(); std::next(it) != points.end(); ++it) {
      if (*std::next(it) % *it != 0) c.fail(fmt::format("sub-axes of \"{}\" overlap", name));
      factors.push_back(Factor{name, *it, *std::next(it)});
    }
  }
  std::vector<bool> used(factors.size(), false);
  std::vector<int64_t> perm, tile_dims;
  for (const auto& dim : t.dims) {
    int64_t count = 1;
    for (const AxisRef& ref : dim) {
      const int64_t lo = ref.pre_size,
                    hi = ref.size == 0 ? sizes[ref.name] : ref.pre_size * ref.size;
      for (size_t f = 0; f < factors.size(); ++f) {
        if (factors[f].axis != ref.name || factors[f].lo < lo || factors[f].hi > hi) continue;
        if (used[f]) c.fail(fmt::format("mesh axis \"{}\" is used twice", ref.name));
        used[f] = true;
        perm.push_back(static_cast<int64_t>(f));
        count *= factors[f].hi / factors[f].lo;
      }
    }
    tile_dims.push_back(count);
  }
  int64_t replicated = 1;
  for (size_t f = 0; f < factors.size(); ++f)
    if (!used[f]) {
      perm.push_back(static_cast<int64_t>(f));
      replicated *= factors[f].hi / factors[f].lo;
    }
  std::vector<int64_t> factor_sizes;
  for (const Factor& f : factors) factor_sizes.push_back(f.hi / f.lo);
  if (tile_dims.empty()) return Sharding::replicated();
  std::vector<int64_t> dims = tile_dims;
  if (replicated > 1) dims.push_back(replicated);
  TileAssignment tiles = TileAssignment::iota(dims, factor_sizes, perm);
  if (!mesh.device_ids.empty()) {
    int64_t total = 1;
    for (int64_t s : factor_sizes) total *= s;
    if (static_cast<int64_t>(mesh.device_ids.size()) != total)
      c.fail(
          fmt::format("the mesh has {} device ids for {} devices", mesh.device_ids.size(), total));
    std::vector<int64_t> devices;
    for (int64_t v : tiles.to_vector()) devices.push_back(mesh.device_ids[static_cast<size_t>(v)]);
    tiles = TileAssignment::from_devices(dims, std::move(devices));
  }
  return replicated > 1 ? Sharding::partial_tile(std::move(tiles))
                        : Sharding::tiled(std::move(tiles));
}

}  // namespace

SdyMesh parse_sdy_mesh(std::string_view text, const SourceLocation& where) {
  Cursor c(text, where);
  c.consume("#sdy.");
  SdyMesh mesh = read_mesh_body(c);
  if (!c.at_end()) c.fail("unexpected text after the mesh");
  return mesh;
}

SdyMeshes parse_sdy_meshes(std::string_view text, const SourceLocation& where) {
  Cursor c(text, where);
  SdyMeshes meshes;
  c.expect("{");
  while (!c.consume("}")) {
    std::string name = c.identifier();
    c.expect("=");
    c.consume("#sdy.");
    meshes[name] = read_mesh_body(c);
    c.consume(",");
  }
  return meshes;
}

SdySharding parse_sdy_sharding(std::string_view text, const SdyMeshes& meshes,
                               const SourceLocation& where) {
  Cursor c(text, where);
  std::vector<TensorSharding> values;
  if (c.consume("#sdy.sharding_per_value<")) {
    c.expect("[");
    if (!c.consume("]")) {
      do {
        c.expect("<");
        values.push_back(read_tensor_sharding(c));
        c.expect(">");
      } while (c.consume(","));
      c.expect("]");
    }
    c.expect(">");
  } else {
    c.expect("#sdy.sharding<");
    values.push_back(read_tensor_sharding(c));
    c.expect(">");
  }
  if (!c.at_end()) c.fail("unexpected text after the sharding");
  SdySharding out;
  std::vector<Sharding> leaves;
  out.fully_open = true;
  for (const TensorSharding& t : values) {
    const SdyMesh* mesh = t.inline_mesh ? &*t.inline_mesh : nullptr;
    if (!mesh) {
      auto it = meshes.find(t.mesh_name);
      if (it == meshes.end())
        c.fail(fmt::format("unknown mesh @{} (not in the module's xla.sdy.meshes)", t.mesh_name));
      mesh = &it->second;
    }
    leaves.push_back(to_sharding(t, *mesh, c));
    std::vector<int64_t> open;
    for (size_t d = 0; d < t.dims.size(); ++d) {
      if (t.open[d]) open.push_back(static_cast<int64_t>(d));
      if (!t.open[d] || !t.dims[d].empty()) out.fully_open = false;
    }
    out.open_dims.push_back(std::move(open));
  }
  out.sharding = leaves.size() == 1 ? leaves[0] : Sharding::tuple(std::move(leaves));
  return out;
}

std::optional<std::string> frontend_attribute(std::string_view attributes, std::string_view key) {
  // {k1="v1", k2="v2"}: find `key` at a top-level position followed by '='.
  size_t i = 0;
  while (i < attributes.size()) {
    while (i < attributes.size() && (attributes[i] == '{' || attributes[i] == ',' ||
                                     std::isspace(static_cast<unsigned char>(attributes[i]))))
      ++i;
    size_t key_start = i;
    while (i < attributes.size() && attributes[i] != '=' && attributes[i] != '}') ++i;
    if (i >= attributes.size() || attributes[i] != '=') return std::nullopt;
    std::string_view k = attributes.substr(key_start, i - key_start);
    while (!k.empty() && std::isspace(static_cast<unsigned char>(k.back()))) k.remove_suffix(1);
    ++i;
    while (i < attributes.size() && std::isspace(static_cast<unsigned char>(attributes[i]))) ++i;
    std::string value;
    if (i < attributes.size() && attributes[i] == '"') {
      ++i;
      // C-escaped (XLA's CEscape): \n \t \r, \ooo octal, else the char itself.
      while (i < attributes.size() && attributes[i] != '"') {
        if (attributes[i] == '\\' && i + 1 < attributes.size()) {
          const char e = attributes[++i];
          if (e >= '0' && e <= '7') {
            int code = 0;
            for (int n = 0;
                 n < 3 && i < attributes.size() && attributes[i] >= '0' && attributes[i] <= '7';
                 ++n)
              code = code * 8 + (attributes[i++] - '0');
            value += static_cast<char>(code);
            continue;
          }
          value += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
          ++i;
          continue;
        }
        value += attributes[i++];
      }
      ++i;
    } else {
      // Unquoted: up to the next top-level ',' or '}', so a nested brace
      // value ({mesh = #sdy.mesh<["data"=1, "expert"=4]>}) stays whole.
      int depth = 0;
      bool quoted = false;
      for (; i < attributes.size(); ++i) {
        const char ch = attributes[i];
        if (quoted) {
          if (ch == '\\' && i + 1 < attributes.size())
            value += attributes[i++];
          else if (ch == '"')
            quoted = false;
        } else if (ch == '"') {
          quoted = true;
        } else if (ch == '{' || ch == '[' || ch == '(' ||
                   (ch == '<' && i > 0 &&
                    std::isalnum(static_cast<unsigned char>(attributes[i - 1])))) {
          ++depth;
        } else if (depth > 0 && (ch == '}' || ch == ']' || ch == ')' ||
                                 (ch == '>' && attributes[i - 1] != '-'))) {
          --depth;
        } else if (depth == 0 && (ch == ',' || ch == '}')) {
          break;
        }
        value += ch;
      }
      while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back())))
        value.pop_back();
    }
    if (k == key) return value;
  }
  return std::nullopt;
}

std::optional<SdySharding> sharding_from_frontend_attributes(std::string_view attributes,
                                                             const SdyMeshes& meshes,
                                                             const SourceLocation& where) {
  if (attributes.empty()) return std::nullopt;
  if (auto sdy = frontend_attribute(attributes, "xla.sdy.sharding"))
    return parse_sdy_sharding(*sdy, meshes, where);
  if (auto mhlo = frontend_attribute(attributes, "mhlo.sharding")) {
    SdySharding out;
    out.sharding = parse_sharding(*mhlo, where);
    return out;
  }
  return std::nullopt;
}

bool is_sharding_custom_call_target(std::string_view target) {
  return target == "Sharding" || target == "xla.sdy.ShardingConstraint" ||
         target == "xla.sdy.FuncResultSharding";
}

}  // namespace podsim::compiler
