// What a custom-call costs, by its target. XLA's own markers are free; the
// fused attention and GEMM targets of the GPU backends are costed as the
// matmuls they are (from their operand shapes); TopK as the sort it is; a
// host-offload transfer by its bytes; any other target by the bytes it
// reads and writes, and counted as unknown (the report names them).
#pragma once

#include <optional>
#include <string_view>
#include <utility>

#include "compiler/ir/module.h"
#include "hw_models/core/core_model.h"

namespace podsim::sim {

enum class CustomCallKind {
  kMarker,  // Sharding, SPMD*Shape, StopGradient, annotate_device_placement, xla.sdy.*: no kernel
  kHostTransfer,       // MoveToHost / MoveToDevice: bytes over the host link
  kAttentionForward,   // fused attention (Transformer Engine, cuDNN): softmax(QK^T)V
  kAttentionBackward,  // its gradient
  kGemm,               // cuBLAS / cuBLASLt GEMM
  kTopK,               // TopK: a partial sort of the last dim
  kUnknown,
};

CustomCallKind classify_custom_call(std::string_view target);
// The call's kind, its frontend attributes included: JAX's host offload
// (annotate_device_placement with _xla_buffer_placement "pinned_host" or
// "device", which XLA lowers to MoveToHost / MoveToDevice) is a transfer.
CustomCallKind classify_custom_call(const compiler::Instruction& call);
// A transfer that leaves its result in host memory (MoveToHost, or a
// placement annotation to "pinned_host").
bool moves_to_host(const compiler::Instruction& call);

// Adds the MXU / VPU work of a custom-call of kind kAttention*, kGemm or
// kTopK to `query` (others add none). Shapes are read from the operands.
void add_custom_call_work(const compiler::Computation& computation,
                          const compiler::Instruction& call, CustomCallKind kind,
                          hw::OpQuery& query);

// HBM bytes (read, written) of podsim's flash attention calls: every operand
// once, k and v once per computed block (q blocks x kv blocks, causal: those
// on or below the diagonal), results once; nullopt for other instructions.
std::optional<std::pair<double, double>> flash_attention_traffic(
    const compiler::Computation& computation, const compiler::Instruction& call);

}  // namespace podsim::sim
