// run_scanned_layers (scanned_layers.h): the body is built twice, once in a
// scratch module to learn its weights (names, dims, shardings), then as the
// while body reading them from the stacked carry elements.
#include "workloads/scanned_layers.h"

#include <fmt/format.h>

namespace podsim::workloads {

using compiler::ComparisonDirection;
using compiler::Opcode;
using compiler::Shape;

namespace {

bool same_kind(const LayerPlan& a, const LayerPlan& b) {
  return a.moe == b.moe && a.cross_attention == b.cross_attention && a.encoder == b.encoder;
}

// The first period of layers on x (scoped by their indices): the body.
InstrId body_layers(TransformerContext& ctx, const std::vector<LayerPlan>& layers, size_t period,
                    InstrId x, const AttentionExtras& extras, std::optional<InstrId> memory) {
  const std::vector<LayerPlan> body(layers.begin(),
                                    layers.begin() + static_cast<std::ptrdiff_t>(period));
  return run_layers(ctx, body, x, extras, memory);
}

std::vector<int64_t> prepend(int64_t head, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out{head};
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

}  // namespace

std::optional<size_t> scan_period(const std::vector<LayerPlan>& layers) {
  for (size_t p = 1; p < layers.size() || p == 1; ++p) {
    if (layers.empty() || layers.size() % p != 0) continue;
    bool repeats = true;
    for (size_t i = p; i < layers.size() && repeats; ++i)
      repeats = same_kind(layers[i], layers[i % p]);
    if (repeats) return p;
  }
  return std::nullopt;
}

InstrId run_scanned_layers(TransformerContext& ctx, const std::vector<LayerPlan>& layers, InstrId x,
                           const AttentionExtras& extras, std::optional<InstrId> memory,
                           const SourceLocation& where) {
  const std::optional<size_t> period = scan_period(layers);
  if (!period)
    throw UserError(
        where,
        fmt::format("model.layer_loop = scan: the {} layers do not repeat with a period",
                    layers.size()),
        "set model.layer_loop: unrolled");
  ModelGraph& g = ctx.graph;
  compiler::Module& module = g.module();
  const int64_t trips = static_cast<int64_t>(layers.size() / *period);
  const Shape x_shape = g.shape(x);

  // Pass 1: the body's weights.
  std::vector<WeightRecord> weights;
  {
    compiler::Module scratch("scan_scratch");
    ModelGraph sg(scratch, g.activation_dtype(), g.param_dtype(), "scratch");
    TransformerContext sctx{sg, ctx.spec, ctx.shardings, ctx.batch, ctx.seq};
    InstrId sx = sg.argument("x", x_shape);
    AttentionExtras sextras;
    if (extras.causal_mask) sextras.causal_mask = sg.argument("mask", g.shape(*extras.causal_mask));
    if (extras.relative_buckets)
      sextras.relative_buckets = sg.argument("buckets", g.shape(*extras.relative_buckets));
    if (extras.rotary_cos) {
      sextras.rotary_cos = sg.argument("rotary_cos", g.shape(*extras.rotary_cos));
      sextras.rotary_sin = sg.argument("rotary_sin", g.shape(*extras.rotary_sin));
    }
    std::optional<InstrId> smemory;
    if (memory) smemory = sg.argument("memory", g.shape(*memory));
    body_layers(sctx, layers, *period, sx, sextras, smemory);
    weights = sg.weights();
  }

  // Carry: (counter, x, extras..., stacked weights...).
  std::vector<Shape> carry{Shape::scalar(DType::kS32), x_shape};
  std::vector<InstrId> invariant_extras;
  if (extras.causal_mask) invariant_extras.push_back(*extras.causal_mask);
  if (extras.relative_buckets) invariant_extras.push_back(*extras.relative_buckets);
  if (extras.rotary_cos) {
    invariant_extras.push_back(*extras.rotary_cos);
    invariant_extras.push_back(*extras.rotary_sin);
  }
  if (memory) invariant_extras.push_back(*memory);
  for (InstrId e : invariant_extras) carry.push_back(g.shape(e));
  const size_t weight_base = carry.size();
  for (const WeightRecord& w : weights)
    carry.push_back(Shape(g.param_dtype(), prepend(trips, w.dims)));
  const Shape carry_shape = Shape::tuple(carry);

  // Pass 2: the while body.
  const std::string name = fmt::format("scan_layer_{}", layers.front().index);
  ModelGraph body(module, g.activation_dtype(), g.param_dtype(), name + "_body");
  TransformerContext bctx{body, ctx.spec, ctx.shardings, ctx.batch, ctx.seq};
  compiler::ComputationBuilder& bb = body.builder();
  body.set_scope("layers");
  InstrId p = body.argument("carry", carry_shape);
  std::vector<InstrId> elements;
  for (size_t k = 0; k < carry.size(); ++k)
    elements.push_back(bb.get_tuple_element(p, static_cast<int64_t>(k)));
  const InstrId counter = elements[0];
  AttentionExtras bextras;
  size_t next_extra = 2;
  if (extras.causal_mask) bextras.causal_mask = elements[next_extra++];
  if (extras.relative_buckets) bextras.relative_buckets = elements[next_extra++];
  if (extras.rotary_cos) {
    bextras.rotary_cos = elements[next_extra++];
    bextras.rotary_sin = elements[next_extra++];
  }
  std::optional<InstrId> bmemory;
  if (memory) bmemory = elements[next_extra++];
  body.set_weight_source([&](size_t index, const WeightRecord& w) {
    assert(index < weights.size() && weights[index].name == w.name);
    InstrId zero = bb.scalar_constant(DType::kS32, 0);
    std::vector<InstrId> starts{counter};
    for (size_t d = 0; d < w.dims.size(); ++d) starts.push_back(zero);
    InstrId slice = bb.dynamic_slice(elements[weight_base + index], starts, prepend(1, w.dims));
    return body.annotate(bb.reshape(slice, w.dims), w.sharding);
  });
  InstrId out = body_layers(bctx, layers, *period, elements[1], bextras, bmemory);
  body.set_scope("layers");
  std::vector<InstrId> next = elements;
  next[0] = bb.binary(Opcode::kAdd, counter, bb.scalar_constant(DType::kS32, 1));
  next[1] = out;
  const compiler::CompId body_id = body.build_computation(bb.tuple(next));

  compiler::ComputationBuilder cond(name + "_cond", &module);
  InstrId cp = cond.parameter(0, carry_shape, "carry");
  InstrId more = cond.compare(cond.get_tuple_element(cp, 0),
                              cond.scalar_constant(DType::kS32, static_cast<double>(trips)),
                              ComparisonDirection::kLt);
  const compiler::CompId cond_id = module.add_computation(std::move(cond).build(more));

  // Entry: the stacked weights and the loop.
  std::vector<InstrId> init{InstrId{}, x};
  init.insert(init.end(), invariant_extras.begin(), invariant_extras.end());
  for (const WeightRecord& w : weights)
    init.push_back(g.weight_parameter(
        "scan/" + w.name, prepend(trips, w.dims),
        ctx.shardings.stacked_sharding(w.sharding, static_cast<int64_t>(w.dims.size()))));
  g.set_scope("layers");
  compiler::ComputationBuilder& b = g.builder();
  init[0] = b.scalar_constant(DType::kS32, 0);
  InstrId loop = b.while_loop(b.tuple(init), cond_id, body_id);
  return b.get_tuple_element(loop, 1);
}

}  // namespace podsim::workloads
