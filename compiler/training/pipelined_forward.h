// GSPMD-style pipelining (Xu et al. 2021, GSPMD section 3.3): S stages as one stage body vectorised
// over a stage dim, stage weights stacked [S, ...], and a state buffer [S, mb, ...] shifted one
// stage per iteration (a collective-permute once partitioned); M + S - 1 iterations. Builders
// write ONE stage computation, create [S, ...] "param/" weights and call emit_pipeline(); with
// pipeline_stages > 1 build_training_step's `microbatches` is the pipeline's.
// The contract in full: docs/compiler.md#pipelining
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/module.h"

namespace podsim::compiler {

struct PipelineRequest {
  int64_t stages = 2;
  int64_t microbatches = 2;
  CompId stage_body = kNoId;             // in the module the builder points into
  InstrId inputs = kNoId;                // [M mb, ...] in the builder
  std::vector<InstrId> stacked_weights;  // [S, ...] each, in stage_body parameter order (1..)
  // XLA-text sharding of the state buffer [S, mb, ...], e.g. the stage dim
  // over the pipeline axis; "" leaves it to propagation.
  std::string state_sharding;
};

// Emits the pipelined forward; returns the outputs [M mb, ...]. UserError
// when the shapes do not fit the contract above.
InstrId emit_pipeline(ComputationBuilder& b, const Module& module, const PipelineRequest& request);

// UserError unless `forward` contains a pipeline emitted with `stages` stages.
void check_pipelined_forward(const Module& forward, int64_t stages);

}  // namespace podsim::compiler
