// Loading and validating hardware YAML documents. One table lists every key
// with its parser and printer; documents, `base:` inheritance and `--set`
// overrides all go through it, so a key is valid in all three or in none.
#include "hw_models/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cassert>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <set>

#include "common/error.h"

namespace podsim::hw {
namespace {

enum class Check { kPositive, kNonNegative };

struct Field {
  std::string key;
  std::function<void(HardwareConfig&, const YAML::Node&, const SourceLocation&)> set;
  std::function<std::string(const HardwareConfig&)> get;
};

SourceLocation location_of(const YAML::Node& node, const std::string& file) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return SourceLocation{file, 0, 0};
  return SourceLocation{file, mark.line + 1, mark.column + 1};
}

[[noreturn]] void bad_value(const SourceLocation& loc, const std::string& key, const std::string& expected,
                            const YAML::Node& node) {
  std::string got = node.IsScalar() ? fmt::format("'{}'", node.Scalar()) : std::string("a non-scalar");
  throw UserError(loc, fmt::format("bad value for hardware key '{}': expected {}, got {}", key, expected, got));
}

double parse_double(const YAML::Node& node, const SourceLocation& loc, const std::string& key, Check check) {
  double value = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value)) bad_value(loc, key, "a number", node);
  if (check == Check::kPositive && !(value > 0)) bad_value(loc, key, "a number > 0", node);
  if (check == Check::kNonNegative && !(value >= 0)) bad_value(loc, key, "a number >= 0", node);
  return value;
}

int64_t parse_int(const YAML::Node& node, const SourceLocation& loc, const std::string& key) {
  int64_t value = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value) || value <= 0)
    bad_value(loc, key, "an integer > 0", node);
  return value;
}

const std::vector<std::string>& core_model_names() {
  static const std::vector<std::string> names = {"systolic", "roofline"};
  return names;
}

const std::vector<std::string>& collective_algorithm_names() {
  static const std::vector<std::string> names = {"auto", "ring", "bidirectional_ring", "torus"};
  return names;
}

std::string parse_choice(const YAML::Node& node, const SourceLocation& loc, const std::string& key,
                         const std::vector<std::string>& choices) {
  if (!node.IsScalar()) bad_value(loc, key, "a name", node);
  const std::string& text = node.Scalar();
  if (!choices.empty() && std::find(choices.begin(), choices.end(), text) == choices.end())
    throw UserError(loc, fmt::format("bad value for hardware key '{}': unknown name '{}'", key, text),
                    fmt::format("valid values: {}", fmt::join(choices, ", ")));
  return text;
}

// Accessor: a lambda returning a reference into the config.
template <class Access>
Field number_field(std::string key, Access access, Check check = Check::kPositive) {
  return Field{key,
               [=](HardwareConfig& c, const YAML::Node& n, const SourceLocation& loc) {
                 access(c) = parse_double(n, loc, key, check);
               },
               [=](const HardwareConfig& c) {
                 return fmt::format("{:.12g}", access(const_cast<HardwareConfig&>(c)));
               }};
}

template <class Access>
Field int_field(std::string key, Access access) {
  return Field{key,
               [=](HardwareConfig& c, const YAML::Node& n, const SourceLocation& loc) {
                 access(c) = parse_int(n, loc, key);
               },
               [=](const HardwareConfig& c) { return fmt::format("{}", access(const_cast<HardwareConfig&>(c))); }};
}

template <class Access>
Field choice_field(std::string key, Access access, std::vector<std::string> choices) {
  return Field{key,
               [=](HardwareConfig& c, const YAML::Node& n, const SourceLocation& loc) {
                 access(c) = parse_choice(n, loc, key, choices);
               },
               [=](const HardwareConfig& c) { return access(const_cast<HardwareConfig&>(c)); }};
}

std::vector<int64_t> parse_dims(const YAML::Node& node, const SourceLocation& loc, const std::string& key) {
  if (!node.IsSequence() || node.size() < 1 || node.size() > 3)
    bad_value(loc, key, "a list of 1 to 3 integers > 0", node);
  std::vector<int64_t> dims;
  for (const auto& element : node) dims.push_back(parse_int(element, loc, key));
  return dims;
}

std::vector<bool> parse_flags(const YAML::Node& node, const SourceLocation& loc, const std::string& key) {
  if (!node.IsSequence() || node.size() < 1 || node.size() > 3)
    bad_value(loc, key, "a list of 1 to 3 booleans", node);
  std::vector<bool> flags;
  for (const auto& element : node) {
    bool flag = false;
    if (!element.IsScalar() || !YAML::convert<bool>::decode(element, flag)) bad_value(loc, key, "true or false", element);
    flags.push_back(flag);
  }
  return flags;
}

const std::vector<Field>& fields() {
  static const std::vector<Field> table = [] {
    std::vector<Field> t;
    t.push_back(Field{"name",
                      [](HardwareConfig& c, const YAML::Node& n, const SourceLocation& loc) {
                        c.name = parse_choice(n, loc, "name", {});
                      },
                      [](const HardwareConfig& c) { return c.name; }});
    t.push_back(choice_field("core.model", [](HardwareConfig& c) -> std::string& { return c.core.model; },
                             core_model_names()));
    t.push_back(number_field("core.clock_hz", [](HardwareConfig& c) -> double& { return c.core.clock_hz; }));
    t.push_back(int_field("core.tensor_cores_per_device",
                          [](HardwareConfig& c) -> int64_t& { return c.core.tensor_cores_per_device; }));
    t.push_back(int_field("core.mxus_per_tensor_core",
                          [](HardwareConfig& c) -> int64_t& { return c.core.mxus_per_tensor_core; }));
    t.push_back(int_field("core.mxu_rows", [](HardwareConfig& c) -> int64_t& { return c.core.mxu_rows; }));
    t.push_back(int_field("core.mxu_cols", [](HardwareConfig& c) -> int64_t& { return c.core.mxu_cols; }));
    t.push_back(number_field("core.mxu_weight_load_cycles",
                             [](HardwareConfig& c) -> double& { return c.core.mxu_weight_load_cycles; },
                             Check::kNonNegative));
    t.push_back(number_field("core.mxu_fill_drain_cycles",
                             [](HardwareConfig& c) -> double& { return c.core.mxu_fill_drain_cycles; },
                             Check::kNonNegative));
    t.push_back(number_field("core.f32_matmul_passes",
                             [](HardwareConfig& c) -> double& { return c.core.f32_matmul_passes; }));
    t.push_back(int_field("core.vpu_lanes", [](HardwareConfig& c) -> int64_t& { return c.core.vpu_lanes; }));
    t.push_back(int_field("core.vpu_sublanes", [](HardwareConfig& c) -> int64_t& { return c.core.vpu_sublanes; }));
    t.push_back(number_field("core.vpu_cycles.simple",
                             [](HardwareConfig& c) -> double& { return c.core.vpu_cycles.simple; }));
    t.push_back(number_field("core.vpu_cycles.transcendental",
                             [](HardwareConfig& c) -> double& { return c.core.vpu_cycles.transcendental; }));
    t.push_back(number_field("core.vpu_cycles.reduce",
                             [](HardwareConfig& c) -> double& { return c.core.vpu_cycles.reduce; }));
    t.push_back(number_field("core.vpu_cycles.transpose",
                             [](HardwareConfig& c) -> double& { return c.core.vpu_cycles.transpose; }));
    t.push_back(number_field("core.vpu_cycles.convert",
                             [](HardwareConfig& c) -> double& { return c.core.vpu_cycles.convert; }));
    t.push_back(number_field("core.op_overhead_s", [](HardwareConfig& c) -> double& { return c.core.op_overhead_s; },
                             Check::kNonNegative));
    t.push_back(number_field("hbm.capacity_bytes", [](HardwareConfig& c) -> double& { return c.hbm.capacity_bytes; }));
    t.push_back(number_field("hbm.bandwidth", [](HardwareConfig& c) -> double& { return c.hbm.bandwidth; }));
    t.push_back(number_field("hbm.latency_s", [](HardwareConfig& c) -> double& { return c.hbm.latency_s; },
                             Check::kNonNegative));
    t.push_back(int_field("chip.devices_per_chip",
                          [](HardwareConfig& c) -> int64_t& { return c.chip.devices_per_chip; }));
    t.push_back(number_field("chip.on_chip_bandwidth",
                             [](HardwareConfig& c) -> double& { return c.chip.on_chip_bandwidth; }));
    t.push_back(number_field("chip.on_chip_latency_s",
                             [](HardwareConfig& c) -> double& { return c.chip.on_chip_latency_s; },
                             Check::kNonNegative));
    t.push_back(Field{"ici.pod_dims",
                      [](HardwareConfig& c, const YAML::Node& n, const SourceLocation& loc) {
                        c.ici.pod_dims = parse_dims(n, loc, "ici.pod_dims");
                      },
                      [](const HardwareConfig& c) { return fmt::format("[{}]", fmt::join(c.ici.pod_dims, ", ")); }});
    t.push_back(Field{"ici.pod_wraparound",
                      [](HardwareConfig& c, const YAML::Node& n, const SourceLocation& loc) {
                        c.ici.pod_wraparound = parse_flags(n, loc, "ici.pod_wraparound");
                      },
                      [](const HardwareConfig& c) {
                        std::vector<std::string> words;
                        for (bool w : c.ici.pod_wraparound) words.push_back(w ? "true" : "false");
                        return fmt::format("[{}]", fmt::join(words, ", "));
                      }});
    t.push_back(number_field("ici.link_bandwidth", [](HardwareConfig& c) -> double& { return c.ici.link_bandwidth; }));
    t.push_back(number_field("ici.link_efficiency",
                             [](HardwareConfig& c) -> double& { return c.ici.link_efficiency; }));
    t.push_back(number_field("ici.hop_latency_s", [](HardwareConfig& c) -> double& { return c.ici.hop_latency_s; },
                             Check::kNonNegative));
    t.push_back(number_field("ici.message_overhead_s",
                             [](HardwareConfig& c) -> double& { return c.ici.message_overhead_s; },
                             Check::kNonNegative));
    t.push_back(choice_field("ici.collective_algorithm",
                             [](HardwareConfig& c) -> std::string& { return c.ici.collective_algorithm; },
                             collective_algorithm_names()));
    return t;
  }();
  return table;
}

const Field* find_field(const std::string& key) {
  for (const Field& f : fields())
    if (f.key == key) return &f;
  return nullptr;
}

// Keys directly below `prefix` ("" = top level), e.g. "core." -> model, clock_hz, vpu_cycles.
std::vector<std::string> keys_below(const std::string& prefix) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  if (prefix.empty()) {
    add("base");
  }
  for (const Field& f : fields()) {
    if (f.key.compare(0, prefix.size(), prefix) != 0) continue;
    std::string rest = f.key.substr(prefix.size());
    add(rest.substr(0, rest.find('.')));
  }
  if (prefix.empty()) add("sources");
  return out;
}

bool is_section(const std::string& dotted) {
  const std::string prefix = dotted + ".";
  for (const Field& f : fields())
    if (f.key.compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

[[noreturn]] void unknown_key(const SourceLocation& loc, const std::string& prefix, const std::string& name) {
  throw UserError(loc, fmt::format("unknown hardware key '{}{}'", prefix, name),
                  fmt::format("valid keys{}: {}", prefix.empty() ? "" : " under '" + prefix.substr(0, prefix.size() - 1) + "'",
                              fmt::join(keys_below(prefix), ", ")));
}

void check_consistency(const HardwareConfig& c, const SourceLocation& loc) {
  if (c.ici.pod_dims.size() != c.ici.pod_wraparound.size())
    throw UserError(loc, fmt::format("ici.pod_wraparound has {} entries but ici.pod_dims has {}",
                                     c.ici.pod_wraparound.size(), c.ici.pod_dims.size()),
                    "give one wraparound flag per pod dimension");
}

struct DocumentReader {
  std::string file;
  HardwareConfig& config;
  std::set<std::string> assigned;
  std::set<std::string> sourced;  // keys this document gives a source for

  void read_map(const YAML::Node& map, const std::string& prefix) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      // Copies: yaml-cpp iterators hand out a temporary key/value pair.
      const YAML::Node key_node = it->first;
      const YAML::Node value = it->second;
      const std::string name = key_node.as<std::string>();
      const std::string key = prefix + name;
      const SourceLocation loc = location_of(value, file);
      if (prefix.empty() && name == "base") continue;  // handled by the caller
      if (prefix.empty() && name == "sources") {
        read_sources(value);
        continue;
      }
      if (const Field* field = find_field(key)) {
        field->set(config, value, loc);
        assigned.insert(key);
      } else if (is_section(key)) {
        if (!value.IsMap()) bad_value(loc, key, "a map of keys", value);
        read_map(value, key + ".");
      } else {
        unknown_key(location_of(key_node, file), prefix, name);
      }
    }
  }

  void read_sources(const YAML::Node& map) {
    if (!map.IsMap()) bad_value(location_of(map, file), "sources", "a map from hardware keys to source notes", map);
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key_node = it->first;
      const YAML::Node value = it->second;
      const std::string key = key_node.as<std::string>();
      if (!find_field(key))
        throw UserError(location_of(key_node, file), fmt::format("'sources' names unknown hardware key '{}'", key),
                        fmt::format("valid keys: {}", fmt::join(hardware_keys(), ", ")));
      if (!value.IsScalar()) bad_value(location_of(value, file), "sources." + key, "a text note", value);
      config.sources[key] = value.Scalar();
      sourced.insert(key);
    }
  }
};

std::filesystem::path resolve_preset(const std::string& name_or_path) {
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               name_or_path.ends_with(".yaml") || name_or_path.ends_with(".yml");
  if (looks_like_path) return name_or_path;
  return std::filesystem::path(PODSIM_PRESET_DIR) / (name_or_path + ".yaml");
}

YAML::Node parse_yaml(const std::string& text, const std::string& origin) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw UserError(SourceLocation{origin, e.mark.line + 1, e.mark.column + 1}, e.msg);
  }
}

HardwareConfig load_document(const YAML::Node& doc, const std::string& origin, int depth);

HardwareConfig load_file(const std::string& name_or_path, int depth) {
  const std::filesystem::path path = resolve_preset(name_or_path);
  if (!std::filesystem::exists(path)) {
    throw UserError(SourceLocation{name_or_path, 0, 0},
                    fmt::format("no hardware preset or file named '{}'", name_or_path),
                    fmt::format("presets: {}; or give a path to a .yaml file", fmt::join(preset_names(), ", ")));
  }
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path.string());
  } catch (const YAML::ParserException& e) {
    throw UserError(SourceLocation{path.string(), e.mark.line + 1, e.mark.column + 1}, e.msg);
  }
  return load_document(doc, path.string(), depth);
}

HardwareConfig load_document_body(const YAML::Node& doc, const std::string& origin, int depth);

// yaml-cpp conversion errors (a list or map where a scalar key or value is
// expected, e.g. "? [a]: 1") become positioned UserErrors.
HardwareConfig load_document(const YAML::Node& doc, const std::string& origin, int depth) {
  try {
    return load_document_body(doc, origin, depth);
  } catch (const YAML::Exception& e) {
    throw UserError(SourceLocation{origin, e.mark.line + 1, e.mark.column + 1},
                    fmt::format("unexpected YAML structure: {}", e.msg),
                    "hardware keys are plain words with number, word or list values");
  }
}

HardwareConfig load_document_body(const YAML::Node& doc, const std::string& origin, int depth) {
  if (!doc.IsMap())
    throw UserError(location_of(doc, origin), "a hardware document must be a map of keys",
                    fmt::format("valid keys: {}", fmt::join(keys_below(""), ", ")));
  HardwareConfig config;
  const YAML::Node base = doc["base"];
  const bool has_base = base.IsDefined();
  if (has_base) {
    if (depth > 8) throw UserError(location_of(base, origin), "'base:' chain is too deep (a cycle?)");
    if (!base.IsScalar()) bad_value(location_of(base, origin), "base", "a preset name or path", base);
    config = load_file(base.Scalar(), depth + 1);
  }
  DocumentReader reader{origin, config, {}, {}};
  reader.read_map(doc, "");
  if (!has_base) {
    std::vector<std::string> missing;
    for (const Field& f : fields())
      if (!reader.assigned.count(f.key)) missing.push_back(f.key);
    if (!missing.empty())
      throw UserError(SourceLocation{origin, 0, 0},
                      fmt::format("hardware document lacks key(s): {}", fmt::join(missing, ", ")),
                      "every key must be given (no silent defaults), or start the file with 'base: tpuv3'");
  }
  for (const std::string& key : reader.assigned)
    if (has_base && !reader.sourced.count(key)) config.sources[key] = "set in " + origin;
  config.origin = origin;
  check_consistency(config, SourceLocation{origin, 0, 0});
  return config;
}

}  // namespace

HardwareConfig load_hardware(const std::string& preset_name_or_path, const Overrides& overrides) {
  HardwareConfig config = load_file(preset_name_or_path, 0);
  apply_overrides(config, overrides);
  return config;
}

HardwareConfig load_hardware_from_string(const std::string& yaml_text, const std::string& origin,
                                         const Overrides& overrides) {
  HardwareConfig config = load_document(parse_yaml(yaml_text, origin), origin, 0);
  apply_overrides(config, overrides);
  return config;
}

void apply_overrides(HardwareConfig& config, const Overrides& overrides) {
  for (const auto& [key, text] : overrides) {
    const Field* field = find_field(key);
    if (!field)
      throw UserError(fmt::format("unknown hardware key '{}' in override", key),
                      fmt::format("valid keys: {}", fmt::join(hardware_keys(), ", ")));
    const std::string origin = fmt::format("override {}={}", key, text);
    YAML::Node value;
    try {
      value = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      throw UserError(SourceLocation{origin, 0, 0}, fmt::format("bad value for hardware key '{}': {}", key, e.msg));
    }
    field->set(config, value, SourceLocation{origin, 0, 0});
    config.sources[key] = "override (--set)";
  }
  if (!overrides.empty()) check_consistency(config, SourceLocation{"overrides", 0, 0});
}

std::vector<std::string> hardware_keys() {
  std::vector<std::string> keys;
  for (const Field& f : fields()) keys.push_back(f.key);
  return keys;
}

std::string hardware_value_text(const HardwareConfig& config, const std::string& key) {
  const Field* field = find_field(key);
  assert(field && "hardware_value_text: unknown key");
  return field->get(config);
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(PODSIM_PRESET_DIR))
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

int64_t mxus_per_device(const CoreConfig& core) { return core.tensor_cores_per_device * core.mxus_per_tensor_core; }

double peak_matmul_flops_per_device(const CoreConfig& core) {
  // One MAC per PE per cycle; a MAC is 2 FLOP (multiply + add).
  return 2.0 * static_cast<double>(mxus_per_device(core) * core.mxu_rows * core.mxu_cols) * core.clock_hz;
}

double vpu_elements_per_second(const CoreConfig& core) {
  return static_cast<double>(core.tensor_cores_per_device * core.vpu_lanes * core.vpu_sublanes) * core.clock_hz;
}

}  // namespace podsim::hw
