// Loading and validating hardware YAML documents. One table lists every key
// with its parser and printer; documents, `base:` inheritance and `--set`
// overrides all go through it, so a key is valid in all three or in none.
#include "hw_models/config.h"

#include <yaml-cpp/yaml.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cassert>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include "common/did_you_mean.h"
#include "common/error.h"
#include "common/yaml_reader.h"
#include "hw_models/core/core_model.h"
#include "hw_models/ici/collectives.h"

namespace podsim::hw {
namespace {

// The plausible range [min, max] of one numeric key, in the key's unit.
// Lower bounds keep every division by the key finite; upper bounds reject
// values no real or plausible future accelerator has (issue: `clock_hz: 1e300`
// used to give a nonsense MFU). Each bound is at least ~15x beyond the
// largest figure of any shipping chip, so only typos and absurd inputs fail.
// NaN and infinities are rejected for every key.
struct Range {
  double min = 0;
  double max = 0;
  const char* unit = "";
  const char* why = "";  // where the bounds come from, for the hint
};

// Integer bounds, kept as integers so their products can be checked at
// compile time (peak_matmul_flops_per_device multiplies them in int64).
constexpr int64_t kMaxTensorCoresPerDevice = 1024;           // TPUs have 1-2
constexpr int64_t kMaxMxusPerTensorCore = int64_t{1} << 16;  // TPUs have 2-4
constexpr int64_t kMaxArrayDim = int64_t{1} << 16;  // MXU rows/cols, VPU lanes/sublanes: TPUs 8-256
constexpr int64_t kMaxDevicesPerChip = 16;          // TPUs have 1-2
constexpr int64_t kMaxCollectivesInFlight = 64;     // per kind and device; XLA: 1
constexpr int64_t kMaxCollectiveChunks =
    4096;  // torus_pipelined chunks; past a few dozen latency dominates
// A full pod: at most 2^16 chips (TPU v5p: 8960, v4: 4096) and 2^20 devices,
// the workload loader's mesh limit. The pod topology holds one link per
// directed chip pair on a chip, chips x d x (d-1) <= 2^20 x 15 of them.
constexpr int64_t kMaxPodChips = int64_t{1} << 16;
static_assert(kMaxPodChips * kMaxDevicesPerChip <= (int64_t{1} << 20),
              "a pod holds at most 2^20 devices");

// MXU MACs per cycle of one device (mxus x rows x cols) stay far below 2^63,
// so the int64 product in peak_matmul_flops_per_device cannot overflow.
static_assert(kMaxTensorCoresPerDevice * kMaxMxusPerTensorCore <= (int64_t{1} << 26) &&
                  (int64_t{1} << 26) * kMaxArrayDim * kMaxArrayDim <= (int64_t{1} << 58),
              "hardware bounds must keep the MACs per cycle of a device below 2^58");
// tensor cores x lanes x sublanes (vpu_elements_per_second) likewise.
static_assert(kMaxTensorCoresPerDevice * kMaxArrayDim * kMaxArrayDim <= (int64_t{1} << 42));

// Seconds: any fixed cost of a step of a TPU is microseconds; a second is a
// million times that.
constexpr Range kLatencyRange{0, 1, "s", "fixed costs of TPU ops, hops and transfers are ~1e-6 s"};
// Bytes per second: HBM3e stacks give ~1.2e12 B/s, an ICI/NVLink link ~1e11;
// 1e15 (1 PB/s per device or link) is ~300x the fastest memory system shipped.
constexpr Range kBandwidthRange{1e6, 1e15, "B/s",
                                "today's fastest HBM is ~5e12 B/s per device, links ~1e11 B/s"};
// Cycles per vector register: 1-4 on TPUs, 0.01 would be a hundred per cycle.
constexpr Range kVpuCyclesRange{0.01, 1e4, "cycles", "TPU VPUs take 1-4 cycles per vreg"};
// Cycles of an MXU pipeline: ~rows + cols (256 on 128x128 arrays).
constexpr Range kMxuCyclesRange{0, 1e6, "cycles", "a 128x128 MXU fills and drains in ~256 cycles"};

std::string bound_text(double value) {
  // Powers of two (sizes, counts) read best as 2^k, other numbers as %g.
  int exponent = 0;
  if (value >= 1024 && std::frexp(value, &exponent) == 0.5)
    return fmt::format("2^{}", exponent - 1);
  return fmt::format("{:g}", value);
}

std::string range_text(const Range& range) {
  return fmt::format("[{}, {}]{}{}", bound_text(range.min), bound_text(range.max),
                     *range.unit ? " " : "", range.unit);
}

// `kind`: "a finite number" or "an integer", for the hint.
[[noreturn]] void out_of_range(const SourceLocation& loc, const std::string& key,
                               const std::string& got, const Range& range, const char* kind) {
  throw UserError(
      loc,
      fmt::format("bad value for hardware key '{}': {} is outside the plausible range {}", key, got,
                  range_text(range)),
      fmt::format("{} must be {} in {} ({})", key, kind, range_text(range), range.why));
}

struct Field {
  std::string key;
  std::function<void(HardwareConfig&, const YAML::Node&, const SourceLocation&)> set;
  std::function<std::string(const HardwareConfig&)> get;
};

[[noreturn]] void bad_value(const SourceLocation& loc, const std::string& key,
                            const std::string& expected, const YAML::Node& node) {
  std::string got =
      node.IsScalar() ? fmt::format("'{}'", node.Scalar()) : std::string("a non-scalar");
  throw UserError(
      loc, fmt::format("bad value for hardware key '{}': expected {}, got {}", key, expected, got));
}

double parse_double(const YAML::Node& node, const SourceLocation& loc, const std::string& key,
                    const Range& range) {
  double value = 0;
  // YAML's number syntax (.inf and .nan included: rejected below with the range).
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value))
    bad_value(loc, key, fmt::format("a number in {}", range_text(range)), node);
  // The negated comparisons also catch NaN; isfinite catches +-inf.
  if (!std::isfinite(value) || !(value >= range.min) || !(value <= range.max))
    out_of_range(loc, key, fmt::format("'{}'", node.Scalar()), range, "a finite number");
  return value;
}

// `range` holds integers (all int bounds are below 2^53, exact in a double).
int64_t parse_int(const YAML::Node& node, const SourceLocation& loc, const std::string& key,
                  const Range& range) {
  int64_t value = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value))
    bad_value(loc, key, fmt::format("an integer in {}", range_text(range)), node);
  if (static_cast<double>(value) < range.min || static_cast<double>(value) > range.max)
    out_of_range(loc, key, fmt::format("'{}'", node.Scalar()), range, "an integer");
  return value;
}

// A count of units from 1 to `max`.
constexpr Range count_range(int64_t max, const char* why) {
  return Range{1, static_cast<double>(max), "", why};
}

// The names of the registries (core/core_model.h, ici/collectives.h) a file may choose.
yaml::NameTable<CoreModelKind> core_model_names() {
  std::vector<std::pair<CoreModelKind, std::string_view>> names;
  for (const CoreModelEntry& e : core_models()) names.emplace_back(e.kind, e.name);
  return yaml::NameTable<CoreModelKind>(std::move(names));
}

yaml::NameTable<CollectiveAlgorithm> collective_algorithm_names() {
  std::vector<std::pair<CollectiveAlgorithm, std::string_view>> names;
  for (const CollectiveAlgorithmEntry& e : collective_algorithms())
    if (e.preset_choice) names.emplace_back(e.algorithm, e.name);
  return yaml::NameTable<CollectiveAlgorithm>(std::move(names));
}

std::string parse_choice(const YAML::Node& node, const SourceLocation& loc, const std::string& key,
                         const std::vector<std::string>& choices) {
  if (!node.IsScalar()) bad_value(loc, key, "a name", node);
  const std::string& text = node.Scalar();
  if (!choices.empty() && std::find(choices.begin(), choices.end(), text) == choices.end())
    throw UserError(loc,
                    fmt::format("bad value for hardware key '{}': unknown name '{}'", key, text),
                    fmt::format("valid values: {}", fmt::join(choices, ", ")));
  return text;
}

// Accessor: a lambda returning a reference into the config.
template <class Access>
Field number_field(std::string key, Access access, Range range) {
  return Field{key,
               [=](HardwareConfig& c, const YAML::Node& n, const SourceLocation& loc) {
                 access(c) = parse_double(n, loc, key, range);
               },
               [=](const HardwareConfig& c) {
                 return fmt::format("{:.12g}", access(const_cast<HardwareConfig&>(c)));
               }};
}

template <class Access>
Field int_field(std::string key, Access access, Range range) {
  return Field{key,
               [=](HardwareConfig& c, const YAML::Node& n, const SourceLocation& loc) {
                 access(c) = parse_int(n, loc, key, range);
               },
               [=](const HardwareConfig& c) {
                 return fmt::format("{}", access(const_cast<HardwareConfig&>(c)));
               }};
}

template <class E, class Access>
Field choice_field(std::string key, Access access, yaml::NameTable<E> table) {
  return Field{key,
               [=](HardwareConfig& c, const YAML::Node& n, const SourceLocation& loc) {
                 access(c) = *table.find(parse_choice(n, loc, key, table.names()));
               },
               [=](const HardwareConfig& c) {
                 return std::string(table.name(access(const_cast<HardwareConfig&>(c))));
               }};
}

// Chips per torus dimension; each at most kMaxPodChips and so is their product.
std::vector<int64_t> parse_dims(const YAML::Node& node, const SourceLocation& loc,
                                const std::string& key) {
  constexpr Range kDimRange =
      count_range(kMaxPodChips, "the largest TPU pods have under 10^4 chips");
  if (!node.IsSequence() || node.size() < 1 || node.size() > 3)
    bad_value(loc, key, fmt::format("a list of 1 to 3 integers in {}", range_text(kDimRange)),
              node);
  std::vector<int64_t> dims;
  int64_t chips = 1;
  for (const auto& element : node) {
    dims.push_back(parse_int(element, loc, key, kDimRange));
    chips *= dims.back();  // <= 2^16 x 2^16 x 2^16 before the check below: no overflow
    if (chips > kMaxPodChips)
      throw UserError(
          loc,
          fmt::format(
              "bad value for hardware key '{}': the pod dims multiply to {} chips, more than "
              "the plausible {}",
              key, chips, bound_text(static_cast<double>(kMaxPodChips))),
          "the largest TPU pods have under 10^4 chips (v5p: 8960); check the dims");
  }
  return dims;
}

std::vector<bool> parse_flags(const YAML::Node& node, const SourceLocation& loc,
                              const std::string& key) {
  if (!node.IsSequence() || node.size() < 1 || node.size() > 3)
    bad_value(loc, key, "a list of 1 to 3 booleans", node);
  std::vector<bool> flags;
  for (const auto& element : node) {
    bool flag = false;
    if (!element.IsScalar() || !YAML::convert<bool>::decode(element, flag))
      bad_value(loc, key, "true or false", element);
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
    t.push_back(choice_field(
        "status", [](HardwareConfig& c) -> CalibrationStatus& { return c.status; },
        yaml::NameTable<CalibrationStatus>({{CalibrationStatus::kCalibrated, "calibrated"},
                                            {CalibrationStatus::kUncalibrated, "uncalibrated"}})));
    t.push_back(choice_field(
        "core.model", [](HardwareConfig& c) -> CoreModelKind& { return c.core.model; },
        core_model_names()));
    // 1 MHz .. 100 GHz: TPUs run at ~1 GHz and no digital chip above ~6 GHz.
    t.push_back(number_field(
        "core.clock_hz", [](HardwareConfig& c) -> double& { return c.core.clock_hz; },
        Range{1e6, 1e11, "Hz", "TPUs clock at ~1 GHz; 100 GHz is over 15x any digital chip"}));
    t.push_back(int_field(
        "core.tensor_cores_per_device",
        [](HardwareConfig& c) -> int64_t& { return c.core.tensor_cores_per_device; },
        count_range(kMaxTensorCoresPerDevice, "TPU devices have 1 or 2 TensorCores")));
    t.push_back(int_field(
        "core.mxus_per_tensor_core",
        [](HardwareConfig& c) -> int64_t& { return c.core.mxus_per_tensor_core; },
        count_range(kMaxMxusPerTensorCore, "TPU TensorCores have 1 to 4 MXUs")));
    t.push_back(int_field(
        "core.mxu_rows", [](HardwareConfig& c) -> int64_t& { return c.core.mxu_rows; },
        count_range(kMaxArrayDim, "TPU MXUs are 128x128 or 256x256")));
    t.push_back(int_field(
        "core.mxu_cols", [](HardwareConfig& c) -> int64_t& { return c.core.mxu_cols; },
        count_range(kMaxArrayDim, "TPU MXUs are 128x128 or 256x256")));
    t.push_back(number_field(
        "core.mxu_weight_load_cycles",
        [](HardwareConfig& c) -> double& { return c.core.mxu_weight_load_cycles; },
        kMxuCyclesRange));
    t.push_back(number_field(
        "core.mxu_fill_drain_cycles",
        [](HardwareConfig& c) -> double& { return c.core.mxu_fill_drain_cycles; },
        kMxuCyclesRange));
    // XLA's f32 precisions cost 1 (DEFAULT), 3 (HIGH) or 6 (HIGHEST) bf16 passes.
    t.push_back(number_field(
        "core.f32_matmul_passes",
        [](HardwareConfig& c) -> double& { return c.core.f32_matmul_passes; },
        Range{0.01, 64, "passes", "XLA's f32 matmul precisions take 1, 3 or 6 bf16 passes"}));
    t.push_back(number_field(
        "core.mxu_sustained_fraction",
        [](HardwareConfig& c) -> double& { return c.core.mxu_sustained_fraction; },
        Range{0.01, 1, "",
              "the fraction of a matmul loop's cycles that stream a row (1 = ideal)"}));
    t.push_back(int_field(
        "core.vpu_lanes", [](HardwareConfig& c) -> int64_t& { return c.core.vpu_lanes; },
        count_range(kMaxArrayDim, "TPU vector registers are 8 x 128")));
    t.push_back(int_field(
        "core.vpu_sublanes", [](HardwareConfig& c) -> int64_t& { return c.core.vpu_sublanes; },
        count_range(kMaxArrayDim, "TPU vector registers are 8 x 128")));
    t.push_back(number_field(
        "core.vpu_cycles.simple",
        [](HardwareConfig& c) -> double& { return c.core.vpu_cycles.simple; }, kVpuCyclesRange));
    t.push_back(number_field(
        "core.vpu_cycles.transcendental",
        [](HardwareConfig& c) -> double& { return c.core.vpu_cycles.transcendental; },
        kVpuCyclesRange));
    t.push_back(number_field(
        "core.vpu_cycles.reduce",
        [](HardwareConfig& c) -> double& { return c.core.vpu_cycles.reduce; }, kVpuCyclesRange));
    t.push_back(number_field(
        "core.vpu_cycles.transpose",
        [](HardwareConfig& c) -> double& { return c.core.vpu_cycles.transpose; }, kVpuCyclesRange));
    t.push_back(number_field(
        "core.vpu_cycles.convert",
        [](HardwareConfig& c) -> double& { return c.core.vpu_cycles.convert; }, kVpuCyclesRange));
    t.push_back(number_field(
        "core.op_overhead_s", [](HardwareConfig& c) -> double& { return c.core.op_overhead_s; },
        kLatencyRange));
    // 1 MiB .. 1 PiB per device: TPUs carry 16-192 GiB, so 1 PiB is >5000x.
    t.push_back(number_field(
        "hbm.capacity_bytes", [](HardwareConfig& c) -> double& { return c.hbm.capacity_bytes; },
        Range{1024.0 * 1024, 1024.0 * 1024 * 1024 * 1024 * 1024, "bytes",
              "TPUs carry 16 to 192 GiB of HBM per device"}));
    t.push_back(number_field(
        "hbm.bandwidth", [](HardwareConfig& c) -> double& { return c.hbm.bandwidth; },
        kBandwidthRange));
    t.push_back(number_field(
        "hbm.latency_s", [](HardwareConfig& c) -> double& { return c.hbm.latency_s; },
        kLatencyRange));
    t.push_back(int_field(
        "chip.devices_per_chip",
        [](HardwareConfig& c) -> int64_t& { return c.chip.devices_per_chip; },
        count_range(kMaxDevicesPerChip, "TPU chips are 1 or 2 XLA devices")));
    t.push_back(number_field(
        "chip.on_chip_bandwidth",
        [](HardwareConfig& c) -> double& { return c.chip.on_chip_bandwidth; }, kBandwidthRange));
    t.push_back(number_field(
        "chip.on_chip_latency_s",
        [](HardwareConfig& c) -> double& { return c.chip.on_chip_latency_s; }, kLatencyRange));
    t.push_back(number_field(
        "chip.host_bandwidth", [](HardwareConfig& c) -> double& { return c.chip.host_bandwidth; },
        kBandwidthRange));
    t.push_back(Field{"ici.pod_dims",
                      [](HardwareConfig& c, const YAML::Node& n, const SourceLocation& loc) {
                        c.ici.pod_dims = parse_dims(n, loc, "ici.pod_dims");
                      },
                      [](const HardwareConfig& c) {
                        return fmt::format("[{}]", fmt::join(c.ici.pod_dims, ", "));
                      }});
    t.push_back(Field{"ici.pod_wraparound",
                      [](HardwareConfig& c, const YAML::Node& n, const SourceLocation& loc) {
                        c.ici.pod_wraparound = parse_flags(n, loc, "ici.pod_wraparound");
                      },
                      [](const HardwareConfig& c) {
                        std::vector<std::string> words;
                        for (bool w : c.ici.pod_wraparound) words.push_back(w ? "true" : "false");
                        return fmt::format("[{}]", fmt::join(words, ", "));
                      }});
    t.push_back(int_field(
        "ici.torus_block", [](HardwareConfig& c) -> int64_t& { return c.ici.torus_block; },
        Range{0, static_cast<double>(kMaxPodChips), "chips",
              "0 = only the full pod wraps; TPU v4: 4 (its 4x4x4 cubes)"}));
    t.push_back(number_field(
        "ici.link_bandwidth", [](HardwareConfig& c) -> double& { return c.ici.link_bandwidth; },
        kBandwidthRange));
    // A fraction of the raw rate: above 1 is impossible, below 1% no link.
    t.push_back(number_field(
        "ici.link_efficiency", [](HardwareConfig& c) -> double& { return c.ici.link_efficiency; },
        Range{0.01, 1, "",
              "the achieved fraction of the raw link rate (TPU v3 and v4 presets: 1)"}));
    t.push_back(number_field(
        "ici.hop_latency_s", [](HardwareConfig& c) -> double& { return c.ici.hop_latency_s; },
        kLatencyRange));
    t.push_back(number_field(
        "ici.message_overhead_s",
        [](HardwareConfig& c) -> double& { return c.ici.message_overhead_s; }, kLatencyRange));
    t.push_back(choice_field(
        "ici.collective_algorithm",
        [](HardwareConfig& c) -> CollectiveAlgorithm& { return c.ici.collective_algorithm; },
        collective_algorithm_names()));
    t.push_back(int_field(
        "ici.collective_chunks",
        [](HardwareConfig& c) -> int64_t& { return c.ici.collective_chunks; },
        count_range(kMaxCollectiveChunks, "1 = no pipelining; a few to a few dozen chunks")));
    t.push_back(number_field(
        "ici.ring_step_overhead_s",
        [](HardwareConfig& c) -> double& { return c.ici.ring_step_overhead_s; }, kLatencyRange));
    t.push_back(int_field(
        "ici.collectives_in_flight_per_kind",
        [](HardwareConfig& c) -> int64_t& { return c.ici.collectives_in_flight_per_kind; },
        count_range(kMaxCollectivesInFlight, "XLA's latency-hiding scheduler allows 1 per kind")));
    t.push_back(int_field(
        "ici.collectives_in_flight",
        [](HardwareConfig& c) -> int64_t& { return c.ici.collectives_in_flight; },
        count_range(kMaxCollectivesInFlight, "1 runs a device's collectives one at a time")));
    // 0 = no figure (TPU v3); 1e15 as every bandwidth. A multi-slice run needs > 0 (hw::System).
    t.push_back(number_field(
        "dcn.bandwidth_per_chip",
        [](HardwareConfig& c) -> double& { return c.dcn.bandwidth_per_chip; },
        Range{0, 1e15, "B/s", "data-centre networks give a TPU chip ~3e9 to 1.25e10 B/s"}));
    t.push_back(number_field(
        "dcn.latency_s", [](HardwareConfig& c) -> double& { return c.dcn.latency_s; },
        kLatencyRange));
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
  if (prefix.empty()) {
    add("sources");
    add("chips");
  }
  return out;
}

bool is_section(const std::string& dotted) {
  const std::string prefix = dotted + ".";
  for (const Field& f : fields())
    if (f.key.compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

// The hint for an unknown (dotted) key: the nearest valid key when one is
// close, else the valid keys (of `section`, when given).
std::string unknown_key_hint(const std::string& dotted, const std::string& section = "") {
  const std::string guess = closest(dotted, hardware_keys());
  if (!guess.empty()) return fmt::format("did you mean '{}'?", guess);
  if (!section.empty())
    return fmt::format("valid keys under '{}': {}", section,
                       fmt::join(keys_below(section + "."), ", "));
  return fmt::format("valid keys: {}", fmt::join(hardware_keys(), ", "));
}

// The valid key an override most likely meant: one that the key ends with
// once '.' and '_' are read alike ("chip.hbm_bandwidth" -> "hbm.bandwidth"),
// else the closest by spelling.
std::string override_guess(const std::string& key) {
  const auto flat = [](std::string k) {
    std::replace(k.begin(), k.end(), '.', '_');
    return k;
  };
  const std::string flat_key = flat(key);
  std::string best;
  for (const std::string& valid : hardware_keys()) {
    const std::string flat_valid = flat(valid);
    if (flat_key.ends_with(flat_valid) &&
        (flat_key.size() == flat_valid.size() ||
         flat_key[flat_key.size() - flat_valid.size() - 1] == '_'))
      if (flat_valid.size() > best.size()) best = valid;
  }
  return best.empty() ? closest(key, hardware_keys()) : best;
}

[[noreturn]] void unknown_key(const SourceLocation& loc, const std::string& prefix,
                              const std::string& name) {
  const std::string section = prefix.empty() ? "" : prefix.substr(0, prefix.size() - 1);
  if (prefix.empty() && !closest(name, {"chips"}).empty())
    throw UserError(loc, fmt::format("unknown hardware key '{}'", name),
                    "did you mean 'chips' (per-chip overrides: chips: {17: {core: {clock_hz: "
                    "1.05e9}}})?");
  const std::string guess = closest(name, keys_below(prefix));
  throw UserError(loc, fmt::format("unknown hardware key '{}{}'", prefix, name),
                  guess.empty() || prefix.empty()
                      ? unknown_key_hint(prefix + name, section)
                      : fmt::format("did you mean '{}{}'?", prefix, guess));
}

// ---- per-chip overrides (ChipOverride) ----

// Chip ids stay below the largest machine a run can have (2^20 devices, so at most 2^20 chips);
// hw::System checks them against the slices the workload actually uses.
constexpr int64_t kMaxChipId = (int64_t{1} << 20) - 1;

struct PerChipKey {
  ChipKey id;
  const char* key;
  double& (*access)(HardwareConfig&);
};

// The keys whose per-device effect the simulator honours: a device's compute kernels take longer
// or shorter (sim/simulator.cc costs them with the chip's own config).
const std::vector<PerChipKey>& per_chip_table() {
  static const std::vector<PerChipKey> table = {
      {ChipKey::kCoreClockHz, "core.clock_hz",
       [](HardwareConfig& c) -> double& { return c.core.clock_hz; }},
      {ChipKey::kHbmBandwidth, "hbm.bandwidth",
       [](HardwareConfig& c) -> double& { return c.hbm.bandwidth; }},
  };
  return table;
}

const PerChipKey* find_per_chip(const std::string& key) {
  for (const PerChipKey& k : per_chip_table())
    if (key == k.key) return &k;
  return nullptr;
}

const PerChipKey& per_chip_entry(ChipKey key) {
  for (const PerChipKey& k : per_chip_table())
    if (k.id == key) return k;
  throw std::logic_error("per_chip_entry: a ChipKey without a table row");
}

constexpr const char* kChipIdHint =
    "a chip is an integer id from 0 or a range first-last (chips.17.core.clock_hz, "
    "chips.0-3.hbm.bandwidth), numbered row-major over the slice's chip dims (several slices: "
    "slice-major)";

// "17" or "0-3": the first and last chip (inclusive).
std::pair<int64_t, int64_t> parse_chip_ids(const std::string& text, const SourceLocation& loc,
                                           const std::string& key) {
  auto number = [&](const std::string& part) {
    const bool digits =
        !part.empty() && part.size() <= 9 &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits)
      throw UserError(loc, fmt::format("bad chip id '{}' in hardware key '{}'", text, key),
                      kChipIdHint);
    const int64_t id = std::stoll(part);
    if (id > kMaxChipId)
      throw UserError(
          loc, fmt::format("chip id {} in hardware key '{}' is beyond any machine", id, key),
          fmt::format("a run has at most 2^20 chips (ids 0 to {}); {}", kMaxChipId, kChipIdHint));
    return id;
  };
  const size_t dash = text.find('-');
  const int64_t first = number(text.substr(0, dash));
  const int64_t last = dash == std::string::npos ? first : number(text.substr(dash + 1));
  if (last < first)
    throw UserError(loc,
                    fmt::format("chip range '{}' in hardware key '{}' runs backwards", text, key),
                    fmt::format("write the lower id first: {}-{}", last, first));
  return {first, last};
}

// chips.<ids>.<key> = value: the value parsed and range-checked as the machine-wide key is.
ChipOverride parse_chip_override(const std::string& ids, const std::string& key,
                                 const YAML::Node& value, const SourceLocation& loc) {
  const std::string dotted = fmt::format("chips.{}.{}", ids, key);
  const auto [first, last] = parse_chip_ids(ids, loc, dotted);
  const PerChipKey* per_chip = find_per_chip(key);
  if (!per_chip) {
    const std::string per_chip_list = fmt::format("{}", fmt::join(per_chip_keys(), ", "));
    if (find_field(key))
      throw UserError(
          loc, fmt::format("hardware key '{}' cannot differ per chip ('{}')", key, dotted),
          fmt::format("per-chip keys: {} (every other key is the machine's)", per_chip_list));
    const std::string guess = closest(key, per_chip_keys());
    throw UserError(loc, fmt::format("unknown per-chip hardware key '{}' in '{}'", key, dotted),
                    guess.empty() ? fmt::format("per-chip keys: {}", per_chip_list)
                                  : fmt::format("did you mean 'chips.{}.{}'?", ids, guess));
  }
  HardwareConfig scratch;
  try {
    find_field(key)->set(scratch, value, loc);
  } catch (const UserError& e) {  // name the per-chip key the user wrote
    throw UserError(e.location(), fmt::format("{} (per-chip key '{}')", e.message(), dotted),
                    e.hint());
  }
  return ChipOverride{first, last, per_chip->id, per_chip->access(scratch), loc};
}

void check_consistency(const HardwareConfig& c, const SourceLocation& loc) {
  if (c.ici.pod_dims.size() != c.ici.pod_wraparound.size())
    throw UserError(loc,
                    fmt::format("ici.pod_wraparound has {} entries but ici.pod_dims has {}",
                                c.ici.pod_wraparound.size(), c.ici.pod_dims.size()),
                    "give one wraparound flag per pod dimension");
}

struct DocumentReader {
  const yaml::Document& doc;
  HardwareConfig& config;
  std::set<std::string> assigned;
  std::map<std::string, SourceLocation> positions;  // where each assigned key's value is
  std::set<std::string> sourced;                    // keys this document gives a source for

  // Keys in document order; a key of no field or section is an error at
  // its position with the nearest valid key.
  void read_map(const YAML::Node& map, const std::string& prefix) {
    const yaml::MapReader reader(
        doc, map, prefix.empty() ? "" : prefix.substr(0, prefix.size() - 1), "hardware key");
    for (const yaml::MapReader::Entry& e : reader.entries()) {
      const std::string key = prefix + e.key;
      const SourceLocation loc = doc.at(e.value);
      if (prefix.empty() && e.key == "base") continue;  // handled by the caller
      if (prefix.empty() && e.key == "sources") {
        read_sources(e.value);
        continue;
      }
      if (prefix.empty() && e.key == "chips") {
        read_chips(e.value);
        continue;
      }
      if (const Field* field = find_field(key)) {
        field->set(config, e.value, loc);
        assigned.insert(key);
        positions[key] = loc;
      } else if (is_section(key)) {
        if (!e.value.IsMap()) bad_value(loc, key, "a map of keys", e.value);
        read_map(e.value, key + ".");
      } else {
        unknown_key(doc.at(e.key_node), prefix, e.key);
      }
    }
  }

  // chips: {<id or first-last>: {<section>: {<key>: value}}} (dotted keys allowed too).
  void read_chips(const YAML::Node& map) {
    if (!map.IsMap())
      bad_value(doc.at(map), "chips",
                "a map from chip ids to keys (chips: {17: {core: {clock_hz: 1.05e9}}})", map);
    const yaml::MapReader reader(doc, map, "chips", "hardware key");
    for (const yaml::MapReader::Entry& e : reader.entries()) {
      if (!e.value.IsMap())
        bad_value(doc.at(e.value), "chips." + e.key,
                  "a map of per-chip keys (core: {clock_hz: 1.05e9})", e.value);
      read_chip_keys(e.key, e.value, "");
    }
  }

  void read_chip_keys(const std::string& ids, const YAML::Node& map, const std::string& prefix) {
    const yaml::MapReader reader(doc, map, "chips." + ids + (prefix.empty() ? "" : "." + prefix),
                                 "hardware key");
    for (const yaml::MapReader::Entry& e : reader.entries()) {
      const std::string key = prefix.empty() ? e.key : prefix + "." + e.key;
      if (e.value.IsMap())
        read_chip_keys(ids, e.value, key);
      else
        config.chip_overrides.push_back(parse_chip_override(ids, key, e.value, doc.at(e.value)));
    }
  }

  void read_sources(const YAML::Node& map) {
    if (!map.IsMap())
      bad_value(doc.at(map), "sources", "a map from hardware keys to source notes", map);
    const yaml::MapReader reader(doc, map, "sources");
    for (const yaml::MapReader::Entry& e : reader.entries()) {
      if (!find_field(e.key))
        throw UserError(doc.at(e.key_node),
                        fmt::format("'sources' names unknown hardware key '{}'", e.key),
                        unknown_key_hint(e.key));
      if (!e.value.IsScalar())
        bad_value(doc.at(e.value), "sources." + e.key, "a text note", e.value);
      config.sources[e.key] = e.value.Scalar();
      sourced.insert(e.key);
    }
  }
};

std::filesystem::path resolve_preset(const std::string& name_or_path) {
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               name_or_path.ends_with(".yaml") || name_or_path.ends_with(".yml");
  if (looks_like_path) return name_or_path;
  return std::filesystem::path(PODSIM_PRESET_DIR) / (name_or_path + ".yaml");
}

HardwareConfig load_document(const yaml::Document& doc, int depth);

HardwareConfig load_file(const std::string& name_or_path, int depth) {
  const std::filesystem::path path = resolve_preset(name_or_path);
  if (!std::filesystem::exists(path)) {
    throw UserError(
        SourceLocation{name_or_path, 0, 0},
        fmt::format("no hardware preset or file named '{}'", name_or_path),
        fmt::format("{}presets: {} (podsim hardware list); or give a path to a .yaml file",
                    closest(name_or_path, preset_names()).empty()
                        ? ""
                        : fmt::format("did you mean '{}'? ", closest(name_or_path, preset_names())),
                    fmt::join(preset_names(), ", ")));
  }
  return load_document(yaml::Document::load(path.string(), "hardware file"), depth);
}

HardwareConfig load_document_body(const yaml::Document& doc, int depth);

// yaml-cpp conversion errors become positioned UserErrors.
HardwareConfig load_document(const yaml::Document& doc, int depth) {
  return yaml::guarded(doc.file(), "hardware keys are plain words with number, word or list values",
                       [&] { return load_document_body(doc, depth); });
}

HardwareConfig load_document_body(const yaml::Document& document, int depth) {
  const YAML::Node& doc = document.root();
  const std::string& origin = document.file();
  if (!doc.IsMap())
    throw UserError(document.at(doc), "a hardware document must be a map of keys",
                    fmt::format("valid keys: {}", fmt::join(keys_below(""), ", ")));
  HardwareConfig config;
  const YAML::Node base = doc["base"];
  const bool has_base = base.IsDefined();
  if (has_base) {
    if (depth > 8) throw UserError(document.at(base), "'base:' chain is too deep (a cycle?)");
    if (!base.IsScalar()) bad_value(document.at(base), "base", "a preset name or path", base);
    config = load_file(base.Scalar(), depth + 1);
  }
  DocumentReader reader{document, config, {}, {}, {}};
  reader.read_map(doc, "");
  if (!has_base) {
    std::vector<std::string> missing;
    for (const Field& f : fields())
      if (!reader.assigned.count(f.key)) missing.push_back(f.key);
    if (!missing.empty())
      throw UserError(
          SourceLocation{origin, 0, 0},
          fmt::format("hardware document lacks key(s): {}", fmt::join(missing, ", ")),
          "every key must be given (no silent defaults), or start the file with 'base: tpuv3'");
  }
  for (const std::string& key : reader.assigned)
    if (has_base && !reader.sourced.count(key)) config.sources[key] = "set in " + origin;
  config.origin = origin;
  // A list length mismatch: at the wraparound flags, else the dims, when
  // this document gives them.
  SourceLocation consistency_loc{origin, 0, 0};
  for (const char* key : {"ici.pod_dims", "ici.pod_wraparound"})
    if (reader.positions.count(key)) consistency_loc = reader.positions.at(key);
  check_consistency(config, consistency_loc);
  return config;
}

// An override's value text as YAML ("[16, 16]" is a list); malformed: at the flag.
YAML::Node override_value(const std::string& key, const std::string& text,
                          const std::string& origin) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw UserError(SourceLocation{origin, 0, 0},
                    fmt::format("bad value for hardware key '{}': {}", key, e.msg));
  }
}

}  // namespace

HardwareConfig load_hardware(const std::string& preset_name_or_path, const Overrides& overrides) {
  HardwareConfig config = load_file(preset_name_or_path, 0);
  apply_overrides(config, overrides);
  return config;
}

HardwareConfig load_hardware_from_string(const std::string& yaml_text, const std::string& origin,
                                         const Overrides& overrides) {
  HardwareConfig config = load_document(yaml::Document::parse(yaml_text, origin), 0);
  apply_overrides(config, overrides);
  return config;
}

void apply_overrides(HardwareConfig& config, const Overrides& overrides) {
  for (const auto& [key, text] : overrides) {
    // Overrides reach podsim as `--set hardware.<key>=<value>`: name that flag.
    const std::string origin = fmt::format("--set hardware.{}={}", key, text);
    if (key == "chips" || key.starts_with("chips.")) {
      const std::string rest = key.substr(std::min<size_t>(key.size(), 6));
      const size_t dot = rest.find('.');
      if (dot == std::string::npos)
        throw UserError(SourceLocation{origin, 0, 0},
                        fmt::format("hardware key '{}' names chips but no key", key),
                        fmt::format("give a per-chip key: --set hardware.{}.core.clock_hz=...; {}",
                                    key, kChipIdHint));
      config.chip_overrides.push_back(parse_chip_override(rest.substr(0, dot), rest.substr(dot + 1),
                                                          override_value(key, text, origin),
                                                          SourceLocation{origin, 0, 0}));
      continue;
    }
    const Field* field = find_field(key);
    if (!field) {
      const std::string guess = override_guess(key);
      throw UserError(
          SourceLocation{origin, 0, 0}, fmt::format("unknown hardware key '{}' in override", key),
          guess.empty() ? unknown_key_hint(key)
                        : fmt::format("did you mean --set hardware.{}={}?", guess, text));
    }
    field->set(config, override_value(key, text, origin), SourceLocation{origin, 0, 0});
    config.sources[key] = "override (--set)";
  }
  if (overrides.empty()) return;
  std::vector<std::string> flags;
  for (const auto& [key, text] : overrides)
    flags.push_back(fmt::format("--set hardware.{}={}", key, text));
  check_consistency(config, SourceLocation{fmt::format("{}", fmt::join(flags, " ")), 0, 0});
}

std::vector<std::string> hardware_keys() {
  std::vector<std::string> keys;
  for (const Field& f : fields()) keys.push_back(f.key);
  return keys;
}

std::vector<std::string> per_chip_keys() {
  std::vector<std::string> keys;
  for (const PerChipKey& k : per_chip_table()) keys.emplace_back(k.key);
  return keys;
}

std::string chip_key_name(ChipKey key) { return per_chip_entry(key).key; }

void apply_chip_value(HardwareConfig& config, ChipKey key, double value) {
  per_chip_entry(key).access(config) = value;
}

double chip_value(const HardwareConfig& config, ChipKey key) {
  return per_chip_entry(key).access(const_cast<HardwareConfig&>(config));
}

std::string hardware_value_text(const HardwareConfig& config, const std::string& key) {
  const Field* field = find_field(key);
  assert(field && "hardware_value_text: unknown key");
  return field->get(config);
}

std::string calibration_status_text(CalibrationStatus status) {
  return status == CalibrationStatus::kCalibrated ? "calibrated"
                                                  : "uncalibrated (published specs only)";
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(PODSIM_PRESET_DIR))
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

int64_t mxus_per_device(const CoreConfig& core) {
  return core.tensor_cores_per_device * core.mxus_per_tensor_core;
}

double peak_matmul_flops_per_device(const CoreConfig& core) {
  // One MAC per PE per cycle; a MAC is 2 FLOP (multiply + add).
  return 2.0 * static_cast<double>(mxus_per_device(core) * core.mxu_rows * core.mxu_cols) *
         core.clock_hz;
}

double vpu_elements_per_second(const CoreConfig& core) {
  return static_cast<double>(core.tensor_cores_per_device * core.vpu_lanes * core.vpu_sublanes) *
         core.clock_hz;
}

}  // namespace podsim::hw
