// Model-structure errors (MoE groups, encoder-decoder split, moe_every, the
// pipeline's stage axis) are reported by the workload reader at the key at
// fault: file:line:column, or the --set flag that gave it. The MoE and layer
// plan builders keep their own checks for ModelSpecs built in code, and
// point at ModelSpec::key_locations when the spec came from a file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "tests/test_files.h"
#include "tests/workloads/workload_test_util.h"
#include "workloads/model_builder.h"
#include "workloads/model_info.h"
#include "workloads/moe_routing.h"
#include "workloads/workload.h"

namespace podsim::workloads {
namespace {

// An MoE model on a [x=2, y=4] mesh with the experts on y (4 devices):
// 2 sequences x 5 tokens = 10 tokens per forward, which 4 groups do not
// split. Line numbers are 1-based: "  experts: [y]" is line 19, its axis 'y'
// at column 13 (after "  experts: [").
const char* kMoe = R"(name: moe
hardware: tpuv3
mesh:
  axes: {x: 2, y: 4}
  physical: [2, 2, 2]
model:
  kind: moe_transformer
  layers: 2
  model_dim: 32
  ffn_dim: 64
  heads: 4
  head_dim: 8
  vocab: 64
  seq_len: 5
  global_batch: 2
  experts: 4
sharding:
  activations: [x, null, y]
  experts: [y]
)";

std::string with_line(std::string yaml, const std::string& after, const std::string& line) {
  const size_t at = yaml.find(after + "\n");
  EXPECT_NE(at, std::string::npos) << after;
  yaml.insert(at + after.size() + 1, line + "\n");
  return yaml;
}

TEST(StructureErrors, TokensNotSplittingIntoExpertsAxisGroupsPointAtTheAxis) {
  const UserError e = expect_parse_error(kMoe);
  EXPECT_EQ(e.location().file, "w.yaml");
  EXPECT_EQ(e.location().line, 19);
  EXPECT_EQ(e.location().column, 13);
  EXPECT_NE(e.message().find("the 10 tokens of a forward (model.global_batch 2 x model.seq_len 5)"),
            std::string::npos)
      << e.message();
  EXPECT_NE(e.message().find("do not split into 4 groups"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("mesh axis 'y'"), std::string::npos) << e.message();
  EXPECT_NE(e.hint().find("model.group_size"), std::string::npos) << e.hint();
  // 2 x 8 = 16 tokens split into 4 groups of 4.
  EXPECT_NO_THROW(parse_workload(kMoe, "w.yaml", {"model.seq_len=8"}));
}

TEST(StructureErrors, ExpertsAxisGivenWithSetNamesTheFlag) {
  // experts on x (2 devices): 10 tokens split; on y via --set they do not.
  std::string yaml = kMoe;
  yaml.replace(yaml.find("experts: [y]"), 12, "experts: [x]");
  EXPECT_NO_THROW(parse_workload(yaml, "w.yaml"));
  const UserError e = expect_parse_error(yaml, {"sharding.experts=[y]"});
  EXPECT_EQ(e.location().file, "--set sharding.experts=[y]");
}

TEST(StructureErrors, MicrobatchesShrinkTheTokensOfAForward) {
  // global_batch 4: 4 x 5 = 20 tokens split into 4 groups; with 2
  // microbatches a forward sees 2 x 5 = 10, which do not.
  std::string yaml = kMoe;
  yaml.replace(yaml.find("global_batch: 2"), 15, "global_batch: 4");
  EXPECT_NO_THROW(parse_workload(yaml, "w.yaml"));
  const UserError e = expect_parse_error(yaml + "training:\n  microbatches: 2\n");
  EXPECT_NE(e.message().find("model.global_batch 4 / training.microbatches 2 x model.seq_len 5"),
            std::string::npos)
      << e.message();
  EXPECT_EQ(e.location().line, 19);
  // An inference step is not split into microbatches: 20 tokens again.
  EXPECT_NO_THROW(
      parse_workload(yaml + "training:\n  microbatches: 2\n  enabled: false\n", "w.yaml"));
}

TEST(StructureErrors, GroupSizeNotDividingTheTokensPointsAtGroupSize) {
  // "  group_size: 3" inserted as line 17; the value at column 15. 10 % 3 = 1.
  const UserError e = expect_parse_error(with_line(kMoe, "  experts: 4", "  group_size: 3"));
  EXPECT_EQ(e.location().line, 17);
  EXPECT_EQ(e.location().column, 15);
  EXPECT_NE(e.message().find("'model.group_size' (3) does not divide the 10 tokens"),
            std::string::npos)
      << e.message();
  // group_size 5 divides the 10 tokens (2 groups), whatever the experts axis.
  EXPECT_NO_THROW(parse_workload(with_line(kMoe, "  experts: 4", "  group_size: 5"), "w.yaml"));
}

TEST(StructureErrors, OddEncoderDecoderLayersPointAtLayers) {
  // "  layers: 3" is line 8, the value at column 11.
  std::string yaml = with_line(kMoe, "  experts: 4", "  structure: encoder_decoder");
  yaml.replace(yaml.find("layers: 2"), 9, "layers: 3");
  const UserError e = expect_parse_error(yaml, {"model.seq_len=8"});
  EXPECT_EQ(e.location().line, 8);
  EXPECT_EQ(e.location().column, 11);
  EXPECT_NE(e.message().find("even layer count, got 3"), std::string::npos) << e.message();
}

TEST(StructureErrors, MoeEveryBeyondTheLayersPointsAtMoeEvery) {
  // "  moe_every: 4" inserted as line 17 (2 layers), value at column 14.
  const UserError e =
      expect_parse_error(with_line(kMoe, "  experts: 4", "  moe_every: 4"), {"model.seq_len=8"});
  EXPECT_EQ(e.location().line, 17);
  EXPECT_EQ(e.location().column, 14);
  EXPECT_NE(e.message().find("'model.moe_every' (4) is larger than 'model.layers' (2)"),
            std::string::npos)
      << e.message();
  // Left at its default 2 with one layer: the layer count is at fault ("  layers: 1", line 8).
  const UserError d = expect_parse_error(kMoe, {"model.seq_len=8", "model.layers=1"});
  EXPECT_EQ(d.location().file, "--set model.layers=1");
}

TEST(StructureErrors, TopKBeyondTheExpertsPointsAtTopK) {
  // "  top_k: 5" inserted as line 17 (4 experts), value at column 10.
  const UserError e =
      expect_parse_error(with_line(kMoe, "  experts: 4", "  top_k: 5"), {"model.seq_len=8"});
  EXPECT_EQ(e.location().line, 17);
  EXPECT_EQ(e.location().column, 10);
  EXPECT_NE(e.message().find("'model.top_k' (5) is larger than 'model.experts' (4)"),
            std::string::npos)
      << e.message();
  // The default top_k of 2 with a single expert: the expert count is at fault (line 16).
  EXPECT_EQ(expect_parse_error(kMoe, {"model.seq_len=8", "model.experts=1"}).location().file,
            "--set model.experts=1");
  EXPECT_NO_THROW(
      parse_workload(with_line(kMoe, "  experts: 4", "  top_k: 4"), "w.yaml", {"model.seq_len=8"}));
}

TEST(StructureErrors, CapacityFactorMustBeFiniteAndPlausible) {
  // "  capacity_factor: X" inserted as line 17; the value at column 20.
  // (YAML's ".inf" is not a number to the reader at all: rejected as such.)
  EXPECT_EQ(expect_parse_error(with_line(kMoe, "  experts: 4", "  capacity_factor: .inf"))
                .location()
                .line,
            17);
  for (const std::string bad : {"nan", "inf", "1e5", "0", "-1"}) {
    const UserError e = expect_parse_error(
        with_line(kMoe, "  experts: 4", "  capacity_factor: " + bad), {"model.seq_len=8"});
    EXPECT_EQ(e.location().line, 17) << bad;
    EXPECT_EQ(e.location().column, 20) << bad;
    EXPECT_NE(e.message().find("in (0, 10000]"), std::string::npos) << e.message();
  }
  EXPECT_NO_THROW(parse_workload(with_line(kMoe, "  experts: 4", "  capacity_factor: 10000"),
                                 "w.yaml", {"model.seq_len=8"}));
}

// small.yaml's dense model, 4 layers in 2 pipeline stages.
const char* kDense = R"(name: dense
mesh:
  axes: {stage: 4, x: 2}
model:
  kind: dense_transformer
  layers: 4
  model_dim: 32
  ffn_dim: 64
  heads: 4
  head_dim: 8
  vocab: 64
  seq_len: 16
  global_batch: 8
sharding:
  stage: [stage]
training:
  microbatches: 4
  pipeline_stages: 2
)";

TEST(StructureErrors, StageAxisNotDividingTheStagesPointsAtTheAxis) {
  // "  stage: [stage]" is line 15; the axis at column 11. 2 stages % 4 devices != 0.
  const UserError e = expect_parse_error(kDense);
  EXPECT_EQ(e.location().line, 15);
  EXPECT_EQ(e.location().column, 11);
  EXPECT_NE(e.message().find("the stage axis 'stage' has 4 devices"), std::string::npos)
      << e.message();
  EXPECT_NO_THROW(parse_workload(kDense, "w.yaml", {"mesh.axes={stage: 2, x: 4}"}));
}

TEST(StructureErrors, PipelineWithoutStageAxisOrOfAnMoePointsAtPipelineStages) {
  // Without sharding.stage: "  pipeline_stages: 2" is line 16 once the two
  // sharding lines are gone; the value at column 20.
  std::string yaml = kDense;
  yaml.erase(yaml.find("sharding:\n"), std::string("sharding:\n  stage: [stage]\n").size());
  const UserError e = expect_parse_error(yaml, {"mesh.axes={stage: 2, x: 4}"});
  EXPECT_EQ(e.location().line, 16);
  EXPECT_EQ(e.location().column, 20);
  EXPECT_NE(e.message().find("needs the mesh axis of the stages"), std::string::npos)
      << e.message();
  const UserError moe = expect_parse_error(kMoe, {"model.seq_len=8", "training.pipeline_stages=2"});
  EXPECT_EQ(moe.location().file, "--set training.pipeline_stages=2");
  EXPECT_NE(moe.message().find("dense_transformer models only"), std::string::npos)
      << moe.message();
}

TEST(StructureErrors, HloModelFileAndShardingArePositioned) {
  // "  file: nope.hlo" is line 5, the value at column 9; relative to w.yaml's folder.
  const std::string hlo = "name: h\nmesh: {axes: {x: 2}}\nmodel:\n  kind: hlo\n  file: nope.hlo\n";
  const UserError missing = expect_parse_error(hlo);
  EXPECT_EQ(missing.location().line, 5);
  EXPECT_EQ(missing.location().column, 9);
  EXPECT_NE(missing.message().find("model.file 'nope.hlo' not found"), std::string::npos)
      << missing.message();
  // A sharding section: at its first name ("  ffn_in: ...", line 7, column 3).
  const UserError sharded = expect_parse_error(hlo + "sharding:\n  ffn_in: [x, null]\n");
  EXPECT_EQ(sharded.location().line, 7);
  EXPECT_EQ(sharded.location().column, 3);
  EXPECT_NE(sharded.message().find("does not apply to model.kind hlo"), std::string::npos)
      << sharded.message();
}

TEST(StructureErrors, HloModuleForAnotherDeviceCountPointsAtTheMeshAxes) {
  // The example module is compiled for num_partitions=8; a 4-device mesh
  // does not match. "mesh: {axes: {x: 4}}" is line 2, the axes map at
  // column 14.
  const std::string hlo = "name: h\nmesh: {axes: {x: 4}}\nmodel:\n  kind: hlo\n  file: " +
                          test_files::source_path("workloads/examples/transformer_layer_2d.hlo") +
                          "\n";
  const Workload w = parse_workload(hlo, "w.yaml");
  try {
    build_model(w);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "w.yaml");
    EXPECT_EQ(e.location().line, 2);
    EXPECT_EQ(e.location().column, 14);
    EXPECT_NE(e.message().find("compiled for 8 partitions but the mesh has 4 devices"),
              std::string::npos)
        << e.message();
  }
}

TEST(StructureErrors, BuilderChecksUseTheRecordedKeyLocations) {
  // A spec read from a file carries the positions of its keys ...
  const Workload w = parse_workload(with_line(kMoe, "  experts: 4", "  group_size: 5"), "w.yaml");
  ASSERT_TRUE(w.model.key_locations.count("model.group_size"));
  EXPECT_EQ(w.model.key_locations.at("model.group_size").line, 17);
  EXPECT_EQ(w.model.key_locations.at("sharding.experts").line, 20);  // shifted by the inserted line
  // ... so moe_dims, asked for 12 tokens (not a multiple of 5), points there.
  try {
    moe_dims(w.model, 12, 4);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 17);
    EXPECT_EQ(e.location().column, 15);
  }
  // Without group_size the groups follow the experts axis: 10 tokens, 4 groups.
  ModelSpec m = w.model;
  m.group_size = 0;
  try {
    moe_dims(m, 10, 4);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 20);
    EXPECT_EQ(e.location().column, 13);
  }
  // The layer plan of an odd encoder-decoder points at model.layers (line 8).
  m.structure = ModelStructure::kEncoderDecoder;
  m.layers = 3;
  try {
    plan_layers(m, SourceLocation{"elsewhere", 0, 0});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 8);
  }
  // A spec built in code has no positions: the caller's `where`.
  m.key_locations.clear();
  try {
    plan_layers(m, SourceLocation{"elsewhere", 0, 0});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "elsewhere");
  }
}

}  // namespace
}  // namespace podsim::workloads
