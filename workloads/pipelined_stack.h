// The decoder stack of a dense Transformer as a GSPMD pipeline
// (training.pipeline_stages = S > 1; GSPMD section 3.3, contract in
// compiler/training/pipelined_forward.h).
//
// The layers split into S stages of layers/S consecutive layers. One stage
// (layers "layer_0" .. "layer_<layers/S - 1>" with their causal mask and
// relative-position buckets) is built as the computation "stage_body"; its
// weights become entry parameters "param/stage/<layer>/<block>/<tensor>" of
// shape [S, ...]: entry s of stacked "layer_j" is global layer s*layers/S + j.
// The stage dim of the weights and of the pipeline state [S, mb, L, M] goes
// on the mesh axis of `sharding.stage` (the state's other dims follow
// `activations`). Embedding, final norm and softmax stay outside.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "workloads/transformer_blocks.h"

namespace podsim::workloads {

struct PipelinedStackRequest {
  int64_t stages = 2;
  int64_t microbatches = 1;  // M: x's batch is M microbatches of B / M rows
  SourceLocation where;      // for errors (the workload file)
};

// x [B, L, M] (B = ctx.batch) -> the stack's output [B, L, M] in x's row order.
// UserError when layers do not divide into the stages, the model is not a
// dense decoder-only Transformer, or `sharding.stage` is missing or does
// not divide the stages.
InstrId run_pipelined_stack(TransformerContext& ctx, InstrId x,
                            const PipelinedStackRequest& request);

}  // namespace podsim::workloads
