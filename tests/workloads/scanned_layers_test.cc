// model.layer_loop = scan: the stack is one counted while loop over
// layer-stacked weights whose forward computes the same loss as the unrolled
// layers (weights stacked from the unrolled ones, interpreter), for a dense
// and an encoder-decoder MoE model; the period of the body; the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/interpreter/interpreter.h"
#include "workloads/model_builder.h"
#include "workloads/scanned_layers.h"

namespace podsim::workloads {
namespace {

using compiler::Instruction;
using compiler::Literal;
using compiler::Opcode;

std::string source(const std::string& relative) {
  return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

// Unrolled arguments: tokens/targets in [0, V), weights random per name.
std::map<std::string, Literal> unrolled_arguments(const compiler::Module& module, int64_t vocab) {
  std::map<std::string, Literal> args;
  uint64_t seed = 1;
  for (compiler::InstrId p : module.entry().parameters()) {
    const Instruction& in = module.entry().instr(p);
    if (in.op_name.rfind("input/", 0) == 0) {
      Literal tokens(in.shape);
      for (size_t i = 0; i < tokens.values().size(); ++i)
        tokens.mutable_values()[i] =
            static_cast<double>((i * 7 + seed) % static_cast<size_t>(vocab));
      args.emplace(in.op_name, tokens);
    } else {
      args.emplace(in.op_name, compiler::random_literal(in.shape, seed));
    }
    ++seed;
  }
  return args;
}

// "param/scan/layer_<i>/<rest>" [T, ...] = the unrolled "param/layer_<i + t P>/<rest>"
// for t = 0..T-1, stacked (P = the body's period).
std::vector<Literal> scan_arguments(const compiler::Module& scan,
                                    const std::map<std::string, Literal>& unrolled,
                                    int64_t period) {
  std::vector<Literal> args;
  const std::string stacked = "param/scan/layer_";
  for (compiler::InstrId p : scan.entry().parameters()) {
    const Instruction& in = scan.entry().instr(p);
    if (in.op_name.rfind(stacked, 0) != 0) {
      args.push_back(unrolled.at(in.op_name));
      continue;
    }
    const std::string rest = in.op_name.substr(stacked.size());
    const size_t slash = rest.find('/');
    const int64_t first = std::stoll(rest.substr(0, slash));
    Literal out(in.shape);
    size_t at = 0;
    for (int64_t t = 0; t < in.shape.dim(0); ++t) {
      const Literal& layer =
          unrolled.at("param/layer_" + std::to_string(first + t * period) + rest.substr(slash));
      for (double v : layer.values()) out.mutable_values()[at++] = v;
    }
    EXPECT_EQ(at, out.values().size()) << in.op_name;
    args.push_back(out);
  }
  return args;
}

double loss_of(const compiler::Module& module, const std::vector<Literal>& args) {
  return compiler::evaluate(module, args).scalar_value();
}

// The loss of the unrolled module on its arguments by op_name.
double unrolled_loss(const compiler::Module& module, const std::map<std::string, Literal>& args) {
  std::vector<Literal> flat;
  for (compiler::InstrId p : module.entry().parameters())
    flat.push_back(args.at(module.entry().instr(p).op_name));
  return loss_of(module, flat);
}

int count_entry(const compiler::Module& module, Opcode opcode) {
  int n = 0;
  for (const Instruction& in : module.entry().instructions()) n += in.opcode == opcode;
  return n;
}

TEST(ScannedLayers, DenseForwardEqualsTheUnrolledLayers) {
  const std::string f32 = "model.dtypes={params: f32, activations: f32}";
  const BuiltModel unrolled = build_model(load_workload(source("workloads/small.yaml"), {f32}));
  const BuiltModel scan =
      build_model(load_workload(source("workloads/small.yaml"), {f32, "model.layer_loop=scan"}));
  EXPECT_EQ(count_entry(scan.module, Opcode::kWhile), 1);
  EXPECT_EQ(count_entry(unrolled.module, Opcode::kWhile), 0);
  // Same trainable parameters, fewer entry parameters (one per stacked weight).
  int64_t unrolled_elements = 0, scan_elements = 0;
  for (compiler::InstrId p : unrolled.module.entry().parameters())
    unrolled_elements += unrolled.module.entry().instr(p).shape.num_elements();
  for (compiler::InstrId p : scan.module.entry().parameters())
    scan_elements += scan.module.entry().instr(p).shape.num_elements();
  EXPECT_EQ(scan_elements, unrolled_elements);
  EXPECT_LT(scan.module.entry().parameters().size(), unrolled.module.entry().parameters().size());

  const auto args = unrolled_arguments(unrolled.module, 64);
  const double expected = unrolled_loss(unrolled.module, args);
  ASSERT_TRUE(std::isfinite(expected));
  // f32 forward over the same values in the same order: equal to rounding.
  EXPECT_NEAR(loss_of(scan.module, scan_arguments(scan.module, args, 1)), expected,
              1e-5 * std::abs(expected));
}

// The body of a scan carries every per-stack attention input: rotary
// positions (cos / sin tables) as well as the mask and relative buckets;
// and the layer variants (parallel block, qk_norm, grouped K/V heads,
// gathered embedding) scan like any layer.
TEST(ScannedLayers, RotaryAndLayerVariantsEqualTheUnrolledLayers) {
  const std::string f32 = "model.dtypes={params: f32, activations: f32}";
  for (const std::vector<std::string>& keys :
       {std::vector<std::string>{"model.position=rotary"},
        std::vector<std::string>{"model.position=rotary", "model.block=parallel",
                                 "model.qk_norm=true", "model.kv_heads=2",
                                 "model.embedding_lookup=gather", "model.norm=layer"},
        std::vector<std::string>{"model.block=parallel", "model.kv_heads=1"}}) {
    SCOPED_TRACE(keys.back());
    std::vector<std::string> unrolled_keys = keys;
    unrolled_keys.push_back(f32);
    std::vector<std::string> scan_keys = unrolled_keys;
    scan_keys.push_back("model.layer_loop=scan");
    const BuiltModel unrolled =
        build_model(load_workload(source("workloads/small.yaml"), unrolled_keys));
    const BuiltModel scan = build_model(load_workload(source("workloads/small.yaml"), scan_keys));
    const auto args = unrolled_arguments(unrolled.module, 64);
    const double expected = unrolled_loss(unrolled.module, args);
    ASSERT_TRUE(std::isfinite(expected));
    EXPECT_NEAR(loss_of(scan.module, scan_arguments(scan.module, args, 1)), expected,
                1e-5 * std::abs(expected));
  }
}

// 8 layers: 4 per stack, MoE every 2nd (moe_every 2), f32.
const char* kTinyMoe = R"(name: tiny-moe
mesh:
  axes: {x: 4}
model:
  kind: moe_transformer
  structure: encoder_decoder
  layers: 8
  model_dim: 16
  ffn_dim: 32
  heads: 2
  head_dim: 8
  vocab: 32
  ffn: relu
  seq_len: 8
  global_batch: 4
  experts: 4
  top_k: 2
  dtypes: {params: f32, activations: f32}
sharding:
  activations: [x, null, null]
  experts: [x]
)";

TEST(ScannedLayers, EncoderDecoderMoeForwardEqualsTheUnrolledLayers) {
  const BuiltModel unrolled = build_model(parse_workload(kTinyMoe, "moe.yaml"));
  const BuiltModel scan =
      build_model(parse_workload(kTinyMoe, "moe.yaml", {"model.layer_loop=scan"}));
  EXPECT_EQ(count_entry(scan.module, Opcode::kWhile), 2);  // encoder and decoder stacks
  const auto args = unrolled_arguments(unrolled.module, 32);
  const double expected = unrolled_loss(unrolled.module, args);
  ASSERT_TRUE(std::isfinite(expected));
  // Each stack of 4 layers alternates dense and MoE FFNs: a body of 2 layers.
  EXPECT_NEAR(loss_of(scan.module, scan_arguments(scan.module, args, 2)), expected,
              1e-5 * std::abs(expected));
}

TEST(ScannedLayers, PeriodIsTheSmallestRepeat) {
  auto plan = [](std::vector<bool> moe) {
    std::vector<LayerPlan> layers;
    for (size_t i = 0; i < moe.size(); ++i)
      layers.push_back(LayerPlan{static_cast<int64_t>(i), false, false, moe[i]});
    return layers;
  };
  EXPECT_EQ(scan_period(plan({false, false, false, false})), 1u);
  EXPECT_EQ(scan_period(plan({false, true, false, true})), 2u);
  EXPECT_EQ(scan_period(plan({false, false, true, false, false, true})), 3u);
  EXPECT_EQ(scan_period(plan({false, true, true})), std::nullopt);  // no period below the count
}

TEST(ScannedLayers, PipelinedStackRefusesScan) {
  // small.yaml pipelined as pipeline_model_test builds it, plus scan.
  EXPECT_THROW(build_model(load_workload(source("workloads/small.yaml"),
                                         {"mesh.axes={stage: 2, x: 2, y: 2}", "model.layers=4",
                                          "training.pipeline_stages=2", "training.microbatches=4",
                                          "sharding.stage=[stage]", "model.layer_loop=scan"})),
               UserError);
}

TEST(ScannedLayers, UnknownLoopKindIsAUserError) {
  EXPECT_THROW(load_workload(source("workloads/small.yaml"), {"model.layer_loop=rolled"}),
               UserError);
}

TEST(ScannedLayers, TrainingStepCompilesTheBodyOnce) {
  // The compiled program's instruction count does not grow with the layers.
  auto compiled_size = [](int64_t layers) {
    const Workload w =
        load_workload(source("workloads/small.yaml"),
                      {"model.layer_loop=scan", "model.layers=" + std::to_string(layers)});
    const BuiltModel model = build_model(w);
    compiler::CompileOptions options;
    options.num_devices = w.mesh.device_count();
    compiler::TrainingStepOptions training;
    training.mesh = model.mesh;
    options.training = training;
    const compiler::SpmdProgram program = compiler::compile(model.module, options);
    int64_t total = 0;
    for (const compiler::Computation& c : program.module.computations()) total += c.size();
    return total;
  };
  EXPECT_EQ(compiled_size(8), compiled_size(32));
}

}  // namespace
}  // namespace podsim::workloads
