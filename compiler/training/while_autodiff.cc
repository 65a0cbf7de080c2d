// Autodiff of counted while loops (see while_autodiff.h for the form and
// the recording / reverse-loop scheme).
#include "compiler/training/while_autodiff.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "compiler/training/autodiff.h"

namespace podsim::compiler {

namespace {

struct CountedLoop {
  int64_t counter_index = 0;
  int64_t counter_start = 0;
  int64_t trip_count = 0;
  std::vector<int64_t> stacked;  // elements the body changes
};

bool is_gte_of_param(const Computation& c, InstrId id, int64_t index) {
  const Instruction& in = c.instr(id);
  return in.opcode == Opcode::kGetTupleElement && in.attrs.tuple_index == index &&
         c.instr(in.operand(0)).opcode == Opcode::kParameter;
}

std::optional<double> constant_value(const Instruction& in) {
  if (in.opcode != Opcode::kConstant || !in.attrs.literal || !in.shape.is_scalar())
    return std::nullopt;
  return in.attrs.literal->scalar_value();
}

std::optional<CountedLoop> match_counted_loop(const Module& module, const Computation& source,
                                              const Instruction& w) {
  const Instruction& init = source.instr(w.operand(0));
  if (init.opcode != Opcode::kTuple) return std::nullopt;
  for (const Shape& s : w.shape.tuple_shapes())
    if (s.is_tuple()) return std::nullopt;
  const Computation& cond = module.computation(w.while_condition());
  const Instruction& croot = cond.root_instr();
  if (croot.opcode != Opcode::kCompare || croot.attrs.comparison != ComparisonDirection::kLt)
    return std::nullopt;
  const Instruction& counter = cond.instr(croot.operand(0));
  if (counter.opcode != Opcode::kGetTupleElement ||
      cond.instr(counter.operand(0)).opcode != Opcode::kParameter)
    return std::nullopt;
  auto limit = constant_value(cond.instr(croot.operand(1)));
  CountedLoop loop;
  loop.counter_index = counter.attrs.tuple_index;
  auto start = constant_value(source.instr(init.operand(static_cast<int>(loop.counter_index))));
  if (!limit || !start || !is_integral(counter.shape.dtype())) return std::nullopt;
  const Computation& body = module.computation(w.while_body());
  const Instruction& broot = body.root_instr();
  if (broot.opcode != Opcode::kTuple || broot.operand_count() != init.operand_count())
    return std::nullopt;
  const Instruction& step = body.instr(broot.operand(static_cast<int>(loop.counter_index)));
  if (step.opcode != Opcode::kAdd) return std::nullopt;
  bool increments = false;
  for (int side = 0; side < 2; ++side) {
    auto one = constant_value(body.instr(step.operand(1 - side)));
    increments |= is_gte_of_param(body, step.operand(side), loop.counter_index) && one && *one == 1;
  }
  if (!increments) return std::nullopt;
  loop.counter_start = static_cast<int64_t>(*start);
  loop.trip_count = static_cast<int64_t>(*limit) - loop.counter_start;
  if (loop.trip_count < 1) return std::nullopt;
  for (int64_t j = 0; j < broot.operand_count(); ++j)
    if (!is_gte_of_param(body, broot.operand(static_cast<int>(j)), j)) loop.stacked.push_back(j);
  return loop;
}

std::vector<int64_t> prepend(int64_t head, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out{head};
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

// Start indices [index, 0, 0, ...] for a stack of rank `rank`.
std::vector<InstrId> stack_index(ComputationBuilder& b, InstrId index, int rank) {
  std::vector<InstrId> starts{index};
  InstrId zero = b.scalar_constant(b.shape(index).dtype(), 0);
  for (int d = 1; d < rank; ++d) starts.push_back(zero);
  return starts;
}

// Elements of the loop read in the body only as dynamic-slice [counter, 0,
// ...] with size 1 in dim 0 (besides passing through the root): per
// element, true when so.
std::vector<bool> sliced_at_counter(const Computation& body, int64_t n, int64_t counter_index) {
  std::vector<bool> sliced(static_cast<size_t>(n), true), read(static_cast<size_t>(n), false);
  const InstrId root = body.root();
  for (InstrId id = 0; id < body.size(); ++id) {
    const Instruction& in = body.instr(id);
    if (in.opcode != Opcode::kGetTupleElement ||
        body.instr(in.operand(0)).opcode != Opcode::kParameter)
      continue;
    const auto j = static_cast<size_t>(in.attrs.tuple_index);
    if (j >= sliced.size()) continue;
    for (InstrId u = 0; u < body.size(); ++u) {
      const Instruction& user = body.instr(u);
      for (int k = 0; k < user.operand_count(); ++k) {
        if (user.operand(k) != id) continue;
        if (u == root) continue;
        bool ok = user.opcode == Opcode::kDynamicSlice && k == 0 &&
                  !user.attrs.dynamic_slice_sizes.empty() &&
                  user.attrs.dynamic_slice_sizes[0] == 1 &&
                  is_gte_of_param(body, user.operand(1), counter_index);
        for (int d = 2; ok && d < user.operand_count(); ++d) {
          auto zero = constant_value(body.instr(user.operand(d)));
          ok = zero && *zero == 0;
        }
        sliced[j] = sliced[j] && ok;
        read[j] = true;
      }
    }
  }
  for (size_t j = 0; j < sliced.size(); ++j) sliced[j] = sliced[j] && read[j];
  return sliced;
}

CompId add_built(Module& module, Computation c) {
  training::make_names_unique(c);
  c.set_name(fmt::format("{}.{}", c.name(), module.computation_count()));
  return module.add_computation(std::move(c));
}

}  // namespace

std::optional<InstrId> emit_recording_while(ComputationBuilder& b, Module& module,
                                            const Computation& source, InstrId while_id,
                                            const std::vector<InstrId>& map,
                                            WhileRecordings& recordings) {
  const Instruction& w = source.instr(while_id);
  std::optional<CountedLoop> loop = match_counted_loop(module, source, w);
  if (!loop) return std::nullopt;
  const Computation body = module.computation(w.while_body());  // copies: the module grows below
  Computation cond = module.computation(w.while_condition());
  const Instruction& init = source.instr(w.operand(0));
  const int64_t n = init.operand_count();
  const std::string saved_scope = b.op_name_scope();
  b.set_op_name_scope(w.op_name);

  std::vector<Shape> extended = w.shape.tuple_shapes();
  for (int64_t j : loop->stacked) {
    const Shape& s = w.shape.tuple_shape(static_cast<int>(j));
    extended.push_back(Shape(s.dtype(), prepend(loop->trip_count, s.dims())));
  }
  const Shape extended_shape = Shape::tuple(extended);

  // Recording body: stack[s][i - c0] = element before the iteration, then the body.
  ComputationBuilder rb(body.name() + ".record", &module);
  InstrId p = rb.parameter(0, extended_shape, "carry");
  std::vector<InstrId> elements;
  for (int64_t j = 0; j < n; ++j) elements.push_back(rb.get_tuple_element(p, j));
  InstrId counter = elements[static_cast<size_t>(loop->counter_index)];
  InstrId index = rb.binary(
      Opcode::kSubtract, counter,
      rb.scalar_constant(rb.shape(counter).dtype(), static_cast<double>(loop->counter_start)));
  std::vector<InstrId> new_stacks;
  for (size_t s = 0; s < loop->stacked.size(); ++s) {
    InstrId stack = rb.get_tuple_element(p, n + static_cast<int64_t>(s));
    InstrId e = elements[static_cast<size_t>(loop->stacked[s])];
    InstrId one = rb.reshape(e, prepend(1, rb.shape(e).dims()));
    new_stacks.push_back(
        rb.dynamic_update_slice(stack, one, stack_index(rb, index, rb.shape(stack).rank())));
  }
  std::vector<InstrId> body_map = copy_instructions(rb, body, {rb.tuple(elements)});
  std::vector<InstrId> outs;
  for (InstrId op : body.root_instr().operands) outs.push_back(body_map[static_cast<size_t>(op)]);
  outs.insert(outs.end(), new_stacks.begin(), new_stacks.end());
  CompId record_body = add_built(module, std::move(rb).build(rb.tuple(outs)));
  for (InstrId c : cond.parameters()) cond.mutable_instr(c).shape = extended_shape;
  cond.set_name(cond.name() + ".record");
  CompId record_cond = add_built(module, std::move(cond));

  std::vector<InstrId> init_values;
  for (InstrId op : init.operands) init_values.push_back(map[static_cast<size_t>(op)]);
  for (size_t s = 0; s < loop->stacked.size(); ++s)
    init_values.push_back(training::filled(b, extended[static_cast<size_t>(n) + s], 0.0));
  InstrId recorded = b.while_loop(b.tuple(init_values), record_cond, record_body);
  std::vector<InstrId> results;
  for (int64_t j = 0; j < n; ++j) results.push_back(b.get_tuple_element(recorded, j));
  InstrId result = b.tuple(results);
  b.set_op_name_scope(saved_scope);

  WhileRecording rec;
  rec.recorded_while = recorded;
  rec.element_count = n;
  rec.counter_index = loop->counter_index;
  rec.counter_start = loop->counter_start;
  rec.trip_count = loop->trip_count;
  rec.stacked_elements = loop->stacked;
  recordings[while_id] = rec;
  return result;
}

WhileAdjoint emit_while_adjoint(const WhileAdjointContext& ctx,
                                const std::vector<InstrId>& result_adjoints) {
  const Instruction& w = ctx.source.instr(ctx.while_id);
  auto found =
      ctx.recordings ? ctx.recordings->find(ctx.while_id) : WhileRecordings::const_iterator{};
  if (!ctx.recordings || found == ctx.recordings->end())
    throw UserError(
        w.location,
        fmt::format(
            "autodiff: while loop '{}' is not a counted loop (init tuple, counter from a constant, "
            "condition counter < constant, body adds 1)",
            w.name),
        "write repeated layers as a counted loop over stacked weights, or unroll them");
  const WhileRecording& rec = found->second;
  Module& module = *ctx.reducers.module();
  ComputationBuilder& b = ctx.b;
  const Computation body = module.computation(w.while_body());
  const int64_t n = rec.element_count;
  const std::vector<Shape>& elements = w.shape.tuple_shapes();

  std::vector<int64_t> floating, invariant;
  for (int64_t j = 0; j < n; ++j) {
    const bool is_invariant = std::find(rec.stacked_elements.begin(), rec.stacked_elements.end(),
                                        j) == rec.stacked_elements.end();
    const bool active = ctx.init_active.empty() || ctx.init_active[static_cast<size_t>(j)];
    if (is_floating(elements[static_cast<size_t>(j)].dtype()) && (active || !is_invariant))
      floating.push_back(j);
    if (is_invariant) invariant.push_back(j);
  }
  // Invariant elements sliced at the counter whose adjoint enters as zero:
  // written slice by slice (header).
  const std::vector<bool> sliced = sliced_at_counter(body, n, rec.counter_index);
  auto in_place = [&](int64_t j) {
    const bool zero_in = result_adjoints.size() <= static_cast<size_t>(j) ||
                         result_adjoints[static_cast<size_t>(j)] == kNoId;
    return zero_in && sliced[static_cast<size_t>(j)] &&
           std::find(invariant.begin(), invariant.end(), j) != invariant.end();
  };
  // Reverse carry: (t, adjoints of floating elements, invariant values, stacks).
  std::vector<InstrId> init{
      b.scalar_constant(DType::kS32, static_cast<double>(rec.trip_count - 1))};
  for (int64_t f : floating) {
    InstrId g = result_adjoints.size() > static_cast<size_t>(f)
                    ? result_adjoints[static_cast<size_t>(f)]
                    : kNoId;
    init.push_back(g != kNoId ? g : training::filled(b, elements[static_cast<size_t>(f)], 0.0));
  }
  for (int64_t i : invariant) init.push_back(b.get_tuple_element(rec.recorded_while, i));
  for (size_t s = 0; s < rec.stacked_elements.size(); ++s)
    init.push_back(b.get_tuple_element(rec.recorded_while, n + static_cast<int64_t>(s)));
  InstrId init_tuple = b.tuple(init);
  const Shape carry_shape = b.shape(init_tuple);
  const int64_t adj_base = 1, inv_base = 1 + static_cast<int64_t>(floating.size());
  const int64_t stack_base = inv_base + static_cast<int64_t>(invariant.size());

  WhileAdjoint result;
  ComputationBuilder bb(body.name() + ".reverse", &module);
  bb.set_op_name_scope(b.op_name_scope());
  InstrId p = bb.parameter(0, carry_shape, "reverse_carry");
  InstrId t = bb.get_tuple_element(p, 0);
  std::vector<InstrId> carry(static_cast<size_t>(n), kNoId);
  for (size_t k = 0; k < invariant.size(); ++k)
    carry[static_cast<size_t>(invariant[k])] =
        bb.get_tuple_element(p, inv_base + static_cast<int64_t>(k));
  std::vector<InstrId> stacks;
  for (size_t s = 0; s < rec.stacked_elements.size(); ++s) {
    InstrId stack = bb.get_tuple_element(p, stack_base + static_cast<int64_t>(s));
    stacks.push_back(stack);
    const Shape& es = elements[static_cast<size_t>(rec.stacked_elements[s])];
    InstrId slice =
        bb.dynamic_slice(stack, stack_index(bb, t, bb.shape(stack).rank()), prepend(1, es.dims()));
    carry[static_cast<size_t>(rec.stacked_elements[s])] = bb.reshape(slice, es.dims());
  }
  // Recompute the body's forward from carry t.
  const InstrId first_recomputed = bb.size();
  ForwardCopy fc = copy_forward(bb, module, body, {bb.tuple(carry)});
  for (InstrId id = first_recomputed; id < bb.size(); ++id) {
    Instruction& in = bb.mutable_instr(id);
    if (!training::starts_with(in.op_name, "fwd/")) continue;
    in.op_name = "recompute/" + std::string(training::strip_fwd_prefix(in.op_name));
    ++result.recomputed_instructions;
  }
  for (const Instruction& in : body.instructions())
    result.recomputed_flops += static_cast<double>(rec.trip_count) * matmul_flops(in, body);
  std::vector<InstrId> root_adjoints(static_cast<size_t>(n), kNoId);
  for (size_t k = 0; k < floating.size(); ++k)
    if (!in_place(floating[k]))
      root_adjoints[static_cast<size_t>(floating[k])] =
          bb.get_tuple_element(p, adj_base + static_cast<int64_t>(k));
  GradientRequest request;
  request.source = &body;
  request.forward_map = &fc.map;
  request.loops = &fc.loops;
  request.root_element_adjoints = root_adjoints;
  GradientResult grads = emit_gradients(bb, ctx.reducers, request);
  result.recomputed_flops += static_cast<double>(rec.trip_count) * grads.recomputed_flops;
  result.recomputed_instructions += grads.recomputed_instructions;
  const std::vector<InstrId> empty;
  const std::vector<InstrId>& carry_adjoints =
      grads.parameter_element_adjoints.empty() ? empty : grads.parameter_element_adjoints[0];

  // t + (-1), the counted form trip-count analysis reads (as XLA's).
  std::vector<InstrId> next{bb.binary(Opcode::kAdd, t, bb.scalar_constant(DType::kS32, -1))};
  for (size_t k = 0; k < floating.size(); ++k) {
    const int64_t f = floating[k];
    InstrId g = carry_adjoints.size() > static_cast<size_t>(f)
                    ? carry_adjoints[static_cast<size_t>(f)]
                    : kNoId;
    if (in_place(f)) {
      InstrId carried = bb.get_tuple_element(p, adj_base + static_cast<int64_t>(k));
      if (g == kNoId) {
        g = carried;
      } else if (const Instruction dus = bb.computation().instr(g);
                 dus.opcode == Opcode::kDynamicUpdateSlice) {
        // dynamic-update-slice(zeros, u, s) -> into the carried adjoint.
        const std::vector<InstrId> starts(dus.operands.begin() + 2, dus.operands.end());
        g = bb.dynamic_update_slice(carried, dus.operand(1), starts);
      } else {
        g = bb.binary(Opcode::kAdd, carried, g);  // not one slice: accumulate
      }
    }
    next.push_back(g != kNoId ? g : training::filled(bb, elements[static_cast<size_t>(f)], 0.0));
  }
  for (size_t k = 0; k < invariant.size(); ++k)
    next.push_back(bb.get_tuple_element(p, inv_base + static_cast<int64_t>(k)));
  next.insert(next.end(), stacks.begin(), stacks.end());
  CompId reverse_body = add_built(module, std::move(bb).build(bb.tuple(next)));

  ComputationBuilder cb(body.name() + ".reverse_cond", &module);
  InstrId cp = cb.parameter(0, carry_shape, "reverse_carry");
  InstrId more = cb.compare(cb.get_tuple_element(cp, 0), cb.scalar_constant(DType::kS32, 0),
                            ComparisonDirection::kGe);
  CompId reverse_cond = add_built(module, std::move(cb).build(more));

  InstrId reverse = b.while_loop(init_tuple, reverse_cond, reverse_body);
  result.init_element_adjoints.assign(static_cast<size_t>(n), kNoId);
  for (size_t k = 0; k < floating.size(); ++k)
    result.init_element_adjoints[static_cast<size_t>(floating[k])] =
        b.get_tuple_element(reverse, adj_base + static_cast<int64_t>(k));
  return result;
}

}  // namespace podsim::compiler
