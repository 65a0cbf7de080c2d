// XLA sharding text form: printer and recursive-descent parser.
//   sharding := '{' ( leaf_body | sharding (',' sharding)* ) '}'
//   leaf_body := ('replicated' | 'manual' | 'unknown' | 'maximal' 'device=' INT
//                | 'devices=' '[' ints ']' (ints | '<=' '[' ints ']' ['T' '(' ints ')']))
//                attribute*
//   attribute := 'last_tile_dim_replicate' | 'last_tile_dims=' '{' types '}'
//              | 'shard_as' INT | 'shard_like' INT | 'metadata=' '{' ... '}'
#include <algorithm>
#include <cctype>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/sharding/sharding.h"

namespace podsim::compiler {
namespace {

std::string leaf_to_string(const Sharding& s) {
  std::string body;
  switch (s.kind()) {
    case Sharding::Kind::kReplicated:
      body = "replicated";
      break;
    case Sharding::Kind::kManual:
      body = "manual";
      break;
    case Sharding::Kind::kUnknown:
      body = "unknown";
      break;
    case Sharding::Kind::kMaximal:
      body = fmt::format("maximal device={}", *s.unique_device());
      break;
    case Sharding::Kind::kTiled: {
      body = "devices=" + s.tile_assignment().to_string();
      if (s.replicate_on_last_tile_dim()) {
        body += " last_tile_dim_replicate";
      } else if (!s.subgroup_types().empty()) {
        std::vector<std::string_view> names;
        for (auto t : s.subgroup_types()) names.push_back(to_string(t));
        body += fmt::format(" last_tile_dims={{{}}}", fmt::join(names, ", "));
      }
      break;
    }
    case Sharding::Kind::kTuple:
      break;  // not a leaf
  }
  if (s.group()) {
    body +=
        fmt::format(" {} {}", s.group()->kind == ShardGroup::Kind::kAs ? "shard_as" : "shard_like",
                    s.group()->id);
  }
  return "{" + body + "}";
}

class Parser {
 public:
  Parser(std::string_view text, const SourceLocation& where) : text_(text), where_(where) {}

  Sharding parse_all() {
    Sharding s = parse_sharding_braced();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the sharding", "remove it");
    return s;
  }

 private:
  [[noreturn]] void fail(const std::string& message, const std::string& hint) const {
    SourceLocation loc = where_;
    if (!loc.known()) {
      loc.line = 1;
      loc.column = 1;
    }
    loc.column += static_cast<int>(pos_);
    throw UserError(loc, fmt::format("bad sharding \"{}\": {}", text_, message), hint);
  }

  // Whitespace and XLA's /*index=5*/ comments (printed inside long tuples).
  void skip_space() {
    for (;;) {
      while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (text_.substr(pos_, 2) != "/*") return;
      const size_t end = text_.find("*/", pos_ + 2);
      if (end == std::string_view::npos) return;
      pos_ = end + 2;
    }
  }
  bool peek(std::string_view token) {
    skip_space();
    return text_.substr(pos_, token.size()) == token;
  }
  bool accept(std::string_view token) {
    if (!peek(token)) return false;
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token, std::string_view what) {
    if (!accept(token))
      fail(fmt::format("expected '{}' {}", token, what),
           "see XLA's sharding syntax, e.g. {devices=[2,1]0,1}");
  }
  std::string word() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  int64_t integer() {
    skip_space();
    size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (pos_ == start || (pos_ == start + 1 && text_[start] == '-')) {
      pos_ = start;
      fail("expected an integer", "tile dims and device ids are integers");
    }
    if (pos_ - start > 15) {
      pos_ = start;
      fail("integer too large", "device ids and tile counts are small integers");
    }
    return std::stoll(std::string(text_.substr(start, pos_ - start)));
  }
  // Comma-separated integers (at least one).
  std::vector<int64_t> integers() {
    std::vector<int64_t> values{integer()};
    while (accept(",")) values.push_back(integer());
    return values;
  }
  std::vector<int64_t> bracketed_dims(std::string_view what) {
    expect("[", what);
    auto dims = integers();
    for (int64_t d : dims) {
      if (d <= 0) fail("tile dims must be positive", "use 1 for an unsharded dim");
    }
    expect("]", "to close the dims");
    return dims;
  }

  Sharding parse_sharding_braced() {
    skip_space();
    const size_t open = pos_;
    expect("{", "to open a sharding");
    if (peek("{")) {  // tuple
      std::vector<Sharding> leaves{parse_sharding_braced()};
      while (accept(",")) leaves.push_back(parse_sharding_braced());
      expect("}", "to close the tuple sharding");
      return Sharding::tuple(std::move(leaves));
    }
    (void)open;
    Sharding s = parse_leaf_body();
    expect("}", "to close the sharding");
    return s;
  }

  Sharding parse_leaf_body() {
    const size_t start = pos_;
    const std::string head = word();
    Sharding s;
    if (head == "replicated") {
      s = Sharding::replicated();
    } else if (head == "manual") {
      s = Sharding::manual();
    } else if (head == "unknown") {
      s = Sharding::unknown();
    } else if (head == "maximal") {
      expect("device", "after 'maximal'");
      expect("=", "after 'device'");
      const int64_t device = integer();
      if (device < 0) fail("device ids are non-negative", "use a device id in [0, N)");
      s = Sharding::maximal(device);
    } else if (head == "devices") {
      s = parse_tiled();
    } else {
      pos_ = start;
      fail(fmt::format("unknown sharding kind '{}'", head),
           "expected replicated, manual, unknown, maximal device=K or devices=[...]");
    }
    return parse_attributes(s);
  }

  Sharding parse_tiled() {
    expect("=", "after 'devices'");
    const auto dims = bracketed_dims("with the tile dims");
    const int64_t count = product_of(dims);
    TileAssignment tiles;
    if (accept("<=")) {
      const size_t at = pos_;
      const auto reshape = bracketed_dims("with the iota reshape dims");
      if (product_of(reshape) != count) {
        pos_ = at;
        fail(fmt::format("iota dims [{}] hold {} devices but the tile dims need {}",
                         fmt::join(reshape, ","), product_of(reshape), count),
             "the products of the two dim lists must agree");
      }
      std::vector<int64_t> perm;
      if (accept("T")) {
        expect("(", "after T");
        const size_t perm_at = pos_;
        perm = integers();
        expect(")", "to close the transpose");
        std::vector<int64_t> sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        std::vector<int64_t> identity(reshape.size());
        std::iota(identity.begin(), identity.end(), 0);
        if (sorted != identity) {
          pos_ = perm_at;
          fail(fmt::format("T({}) is not a permutation of {} dims", fmt::join(perm, ","),
                           reshape.size()),
               "list each iota dim index exactly once");
        }
      }
      tiles = TileAssignment::iota(dims, reshape, perm);
    } else {
      const size_t at = pos_;
      const auto devices = integers();
      if (static_cast<int64_t>(devices.size()) != count) {
        pos_ = at;
        fail(fmt::format("{} device ids listed but the tile dims [{}] need {}", devices.size(),
                         fmt::join(dims, ","), count),
             "list one device per tile cell, row-major");
      }
      tiles = TileAssignment::from_devices(dims, devices);
    }
    // Subgroup attributes come right after the devices.
    std::vector<SubgroupType> types;
    if (accept("last_tile_dim_replicate")) {
      types = {SubgroupType::kReplicated};
    } else if (accept("last_tile_dims")) {
      expect("=", "after last_tile_dims");
      expect("{", "to open the subgroup types");
      do {
        const size_t at = pos_;
        const std::string name = word();
        if (name == "manual") {
          types.push_back(SubgroupType::kManual);
        } else if (name == "replicated") {
          types.push_back(SubgroupType::kReplicated);
        } else {
          pos_ = at;
          fail(fmt::format("unknown subgroup type '{}'", name), "use manual or replicated");
        }
      } while (accept(","));
      expect("}", "to close the subgroup types");
    }
    if (types.size() > dims.size()) {
      fail(fmt::format("{} subgroup dims but only {} tile dims", types.size(), dims.size()),
           "subgroup dims are the trailing tile dims");
    }
    return Sharding::subgroup(tiles, types);
  }

  Sharding parse_attributes(Sharding s) {
    std::vector<std::string> metadata;
    while (true) {
      if (accept("shard_as")) {
        s = s.with_group(ShardGroup{integer(), ShardGroup::Kind::kAs});
      } else if (accept("shard_like")) {
        s = s.with_group(ShardGroup{integer(), ShardGroup::Kind::kLike});
      } else if (accept("metadata")) {
        expect("=", "after metadata");
        skip_space();
        const size_t start = pos_;
        expect("{", "to open the metadata");
        int depth = 1;
        while (pos_ < text_.size() && depth > 0) {
          if (text_[pos_] == '{') ++depth;
          if (text_[pos_] == '}') --depth;
          ++pos_;
        }
        if (depth != 0) fail("unterminated metadata", "close it with '}'");
        metadata.emplace_back(text_.substr(start, pos_ - start));
      } else if (peek("last_tile_dim")) {
        fail("subgroup attributes apply to devices=[...] shardings only", "remove it");
      } else {
        break;
      }
    }
    if (!metadata.empty()) s = s.with_metadata(std::move(metadata));
    return s;
  }

  std::string_view text_;
  SourceLocation where_;
  size_t pos_ = 0;
};

}  // namespace

std::string Sharding::to_string() const {
  if (!is_tuple()) return leaf_to_string(*this);
  std::vector<std::string> leaves;
  for (const auto& leaf : tuple_elements_) leaves.push_back(leaf_to_string(leaf));
  return fmt::format("{{{}}}", fmt::join(leaves, ", "));
}

Sharding parse_sharding(std::string_view text, const SourceLocation& where) {
  return Parser(text, where).parse_all();
}

}  // namespace podsim::compiler
