// Built models through propagation (and the partitioner for MoE): the 2-D
// dense layer's propagated shardings are those of docs/reference/measurements.md (GSPMD / Lingvo
// DenseBuilder on mesh [X, Y]): Q/K/V (B,L,N,D) = [X,-,Y,-], FFN hidden
// (B,L,H) = [X,-,Y] from the few annotations of small.yaml (no qkv /
// ffn_hidden entries there); logits (B,L,V) = [X,-,Y] need their own entry
// (as Lingvo annotates them): the embedding (V,M) = [-,Y] alone leaves V
// unsharded. The MoE layer's
// all-to-alls come out of the partitioner, not the builder.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace podsim::workloads
