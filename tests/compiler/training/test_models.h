// Small forward modules used by several training tests, following the
// training_step.h op_name contract.
#pragma once

#include "compiler/ir/module.h"

namespace podsim::compiler::testing {

// A 2-layer Transformer-ish MLP block stack on x [batch, d=8]:
//   layer l: h = x W_in (d x 16); a = tanh(h) * h; y = a W_out (16 x d);
//            r = x + y; x' = r * rsqrt(mean(r^2) + 1) * scale   (RMS norm)
//   loss = mean over batch and d of (x_final - target)^2
// Parameters: layer_{0,1}/{w_in, w_out, scale} ("param/"), then "input/x",
// "input/target". Ops are scoped "fwd/layer_<l>/..." and "fwd/loss".
Module two_layer_mlp(DType dtype, int64_t batch = 4);
// The same block stacked `layers` times (two_layer_mlp = layers 2).
Module mlp_stack(DType dtype, int64_t batch, int64_t layers);

}  // namespace podsim::compiler::testing
