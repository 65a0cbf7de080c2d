// The YAML reader (common/yaml_reader.h). yaml-cpp marks are 0-based;
// positions in messages are 1-based.
#include "common/yaml_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/did_you_mean.h"
#include "common/files.h"

namespace podsim::yaml {

std::optional<int64_t> parse_int64(const std::string& text) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used, 10);
  } catch (...) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size()) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(const std::string& text) {
  if (text == "true" || text == "True" || text == "yes") return true;
  if (text == "false" || text == "False" || text == "no") return false;
  return std::nullopt;
}

Document Document::parse(const std::string& text, const std::string& file) {
  Document doc;
  doc.file_ = file;
  try {
    doc.root_ = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw UserError(SourceLocation{file, e.mark.line + 1, e.mark.column + 1},
                    "malformed YAML: " + e.msg,
                    "check indentation, quoting and brackets near this position");
  }
  return doc;
}

Document Document::load(const std::string& path, const std::string& what) {
  return parse(read_file_text(path, what), path);
}

SourceLocation Document::at(const YAML::Node& node) const {
  for (const auto& [n, assignment] : overrides_)
    if (node.is(n)) return SourceLocation{"--set " + assignment, 0, 0};
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return SourceLocation{file_, 0, 0};
  return SourceLocation{file_, m.line + 1, m.column + 1};
}

void Document::fail(const YAML::Node& node, const std::string& message,
                    const std::string& hint) const {
  throw UserError(at(node), message, hint);
}

void Document::mark_override(const YAML::Node& node, const std::string& assignment) {
  overrides_.emplace_back(node, assignment);
  if (node.IsMap() || node.IsSequence())
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (node.IsMap()) {
        mark_override(it->first, assignment);
        mark_override(it->second, assignment);
      } else {
        mark_override(*it, assignment);
      }
    }
}

YAML::Node parse_value(const std::string& text, const SourceLocation& where,
                       const std::string& what) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UserError(where, fmt::format("cannot parse the value '{}'{}: {}", text, what, e.msg));
  }
}

void Document::set(const std::string& assignment) {
  const SourceLocation where{"--set " + assignment, 0, 0};
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError(where, "an override must look like key=value", "e.g. --set model.layers=64");
  const std::string key = assignment.substr(0, eq);
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty()) throw UserError(where, fmt::format("empty component in key '{}'", key));
    parts.push_back(p);
  }
  const YAML::Node parsed = parse_value(assignment.substr(eq + 1), where, "");
  // yaml-cpp nodes are handles: walking with operator[] on copies edits the tree.
  std::vector<YAML::Node> chain{root_};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = chain.back()[parts[i]];
    if (next.IsDefined() && !next.IsMap())
      throw UserError(
          where, fmt::format("'{}' is not a mapping, cannot set '{}' inside it", parts[i], key));
    chain.push_back(next);
  }
  chain.back()[parts.back()] = parsed;
  mark_override(parsed, assignment);
  // The key node operator[] created has no position either.
  for (auto it = chain.back().begin(); it != chain.back().end(); ++it)
    if (it->second.is(parsed)) mark_override(it->first, assignment);
}

std::string read_string(const Document& doc, const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) doc.fail(node, fmt::format("'{}' must be a string", key));
  return node.Scalar();
}

int64_t read_int(const Document& doc, const YAML::Node& node, const std::string& key, int64_t min,
                 int64_t max) {
  if (!node.IsScalar()) doc.fail(node, fmt::format("'{}' must be an integer", key));
  const std::optional<int64_t> v = parse_int64(node.Scalar());
  if (!v) doc.fail(node, fmt::format("'{}' must be an integer, got '{}'", key, node.Scalar()));
  if (*v < min) doc.fail(node, fmt::format("'{}' must be >= {}, got {}", key, min, *v));
  if (*v > max) doc.fail(node, fmt::format("'{}' must be <= {}, got {}", key, max, *v));
  return *v;
}

double read_double(const Document& doc, const YAML::Node& node, const std::string& key, double min,
                   double max) {
  if (!node.IsScalar()) doc.fail(node, fmt::format("'{}' must be a number", key));
  const std::optional<double> v = parse_double(node.Scalar());
  if (!v) doc.fail(node, fmt::format("'{}' must be a number, got '{}'", key, node.Scalar()));
  // The negated comparisons also catch NaN.
  if (!std::isfinite(*v) || !(*v >= min) || !(*v <= max))
    doc.fail(node, fmt::format("'{}' must be a finite number in [{:g}, {:g}], got '{}'", key, min,
                               max, node.Scalar()));
  return *v;
}

bool read_bool(const Document& doc, const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) doc.fail(node, fmt::format("'{}' must be true or false", key));
  const std::optional<bool> v = parse_bool(node.Scalar());
  if (!v) doc.fail(node, fmt::format("'{}' must be true or false, got '{}'", key, node.Scalar()));
  return *v;
}

void bad_choice(const Document& doc, const YAML::Node& node, const std::string& key,
                const std::string& got, const std::vector<std::string>& names) {
  const std::string guess = closest(got, names);
  doc.fail(node, fmt::format("'{}' must be one of {}, got '{}'", key, fmt::join(names, " | "), got),
           guess.empty() ? "" : fmt::format("did you mean '{}'?", guess));
}

MapReader::MapReader(const Document& doc, const YAML::Node& node, std::string path,
                     std::string what)
    : doc_(doc), node_(node), path_(std::move(path)), what_(std::move(what)) {
  if (!node.IsMap())
    doc.fail(node, path_.empty() ? std::string("the document must be a mapping")
                                 : fmt::format("'{}' must be a mapping", path_));
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies: yaml-cpp iterators hand out a temporary key/value pair.
    const YAML::Node key = it->first;
    if (!key.IsScalar())
      doc.fail(key,
               fmt::format("a key of '{}' is not a plain word", path_.empty() ? doc.file() : path_),
               "keys are plain words: write key: value");
    entries_.push_back(Entry{key.Scalar(), key, it->second});
  }
}

YAML::Node MapReader::get(const std::string& key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
  for (const Entry& e : entries_)
    if (e.key == key) return e.value;
  return YAML::Node(YAML::NodeType::Undefined);  // operator! is true only for an undefined node
}

YAML::Node MapReader::require(const std::string& key) {
  YAML::Node n = get(key);
  if (n) return n;
  // A missing required key is often a typo of it: report the typo instead.
  for (const Entry& e : entries_)
    if (e.key != key && closest(e.key, {key}) == key)
      doc_.fail(e.key_node,
                fmt::format("unknown {} '{}'{}", what_, e.key,
                            path_.empty() ? "" : " in '" + path_ + "'"),
                fmt::format("did you mean '{}'?", key));
  doc_.fail(node_, fmt::format("'{}' is missing the required key '{}'",
                               path_.empty() ? doc_.file() : path_, key));
}

void MapReader::allow(std::initializer_list<const char*> keys) {
  for (const char* key : keys)
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
}

std::optional<std::string> MapReader::string(const std::string& key) {
  const YAML::Node n = get(key);
  if (!n) return std::nullopt;
  return read_string(doc_, n, dotted(key));
}

std::optional<int64_t> MapReader::int64(const std::string& key, int64_t min, int64_t max) {
  const YAML::Node n = get(key);
  if (!n) return std::nullopt;
  return read_int(doc_, n, dotted(key), min, max);
}

std::optional<double> MapReader::number(const std::string& key, double min, double max) {
  const YAML::Node n = get(key);
  if (!n) return std::nullopt;
  return read_double(doc_, n, dotted(key), min, max);
}

std::optional<bool> MapReader::boolean(const std::string& key) {
  const YAML::Node n = get(key);
  if (!n) return std::nullopt;
  return read_bool(doc_, n, dotted(key));
}

const MapReader::Entry* MapReader::first_unread() const {
  for (const Entry& e : entries_)
    if (std::find(known_.begin(), known_.end(), e.key) == known_.end()) return &e;
  return nullptr;
}

void MapReader::finish() const {
  const Entry* e = first_unread();
  if (!e) return;
  const std::string guess = closest(e->key, known_);
  doc_.fail(
      e->key_node,
      fmt::format("unknown {} '{}'{}", what_, e->key, path_.empty() ? "" : " in '" + path_ + "'"),
      guess.empty()
          ? fmt::format("valid keys: {}", fmt::join(known_, ", "))
          : fmt::format("did you mean '{}'? valid keys: {}", guess, fmt::join(known_, ", ")));
}

}  // namespace podsim::yaml
