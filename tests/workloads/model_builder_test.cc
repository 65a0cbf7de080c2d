// build_model: the module's trainable parameters add up to the published
// totals (built with tiny batch/seq overrides: shapes only), every shipped
// YAML builds, named tensors have the documented shapes and shardings, and
// sharding names are checked with positions.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "common/error.h"
#include "compiler/sharding/mesh.h"
#include "workloads/model_builder.h"

namespace podsim::workloads {
namespace {

using compiler::Instruction;
using compiler::Opcode;

std::string source(const std::string& relative) {
  return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

// Sum of the elements of the "param/" entry parameters.
int64_t module_parameters(const compiler::Module& module) {
  int64_t total = 0;
  for (compiler::InstrId p : module.entry().parameters()) {
    const Instruction& in = module.entry().instr(p);
    if (in.op_name.rfind("param/", 0) == 0) total += in.shape.num_elements();
  }
  return total;
}

const Instruction* find_op(const compiler::Module& module, const std::string& op_name,
                           Opcode opcode) {
  for (const Instruction& in : module.entry().instructions())
    if (in.op_name == op_name && in.opcode == opcode) return &in;
  return nullptr;
}

TEST(BuildModel, Dense1TParametersMatchPublishedTotal) {
  const auto start = std::chrono::steady_clock::now();
  BuiltModel model = build_model(load_workload(source("workloads/dense_1t_2048.yaml"),
                                               {"model.global_batch=1", "model.seq_len=8"}));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("build_seconds", std::to_string(seconds));  // informational, not asserted
  EXPECT_EQ(module_parameters(model.module), 1'100'041'175'040);
  EXPECT_EQ(model.info.parameters, 1'100'041'175'040);
  EXPECT_EQ(model.info.layers, 128);
  EXPECT_EQ(model.module.num_partitions(), 2048);
}

TEST(BuildModel, Dense128BParametersMatchPublishedTotal) {
  BuiltModel model = build_model(load_workload(source("workloads/dense_128b_8x8.yaml"),
                                               {"model.global_batch=1", "model.seq_len=8"}));
  EXPECT_EQ(module_parameters(model.module), 137'702'416'384);
  EXPECT_EQ(model.info.parameters, 137'702'416'384);
}

TEST(BuildModel, Gpt175BConfigParametersMatchPublishedTotal) {
  // GELU (2 matrices), learned 2048 x M positions (seq_len must stay 2048).
  BuiltModel model = build_model(load_workload(
      source("workloads/dense_1t_2048.yaml"),
      {"model.layers=96", "model.model_dim=12288", "model.ffn_dim=49152", "model.heads=96",
       "model.ffn=gelu", "model.position=learned", "model.seq_len=2048", "model.global_batch=1"}));
  EXPECT_EQ(module_parameters(model.module), 174'366'928'896);
  EXPECT_EQ(model.info.parameters, 174'366'928'896);
}

TEST(BuildModel, MoeModuleParametersMatchClosedForm) {
  // 1 x 2048 tokens: one group of one token... per device of the 2048-way axis.
  BuiltModel model = build_model(load_workload(source("workloads/moe_600b_2048.yaml"),
                                               {"model.global_batch=1", "model.seq_len=2048"}));
  EXPECT_EQ(module_parameters(model.module), model.info.parameters);
  EXPECT_NEAR(static_cast<double>(model.info.parameters), 600e9, 0.07 * 600e9);
  // The all-to-alls are left to the partitioner: none in the built module.
  for (const Instruction& in : model.module.entry().instructions())
    EXPECT_NE(in.opcode, Opcode::kAllToAll);
}

TEST(BuildModel, MaxText22BParametersAndModelFlops) {
  // MaxText 22B of 2023-04 (docs/reference/measurements.md#maxtext-on-tpu-v4-v5e-and-v5p):
  // per layer Wq, Wk, Wv, Wo 4 x 6144 x 24 x 256 = 150,994,944, ReLU MLP
  // 2 x 6144 x 24576 = 301,989,888, one pre-norm scale 6144 (parallel block),
  // q/k norm scales 2 x 256, relative bias 32 x 24 -> 452,992,256; x 48 =
  // 21,743,628,288; tied token table 32768 x 6144 = 201,326,592; final norm
  // 6144 -> 21,944,961,024.
  BuiltModel model = build_model(load_workload(source("workloads/maxtext_22b_v4_128.yaml"),
                                               {"model.global_batch=64", "model.seq_len=128"}));
  EXPECT_EQ(module_parameters(model.module), 21'944'961'024);
  EXPECT_EQ(model.info.parameters, 21'944'961'024);
  // podsim's model FLOPs: 6 P tokens + 12 x layers x heads x head dim x seq
  // per token; 64 x 128 = 8192 tokens.
  const double tokens = 64.0 * 128;
  EXPECT_DOUBLE_EQ(model.info.model_flops_per_step,
                   6.0 * 21'944'961'024 * tokens + 12.0 * 48 * 24 * 256 * 128 * tokens);
  // T5 relative position biases: the bucket ids are built once, no sine tables.
  EXPECT_EQ(find_op(model.module, "fwd/decoder/attention_setup", Opcode::kSin), nullptr);
}

TEST(BuildModel, EveryShippedWorkloadLoadsAndBuilds) {
  int count = 0;
  for (const std::string dir : {"workloads", "workloads/examples"}) {
    for (const auto& entry : std::filesystem::directory_iterator(source(dir))) {
      if (entry.path().extension() != ".yaml") continue;
      SCOPED_TRACE(entry.path().string());
      Workload w = load_workload(entry.path().string());
      // Full size: the builders make shapes only (no tensor data).
      BuiltModel model = build_model(w);
      EXPECT_GT(model.module.entry().size(), 0);
      EXPECT_EQ(model.mesh.num_devices(), w.mesh.device_count());
      EXPECT_GT(model.info.parameters, 0);
      EXPECT_GT(model.info.model_flops_per_step, 0);
      ++count;
    }
  }
  EXPECT_GE(count, 10);  // 4 dense, 3 MoE, MaxText 22B, small, the HLO example
}

TEST(BuildModel, SmallNamedTensorsHaveDocumentedShapesAndShardings) {
  BuiltModel model = build_model(load_workload(source("workloads/small.yaml")));
  const compiler::Module& m = model.module;
  const compiler::DeviceMesh& mesh = model.mesh;
  // small.yaml: B=8, L=16, M=32, H=64, N=4, D=8, V=64 on mesh [x=2, y=4].
  const Instruction* wq = find_op(m, "param/layer_0/attention/wq", Opcode::kParameter);
  ASSERT_NE(wq, nullptr);
  EXPECT_EQ(wq->shape.to_string(false), "f32[32,4,8]");
  EXPECT_EQ(*wq->sharding,
            compiler::mesh_split(3, mesh, compiler::DimsMapping{{"x"}, {"y"}, {}}).to_string());
  const Instruction* wo = find_op(m, "param/layer_1/ffn/wo", Opcode::kParameter);
  ASSERT_NE(wo, nullptr);
  EXPECT_EQ(wo->shape.to_string(false), "f32[64,32]");
  EXPECT_EQ(*wo->sharding,
            compiler::mesh_split(2, mesh, compiler::DimsMapping{{"y"}, {"x"}}).to_string());
  const Instruction* emb = find_op(m, "param/embedding/token", Opcode::kParameter);
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape.to_string(false), "f32[64,32]");
  const Instruction* scale = find_op(m, "param/layer_0/ffn/norm_scale", Opcode::kParameter);
  ASSERT_NE(scale, nullptr);  // follows activations' M dim: y, replicated over x
  EXPECT_EQ(*scale->sharding,
            compiler::mesh_split(1, mesh, compiler::DimsMapping{{"y"}}).to_string());
  const Instruction* wi0 = find_op(m, "fwd/layer_0/ffn/wi_0", Opcode::kDot);
  ASSERT_NE(wi0, nullptr);
  EXPECT_EQ(wi0->shape.to_string(false), "bf16[8,16,64]");
  const Instruction* scores = find_op(m, "fwd/layer_1/attention/scores", Opcode::kDot);
  ASSERT_NE(scores, nullptr);
  // Scores in f32 (model.dtypes.attention_logits default), the softmax
  // probabilities back in bf16 for the context dot.
  EXPECT_EQ(scores->shape.to_string(false), "f32[8,4,16,16]");
  const Instruction* context = find_op(m, "fwd/layer_1/attention/context", Opcode::kDot);
  ASSERT_NE(context, nullptr);
  EXPECT_EQ(m.entry().instr(context->operands[0]).shape.dtype(), compiler::DType::kBF16);
  const Instruction* logits = find_op(m, "fwd/loss/logits", Opcode::kDot);
  ASSERT_NE(logits, nullptr);
  EXPECT_EQ(logits->shape.to_string(false), "bf16[8,16,64]");
  EXPECT_EQ(m.entry().root_instr().shape.to_string(false), "f32[]");
  // Parameters: tokens, targets, then weights; 2 layers x (4 attention +
  // relative bias + 2 norm scales + 3 FFN) + embedding + final norm = 22.
  const auto params = m.entry().parameters();
  ASSERT_EQ(params.size(), 2u + 2 * 10 + 2);
  EXPECT_EQ(m.entry().instr(params[0]).op_name, "input/tokens");
  EXPECT_EQ(m.entry().instr(params[1]).op_name, "input/targets");
  // Activation annotations: the embedding output, each layer input, the
  // input of the final norm, the logits.
  int annotations = 0;
  for (const Instruction& in : m.entry().instructions())
    if (in.opcode == Opcode::kCustomCall && in.attrs.custom_call_target == "Sharding")
      ++annotations;
  EXPECT_EQ(annotations, 1 + 2 + 1 + 1);
}

const char* kSmall = R"(name: s
mesh:
  axes: {x: 2, y: 4}
model:
  kind: dense_transformer
  layers: 1
  model_dim: 32
  ffn_dim: 64
  heads: 4
  head_dim: 8
  vocab: 64
  seq_len: 16
  global_batch: 8
sharding:
  activations: [x, null, y]
  ffn_inn: [x, y]
)";

TEST(BuildModel, UnknownShardingNameIsAUserErrorAtItsPosition) {
  try {
    build_model(parse_workload(kSmall, "w.yaml"));
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "w.yaml");
    EXPECT_EQ(e.location().line, 16);  // the ffn_inn line
    EXPECT_EQ(e.location().column, 3);
    EXPECT_NE(e.message().find("ffn_inn"), std::string::npos);
    EXPECT_NE(e.hint().find("ffn_in (MH)"), std::string::npos);
    EXPECT_NE(e.hint().find("logits (BLV)"), std::string::npos);
  }
}

TEST(BuildModel, ShardingWithWrongRankIsAUserError) {
  std::string yaml = kSmall;
  yaml.replace(yaml.find("ffn_inn: [x, y]"), 15, "ffn_in: [x]");
  try {
    build_model(parse_workload(yaml, "w.yaml"));
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 16);  // the ffn_inn line
    EXPECT_NE(e.message().find("1 dims but the tensor has 2"), std::string::npos);
  }
}

TEST(BuildModel, ShardingEntriesThatDoNotApplyAreUserErrors) {
  std::string yaml = kSmall;
  yaml.replace(yaml.find("ffn_inn: [x, y]"), 15, "experts: [x]");
  try {
    build_model(parse_workload(yaml, "w.yaml"));
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 16);
    EXPECT_NE(e.message().find("model.kind is dense_transformer"), std::string::npos);
  }
  try {
    build_model(
        parse_workload("name: h\nmesh: {axes: {x: 2}}\nmodel: {kind: hlo, file: "
                       "a.hlo}\nsharding:\n  ffn_in: [x, null]\n",
                       "h.yaml"));
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 5);
    EXPECT_NE(e.message().find("does not apply"), std::string::npos);
  }
}

TEST(BuildModel, HloKindReadsFileRelativeToYaml) {
  BuiltModel model =
      build_model(load_workload(source("workloads/examples/transformer_layer_2d.yaml")));
  // Every floating parameter counts (no "param/" names): x [8,16,32] = 4096,
  // 2 scales of 32, wq/wk/wv 3 x 1024, wo 1024, wi_0/wi_1 2 x 2048, wo 2048.
  EXPECT_EQ(model.info.parameters, 4096 + 64 + 3 * 1024 + 1024 + 2 * 2048 + 2048);
  // Forward dot FLOPs (inference: x1): q,k,v 3 x 2*8*16*4*8*32; scores and
  // context 2 x 2*8*4*16*16*8; attention out 2*8*16*32*32; FFN 2 x
  // 2*8*16*64*32 + 2*8*16*32*64.
  const double qkv = 3.0 * 2 * 8 * 16 * 4 * 8 * 32, attn = 2.0 * 2 * 8 * 4 * 16 * 16 * 8;
  const double out = 2.0 * 8 * 16 * 32 * 32, ffn = 3.0 * 2 * 8 * 16 * 64 * 32;
  EXPECT_DOUBLE_EQ(model.info.model_flops_per_step, qkv + attn + out + ffn);
  EXPECT_EQ(model.info.tokens_per_step, 128);
}

TEST(BuildModel, HloKindMissingFileIsAUserError) {
  EXPECT_THROW(
      build_model(parse_workload(
          "name: h\nmesh: {axes: {x: 2}}\nmodel: {kind: hlo, file: nope.hlo}\n", "/tmp/w.yaml")),
      UserError);
}

}  // namespace
}  // namespace podsim::workloads
