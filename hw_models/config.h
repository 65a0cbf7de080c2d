// Typed hardware description of one TPU pod, loaded from a YAML preset
// (hw_models/presets/<name>.yaml) or a user file, plus dotted-key overrides
// ("ici.link_bandwidth" = "2e11"). Every key is validated: an unknown key, a
// missing key or a bad value is a UserError with file:line:column and a hint
// listing the valid keys. Nothing is silently defaulted. Every number must lie
// in a plausible range (config.cc: e.g. clock_hz <= 100 GHz, HBM <= 1 PiB per
// device, bandwidths <= 1e15 B/s, pods <= 2^16 chips); NaN and infinities are
// rejected; the hint of an out-of-range value names the range.
//
// Units: seconds, bytes, bytes/second, hertz. A "device" is what XLA sees as
// one device: one TensorCore on TPUv3 (2 per chip), one chip (megacore, two
// TensorCores) on TPUv4.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace podsim::hw {

// Cycles the VPU spends per full vector register (lanes x sublanes elements)
// for each cost class of vector work.
struct VpuCycles {
  double simple = 0;          // add, multiply, select, compare, max, ...
  double transcendental = 0;  // exp, log, tanh, rsqrt, ...
  double reduce = 0;          // one accumulation step of a reduction
  double transpose = 0;       // relayout through the transpose unit
  double convert = 0;         // dtype conversion
};

// Core model implementations, by name in core.model (the registry:
// hw_models/core/core_model.h core_models()).
enum class CoreModelKind { kSystolic, kRoofline };
// Collective algorithms, by name in ici.collective_algorithm (the registry:
// hw_models/ici/collectives.h collective_algorithms()); kAuto picks per collective.
enum class CollectiveAlgorithm {
  kAuto,
  kRing,
  kBidirectionalRing,
  kTorus,
  kDirect,
  kRingPerDim,
  kTorusPipelined
};

struct CoreConfig {
  CoreModelKind model = CoreModelKind::kSystolic;  // the implementation
  double clock_hz = 0;
  int64_t tensor_cores_per_device = 0;
  int64_t mxus_per_tensor_core = 0;
  int64_t mxu_rows = 0;               // systolic array height (contraction dim K)
  int64_t mxu_cols = 0;               // systolic array width (output dim N)
  double mxu_weight_load_cycles = 0;  // cycles to shift one weight tile into an MXU
  double mxu_fill_drain_cycles = 0;   // pipeline fill + drain of one MXU pass
  double f32_matmul_passes = 0;       // bf16 passes an f32 x f32 matmul costs
  double mxu_sustained_fraction =
      0;  // fraction of a tile loop's cycles that stream a row (1 = ideal;
          // below: operand pushes, result pops and DMA waits the loop does not hide)
  int64_t vpu_lanes = 0;
  int64_t vpu_sublanes = 0;
  VpuCycles vpu_cycles;
  double op_overhead_s = 0;  // fixed issue cost of one (fused) op
};

struct HbmConfig {
  double capacity_bytes = 0;  // per device
  double bandwidth = 0;       // bytes/s per device
  double latency_s = 0;       // first-access latency, not hidden by streaming
};

struct ChipConfig {
  int64_t devices_per_chip = 0;  // devices sharing one chip's ICI links
  double on_chip_bandwidth = 0;  // bytes/s per direction between two devices of a chip
  double on_chip_latency_s = 0;
  // bytes/s per direction between the chip and its host (PCIe), shared by
  // the chip's devices: host offload (MoveToHost / MoveToDevice) moves
  // buffers over it.
  double host_bandwidth = 0;
};

struct IciConfig {
  std::vector<int64_t> pod_dims;     // chips per torus dimension of a full pod
  std::vector<bool> pod_wraparound;  // wraparound links per dim of the full pod
  // Slices smaller than the pod: a dim that is a multiple of this many chips
  // (and flagged in pod_wraparound) closes into a ring, as TPU v4's optical
  // switches join the faces of its 4x4x4 cubes; 0 = only the full pod wraps.
  int64_t torus_block = 0;
  double link_bandwidth = 0;  // bytes/s per link per direction (raw signalling rate)
  // Fraction of link_bandwidth that collective payload achieves (packet
  // headers, flow control, DMA gaps): collectives and contention run on
  // link_bandwidth x link_efficiency; datasheet figures of raw capacity
  // (bisection) use link_bandwidth.
  double link_efficiency = 1.0;
  double hop_latency_s = 0;  // per chip-to-chip hop
  // Issue cost of one message (DMA descriptor) at its source: a direct
  // all-to-all sends n-1 messages per device, one after another.
  double message_overhead_s = 0;
  CollectiveAlgorithm collective_algorithm = CollectiveAlgorithm::kAuto;
  // Chunks C of torus_pipelined (1 = torus: no pipelining).
  int64_t collective_chunks = 1;
  // What-if: a fixed cost added to every ring step of a collective (a
  // software/synchronisation cost per step beyond the hop latency).
  double ring_step_overhead_s = 0;
  // Collectives of one kind (all-reduce, all-gather, reduce-scatter,
  // all-to-all, collective-permute) a device runs at the same time; different
  // kinds always run concurrently, sharing the links they both use. XLA's
  // latency-hiding scheduler keeps at most this many in flight per kind
  // (SchedulerConfig *_overlap_limit, default 1).
  int64_t collectives_in_flight_per_kind = 1;
  // Collectives of all kinds a device runs at the same time.
  int64_t collectives_in_flight = 1;
};

// The data-centre network joining slices (multi-slice runs): what one chip
// sends and receives across it per second, and the one-way latency of a
// transfer. 0 bandwidth: no figure (a run on one slice never reads it; a
// multi-slice run is an error). docs/collectives.md#multi-slice-collectives
struct DcnConfig {
  double bandwidth_per_chip = 0;  // bytes/s per chip per direction
  double latency_s = 0;
};

// Whether the preset's predictions have been checked against measured runs
// (docs/reference/hardware.md#calibration-status), by name in `status`.
enum class CalibrationStatus { kCalibrated, kUncalibrated };

// One per-chip override: chips first..last (physical chip ids of the slice, row-major over its
// chip dims; several slices: slice-major, slice x chips per slice + chip) run with `key` at
// `value` instead of the machine's. Keys: per_chip_keys(). Given as
// `chips.<id or first-last>.<key>` (--set hardware.chips.17.core.clock_hz=1.05e9) or in a file's
// `chips:` map; later entries win. hw::System resolves them to devices
// (docs/reference/hardware.md#per-chip-overrides).
// The hardware keys a chip may override (per_chip_keys() names them).
enum class ChipKey { kCoreClockHz, kHbmBandwidth };

struct ChipOverride {
  int64_t first_chip = 0;
  int64_t last_chip = 0;  // inclusive
  ChipKey key = ChipKey::kCoreClockHz;
  double value = 0;
  SourceLocation where;  // the file position of the value, or the --set flag
};

struct HardwareConfig {
  std::string name;
  CalibrationStatus status = CalibrationStatus::kUncalibrated;
  std::string origin;  // the file it was loaded from
  CoreConfig core;
  HbmConfig hbm;
  ChipConfig chip;
  IciConfig ici;
  DcnConfig dcn;
  // Dotted key -> where its number comes from (docs/reference/hardware.md row, [D] reasoning,
  // or "override"). describe_hardware prints these.
  std::map<std::string, std::string> sources;
  // Chips that differ from the rest (empty: every chip is the config above).
  std::vector<ChipOverride> chip_overrides;
};

using Overrides = std::vector<std::pair<std::string, std::string>>;

// `preset_name_or_path`: a preset name ("tpuv3", "tpuv4", looked up in
// PODSIM_PRESET_DIR) or a path to a YAML file. A file may start with
// `base: <preset or path>` and then give only the keys it changes.
HardwareConfig load_hardware(const std::string& preset_name_or_path,
                             const Overrides& overrides = {});

// Same, from YAML text (tests, embedded documents); `origin` names it in errors.
HardwareConfig load_hardware_from_string(const std::string& yaml_text, const std::string& origin,
                                         const Overrides& overrides = {});

// Applies "dotted.key" = "value" overrides (the value is parsed as YAML, so
// "[16, 16]" sets a list). Unknown key or bad value: UserError naming the key,
// located at the flag the user gave: "--set hardware.<key>=<value>".
void apply_overrides(HardwareConfig& config, const Overrides& overrides);

// All valid dotted keys, in document order.
std::vector<std::string> hardware_keys();

// The keys a per-chip override may set (ChipOverride::key), and `config` with one applied.
std::vector<std::string> per_chip_keys();
std::string chip_key_name(ChipKey key);  // its dotted hardware key, "core.clock_hz"
void apply_chip_value(HardwareConfig& config, ChipKey key, double value);
double chip_value(const HardwareConfig& config, ChipKey key);

// The value of one key rendered as text (for describe and error messages).
std::string hardware_value_text(const HardwareConfig& config, const std::string& key);

// "calibrated", or "uncalibrated (published specs only)": what `podsim
// hardware list` and `show` print.
std::string calibration_status_text(CalibrationStatus status);

// Names of the presets shipped in PODSIM_PRESET_DIR.
std::vector<std::string> preset_names();

// ---- derived figures -------------------------------------------------------
int64_t mxus_per_device(const CoreConfig& core);
// 2 FLOP per MAC x MACs per cycle of all MXUs x clock (bf16 inputs).
double peak_matmul_flops_per_device(const CoreConfig& core);
// Elements per second the VPUs of one device process at 1 cycle per vreg.
double vpu_elements_per_second(const CoreConfig& core);

}  // namespace podsim::hw
