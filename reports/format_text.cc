// Human-readable Report forms: an aligned plain-text table (the default
// `podsim run` output) and markdown (for issues and docs). Units: ms (s above
// 100 s), GiB (2^30 bytes), TFLOP/s (1e12), percent.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "reports/formats.h"

namespace podsim::reports {

std::string format_seconds(double seconds) {
  if (std::abs(seconds) >= 100.0) return fmt::format("{:.2f} s", seconds);
  return fmt::format("{:.3f} ms", seconds * 1e3);
}

std::string format_gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / 1073741824.0); }

std::string format_tflops(double flops_per_second) { return fmt::format("{:.1f} TFLOP/s", flops_per_second / 1e12); }

std::string format_percent(double fraction) { return fmt::format("{:.1f} %", fraction * 100.0); }

std::string format_count(double value) {
  double magnitude = std::abs(value);
  if (magnitude >= 1e12) return fmt::format("{:.3f} T", value / 1e12);
  if (magnitude >= 1e9) return fmt::format("{:.3f} G", value / 1e9);
  if (magnitude >= 1e6) return fmt::format("{:.3f} M", value / 1e6);
  if (magnitude >= 1e4) return fmt::format("{:.1f} k", value / 1e3);
  return fmt::format("{:g}", value);
}

namespace {

double fraction_of(double part, double whole) { return whole > 0 ? part / whole : 0; }

std::string fits_text(const Report& r) {
  return r.fits_in_memory ? "fits" : fmt::format("DOES NOT FIT: {} over", format_gib(r.peak_memory_bytes - r.hbm_capacity_bytes));
}

struct TimeRow {
  const char* label;
  double seconds;
};

std::vector<TimeRow> time_rows(const Report& r) {
  return {{"compute", r.time.compute_s},
          {"  mxu-bound", r.time.mxu_bound_s},
          {"  vpu-bound", r.time.vpu_bound_s},
          {"  memory-bound", r.time.memory_bound_s},
          {"    HBM shared with DMA", r.time.hbm_contention_s},
          {"  op overhead", r.time.overhead_s},
          {"exposed communication", r.time.exposed_communication_s},
          {"idle", r.time.idle_s}};
}

std::string op_label(const TopOp& op) { return op.op_name.empty() ? op.name : op.op_name; }

}  // namespace

std::string report_table(const Report& r) {
  std::string out;
  auto line = [&out](const std::string& label, const std::string& value) {
    out += fmt::format("  {:<24} {}\n", label, value);
  };
  const std::string mode = r.mode.empty() ? ""
                           : r.mode == "as-is" ? "run as-is (XLA's per-device program), "
                                               : "partitioned by podsim, ";
  out += fmt::format("{} on {}: {} devices, {}{} fidelity ({} simulated)\n", r.workload, r.hardware, r.devices, mode,
                     r.fidelity, r.devices_simulated);
  for (const std::string& note : r.notes) out += fmt::format("  note: {}\n", note);
  if (r.unknown_custom_calls.count > 0)
    out += fmt::format("  {} unknown custom-call{}, {} ({}): costed by the bytes they move\n",
                       r.unknown_custom_calls.count, r.unknown_custom_calls.count == 1 ? "" : "s",
                       format_seconds(r.unknown_custom_calls.seconds), fmt::join(r.unknown_custom_calls.targets, ", "));
  if (!r.fallback_reason.empty()) out += fmt::format("  (fast fell back to full: {})\n", r.fallback_reason);
  if (!r.approximation_note.empty()) out += fmt::format("  (approximate: {})\n", r.approximation_note);
  line("parameters", format_count(static_cast<double>(r.parameters)));
  line("step time", format_seconds(r.step_time_s));
  line("tokens/s", r.tokens_per_step > 0 || r.mode.empty() ? fmt::format("{:.0f}", r.tokens_per_second)
                                                           : std::string("n/a (give the tokens per step: --tokens N)"));
  line("MFU", fmt::format("{}  ({} of {} per device)", format_percent(r.mfu),
                          format_tflops(r.model_flops_per_second_per_device), format_tflops(r.peak_flops_per_device)));
  line("HFU", format_percent(r.hfu));

  out += fmt::format("memory per device: {} of {} ({})\n", format_gib(static_cast<double>(r.peak_memory_bytes)),
                     format_gib(r.hbm_capacity_bytes), fits_text(r));
  for (const MemoryPart& part : r.memory_breakdown)
    line(part.name, fmt::format("{:>12}", format_gib(static_cast<double>(part.bytes))));

  out += "time per step:\n";
  for (const TimeRow& row : time_rows(r))
    line(row.label, fmt::format("{:>14}  {:>7}", format_seconds(row.seconds),
                                format_percent(fraction_of(row.seconds, r.step_time_s))));

  out += fmt::format("collectives:\n  {:<24} {:>8} {:>8} {:>14} {:>14}\n", "kind", "count", "emitted", "bytes/device",
                     "busy time");
  for (const CollectiveStats& c : r.collectives)
    out += fmt::format("  {:<24} {:>8} {:>8} {:>14} {:>14}\n", c.kind, c.count, c.static_count, format_gib(c.bytes),
                       format_seconds(c.seconds));

  // Parts come from the op names podsim's model builders write; a module
  // from elsewhere is all "other".
  const bool parts_known = std::any_of(r.parts.parts.begin(), r.parts.parts.end(),
                                       [](const PartTime& p) { return p.pass != "other" || p.component != "other"; });
  if (parts_known) {
    out += fmt::format("time by part (compute + exposed communication):\n  {:<10} {:<19} {:>14} {:>7} {:>14} {:>9}\n",
                       "pass", "component", "time", "step", "exposed", "TFLOP/s");
    for (const PartTime& part : r.parts.parts)
      out += fmt::format("  {:<10} {:<19} {:>14} {:>7} {:>14} {:>9.1f}\n", part.pass, part.component,
                         format_seconds(part.seconds()), format_percent(fraction_of(part.seconds(), r.step_time_s)),
                         format_seconds(part.exposed_s), part.flops_per_second() / 1e12);
    line("layer matmuls", fmt::format("{} of peak while running", format_percent(r.parts.layer_matmul_utilization)));
    line("attention core", fmt::format("{} of peak while running", format_percent(r.parts.attention_core_utilization)));
  }
  // The groups (the same op in every layer, summed): a single op of a model
  // of many layers is a small share of its step; json also has the ops.
  if (!r.top_op_groups.empty()) {
    out += fmt::format("top ops (summed over layers; layer_* = every layer):\n  {:>14} {:>7} {:>6} {:<9} {}\n",
                       "time", "step", "count", "bound", "op");
    for (const TopOp& op : r.top_op_groups)
      out += fmt::format("  {:>14} {:>7} {:>6} {:<9} {} {} {}\n", format_seconds(op.seconds),
                         format_percent(op.step_fraction), op.instances, op.bound, op_label(op), op.shape,
                         kernel_label(op.opcode, op.name));
  }
  if (!r.top_collective_groups.empty()) {
    out += fmt::format("top collectives (summed over layers):\n  {:>14} {:>14} {:>6} {:>12} {}\n", "time", "exposed",
                       "count", "bytes", "op");
    for (const TopOp& op : r.top_collective_groups)
      out += fmt::format("  {:>14} {:>14} {:>6} {:>12} {} {} {}\n", format_seconds(op.seconds),
                         format_seconds(op.exposed_seconds), op.instances, format_gib(op.bytes), op.opcode,
                         op_label(op), op.shape);
  }
  out += fmt::format("compile: {} -> {} instructions, {} full replications, {} default fallbacks, remat {}\n",
                     r.compile.instructions_annotated, r.compile.instructions_partitioned, r.compile.full_replications,
                     r.compile.default_fallbacks, r.compile.remat_applied.empty() ? "none" : r.compile.remat_applied);
  out += fmt::format("wall time: compile {:.2f} s, simulate {:.2f} s\n", r.compile_wall_s, r.simulate_wall_s);
  return out;
}

std::string report_markdown(const Report& r) {
  std::string out;
  out += fmt::format("## {} on {}\n\n", r.workload, r.hardware);
  out += "| metric | value |\n|---|---:|\n";
  auto row = [&out](const std::string& k, const std::string& v) { out += fmt::format("| {} | {} |\n", k, v); };
  row("devices", fmt::format("{} ({} fidelity, {} simulated)", r.devices, r.fidelity, r.devices_simulated));
  row("parameters", format_count(static_cast<double>(r.parameters)));
  row("step time", format_seconds(r.step_time_s));
  row("tokens/s", fmt::format("{:.0f}", r.tokens_per_second));
  row("MFU", format_percent(r.mfu));
  row("HFU", format_percent(r.hfu));
  row("peak memory per device", fmt::format("{} of {} ({})", format_gib(static_cast<double>(r.peak_memory_bytes)),
                                            format_gib(r.hbm_capacity_bytes), fits_text(r)));
  row("compile / simulate wall", fmt::format("{:.2f} s / {:.2f} s", r.compile_wall_s, r.simulate_wall_s));

  out += "\n### Memory at the peak\n\n| part | GiB |\n|---|---:|\n";
  for (const MemoryPart& part : r.memory_breakdown)
    out += fmt::format("| {} | {:.2f} |\n", part.name, static_cast<double>(part.bytes) / 1073741824.0);

  out += "\n### Time per step\n\n| part | ms | % of step |\n|---|---:|---:|\n";
  for (const TimeRow& t : time_rows(r)) {
    // Indented rows are parts of the row above: "- part", "- - part of part".
    const std::string_view label(t.label);
    const size_t depth = label.find_first_not_of(' ') / 2;
    std::string cell;
    for (size_t i = 0; i < depth; ++i) cell += "- ";
    cell += label.substr(depth * 2);
    out += fmt::format("| {} | {:.3f} | {:.1f} |\n", cell, t.seconds * 1e3, fraction_of(t.seconds, r.step_time_s) * 100.0);
  }

  out += "\n### Collectives\n\n| kind | count | emitted | GiB per device | busy ms |\n|---|---:|---:|---:|---:|\n";
  for (const CollectiveStats& c : r.collectives)
    out += fmt::format("| {} | {} | {} | {:.3f} | {:.3f} |\n", c.kind, c.count, c.static_count, c.bytes / 1073741824.0,
                       c.seconds * 1e3);

  if (!r.parts.parts.empty()) {
    out += "\n### Time by part\n\n| pass | component | ms | % of step | exposed ms | TFLOP/s |\n|---|---|---:|---:|---:|---:|\n";
    for (const PartTime& part : r.parts.parts)
      out += fmt::format("| {} | {} | {:.3f} | {:.1f} | {:.3f} | {:.1f} |\n", part.pass, part.component,
                         part.seconds() * 1e3, fraction_of(part.seconds(), r.step_time_s) * 100.0, part.exposed_s * 1e3,
                         part.flops_per_second() / 1e12);
    out += fmt::format("\nLayer matmuls run at {} of peak, the attention core at {}.\n",
                       format_percent(r.parts.layer_matmul_utilization),
                       format_percent(r.parts.attention_core_utilization));
  }
  if (!r.top_op_groups.empty()) {
    out += "\n### Top ops (summed over layers)\n\n| op | shape | count | bound | ms | % of step |\n"
           "|---|---|---:|---|---:|---:|\n";
    for (const TopOp& op : r.top_op_groups)
      out += fmt::format("| `{}` | `{}` | {} | {} | {:.3f} | {:.1f} |\n", op_label(op), op.shape, op.instances, op.bound,
                         op.seconds * 1e3, op.step_fraction * 100.0);
  }
  if (!r.top_collective_groups.empty()) {
    out += "\n### Top collectives (summed over layers)\n\n| op | kind | count | GiB | ms | exposed ms |\n"
           "|---|---|---:|---:|---:|---:|\n";
    for (const TopOp& op : r.top_collective_groups)
      out += fmt::format("| `{}` | {} | {} | {:.3f} | {:.3f} | {:.3f} |\n", op_label(op), op.opcode, op.instances,
                         op.bytes / 1073741824.0, op.seconds * 1e3, op.exposed_seconds * 1e3);
  }
  return out;
}

}  // namespace podsim::reports
