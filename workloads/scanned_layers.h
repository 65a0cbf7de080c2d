// model.layer_loop = scan: a stack of identical layers built as ONE counted
// while loop (jax.lax.scan over layer-stacked weights) instead of one copy
// per layer. The body is a period of P layers (P = 1 for dense stacks, the
// MoE period for stacks mixing dense and MoE layers); every weight the body
// asks for becomes one entry parameter "param/scan/<name>" of shape
// [layers / P, ...] (layer dim unsharded), sliced at the loop counter inside
// the body. The carry is (counter s32, x, the stack's attention extras, the
// encoder output for cross attention, stacked weights). compiler/training/while_autodiff.h
// differentiates it.
#pragma once

#include "workloads/transformer_blocks.h"

namespace podsim::workloads {

// Runs one stack's `layers` over x [B, L, M] as a scan (cross attention
// over `memory` where the plan says so); the body's ops and weights are
// named after the first period's layers ("fwd/layer_<i>/...",
// "param/scan/layer_<i>/..."). UserError at `where` when the layers do not
// repeat with a period dividing their count.
InstrId run_scanned_layers(TransformerContext& ctx, const std::vector<LayerPlan>& layers, InstrId x,
                           const AttentionExtras& extras, std::optional<InstrId> memory,
                           const SourceLocation& where);

// The period P of the scan body over `layers` (the smallest P dividing the
// count with layer i like layer i mod P); nullopt when none below the count.
std::optional<size_t> scan_period(const std::vector<LayerPlan>& layers);

}  // namespace podsim::workloads
