// Where the step's time goes by model part (`podsim run`: "time by part"). summarize_parts()
// groups the reported device's ops by (pass, component) of their op_name
// <pass>/[encoder|decoder/][layer_<i>/]<component>/.../<leaf>, layers folded together, and adds
// each collective's exposed wait to the part that issued it; ops without such names land in pass
// "other". Layer-matmul and attention-core utilizations compare with GShard's kernels
// (docs/reference/measurements.md#gshard-moe). docs/simulator.md#time-by-part
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/timeline.h"

namespace podsim::reports {

// What an op_name says about the op; empty fields when it says nothing.
struct OpNameParts {
  std::string pass;           // "forward" | "recompute" | "backward" | "optimizer" | "other"
  std::string component;      // "attention" | "ffn" | "moe" | "embedding_and_loss" | "other"
  std::string leaf;           // last segment ("wi_0", "scores", ...), "" if none
  bool layer_matmul = false;  // leaf names a layer weight's matmul (see above)
};

OpNameParts classify_op_name(std::string_view op_name);

// "fwd/layer_12/attention" -> "fwd/layer_*/attention": the op_name with the
// number of each layer_<n> and pipeline_iter_<n> segment replaced by '*', so
// the same op of every layer gets one name (the report's op groups).
std::string op_name_pattern(std::string_view op_name);

// The fixed keys, in report order (json/csv columns are the same for every run).
const std::vector<std::string>& pass_keys();
const std::vector<std::string>& component_keys();

struct PartTime {
  std::string pass;
  std::string component;
  double compute_s = 0;  // compute-stream busy time of its ops
  double exposed_s = 0;  // compute-stream waits on its collectives
  double exposed_dcn_s = 0;  // of exposed_s, DCN time (multi-slice runs)
  double flops = 0;      // executed FLOPs of its compute ops
  double seconds() const { return compute_s + exposed_s; }
  // Achieved FLOP/s while its ops run; 0 without compute time.
  double flops_per_second() const { return compute_s > 0 ? flops / compute_s : 0.0; }
};

struct NamedSeconds {
  std::string name;
  double seconds = 0;
};

struct PartsSummary {
  std::vector<PartTime> parts;             // present parts, pass then component order
  std::vector<NamedSeconds> by_pass;       // every pass_keys() entry
  std::vector<NamedSeconds> by_component;  // every component_keys() entry
  // FLOPs / (compute seconds x peak); 0 when the group has no compute time.
  double layer_matmul_utilization = 0;
  double attention_core_utilization = 0;
};

PartsSummary summarize_parts(const std::vector<sim::OpRecord>& ops, double peak_flops_per_device);

}  // namespace podsim::reports
