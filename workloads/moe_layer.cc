// The GShard MoE FFN layer (Lepikhin et al. 2020, arXiv 2006.16668, section
// 2.2 and appendix A.2 "Top2Gating"), re-derived as IR. Dims: G groups, S
// tokens per group, E experts, C expert capacity per group, M model, H ffn.
//
//   gates     = softmax(einsum(GSM, ME -> GSE))                 (f32)
//   top_k routing: for choice i = 1..k the argmax expert among those not
//     chosen yet; its buffer position = tokens of the group routed there
//     before (exclusive cumsum over S, plus the tokens of earlier choices);
//     tokens past the capacity C = ceil(capacity_factor k S / E) are dropped
//     (GShard: C = 2S/E for k = 2, factor 1). Gates are normalized by the sum
//     of the chosen ones (GShard's g1 / (g1 + g2)). GShard's random routing of
//     the second expert is left out (deterministic, same cost).
//   combine   GSEC = sum_i gate_i . onehot(expert_i) . onehot(position_i)
//   dispatch  GSEC = combine > 0
//   einsum(GSEC, GSM -> GECM) -> EGCM      [groups -> experts sharded: all-to-all]
//   einsum(EGCM, EMH -> EGCH); activation; einsum(EGCH, EHM -> EGCM)
//   EGCM -> GECM                           [experts -> groups sharded: all-to-all]
//   einsum(GSEC, GECM -> GSM)
// The annotations put G and E on the `experts` mesh axis; the two reshards
// (all-to-alls) are left to propagation and the partitioner. The exclusive
// cumsum is a matmul with a strict upper-triangular [S, S] 0/1 matrix (as
// Mesh-TensorFlow's cumsum on TPU), so it partitions like any einsum.
#include <fmt/format.h>

#include <cmath>

#include "workloads/moe_routing.h"
#include "workloads/transformer_blocks.h"

namespace podsim::workloads {

using compiler::ComparisonDirection;
using compiler::Opcode;
using compiler::Shape;

namespace {

// Sharding text with the experts axis on `dim` of a rank-`rank` tensor.
std::optional<std::string> on_experts_axis(const TransformerContext& ctx, int64_t dim,
                                           int64_t rank) {
  auto axis = ctx.shardings.axis_of("experts", 0);
  if (!axis) return std::nullopt;
  std::vector<std::optional<std::string>> mapping(static_cast<size_t>(rank));
  mapping[static_cast<size_t>(dim)] = axis;
  return ctx.shardings.sharding_of(mapping);
}

// Where `key` was given in the workload file (ModelSpec::key_locations),
// unknown for a ModelSpec built in code. The workload reader rejects bad
// groupings first (workload.cc, check_moe_groups); these checks cover
// ModelSpecs that did not come from a file.
SourceLocation location_of(const ModelSpec& m, const std::string& key,
                           const std::string& fallback_key = "") {
  auto it = m.key_locations.find(key);
  if (it == m.key_locations.end() && !fallback_key.empty()) it = m.key_locations.find(fallback_key);
  return it == m.key_locations.end() ? SourceLocation{} : it->second;
}

}  // namespace

MoeDims moe_dims(const ModelSpec& m, int64_t tokens, int64_t axis) {
  MoeDims d;
  if (m.group_size > 0) {
    if (tokens % m.group_size != 0)
      throw UserError(
          location_of(m, "model.group_size"),
          fmt::format("model.group_size ({}) does not divide the {} tokens of a forward",
                      m.group_size, tokens),
          "pick a group size that divides (global_batch / training.microbatches) x seq_len, the "
          "tokens one forward sees");
    d.group_size = m.group_size;
    d.groups = tokens / m.group_size;
  } else {
    if (tokens % axis != 0)
      throw UserError(
          location_of(m, "sharding.experts", "model.global_batch"),
          fmt::format("the {} tokens of a forward do not split into {} groups (the experts axis)",
                      tokens, axis),
          "set model.group_size or change global_batch, seq_len or training.microbatches");
    d.groups = axis;
    d.group_size = tokens / axis;
  }
  const double capacity = m.capacity_factor * static_cast<double>(m.top_k) *
                          static_cast<double>(d.group_size) / static_cast<double>(m.experts);
  d.capacity = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(capacity - 1e-9)));
  return d;
}

MoeRouting top_k_routing(ModelGraph& g, InstrId gates, int64_t top_k, const MoeDims& d) {
  auto& b = g.builder();
  const int64_t experts = g.dims(gates).back();
  const std::vector<int64_t> gse = {d.groups, d.group_size, experts}, gs = {d.groups, d.group_size};
  const std::vector<int64_t> ss = {d.group_size, d.group_size};
  // before[s, t] = 1 when s < t: einsum(GSE, ST -> GTE) sums the tokens ahead of t.
  InstrId before = g.convert(b.compare(b.iota(Shape(DType::kS32, ss), 0),
                                       b.iota(Shape(DType::kS32, ss), 1), ComparisonDirection::kLt),
                             DType::kF32);
  InstrId expert_ids = b.iota(Shape(DType::kS32, gse), 2);
  struct Choice {
    InstrId mask, gate, position;
  };
  std::vector<Choice> choices;
  InstrId remaining = gates;
  std::optional<InstrId> routed_before;  // [G,E] tokens each expert took in earlier choices
  std::optional<InstrId> gate_sum;
  for (int64_t i = 0; i < top_k; ++i) {
    InstrId best = g.reduce(Opcode::kMaximum, remaining, {2});
    InstrId is_best = b.compare(remaining, g.expand_last(best, gse), ComparisonDirection::kEq);
    // Lowest expert id among ties, so exactly one expert per token.
    InstrId index = g.reduce(
        Opcode::kMinimum,
        b.select(is_best, expert_ids, g.full(static_cast<double>(experts), gse, DType::kS32)), {2});
    InstrId mask = g.one_hot(index, experts, DType::kF32);
    InstrId gate = g.reduce(Opcode::kAdd, g.binary(Opcode::kMultiply, gates, mask), {2});
    remaining = g.binary(Opcode::kMultiply, remaining,
                         g.binary(Opcode::kSubtract, g.full(1, gse, DType::kF32), mask));
    InstrId position =
        g.einsum("GSE,ST->GTE", mask, before, fmt::format("position_{}", i), DType::kF32);
    if (routed_before)
      position = g.binary(Opcode::kAdd, position, g.broadcast(*routed_before, gse, {0, 2}));
    InstrId fits = b.compare(position, g.full(static_cast<double>(d.capacity), gse, DType::kF32),
                             ComparisonDirection::kLt);
    mask = g.binary(Opcode::kMultiply, mask, g.convert(fits, DType::kF32));
    InstrId routed = g.reduce(Opcode::kAdd, mask, {1});
    routed_before = routed_before ? g.binary(Opcode::kAdd, *routed_before, routed) : routed;
    InstrId token_position =
        g.reduce(Opcode::kAdd, g.binary(Opcode::kMultiply, position, mask), {2});
    gate_sum = gate_sum ? g.binary(Opcode::kAdd, *gate_sum, gate) : gate;
    choices.push_back({mask, gate, token_position});
  }
  const std::vector<int64_t> gsec = {d.groups, d.group_size, experts, d.capacity};
  std::optional<InstrId> combine;
  for (const Choice& c : choices) {
    InstrId weight = g.binary(Opcode::kDivide, c.gate, *gate_sum);
    InstrId slot = g.one_hot(g.convert(c.position, DType::kS32), d.capacity, DType::kF32);
    InstrId term = g.binary(Opcode::kMultiply, g.broadcast(weight, gsec, {0, 1}),
                            g.broadcast(c.mask, gsec, {0, 1, 2}));
    term = g.binary(Opcode::kMultiply, term, g.broadcast(slot, gsec, {0, 1, 3}));
    combine = combine ? g.binary(Opcode::kAdd, *combine, term) : term;
  }
  InstrId routed = b.compare(*combine, g.full(0, gsec, DType::kF32), ComparisonDirection::kGt);
  return {*combine, g.convert(routed, g.activation_dtype())};
}

InstrId moe_ffn_block(TransformerContext& ctx, const std::string& layer, InstrId x) {
  ModelGraph& g = ctx.graph;
  const ModelSpec& m = ctx.spec;
  const std::string prefix = layer + "/moe";
  g.set_scope(prefix);
  const MoeDims d = moe_dims(m, ctx.batch * ctx.seq,
                             ctx.shardings.axis_size(ctx.shardings.axis_of("experts", 0)));
  InstrId h = normalize(ctx, x, prefix + "/norm_scale");
  InstrId tokens = g.annotate(g.builder().reshape(h, {d.groups, d.group_size, m.model_dim}),
                              on_experts_axis(ctx, 0, 3));
  InstrId gating =
      g.weight(prefix + "/gating", {m.model_dim, m.experts}, std::string("{replicated}"));
  InstrId gates = g.softmax(g.einsum("GSM,ME->GSE", tokens, gating, "gating", DType::kF32));
  MoeRouting routing = top_k_routing(g, gates, m.top_k, d);

  InstrId grouped = g.annotate(g.einsum("GSEC,GSM->GECM", routing.dispatch, tokens, "dispatch"),
                               on_experts_axis(ctx, 0, 4));
  InstrId dispatched =
      g.annotate(g.builder().transpose(grouped, {1, 0, 2, 3}), on_experts_axis(ctx, 0, 4));
  const auto expert_weight = on_experts_axis(ctx, 0, 3);
  const std::vector<int64_t> emh = {m.experts, m.model_dim, m.ffn_dim};
  InstrId hidden;
  if (m.ffn == FfnKind::kGatedGelu) {
    InstrId wi0 = g.weight(prefix + "/wi_0", emh, expert_weight);
    InstrId wi1 = g.weight(prefix + "/wi_1", emh, expert_weight);
    hidden =
        g.binary(Opcode::kMultiply, g.gelu(g.einsum("EGCM,EMH->EGCH", dispatched, wi0, "wi_0")),
                 g.einsum("EGCM,EMH->EGCH", dispatched, wi1, "wi_1"));
  } else {
    InstrId wi = g.weight(prefix + "/wi", emh, expert_weight);
    InstrId pre = g.einsum("EGCM,EMH->EGCH", dispatched, wi, "wi");
    hidden = m.ffn == FfnKind::kGelu ? g.gelu(pre) : g.relu(pre);
  }
  InstrId wo = g.weight(prefix + "/wo", {m.experts, m.ffn_dim, m.model_dim}, expert_weight);
  InstrId expert_out =
      g.annotate(g.einsum("EGCH,EHM->EGCM", hidden, wo, "wo"), on_experts_axis(ctx, 0, 4));
  InstrId returned =
      g.annotate(g.builder().transpose(expert_out, {1, 0, 2, 3}), on_experts_axis(ctx, 0, 4));
  InstrId combined = g.einsum("GSEC,GECM->GSM", g.convert(routing.combine, g.activation_dtype()),
                              returned, "combine");
  InstrId y = g.builder().reshape(combined, {ctx.batch, ctx.seq, m.model_dim});
  return g.binary(Opcode::kAdd, x, y);
}

}  // namespace podsim::workloads
