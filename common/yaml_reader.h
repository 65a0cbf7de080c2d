// The one YAML reader of podsim (workloads, hardware files, sweeps,
// baselines, measured numbers): yaml-cpp underneath, every node located as
// file:line:column, typed scalars with ranges, choices read from a name table
// into an enum, and maps that remember which keys were read so that any key
// left unread is an error at its position with the nearest valid key.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace podsim::yaml {

// The words of one enum, in the order they are listed to users. One table
// per enum (a function-local static const); names <-> values go through it.
template <class E>
class NameTable {
 public:
  NameTable(std::initializer_list<std::pair<E, std::string_view>> entries) : entries_(entries) {}
  explicit NameTable(std::vector<std::pair<E, std::string_view>> entries)
      : entries_(std::move(entries)) {}
  std::string_view name(E value) const {
    for (const auto& [v, n] : entries_)
      if (v == value) return n;
    return "?";
  }
  std::optional<E> find(std::string_view name) const {
    for (const auto& [v, n] : entries_)
      if (n == name) return v;
    return std::nullopt;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : entries_) out.emplace_back(entry.second);
    return out;
  }

 private:
  std::vector<std::pair<E, std::string_view>> entries_;
};

// Full-string scalar syntax shared by every reader: "12" is an int, "1e3"
// is not; "1e3" and "0.5" are doubles; true/True/yes and false/False/no.
std::optional<int64_t> parse_int64(const std::string& text);
std::optional<double> parse_double(const std::string& text);
std::optional<bool> parse_bool(const std::string& text);

// One parsed YAML document and the file it came from. Nodes spliced in by a
// `--set key=value` flag are located at that flag instead of a line.
class Document {
 public:
  // Malformed YAML: UserError "malformed YAML: ..." at file:line:column.
  static Document parse(const std::string& text, const std::string& file);
  // The whole file through common/files.h ("cannot read the <what>").
  static Document load(const std::string& path, const std::string& what);

  YAML::Node& root() { return root_; }
  const YAML::Node& root() const { return root_; }
  const std::string& file() const { return file_; }

  SourceLocation at(const YAML::Node& node) const;
  [[noreturn]] void fail(const YAML::Node& node, const std::string& message,
                         const std::string& hint = "") const;

  // Applies "a.b.c=value" (value parsed as YAML) to the document, creating
  // maps on the way; the new nodes are located at "--set <assignment>".
  void set(const std::string& assignment);

 private:
  void mark_override(const YAML::Node& node, const std::string& assignment);
  std::string file_;
  YAML::Node root_;
  std::vector<std::pair<YAML::Node, std::string>> overrides_;
};

// Parses one YAML value given on the command line (a --set value);
// UserError at `where` when it is not YAML.
YAML::Node parse_value(const std::string& text, const SourceLocation& where,
                       const std::string& what);

// Typed scalars. Messages name `key` (a dotted path such as "model.layers").
std::string read_string(const Document& doc, const YAML::Node& node, const std::string& key);
int64_t read_int(const Document& doc, const YAML::Node& node, const std::string& key,
                 int64_t min = 1, int64_t max = std::numeric_limits<int64_t>::max());
// Finite and in [min, max] (NaN and infinities are rejected).
double read_double(const Document& doc, const YAML::Node& node, const std::string& key,
                   double min = -std::numeric_limits<double>::max(),
                   double max = std::numeric_limits<double>::max());
bool read_bool(const Document& doc, const YAML::Node& node, const std::string& key);

// "'key' must be one of a | b, got 'c'", hint "did you mean 'a'?".
[[noreturn]] void bad_choice(const Document& doc, const YAML::Node& node, const std::string& key,
                             const std::string& got, const std::vector<std::string>& names);

template <class E>
E read_choice(const Document& doc, const YAML::Node& node, const std::string& key,
              const NameTable<E>& table) {
  const std::string text = read_string(doc, node, key);
  if (std::optional<E> value = table.find(text)) return *value;
  bad_choice(doc, node, key, text, table.names());
}

// The keys of one mapping. get/require mark a key as valid; finish() rejects
// the first key in the document nobody asked for, at its position, with the
// nearest valid key as the hint.
class MapReader {
 public:
  // `path`: the map's dotted name ("model", "compiler.loops"); `what`: the
  // noun of the unknown-key message ("key" -> "unknown key 'x' in 'model'",
  // "sweep key" with an empty path -> "unknown sweep key 'x'").
  MapReader(const Document& doc, const YAML::Node& node, std::string path,
            std::string what = "key");

  YAML::Node get(const std::string& key);      // a null node when absent
  YAML::Node require(const std::string& key);  // missing: its typo, else "missing the required key"
  void allow(std::initializer_list<const char*> keys);  // valid keys read elsewhere (or later)

  std::optional<std::string> string(const std::string& key);
  std::optional<int64_t> int64(const std::string& key, int64_t min = 1,
                               int64_t max = std::numeric_limits<int64_t>::max());
  std::optional<double> number(const std::string& key,
                               double min = -std::numeric_limits<double>::max(),
                               double max = std::numeric_limits<double>::max());
  std::optional<bool> boolean(const std::string& key);
  template <class E>
  std::optional<E> choice(const std::string& key, const NameTable<E>& table) {
    const YAML::Node n = get(key);
    if (!n) return std::nullopt;
    return read_choice(doc_, n, dotted(key), table);
  }

  // (key, key node, value node) in document order.
  struct Entry {
    std::string key;
    YAML::Node key_node, value;
  };
  const std::vector<Entry>& entries() const { return entries_; }
  const std::vector<std::string>& known() const { return known_; }
  const std::string& path() const { return path_; }
  // The first entry no get/require/allow named, or nullptr.
  const Entry* first_unread() const;
  void finish() const;

 private:
  std::string dotted(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  const Document& doc_;
  YAML::Node node_;
  std::string path_, what_;
  std::vector<Entry> entries_;
  std::vector<std::string> known_;
};

// Runs `read` and turns a yaml-cpp conversion error into a UserError at its
// position ("unexpected YAML structure"), with `hint`.
template <class F>
auto guarded(const std::string& file, const std::string& hint, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const YAML::Exception& e) {
    throw UserError(SourceLocation{file, e.mark.line + 1, e.mark.column + 1},
                    "unexpected YAML structure: " + e.msg, hint);
  }
}

}  // namespace podsim::yaml
