// GSPMD-style pipelining (Xu et al. 2021, GSPMD section 3.3): the layers of
// S stages are one stage body vectorised over a stage dim; the stage
// weights are stacked on a leading stage dim [S, ...] (sharded over the
// pipeline mesh axis), and a state buffer [S, mb, ...] is shifted by one
// stage every iteration (a concatenate of the next microbatch with
// state[0:S-1], which the partitioner turns into a collective-permute when
// the stage dim is sharded). After M + S - 1 iterations every microbatch has
// passed every stage; iteration t's last stage holds microbatch t - S + 1.
//
// Contract for model builders that want pipeline_stages = S > 1:
//   * write ONE stage as a computation in the module:
//       stage_body(activation [mb, ...], w_0 [...], ..., w_k [...]) -> activation [mb, ...]
//     with op_names "fwd/<scope>" (the ops vectorize.h supports);
//   * create the weights as entry parameters "param/<tensor>" of shape
//     [S, ...] (stage-stacked; shard dim 0 over the pipeline axis), the
//     activations input as [B = M mb, ...] ("input/..." or computed, e.g. an
//     embedding);
//   * call emit_pipeline(); it returns the last stage's outputs [B, ...] in
//     the input's row order, on which the builder computes the loss.
// Microbatch k is rows k, k+M, k+2M, ... of the batch (as build_training_step
// splits microbatches), so build_training_step must not split again: with
// pipeline_stages > 1 its `microbatches` is taken to be the pipeline's.
// Each iteration's ops are scoped "fwd/pipeline_iter_<t>/...", which remat
// treats as a layer (the shifted state is the checkpoint).
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
  CompId stage_body = kNoId;            // in the module the builder points into
  InstrId inputs = kNoId;               // [M mb, ...] in the builder
  std::vector<InstrId> stacked_weights; // [S, ...] each, in stage_body parameter order (1..)
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
