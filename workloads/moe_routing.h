// GShard MoE group sizes and top-k routing as IR (moe_layer.cc has the
// formulas and sources). Exposed for the MoE layer and its tests.
#pragma once

#include <cstdint>

#include "workloads/model_graph.h"
#include "workloads/workload.h"

namespace podsim::workloads {

struct MoeDims {
  int64_t groups = 0;      // G
  int64_t group_size = 0;  // S tokens per group
  int64_t capacity = 0;    // C = max(1, ceil(capacity_factor x top_k x S / E))
};

// G x S = `tokens`: S = model.group_size when set (UserError unless it
// divides), else G = `experts_axis_size` groups (GShard: groups = cores).
MoeDims moe_dims(const ModelSpec& model, int64_t tokens, int64_t experts_axis_size);

struct MoeRouting {
  InstrId combine;   // f32 [G,S,E,C]: the normalized gate of each kept (token, expert, slot)
  InstrId dispatch;  // activation dtype [G,S,E,C]: 1 where combine > 0
};

// Top-k routing of `gates` f32 [G,S,E] (softmax outputs) with capacity.
MoeRouting top_k_routing(ModelGraph& graph, InstrId gates, int64_t top_k, const MoeDims& dims);

}  // namespace podsim::workloads
