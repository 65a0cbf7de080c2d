// Strict workload YAML reader. Each mapping is read through a KeyReader that
// records which keys were consumed and rejects any other key with the closest
// valid name as a hint. yaml-cpp marks are 0-based; messages are 1-based.
#include "workloads/workload.h"

#include <yaml-cpp/yaml.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "hw_models/ici/placement.h"

namespace podsim::workloads {

int64_t MeshSpec::device_count() const {
  int64_t n = 1;
  for (const auto& [name, size] : axes) n *= size;
  return n;
}

namespace {

// Levenshtein distance, for "did you mean" hints.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(const std::string& key, const std::vector<std::string>& valid) {
  std::string best;
  size_t best_d = 1000;
  for (const auto& v : valid) {
    size_t d = edit_distance(key, v);
    if (d < best_d) best_d = d, best = v;
  }
  return best_d <= std::max<size_t>(2, key.size() / 3) ? best : "";
}

class Context {
 public:
  explicit Context(std::string file) : file_(std::move(file)) {}
  SourceLocation at(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    if (m.line < 0) return SourceLocation{file_, 0, 0};
    return SourceLocation{file_, m.line + 1, m.column + 1};
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& msg, const std::string& hint = "") const {
    throw UserError(at(n), msg, hint);
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// Reads the keys of one mapping; finish() rejects the keys nobody asked for.
class KeyReader {
 public:
  KeyReader(const Context& ctx, const YAML::Node& node, std::string path)
      : ctx_(ctx), node_(node), path_(std::move(path)) {
    if (!node.IsMap()) ctx.fail(node, fmt::format("'{}' must be a mapping", path_));
  }
  // Returns the node for key (or a null node), marking it as known.
  YAML::Node get(const std::string& key) {
    known_.push_back(key);
    return node_[key];
  }
  YAML::Node require(const std::string& key) {
    YAML::Node n = get(key);
    if (n) return n;
    // A missing required key is often a typo of it: report the typo instead.
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      std::string present = it->first.as<std::string>();
      if (present != key && closest(present, {key}) == key)
        ctx_.fail(it->first, fmt::format("unknown key '{}' in '{}'", present, path_),
                  fmt::format("did you mean '{}'?", key));
    }
    ctx_.fail(node_, fmt::format("'{}' is missing the required key '{}'", path_, key));
    return n;
  }
  void finish() const {
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      std::string key = it->first.as<std::string>();
      if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
      std::string guess = closest(key, known_);
      ctx_.fail(it->first, fmt::format("unknown key '{}' in '{}'", key, path_),
                guess.empty() ? fmt::format("valid keys: {}", fmt::join(known_, ", "))
                              : fmt::format("did you mean '{}'? valid keys: {}", guess, fmt::join(known_, ", ")));
    }
  }
  const std::string& path() const { return path_; }

 private:
  const Context& ctx_;
  YAML::Node node_;
  std::string path_;
  std::vector<std::string> known_;
};

std::string as_string(const Context& ctx, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) ctx.fail(n, fmt::format("'{}' must be a string", key));
  return n.Scalar();
}

int64_t as_int(const Context& ctx, const YAML::Node& n, const std::string& key, int64_t min_value = 1) {
  if (!n.IsScalar()) ctx.fail(n, fmt::format("'{}' must be an integer", key));
  const std::string& s = n.Scalar();
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used, 10);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != s.size())
    ctx.fail(n, fmt::format("'{}' must be an integer, got '{}'", key, s));
  if (v < min_value) ctx.fail(n, fmt::format("'{}' must be >= {}, got {}", key, min_value, v));
  return v;
}

double as_double(const Context& ctx, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) ctx.fail(n, fmt::format("'{}' must be a number", key));
  const std::string& s = n.Scalar();
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != s.size()) ctx.fail(n, fmt::format("'{}' must be a number, got '{}'", key, s));
  return v;
}

bool as_bool(const Context& ctx, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) ctx.fail(n, fmt::format("'{}' must be true or false", key));
  const std::string& s = n.Scalar();
  if (s == "true" || s == "True" || s == "yes") return true;
  if (s == "false" || s == "False" || s == "no") return false;
  ctx.fail(n, fmt::format("'{}' must be true or false, got '{}'", key, s));
}

std::string as_choice(const Context& ctx, const YAML::Node& n, const std::string& key,
                      const std::vector<std::string>& choices) {
  std::string v = as_string(ctx, n, key);
  if (std::find(choices.begin(), choices.end(), v) == choices.end())
    ctx.fail(n, fmt::format("'{}' must be one of {}, got '{}'", key, fmt::join(choices, " | "), v));
  return v;
}

void read_mesh(const Context& ctx, const YAML::Node& node, MeshSpec& mesh) {
  KeyReader r(ctx, node, "mesh");
  YAML::Node axes = r.require("axes");
  if (!axes.IsMap() || axes.size() == 0) ctx.fail(axes, "'mesh.axes' must be a mapping of axis name to size, e.g. {x: 4, y: 2}");
  for (auto it = axes.begin(); it != axes.end(); ++it) {
    std::string name = it->first.as<std::string>();
    for (const auto& [n, s] : mesh.axes)
      if (n == name) ctx.fail(it->first, fmt::format("mesh axis '{}' appears twice", name));
    mesh.axes.emplace_back(name, as_int(ctx, it->second, "mesh.axes." + name));
  }
  if (YAML::Node p = r.get("physical")) {
    if (!p.IsSequence() || p.size() < 2)
      ctx.fail(p, "'mesh.physical' must be a list [chips_x, chips_y(, chips_z), cores_per_chip]");
    int64_t product = 1;
    for (const auto& e : p) {
      mesh.physical.push_back(as_int(ctx, e, "mesh.physical"));
      product *= mesh.physical.back();
    }
    if (product != mesh.device_count())
      ctx.fail(p, fmt::format("'mesh.physical' holds {} cores but the mesh has {} devices", product,
                              mesh.device_count()),
               "the product of mesh.physical must equal the product of mesh.axes");
  }
  // mesh.order: a placement name exactly as hw::placement_order_from_name
  // (hw_models/ici/placement.h) takes it; "explicit" reads the device list
  // from mesh.devices. A list in mesh.order is shorthand for explicit + devices.
  const std::vector<std::string> kOrders = {"row_major", "column_major", "explicit", "ring_preserving"};
  YAML::Node devices = r.get("devices");
  YAML::Node o = r.get("order");
  if (o && o.IsSequence()) {
    if (devices) ctx.fail(devices, "'mesh.devices' is given but 'mesh.order' already lists the devices",
                          "give the list once: order: explicit with devices: [...], or order: [...]");
    devices = o;
  } else if (o) {
    mesh.order = as_string(ctx, o, "mesh.order");
    // The placement's own parser decides, so the two can never disagree.
    bool known = true;
    try {
      hw::placement_order_from_name(mesh.order);
    } catch (const UserError&) {
      known = false;
    }
    if (!known) {
      const std::string guess = mesh.order == "ring" ? "ring_preserving" : closest(mesh.order, kOrders);
      ctx.fail(o, fmt::format("'mesh.order' must be one of {}, got '{}'", fmt::join(kOrders, " | "), mesh.order),
               guess.empty() ? "or a list of device ids (an explicit placement)"
                             : fmt::format("did you mean '{}'?", guess));
    }
    if (mesh.order == "explicit" && !devices)
      ctx.fail(o, "'mesh.order: explicit' needs the device list in 'mesh.devices'",
               "add devices: [d0, d1, ...], one physical device id per logical device (row-major)");
    if (mesh.order != "explicit" && devices)
      ctx.fail(devices, fmt::format("'mesh.devices' is only read with 'mesh.order: explicit' (order is '{}')",
                                    mesh.order),
               "set order: explicit, or remove devices");
  } else if (devices) {
    ctx.fail(devices, "'mesh.devices' is only read with 'mesh.order: explicit'", "add order: explicit");
  }
  if (devices) {
    mesh.order = "explicit";
    if (!devices.IsSequence()) ctx.fail(devices, "the explicit device order must be a list of device ids");
    std::set<int64_t> seen;
    for (const auto& e : devices) {
      int64_t d = as_int(ctx, e, "mesh.devices", 0);
      if (d >= mesh.device_count()) ctx.fail(e, fmt::format("device id {} out of range [0, {})", d, mesh.device_count()));
      if (!seen.insert(d).second) ctx.fail(e, fmt::format("device id {} listed twice", d));
      mesh.explicit_devices.push_back(d);
    }
    if (static_cast<int64_t>(mesh.explicit_devices.size()) != mesh.device_count())
      ctx.fail(devices, fmt::format("the explicit device order lists {} devices, the mesh has {}",
                                    mesh.explicit_devices.size(), mesh.device_count()));
  }
  r.finish();
}

void read_model(const Context& ctx, const YAML::Node& node, ModelSpec& m) {
  KeyReader r(ctx, node, "model");
  m.kind = as_choice(ctx, r.require("kind"), "model.kind", {"dense_transformer", "moe_transformer", "hlo"});
  auto int_key = [&](const char* key, int64_t& field, bool required) {
    YAML::Node n = required ? r.require(key) : r.get(key);
    if (n) field = as_int(ctx, n, std::string("model.") + key);
  };
  if (m.kind == "hlo") {
    m.file = as_string(ctx, r.require("file"), "model.file");
    int_key("global_batch", m.global_batch, false);
    int_key("seq_len", m.seq_len, false);
    r.finish();
    return;
  }
  int_key("layers", m.layers, true);
  int_key("model_dim", m.model_dim, true);
  int_key("ffn_dim", m.ffn_dim, true);
  int_key("heads", m.heads, true);
  int_key("head_dim", m.head_dim, true);
  int_key("vocab", m.vocab, true);
  int_key("seq_len", m.seq_len, true);
  int_key("global_batch", m.global_batch, true);
  if (YAML::Node n = r.get("ffn")) m.ffn = as_choice(ctx, n, "model.ffn", {"gated_gelu", "gelu", "relu"});
  if (YAML::Node n = r.get("position"))
    m.position = as_choice(ctx, n, "model.position", {"relative", "learned"});
  if (YAML::Node d = r.get("dtypes")) {
    KeyReader dr(ctx, d, "model.dtypes");
    if (YAML::Node p = dr.get("params")) m.dtypes.params = as_choice(ctx, p, "model.dtypes.params", {"f32", "bf16"});
    if (YAML::Node a = dr.get("activations"))
      m.dtypes.activations = as_choice(ctx, a, "model.dtypes.activations", {"f32", "bf16"});
    dr.finish();
  }
  if (m.kind == "moe_transformer") {
    int_key("experts", m.experts, true);
    int_key("moe_every", m.moe_every, false);
    int_key("top_k", m.top_k, false);
    int_key("group_size", m.group_size, false);
    if (YAML::Node n = r.get("capacity_factor")) {
      m.capacity_factor = as_double(ctx, n, "model.capacity_factor");
      if (m.capacity_factor <= 0) ctx.fail(n, "'model.capacity_factor' must be > 0");
    }
    if (YAML::Node n = r.get("structure"))
      m.structure = as_choice(ctx, n, "model.structure", {"decoder_only", "encoder_decoder"});
  }
  r.finish();
}

void read_training(const Context& ctx, const YAML::Node& node, TrainingSpec& t) {
  KeyReader r(ctx, node, "training");
  if (YAML::Node n = r.get("enabled")) t.enabled = as_bool(ctx, n, "training.enabled");
  if (YAML::Node n = r.get("optimizer"))
    t.optimizer = as_choice(ctx, n, "training.optimizer", {"sgd", "adam", "adafactor"});
  if (YAML::Node n = r.get("weight_update_sharding"))
    t.weight_update_sharding = as_bool(ctx, n, "training.weight_update_sharding");
  if (YAML::Node n = r.get("remat")) t.remat = as_string(ctx, n, "training.remat");
  if (YAML::Node n = r.get("microbatches")) t.microbatches = as_int(ctx, n, "training.microbatches");
  if (YAML::Node n = r.get("pipeline_stages")) t.pipeline_stages = as_int(ctx, n, "training.pipeline_stages");
  r.finish();
}

void read_sharding(const Context& ctx, const YAML::Node& node, const MeshSpec& mesh, Workload& w) {
  if (!node.IsMap()) ctx.fail(node, "'sharding' must map tensor names to per-dim mesh axes, e.g. ffn_in: [x, y]");
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string tensor = it->first.as<std::string>();
    const YAML::Node dims = it->second;  // a copy: yaml-cpp iterators hand out temporaries
    if (!dims.IsSequence()) ctx.fail(dims, fmt::format("'sharding.{}' must be a list of mesh axes or null", tensor));
    std::vector<std::optional<std::string>> mapping;
    std::set<std::string> used;
    for (const auto& d : dims) {
      if (d.IsNull() || (d.IsScalar() && (d.Scalar() == "null" || d.Scalar() == "~" || d.Scalar() == "-"))) {
        mapping.emplace_back(std::nullopt);
        continue;
      }
      std::string axis = as_string(ctx, d, "sharding." + tensor);
      bool known = std::any_of(mesh.axes.begin(), mesh.axes.end(), [&](const auto& a) { return a.first == axis; });
      if (!known) {
        std::vector<std::string> names;
        for (const auto& a : mesh.axes) names.push_back(a.first);
        ctx.fail(d, fmt::format("unknown mesh axis '{}' in 'sharding.{}'", axis, tensor),
                 fmt::format("mesh axes are: {}", fmt::join(names, ", ")));
      }
      if (!used.insert(axis).second)
        ctx.fail(d, fmt::format("mesh axis '{}' shards two dims of '{}'", axis, tensor),
                 "a mesh axis may split at most one dim of a tensor");
      mapping.emplace_back(axis);
    }
    w.sharding.emplace_back(tensor, std::move(mapping));
    w.sharding_locations.push_back(ctx.at(it->first));
  }
}

// Applies "a.b.c=value" to the document, creating maps as needed. The value
// is parsed as YAML so numbers, lists and maps work ("mesh.axes={x: 8}").
void apply_override(YAML::Node root, const std::string& assignment, std::vector<std::pair<std::string, std::string>>& hw) {
  SourceLocation where{"--set " + assignment, 0, 0};
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError(where, "an override must look like key=value", "e.g. --set model.layers=64");
  std::string key = assignment.substr(0, eq);
  std::string value = assignment.substr(eq + 1);
  if (key.rfind("hardware.", 0) == 0) {
    hw.emplace_back(key.substr(9), value);
    return;
  }
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty()) throw UserError(where, fmt::format("empty component in key '{}'", key));
    parts.push_back(p);
  }
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw UserError(where, fmt::format("cannot parse the value '{}': {}", value, e.msg));
  }
  // yaml-cpp nodes are handles: walking with operator[] on copies edits the tree.
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = chain.back()[parts[i]];
    if (next.IsDefined() && !next.IsMap())
      throw UserError(where, fmt::format("'{}' is not a mapping, cannot set '{}' inside it", parts[i], key));
    chain.push_back(next);
  }
  chain.back()[parts.back()] = parsed;
}

Workload read_document(const Context& ctx, YAML::Node doc) {
  Workload w;
  w.source_file = ctx.file();
  if (!doc.IsMap()) ctx.fail(doc, "a workload file must be a YAML mapping", "see workloads/ for examples");
  KeyReader r(ctx, doc, "workload");
  w.name = as_string(ctx, r.require("name"), "name");
  if (YAML::Node h = r.get("hardware")) w.hardware = as_string(ctx, h, "hardware");
  read_mesh(ctx, r.require("mesh"), w.mesh);
  read_model(ctx, r.require("model"), w.model);
  if (YAML::Node s = r.get("sharding")) read_sharding(ctx, s, w.mesh, w);
  if (YAML::Node t = r.get("training")) read_training(ctx, t, w.training);
  r.finish();
  const ModelSpec& m = w.model;
  if (m.kind != "hlo") {
    if (m.global_batch % w.training.microbatches != 0)
      ctx.fail(doc["model"]["global_batch"],
               fmt::format("model.global_batch ({}) is not divisible by training.microbatches ({})", m.global_batch,
                           w.training.microbatches));
    if (w.training.pipeline_stages > 1 && m.layers % w.training.pipeline_stages != 0)
      ctx.fail(doc["training"]["pipeline_stages"],
               fmt::format("model.layers ({}) does not divide into training.pipeline_stages ({})", m.layers,
                           w.training.pipeline_stages),
               "every pipeline stage runs the same number of layers: pick a stage count that divides model.layers");
    if (m.kind == "moe_transformer" && m.moe_every > m.layers)
      ctx.fail(doc["model"], "'model.moe_every' is larger than 'model.layers'");
  }
  return w;
}

}  // namespace

Workload parse_workload(const std::string& yaml_text, const std::string& file_name,
                        const std::vector<std::string>& overrides) {
  Context ctx(file_name);
  YAML::Node doc;
  try {
    doc = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw UserError(SourceLocation{file_name, e.mark.line + 1, e.mark.column + 1},
                    fmt::format("malformed YAML: {}", e.msg), "check indentation and quoting near this position");
  }
  std::vector<std::pair<std::string, std::string>> hw;
  Workload w;
  try {
    for (const auto& o : overrides) apply_override(doc, o, hw);
    w = read_document(ctx, doc);
  } catch (const YAML::Exception& e) {
    // A node yaml-cpp cannot convert where the reader expects a plain
    // scalar (e.g. a map or list used as a key: "? [a]: 1"). Fuzzer finding.
    throw UserError(SourceLocation{file_name, e.mark.line + 1, e.mark.column + 1},
                    fmt::format("unexpected YAML structure: {}", e.msg),
                    "keys must be plain words and values the types DESIGN.md's workload schema lists");
  }
  w.hardware_overrides = std::move(hw);
  return w;
}

Workload load_workload(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(SourceLocation{path, 0, 0}, "cannot open the workload file", "check the path");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_workload(ss.str(), path, overrides);
}

}  // namespace podsim::workloads
