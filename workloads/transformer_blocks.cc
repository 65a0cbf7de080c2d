// Dense Transformer blocks (see transformer_blocks.h). Dims: B batch, L query
// positions, T key positions, M model, N heads, D head dim, H ffn, V vocab.
#include "workloads/transformer_blocks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "compiler/ir/flash_attention.h"

namespace podsim::workloads {

using compiler::ComparisonDirection;
using compiler::Opcode;
using compiler::Shape;

namespace {

constexpr int64_t kRelativeBuckets = 32;      // T5 / Lingvo relative attention buckets
constexpr double kRelativeMaxDistance = 128;  // T5 max_distance
constexpr double kMaskedScore = -1e9;         // added where the causal mask hides a key

std::optional<std::string> activations_sharding(const TransformerContext& ctx) {
  return ctx.shardings.sharding("activations");
}

// T5 relative position bucket (Raffel et al. 2020, relative_position_bucket):
// causal: n = max(query - key, 0) over 32 buckets; bidirectional: 16 buckets
// per direction, n = |key - query|, keys after the query offset by 16. With
// `exact` = half the buckets, n < exact is its own bucket, larger n go to
//   exact + trunc(log(n / exact) / log(128 / exact) * (buckets - exact)),
// capped at buckets - 1.
}  // namespace

InstrId relative_bucket_ids(ModelGraph& g, int64_t length, bool causal) {
  auto& b = g.builder();
  const std::vector<int64_t> lt = {length, length};
  InstrId query = b.iota(Shape(DType::kS32, lt), 0);
  InstrId key = b.iota(Shape(DType::kS32, lt), 1);
  const int64_t buckets = causal ? kRelativeBuckets : kRelativeBuckets / 2;
  const int64_t exact = buckets / 2;
  InstrId distance;  // n >= 0
  std::optional<InstrId> offset;
  if (causal) {
    distance = g.binary(Opcode::kMaximum, g.binary(Opcode::kSubtract, query, key),
                        g.full(0, lt, DType::kS32));
  } else {
    InstrId relative = g.binary(Opcode::kSubtract, key, query);
    distance = g.unary(Opcode::kAbs, relative);
    InstrId after = b.compare(relative, g.full(0, lt, DType::kS32), ComparisonDirection::kGt);
    offset = b.select(after, g.full(static_cast<double>(buckets), lt, DType::kS32),
                      g.full(0, lt, DType::kS32));
  }
  InstrId n =
      g.convert(g.binary(Opcode::kMaximum, distance, g.full(1, lt, DType::kS32)), DType::kF32);
  const double log_scale = static_cast<double>(buckets - exact) /
                           (std::log(kRelativeMaxDistance / static_cast<double>(exact)));
  InstrId log_ratio =
      g.unary(Opcode::kLog, g.binary(Opcode::kMultiply, n, g.full(1.0 / exact, lt, DType::kF32)));
  InstrId scaled = g.binary(Opcode::kMultiply, log_ratio, g.full(log_scale, lt, DType::kF32));
  InstrId large = g.binary(Opcode::kAdd, g.convert(scaled, DType::kS32),
                           g.full(static_cast<double>(exact), lt, DType::kS32));
  large =
      g.binary(Opcode::kMinimum, large, g.full(static_cast<double>(buckets - 1), lt, DType::kS32));
  InstrId small = b.compare(distance, g.full(static_cast<double>(exact), lt, DType::kS32),
                            ComparisonDirection::kLt);
  InstrId bucket = b.select(small, distance, large);
  if (offset) bucket = g.binary(Opcode::kAdd, bucket, *offset);
  return bucket;
}

namespace {

// model.qk_norm: the model's norm over the head dim D of q or k [B,T,N,D]
// with its own [D] scale `scale_name` (MaxText's query_norm / key_norm),
// the scale sharded like the qkv activations' D dim.
InstrId head_dim_norm(TransformerContext& ctx, InstrId x, const std::string& scale_name,
                      const std::optional<std::string>& sharding) {
  std::optional<std::string> scale_sharding;
  if (ctx.shardings.mapping("qkv"))
    scale_sharding = ctx.shardings.sharding_of({ctx.shardings.axis_of("qkv", 3)});
  InstrId scale = ctx.graph.weight(scale_name, {ctx.spec.head_dim}, scale_sharding);
  InstrId normed = ctx.spec.norm == NormKind::kLayer ? ctx.graph.layer_norm(x, scale)
                                                     : ctx.graph.rms_norm(x, scale);
  return ctx.graph.annotate(normed, sharding);
}

// Raw scores [B, heads..., L, T] (heads...: N, or K and G) scaled by
// 1 / sqrt(D), plus the T5 relative bias (its [N, L, T] reshaped to the
// heads dims), keys after the query masked (decoder).
InstrId scale_bias_and_mask(TransformerContext& ctx, const std::string& prefix, InstrId scores,
                            const AttentionExtras* extras) {
  ModelGraph& g = ctx.graph;
  scores = g.binary(Opcode::kMultiply, scores,
                    g.full_like(1.0 / std::sqrt(static_cast<double>(ctx.spec.head_dim)), scores));
  const std::vector<int64_t> dims = g.dims(scores);
  const auto rank = static_cast<int64_t>(dims.size());
  if (extras && extras->relative_buckets) {
    InstrId bias_table =
        g.weight(prefix + "/relative_bias", {kRelativeBuckets, ctx.spec.heads}, std::nullopt);
    InstrId bias = g.einsum("LTK,KN->NLT", *extras->relative_buckets, bias_table, "relative_bias");
    const std::vector<int64_t> heads_lt(dims.begin() + 1, dims.end());
    if (g.dims(bias) != heads_lt) bias = g.builder().reshape(bias, heads_lt);
    std::vector<int64_t> onto(heads_lt.size());
    std::iota(onto.begin(), onto.end(), 1);
    scores = g.binary(Opcode::kAdd, scores,
                      g.broadcast(g.convert(bias, g.shape(scores).dtype()), dims, onto));
  }
  if (extras && extras->causal_mask) {
    InstrId visible = g.broadcast(*extras->causal_mask, dims, {rank - 2, rank - 1});
    scores = g.builder().select(visible, scores, g.full_like(kMaskedScore, scores));
  }
  return scores;
}

// Grouped-query attention (model.kv_heads = K < N; Ainslie et al. 2023): the
// N query heads form K groups of G = N / K, head n = k G + g (q reshaped to
// [B,L,K,G,D], as MaxText's dot_product_attention), and each group attends
// to its one K/V head: scores [B,K,G,L,T], no K/V copy per query head.
// Returns the context [B,N,L,D].
InstrId grouped_context(TransformerContext& ctx, const std::string& prefix, InstrId q, InstrId k,
                        InstrId v, const AttentionExtras* extras) {
  ModelGraph& g = ctx.graph;
  const ModelSpec& m = ctx.spec;
  const int64_t kv = m.kv_head_count(), groups = m.heads / kv;
  const std::vector<int64_t> blnd = g.dims(q);
  InstrId grouped_q = g.builder().reshape(q, {blnd[0], blnd[1], kv, groups, m.head_dim});
  if (auto mapping = ctx.shardings.mapping("qkv")) {
    // qkv's (B, L, -, D) axes, its head axis on K when it divides K.
    std::optional<std::string> heads = (*mapping)[2];
    if (kv % ctx.shardings.axis_size(heads) != 0) heads.reset();
    grouped_q = g.annotate(
        grouped_q,
        ctx.shardings.sharding_of({(*mapping)[0], (*mapping)[1], heads, {}, (*mapping)[3]}));
  }
  InstrId scores = g.einsum("BLKGD,BTKD->BKGLT", grouped_q, k, "scores", m.dtypes.attention_logits);
  scores = scale_bias_and_mask(ctx, prefix, scores, extras);
  InstrId probs = g.convert(g.softmax(scores), g.activation_dtype());
  InstrId context = g.einsum("BKGLT,BTKD->BKGLD", probs, v, "context");
  return g.builder().reshape(context, {blnd[0], m.heads, blnd[1], m.head_dim});
}

// Multi-head attention of queries from h_query [B,L,M] over h_memory [B,T,M];
// returns the output projection [B,L,M].
InstrId attend(TransformerContext& ctx, const std::string& prefix, InstrId h_query,
               InstrId h_memory, const AttentionExtras* extras) {
  ModelGraph& g = ctx.graph;
  const ModelSpec& m = ctx.spec;
  const auto qkv_w = ctx.shardings.sharding("attn_qkv");
  const auto qkv_act = ctx.shardings.sharding("qkv");
  const int64_t kv = m.kv_head_count();
  const auto kv_w = ctx.shardings.kv_weight_sharding(kv);
  const auto kv_act = ctx.shardings.kv_activation_sharding(kv);
  const std::vector<int64_t> mnd = {m.model_dim, m.heads, m.head_dim};
  const std::vector<int64_t> mkd = {m.model_dim, kv, m.head_dim};
  InstrId wq = g.weight(prefix + "/wq", mnd, qkv_w);
  InstrId wk = g.weight(prefix + "/wk", mkd, kv_w);
  InstrId wv = g.weight(prefix + "/wv", mkd, kv_w);
  InstrId wo = g.weight(prefix + "/wo", {m.heads, m.head_dim, m.model_dim},
                        ctx.shardings.sharding("attn_out"));
  InstrId q = g.annotate(g.einsum("BLM,MND->BLND", h_query, wq, "q"), qkv_act);
  InstrId k = g.annotate(g.einsum("BTM,MND->BTND", h_memory, wk, "k"), kv_act);
  InstrId v = g.annotate(g.einsum("BTM,MND->BTND", h_memory, wv, "v"), kv_act);
  if (m.qk_norm) {
    q = head_dim_norm(ctx, q, prefix + "/query_norm/scale", qkv_act);
    k = head_dim_norm(ctx, k, prefix + "/key_norm/scale", kv_act);
  }
  if (extras && extras->rotary_cos) {
    // Rotary positions: x * cos + pair(x) * sin, where head dim i is paired
    // with D-1-i (a fixed permutation of RoFormer's i, i+D/2 pairing: the
    // same rotation and the same elementwise cost).
    auto rotate = [&](InstrId x) {
      const std::vector<int64_t> dims = g.dims(x);
      InstrId cos = g.broadcast(*extras->rotary_cos, dims, {1, 3});
      InstrId sin = g.broadcast(*extras->rotary_sin, dims, {1, 3});
      InstrId paired = g.builder().reverse(x, {3});
      return g.binary(Opcode::kAdd, g.binary(Opcode::kMultiply, x, cos),
                      g.binary(Opcode::kMultiply, paired, sin));
    };
    q = g.annotate(rotate(q), qkv_act);
    k = g.annotate(rotate(k), kv_act);
  }
  if (m.attention == AttentionKind::kFlash) {
    // The fused kernel: scores, mask, softmax and context in one call
    // (multi-head only: the reader refuses flash with kv_heads < heads).
    const compiler::FlashAttentionConfig flash{.causal = extras && extras->causal_mask,
                                               .block_q = std::min(m.flash_block, g.dims(q)[1]),
                                               .block_k = std::min(m.flash_block, g.dims(k)[1])};
    InstrId out = g.annotate(compiler::flash_attention(g.builder(), q, k, v, flash).out, qkv_act);
    return g.einsum("BLND,NDM->BLM", out, wo, "output");
  }
  if (kv != m.heads)
    return g.einsum("BNLD,NDM->BLM", grouped_context(ctx, prefix, q, k, v, extras), wo, "output");
  // Scaled dot-product scores (Vaswani et al. 2017): Q K^T / sqrt(D), in
  // the attention-logits dtype (the dot accumulates in f32 anyway; an f32
  // result keeps scores, softmax and their gradients f32, Lingvo's
  // attention_logits_dtype), the probabilities back in the activation dtype
  // for the context dot.
  const DType logits_dtype = m.dtypes.attention_logits;
  InstrId scores = g.einsum("BLND,BTND->BNLT", q, k, "scores", logits_dtype);
  scores = scale_bias_and_mask(ctx, prefix, scores, extras);
  InstrId probs = g.convert(g.softmax(scores), g.activation_dtype());
  InstrId context = g.einsum("BNLT,BTND->BNLD", probs, v, "context");
  return g.einsum("BNLD,NDM->BLM", context, wo, "output");
}

}  // namespace

InstrId norm_scale(TransformerContext& ctx, const std::string& name) {
  std::optional<std::string> sharding;
  if (ctx.shardings.mapping("activations"))
    sharding = ctx.shardings.sharding_of({ctx.shardings.axis_of("activations", 2)});
  return ctx.graph.weight(name, {ctx.spec.model_dim}, sharding);
}

InstrId normalize(TransformerContext& ctx, InstrId x, const std::string& scale_name) {
  InstrId scale = norm_scale(ctx, scale_name);
  return ctx.spec.norm == NormKind::kLayer ? ctx.graph.layer_norm(x, scale)
                                           : ctx.graph.rms_norm(x, scale);
}

AttentionExtras attention_extras(TransformerContext& ctx, const std::string& stack, bool causal) {
  ModelGraph& g = ctx.graph;
  g.set_scope(stack + "/attention_setup");
  AttentionExtras extras;
  const std::vector<int64_t> lt = {ctx.seq, ctx.seq};
  if (causal) {
    InstrId query = g.builder().iota(Shape(DType::kS32, lt), 0);
    InstrId key = g.builder().iota(Shape(DType::kS32, lt), 1);
    extras.causal_mask = g.builder().compare(key, query, ComparisonDirection::kLe);
  }
  if (ctx.spec.position == PositionKind::kRotary) {
    // angle(l, i) = l / 10000^(2 p / D), p = min(i, D-1-i) the pair's index
    // (RoFormer's frequencies); sin negated on the first half of the pair.
    const int64_t d = ctx.spec.head_dim;
    const std::vector<int64_t> ld = {ctx.seq, d};
    InstrId pos = g.convert(g.builder().iota(Shape(DType::kS32, ld), 0), DType::kF32);
    InstrId i = g.convert(g.builder().iota(Shape(DType::kS32, ld), 1), DType::kF32);
    InstrId mirror =
        g.binary(Opcode::kSubtract, g.full(static_cast<double>(d - 1), ld, DType::kF32), i);
    InstrId pair = g.binary(Opcode::kMinimum, i, mirror);
    InstrId inv_freq = g.unary(
        Opcode::kExp,
        g.binary(Opcode::kMultiply, pair,
                 g.full(-2.0 * std::log(10000.0) / static_cast<double>(d), ld, DType::kF32)));
    InstrId angle = g.binary(Opcode::kMultiply, pos, inv_freq);
    InstrId first_half = g.builder().compare(i, mirror, ComparisonDirection::kLt);
    InstrId sin = g.unary(Opcode::kSin, angle);
    sin = g.builder().select(first_half, g.unary(Opcode::kNegate, sin), sin);
    extras.rotary_cos = g.convert(g.unary(Opcode::kCos, angle), g.activation_dtype());
    extras.rotary_sin = g.convert(sin, g.activation_dtype());
  }
  if (ctx.spec.position == PositionKind::kRelative) {
    InstrId ids = relative_bucket_ids(g, ctx.seq, causal);
    extras.relative_buckets = g.one_hot(ids, kRelativeBuckets, g.activation_dtype());
  }
  return extras;
}

InstrId embed(TransformerContext& ctx, InstrId tokens, InstrId embedding,
              std::optional<InstrId> positions) {
  ModelGraph& g = ctx.graph;
  InstrId x;
  if (ctx.spec.embedding_lookup == EmbeddingLookup::kGather) {
    // jnp.take(table, tokens, axis=0): one [1, M] row per token, no V x M
    // matmul; its gradient is a scatter-add into the table.
    compiler::GatherDims dims;
    dims.offset_dims = {2};
    dims.collapsed_slice_dims = {0};
    dims.start_index_map = {0};
    dims.index_vector_dim = 2;
    // A V split on a mesh axis that also splits the tokens (FSDP: batch and
    // table rows on one axis) would make the partitioner gather every token
    // on every device; the table is all-gathered over V for its use instead.
    const ShardingTable& table = ctx.shardings;
    const std::optional<std::string> rows = table.axis_of("embedding", 0);
    if (rows &&
        (rows == table.axis_of("activations", 0) || rows == table.axis_of("activations", 1)))
      embedding =
          g.annotate(embedding, table.sharding_of({std::nullopt, table.axis_of("embedding", 1)}));
    x = g.builder().gather(embedding, tokens, dims, {1, ctx.spec.model_dim});
    g.builder().set_op_name(x, g.builder().op_name_scope() + "/lookup");
  } else {
    InstrId one_hot = g.one_hot(tokens, ctx.spec.vocab, g.activation_dtype());
    x = g.einsum("BLV,VM->BLM", one_hot, embedding, "lookup");
  }
  if (positions) x = g.binary(Opcode::kAdd, x, g.broadcast(*positions, g.dims(x), {1, 2}));
  return g.annotate(x, activations_sharding(ctx));
}

InstrId self_attention_block(TransformerContext& ctx, const std::string& layer, InstrId x,
                             const AttentionExtras& extras) {
  ModelGraph& g = ctx.graph;
  const std::string prefix = layer + "/attention";
  g.set_scope(prefix);
  InstrId h = normalize(ctx, x, prefix + "/norm_scale");
  return g.binary(Opcode::kAdd, x, attend(ctx, prefix, h, h, &extras));
}

InstrId cross_attention_block(TransformerContext& ctx, const std::string& layer, InstrId x,
                              InstrId memory) {
  ModelGraph& g = ctx.graph;
  const std::string prefix = layer + "/cross_attention";
  g.set_scope(prefix);
  InstrId h = normalize(ctx, x, prefix + "/norm_scale");
  return g.binary(Opcode::kAdd, x, attend(ctx, prefix, h, memory, nullptr));
}

namespace {

// The dense FFN of normalized h [B,L,M] without the residual: wo(act(h wi)).
InstrId dense_ffn(TransformerContext& ctx, const std::string& prefix, InstrId h) {
  ModelGraph& g = ctx.graph;
  const ModelSpec& m = ctx.spec;
  const auto wi_sharding = ctx.shardings.sharding("ffn_in");
  InstrId hidden;
  if (m.ffn == FfnKind::kGatedGelu) {
    // Gated GELU (Shazeer 2020, GLU variants): gelu(h wi_0) * (h wi_1).
    InstrId wi0 = g.weight(prefix + "/wi_0", {m.model_dim, m.ffn_dim}, wi_sharding);
    InstrId wi1 = g.weight(prefix + "/wi_1", {m.model_dim, m.ffn_dim}, wi_sharding);
    hidden = g.binary(Opcode::kMultiply, g.gelu(g.einsum("BLM,MH->BLH", h, wi0, "wi_0")),
                      g.einsum("BLM,MH->BLH", h, wi1, "wi_1"));
  } else {
    InstrId wi = g.weight(prefix + "/wi", {m.model_dim, m.ffn_dim}, wi_sharding);
    InstrId pre = g.einsum("BLM,MH->BLH", h, wi, "wi");
    hidden = m.ffn == FfnKind::kGelu ? g.gelu(pre) : g.relu(pre);
  }
  hidden = g.annotate(hidden, ctx.shardings.sharding("ffn_hidden"));
  InstrId wo =
      g.weight(prefix + "/wo", {m.ffn_dim, m.model_dim}, ctx.shardings.sharding("ffn_out"));
  return g.einsum("BLH,HM->BLM", hidden, wo, "wo");
}

// model.block = parallel: x + attention(h) + ffn(h), h = norm(x) with one
// scale per layer (GPT-J, PaLM; the norm is scoped with the attention).
InstrId parallel_block(TransformerContext& ctx, const std::string& layer, InstrId x,
                       const AttentionExtras& extras) {
  ModelGraph& g = ctx.graph;
  const std::string attention = layer + "/attention";
  g.set_scope(attention);
  InstrId h = normalize(ctx, x, layer + "/pre_norm/scale");
  InstrId attended = attend(ctx, attention, h, h, &extras);
  g.set_scope(layer + "/ffn");
  InstrId ffn = dense_ffn(ctx, layer + "/ffn", h);
  return g.binary(Opcode::kAdd, g.binary(Opcode::kAdd, x, attended), ffn);
}

}  // namespace

InstrId dense_ffn_block(TransformerContext& ctx, const std::string& layer, InstrId x) {
  const std::string prefix = layer + "/ffn";
  ctx.graph.set_scope(prefix);
  InstrId h = normalize(ctx, x, prefix + "/norm_scale");
  return ctx.graph.binary(Opcode::kAdd, x, dense_ffn(ctx, prefix, h));
}

InstrId run_layers(TransformerContext& ctx, const std::vector<LayerPlan>& layers, InstrId x,
                   const AttentionExtras& extras, std::optional<InstrId> memory) {
  ModelGraph& g = ctx.graph;
  const auto activations = ctx.shardings.sharding("activations");
  for (const LayerPlan& plan : layers) {
    const std::string layer = fmt::format("layer_{}", plan.index);
    g.set_scope(layer + "/input");
    x = g.annotate(x, activations);  // Lingvo annotates each layer's input/output
    if (ctx.spec.block == BlockKind::kParallel) {
      if (plan.cross_attention || plan.moe) {
        const auto block = ctx.spec.key_locations.find("model.block");
        throw UserError(block != ctx.spec.key_locations.end() ? block->second : SourceLocation{},
                        "model.block = parallel is built for dense decoder-only layers",
                        "a layer with cross attention or an MoE FFN keeps the sequential block");
      }
      x = parallel_block(ctx, layer, x, extras);
      continue;
    }
    x = self_attention_block(ctx, layer, x, extras);
    if (plan.cross_attention) x = cross_attention_block(ctx, layer, x, *memory);
    x = plan.moe ? moe_ffn_block(ctx, layer, x) : dense_ffn_block(ctx, layer, x);
  }
  return x;
}

InstrId softmax_cross_entropy(TransformerContext& ctx, InstrId x, InstrId embedding,
                              InstrId targets) {
  ModelGraph& g = ctx.graph;
  g.set_scope("loss");
  InstrId logits =
      g.annotate(g.einsum("BLM,VM->BLV", x, embedding, "logits"), ctx.shardings.sharding("logits"));
  InstrId z = g.convert(logits, DType::kF32);
  const std::vector<int64_t> blv = g.dims(z);
  // log-sum-exp with the max subtracted for stability; loss per token is
  // logsumexp(z) - z[target]; the step loss is the mean over B x L tokens.
  InstrId max = g.reduce(Opcode::kMaximum, z, {2});
  InstrId shifted = g.binary(Opcode::kSubtract, z, g.expand_last(max, blv));
  InstrId log_sum =
      g.unary(Opcode::kLog, g.reduce(Opcode::kAdd, g.unary(Opcode::kExp, shifted), {2}));
  InstrId log_sum_exp = g.binary(Opcode::kAdd, log_sum, max);
  InstrId target_mask = g.one_hot(targets, ctx.spec.vocab, DType::kF32);
  InstrId target_logit = g.reduce(Opcode::kAdd, g.binary(Opcode::kMultiply, z, target_mask), {2});
  InstrId per_token = g.binary(Opcode::kSubtract, log_sum_exp, target_logit);
  InstrId total = g.reduce(Opcode::kAdd, per_token, {0, 1});
  const double inv_tokens = 1.0 / static_cast<double>(ctx.batch * ctx.seq);
  return g.binary(Opcode::kMultiply, total, g.full(inv_tokens, {}, DType::kF32));
}

}  // namespace podsim::workloads
