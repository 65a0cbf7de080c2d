// Time by model part: op_name -> (pass, component), summed (reports/parts.h).
#include "reports/parts.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace podsim::reports {

namespace {

// "layer_12", "pipeline_iter_3", "stage_0", "scan" (param/scan/...: layer-stacked
// weights, model.layer_loop = scan): structure, not a component.
bool numbered(std::string_view segment, std::string_view stem) {
  if (segment.size() <= stem.size() || segment.substr(0, stem.size()) != stem) return false;
  return std::all_of(segment.begin() + static_cast<std::ptrdiff_t>(stem.size()), segment.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

bool structural(std::string_view segment) {
  return segment == "encoder" || segment == "decoder" || segment == "scan" ||
         numbered(segment, "layer_") || numbered(segment, "pipeline_iter_") ||
         numbered(segment, "stage_");
}

std::string pass_of(std::string_view first) {
  if (first == "fwd") return "forward";
  if (first == "recompute") return "recompute";
  if (first == "bwd") return "backward";
  if (first == "opt") return "optimizer";
  return "";
}

std::string component_of(std::string_view segment) {
  if (segment == "attention" || segment == "cross_attention" || segment == "attention_setup")
    return "attention";
  if (segment == "ffn") return "ffn";
  if (segment == "moe") return "moe";
  if (segment == "embedding" || segment == "loss" || segment == "final_norm")
    return "embedding_and_loss";
  return "other";
}

// Leaves the builders give the matmul of a layer weight (model_graph.cc,
// transformer_blocks.cc, moe_layer.cc): attention projections and FFN /
// expert matrices (gated FFNs have wi_0, wi_1).
bool weight_matmul_leaf(std::string_view leaf) {
  return leaf == "q" || leaf == "k" || leaf == "v" || leaf == "output" || leaf == "wi" ||
         leaf == "wo" || numbered(leaf, "wi_");
}

std::vector<std::string_view> split_path(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t slash = text.find('/', start);
    if (slash == std::string_view::npos) slash = text.size();
    if (slash > start) out.push_back(text.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

size_t index_of(const std::vector<std::string>& keys, const std::string& key) {
  return static_cast<size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
}

}  // namespace

const std::vector<std::string>& pass_keys() {
  static const std::vector<std::string> keys = {"forward", "recompute", "backward", "optimizer",
                                                "other"};
  return keys;
}

const std::vector<std::string>& component_keys() {
  static const std::vector<std::string> keys = {"attention", "ffn", "moe", "embedding_and_loss",
                                                "other"};
  return keys;
}

OpNameParts classify_op_name(std::string_view op_name) {
  OpNameParts parts;
  std::vector<std::string_view> segments = split_path(op_name);
  parts.pass = segments.empty() ? "" : pass_of(segments.front());
  if (parts.pass.empty()) {
    parts.pass = "other";
    parts.component = "other";
    return parts;
  }
  parts.component = "other";
  for (size_t i = 1; i < segments.size(); ++i)
    if (!structural(segments[i])) {
      parts.component = component_of(segments[i]);
      if (i + 1 < segments.size()) parts.leaf = std::string(segments.back());
      break;
    }
  parts.layer_matmul =
      parts.pass != "optimizer" &&
      (parts.component == "attention" || parts.component == "ffn" || parts.component == "moe") &&
      weight_matmul_leaf(parts.leaf);
  return parts;
}

std::string op_name_pattern(std::string_view op_name) {
  std::string out;
  out.reserve(op_name.size());
  for (size_t start = 0;;) {
    const size_t slash = op_name.find('/', start);
    const std::string_view segment =
        op_name.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (numbered(segment, "layer_"))
      out += "layer_*";
    else if (numbered(segment, "pipeline_iter_"))
      out += "pipeline_iter_*";
    else
      out += segment;
    if (slash == std::string_view::npos) return out;
    out += '/';
    start = slash + 1;
  }
}

PartsSummary summarize_parts(const std::vector<sim::OpRecord>& ops, double peak_flops_per_device) {
  const std::vector<std::string>& passes = pass_keys();
  const std::vector<std::string>& components = component_keys();
  // [pass][component], filled in key order so the output order is fixed.
  std::vector<std::vector<PartTime>> grid(passes.size(), std::vector<PartTime>(components.size()));
  std::vector<bool> present(passes.size() * components.size(), false);
  double matmul_flops = 0, matmul_s = 0, attention_flops = 0, attention_s = 0;
  for (const sim::OpRecord& op : ops) {
    const OpNameParts what = classify_op_name(op.op_name);
    const size_t p = index_of(passes, what.pass), c = index_of(components, what.component);
    PartTime& part = grid[p][c];
    present[p * components.size() + c] = true;
    if (op.collective) {
      part.exposed_s += op.exposed_seconds;
      part.exposed_dcn_s += op.exposed_dcn_seconds;
      continue;
    }
    part.compute_s += op.seconds;
    part.flops += op.flops;
    const bool in_model_pass =
        what.pass == "forward" || what.pass == "recompute" || what.pass == "backward";
    if (what.layer_matmul) {
      matmul_flops += op.flops;
      matmul_s += op.seconds;
    } else if (in_model_pass && what.component == "attention") {
      attention_flops += op.flops;
      attention_s += op.seconds;
    }
  }
  PartsSummary summary;
  for (const std::string& key : passes) summary.by_pass.push_back({key, 0});
  for (const std::string& key : components) summary.by_component.push_back({key, 0});
  for (size_t p = 0; p < passes.size(); ++p)
    for (size_t c = 0; c < components.size(); ++c) {
      if (!present[p * components.size() + c]) continue;
      PartTime part = grid[p][c];
      part.pass = passes[p];
      part.component = components[c];
      summary.by_pass[p].seconds += part.seconds();
      summary.by_component[c].seconds += part.seconds();
      summary.parts.push_back(part);
    }
  auto utilization = [peak_flops_per_device](double flops, double seconds) {
    return seconds > 0 && peak_flops_per_device > 0 ? flops / (seconds * peak_flops_per_device)
                                                    : 0.0;
  };
  summary.layer_matmul_utilization = utilization(matmul_flops, matmul_s);
  summary.attention_core_utilization = utilization(attention_flops, attention_s);
  return summary;
}

}  // namespace podsim::reports
