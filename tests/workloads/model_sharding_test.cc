// Built models through propagation (and the partitioner for MoE): the 2-D
// dense layer's propagated shardings are those of docs/reference/measurements.md (GSPMD / Lingvo
// DenseBuilder on mesh [X, Y]): Q/K/V (B,L,N,D) = [X,-,Y,-], FFN hidden
// (B,L,H) = [X,-,Y] from the few annotations of small.yaml (no qkv /
// ffn_hidden entries there); logits (B,L,V) = [X,-,Y] need their own entry
// (as Lingvo annotates them): the embedding (V,M) = [-,Y] alone leaves V
// unsharded. The MoE layer's
// all-to-alls come out of the partitioner, not the builder.
#include <gtest/gtest.h>

#include "compiler/interpreter/interpreter.h"
#include "compiler/propagation/propagation.h"
#include "compiler/sharding/mesh.h"
#include "compiler/sharding/sharding.h"
#include "compiler/spmd/partitioner.h"
#include "compiler/spmd/verify.h"
#include "workloads/model_builder.h"

namespace podsim::workloads {
namespace {

using compiler::DimsMapping;
using compiler::Instruction;
using compiler::Opcode;

std::string source(const std::string& relative) {
  return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

// The mesh axes of the propagated sharding of the first `opcode` op named
// `op_name`, or {"<none>"} when it is no mesh split.
DimsMapping propagated(const BuiltModel& model, const std::string& op_name, Opcode opcode) {
  for (const Instruction& in : model.module.entry().instructions()) {
    if (in.op_name != op_name || in.opcode != opcode) continue;
    if (!in.sharding) return {{"<unsharded>"}};
    auto axes =
        compiler::mesh_axes_of(compiler::parse_sharding(*in.sharding), model.mesh, in.shape.rank());
    return axes ? *axes : DimsMapping{{"<not a mesh split: " + *in.sharding + ">"}};
  }
  return {{"<missing " + op_name + ">"}};
}

TEST(ModelSharding, DenseLayerPropagatesToAnchorsDimsMappings) {
  BuiltModel model = build_model(load_workload(source("workloads/small.yaml")));
  compiler::propagate_shardings(model.module);
  const DimsMapping bl_n_d = {{"x"}, {}, {"y"}, {}};
  const DimsMapping bl_h = {{"x"}, {}, {"y"}};
  for (int layer = 0; layer < 2; ++layer) {
    const std::string attention = "fwd/layer_" + std::to_string(layer) + "/attention/";
    EXPECT_EQ(propagated(model, attention + "q", Opcode::kDot), bl_n_d) << layer;
    EXPECT_EQ(propagated(model, attention + "k", Opcode::kDot), bl_n_d) << layer;
    EXPECT_EQ(propagated(model, attention + "v", Opcode::kDot), bl_n_d) << layer;
    const std::string ffn = "fwd/layer_" + std::to_string(layer) + "/ffn/";
    EXPECT_EQ(propagated(model, ffn + "wi_0", Opcode::kDot), bl_h) << layer;
    EXPECT_EQ(propagated(model, ffn + "wi_1", Opcode::kDot), bl_h) << layer;
    // The layer output (FFN projection back to M) is (B,L,M) = [X,-,Y].
    EXPECT_EQ(propagated(model, ffn + "wo", Opcode::kDot), (DimsMapping{{"x"}, {}, {"y"}}))
        << layer;
  }
  EXPECT_EQ(propagated(model, "fwd/loss/logits", Opcode::kDot), (DimsMapping{{"x"}, {}, {"y"}}));
}

const char* kMoe = R"(name: moe
mesh:
  axes: {x: 4}
model:
  kind: moe_transformer
  layers: 2
  model_dim: 16
  ffn_dim: 32
  heads: 2
  head_dim: 8
  vocab: 32
  ffn: relu
  seq_len: 8
  global_batch: 4
  experts: 4
  dtypes: {params: f32, activations: f32}
sharding:
  activations: [x, null, null]
  experts: [x]
)";

TEST(ModelSharding, MoeDispatchAndCombineBecomeAllToAlls) {
  BuiltModel model = build_model(parse_workload(kMoe, "moe.yaml"));
  compiler::propagate_shardings(model.module);
  // 4 x 8 = 32 tokens in G = 4 groups (the experts axis) of S = 8.
  EXPECT_EQ(propagated(model, "fwd/layer_1/moe/dispatch", Opcode::kDot),
            (DimsMapping{{"x"}, {}, {}, {}}));
  EXPECT_EQ(propagated(model, "fwd/layer_1/moe/wi", Opcode::kDot),
            (DimsMapping{{"x"}, {}, {}, {}}));
  compiler::SpmdResult result = compiler::partition_spmd_with_stats(model.module, {});
  // One MoE layer: groups -> experts before the expert FFN, experts -> groups after.
  EXPECT_GE(result.stats.all_to_alls, 2);
}

TEST(ModelSharding, PartitionedSmallModelMatchesTheOneDeviceForward) {
  // f32 activations so the comparison tolerance is about summation order only.
  BuiltModel model = build_model(load_workload(source("workloads/small.yaml"),
                                               {"model.dtypes.activations=f32", "model.layers=1"}));
  compiler::propagate_shardings(model.module);
  compiler::SpmdResult result = compiler::partition_spmd_with_stats(model.module, {});
  compiler::VerifyResult check =
      compiler::verify_partitioning(model.module, result.module, 1, 1e-3);
  EXPECT_TRUE(check.ok) << check.first_mismatch;
  EXPECT_EQ(check.devices, 8);
}

TEST(ModelSharding, PartitionedMoeMatchesTheOneDeviceForward) {
  BuiltModel model = build_model(parse_workload(kMoe, "moe.yaml"));
  compiler::propagate_shardings(model.module);
  compiler::SpmdResult result = compiler::partition_spmd_with_stats(model.module, {});
  compiler::VerifyResult check =
      compiler::verify_partitioning(model.module, result.module, 1, 1e-3);
  EXPECT_TRUE(check.ok) << check.first_mismatch;
}

// FSDP x tensor on a [data=2, model=2] mesh: every weight split on `data`
// and on `model`, activations on `data`, heads and FFN hidden on `model`;
// the parallel block, qk layer norms, 2 K/V heads for 4 query heads, rotary.
const char* kVariants = R"(name: variants
mesh:
  axes: {data: 2, model: 2}
model:
  kind: dense_transformer
  layers: 2
  model_dim: 16
  ffn_dim: 32
  heads: 4
  head_dim: 8
  vocab: 32
  ffn: relu
  position: rotary
  norm: layer
  block: parallel
  qk_norm: true
  kv_heads: 2
  seq_len: 8
  global_batch: 4
  dtypes: {params: f32, activations: f32}
sharding:
  activations: [data, null, null]
  qkv: [data, null, model, null]
  ffn_hidden: [data, null, model]
  logits: [data, null, model]
  attn_qkv: [data, model, null]
  attn_out: [model, null, data]
  ffn_in: [data, model]
  ffn_out: [model, data]
  embedding: [model, data]
)";

// The entry arguments: tokens in [0, V) (a gather clamps other indices,
// one-hot zeroes them: only valid tokens compare the two), weights random.
std::vector<compiler::Literal> valid_arguments(const compiler::Module& module, int64_t vocab) {
  std::vector<compiler::Literal> args;
  uint64_t seed = 5;
  for (compiler::InstrId p : module.entry().parameters()) {
    const Instruction& in = module.entry().instr(p);
    compiler::Literal value = compiler::random_literal(in.shape, seed++);
    if (in.op_name.rfind("input/", 0) == 0)
      for (size_t i = 0; i < value.values().size(); ++i)
        value.mutable_values()[i] =
            static_cast<double>((i * 11 + seed) % static_cast<size_t>(vocab));
    args.push_back(value);
  }
  return args;
}

void expect_partitioned_forward_matches(const std::vector<std::string>& overrides) {
  BuiltModel model = build_model(parse_workload(kVariants, "variants.yaml", overrides));
  compiler::propagate_shardings(model.module);
  compiler::SpmdResult result = compiler::partition_spmd_with_stats(model.module, {});
  compiler::VerifyOptions options;
  options.tolerance = 1e-3;
  options.arguments = valid_arguments(model.module, 32);
  compiler::VerifyResult check =
      compiler::verify_partitioning(model.module, result.module, options);
  EXPECT_TRUE(check.ok) << check.first_mismatch;
  EXPECT_EQ(check.devices, 4);
}

TEST(ModelSharding, ParallelBlockQkNormAndGqaPartitionLikeTheOneDeviceForward) {
  expect_partitioned_forward_matches({});
  // One K/V head: the derived K/V shardings drop the head axis (2 does not divide 1).
  expect_partitioned_forward_matches({"model.kv_heads=1"});
  expect_partitioned_forward_matches({"model.block=sequential", "model.position=relative"});
}

TEST(ModelSharding, GatherLookupPartitionsWithTheTableShardedOnVOrM) {
  for (const char* table : {"sharding.embedding=[model, data]", "sharding.embedding=[null, model]",
                            "sharding.embedding=[data, null]"}) {
    SCOPED_TRACE(table);
    expect_partitioned_forward_matches({"model.embedding_lookup=gather", table});
  }
}

TEST(ModelSharding, KvWeightsFollowAttnKvOrTheDerivedAttnQkvMapping) {
  auto wk_sharding = [](const std::vector<std::string>& overrides) {
    BuiltModel model = build_model(parse_workload(kVariants, "variants.yaml", overrides));
    for (const Instruction& in : model.module.entry().instructions())
      if (in.op_name == "param/layer_0/attention/wk")
        return compiler::mesh_axes_of(compiler::parse_sharding(*in.sharding), model.mesh,
                                      in.shape.rank())
            .value_or(DimsMapping{{"<not a mesh split>"}});
    return DimsMapping{{"<missing>"}};
  };
  // K = 2: attn_qkv's (data, model, -); K = 1: the model axis cannot split K.
  EXPECT_EQ(wk_sharding({}), (DimsMapping{{"data"}, {"model"}, {}}));
  EXPECT_EQ(wk_sharding({"model.kv_heads=1"}), (DimsMapping{{"data"}, {}, {}}));
  EXPECT_EQ(wk_sharding({"sharding.attn_kv=[null, null, model]"}),
            (DimsMapping{{}, {}, {"model"}}));
}

}  // namespace
}  // namespace podsim::workloads
