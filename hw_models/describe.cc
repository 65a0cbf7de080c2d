// `podsim hardware show`: preset values with sources and derived figures.
#include "hw_models/describe.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw_models/ici/topology.h"

namespace podsim::hw {

DerivedFigures derive_figures(const HardwareConfig& config) {
  DerivedFigures f;
  f.peak_flops_per_device = peak_matmul_flops_per_device(config.core);
  f.peak_flops_per_chip =
      f.peak_flops_per_device * static_cast<double>(config.chip.devices_per_chip);
  // Achieved figures (all-reduce bandwidth) on effective links, datasheet
  // capacity (bisection) on raw links.
  const Topology pod(full_pod(config), link_params(config));
  const Topology raw_pod(full_pod(config), raw_link_params(config));
  f.pod_chips = pod.num_chips();
  f.pod_devices = pod.num_devices();
  f.peak_flops_per_pod = f.peak_flops_per_device * static_cast<double>(f.pod_devices);
  f.hbm_bytes_per_device = config.hbm.capacity_bytes;
  f.hbm_bandwidth_per_device = config.hbm.bandwidth;
  int64_t directed = 0;
  for (const Link& link : pod.links())
    if (link.kind == LinkKind::kIci) ++directed;
  // Each chip sends on one directed link per physical link it terminates.
  f.ici_links_per_chip = f.pod_chips > 0 ? directed / f.pod_chips : 0;
  f.pod_all_reduce_bandwidth = aggregate_ici_bandwidth(pod);
  f.bisection_bandwidth = bisection_bandwidth(raw_pod);
  return f;
}

std::string describe_hardware(const HardwareConfig& config) {
  std::string out = fmt::format("hardware {} (from {})\nstatus: {}\n\n", config.name, config.origin,
                                calibration_status_text(config.status));
  size_t width = 0;
  for (const std::string& key : hardware_keys()) width = std::max(width, key.size());
  for (const std::string& key : hardware_keys()) {
    const auto source = config.sources.find(key);
    out += fmt::format("  {:<{}}  {:<14}  {}\n", key, width, hardware_value_text(config, key),
                       source == config.sources.end() ? "" : source->second);
  }
  const DerivedFigures f = derive_figures(config);
  const Topology pod(full_pod(config), link_params(config));
  out += "\nderived\n";
  out += fmt::format(
      "  peak bf16 FLOP/s per device   {:.1f} TFLOP/s  (2 x {} MXU x {}x{} x {:g} MHz)\n",
      f.peak_flops_per_device / 1e12, mxus_per_device(config.core), config.core.mxu_rows,
      config.core.mxu_cols, config.core.clock_hz / 1e6);
  out += fmt::format("  peak bf16 FLOP/s per chip     {:.1f} TFLOP/s  ({} device(s) per chip)\n",
                     f.peak_flops_per_chip / 1e12, config.chip.devices_per_chip);
  out +=
      fmt::format("  peak bf16 FLOP/s per pod      {:.1f} PFLOP/s\n", f.peak_flops_per_pod / 1e15);
  out += fmt::format("  HBM per device                {:.1f} GiB at {:.0f} GB/s\n",
                     f.hbm_bytes_per_device / (1024.0 * 1024 * 1024),
                     f.hbm_bandwidth_per_device / 1e9);
  out += fmt::format("  pod                           {}: {} chips, {} devices\n",
                     pod.slice().to_string(), f.pod_chips, f.pod_devices);
  out += fmt::format(
      "  ICI links per chip            {} at {:g} GB/s per direction ({:g} GB/s achieved, "
      "efficiency {:g})\n",
      f.ici_links_per_chip, config.ici.link_bandwidth / 1e9,
      config.ici.link_bandwidth * config.ici.link_efficiency / 1e9, config.ici.link_efficiency);
  out += fmt::format(
      "  pod all-reduce bandwidth      {:.1f} TB/s  (achieved one-way bandwidth summed over all {} "
      "directed links)\n",
      f.pod_all_reduce_bandwidth / 1e12, f.ici_links_per_chip * f.pod_chips);
  out += fmt::format(
      "  bisection bandwidth           {:.2f} TB/s  (one way across the weakest halving cut)\n",
      f.bisection_bandwidth / 1e12);
  // Per-chip overrides (config.h ChipOverride), in the order they apply.
  for (const ChipOverride& o : config.chip_overrides)
    out += fmt::format("  {:<28} {} = {:g}  ({})\n",
                       o.first_chip == o.last_chip
                           ? fmt::format("chip {}", o.first_chip)
                           : fmt::format("chips {}-{}", o.first_chip, o.last_chip),
                       chip_key_name(o.key), o.value, o.where.to_string());
  return out;
}

std::string describe_presets() {
  std::string text = fmt::format("{:<10} {:>8} {:>14} {:>10} {:>8}  {:<9} {}\n", "preset",
                                 "devices", "peak TFLOP/s", "HBM GiB", "chips", "torus", "status");
  for (const std::string& name : preset_names()) {
    const HardwareConfig c = load_hardware(name);
    int64_t chips = 1;
    for (int64_t d : c.ici.pod_dims) chips *= d;
    const std::string torus = fmt::format("{}", fmt::join(c.ici.pod_dims, "x"));
    text += fmt::format(
        "{:<10} {:>8} {:>14.4g} {:>10.4g} {:>8}  {:<9} {}\n", name, chips * c.chip.devices_per_chip,
        peak_matmul_flops_per_device(c.core) / 1e12, c.hbm.capacity_bytes / (1024.0 * 1024 * 1024),
        chips, torus, calibration_status_text(c.status));
  }
  text += "peak TFLOP/s and HBM GiB per device\n";
  text += "details: podsim hardware show <preset>\n";
  return text;
}

}  // namespace podsim::hw
