// Built models run: the forward of small.yaml (dense) and of a tiny MoE model
// executes in the reference interpreter and gives a finite loss near ln(V)
// (random weights in [-1, 1] and layer norms keep logits O(1)), and the
// module survives print -> parse.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/interpreter/interpreter.h"
#include "workloads/model_builder.h"

namespace podsim::workloads {
namespace {

using compiler::Literal;

std::string source(const std::string& relative) {
  return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

// Arguments for the entry: tokens/targets in [0, V), weights random.
std::vector<Literal> arguments(const compiler::Module& module, int64_t vocab) {
  std::vector<Literal> args;
  uint64_t seed = 1;
  for (compiler::InstrId p : module.entry().parameters()) {
    const compiler::Instruction& in = module.entry().instr(p);
    if (in.op_name.rfind("input/", 0) == 0) {
      Literal tokens(in.shape);
      for (size_t i = 0; i < tokens.values().size(); ++i)
        tokens.mutable_values()[i] =
            static_cast<double>((i * 7 + seed) % static_cast<size_t>(vocab));
      args.push_back(tokens);
    } else {
      args.push_back(compiler::random_literal(in.shape, seed));
    }
    ++seed;
  }
  return args;
}

double run_loss(const BuiltModel& model, int64_t vocab) {
  Literal loss = compiler::evaluate(model.module, arguments(model.module, vocab));
  EXPECT_TRUE(loss.shape().is_scalar());
  EXPECT_EQ(loss.shape().dtype(), compiler::DType::kF32);
  return loss.scalar_value();
}

TEST(ModelRun, SmallYamlForwardGivesFiniteLoss) {
  BuiltModel model = build_model(load_workload(source("workloads/small.yaml")));
  const double loss = run_loss(model, 64);
  EXPECT_TRUE(std::isfinite(loss));
  // Cross-entropy is >= 0 and, for logits of size O(1..10), far below
  // ln(64) + 64 (a loss above would mean one logit dominating by > 64).
  EXPECT_GT(loss, 0.0);
  EXPECT_LT(loss, std::log(64.0) + 64.0);
}

TEST(ModelRun, LearnedPositionsAndTwoMatrixFfnsRun) {
  for (const char* ffn : {"model.ffn=gelu", "model.ffn=relu"}) {
    SCOPED_TRACE(ffn);
    BuiltModel model =
        build_model(load_workload(source("workloads/small.yaml"), {"model.position=learned", ffn}));
    // Learned table [L, M] = [16, 32] replaces the 2 relative-bias tables [32, 4].
    bool has_positions = false;
    for (const auto& in : model.module.entry().instructions())
      if (in.op_name == "param/embedding/position")
        has_positions = in.shape.dims() == std::vector<int64_t>{16, 32};
    EXPECT_TRUE(has_positions);
    EXPECT_TRUE(std::isfinite(run_loss(model, 64)));
  }
}

TEST(ModelRun, SmallYamlPrintsAndReparses) {
  BuiltModel model = build_model(load_workload(source("workloads/small.yaml")));
  const std::string text = compiler::print_hlo(model.module);
  compiler::Module again = compiler::parse_hlo(text, "small.hlo");
  EXPECT_EQ(compiler::print_hlo(again), text);
  EXPECT_NE(text.find("op_name=\"fwd/layer_1/ffn/wi_0\""), std::string::npos);
}

const char* kTinyMoe = R"(name: tiny-moe
mesh:
  axes: {x: 4}
model:
  kind: moe_transformer
  structure: encoder_decoder
  layers: 4
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

TEST(ModelRun, TinyMoeEncoderDecoderForwardGivesFiniteLoss) {
  BuiltModel model = build_model(parse_workload(kTinyMoe, "moe.yaml"));
  const double loss = run_loss(model, 32);
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_GT(loss, 0.0);
}

}  // namespace
}  // namespace podsim::workloads
