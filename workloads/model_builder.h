// Model builders: a Workload's `model:` + `sharding:` sections ->
// the one-device forward module with loss, the named tensors annotated by
// mesh_split, plus the model-level facts the report needs.
//
// The module follows compiler/training/training_step.h's op_name contract
// ("param/<tensor>", "input/<name>", "fwd/<scope>", scalar f32 loss root).
#pragma once

#include <cstdint>

#include "compiler/ir/module.h"
#include "compiler/sharding/mesh.h"
#include "workloads/workload.h"

namespace podsim::workloads {

struct ModelInfo {
  int64_t parameters = 0;       // trainable parameter count (published totals)
  int64_t tokens_per_step = 0;  // global_batch x seq_len
  // Model FLOPs of one training step, global: 6 x P x tokens plus attention
  // (scores and context: 12 x layers x seq_len x heads x head_dim per token
  // with backward), no remat (the MFU numerator; PaLM appendix B).
  double model_flops_per_step = 0;
  int64_t layers = 0;
  // Parameters one token meets: an MoE layer counts top_k experts, not all
  // E (model_info.h); equals `parameters` for dense and HLO models.
  int64_t activated_parameters = 0;
};

struct BuiltModel {
  compiler::Module module;  // forward + loss, sharding annotations on the named tensors
  compiler::DeviceMesh mesh;
  ModelInfo info;
};

// UserError (with the workload file's position) when the model cannot be
// built: unknown kind, dims that do not divide where the sharding needs it,
// an HLO file that does not parse, ...
BuiltModel build_model(const Workload& workload);

}  // namespace podsim::workloads
