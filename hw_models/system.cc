// Assembly of a System from a config and a mesh layout.
#include "hw_models/system.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

#include "common/error.h"

namespace podsim::hw {
namespace {

Slice choose_slice(const HardwareConfig& config, const MeshLayout& layout) {
  if (!layout.physical.empty()) return slice_from_physical(config, layout.physical);
  const int64_t devices = std::accumulate(layout.mesh_shape.begin(), layout.mesh_shape.end(),
                                          int64_t{1}, std::multiplies<>());
  return default_slice(config, devices);
}

int64_t checked_slices(const HardwareConfig& config, const MeshLayout& layout) {
  if (layout.slices < 1)
    throw UserError(fmt::format("{} slices: a run needs at least one", layout.slices),
                    "give mesh.dcn axis sizes (or --slices) of at least 1");
  if (layout.slices > 1 && !(config.dcn.bandwidth_per_chip > 0))
    throw UserError(
        fmt::format("{} slices need the data-centre network, but {} gives dcn.bandwidth_per_chip "
                    "= {}",
                    layout.slices, config.name, config.dcn.bandwidth_per_chip),
        "set one: --set hardware.dcn.bandwidth_per_chip=6.25e9 (bytes/s per chip; "
        "docs/reference/hardware.md#data-centre-network)");
  return layout.slices;
}

// The slice's placement repeated in every slice (device id = slice x devices per slice + id).
Placement place_slices(const Topology& topology, const MeshLayout& layout) {
  Placement placement = place_mesh(
      topology.slice(), PlacementQuery{layout.mesh_shape, layout.order, layout.explicit_devices});
  const auto per_slice = static_cast<int64_t>(placement.core_of_device.size());
  for (int64_t s = 1; s < topology.num_slices(); ++s)
    for (int64_t d = 0; d < per_slice; ++d)
      placement.core_of_device.push_back(s * topology.num_devices() +
                                         placement.core_of_device[static_cast<size_t>(d)]);
  return placement;
}

// 1.05e9, 0.5, 600: six significant digits, the exponent without '+' and leading zeros.
std::string short_number(double value) {
  std::string text = fmt::format("{:.6g}", value);
  const size_t e = text.find('e');
  if (e == std::string::npos) return text;
  std::string exponent = text.substr(e + 1);
  const bool negative = exponent[0] == '-';
  exponent = exponent.substr(exponent[0] == '-' || exponent[0] == '+' ? 1 : 0);
  while (exponent.size() > 1 && exponent[0] == '0') exponent.erase(0, 1);
  return text.substr(0, e + 1) + (negative ? "-" : "") + exponent;
}

// "17", "0-3, 8, 10-11": ascending ids with runs joined.
std::string ranges_text(const std::vector<int64_t>& ids) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    parts.push_back(j == i       ? fmt::format("{}", ids[i])
                    : j == i + 1 ? fmt::format("{}, {}", ids[i], ids[j])
                                 : fmt::format("{}-{}", ids[i], ids[j]));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// Per chip the values its overrides end at (later entries win), chips of equal values grouped.
std::vector<ChipVariant> resolve_chip_variants(const HardwareConfig& config,
                                               const Topology& topology,
                                               const Placement& placement) {
  if (config.chip_overrides.empty()) return {};
  const int64_t chips = topology.num_chips() * topology.num_slices();
  std::map<int64_t, std::map<ChipKey, double>> per_chip;
  for (const ChipOverride& o : config.chip_overrides) {
    if (o.last_chip >= chips)
      throw UserError(
          o.where,
          fmt::format("chip {} (hardware key 'chips.{}.{}') is beyond the machine: the run uses {} "
                      "chip(s), ids 0-{}",
                      o.last_chip,
                      o.first_chip == o.last_chip ? fmt::format("{}", o.first_chip)
                                                  : fmt::format("{}-{}", o.first_chip, o.last_chip),
                      chip_key_name(o.key), chips, chips - 1),
          fmt::format("the slice has {} chip(s) ({} device(s) each){}; chip ids are row-major over "
                      "its chip dims{}",
                      topology.num_chips(), topology.slice().devices_per_chip,
                      topology.num_slices() > 1
                          ? fmt::format(" and there are {} slices", topology.num_slices())
                          : "",
                      topology.num_slices() > 1 ? ", slice-major across slices" : ""));
    for (int64_t chip = o.first_chip; chip <= o.last_chip; ++chip) per_chip[chip][o.key] = o.value;
  }
  std::map<std::map<ChipKey, double>, ChipVariant> variants;
  for (const auto& [chip, values] : per_chip) {
    ChipVariant& v = variants[values];
    v.chips.push_back(chip);
    if (v.values.empty()) {
      v.config = config;
      v.config.chip_overrides.clear();
      for (const auto& [key, value] : values) {
        v.values.emplace_back(key, value);
        apply_chip_value(v.config, key, value);
      }
    }
  }
  const auto& cores = placement.core_of_device;
  for (size_t d = 0; d < cores.size(); ++d) {
    const std::map<ChipKey, double>* values = nullptr;
    auto it = per_chip.find(topology.chip_of(cores[d]));
    if (it != per_chip.end()) values = &it->second;
    if (values) variants[*values].devices.push_back(static_cast<int64_t>(d));
  }
  std::vector<ChipVariant> out;
  for (auto& [values, v] : variants) out.push_back(std::move(v));
  // In chip order, for the report.
  std::sort(out.begin(), out.end(),
            [](const ChipVariant& a, const ChipVariant& b) { return a.chips[0] < b.chips[0]; });
  return out;
}

}  // namespace

System::System(HardwareConfig config, const MeshLayout& layout)
    : config_(std::move(config)),
      core_(make_core_model(config_)),
      topology_(choose_slice(config_, layout), link_params(config_),
                checked_slices(config_, layout)),
      placement_(place_slices(topology_, layout)),
      chip_variants_(resolve_chip_variants(config_, topology_, placement_)) {}

std::string System::chip_variants_text() const {
  std::vector<std::string> parts;
  for (const ChipVariant& v : chip_variants_) {
    std::vector<std::string> values;
    for (const auto& [key, value] : v.values)
      values.push_back(fmt::format("{} {} of {}", chip_key_name(key), short_number(value),
                                   short_number(chip_value(config_, key))));
    parts.push_back(fmt::format("chip{} {} (device{} {}) {}", v.chips.size() > 1 ? "s" : "",
                                ranges_text(v.chips), v.devices.size() == 1 ? "" : "s",
                                ranges_text(v.devices), fmt::join(values, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

CollectivePlan System::plan(CollectiveQuery query) const {
  if (query.algorithm == CollectiveAlgorithm::kAuto)
    query.algorithm = config_.ici.collective_algorithm;
  if (query.chunks == 0) query.chunks = config_.ici.collective_chunks;
  return plan_collective(topology_, query);
}

}  // namespace podsim::hw
