// The dense Transformer blocks against an independent forward written as
// plain loops in this file: the loss of a tiny 2-layer model (M = 8, N = 4
// heads of D = 4, so N D = 16 != M; ReLU FFN H = 16; learned positions;
// tied embedding V = 16; causal) from the reference interpreter equals the
// loss computed here from the same weights, for the sequential and the
// parallel block, with and without qk_norm, with K = 4, 2, 1 key/value
// heads, both embedding lookups and both norms. Also: grouped-query
// attention equals multi-head attention whose K/V heads are copies of the
// group's head, and the builder's shapes for the new keys.
#include "workloads/transformer_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "common/error.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/flash_attention.h"
#include "workloads/model_builder.h"
#include "workloads/workload.h"

namespace podsim::workloads {
namespace {

using compiler::Instruction;
using compiler::Literal;
using compiler::Opcode;
using Values = std::vector<double>;

const char* kTiny = R"(name: tiny
mesh:
  axes: {x: 1}
model:
  kind: dense_transformer
  layers: 2
  model_dim: 8
  ffn_dim: 16
  heads: 4
  head_dim: 4
  vocab: 16
  ffn: relu
  position: learned
  seq_len: 4
  global_batch: 2
  dtypes: {params: f32, activations: f32}
)";

// Entry arguments by op_name: tokens / targets in [0, V), weights random.
std::map<std::string, Literal> arguments(const compiler::Module& module, int64_t vocab) {
  std::map<std::string, Literal> args;
  uint64_t seed = 3;
  for (compiler::InstrId p : module.entry().parameters()) {
    const Instruction& in = module.entry().instr(p);
    Literal value = compiler::random_literal(in.shape, seed);
    if (in.op_name.rfind("input/", 0) == 0)
      for (size_t i = 0; i < value.values().size(); ++i)
        value.mutable_values()[i] =
            static_cast<double>((i * 5 + seed) % static_cast<size_t>(vocab));
    args.emplace(in.op_name, value);
    ++seed;
  }
  return args;
}

double interpreted_loss(const compiler::Module& module,
                        const std::map<std::string, Literal>& args) {
  std::vector<Literal> flat;
  for (compiler::InstrId p : module.entry().parameters())
    flat.push_back(args.at(module.entry().instr(p).op_name));
  return compiler::evaluate(module, flat).scalar_value();
}

// The forward of the model in plain loops (row-major arrays, doubles).
class Reference {
 public:
  Reference(const ModelSpec& m, const std::map<std::string, Literal>& args) : m_(m), args_(args) {}

  double loss() {
    const int64_t b_size = m_.global_batch, l_size = m_.seq_len, M = m_.model_dim;
    const Values& tokens = at("input/tokens");
    const Values& table = param("embedding/token");
    const Values& positions = param("embedding/position");
    Values x(static_cast<size_t>(b_size * l_size * M));
    for (int64_t r = 0; r < b_size * l_size; ++r)
      for (int64_t j = 0; j < M; ++j)
        x[idx(r * M + j)] = table[idx(static_cast<int64_t>(tokens[idx(r)]) * M + j)] +
                            positions[idx((r % l_size) * M + j)];
    for (int64_t layer = 0; layer < m_.layers; ++layer) {
      const std::string name = "layer_" + std::to_string(layer);
      if (m_.block == BlockKind::kParallel) {
        const Values h = norm(x, M, param(name + "/pre_norm/scale"));
        x = add(x, add(attention(h, name + "/attention"), ffn(h, name + "/ffn")));
      } else {
        x = add(x,
                attention(norm(x, M, param(name + "/attention/norm_scale")), name + "/attention"));
        x = add(x, ffn(norm(x, M, param(name + "/ffn/norm_scale")), name + "/ffn"));
      }
    }
    x = norm(x, M, param("final_norm/scale"));
    const Values& targets = at("input/targets");
    double total = 0;
    for (int64_t r = 0; r < b_size * l_size; ++r) {
      Values logits(static_cast<size_t>(m_.vocab));
      for (int64_t v = 0; v < m_.vocab; ++v)
        for (int64_t j = 0; j < M; ++j) logits[idx(v)] += x[idx(r * M + j)] * table[idx(v * M + j)];
      double max = logits[0], sum = 0;
      for (double z : logits) max = std::max(max, z);
      for (double z : logits) sum += std::exp(z - max);
      total += std::log(sum) + max - logits[idx(static_cast<int64_t>(targets[idx(r)]))];
    }
    return total / static_cast<double>(b_size * l_size);
  }

 private:
  static size_t idx(int64_t i) { return static_cast<size_t>(i); }
  const Values& at(const std::string& op_name) const { return args_.at(op_name).values(); }
  const Values& param(const std::string& name) const { return at("param/" + name); }
  static Values add(Values a, const Values& b) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    return a;
  }

  // Rows of `width` normalised (rms, or layer: centred first), times scale.
  Values norm(Values x, int64_t width, const Values& scale) const {
    for (size_t row = 0; row < x.size() / static_cast<size_t>(width); ++row) {
      double* v = &x[row * static_cast<size_t>(width)];
      double mean = 0;
      if (m_.norm == NormKind::kLayer) {
        for (int64_t j = 0; j < width; ++j) mean += v[j] / static_cast<double>(width);
        for (int64_t j = 0; j < width; ++j) v[j] -= mean;
      }
      double square = 0;
      for (int64_t j = 0; j < width; ++j) square += v[j] * v[j] / static_cast<double>(width);
      for (int64_t j = 0; j < width; ++j) v[j] = v[j] / std::sqrt(square + 1e-6) * scale[idx(j)];
    }
    return x;
  }

  // h [R, M] . w [M, heads, D] -> [R, heads, D].
  Values project(const Values& h, const Values& w, int64_t heads) const {
    const int64_t M = m_.model_dim, HD = heads * m_.head_dim;
    Values out(h.size() / idx(M) * idx(HD));
    for (size_t r = 0; r < h.size() / idx(M); ++r)
      for (int64_t j = 0; j < HD; ++j)
        for (int64_t i = 0; i < M; ++i)
          out[r * idx(HD) + idx(j)] += h[r * idx(M) + idx(i)] * w[idx(i * HD + j)];
    return out;
  }

  Values attention(const Values& h, const std::string& prefix) const {
    const int64_t N = m_.heads, K = m_.kv_head_count(), D = m_.head_dim, M = m_.model_dim;
    const int64_t B = m_.global_batch, L = m_.seq_len, G = N / K;
    Values q = project(h, param(prefix + "/wq"), N);
    Values k = project(h, param(prefix + "/wk"), K);
    const Values v = project(h, param(prefix + "/wv"), K);
    if (m_.qk_norm) {
      q = norm(q, D, param(prefix + "/query_norm/scale"));
      k = norm(k, D, param(prefix + "/key_norm/scale"));
    }
    const Values& wo = param(prefix + "/wo");
    Values out(idx(B * L * M));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t kv = n / G;  // head n = kv G + g
        for (int64_t l = 0; l < L; ++l) {
          Values p(idx(L));
          double max = -1e30, sum = 0;
          for (int64_t t = 0; t < L; ++t) {
            double s = 0;
            for (int64_t d = 0; d < D; ++d)
              s += q[idx(((b * L + l) * N + n) * D + d)] * k[idx(((b * L + t) * K + kv) * D + d)];
            p[idx(t)] = t <= l ? s / std::sqrt(static_cast<double>(D)) : -1e9;  // causal
            max = std::max(max, p[idx(t)]);
          }
          for (double& s : p) sum += (s = std::exp(s - max));
          for (int64_t d = 0; d < D; ++d) {
            double context = 0;
            for (int64_t t = 0; t < L; ++t)
              context += p[idx(t)] / sum * v[idx(((b * L + t) * K + kv) * D + d)];
            for (int64_t j = 0; j < M; ++j)
              out[idx((b * L + l) * M + j)] += context * wo[idx((n * D + d) * M + j)];
          }
        }
      }
    return out;
  }

  Values ffn(const Values& h, const std::string& prefix) const {
    const int64_t M = m_.model_dim, H = m_.ffn_dim;
    const Values& wi = param(prefix + "/wi");
    const Values& wo = param(prefix + "/wo");
    Values out(h.size());
    for (size_t r = 0; r < h.size() / idx(M); ++r)
      for (int64_t c = 0; c < H; ++c) {
        double hidden = 0;
        for (int64_t i = 0; i < M; ++i) hidden += h[r * idx(M) + idx(i)] * wi[idx(i * H + c)];
        hidden = std::max(hidden, 0.0);
        for (int64_t j = 0; j < M; ++j) out[r * idx(M) + idx(j)] += hidden * wo[idx(c * M + j)];
      }
    return out;
  }

  const ModelSpec& m_;
  const std::map<std::string, Literal>& args_;
};

void expect_matches_reference(const std::vector<std::string>& overrides) {
  const Workload w = parse_workload(kTiny, "tiny.yaml", overrides);
  const BuiltModel model = build_model(w);
  const auto args = arguments(model.module, w.model.vocab);
  const double expected = Reference(w.model, args).loss();
  ASSERT_TRUE(std::isfinite(expected));
  // f32 interpreter against double loops: rounding only.
  EXPECT_NEAR(interpreted_loss(model.module, args), expected, 1e-4 * std::abs(expected));
}

TEST(TransformerBlocks, SequentialBlockMatchesTheReferenceForward) {
  expect_matches_reference({});
  expect_matches_reference({"model.norm=layer"});
}

TEST(TransformerBlocks, ParallelBlockIsXPlusAttentionPlusFfnOfOneNorm) {
  expect_matches_reference({"model.block=parallel"});
  expect_matches_reference({"model.block=parallel", "model.norm=layer"});
}

TEST(TransformerBlocks, QkNormNormalisesQueriesAndKeysOverTheHeadDim) {
  expect_matches_reference({"model.qk_norm=true"});
  expect_matches_reference({"model.qk_norm=true", "model.norm=layer", "model.block=parallel"});
}

TEST(TransformerBlocks, GroupedQueryAttentionSharesEachKvHeadWithItsGroup) {
  for (const char* kv : {"model.kv_heads=4", "model.kv_heads=2", "model.kv_heads=1"}) {
    SCOPED_TRACE(kv);
    expect_matches_reference({kv});
    expect_matches_reference({kv, "model.block=parallel", "model.qk_norm=true"});
  }
}

TEST(TransformerBlocks, GatherLookupEqualsTheOneHotLookup) {
  expect_matches_reference({"model.embedding_lookup=gather"});
  const Workload w = parse_workload(kTiny, "tiny.yaml", {"model.embedding_lookup=gather"});
  const BuiltModel gather = build_model(w);
  int gathers = 0, lookup_dots = 0;
  for (const Instruction& in : gather.module.entry().instructions()) {
    gathers += in.opcode == Opcode::kGather;
    lookup_dots += in.opcode == Opcode::kDot && in.op_name == "fwd/embedding/lookup";
  }
  EXPECT_EQ(gathers, 1);
  EXPECT_EQ(lookup_dots, 0);  // no V x M matmul
}

// FSDP: the table's V rows split on the axis that splits the tokens' batch.
// The gather then reads the table all-gathered over V (M split kept), not a
// gather of every token on every device; on another axis the V split stays.
TEST(TransformerBlocks, GatherReadsTheTableWholeOverVWhenVSharesTheBatchAxis) {
  auto gather_operand_sharding = [](const std::string& embedding) {
    const std::string yaml = std::string(kTiny) + "sharding:\n  activations: [x, null, null]\n" +
                             "  embedding: " + embedding + "\n";
    const Workload w = parse_workload(yaml, "tiny.yaml",
                                      {"mesh.axes={x: 2, y: 2}", "model.embedding_lookup=gather"});
    const BuiltModel model = build_model(w);
    for (const Instruction& in : model.module.entry().instructions()) {
      if (in.opcode != Opcode::kGather) continue;
      const Instruction& table = model.module.entry().instr(in.operand(0));
      return table.opcode == Opcode::kCustomCall ? table.sharding.value_or("?") : "none";
    }
    return std::string("no gather");
  };
  // [x, y] -> {devices=[1,2,2]... replicate over x}: V whole, M on y.
  EXPECT_EQ(gather_operand_sharding("[x, y]"),
            "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
  EXPECT_EQ(gather_operand_sharding("[y, null]"), "none");
}

// GQA with K heads = MHA whose head n uses K/V head n / G (wk, wv copied).
TEST(TransformerBlocks, GroupedQueryAttentionEqualsMhaWithCopiedKvHeads) {
  for (const char* kv : {"model.kv_heads=2", "model.kv_heads=1"}) {
    SCOPED_TRACE(kv);
    const Workload gqa_w = parse_workload(kTiny, "tiny.yaml", {kv, "model.position=relative"});
    const Workload mha_w = parse_workload(kTiny, "tiny.yaml", {"model.position=relative"});
    const BuiltModel gqa = build_model(gqa_w);
    const BuiltModel mha = build_model(mha_w);
    const auto args = arguments(gqa.module, 16);
    std::map<std::string, Literal> mha_args;
    const int64_t N = 4, K = gqa_w.model.kv_heads, D = 4, M = 8;
    for (compiler::InstrId p : mha.module.entry().parameters()) {
      const Instruction& in = mha.module.entry().instr(p);
      const bool kv_weight =
          in.op_name.size() > 3 && (in.op_name.ends_with("/wk") || in.op_name.ends_with("/wv"));
      if (!kv_weight) {
        mha_args.emplace(in.op_name, args.at(in.op_name));
        continue;
      }
      const Literal& grouped = args.at(in.op_name);  // [M, K, D]
      Literal copied(in.shape);                      // [M, N, D]
      for (int64_t i = 0; i < M; ++i)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t d = 0; d < D; ++d)
            copied.mutable_values()[static_cast<size_t>((i * N + n) * D + d)] =
                grouped.values()[static_cast<size_t>((i * K + n / (N / K)) * D + d)];
      mha_args.emplace(in.op_name, copied);
    }
    const double expected = interpreted_loss(mha.module, mha_args);
    EXPECT_NEAR(interpreted_loss(gqa.module, args), expected, 1e-5 * std::abs(expected));
  }
}

TEST(TransformerBlocks, NewKeysShapeTheWeights) {
  const Workload w = parse_workload(
      kTiny, "tiny.yaml", {"model.kv_heads=2", "model.qk_norm=true", "model.block=parallel"});
  const BuiltModel model = build_model(w);
  std::map<std::string, std::vector<int64_t>> dims;
  for (compiler::InstrId p : model.module.entry().parameters()) {
    const Instruction& in = model.module.entry().instr(p);
    dims[in.op_name] = in.shape.dims();
  }
  EXPECT_EQ(dims.at("param/layer_0/attention/wq"), (std::vector<int64_t>{8, 4, 4}));
  EXPECT_EQ(dims.at("param/layer_0/attention/wk"), (std::vector<int64_t>{8, 2, 4}));
  EXPECT_EQ(dims.at("param/layer_0/attention/wv"), (std::vector<int64_t>{8, 2, 4}));
  EXPECT_EQ(dims.at("param/layer_0/attention/wo"), (std::vector<int64_t>{4, 4, 8}));
  EXPECT_EQ(dims.at("param/layer_0/attention/query_norm/scale"), (std::vector<int64_t>{4}));
  EXPECT_EQ(dims.at("param/layer_0/attention/key_norm/scale"), (std::vector<int64_t>{4}));
  EXPECT_EQ(dims.at("param/layer_0/pre_norm/scale"), (std::vector<int64_t>{8}));
  EXPECT_EQ(dims.count("param/layer_0/attention/norm_scale"), 0u);
  EXPECT_EQ(dims.count("param/layer_0/ffn/norm_scale"), 0u);
  // Every entry parameter is counted by model_info (layer weights + embedding
  // + positions + final norm).
  int64_t elements = 0;
  for (const auto& [name, d] : dims)
    if (name.rfind("param/", 0) == 0) {
      int64_t n = 1;
      for (int64_t x : d) n *= x;
      elements += n;
    }
  EXPECT_EQ(elements, model.info.parameters);
}

TEST(TransformerBlocks, ParallelBlockRefusesCrossAttentionLayers) {
  // A ModelSpec from code (the YAML reader refuses it at model.block first).
  Workload w = parse_workload(kTiny, "tiny.yaml");
  w.model.kind = ModelKind::kMoeTransformer;
  w.model.structure = ModelStructure::kEncoderDecoder;
  w.model.experts = 2;
  w.model.block = BlockKind::kParallel;
  EXPECT_THROW(build_model(w), UserError);
}

}  // namespace

// The attention hook: model.attention: flash builds one fused call per
// attention and no [B, N, L, T] scores tensor; standard builds no call.
namespace flash_hook {
namespace {

const char* kSmall = R"(name: small
hardware: tpuv3
mesh:
  axes: {x: 2}
model:
  kind: dense_transformer
  layers: 2
  model_dim: 64
  ffn_dim: 128
  heads: 4
  head_dim: 16
  vocab: 128
  seq_len: 32
  global_batch: 4
  position: rotary
ATTENTION
sharding:
  activations: [x, null, null]
)";

compiler::Module build(const std::string& attention) {
  std::string yaml = kSmall;
  yaml.replace(yaml.find("ATTENTION\n"), 10, attention);
  return build_model(parse_workload(yaml, "w.yaml")).module;
}

int64_t flash_calls(const compiler::Module& m) {
  int64_t n = 0;
  for (const compiler::Instruction& in : m.entry().instructions()) {
    if (!compiler::is_flash_attention(in)) continue;
    ++n;
    const compiler::FlashAttentionConfig c = compiler::flash_config(in);
    EXPECT_TRUE(c.causal);  // decoder-only: causal self-attention
    EXPECT_EQ(c.block_q, 16);
    EXPECT_EQ(c.block_k, 16);
  }
  return n;
}

// A [B, N, L, T] = [4, 4, 32, 32] tensor anywhere in the entry.
bool has_scores(const compiler::Module& m) {
  for (const compiler::Instruction& in : m.entry().instructions())
    if (in.shape.is_array() && in.shape.dims() == std::vector<int64_t>{4, 4, 32, 32}) return true;
  return false;
}

TEST(TransformerBlocks, FlashAttentionIsOneFusedCallPerLayer) {
  const compiler::Module flash = build("  attention: flash\n  flash_block: 16\n");
  EXPECT_EQ(flash_calls(flash), 2);
  EXPECT_FALSE(has_scores(flash));
  const compiler::Module standard = build("");
  EXPECT_EQ(flash_calls(standard), 0);
  EXPECT_TRUE(has_scores(standard));
}

// model.causal: false (MaxText's 2023-10 v5e runs): the fused call is not
// causal, and standard attention builds no mask (no select over the scores).
TEST(TransformerBlocks, NonCausalAttentionHasNoMask) {
  const compiler::Module flash = build("  attention: flash\n  flash_block: 16\n  causal: false\n");
  int64_t calls = 0;
  for (const compiler::Instruction& in : flash.entry().instructions())
    if (compiler::is_flash_attention(in)) {
      ++calls;
      EXPECT_FALSE(compiler::flash_config(in).causal);
    }
  EXPECT_EQ(calls, 2);
  auto masked = [](const compiler::Module& m) {
    for (const compiler::Instruction& in : m.entry().instructions())
      if (in.opcode == compiler::Opcode::kSelect && in.shape.is_array() &&
          in.shape.dims() == std::vector<int64_t>{4, 4, 32, 32})
        return true;
    return false;
  };
  EXPECT_TRUE(masked(build("")));
  EXPECT_FALSE(masked(build("  causal: false\n")));
}

}  // namespace
}  // namespace flash_hook

}  // namespace podsim::workloads
