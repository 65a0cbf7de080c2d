// Training step from a forward graph: reverse-mode autodiff, the optimizer update as IR,
// rematerialization, gradient accumulation over microbatches and GSPMD-style pipelining, as ONE
// module that propagation and the SPMD partitioner consume like any other.
// op_name contract with the model builders (workloads/), kept by every pass: entry parameters
// "param/<tensor>" (weights; gradients are taken w.r.t. these only) and "input/<name>"; forward
// ops "fwd/<scope>", layer k's "fwd/layer_<k>/..." (what remat recognises); the forward root a
// scalar f32 loss. Added: "bwd/<scope>", "recompute/<scope>", "opt/<tensor>",
// "opt_state/<tensor>/<slot>". The full table: docs/compiler.md#op_name-contract
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/ir/module.h"
#include "compiler/sharding/mesh.h"

namespace podsim::compiler {

enum class OptimizerKind { kSgd, kAdam, kAdamW, kAdafactor };
enum class RematKind {
  kNone,      // keep every forward value the backward needs
  kFull,      // recompute each layer's forward in the backward pass
  kSelective  // named policy (remat_policy), e.g. "save_dots": keep matmul outputs only
};

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kAdafactor;
  double learning_rate = 1e-3;
  double beta1 = 0.0;  // Adafactor default 0 (no first moment); Adam uses 0.9
  double beta2 = 0.99;
  double epsilon = 1e-30;
  // AdamW's decoupled weight decay (Loshchilov & Hutter 2019); the others ignore it.
  double weight_decay = 0.0;
  // Adafactor: factor the second moment of rank >= 2 weights into row and
  // column statistics over the last two dims (Shazeer & Stern 2018).
  bool factored = true;
  // Adafactor update clipping (Shazeer & Stern section 6): the update u is
  // divided by max(1, RMS(u) / clipping_threshold); 0 disables clipping.
  double clipping_threshold = 1.0;
};

struct TrainingStepOptions {
  OptimizerOptions optimizer;
  // Shard optimizer state and the update like, or finer than, the weights
  // (GSPMD section 3.3 / "weight-update sharding"): updates are annotated
  // with the weight's sharding further split over the axes the weight is
  // replicated on, so gradients become reduce-scatters.
  bool weight_update_sharding = true;
  RematKind remat = RematKind::kNone;
  std::string remat_policy;  // kSelective only
  // Gradient accumulation: the forward module is built for ONE microbatch;
  // the step's "input/" parameters (same numbers) have microbatches x its
  // batch on dim 0 (training_step.cc: strided split, mean of the losses).
  int64_t microbatches = 1;
  // > 1: the forward must contain a pipeline built by emit_pipeline
  // (compiler/training/pipelined_forward.h: stage body + stage-stacked
  // weights) for this many stages; it already splits its microbatches, so
  // `microbatches` is not applied again.
  int64_t pipeline_stages = 1;
  // The mesh the weights' shardings were written against (mesh_split).
  // weight_update_sharding needs it to know which mesh axes a weight is
  // replicated on; without it updates keep the weight's sharding.
  std::optional<DeviceMesh> mesh;
};

struct TrainingStep {
  // Entry parameters: the forward's (same numbers first), then optimizer
  // slots. Root: tuple(loss, new weights in parameter order, new slots).
  Module module;
  // FLOPs of the recomputed forward ops (2 per MAC; dot and convolution
  // only, remat.h matmul_flops), for the report's HFU. Includes the while
  // loop bodies recomputed by their reverse loops (x trip count).
  double recomputed_flops = 0;
  // Number of recomputed ("recompute/") instructions.
  int64_t recomputed_instructions = 0;
};

// UserError when the forward module breaks the contract above (no scalar
// loss root, no "param/" parameters, an op autodiff does not support).
TrainingStep build_training_step(const Module& forward, const TrainingStepOptions& options);

}  // namespace podsim::compiler
