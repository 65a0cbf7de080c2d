// Human-readable Report forms: an aligned plain-text table (the default
// `podsim run` output) and markdown (for issues and docs). Units a person
// reads: s, ms or us with three significant digits; GiB, MiB, KiB (2^30,
// 2^20, 2^10 bytes) or B; TFLOP/s (1e12); percent.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "reports/formats.h"

namespace podsim::reports {

namespace {

// Three significant digits, without exponent: 46.5, 1.23, 123.
std::string three_digits(double value) {
  const double magnitude = std::abs(value);
  const int decimals = magnitude >= 99.95 ? 0 : magnitude >= 9.995 ? 1 : 2;
  return fmt::format("{:.{}f}", value, decimals);
}

}  // namespace

std::string format_seconds(double seconds) {
  const double magnitude = std::abs(seconds);
  if (magnitude == 0) return "0 s";
  if (magnitude >= 0.9995) return three_digits(seconds) + " s";
  if (magnitude >= 0.9995e-3) return three_digits(seconds * 1e3) + " ms";
  return three_digits(seconds * 1e6) + " us";
}

std::string format_gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / 1073741824.0); }

std::string format_bytes(double bytes) {
  const double magnitude = std::abs(bytes);
  if (magnitude >= 1073741824.0) return fmt::format("{:.2f} GiB", bytes / 1073741824.0);
  if (magnitude >= 1048576.0) return fmt::format("{:.2f} MiB", bytes / 1048576.0);
  if (magnitude >= 1024.0) return fmt::format("{:.2f} KiB", bytes / 1024.0);
  return fmt::format("{:.0f} B", bytes);
}

std::string format_tflops(double flops_per_second) {
  return fmt::format("{:.1f} TFLOP/s", flops_per_second / 1e12);
}

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
  return r.fits_in_memory ? "fits"
                          : fmt::format("DOES NOT FIT: {} over",
                                        format_bytes(r.peak_memory_bytes - r.hbm_capacity_bytes));
}

// "after fusion.12 (backward: bwd/layer_1/ffn/wi), instruction 812 of 1911
// of the step's schedule"; "" without a peak instruction.
std::string peak_point_text(const MemoryPeak& peak) {
  if (peak.instruction.empty()) return "";
  std::string what = peak.pass == "other" ? "" : peak.pass;  // a module without podsim's op_names
  if (!peak.op_name.empty()) what += (what.empty() ? "" : ": ") + peak.op_name;
  return fmt::format("while {} runs{}, instruction {} of {} in the step's schedule",
                     peak.instruction, what.empty() ? "" : " (" + what + ")",
                     peak.schedule_position + 1, peak.schedule_length);
}

std::string or_dash(const std::string& text) { return text.empty() ? "-" : text; }

// What the collectives table's columns count.
constexpr const char* kCollectiveLegend =
    "runs: executions in the step, a loop's once per trip; in program: instructions the "
    "partitioner emitted; "
    "bytes and busy time: per device, summed over runs";

struct TimeRow {
  const char* label;
  double seconds;
};

std::vector<TimeRow> time_rows(const Report& r) {
  std::vector<TimeRow> rows = {{"compute", r.time.compute_s},
                               {"  mxu-bound", r.time.mxu_bound_s},
                               {"  vpu-bound", r.time.vpu_bound_s},
                               {"  memory-bound", r.time.memory_bound_s},
                               {"    HBM shared with DMA", r.time.hbm_contention_s},
                               {"  op overhead", r.time.overhead_s},
                               {"exposed communication", r.time.exposed_communication_s},
                               {"idle", r.time.idle_s}};
  // Multi-slice runs only: the DCN share of the exposed time (a row of the sum above it).
  if (r.time.dcn_busy_s > 0)
    rows.insert(rows.begin() + 7, TimeRow{"  of it DCN", r.time.exposed_dcn_s});
  return rows;
}

std::string op_label(const TopOp& op) { return op.op_name.empty() ? op.name : op.op_name; }

std::string kernel_of(const TopOp& op) {
  return op.kernel.empty() ? kernel_label(op.opcode, op.name) : op.kernel;
}

}  // namespace

std::string report_table(const Report& r) {
  std::string out;
  auto line = [&out](const std::string& label, const std::string& value) {
    out += fmt::format("  {:<24} {}\n", label, value);
  };
  const std::string mode = r.mode.empty()      ? ""
                           : r.mode == "as-is" ? "run as-is (XLA's per-device program), "
                                               : "partitioned by podsim, ";
  out += fmt::format("{} on {}: {} devices, {}{} fidelity ({} simulated)\n", r.workload, r.hardware,
                     r.devices, mode, r.fidelity, r.devices_simulated);
  for (const std::string& note : r.notes) out += fmt::format("  note: {}\n", note);
  if (r.unknown_custom_calls.count > 0)
    out += fmt::format("  {} unknown custom-call{}, {} ({}): costed by the bytes they move\n",
                       r.unknown_custom_calls.count, r.unknown_custom_calls.count == 1 ? "" : "s",
                       format_seconds(r.unknown_custom_calls.seconds),
                       fmt::join(r.unknown_custom_calls.targets, ", "));
  if (!r.fallback_reason.empty())
    out += fmt::format("  (fast fell back to full: {})\n", r.fallback_reason);
  if (!r.approximation_note.empty())
    out += fmt::format("  (approximate: {})\n", r.approximation_note);
  if (!r.per_device.empty())
    out += fmt::format("  (per-device: {}; every device simulated with its own compute time)\n",
                       r.per_device);
  if (!r.simulated_devices.empty())
    out += fmt::format("  (full fidelity: {})\n", r.simulated_devices);
  line(r.mode.empty() ? "parameters" : "entry float elements",
       format_count(static_cast<double>(r.parameters)));
  line("step time", format_seconds(r.step_time_s));
  line("tokens/s", r.tokens_per_step > 0 || r.mode.empty()
                       ? fmt::format("{:.0f}", r.tokens_per_second)
                       : std::string("n/a (give the tokens per step: --tokens N)"));
  line("MFU", fmt::format("{}  ({} of {} per device)", format_percent(r.mfu),
                          format_tflops(r.model_flops_per_second_per_device),
                          format_tflops(r.peak_flops_per_device)));
  line("HFU", format_percent(r.hfu));

  out += fmt::format("memory per device at its peak: {} of {} ({})\n",
                     format_bytes(static_cast<double>(r.peak_memory_bytes)),
                     format_bytes(r.hbm_capacity_bytes), fits_text(r));
  if (const std::string at = peak_point_text(r.memory_peak); !at.empty()) line("peak", at);
  out += "  live at the peak, by role:\n";
  for (const MemoryPart& part : r.memory_breakdown)
    line("  " + part.name, fmt::format("{:>12}", format_bytes(static_cast<double>(part.bytes))));
  if (!r.memory_peak.top_buffers.empty()) {
    out +=
        fmt::format("  largest buffers live at the peak ({} of {}):\n    {:>12} {:<18} {:<9} {}\n",
                    r.memory_peak.top_buffers.size(), r.memory_peak.live_buffers, "bytes", "role",
                    "pass", "buffer shape sharding (op)");
    for (const PeakBuffer& b : r.memory_peak.top_buffers)
      out += fmt::format("    {:>12} {:<18} {:<9} {} {} {}{}\n",
                         format_bytes(static_cast<double>(b.bytes)), b.role, or_dash(b.pass),
                         b.name, b.shape, or_dash(b.sharding),
                         b.op_name.empty() ? "" : " (" + b.op_name + ")");
  }

  out += "time per step:\n";
  for (const TimeRow& row : time_rows(r))
    line(row.label, fmt::format("{:>14}  {:>7}", format_seconds(row.seconds),
                                format_percent(fraction_of(row.seconds, r.step_time_s))));

  out += fmt::format("collectives:\n  ({})\n  {:<24} {:>8} {:>10} {:>14} {:>14}\n",
                     kCollectiveLegend, "kind", "runs", "in program", "bytes/device", "busy time");
  for (const CollectiveStats& c : r.collectives)
    out += fmt::format("  {:<24} {:>8} {:>10} {:>14} {:>14}\n", c.kind, c.count, c.static_count,
                       format_bytes(c.bytes), format_seconds(c.seconds));

  // Parts come from the op names podsim's model builders write; a module
  // from elsewhere is all "other".
  const bool parts_known =
      std::any_of(r.parts.parts.begin(), r.parts.parts.end(),
                  [](const PartTime& p) { return p.pass != "other" || p.component != "other"; });
  const bool dcn = r.time.dcn_busy_s > 0;  // multi-slice: an exposed-DCN column
  if (parts_known) {
    out += fmt::format(
        "time by part (compute + exposed communication):\n  {:<10} {:<19} {:>14} {:>7} {:>14} "
        "{:>9}{}\n",
        "pass", "component", "time", "step", "exposed", "TFLOP/s",
        dcn ? fmt::format(" {:>14}", "of it DCN") : "");
    for (const PartTime& part : r.parts.parts)
      out += fmt::format("  {:<10} {:<19} {:>14} {:>7} {:>14} {:>9.1f}{}\n", part.pass,
                         part.component, format_seconds(part.seconds()),
                         format_percent(fraction_of(part.seconds(), r.step_time_s)),
                         format_seconds(part.exposed_s), part.flops_per_second() / 1e12,
                         dcn ? fmt::format(" {:>14}", format_seconds(part.exposed_dcn_s)) : "");
    line("layer matmuls",
         fmt::format("{} of peak while running", format_percent(r.parts.layer_matmul_utilization)));
    line("attention core", fmt::format("{} of peak while running",
                                       format_percent(r.parts.attention_core_utilization)));
  }
  // The groups (the same op in every layer, summed): a single op of a model
  // of many layers is a small share of its step; json also has the ops.
  if (!r.top_op_groups.empty()) {
    out += fmt::format(
        "top ops (summed over layers; layer_* = every layer):\n  {:>14} {:>7} {:>6} {:<9} {}\n",
        "time", "step", "count", "bound", "op");
    for (const TopOp& op : r.top_op_groups)
      out += fmt::format("  {:>14} {:>7} {:>6} {:<9} {} {} {}\n", format_seconds(op.seconds),
                         format_percent(op.step_fraction), op.instances, op.bound, op_label(op),
                         op.shape, kernel_of(op));
  }
  if (!r.top_collective_groups.empty()) {
    out += fmt::format("top collectives (summed over layers):\n  {:>14} {:>14}{} {:>6} {:>12} {}\n",
                       "time", "exposed", dcn ? fmt::format(" {:>14}", "DCN busy") : "", "count",
                       "bytes", "op");
    for (const TopOp& op : r.top_collective_groups)
      out += fmt::format("  {:>14} {:>14}{} {:>6} {:>12} {} {} {}\n", format_seconds(op.seconds),
                         format_seconds(op.exposed_seconds),
                         dcn ? fmt::format(" {:>14}", format_seconds(op.dcn_seconds)) : "",
                         op.instances, format_bytes(op.bytes), op.opcode, op_label(op), op.shape);
  }
  out += fmt::format(
      "compile: {} -> {} instructions, {} full replications, {} default fallbacks, remat {}\n",
      r.compile.instructions_annotated, r.compile.instructions_partitioned,
      r.compile.full_replications, r.compile.default_fallbacks,
      r.compile.remat_applied.empty() ? "none" : r.compile.remat_applied);
  out += fmt::format("wall time: compile {:.2f} s, simulate {:.2f} s\n", r.compile_wall_s,
                     r.simulate_wall_s);
  return out;
}

std::string report_markdown(const Report& r) {
  std::string out;
  out += fmt::format("## {} on {}\n\n", r.workload, r.hardware);
  out += "| metric | value |\n|---|---:|\n";
  auto row = [&out](const std::string& k, const std::string& v) {
    out += fmt::format("| {} | {} |\n", k, v);
  };
  row("devices",
      fmt::format("{} ({} fidelity, {} simulated)", r.devices, r.fidelity, r.devices_simulated));
  row(r.mode.empty() ? "parameters" : "entry float elements",
      format_count(static_cast<double>(r.parameters)));
  row("step time", format_seconds(r.step_time_s));
  row("tokens/s", fmt::format("{:.0f}", r.tokens_per_second));
  row("MFU", format_percent(r.mfu));
  row("HFU", format_percent(r.hfu));
  row("peak memory per device",
      fmt::format("{} of {} ({})", format_bytes(static_cast<double>(r.peak_memory_bytes)),
                  format_bytes(r.hbm_capacity_bytes), fits_text(r)));
  if (const std::string at = peak_point_text(r.memory_peak); !at.empty()) row("memory peak", at);
  row("compile / simulate wall",
      fmt::format("{:.2f} s / {:.2f} s", r.compile_wall_s, r.simulate_wall_s));

  out += "\n### Memory at the peak\n\n";
  if (const std::string at = peak_point_text(r.memory_peak); !at.empty())
    out += "The peak: " + at + ".\n\n";
  out += "| role | live at the peak |\n|---|---:|\n";
  for (const MemoryPart& part : r.memory_breakdown)
    out += fmt::format("| {} | {} |\n", part.name, format_bytes(static_cast<double>(part.bytes)));
  if (!r.memory_peak.top_buffers.empty()) {
    out += fmt::format(
        "\nLargest buffers live at the peak ({} of {}):\n\n"
        "| buffer | op | shape | sharding | role | pass | size |\n|---|---|---|---|---|---|---:|\n",
        r.memory_peak.top_buffers.size(), r.memory_peak.live_buffers);
    for (const PeakBuffer& b : r.memory_peak.top_buffers)
      out += fmt::format("| `{}` | `{}` | `{}` | `{}` | {} | {} | {} |\n", b.name,
                         or_dash(b.op_name), b.shape, or_dash(b.sharding), b.role, or_dash(b.pass),
                         format_bytes(static_cast<double>(b.bytes)));
  }

  out += "\n### Time per step\n\n| part | time | % of step |\n|---|---:|---:|\n";
  for (const TimeRow& t : time_rows(r)) {
    // Indented rows are parts of the row above: "- part", "- - part of part".
    const std::string_view label(t.label);
    const size_t depth = label.find_first_not_of(' ') / 2;
    std::string cell;
    for (size_t i = 0; i < depth; ++i) cell += "- ";
    cell += label.substr(depth * 2);
    out += fmt::format("| {} | {} | {:.1f} |\n", cell, format_seconds(t.seconds),
                       fraction_of(t.seconds, r.step_time_s) * 100.0);
  }

  out += fmt::format(
      "\n### Collectives\n\n{}.\n\n| kind | runs | in program | bytes per device | busy time |\n"
      "|---|---:|---:|---:|---:|\n",
      kCollectiveLegend);
  for (const CollectiveStats& c : r.collectives)
    out += fmt::format("| {} | {} | {} | {} | {} |\n", c.kind, c.count, c.static_count,
                       format_bytes(c.bytes), format_seconds(c.seconds));

  if (!r.parts.parts.empty()) {
    out +=
        "\n### Time by part\n\n| pass | component | time | % of step | exposed | TFLOP/s "
        "|\n|---|---|---:|---:|---:|---:|\n";
    for (const PartTime& part : r.parts.parts)
      out += fmt::format("| {} | {} | {} | {:.1f} | {} | {:.1f} |\n", part.pass, part.component,
                         format_seconds(part.seconds()),
                         fraction_of(part.seconds(), r.step_time_s) * 100.0,
                         format_seconds(part.exposed_s), part.flops_per_second() / 1e12);
    out += fmt::format("\nLayer matmuls run at {} of peak, the attention core at {}.\n",
                       format_percent(r.parts.layer_matmul_utilization),
                       format_percent(r.parts.attention_core_utilization));
  }
  if (!r.top_op_groups.empty()) {
    out +=
        "\n### Top ops (summed over layers)\n\n| op | shape | kernel | count | bound | time | % of "
        "step |\n"
        "|---|---|---|---:|---|---:|---:|\n";
    for (const TopOp& op : r.top_op_groups)
      out += fmt::format("| `{}` | `{}` | `{}` | {} | {} | {} | {:.1f} |\n", op_label(op), op.shape,
                         kernel_of(op), op.instances, op.bound, format_seconds(op.seconds),
                         op.step_fraction * 100.0);
  }
  if (!r.top_collective_groups.empty()) {
    out +=
        "\n### Top collectives (summed over layers)\n\n| op | kind | count | bytes | time | "
        "exposed |\n"
        "|---|---|---:|---:|---:|---:|\n";
    for (const TopOp& op : r.top_collective_groups)
      out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", op_label(op), op.opcode,
                         op.instances, format_bytes(op.bytes), format_seconds(op.seconds),
                         format_seconds(op.exposed_seconds));
  }
  return out;
}

}  // namespace podsim::reports
