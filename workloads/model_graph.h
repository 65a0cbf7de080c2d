// ModelGraph: a thin layer over ComputationBuilder for the model builders:
// numbered entry parameters with op_names ("param/...", "input/..."), f32
// weights converted to the activation dtype at use, "Sharding" annotations,
// einsum by dim letters, and the few composite ops every model needs
// (layer norm, softmax, GELU, one-hot). Shapes only: no tensor constants, so
// building the 128-layer 1T model stays cheap.
#pragma once

#include <cassert>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/module.h"

namespace podsim::workloads {

using compiler::DType;
using compiler::InstrId;

// A weight as the blocks asked for it (name without "param/", dims, sharding
// text), in creation order: pipelining stacks a stage body's weights.
struct WeightRecord {
  std::string name;
  std::vector<int64_t> dims;
  std::optional<std::string> sharding;
};

class ModelGraph {
 public:
  // Builds one computation of `module` named `computation_name`: the entry
  // ("forward", finish()) or a called computation such as a pipeline stage
  // body (build_computation()).
  ModelGraph(compiler::Module& module, DType activation_dtype, DType param_dtype,
             std::string computation_name = "forward");

  compiler::ComputationBuilder& builder() { return builder_; }
  DType activation_dtype() const { return activation_; }
  DType param_dtype() const { return param_; }
  compiler::Module& module() { return module_; }
  const compiler::Shape& shape(InstrId id) const { return builder_.shape(id); }
  std::vector<int64_t> dims(InstrId id) const { return builder_.shape(id).dims(); }

  // Ops added from now on get op_name "fwd/<scope>".
  void set_scope(const std::string& scope) { builder_.set_op_name_scope("fwd/" + scope); }

  // A trainable weight: entry parameter "param/<name>" of the param dtype with
  // `sharding` (XLA text, if any), returned converted to the activation dtype.
  InstrId weight(const std::string& name, std::vector<int64_t> dims,
                 const std::optional<std::string>& sharding);
  // The same parameter unconverted (param dtype): stage-stacked weights, whose
  // conversion happens inside the stage body.
  InstrId weight_parameter(const std::string& name, std::vector<int64_t> dims,
                           const std::optional<std::string>& sharding);
  // Every weight() so far, in parameter order.
  const std::vector<WeightRecord>& weights() const { return weights_; }
  // From now on weight_parameter() records the weight and returns
  // source(index in weights(), record) instead of adding a parameter: a scan
  // body reads its layer's slice of the layer-stacked weights.
  using WeightSource = std::function<InstrId(size_t, const WeightRecord&)>;
  void set_weight_source(WeightSource source) { weight_source_ = std::move(source); }
  // A computation parameter outside the op_name contract (a stage body's
  // activation argument); numbered like the others.
  InstrId argument(const std::string& name, compiler::Shape shape);
  // A step input: entry parameter "input/<name>".
  InstrId input(const std::string& name, compiler::Shape shape,
                const std::optional<std::string>& sharding);
  // custom-call "Sharding" (XLA with_sharding_constraint); identity if none.
  InstrId annotate(InstrId value, const std::optional<std::string>& sharding);

  // Einsum by dim letters, e.g. "BLM,MND->BLND": letters in both operands and
  // the output are batch dims, in both operands only are contracted, in one
  // operand and the output are free. The dot's natural output order (batch,
  // lhs free, rhs free) is transposed to the requested one when it differs.
  // `name` (optional) makes the op_name "<scope>/<name>" (e.g. fwd/layer_0/ffn/wi_0).
  // The result dtype is the activation dtype unless `result` says otherwise.
  InstrId einsum(const std::string& spec, InstrId lhs, InstrId rhs, const std::string& name = "",
                 std::optional<DType> result = std::nullopt);

  // Scalar `value` of `dtype` broadcast to `dims`.
  InstrId full(double value, std::vector<int64_t> dims, DType dtype);
  InstrId full_like(double value, InstrId like) {
    return full(value, dims(like), shape(like).dtype());
  }
  // Broadcast `value` into `out_dims`, value's dims landing on `dimensions`.
  InstrId broadcast(InstrId value, std::vector<int64_t> out_dims, std::vector<int64_t> dimensions) {
    return builder_.broadcast(value, std::move(out_dims), std::move(dimensions));
  }
  InstrId binary(compiler::Opcode op, InstrId a, InstrId b) { return builder_.binary(op, a, b); }
  InstrId unary(compiler::Opcode op, InstrId a) { return builder_.unary(op, a); }
  InstrId convert(InstrId a, DType to) {
    return shape(a).dtype() == to ? a : builder_.convert(a, to);
  }
  // Reduces `dimensions` with add / maximum / minimum.
  InstrId reduce(compiler::Opcode op, InstrId value, std::vector<int64_t> dimensions);
  // Broadcast of a reduction result back over the reduced trailing dim.
  InstrId expand_last(InstrId reduced, const std::vector<int64_t>& full_dims);

  // (x - mean) * rsqrt(var + 1e-6) * scale over the last dim (scale only,
  // no bias: the 2 M L + M term of the parameter count).
  InstrId layer_norm(InstrId x, InstrId scale);
  // The value of x with no gradient flowing back (custom-call
  // kStopGradientTarget; tf.stop_gradient).
  InstrId stop_gradient(InstrId x);
  // x * rsqrt(mean(x^2) + 1e-6) * scale over the last dim (no centering).
  InstrId rms_norm(InstrId x, InstrId scale);
  // Softmax over the last dim, as exp(x - logsumexp(x)) (see the .cc).
  InstrId softmax(InstrId x);
  // GELU, tanh form: 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))
  // (Hendrycks & Gimpel 2016, as Lingvo/T5).
  InstrId gelu(InstrId a);
  InstrId relu(InstrId a);
  // One-hot of integer `indices` [...] -> [..., depth] of `dtype`
  // (iota compare; indices outside [0, depth) give a zero row).
  InstrId one_hot(InstrId indices, int64_t depth, DType dtype);

  // Finishes the entry computation with `root` and sets it as the entry.
  void finish(InstrId root, const std::string& name);
  // Finishes a non-entry computation with `root`; returns its id in the module.
  compiler::CompId build_computation(InstrId root);

 private:
  compiler::CompId reducer(compiler::Opcode op, DType dtype);
  // Mean over the last dim (the norms' reductions).
  InstrId mean_last(InstrId x);
  InstrId divide_by_root(InstrId x, InstrId mean_square, InstrId scale);

  compiler::Module& module_;
  compiler::ComputationBuilder builder_;
  DType activation_;
  DType param_;
  int64_t next_parameter_ = 0;
  std::map<std::pair<compiler::Opcode, DType>, compiler::CompId> reducers_;
  std::vector<WeightRecord> weights_;
  WeightSource weight_source_;
};

}  // namespace podsim::workloads
