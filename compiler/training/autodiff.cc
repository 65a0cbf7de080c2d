// Reverse-mode autodiff driver (see autodiff.h): activity analysis, the
// reverse sweep with adjoint accumulation, tuples and while loops.
#include "compiler/training/autodiff.h"

#include <fmt/format.h>

#include <unordered_map>

#include "common/error.h"
#include "compiler/ir/flash_attention.h"
#include "compiler/training/vjp_rules.h"
#include "compiler/training/while_autodiff.h"

namespace podsim::compiler {

using training::ReducerCache;

std::vector<InstrId> copy_instructions(ComputationBuilder& builder, const Computation& source,
                                       const std::vector<InstrId>& parameter_values) {
  std::vector<InstrId> map(static_cast<size_t>(source.size()), kNoId);
  for (InstrId i = 0; i < source.size(); ++i) {
    const Instruction& in = source.instr(i);
    if (in.opcode == Opcode::kParameter) {
      map[static_cast<size_t>(i)] =
          parameter_values.at(static_cast<size_t>(in.attrs.parameter_number));
      continue;
    }
    Instruction clone = in;
    for (InstrId& op : clone.operands) op = map[static_cast<size_t>(op)];
    map[static_cast<size_t>(i)] = builder.add(std::move(clone));
  }
  return map;
}

ForwardCopy copy_forward(ComputationBuilder& builder, Module& module, const Computation& source,
                         const std::vector<InstrId>& parameter_values) {
  ForwardCopy copy;
  copy.map.assign(static_cast<size_t>(source.size()), kNoId);
  for (InstrId i = 0; i < source.size(); ++i) {
    const Instruction& in = source.instr(i);
    if (in.opcode == Opcode::kParameter) {
      copy.map[static_cast<size_t>(i)] =
          parameter_values.at(static_cast<size_t>(in.attrs.parameter_number));
      continue;
    }
    if (in.opcode == Opcode::kWhile) {
      if (auto recorded = emit_recording_while(builder, module, source, i, copy.map, copy.loops)) {
        copy.map[static_cast<size_t>(i)] = *recorded;
        continue;
      }
    }
    Instruction clone = in;
    for (InstrId& op : clone.operands) op = copy.map[static_cast<size_t>(op)];
    copy.map[static_cast<size_t>(i)] = builder.add(std::move(clone));
  }
  return copy;
}

namespace {

// True when `id` is a broadcast of a scalar constant 0 (training::filled).
bool is_zero_fill(ComputationBuilder& b, InstrId id) {
  const Instruction& in = b.computation().instr(id);
  if (in.opcode != Opcode::kBroadcast) return false;
  const Instruction& scalar = b.computation().instr(in.operand(0));
  return scalar.opcode == Opcode::kConstant && scalar.attrs.literal && scalar.shape.is_scalar() &&
         scalar.attrs.literal->scalar_value() == 0.0;
}

// a + g. When one side is dynamic-update-slice(zeros, u, s) (the adjoint of
// a dynamic-slice: one layer's gradient of layer-stacked weights) the sum is
// dynamic-update-slice(a, dynamic-slice(a, s) + u, s), as XLA's algebraic
// simplifier rewrites it: the slice is updated in place instead of adding
// two whole stacks.
InstrId add_adjoints(ComputationBuilder& b, InstrId a, InstrId g) {
  auto sparse = [&](InstrId id) {
    const Instruction& in = b.computation().instr(id);
    return in.opcode == Opcode::kDynamicUpdateSlice && is_zero_fill(b, in.operand(0));
  };
  if (sparse(a) && !sparse(g)) std::swap(a, g);
  if (!sparse(g) || b.shape(a) != b.shape(g)) return b.binary(Opcode::kAdd, a, g);
  const Instruction dus = b.computation().instr(g);  // a copy: b grows below
  const InstrId update = dus.operand(1);
  const std::vector<InstrId> starts(dus.operands.begin() + 2, dus.operands.end());
  InstrId current = b.dynamic_slice(a, starts, b.shape(update).dims());
  return b.dynamic_update_slice(a, b.binary(Opcode::kAdd, current, update), starts);
}

bool has_floating_leaf(const Shape& shape) {
  for (const Shape* leaf : shape.leaves())
    if (is_floating(leaf->dtype())) return true;
  return false;
}

class ReverseSweep {
 public:
  ReverseSweep(ComputationBuilder& b, ReducerCache& reducers, const GradientRequest& request)
      : b_(b),
        reducers_(reducers),
        request_(request),
        src_(*request.source),
        residuals_(src_, *request.forward_map, request.remat, b) {}

  GradientResult run() {
    analyse_activity();
    const size_t n = static_cast<size_t>(src_.size());
    adjoint_.assign(n, kNoId);
    InstrId root = src_.root();
    if (src_.instr(root).shape.is_tuple()) {
      element_adjoint_[root] = request_.root_element_adjoints;
    } else {
      adjoint_[static_cast<size_t>(root)] = request_.root_adjoint;
    }
    const std::string saved_scope = b_.op_name_scope();
    for (InstrId i = root; i >= 0; --i) {
      if (!active_[static_cast<size_t>(i)]) continue;
      const Instruction& in = src_.instr(i);
      b_.set_op_name_scope(fmt::format("bwd/{}", training::strip_fwd_prefix(in.op_name)));
      visit(i, in);
    }
    b_.set_op_name_scope(saved_scope);

    GradientResult result;
    for (InstrId p : src_.parameters()) {
      size_t number = static_cast<size_t>(src_.instr(p).attrs.parameter_number);
      if (result.parameter_adjoints.size() <= number) {
        result.parameter_adjoints.resize(number + 1, kNoId);
        result.parameter_element_adjoints.resize(number + 1);
      }
      result.parameter_adjoints[number] = adjoint_[static_cast<size_t>(p)];
      auto it = element_adjoint_.find(p);
      if (it != element_adjoint_.end()) result.parameter_element_adjoints[number] = it->second;
    }
    result.recomputed_flops = residuals_.recomputed_flops() + recomputed_flops_;
    result.recomputed_instructions =
        residuals_.recomputed_instructions() + recomputed_instructions_;
    return result;
  }

 private:
  // active = floating, depends on a parameter and reaches the root.
  void analyse_activity() {
    const size_t n = static_cast<size_t>(src_.size());
    std::vector<bool> depends(n, false), useful(n, false);
    for (InstrId i = 0; i < src_.size(); ++i) {
      const Instruction& in = src_.instr(i);
      bool d = in.opcode == Opcode::kParameter && wrt(in.attrs.parameter_number);
      for (InstrId op : in.operands) d = d || depends[static_cast<size_t>(op)];
      if (in.opcode == Opcode::kCustomCall && in.attrs.custom_call_target == kStopGradientTarget)
        d = false;
      depends[static_cast<size_t>(i)] = d;
    }
    useful[static_cast<size_t>(src_.root())] = true;
    for (InstrId i = src_.root(); i >= 0; --i) {
      if (!useful[static_cast<size_t>(i)]) continue;
      for (InstrId op : src_.instr(i).operands) useful[static_cast<size_t>(op)] = true;
    }
    active_.assign(n, false);
    for (size_t i = 0; i < n; ++i)
      active_[i] = depends[i] && useful[i] && has_floating_leaf(src_.instructions()[i].shape);
  }

  bool wrt(int64_t parameter_number) const {
    const std::vector<bool>& w = request_.wrt_parameters;
    return w.empty() || (static_cast<size_t>(parameter_number) < w.size() &&
                         w[static_cast<size_t>(parameter_number)]);
  }

  void accumulate(InstrId target, InstrId g) {
    if (g == kNoId || !active_[static_cast<size_t>(target)]) return;
    if (src_.instr(target).shape.is_tuple())
      throw UserError(src_.instr(target).location,
                      fmt::format("autodiff: nested tuple value '{}' is not supported",
                                  src_.instr(target).name),
                      "");
    InstrId& slot = adjoint_[static_cast<size_t>(target)];
    slot = slot == kNoId ? g : add_adjoints(b_, slot, g);
  }

  void accumulate_element(InstrId target, int64_t index, InstrId g) {
    if (g == kNoId || !active_[static_cast<size_t>(target)]) return;
    std::vector<InstrId>& elements = element_adjoint_[target];
    elements.resize(src_.instr(target).shape.tuple_shapes().size(), kNoId);
    InstrId& slot = elements[static_cast<size_t>(index)];
    slot = slot == kNoId ? g : add_adjoints(b_, slot, g);
  }

  void visit(InstrId id, const Instruction& in) {
    if (in.opcode == Opcode::kParameter) return;
    if (in.shape.is_tuple()) {
      auto it = element_adjoint_.find(id);
      if (it == element_adjoint_.end()) return;
      std::vector<InstrId> elements = it->second;
      elements.resize(in.shape.tuple_shapes().size(), kNoId);
      if (in.opcode == Opcode::kTuple) {
        for (int k = 0; k < in.operand_count(); ++k) {
          const Instruction& element = src_.instr(in.operand(k));
          if (element.shape.is_tuple()) {
            if (elements[static_cast<size_t>(k)] != kNoId)
              throw UserError(in.location, "autodiff: nested tuples are not supported", "");
            continue;
          }
          accumulate(in.operand(k), elements[static_cast<size_t>(k)]);
        }
        return;
      }
      if (in.opcode == Opcode::kWhile) {
        std::vector<bool> init_active;
        const Instruction& init = src_.instr(in.operand(0));
        if (init.opcode == Opcode::kTuple)
          for (InstrId op : init.operands) init_active.push_back(active_[static_cast<size_t>(op)]);
        WhileAdjoint w = emit_while_adjoint(
            {b_, reducers_, src_, id, request_.loops, request_.remat, init_active}, elements);
        recomputed_flops_ += w.recomputed_flops;
        recomputed_instructions_ += w.recomputed_instructions;
        for (size_t k = 0; k < w.init_element_adjoints.size(); ++k)
          accumulate_element(in.operand(0), static_cast<int64_t>(k), w.init_element_adjoints[k]);
        return;
      }
      if (is_flash_attention(in)) {
        training::VjpContext ctx{b_, reducers_, *reducers_.module(), src_, residuals_, active_};
        for (const training::OperandAdjoint& c : training::flash_attention_vjp(ctx, id, elements))
          accumulate(in.operand(c.operand), c.adjoint);
        return;
      }
      throw UserError(in.location,
                      fmt::format("autodiff: cannot differentiate tuple-shaped '{}' ({})", in.name,
                                  opcode_name(in.opcode)),
                      "");
    }
    InstrId g = adjoint_[static_cast<size_t>(id)];
    if (g == kNoId) return;
    if (in.opcode == Opcode::kGetTupleElement) {
      accumulate_element(in.operand(0), in.attrs.tuple_index, g);
      return;
    }
    training::VjpContext ctx{b_, reducers_, *reducers_.module(), src_, residuals_, active_};
    for (const training::OperandAdjoint& c : training::array_vjp(ctx, id, g))
      accumulate(in.operand(c.operand), c.adjoint);
  }

  ComputationBuilder& b_;
  ReducerCache& reducers_;
  const GradientRequest& request_;
  const Computation& src_;
  ResidualProvider residuals_;
  std::vector<bool> active_;
  std::vector<InstrId> adjoint_;
  std::unordered_map<InstrId, std::vector<InstrId>> element_adjoint_;
  double recomputed_flops_ = 0;
  int64_t recomputed_instructions_ = 0;
};

}  // namespace

GradientResult emit_gradients(ComputationBuilder& builder, ReducerCache& reducers,
                              const GradientRequest& request) {
  return ReverseSweep(builder, reducers, request).run();
}

Module build_gradient_module(const Module& forward, RematChoice remat) {
  Module module = forward.copy_emptying(forward.entry_id());  // the entry is rebuilt below
  ReducerCache reducers(&module);
  const Computation& source = forward.entry();
  ComputationBuilder b(source.name(), &module);
  std::vector<InstrId> params;
  for (InstrId p : source.parameters()) {
    Instruction copy = source.instr(p);
    params.push_back(b.add(std::move(copy)));
  }
  ForwardCopy forward_copy = copy_forward(b, module, source, params);
  const std::vector<InstrId>& map = forward_copy.map;
  const Shape& loss_shape = source.root_instr().shape;
  if (!loss_shape.is_array())
    throw UserError(source.root_instr().location,
                    "autodiff: the forward root must be an array (the loss)", "");
  b.set_op_name_scope("bwd/seed");
  GradientRequest request;
  request.source = &source;
  request.forward_map = &map;
  request.loops = &forward_copy.loops;
  request.root_adjoint = training::filled(b, loss_shape, 1.0);
  request.remat = remat;
  GradientResult grads = emit_gradients(b, reducers, request);
  b.set_op_name_scope("bwd/zeros");
  std::vector<InstrId> outputs{map[static_cast<size_t>(source.root())]};
  for (InstrId p : source.parameters()) {
    const Instruction& in = source.instr(p);
    if (!in.shape.is_array() || !is_floating(in.shape.dtype())) continue;
    size_t number = static_cast<size_t>(in.attrs.parameter_number);
    InstrId g = number < grads.parameter_adjoints.size() ? grads.parameter_adjoints[number] : kNoId;
    outputs.push_back(g != kNoId ? g : training::filled(b, in.shape, 0.0));
  }
  InstrId root = b.tuple(outputs);
  Computation built = std::move(b).build(root);
  training::make_names_unique(built);
  module.mutable_computation(module.entry_id()) = std::move(built);
  return module;
}

}  // namespace podsim::compiler
