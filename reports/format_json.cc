// JSON and CSV forms of a Report. Key order is insertion order
// (nlohmann::ordered_json) and numbers print as the shortest text that reads
// back to the same double, so output is byte-for-byte deterministic (the wall
// times, which are not, only with FormatOptions::wall_times).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "reports/formats.h"

namespace podsim::reports {

namespace {

nlohmann::ordered_json top_op_json(const TopOp& op, bool collective, bool group = false) {
  nlohmann::ordered_json j;
  j["name"] = op.name;
  j["op_name"] = op.op_name;
  j["opcode"] = op.opcode;
  j["shape"] = op.shape;
  if (!collective) j["kernel"] = op.kernel;
  if (group) j["instances"] = op.instances;
  j["executions"] = op.executions;
  j["seconds"] = op.seconds;
  j["step_fraction"] = op.step_fraction;
  if (collective) {
    j["bytes"] = op.bytes;
    j["exposed_seconds"] = op.exposed_seconds;
    if (op.dcn_seconds > 0) j["dcn_busy_seconds"] = op.dcn_seconds;  // across slices only
  } else {
    j["bound"] = op.bound;
    j["flops"] = op.flops;
    j["hbm_bytes"] = op.bytes;
  }
  return j;
}

// {"forward": 1.2, ...} in the list's order.
nlohmann::ordered_json seconds_by_name(const std::vector<NamedSeconds>& list) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const NamedSeconds& item : list) j[item.name] = item.seconds;
  return j;
}

void flatten(const std::string& prefix, const nlohmann::ordered_json& value,
             std::vector<std::pair<std::string, std::string>>& out) {
  if (value.is_object()) {
    for (const auto& [key, child] : value.items())
      flatten(prefix.empty() ? key : prefix + "." + key, child, out);
  } else if (value.is_string()) {
    out.emplace_back(prefix, value.get<std::string>());
  } else {
    out.emplace_back(prefix, value.dump());
  }
}

}  // namespace

Format format_from_name(const std::string& name) {
  if (name == "table") return Format::kTable;
  if (name == "json") return Format::kJson;
  if (name == "csv") return Format::kCsv;
  if (name == "markdown") return Format::kMarkdown;
  throw UserError(fmt::format("unknown report format '{}'", name),
                  "use one of: table, json, csv, markdown");
}

std::string format_report(const Report& report, Format format, const FormatOptions& options) {
  switch (format) {
    case Format::kTable:
      return report_table(report);
    case Format::kJson:
      return report_json(report, options);
    case Format::kCsv:
      return report_csv(report, options);
    case Format::kMarkdown:
      return report_markdown(report);
  }
  return report_table(report);
}

nlohmann::ordered_json report_to_json(const Report& r, const FormatOptions& options) {
  nlohmann::ordered_json j;
  j["workload"] = r.workload;
  // Only for an HLO module run directly, so workload reports keep their keys.
  if (!r.mode.empty()) {
    j["mode"] = r.mode;
    j["notes"] = r.notes;
    j["unknown_custom_calls"] = {{"count", r.unknown_custom_calls.count},
                                 {"seconds", r.unknown_custom_calls.seconds},
                                 {"targets", r.unknown_custom_calls.targets}};
  }
  j["hardware"] = r.hardware;
  j["fidelity"] = r.fidelity;
  j["fallback_reason"] = r.fallback_reason;
  j["approximation_note"] = r.approximation_note;
  // Only when chips differ, so other reports keep their keys.
  if (!r.per_device.empty()) j["per_device"] = r.per_device;
  if (!r.simulated_devices.empty()) j["simulated_devices"] = r.simulated_devices;
  j["devices"] = r.devices;
  j["devices_simulated"] = r.devices_simulated;
  j["parameters"] = r.parameters;
  j["tokens_per_step"] = r.tokens_per_step;
  j["step_time_s"] = r.step_time_s;
  j["tokens_per_second"] = r.tokens_per_second;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["model_flops_per_step"] = r.model_flops_per_step;
  j["executed_flops_per_step"] = r.executed_flops_per_step;
  j["peak_flops_per_device"] = r.peak_flops_per_device;
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  j["hbm_capacity_bytes"] = r.hbm_capacity_bytes;
  j["fits_in_memory"] = r.fits_in_memory;
  nlohmann::ordered_json memory = nlohmann::ordered_json::object();
  for (const MemoryPart& part : r.memory_breakdown) memory[part.name] = part.bytes;
  j["memory_breakdown_bytes"] = memory;
  // Where the breakdown is taken (memory_plan.h): the peak's instruction,
  // the largest buffers live there, and live bytes over the step.
  const MemoryPeak& peak = r.memory_peak;
  nlohmann::ordered_json peak_json;
  peak_json["instruction"] = peak.instruction;
  peak_json["op_name"] = peak.op_name;
  peak_json["pass"] = peak.pass;
  peak_json["schedule_position"] = peak.schedule_position;
  peak_json["schedule_length"] = peak.schedule_length;
  peak_json["live_buffers"] = peak.live_buffers;
  j["memory_peak"] = peak_json;
  nlohmann::ordered_json buffers = nlohmann::ordered_json::array();
  for (const PeakBuffer& b : peak.top_buffers) {
    nlohmann::ordered_json one;
    one["name"] = b.name;
    one["op_name"] = b.op_name;
    one["shape"] = b.shape;
    one["sharding"] = b.sharding;
    one["role"] = b.role;
    one["pass"] = b.pass;
    one["bytes"] = b.bytes;
    buffers.push_back(one);
  }
  j["memory_peak_buffers"] = buffers;
  nlohmann::ordered_json timeline;
  timeline["schedule_length"] = peak.schedule_length;
  timeline["position"] = peak.timeline_positions;
  timeline["live_bytes"] = peak.timeline_bytes;
  j["memory_timeline"] = timeline;
  nlohmann::ordered_json time;
  time["compute"] = r.time.compute_s;
  time["mxu_bound"] = r.time.mxu_bound_s;
  time["vpu_bound"] = r.time.vpu_bound_s;
  time["memory_bound"] = r.time.memory_bound_s;
  time["hbm_shared_with_collectives"] = r.time.hbm_contention_s;
  time["overhead"] = r.time.overhead_s;
  time["exposed_communication"] = r.time.exposed_communication_s;
  if (r.time.dcn_busy_s > 0) {  // multi-slice runs only
    time["exposed_dcn_communication"] = r.time.exposed_dcn_s;
    time["dcn_busy"] = r.time.dcn_busy_s;
  }
  time["idle"] = r.time.idle_s;
  j["time_breakdown_s"] = time;
  nlohmann::ordered_json collectives = nlohmann::ordered_json::object();
  for (const CollectiveStats& c : r.collectives) {
    nlohmann::ordered_json one;
    one["count"] = c.count;
    one["static_count"] = c.static_count;
    one["bytes"] = c.bytes;
    one["seconds"] = c.seconds;
    collectives[c.kind] = one;
  }
  j["collectives"] = collectives;
  j["time_by_pass_s"] = seconds_by_name(r.parts.by_pass);
  j["time_by_component_s"] = seconds_by_name(r.parts.by_component);
  nlohmann::ordered_json utilization;
  utilization["layer_matmuls"] = r.parts.layer_matmul_utilization;
  utilization["attention_core"] = r.parts.attention_core_utilization;
  j["flops_utilization"] = utilization;
  nlohmann::ordered_json compile;
  compile["instructions_annotated"] = r.compile.instructions_annotated;
  compile["instructions_partitioned"] = r.compile.instructions_partitioned;
  compile["full_replications"] = r.compile.full_replications;
  compile["default_fallbacks"] = r.compile.default_fallbacks;
  compile["remat_applied"] = r.compile.remat_applied;
  compile["recomputed_flops"] = r.compile.recomputed_flops;
  j["compile"] = compile;
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const TopOp& op : r.top_ops) ops.push_back(top_op_json(op, false));
  j["top_ops"] = ops;
  nlohmann::ordered_json top_collectives = nlohmann::ordered_json::array();
  for (const TopOp& op : r.top_collectives) top_collectives.push_back(top_op_json(op, true));
  j["top_collectives"] = top_collectives;
  nlohmann::ordered_json op_groups = nlohmann::ordered_json::array();
  for (const TopOp& op : r.top_op_groups) op_groups.push_back(top_op_json(op, false, true));
  j["top_op_groups"] = op_groups;
  nlohmann::ordered_json collective_groups = nlohmann::ordered_json::array();
  for (const TopOp& op : r.top_collective_groups)
    collective_groups.push_back(top_op_json(op, true, true));
  j["top_collective_groups"] = collective_groups;
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  for (const PartTime& part : r.parts.parts) {
    nlohmann::ordered_json one;
    one["pass"] = part.pass;
    one["component"] = part.component;
    one["seconds"] = part.seconds();
    one["compute_s"] = part.compute_s;
    one["exposed_communication_s"] = part.exposed_s;
    if (r.time.dcn_busy_s > 0) one["exposed_dcn_communication_s"] = part.exposed_dcn_s;
    one["flops"] = part.flops;
    parts.push_back(one);
  }
  j["time_by_part"] = parts;
  if (options.wall_times) {
    j["compile_wall_s"] = r.compile_wall_s;
    j["simulate_wall_s"] = r.simulate_wall_s;
  }
  return j;
}

std::string report_json(const Report& report, const FormatOptions& options) {
  return report_to_json(report, options).dump(2) + "\n";
}

FlatReport report_flat_fields(const Report& report, const FormatOptions& options) {
  nlohmann::ordered_json j = report_to_json(report, options);
  j.erase("top_ops");
  j.erase("top_collectives");
  j.erase("top_op_groups");
  j.erase("top_collective_groups");
  j.erase("time_by_part");
  j.erase("notes");
  j.erase("memory_peak");
  j.erase("memory_peak_buffers");
  j.erase("memory_timeline");
  if (j.contains("unknown_custom_calls"))
    j["unknown_custom_calls"]["targets"] =
        fmt::format("{}", fmt::join(report.unknown_custom_calls.targets, " "));
  std::vector<std::pair<std::string, std::string>> fields;
  flatten("", j, fields);
  return fields;
}

std::string report_csv(const Report& report, const FormatOptions& options) {
  return report_flat_fields(report, options).csv();
}

}  // namespace podsim::reports
