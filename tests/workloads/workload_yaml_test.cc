// Workload YAML: the happy path and one test per error class, each checking
// the message and the 1-based line:column of the offending node.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "common/error.h"
#include "hw_models/ici/placement.h"
#include "tests/workloads/workload_test_util.h"
#include "workloads/workload.h"

namespace podsim::workloads {
namespace {

const char* kValid = R"(name: small
hardware: tpuv3
mesh:
  axes: {x: 2, y: 4}
model:
  kind: dense_transformer
  layers: 2
  model_dim: 64
  ffn_dim: 256
  heads: 4
  head_dim: 16
  vocab: 128
  seq_len: 32
  global_batch: 8
sharding:
  activations: [x, null, y]
  ffn_in: [x, y]
training:
  optimizer: adam
  microbatches: 2
)";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

TEST(WorkloadYaml, ReadsEveryKey) {
  Workload w = parse_workload(kValid, "w.yaml");
  EXPECT_EQ(w.name, "small");
  ASSERT_EQ(w.mesh.axes.size(), 2u);
  EXPECT_EQ(w.mesh.axes[0].first, "x");
  EXPECT_EQ(w.mesh.axes[1].second, 4);
  EXPECT_EQ(w.mesh.device_count(), 8);
  EXPECT_EQ(w.model.layers, 2);
  EXPECT_EQ(w.model.ffn, FfnKind::kGatedGelu);                        // default
  EXPECT_EQ(w.model.norm, NormKind::kRms);                            // default
  EXPECT_EQ(w.model.dtypes.attention_logits, compiler::DType::kF32);  // default
  ASSERT_EQ(w.sharding.size(), 2u);
  EXPECT_EQ(w.sharding[0].first, "activations");
  EXPECT_EQ(w.sharding[0].second[0], std::optional<std::string>("x"));
  EXPECT_EQ(w.sharding[0].second[1], std::nullopt);
  EXPECT_EQ(w.training.optimizer, compiler::OptimizerKind::kAdam);
  EXPECT_EQ(w.training.microbatches, 2);
}

TEST(WorkloadYaml, OverridesChangeAnyKeyAndCollectHardwareKeys) {
  Workload w = parse_workload(
      kValid, "w.yaml",
      {"model.layers=64", "mesh.axes={x: 4, y: 2}", "hardware.ici.link_bandwidth=2e11"});
  EXPECT_EQ(w.model.layers, 64);
  EXPECT_EQ(w.mesh.axes[0].second, 4);
  ASSERT_EQ(w.hardware_overrides.size(), 1u);
  EXPECT_EQ(w.hardware_overrides[0].first, "ici.link_bandwidth");
  EXPECT_EQ(w.hardware_overrides[0].second, "2e11");
}

TEST(WorkloadYaml, CompilerSectionDefaultsAreXlasAndEveryKeyReads) {
  // XLA SpmdPartitionerOptions: threshold_for_windowed_einsum_mib 256, rings
  // of at most 32, one-way; podsim's overlap test on.
  const WindowedEinsumSpec defaults = parse_workload(kValid, "w.yaml").compiler.windowed_einsum;
  EXPECT_EQ(defaults.threshold_mib, 256);
  EXPECT_EQ(defaults.max_devices, 32);
  EXPECT_FALSE(defaults.bidirectional);
  EXPECT_TRUE(defaults.overlap_test);
  const std::string yaml =
      std::string(kValid) +
      "compiler:\n  windowed_einsum:\n    threshold_mib: 0.5\n    max_devices: 16\n"
      "    bidirectional: true\n    overlap_test: false\n";
  const WindowedEinsumSpec read = parse_workload(yaml, "w.yaml").compiler.windowed_einsum;
  EXPECT_EQ(read.threshold_mib, 0.5);
  EXPECT_EQ(read.max_devices, 16);
  EXPECT_TRUE(read.bidirectional);
  EXPECT_FALSE(read.overlap_test);
  // --set reaches the section without the file having one.
  const WindowedEinsumSpec set =
      parse_workload(kValid, "w.yaml", {"compiler.windowed_einsum.threshold_mib=1e9"})
          .compiler.windowed_einsum;
  EXPECT_EQ(set.threshold_mib, 1e9);
}

TEST(WorkloadYaml, LayerLoopAndLoopPipeliningKeysRead) {
  // Defaults: layers unrolled, XLA's collective pipeliner on.
  const Workload defaults = parse_workload(kValid, "w.yaml");
  EXPECT_EQ(defaults.model.layer_loop, LayerLoop::kUnrolled);
  EXPECT_TRUE(defaults.compiler.loops.pipelined_all_gather);
  EXPECT_TRUE(defaults.compiler.loops.pipelined_reduce_scatter);
  const Workload set =
      parse_workload(kValid, "w.yaml",
                     {"model.layer_loop=scan", "compiler.loops.pipelined_all_gather=false",
                      "compiler.loops.pipelined_reduce_scatter=false"});
  EXPECT_EQ(set.model.layer_loop, LayerLoop::kScan);
  EXPECT_FALSE(set.compiler.loops.pipelined_all_gather);
  EXPECT_FALSE(set.compiler.loops.pipelined_reduce_scatter);
  UserError unknown = expect_parse_error(kValid, {"compiler.loops.pipelined_all_reduce=true"});
  EXPECT_NE(unknown.message().find("unknown key 'pipelined_all_reduce' in 'compiler.loops'"),
            std::string::npos)
      << unknown.message();
}

TEST(WorkloadYaml, AsyncCollectivesListKindsAndRejectUnknownOnes) {
  using compiler::Opcode;
  // Default: all five kinds asynchronous (the simulator's behaviour without the key).
  EXPECT_EQ(parse_workload(kValid, "w.yaml").compiler.async_collectives,
            (std::set<Opcode>{Opcode::kAllGather, Opcode::kReduceScatter, Opcode::kAllReduce,
                              Opcode::kAllToAll, Opcode::kCollectivePermute}));
  EXPECT_EQ(parse_workload(std::string(kValid) + "compiler:\n  async_collectives: [all-gather]\n",
                           "w.yaml")
                .compiler.async_collectives,
            (std::set<Opcode>{Opcode::kAllGather}));
  EXPECT_TRUE(parse_workload(kValid, "w.yaml", {"compiler.async_collectives=[]"})
                  .compiler.async_collectives.empty());
  const std::string base = std::string(kValid) + "compiler:\n  async_collectives: ";
  // kValid has 20 lines: the list is on line 22, after "  async_collectives: " (21 columns).
  UserError typo = expect_parse_error(base + "[all-gather, all-reduse]\n");
  EXPECT_EQ(typo.location().line, 22);
  EXPECT_EQ(typo.location().column, 35);
  EXPECT_NE(typo.message().find("'compiler.async_collectives' must be one of"), std::string::npos)
      << typo.what();
  EXPECT_NE(typo.hint().find("did you mean 'all-reduce'"), std::string::npos) << typo.what();
  EXPECT_NE(expect_parse_error(base + "[all-gather, all-gather]\n").message().find("twice"),
            std::string::npos);
  EXPECT_NE(expect_parse_error(base + "all-gather\n").message().find("must be a list"),
            std::string::npos);
}

TEST(WorkloadYaml, CollectiveFusionReadsABool) {
  EXPECT_TRUE(parse_workload(kValid, "w.yaml").compiler.collective_fusion);  // default
  EXPECT_FALSE(parse_workload(kValid, "w.yaml", {"compiler.collective_fusion=false"})
                   .compiler.collective_fusion);
  EXPECT_NE(expect_parse_error(kValid, {"compiler.collective_fusion=sometimes"})
                .message()
                .find("must be true or false"),
            std::string::npos);
}

TEST(WorkloadYaml, CompilerSectionErrorsArePositioned) {
  const std::string base = std::string(kValid) + "compiler:\n  windowed_einsum:\n";
  // kValid has 20 lines: the windowed_einsum keys are on line 23.
  UserError negative = expect_parse_error(base + "    threshold_mib: -1\n");
  EXPECT_EQ(negative.location().line, 23);
  EXPECT_EQ(negative.location().column, 20);
  EXPECT_NE(negative.message().find(
                "'compiler.windowed_einsum.threshold_mib' must be a size in MiB >= 0, got '-1'"),
            std::string::npos)
      << negative.what();
  EXPECT_NE(negative.hint().find("256"), std::string::npos) << negative.what();
  EXPECT_NE(expect_parse_error(base + "    threshold_mib: nan\n").message().find("must be a size"),
            std::string::npos);
  UserError typo = expect_parse_error(base + "    bidirectonal: true\n");
  EXPECT_EQ(typo.location().line, 23);
  EXPECT_NE(typo.message().find("unknown key 'bidirectonal' in 'compiler.windowed_einsum'"),
            std::string::npos)
      << typo.what();
  EXPECT_NE(typo.hint().find("did you mean 'bidirectional'"), std::string::npos) << typo.what();
  EXPECT_NE(expect_parse_error(base + "    max_devices: 0\n")
                .message()
                .find("'compiler.windowed_einsum.max_devices' must be >= 1"),
            std::string::npos);
  EXPECT_NE(expect_parse_error(base + "    overlap_test: maybe\n")
                .message()
                .find("must be true or false"),
            std::string::npos);
  UserError unknown_section_key =
      expect_parse_error(std::string(kValid) + "compiler:\n  fusion: off\n");
  EXPECT_NE(unknown_section_key.message().find("unknown key 'fusion' in 'compiler'"),
            std::string::npos)
      << unknown_section_key.what();
}

TEST(WorkloadYaml, UnknownKeyNamesPositionAndSuggestion) {
  UserError e = expect_parse_error(replace(kValid, "  layers: 2", "  layer: 2"));
  EXPECT_EQ(e.location().line, 7);
  EXPECT_EQ(e.location().column, 3);
  EXPECT_NE(e.message().find("unknown key 'layer' in 'model'"), std::string::npos) << e.what();
  EXPECT_NE(e.hint().find("did you mean 'layers'"), std::string::npos) << e.what();
}

TEST(WorkloadYaml, WrongTypeIsReported) {
  UserError e = expect_parse_error(replace(kValid, "heads: 4", "heads: four"));
  EXPECT_EQ(e.location().line, 10);
  EXPECT_EQ(e.location().column, 10);
  EXPECT_NE(e.message().find("'model.heads' must be an integer, got 'four'"), std::string::npos)
      << e.what();
}

TEST(WorkloadYaml, NonPositiveSizeIsReported) {
  UserError e = expect_parse_error(replace(kValid, "vocab: 128", "vocab: 0"));
  EXPECT_EQ(e.location().line, 12);
  EXPECT_NE(e.message().find("'model.vocab' must be >= 1"), std::string::npos) << e.what();
}

TEST(WorkloadYaml, MalformedYamlHasPosition) {
  UserError e = expect_parse_error("name: x\nmesh: {axes: [1, 2\n");
  EXPECT_GT(e.location().line, 0);
  EXPECT_NE(e.message().find("malformed YAML"), std::string::npos) << e.what();
}

TEST(WorkloadYaml, UnknownMeshAxisInSharding) {
  UserError e = expect_parse_error(replace(kValid, "ffn_in: [x, y]", "ffn_in: [x, z]"));
  EXPECT_EQ(e.location().line, 17);
  EXPECT_EQ(e.location().column, 15);
  EXPECT_NE(e.message().find("unknown mesh axis 'z'"), std::string::npos) << e.what();
  EXPECT_NE(e.hint().find("x, y"), std::string::npos);
}

TEST(WorkloadYaml, AxisUsedTwiceInOneTensor) {
  UserError e = expect_parse_error(replace(kValid, "ffn_in: [x, y]", "ffn_in: [x, x]"));
  EXPECT_NE(e.message().find("shards two dims"), std::string::npos) << e.what();
}

TEST(WorkloadYaml, PhysicalGridMustHoldTheMesh) {
  UserError e = expect_parse_error(
      replace(kValid, "axes: {x: 2, y: 4}", "axes: {x: 2, y: 4}\n  physical: [2, 2, 1]"));
  EXPECT_EQ(e.location().line, 5);
  EXPECT_NE(e.message().find("holds 4 cores but the mesh has 8 devices"), std::string::npos)
      << e.what();
}

TEST(WorkloadYaml, BadChoiceListsTheChoices) {
  UserError e = expect_parse_error(replace(kValid, "optimizer: adam", "optimizer: lamb"));
  EXPECT_NE(e.message().find("sgd | adam | adamw | adafactor"), std::string::npos) << e.what();
}

// model.norm and model.dtypes.attention_logits are read, and a value outside
// their choices is an error that lists them.
TEST(WorkloadYaml, NormAndAttentionLogitsDtype) {
  Workload w = parse_workload(
      replace(kValid, "  global_batch: 8\n",
              "  global_batch: 8\n  norm: layer\n  dtypes: {attention_logits: bf16}\n"),
      "w.yaml");
  EXPECT_EQ(w.model.norm, NormKind::kLayer);
  EXPECT_EQ(w.model.dtypes.attention_logits, compiler::DType::kBF16);
  EXPECT_EQ(w.model.dtypes.activations,
            compiler::DType::kBF16);  // the other dtypes keep their defaults
  UserError e = expect_parse_error(
      replace(kValid, "  global_batch: 8\n", "  global_batch: 8\n  norm: batch\n"));
  EXPECT_NE(e.message().find("rms | layer"), std::string::npos) << e.what();
  e = expect_parse_error(replace(kValid, "  global_batch: 8\n",
                                 "  global_batch: 8\n  dtypes: {attention_logits: f16}\n"));
  EXPECT_NE(e.message().find("f32 | bf16"), std::string::npos) << e.what();
}

// model.block, qk_norm, kv_heads, embedding_lookup: defaults (today's
// model), every value reads, and the refusals point at the key.
TEST(WorkloadYaml, TransformerVariantKeysRead) {
  const Workload defaults = parse_workload(kValid, "w.yaml");
  EXPECT_EQ(defaults.model.block, BlockKind::kSequential);
  EXPECT_FALSE(defaults.model.qk_norm);
  EXPECT_EQ(defaults.model.kv_heads, 0);
  EXPECT_EQ(defaults.model.kv_head_count(), 4);  // = heads
  EXPECT_EQ(defaults.model.embedding_lookup, EmbeddingLookup::kOneHot);
  const Workload set = parse_workload(kValid, "w.yaml",
                                      {"model.block=parallel", "model.qk_norm=true",
                                       "model.kv_heads=2", "model.embedding_lookup=gather"});
  EXPECT_EQ(set.model.block, BlockKind::kParallel);
  EXPECT_TRUE(set.model.qk_norm);
  EXPECT_EQ(set.model.kv_head_count(), 2);
  EXPECT_EQ(set.model.embedding_lookup, EmbeddingLookup::kGather);
  EXPECT_NE(expect_parse_error(kValid, {"model.block=interleaved"})
                .message()
                .find("sequential | parallel"),
            std::string::npos);
  EXPECT_NE(expect_parse_error(kValid, {"model.embedding_lookup=take"})
                .message()
                .find("one_hot | gather"),
            std::string::npos);
}

TEST(WorkloadYaml, KvHeadsMustDivideHeads) {
  // kValid: heads: 4 on line 10; kv_heads added after global_batch (line 14).
  for (const char* bad : {"3", "8"}) {
    UserError e = expect_parse_error(replace(
        kValid, "  global_batch: 8\n", fmt::format("  global_batch: 8\n  kv_heads: {}\n", bad)));
    EXPECT_EQ(e.location().line, 15) << bad;
    EXPECT_EQ(e.location().column, 13) << bad;
    EXPECT_NE(
        e.message().find(fmt::format("'model.kv_heads' ({}) must divide 'model.heads' (4)", bad)),
        std::string::npos)
        << e.what();
  }
  EXPECT_NE(expect_parse_error(kValid, {"model.kv_heads=0"}).message().find(">= 1"),
            std::string::npos);
}

TEST(WorkloadYaml, ParallelBlockOfAnMoePointsAtBlock) {
  const std::string moe =
      replace(replace(kValid, "dense_transformer", "moe_transformer"), "  global_batch: 8\n",
              "  global_batch: 8\n  experts: 4\n  block: parallel\n");
  UserError e = expect_parse_error(moe);
  EXPECT_EQ(e.location().line, 16);
  EXPECT_EQ(e.location().column, 10);
  EXPECT_NE(e.message().find("'model.block: parallel' is built for dense_transformer models only"),
            std::string::npos)
      << e.what();
}

// model.attention and model.flash_block: defaults (standard; the block is
// min(512, seq_len) = 32 here), the keys read, and their errors positioned.
TEST(WorkloadYaml, AttentionAndFlashBlock) {
  Workload w = parse_workload(kValid, "w.yaml");
  EXPECT_EQ(w.model.attention, AttentionKind::kStandard);
  EXPECT_EQ(w.model.flash_block, 32);
  w = parse_workload(replace(kValid, "  global_batch: 8\n",
                             "  global_batch: 8\n  attention: flash\n  flash_block: 16\n"
                             "  position: none\n"),
                     "w.yaml");
  EXPECT_EQ(w.model.attention, AttentionKind::kFlash);
  EXPECT_EQ(w.model.flash_block, 16);
  EXPECT_EQ(w.model.position, PositionKind::kNone);
  // 12 does not divide seq_len 32: line 15 (the key after global_batch), column 16.
  UserError e = expect_parse_error(replace(kValid, "  global_batch: 8\n",
                                           "  global_batch: 8\n  flash_block: 12\n"));
  EXPECT_NE(e.message().find("divide seq_len 32"), std::string::npos) << e.what();
  EXPECT_EQ(e.location().line, 15);
  EXPECT_EQ(e.location().column, 16);
}

TEST(WorkloadYaml, FlashAttentionRefusesTheRelativePositionBias) {
  // position defaults to relative: flash says so at its key (line 15, column 14).
  UserError e = expect_parse_error(
      replace(kValid, "  global_batch: 8\n", "  global_batch: 8\n  attention: flash\n"));
  EXPECT_NE(e.message().find("no position bias"), std::string::npos) << e.what();
  EXPECT_NE(e.hint().find("position: none"), std::string::npos) << e.hint();
  EXPECT_EQ(e.location().line, 15);
  EXPECT_EQ(e.location().column, 14);
  // Rotary is applied before the kernel: accepted.
  EXPECT_EQ(parse_workload(replace(kValid, "  global_batch: 8\n",
                                   "  global_batch: 8\n  attention: flash\n  position: rotary\n"),
                           "w.yaml")
                .model.attention,
            AttentionKind::kFlash);
}

TEST(WorkloadYaml, MissingRequiredKey) {
  UserError e = expect_parse_error(replace(kValid, "  seq_len: 32\n", ""));
  EXPECT_NE(e.message().find("missing the required key 'seq_len'"), std::string::npos) << e.what();
}

TEST(WorkloadYaml, BatchNotDivisibleByMicrobatches) {
  UserError e = expect_parse_error(replace(kValid, "microbatches: 2", "microbatches: 3"));
  EXPECT_NE(e.message().find("not divisible by training.microbatches (3)"), std::string::npos)
      << e.what();
}

// A --set value outside its choices names the flag, every choice (auto
// too, for training.remat) and the nearest one.
TEST(WorkloadYaml, BadSetValueNamesTheFlagTheChoicesAndTheNearest) {
  UserError e = expect_parse_error(kValid, {"training.remat=ful"});
  EXPECT_EQ(e.location().file, "--set training.remat=ful") << e.what();
  EXPECT_NE(e.message().find("none | full | auto | save_dots | minimal"), std::string::npos)
      << e.what();
  EXPECT_EQ(e.hint(), "did you mean 'full'?") << e.what();
  const std::pair<const char*, RematMode> good[] = {{"none", RematMode::kNone},
                                                    {"full", RematMode::kFull},
                                                    {"auto", RematMode::kAuto},
                                                    {"save_dots", RematMode::kSelective},
                                                    {"minimal", RematMode::kSelective}};
  for (const auto& [name, mode] : good) {
    const TrainingSpec t =
        parse_workload(kValid, "w.yaml", {std::string("training.remat=") + name}).training;
    EXPECT_EQ(t.remat, mode) << name;
    EXPECT_EQ(t.remat_policy, mode == RematMode::kSelective ? name : "") << name;
  }
  UserError far = expect_parse_error(kValid, {"training.remat=everything"});
  EXPECT_EQ(far.hint(), "") << far.what();  // nothing near: the list in the message is the help
}

TEST(WorkloadYaml, MalformedOverride) {
  UserError e = expect_parse_error(kValid, {"model.layers"});
  EXPECT_NE(e.message().find("key=value"), std::string::npos) << e.what();
  UserError e2 = expect_parse_error(kValid, {"model.layerz=3"});
  EXPECT_NE(e2.message().find("unknown key 'layerz'"), std::string::npos) << e2.what();
}

// mesh.order takes exactly hw::placement_order_from_name's names; each one
// that loads must also be accepted by the placement (the run maps it as is).
TEST(WorkloadYaml, MeshOrderAcceptsThePlacementNames) {
  for (const char* order : {"row_major", "column_major", "ring_preserving"}) {
    SCOPED_TRACE(order);
    Workload w =
        parse_workload(replace(kValid, "  axes: {x: 2, y: 4}\n",
                               fmt::format("  axes: {{x: 2, y: 4}}\n  order: {}\n", order)),
                       "w.yaml");
    EXPECT_EQ(w.mesh.order, hw::placement_order_from_name(order));
    EXPECT_EQ(name_of(w.mesh.order), order);
  }
  // explicit: the named form with mesh.devices, and the list shorthand.
  const std::string devices = "[7, 6, 5, 4, 3, 2, 1, 0]";
  Workload named = parse_workload(
      replace(kValid, "  axes: {x: 2, y: 4}\n",
              "  axes: {x: 2, y: 4}\n  order: explicit\n  devices: " + devices + "\n"),
      "w.yaml");
  Workload listed = parse_workload(
      replace(kValid, "  axes: {x: 2, y: 4}\n", "  axes: {x: 2, y: 4}\n  order: " + devices + "\n"),
      "w.yaml");
  for (const Workload* w : {&named, &listed}) {
    EXPECT_EQ(w->mesh.order, hw::PlacementOrder::kExplicit);
    EXPECT_EQ(w->mesh.explicit_devices, (std::vector<int64_t>{7, 6, 5, 4, 3, 2, 1, 0}));
  }
}

TEST(WorkloadYaml, MeshOrderRingIsAPositionedErrorWithTheRightName) {
  // "  order: ring" is line 5; the value starts at column 10.
  UserError e = expect_parse_error(
      replace(kValid, "  axes: {x: 2, y: 4}\n", "  axes: {x: 2, y: 4}\n  order: ring\n"));
  EXPECT_NE(e.message().find("'mesh.order' must be one of row_major | column_major | explicit | "
                             "ring_preserving, got 'ring'"),
            std::string::npos)
      << e.what();
  EXPECT_NE(e.hint().find("did you mean 'ring_preserving'"), std::string::npos) << e.what();
  EXPECT_EQ(e.location().line, 5);
  EXPECT_EQ(e.location().column, 10);
}

TEST(WorkloadYaml, ExplicitOrderNeedsDevicesAndDevicesNeedExplicit) {
  UserError missing = expect_parse_error(
      replace(kValid, "  axes: {x: 2, y: 4}\n", "  axes: {x: 2, y: 4}\n  order: explicit\n"));
  EXPECT_NE(missing.message().find("needs the device list in 'mesh.devices'"), std::string::npos)
      << missing.what();
  EXPECT_EQ(missing.location().line, 5);
  UserError stray =
      expect_parse_error(replace(kValid, "  axes: {x: 2, y: 4}\n",
                                 "  axes: {x: 2, y: 4}\n  order: row_major\n  devices: [0, 1]\n"));
  EXPECT_NE(stray.message().find("only read with 'mesh.order: explicit'"), std::string::npos)
      << stray.what();
  EXPECT_EQ(stray.location().line, 6);
  UserError short_list =
      expect_parse_error(replace(kValid, "  axes: {x: 2, y: 4}\n",
                                 "  axes: {x: 2, y: 4}\n  order: explicit\n  devices: [0, 1]\n"));
  EXPECT_NE(short_list.message().find("lists 2 devices, the mesh has 8"), std::string::npos)
      << short_list.what();
}

TEST(WorkloadYaml, PipelineStagesNotDividingLayersIsAPositionedError) {
  // kValid has 2 layers; 3 stages is line 21 ("  pipeline_stages: 3"), the
  // value at column 20.
  UserError e = expect_parse_error(
      replace(kValid, "  microbatches: 2\n", "  microbatches: 2\n  pipeline_stages: 3\n"));
  EXPECT_NE(e.message().find("model.layers (2) does not divide into training.pipeline_stages (3)"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(e.location().line, 21);
  EXPECT_EQ(e.location().column, 20);
}

TEST(WorkloadYaml, ShippedDefaultWorkloadLoads) {
  Workload w = load_workload(std::string(PODSIM_SOURCE_DIR) + "/workloads/dense_1t_2048.yaml");
  EXPECT_EQ(w.mesh.device_count(), 2048);
  EXPECT_EQ(w.model.layers, 128);
}

// Found by the workload fuzzer (tests/fuzz, ASan: stack-use-after-scope):
// the sharding reader kept a reference to a yaml-cpp iterator temporary.
// Replayed here so `make sanitize` catches a regression; the file is also
// in the fuzz seed corpus.
TEST(WorkloadYaml, FuzzFindingShardingReaderParses) {
  const std::string path =
      PODSIM_SOURCE_DIR "/tests/fuzz/corpus/workload/sharding_use_after_scope.yaml";
  try {
    load_workload(path);
  } catch (const UserError&) {
    // a positioned error is fine; a crash or another exception is not
  }
}

// Fuzzer finding: a complex (non-scalar) map key made yaml-cpp throw
// TypedBadConversion through the reader (terminate). Now a positioned
// UserError.
TEST(WorkloadYaml, ComplexKeyIsAPositionedError) {
  try {
    parse_workload("name: a\n? [x, y]\n: 1\n", "k.yaml");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "k.yaml");
    EXPECT_GT(e.location().line, 0);
  }
  const std::string path =
      PODSIM_SOURCE_DIR "/tests/fuzz/corpus/workload/complex_key_bad_conversion.yaml";
  EXPECT_THROW(load_workload(path), UserError);
}

}  // namespace
}  // namespace podsim::workloads

namespace podsim::workloads {
namespace {

// Absurd sizes are positioned input errors, never int64 overflows.
// kValid's lines: 8 model_dim, 7 layers, 14 global_batch; a value starts at
// column 3 + len("key: ").

TEST(WorkloadYaml, AbsurdModelDimPointsAtTheKey) {
  // [global_batch, seq_len, model_dim] = 8 x 32 x 10^15 = 2.56e17 elements,
  // over 2^50 = 1.13e15.
  UserError e = expect_parse_error(replace(kValid, "model_dim: 64", "model_dim: 1000000000000000"));
  EXPECT_EQ(e.location().line, 8);
  EXPECT_EQ(e.location().column, 14);  // "  model_dim: " is 13 characters
  EXPECT_NE(e.message().find("too large"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("256000000000000000 elements"), std::string::npos) << e.what();
  EXPECT_NE(e.hint().find("model.model_dim"), std::string::npos) << e.what();
}

TEST(WorkloadYaml, ProductBeyondInt64IsReportedNotWrapped) {
  // 2^62 x 32 x 64 overflows int64: "more than 2^63", at global_batch.
  UserError e =
      expect_parse_error(replace(kValid, "global_batch: 8", "global_batch: 4611686018427387904"));
  EXPECT_EQ(e.location().line, 14);
  EXPECT_EQ(e.location().column, 17);  // "  global_batch: " is 16 characters
  EXPECT_NE(e.message().find("more than 2^63 elements"), std::string::npos) << e.what();
}

TEST(WorkloadYaml, TotalOverAllLayersIsCapped) {
  // Every single array fits (d x f = 2^22 x 2^22 = 2^44 <= 2^50), but the
  // weights of 1024 layers of 3 x 2^44 (gated FFN) = 3 x 2^54 exceed 2^52.
  UserError e =
      expect_parse_error(replace(replace(replace(kValid, "model_dim: 64", "model_dim: 4194304"),
                                         "ffn_dim: 256", "ffn_dim: 4194304"),
                                 "layers: 2", "layers: 1024"),
                         {"model.global_batch=1", "model.seq_len=1", "training.microbatches=1"});
  EXPECT_NE(e.message().find("all weights"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("2^52"), std::string::npos) << e.what();
}

TEST(WorkloadYaml, LayersBeyondTheUnrollLimit) {
  UserError e = expect_parse_error(replace(kValid, "layers: 2", "layers: 9223372036854775807"));
  EXPECT_EQ(e.location().line, 7);
  EXPECT_EQ(e.location().column, 11);  // "  layers: " is 10 characters
  EXPECT_NE(e.message().find("more than the 1024"), std::string::npos) << e.what();
  // One past int64 is not an integer podsim can read at all.
  UserError past = expect_parse_error(replace(kValid, "layers: 2", "layers: 9223372036854775808"));
  EXPECT_NE(past.message().find("must be an integer"), std::string::npos) << past.what();
  // The limit itself loads.
  EXPECT_EQ(parse_workload(kValid, "w.yaml", {"model.layers=1024"}).model.layers, 1024);
}

TEST(WorkloadYaml, MeshDeviceCountOverflowIsAnError) {
  // 2^32 x 2^32 = 2^64 wraps to 0 in unchecked int64; here it is caught at y.
  UserError e = expect_parse_error(
      replace(kValid, "axes: {x: 2, y: 4}", "axes: {x: 4294967296, y: 4294967296}"));
  EXPECT_EQ(e.location().line, 4);
  EXPECT_NE(e.message().find("more than 1048576 devices"), std::string::npos) << e.what();
}

TEST(WorkloadYaml, ErrorInAnOverrideNamesTheFlagNotLineOne) {
  // A --set value has its own text; its marks are not positions in w.yaml.
  UserError e = expect_parse_error(kValid, {"model.heads=four"});
  EXPECT_EQ(e.location().file, "--set model.heads=four");
  EXPECT_EQ(e.location().line, 0);
  EXPECT_NE(e.message().find("'model.heads' must be an integer"), std::string::npos) << e.what();
  // Inside a mapping given whole: the key reader names the flag too.
  UserError nested = expect_parse_error(kValid, {"mesh.axes={x: 2, y: zero}"});
  EXPECT_EQ(nested.location().file, "--set mesh.axes={x: 2, y: zero}");
  // An unknown key brought in by --set.
  UserError key = expect_parse_error(kValid, {"model.top_k=2"});
  EXPECT_EQ(key.location().file, "--set model.top_k=2");
  EXPECT_NE(key.message().find("unknown key 'top_k'"), std::string::npos) << key.what();
}

TEST(WorkloadYaml, ShippedWorkloadsAreWithinTheSizeLimits) {
  for (const char* name :
       {"small", "dense_128b_8x8", "dense_128b_16x16", "dense_1t_16x16", "dense_1t_2048",
        "moe_37b_128", "moe_600b_2048", "moe_1t_2048", "maxtext_22b_v4_128"}) {
    const std::string path = fmt::format("{}/workloads/{}.yaml", PODSIM_SOURCE_DIR, name);
    EXPECT_NO_THROW(load_workload(path)) << path;
  }
}

// mesh.dcn: axes spanning slices. The compiler's mesh puts them first (slice-major device ids),
// devices multiply both; a dim may split over a list of axes (major first); a DCN axis of size 1
// is no axis at all (its sharding entries split nothing), so {data: 1} reads as no DCN axis.
TEST(WorkloadYaml, DcnAxesSpanSlicesAndASizeOneAxisIsNone) {
  const std::string two =
      replace(replace(kValid, "  axes: {x: 2, y: 4}", "  dcn: {data: 3}\n  axes: {x: 2, y: 4}"),
              "  activations: [x, null, y]", "  activations: [[data, x], null, y]");
  const Workload w = parse_workload(two, "w.yaml");
  EXPECT_EQ(w.mesh.num_slices(), 3);
  EXPECT_EQ(w.mesh.slice_device_count(), 8);
  EXPECT_EQ(w.mesh.device_count(), 24);
  const auto logical = w.mesh.logical_axes();
  ASSERT_EQ(logical.size(), 3u);
  EXPECT_EQ(logical[0], (std::pair<std::string, int64_t>{"data", 3}));
  ASSERT_EQ(w.sharding.front().first, "activations");
  EXPECT_EQ(w.sharding.front().second.front(), std::optional<std::string>("data,x"));

  const Workload one =
      parse_workload(two, "w.yaml", {"mesh.dcn.data=1"});  // one slice: as if mesh.dcn were absent
  const Workload plain = parse_workload(kValid, "w.yaml");
  EXPECT_EQ(one.mesh.logical_axes(), plain.mesh.logical_axes());
  EXPECT_EQ(one.mesh.device_count(), plain.mesh.device_count());
  EXPECT_EQ(one.sharding.front().second, plain.sharding.front().second);  // [x, null, y]
}

// A DCN axis also inside the slice is an error at its name in mesh.dcn, with a hint.
TEST(WorkloadYaml, DcnAxisAlsoInsideASliceIsAnError) {
  const UserError e = expect_parse_error(
      replace(kValid, "  axes: {x: 2, y: 4}", "  axes: {x: 2, y: 4}\n  dcn: {y: 2}"));
  EXPECT_NE(e.message().find("mesh axis 'y' is in both mesh.axes and mesh.dcn"), std::string::npos)
      << e.what();
  EXPECT_EQ(e.location().line, 5);
  EXPECT_EQ(e.location().column, 9);
  EXPECT_NE(e.hint().find("spans slices"), std::string::npos);
}

}  // namespace
}  // namespace podsim::workloads
