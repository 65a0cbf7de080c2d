// Strict workload YAML reader on common/yaml_reader.h: each mapping is read
// through a MapReader, so any key nobody reads is an error at its position
// with the closest valid name; choices become the enums of workload.h.
#include "workloads/workload.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/checked_math.h"
#include "common/did_you_mean.h"
#include "common/error.h"
#include "common/files.h"
#include "common/yaml_reader.h"
#include "compiler/training/optimizers.h"
#include "compiler/training/remat.h"
#include "hw_models/ici/placement.h"
#include "workloads/model_info.h"

namespace podsim::workloads {

namespace {

int64_t axes_product(const std::vector<std::pair<std::string, int64_t>>& axes) {
  int64_t n = 1;
  for (const auto& [name, size] : axes)
    if (std::optional<int64_t> next = checked_mul(n, size))
      n = *next;
    else
      return -1;
  return n;
}

}  // namespace

int64_t MeshSpec::device_count() const {
  // read_mesh caps the product at kMaxDevices, so a loaded mesh never
  // overflows; a hand-built one that would is reported as -1.
  const int64_t per_slice = slice_device_count(), slices = num_slices();
  if (per_slice < 0 || slices < 0) return -1;
  const std::optional<int64_t> n = checked_mul(per_slice, slices);
  return n ? *n : -1;
}

int64_t MeshSpec::slice_device_count() const { return axes_product(axes); }

int64_t MeshSpec::num_slices() const { return axes_product(dcn); }

std::vector<std::pair<std::string, int64_t>> MeshSpec::logical_axes() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& axis : dcn)
    if (axis.second > 1) out.push_back(axis);
  out.insert(out.end(), axes.begin(), axes.end());
  return out;
}

bool MeshSpec::is_unit_dcn_axis(const std::string& name) const {
  return std::any_of(dcn.begin(), dcn.end(),
                     [&](const auto& a) { return a.first == name && a.second == 1; });
}

const yaml::NameTable<ModelKind>& model_kind_names() {
  static const yaml::NameTable<ModelKind> table{{ModelKind::kDenseTransformer, "dense_transformer"},
                                                {ModelKind::kMoeTransformer, "moe_transformer"},
                                                {ModelKind::kHlo, "hlo"}};
  return table;
}

const yaml::NameTable<FfnKind>& ffn_names() {
  static const yaml::NameTable<FfnKind> table{
      {FfnKind::kGatedGelu, "gated_gelu"}, {FfnKind::kGelu, "gelu"}, {FfnKind::kRelu, "relu"}};
  return table;
}

const yaml::NameTable<PositionKind>& position_names() {
  static const yaml::NameTable<PositionKind> table{{PositionKind::kRelative, "relative"},
                                                   {PositionKind::kLearned, "learned"},
                                                   {PositionKind::kRotary, "rotary"},
                                                   {PositionKind::kNone, "none"}};
  return table;
}

const yaml::NameTable<NormKind>& norm_names() {
  static const yaml::NameTable<NormKind> table{{NormKind::kRms, "rms"},
                                               {NormKind::kLayer, "layer"}};
  return table;
}

const yaml::NameTable<AttentionKind>& attention_names() {
  static const yaml::NameTable<AttentionKind> table{{AttentionKind::kStandard, "standard"},
                                                    {AttentionKind::kFlash, "flash"}};
  return table;
}

const yaml::NameTable<LayerLoop>& layer_loop_names() {
  static const yaml::NameTable<LayerLoop> table{{LayerLoop::kUnrolled, "unrolled"},
                                                {LayerLoop::kScan, "scan"}};
  return table;
}

const yaml::NameTable<ModelStructure>& structure_names() {
  static const yaml::NameTable<ModelStructure> table{
      {ModelStructure::kDecoderOnly, "decoder_only"},
      {ModelStructure::kEncoderDecoder, "encoder_decoder"}};
  return table;
}

const yaml::NameTable<BlockKind>& block_names() {
  static const yaml::NameTable<BlockKind> table{{BlockKind::kSequential, "sequential"},
                                                {BlockKind::kParallel, "parallel"}};
  return table;
}

const yaml::NameTable<EmbeddingLookup>& embedding_lookup_names() {
  static const yaml::NameTable<EmbeddingLookup> table{{EmbeddingLookup::kOneHot, "one_hot"},
                                                      {EmbeddingLookup::kGather, "gather"}};
  return table;
}

const yaml::NameTable<compiler::DType>& workload_dtype_names() {
  static const yaml::NameTable<compiler::DType> table{{compiler::DType::kF32, "f32"},
                                                      {compiler::DType::kBF16, "bf16"}};
  return table;
}

yaml::NameTable<compiler::OptimizerKind> optimizer_names() {
  std::vector<std::pair<compiler::OptimizerKind, std::string_view>> names;
  for (const compiler::OptimizerEntry& e : compiler::optimizers())
    names.emplace_back(e.kind, e.name);
  return yaml::NameTable<compiler::OptimizerKind>(std::move(names));
}

std::string name_of(ModelKind kind) { return std::string(model_kind_names().name(kind)); }
std::string name_of(hw::PlacementOrder order) {
  return std::string(hw::placement_orders().name(order));
}

namespace {

// Size limits (absurd sizes are input errors, not overflows).
// Bytes and element counts downstream (shapes, memory sums, peak memory) are
// int64; these caps keep them exact with room to spare. One array holds at
// most 2^50 elements (x 8 bytes = 2^53 B); all weights, and all activations
// over all layers, at most 2^52 elements each (x 8 bytes = 2^55 B), leaving a
// factor 2^8 below 2^63 for the sums of copies (gradients, optimizer state,
// remat and pipeline buffers). The shipped dense_1t_2048 uses ~2^40 weight
// and ~2^44 activation elements. Layers are unrolled into the program
// (compile time grows faster than linearly: 1024 layers of small.yaml take
// ~5 minutes), so more than kMaxLayers is rejected rather than left to hang.
constexpr int64_t kMaxArrayElements = int64_t{1} << 50;
constexpr int64_t kMaxTotalElements = int64_t{1} << 52;
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxDevices = int64_t{1} << 20;
constexpr double kMaxCapacityFactor = 1e4;

using yaml::MapReader;

std::string as_string(const yaml::Document& ctx, const YAML::Node& n, const std::string& key) {
  return yaml::read_string(ctx, n, key);
}
int64_t as_int(const yaml::Document& ctx, const YAML::Node& n, const std::string& key,
               int64_t min_value = 1) {
  return yaml::read_int(ctx, n, key, min_value);
}
bool as_bool(const yaml::Document& ctx, const YAML::Node& n, const std::string& key) {
  return yaml::read_bool(ctx, n, key);
}
// A number; the callers check its range (NaN included) with their own hint.
double as_double(const yaml::Document& ctx, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) ctx.fail(n, fmt::format("'{}' must be a number", key));
  const std::optional<double> v = yaml::parse_double(n.Scalar());
  if (!v) ctx.fail(n, fmt::format("'{}' must be a number, got '{}'", key, n.Scalar()));
  return *v;
}
std::string as_choice(const yaml::Document& ctx, const YAML::Node& n, const std::string& key,
                      const std::vector<std::string>& choices) {
  std::string v = as_string(ctx, n, key);
  if (std::find(choices.begin(), choices.end(), v) == choices.end())
    yaml::bad_choice(ctx, n, key, v, choices);
  return v;
}

void read_mesh(const yaml::Document& ctx, const YAML::Node& node, MeshSpec& mesh) {
  MapReader r(ctx, node, "mesh");
  YAML::Node axes = r.require("axes");
  mesh.axes_location = ctx.at(axes);
  if (!axes.IsMap() || axes.size() == 0)
    ctx.fail(axes, "'mesh.axes' must be a mapping of axis name to size, e.g. {x: 4, y: 2}");
  const MapReader axis_keys(ctx, axes, "mesh.axes");  // free keys: the axis names
  for (const MapReader::Entry& axis : axis_keys.entries()) {
    const std::string& name = axis.key;
    for (const auto& [n, s] : mesh.axes)
      if (n == name) ctx.fail(axis.key_node, fmt::format("mesh axis '{}' appears twice", name));
    mesh.axes.emplace_back(name, as_int(ctx, axis.value, "mesh.axes." + name));
    const int64_t devices = mesh.device_count();  // -1 on int64 overflow
    if (devices < 0 || devices > kMaxDevices)
      ctx.fail(axis.value,
               fmt::format("the mesh axes multiply to more than {} devices", kMaxDevices),
               "podsim simulates up to 2^20 devices (a TPU v3 pod has 2048); check the axis sizes");
  }
  if (YAML::Node dcn = r.get("dcn")) {
    mesh.dcn_location = ctx.at(dcn);
    if (!dcn.IsMap() || dcn.size() == 0)
      ctx.fail(dcn,
               "'mesh.dcn' must be a mapping of axis name to size across slices, e.g. {data: 2}");
    const MapReader dcn_keys(ctx, dcn, "mesh.dcn");  // free keys: the axis names
    for (const MapReader::Entry& axis : dcn_keys.entries()) {
      const std::string& name = axis.key;
      for (const auto& [n, s] : mesh.axes)
        if (n == name)
          ctx.fail(axis.key_node,
                   fmt::format("mesh axis '{}' is in both mesh.axes and mesh.dcn", name),
                   "an axis lies inside a slice (mesh.axes) or spans slices over the data-centre "
                   "network (mesh.dcn), not both: give it one size in one of them, or rename one");
      for (const auto& [n, s] : mesh.dcn)
        if (n == name)
          ctx.fail(axis.key_node, fmt::format("mesh.dcn axis '{}' appears twice", name));
      mesh.dcn.emplace_back(name, as_int(ctx, axis.value, "mesh.dcn." + name));
      const int64_t devices = mesh.device_count();
      if (devices < 0 || devices > kMaxDevices)
        ctx.fail(axis.value,
                 fmt::format("the mesh axes multiply to more than {} devices", kMaxDevices),
                 "podsim simulates up to 2^20 devices; check the axis sizes");
    }
  }
  if (YAML::Node p = r.get("physical")) {
    mesh.physical_location = ctx.at(p);
    if (!p.IsSequence() || p.size() < 2)
      ctx.fail(p, "'mesh.physical' must be a list [chips_x, chips_y(, chips_z), cores_per_chip]");
    int64_t product = 1;
    for (const auto& e : p) {
      mesh.physical.push_back(as_int(ctx, e, "mesh.physical"));
      // Each entry is >= 1, so once past kMaxDevices the product can only grow.
      const std::optional<int64_t> next = checked_mul(product, mesh.physical.back());
      if (!next || *next > kMaxDevices)
        ctx.fail(e, fmt::format("'mesh.physical' multiplies to more than {} cores", kMaxDevices),
                 "the product of mesh.physical must equal the product of mesh.axes");
      product = *next;
    }
    if (product != mesh.slice_device_count())
      ctx.fail(p,
               fmt::format("'mesh.physical' holds {} cores but the mesh has {} devices{}", product,
                           mesh.slice_device_count(), mesh.dcn.empty() ? "" : " per slice"),
               "the product of mesh.physical must equal the product of mesh.axes");
  }
  // mesh.order: a placement name of hw::placement_orders()
  // (hw_models/ici/placement.h); "explicit" reads the device list from
  // mesh.devices. A list in mesh.order is shorthand for explicit + devices.
  const std::vector<std::string> kOrders = hw::placement_orders().names();
  YAML::Node devices = r.get("devices");
  YAML::Node o = r.get("order");
  if (o && o.IsSequence()) {
    if (devices)
      ctx.fail(devices, "'mesh.devices' is given but 'mesh.order' already lists the devices",
               "give the list once: order: explicit with devices: [...], or order: [...]");
    devices = o;
  } else if (o) {
    const std::string order = as_string(ctx, o, "mesh.order");
    const std::optional<hw::PlacementOrder> known = hw::placement_orders().find(order);
    if (!known) {
      const std::string guess = order == "ring" ? "ring_preserving" : closest(order, kOrders);
      ctx.fail(
          o,
          fmt::format("'mesh.order' must be one of {}, got '{}'", fmt::join(kOrders, " | "), order),
          guess.empty() ? "or a list of device ids (an explicit placement)"
                        : fmt::format("did you mean '{}'?", guess));
    }
    mesh.order = *known;
    if (mesh.order == hw::PlacementOrder::kExplicit && !devices)
      ctx.fail(o, "'mesh.order: explicit' needs the device list in 'mesh.devices'",
               "add devices: [d0, d1, ...], one physical device id per logical device (row-major)");
    if (mesh.order != hw::PlacementOrder::kExplicit && devices)
      ctx.fail(
          devices,
          fmt::format("'mesh.devices' is only read with 'mesh.order: explicit' (order is '{}')",
                      order),
          "set order: explicit, or remove devices");
  } else if (devices) {
    ctx.fail(devices, "'mesh.devices' is only read with 'mesh.order: explicit'",
             "add order: explicit");
  }
  if (devices) {
    mesh.order = hw::PlacementOrder::kExplicit;
    if (!devices.IsSequence())
      ctx.fail(devices, "the explicit device order must be a list of device ids");
    std::set<int64_t> seen;
    for (const auto& e : devices) {
      int64_t d = as_int(ctx, e, "mesh.devices", 0);
      if (d >= mesh.slice_device_count())
        ctx.fail(e, fmt::format("device id {} out of range [0, {})", d, mesh.slice_device_count()));
      if (!seen.insert(d).second) ctx.fail(e, fmt::format("device id {} listed twice", d));
      mesh.explicit_devices.push_back(d);
    }
    if (static_cast<int64_t>(mesh.explicit_devices.size()) != mesh.slice_device_count())
      ctx.fail(devices, fmt::format("the explicit device order lists {} devices, the mesh has {}",
                                    mesh.explicit_devices.size(), mesh.slice_device_count()));
  }
  r.finish();
}

// model.attention and model.flash_block (after model.position and seq_len).
void read_attention(const yaml::Document& ctx, MapReader& r, ModelSpec& m) {
  const YAML::Node attention = r.get("attention");
  m.attention = r.choice("attention", attention_names()).value_or(m.attention);
  const YAML::Node block = r.get("flash_block");
  if (block) {
    m.flash_block = as_int(ctx, block, "model.flash_block");
    if (m.flash_block < 1 || m.seq_len % m.flash_block != 0)
      ctx.fail(block,
               fmt::format("'model.flash_block' {} must be >= 1 and divide seq_len {}",
                           m.flash_block, m.seq_len),
               "the kernel tiles the sequence into equal q and kv blocks; MaxText uses 512");
  } else {
    m.flash_block = std::min<int64_t>(m.flash_block, m.seq_len);
    if (m.attention == AttentionKind::kFlash && m.seq_len % m.flash_block != 0)
      ctx.fail(
          attention,
          fmt::format("flash attention's default block 512 does not divide seq_len {}", m.seq_len),
          "set model.flash_block to a divisor of seq_len");
  }
  if (m.attention == AttentionKind::kFlash && m.kv_heads != 0 && m.kv_heads != m.heads)
    ctx.fail(attention, "'model.attention: flash' runs multi-head attention only",
             "remove model.kv_heads (grouped-query attention runs with attention: standard)");
  if (m.attention == AttentionKind::kFlash && m.position == PositionKind::kRelative)
    ctx.fail(attention,
             "'model.attention: flash' takes no position bias, and model.position is relative "
             "(the default)",
             "set model.position: none (no position signal, as MaxText's flash runs), rotary "
             "(applied to q and k before the kernel) or learned");
}

void read_model(const yaml::Document& ctx, const YAML::Node& node, ModelSpec& m) {
  MapReader r(ctx, node, "model");
  m.kind = yaml::read_choice(ctx, r.require("kind"), "model.kind", model_kind_names());
  auto int_key = [&](const char* key, int64_t& field, bool required) {
    YAML::Node n = required ? r.require(key) : r.get(key);
    if (n) field = as_int(ctx, n, std::string("model.") + key);
  };
  if (m.kind == ModelKind::kHlo) {
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
  m.ffn = r.choice("ffn", ffn_names()).value_or(m.ffn);
  m.position = r.choice("position", position_names()).value_or(m.position);
  if (YAML::Node n = r.get("tied_embedding"))
    m.tied_embedding = as_bool(ctx, n, "model.tied_embedding");
  m.norm = r.choice("norm", norm_names()).value_or(m.norm);
  m.layer_loop = r.choice("layer_loop", layer_loop_names()).value_or(m.layer_loop);
  m.block = r.choice("block", block_names()).value_or(m.block);
  if (YAML::Node n = r.get("qk_norm")) m.qk_norm = as_bool(ctx, n, "model.qk_norm");
  if (YAML::Node n = r.get("kv_heads")) {
    m.kv_heads = as_int(ctx, n, "model.kv_heads");
    if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
      ctx.fail(
          n,
          fmt::format("'model.kv_heads' ({}) must divide 'model.heads' ({})", m.kv_heads, m.heads),
          "grouped-query attention shares each key/value head among heads / kv_heads query "
          "heads: pick a divisor of heads (heads itself = multi-head attention)");
  }
  m.embedding_lookup =
      r.choice("embedding_lookup", embedding_lookup_names()).value_or(m.embedding_lookup);
  if (YAML::Node n = r.get("causal")) m.causal = as_bool(ctx, n, "model.causal");
  read_attention(ctx, r, m);
  if (YAML::Node d = r.get("dtypes")) {
    MapReader dr(ctx, d, "model.dtypes");
    m.dtypes.params = dr.choice("params", workload_dtype_names()).value_or(m.dtypes.params);
    m.dtypes.activations =
        dr.choice("activations", workload_dtype_names()).value_or(m.dtypes.activations);
    m.dtypes.attention_logits =
        dr.choice("attention_logits", workload_dtype_names()).value_or(m.dtypes.attention_logits);
    dr.finish();
  }
  if (m.kind == ModelKind::kMoeTransformer) {
    int_key("experts", m.experts, true);
    int_key("moe_every", m.moe_every, false);
    int_key("top_k", m.top_k, false);
    int_key("group_size", m.group_size, false);
    if (YAML::Node n = r.get("capacity_factor")) {
      m.capacity_factor = as_double(ctx, n, "model.capacity_factor");
      // GShard uses 1 to 2. At E / top_k the capacity holds every token of a
      // group, so larger factors only grow the dispatch tensors: 10^4 is far
      // past any use. (stod reads "nan" and "inf": the negated test catches both.)
      if (!(m.capacity_factor > 0 && m.capacity_factor <= kMaxCapacityFactor))
        ctx.fail(n,
                 fmt::format("'model.capacity_factor' must be a number in (0, {}], got '{}'",
                             kMaxCapacityFactor, n.Scalar()),
                 "GShard uses 1 to 2; a factor of experts / top_k already keeps every token");
    }
    m.structure = r.choice("structure", structure_names()).value_or(m.structure);
    if (m.block == BlockKind::kParallel)
      ctx.fail(r.get("block"), "'model.block: parallel' is built for dense_transformer models only",
               "the MoE layer keeps its own pre-norm (sequential block): remove model.block or "
               "set it to sequential");
  }
  r.finish();
}

void read_training(const yaml::Document& ctx, const YAML::Node& node, TrainingSpec& t) {
  MapReader r(ctx, node, "training");
  if (YAML::Node n = r.get("enabled")) t.enabled = as_bool(ctx, n, "training.enabled");
  t.optimizer = r.choice("optimizer", optimizer_names()).value_or(t.optimizer);
  if (YAML::Node n = r.get("weight_update_sharding"))
    t.weight_update_sharding = as_bool(ctx, n, "training.weight_update_sharding");
  if (YAML::Node n = r.get("remat")) {
    std::vector<std::string> remat = {"none", "full", "auto"};
    for (const std::string& policy : compiler::selective_remat_policies()) remat.push_back(policy);
    const std::string choice = as_choice(ctx, n, "training.remat", remat);
    static const yaml::NameTable<RematMode> modes{
        {RematMode::kNone, "none"}, {RematMode::kFull, "full"}, {RematMode::kAuto, "auto"}};
    t.remat = modes.find(choice).value_or(RematMode::kSelective);
    if (t.remat == RematMode::kSelective) t.remat_policy = choice;
  }
  if (YAML::Node n = r.get("microbatches"))
    t.microbatches = as_int(ctx, n, "training.microbatches");
  if (YAML::Node n = r.get("pipeline_stages"))
    t.pipeline_stages = as_int(ctx, n, "training.pipeline_stages");
  r.finish();
}

const yaml::NameTable<compiler::Opcode>& collective_kind_names() {
  static const yaml::NameTable<compiler::Opcode> table{
      {compiler::Opcode::kAllGather, "all-gather"},
      {compiler::Opcode::kReduceScatter, "reduce-scatter"},
      {compiler::Opcode::kAllReduce, "all-reduce"},
      {compiler::Opcode::kAllToAll, "all-to-all"},
      {compiler::Opcode::kCollectivePermute, "collective-permute"}};
  return table;
}

// compiler.async_collectives: a list of distinct kinds ([] = every collective synchronous).
std::set<compiler::Opcode> read_async_collectives(const yaml::Document& ctx, const YAML::Node& n) {
  const std::string key = "compiler.async_collectives";
  if (!n.IsSequence())
    ctx.fail(n, fmt::format("'{}' must be a list of collective kinds", key),
             "e.g. [all-gather] (the others run synchronously); the default lists all five: " +
                 fmt::format("[{}]", fmt::join(collective_kind_names().names(), ", ")));
  std::set<compiler::Opcode> kinds;
  for (const YAML::Node& item : n) {
    const compiler::Opcode kind = yaml::read_choice(ctx, item, key, collective_kind_names());
    if (!kinds.insert(kind).second)
      ctx.fail(item, fmt::format("'{}' lists '{}' twice", key, item.Scalar()),
               "name each collective kind once");
  }
  return kinds;
}

void read_compiler(const yaml::Document& ctx, const YAML::Node& node, CompilerSpec& c) {
  MapReader r(ctx, node, "compiler");
  if (YAML::Node n = r.get("async_collectives"))
    c.async_collectives = read_async_collectives(ctx, n);
  if (YAML::Node n = r.get("collective_fusion"))
    c.collective_fusion = as_bool(ctx, n, "compiler.collective_fusion");
  if (YAML::Node we = r.get("windowed_einsum")) {
    MapReader w(ctx, we, "compiler.windowed_einsum");
    WindowedEinsumSpec& spec = c.windowed_einsum;
    if (YAML::Node n = w.get("threshold_mib")) {
      spec.threshold_mib = as_double(ctx, n, "compiler.windowed_einsum.threshold_mib");
      // 8e12 MiB (~7.6 EiB) is past any tensor, and its 8.4e18 bytes still fit an int64.
      if (!(spec.threshold_mib >= 0 && spec.threshold_mib <= 8.0e12))
        ctx.fail(
            n,
            fmt::format(
                "'compiler.windowed_einsum.threshold_mib' must be a size in MiB >= 0, got '{}'",
                n.Scalar()),
            "XLA's default is 256; 0 windows every eligible dot, a huge value none");
    }
    if (YAML::Node n = w.get("max_devices"))
      spec.max_devices = as_int(ctx, n, "compiler.windowed_einsum.max_devices");
    if (YAML::Node n = w.get("bidirectional"))
      spec.bidirectional = as_bool(ctx, n, "compiler.windowed_einsum.bidirectional");
    if (YAML::Node n = w.get("overlap_test"))
      spec.overlap_test = as_bool(ctx, n, "compiler.windowed_einsum.overlap_test");
    w.finish();
  }
  if (YAML::Node loops = r.get("loops")) {
    MapReader l(ctx, loops, "compiler.loops");
    if (YAML::Node n = l.get("pipelined_all_gather"))
      c.loops.pipelined_all_gather = as_bool(ctx, n, "compiler.loops.pipelined_all_gather");
    if (YAML::Node n = l.get("pipelined_reduce_scatter"))
      c.loops.pipelined_reduce_scatter = as_bool(ctx, n, "compiler.loops.pipelined_reduce_scatter");
    l.finish();
  }
  r.finish();
}

void read_sharding(const yaml::Document& ctx, const YAML::Node& node, const MeshSpec& mesh,
                   Workload& w) {
  if (!node.IsMap())
    ctx.fail(node, "'sharding' must map tensor names to per-dim mesh axes, e.g. ffn_in: [x, y]");
  const MapReader tensors(ctx, node, "sharding");  // free keys: tensor names the builders check
  for (const MapReader::Entry& entry : tensors.entries()) {
    const std::string& tensor = entry.key;
    const YAML::Node& dims = entry.value;
    if (!dims.IsSequence())
      ctx.fail(dims, fmt::format("'sharding.{}' must be a list of mesh axes or null", tensor));
    std::vector<std::optional<std::string>> mapping;
    std::set<std::string> used;
    for (const auto& d : dims) {
      if (d.IsNull() ||
          (d.IsScalar() && (d.Scalar() == "null" || d.Scalar() == "~" || d.Scalar() == "-"))) {
        mapping.emplace_back(std::nullopt);
        continue;
      }
      // One axis, or a list of axes splitting the dim together (major first, as a JAX
      // PartitionSpec tuple, e.g. [data, fsdp]); kept as "data,fsdp" (ShardingTable).
      std::vector<YAML::Node> names;
      if (d.IsSequence()) {
        if (d.size() == 0)
          ctx.fail(d, fmt::format("an empty axis list in 'sharding.{}'", tensor),
                   "write null for an unsharded dim");
        for (const auto& e : d) names.push_back(e);
      } else {
        names.push_back(d);
      }
      std::string joined;
      for (const YAML::Node& n : names) {
        std::string axis = as_string(ctx, n, "sharding." + tensor);
        if (!used.insert(axis).second)
          ctx.fail(n, fmt::format("mesh axis '{}' shards two dims of '{}'", axis, tensor),
                   "a mesh axis may split at most one dim of a tensor");
        if (mesh.is_unit_dcn_axis(axis)) continue;  // one slice: splits nothing
        const auto logical = mesh.logical_axes();
        bool known = std::any_of(logical.begin(), logical.end(),
                                 [&](const auto& a) { return a.first == axis; });
        if (!known) {
          std::vector<std::string> axis_names;
          for (const auto& a : logical) axis_names.push_back(a.first);
          ctx.fail(n, fmt::format("unknown mesh axis '{}' in 'sharding.{}'", axis, tensor),
                   fmt::format("mesh axes are: {}", fmt::join(axis_names, ", ")));
        }
        joined += (joined.empty() ? "" : ",") + axis;
      }
      if (joined.empty())
        mapping.emplace_back(std::nullopt);
      else
        mapping.emplace_back(joined);
    }
    w.sharding.emplace_back(tensor, std::move(mapping));
    w.sharding_locations.push_back(ctx.at(entry.key_node));
  }
}

// One size the model implies (an array, or a sum over layers), the model
// keys it multiplies, and its element count (nullopt: beyond int64).
struct ImpliedSize {
  std::string what;
  std::vector<const char*> keys;
  std::optional<int64_t> elements;
  int64_t limit = kMaxArrayElements;
};

// Rejects models whose arrays or totals exceed the limits above, at the
// largest of the keys that make the size (usually the absurd one).
void check_model_sizes(const yaml::Document& ctx, const YAML::Node& model_node,
                       const ModelSpec& m) {
  if (m.layers > kMaxLayers)
    ctx.fail(
        model_node["layers"],
        fmt::format("'model.layers' is {}, more than the {} podsim builds", m.layers, kMaxLayers),
        "every layer is unrolled into the program; deeper stacks take hours to compile");
  using std::optional;
  auto mul = [](std::initializer_list<int64_t> f) { return checked_product(f); };
  const int64_t ffn_matrices = ffn_matrix_count(m.ffn);
  const bool moe = m.kind == ModelKind::kMoeTransformer;
  const int64_t experts = moe ? m.experts : 1;
  const int64_t tokens_factor_k = moe ? m.top_k : 1;
  // Capacity factor rounded up: the dispatch tensor bound below is an upper bound.
  const auto capacity_factor = static_cast<int64_t>(std::ceil(std::min(m.capacity_factor, 1e6)));
  const int64_t group = moe && m.group_size > 0 ? m.group_size : 0;
  const optional<int64_t> tokens = mul({m.global_batch, m.seq_len});
  // GShard dispatch [groups, group_size, experts, capacity] ~ tokens x
  // group_size x top_k x capacity_factor (capacity = cf x k x group / E); the
  // group is at most all tokens.
  const optional<int64_t> dispatch =
      moe ? checked_mul(checked_mul(tokens, group > 0 ? optional<int64_t>(group) : tokens),
                        mul({tokens_factor_k, capacity_factor}))
          : optional<int64_t>(0);
  const optional<int64_t> attention_weights = mul({4, m.model_dim, m.heads, m.head_dim});
  const optional<int64_t> ffn_weights = mul({ffn_matrices, m.model_dim, m.ffn_dim, experts});
  const optional<int64_t> layer_activations =
      checked_add(checked_add(checked_mul(tokens, checked_add(checked_add(m.model_dim, m.ffn_dim),
                                                              mul({m.heads, m.head_dim}))),
                              mul({m.global_batch, m.heads, m.seq_len, m.seq_len})),
                  checked_add(checked_mul(tokens, optional<int64_t>(experts)), dispatch));
  const std::vector<ImpliedSize> sizes = {
      {"an activation [global_batch, seq_len, model_dim]",
       {"global_batch", "seq_len", "model_dim"},
       mul({m.global_batch, m.seq_len, m.model_dim})},
      {"an FFN activation [global_batch, seq_len, ffn_dim]",
       {"global_batch", "seq_len", "ffn_dim"},
       mul({m.global_batch, m.seq_len, m.ffn_dim})},
      {"the attention scores [global_batch, heads, seq_len, seq_len]",
       {"global_batch", "heads", "seq_len"},
       mul({m.global_batch, m.heads, m.seq_len, m.seq_len})},
      {"the logits [global_batch, seq_len, vocab]",
       {"global_batch", "seq_len", "vocab"},
       mul({m.global_batch, m.seq_len, m.vocab})},
      {"an FFN weight [model_dim, ffn_dim] (x experts)",
       {"model_dim", "ffn_dim", "experts"},
       mul({m.model_dim, m.ffn_dim, experts})},
      {"an attention weight [model_dim, heads, head_dim]",
       {"model_dim", "heads", "head_dim"},
       mul({m.model_dim, m.heads, m.head_dim})},
      {"the embedding [vocab, model_dim]", {"vocab", "model_dim"}, mul({m.vocab, m.model_dim})},
      {"the MoE dispatch [groups, group_size, experts, capacity]",
       {"global_batch", "seq_len", "group_size", "top_k", "experts"},
       dispatch},
      {"all weights (layers x (attention + FFN) + embedding)",
       {"layers", "model_dim", "ffn_dim", "experts", "heads", "head_dim", "vocab"},
       checked_add(
           checked_mul(optional<int64_t>(m.layers), checked_add(attention_weights, ffn_weights)),
           mul({m.vocab, m.model_dim})),
       kMaxTotalElements},
      {"all activations (layers x per-layer activations + logits)",
       {"layers", "global_batch", "seq_len", "model_dim", "ffn_dim", "heads"},
       checked_add(checked_mul(optional<int64_t>(m.layers), layer_activations),
                   mul({m.global_batch, m.seq_len, m.vocab})),
       kMaxTotalElements},
  };
  for (const ImpliedSize& size : sizes) {
    if (size.elements && *size.elements <= size.limit) continue;
    // Point at the largest key that makes this size: the absurd value.
    const char* culprit = nullptr;
    int64_t largest = -1;
    for (const char* key : size.keys) {
      const YAML::Node n = model_node[key];
      if (!n || !n.IsScalar()) continue;
      int64_t v = 0;
      try {
        v = std::stoll(n.Scalar());
      } catch (...) {
        continue;
      }
      if (v > largest) largest = v, culprit = key;
    }
    const std::string amount =
        size.elements ? fmt::format("{} elements", *size.elements) : "more than 2^63 elements";
    const int limit_log2 = size.limit == kMaxTotalElements ? 52 : 50;
    if (!culprit)
      ctx.fail(model_node, fmt::format("the model is too large: {} holds {}", size.what, amount));
    ctx.fail(
        model_node[culprit],
        fmt::format("the model is too large: {} holds {}, over podsim's limit of 2^{}", size.what,
                    amount, limit_log2),
        fmt::format("podsim counts bytes in 64-bit integers and keeps sizes far below overflow; "
                    "check 'model.{}'",
                    culprit));
  }
}

// The node of `section.key` in the document, else of `section`, else the
// document (a key left at its default has no position of its own).
YAML::Node node_of(const YAML::Node& doc, const std::string& section, const std::string& key) {
  const YAML::Node parent = doc[section];
  if (!parent || !parent.IsMap()) return doc;
  const YAML::Node node = parent[key];
  return node ? node : parent;
}

// The first mesh axis of `sharding.<tensor>`, its size and the YAML node
// naming it; nullopt when the tensor is not sharded on its first dim.
struct FirstAxis {
  std::string axis;
  int64_t size = 1;
  YAML::Node node;
};

std::optional<FirstAxis> first_axis(const YAML::Node& doc, const Workload& w,
                                    const std::string& tensor) {
  for (const auto& [name, mapping] : w.sharding) {
    if (name != tensor || mapping.empty() || !mapping.front()) continue;
    FirstAxis first{*mapping.front(), 1, doc["sharding"][tensor][0]};
    for (const auto& [axis, size] : w.mesh.logical_axes())
      if (axis == first.axis) first.size = size;
    return first;
  }
  return std::nullopt;
}

void record_key_locations(const yaml::Document& ctx, const YAML::Node& doc, Workload& w) {
  auto& where = w.model.key_locations;
  const YAML::Node model = doc["model"];
  for (auto it = model.begin(); it != model.end(); ++it)
    where["model." + it->first.as<std::string>()] = ctx.at(it->second);
  const YAML::Node training = doc["training"];
  if (training && training["microbatches"])
    where["training.microbatches"] = ctx.at(training["microbatches"]);
  if (std::optional<FirstAxis> experts = first_axis(doc, w, "experts"))
    where["sharding.experts"] = ctx.at(experts->node);
}

// GShard groups (workloads/moe_layer.cc, moe_dims): the tokens one forward
// sees split into groups of model.group_size, or else into one group per
// device of the experts mesh axis. Checked here, where the positions of the
// keys are known; moe_dims keeps the same check for ModelSpecs built in code.
void check_moe_groups(const yaml::Document& ctx, const YAML::Node& doc, const Workload& w) {
  const ModelSpec& m = w.model;
  const TrainingSpec& t = w.training;
  // Rows of one built forward, as model_builder.cc's forward_batch: one
  // microbatch when training accumulates gradients, else the global batch.
  const bool split = t.enabled && t.pipeline_stages == 1 && t.microbatches > 1;
  const int64_t rows = split ? m.global_batch / t.microbatches : m.global_batch;
  const int64_t tokens = rows * m.seq_len;  // <= 2^50: check_model_sizes ran first
  const std::string made_of =
      split ? fmt::format("model.global_batch {} / training.microbatches {} x model.seq_len {}",
                          m.global_batch, t.microbatches, m.seq_len)
            : fmt::format("model.global_batch {} x model.seq_len {}", m.global_batch, m.seq_len);
  if (m.group_size > 0) {
    if (tokens % m.group_size != 0)
      ctx.fail(
          node_of(doc, "model", "group_size"),
          fmt::format("'model.group_size' ({}) does not divide the {} tokens of a forward ({})",
                      m.group_size, tokens, made_of),
          fmt::format("pick a group size that divides {}, or change global_batch, seq_len or "
                      "training.microbatches",
                      tokens));
    return;
  }
  const std::optional<FirstAxis> experts = first_axis(doc, w, "experts");
  if (experts && tokens % experts->size != 0)
    ctx.fail(
        experts->node,
        fmt::format("the {} tokens of a forward ({}) do not split into {} groups (one per device "
                    "of mesh axis "
                    "'{}', the experts axis)",
                    tokens, made_of, experts->size, experts->axis),
        fmt::format("set model.group_size to a divisor of {}, or change global_batch, seq_len or "
                    "training.microbatches so the tokens divide by {}",
                    tokens, experts->size));
}

// What the model builders would reject for the structure of the model,
// reported at the key at fault: the encoder-decoder split, MoE placement and
// groups, and the pipeline's stage axis (workloads/pipelined_stack.cc).
void check_model_structure(const yaml::Document& ctx, const YAML::Node& doc, const Workload& w) {
  const ModelSpec& m = w.model;
  const TrainingSpec& t = w.training;
  const bool moe = m.kind == ModelKind::kMoeTransformer;
  if (moe && m.structure == ModelStructure::kEncoderDecoder && m.layers % 2 != 0)
    ctx.fail(node_of(doc, "model", "layers"),
             fmt::format("an encoder_decoder model needs an even layer count, got {}", m.layers),
             "model.layers counts both stacks (layers/2 encoder + layers/2 decoder)");
  // Each of the top_k choices picks an expert not chosen yet (moe_layer.cc).
  if (moe && m.top_k > m.experts)
    ctx.fail(
        node_of(doc, "model", doc["model"]["top_k"] ? "top_k" : "experts"),
        fmt::format(
            "'model.top_k' ({}) is larger than 'model.experts' ({}): a token cannot pick that many "
            "different experts",
            m.top_k, m.experts),
        "GShard routes each token to its top 2 experts (top_k default 2); use top_k <= experts");
  if (moe && m.moe_every > m.layers)
    ctx.fail(
        node_of(doc, "model", doc["model"]["moe_every"] ? "moe_every" : "layers"),
        fmt::format("'model.moe_every' ({}) is larger than 'model.layers' ({}): no layer would be "
                    "an MoE layer",
                    m.moe_every, m.layers),
        "MoE layers are every moe_every-th layer (default 2); lower model.moe_every or add layers");
  if (t.pipeline_stages > 1) {
    const YAML::Node stages = node_of(doc, "training", "pipeline_stages");
    if (m.kind != ModelKind::kDenseTransformer)
      ctx.fail(stages,
               fmt::format("training.pipeline_stages = {} is built for dense_transformer models "
                           "only, model.kind is {}",
                           t.pipeline_stages, name_of(m.kind)),
               "set training.pipeline_stages: 1 (MoE layers are not pipelined)");
    const std::optional<FirstAxis> stage = first_axis(doc, w, "stage");
    if (!stage)
      ctx.fail(stages,
               fmt::format("training.pipeline_stages = {} needs the mesh axis of the stages",
                           t.pipeline_stages),
               "add 'stage: [<mesh axis>]' to the sharding section (an axis of size dividing the "
               "stages)");
    if (t.pipeline_stages % stage->size != 0)
      ctx.fail(stage->node,
               fmt::format("the stage axis '{}' has {} devices, which do not divide "
                           "training.pipeline_stages ({})",
                           stage->axis, stage->size, t.pipeline_stages),
               "use a stage axis whose size divides the stage count (usually equal to it)");
  }
  if (moe) check_moe_groups(ctx, doc, w);
}

// What workloads/hlo_model.cc would reject about an HLO model, at the key:
// a sharding section (the module carries its own) and a missing file
// (relative paths are relative to the workload YAML, as the builder reads it).
void check_hlo_model(const yaml::Document& ctx, const YAML::Node& doc, const Workload& w) {
  const YAML::Node sharding = doc["sharding"];
  if (sharding && sharding.IsMap() && sharding.size() > 0)
    ctx.fail(sharding.begin()->first, "a 'sharding' section does not apply to model.kind hlo",
             "an HLO module carries its own sharding annotations; remove the section");
  std::filesystem::path file(w.model.file);
  if (file.is_relative()) file = std::filesystem::path(w.source_file).parent_path() / file;
  if (!std::filesystem::exists(file))
    ctx.fail(node_of(doc, "model", "file"),
             fmt::format("model.file '{}' not found (looked at {})", w.model.file, file.string()),
             "the path is relative to the workload YAML");
}

Workload read_document(const yaml::Document& ctx, YAML::Node doc) {
  Workload w;
  w.source_file = ctx.file();
  if (!doc.IsMap())
    ctx.fail(doc, "a workload file must be a YAML mapping", "see workloads/ for examples");
  MapReader r(ctx, doc, "workload");
  w.name = as_string(ctx, r.require("name"), "name");
  if (YAML::Node h = r.get("hardware")) w.hardware = as_string(ctx, h, "hardware");
  read_mesh(ctx, r.require("mesh"), w.mesh);
  read_model(ctx, r.require("model"), w.model);
  if (YAML::Node s = r.get("sharding")) read_sharding(ctx, s, w.mesh, w);
  if (YAML::Node t = r.get("training")) read_training(ctx, t, w.training);
  if (YAML::Node c = r.get("compiler")) read_compiler(ctx, c, w.compiler);
  r.finish();
  const ModelSpec& m = w.model;
  if (m.kind != ModelKind::kHlo) {
    check_model_sizes(ctx, doc["model"], m);
    if (m.global_batch % w.training.microbatches != 0)
      ctx.fail(doc["model"]["global_batch"],
               fmt::format("model.global_batch ({}) is not divisible by training.microbatches ({})",
                           m.global_batch, w.training.microbatches));
    if (w.training.pipeline_stages > 1 && m.layers % w.training.pipeline_stages != 0)
      ctx.fail(doc["training"]["pipeline_stages"],
               fmt::format("model.layers ({}) does not divide into training.pipeline_stages ({})",
                           m.layers, w.training.pipeline_stages),
               "every pipeline stage runs the same number of layers: pick a stage count that "
               "divides model.layers");
  }
  record_key_locations(ctx, doc, w);
  if (m.kind != ModelKind::kHlo) check_model_structure(ctx, doc, w);
  if (m.kind == ModelKind::kHlo) check_hlo_model(ctx, doc, w);
  return w;
}

}  // namespace

Workload parse_workload(const std::string& yaml_text, const std::string& file_name,
                        const std::vector<std::string>& overrides) {
  yaml::Document doc = yaml::Document::parse(yaml_text, file_name);
  std::vector<std::pair<std::string, std::string>> hw;
  Workload w = yaml::guarded(
      file_name,
      "keys must be plain words and values the types docs/design.md's workload schema lists", [&] {
        for (const std::string& o : overrides) {
          // hardware.* keys are the hardware's (hw::apply_overrides checks them).
          const auto eq = o.find('=');
          if (o.rfind("hardware.", 0) == 0 && eq != std::string::npos)
            hw.emplace_back(o.substr(9, eq - 9), o.substr(eq + 1));
          else
            doc.set(o);
        }
        return read_document(doc, doc.root());
      });
  w.hardware_overrides = std::move(hw);
  return w;
}

Workload load_workload(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_workload(read_file_text(path, "workload file"), path, overrides);
}

}  // namespace podsim::workloads
