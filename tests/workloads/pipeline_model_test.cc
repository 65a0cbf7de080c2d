// Pipelining (training.pipeline_stages = S > 1): the dense Transformer's
// layers run through emit_pipeline with stage-stacked weights [S, ...] whose
// stage dim is on the `sharding.stage` axis; the pipelined forward computes
// the same loss as the plain layer stack with the same weights (GSPMD
// pipelining reorders work, not math); bad stage configurations are
// positioned UserErrors.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/sharding/mesh.h"
#include "compiler/training/pipelined_forward.h"
#include "compiler/training/training_step.h"
#include "workloads/model_builder.h"

namespace podsim::workloads {
namespace {

using compiler::Instruction;
using compiler::Literal;

std::string source(const std::string& relative) {
  return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

// small.yaml (M=32, N=4, D=8, V=64, L=16, B=8) on a [stage=2, x=2, y=2]
// mesh, 4 layers in 2 stages of 2, 4 microbatches of 2 rows, f32 so the
// pipelined and plain losses agree to rounding.
std::vector<std::string> pipelined_overrides() {
  return {"mesh.axes={stage: 2, x: 2, y: 2}", "model.layers=4",
          "training.pipeline_stages=2",       "training.microbatches=4",
          "sharding.stage=[stage]",           "model.dtypes={params: f32, activations: f32}"};
}

const Instruction* parameter(const compiler::Module& module, const std::string& op_name) {
  for (compiler::InstrId p : module.entry().parameters())
    if (module.entry().instr(p).op_name == op_name) return &module.entry().instr(p);
  return nullptr;
}

TEST(PipelinedModel, WeightsAreStageStackedWithTheStageDimOnTheStageAxis) {
  BuiltModel model =
      build_model(load_workload(source("workloads/small.yaml"), pipelined_overrides()));
  EXPECT_NO_THROW(compiler::check_pipelined_forward(model.module, 2));
  // Stacked layer_0 of the stage body: [S=2] + wq's [M=32, N=4, D=8].
  const Instruction* wq = parameter(model.module, "param/stage/layer_0/attention/wq");
  ASSERT_NE(wq, nullptr);
  EXPECT_EQ(wq->shape.dims(), (std::vector<int64_t>{2, 32, 4, 8}));
  ASSERT_TRUE(wq->sharding.has_value());
  // stage dim on "stage", then attn_qkv [x, y, null].
  auto axes = compiler::mesh_axes_of(compiler::parse_sharding(*wq->sharding), model.mesh, 4);
  ASSERT_TRUE(axes.has_value());
  EXPECT_EQ(*axes, (compiler::DimsMapping{{"stage"}, {"x"}, {"y"}, {}}));
  // Layers per stage = 4 / 2 = 2: a stacked layer_1 exists, layer_2 does not;
  // no unstacked layer weights are left in the entry.
  EXPECT_NE(parameter(model.module, "param/stage/layer_1/ffn/wo"), nullptr);
  EXPECT_EQ(parameter(model.module, "param/stage/layer_2/ffn/wo"), nullptr);
  for (compiler::InstrId p : model.module.entry().parameters())
    EXPECT_NE(model.module.entry().instr(p).op_name.rfind("param/layer_", 0), 0u);
  // The step inputs keep the global batch: the pipeline splits it itself.
  EXPECT_EQ(parameter(model.module, "input/tokens")->shape.dims(), (std::vector<int64_t>{8, 16}));
}

TEST(PipelinedModel, StateIsAnnotatedOnTheStageAxis) {
  BuiltModel model =
      build_model(load_workload(source("workloads/small.yaml"), pipelined_overrides()));
  // State [S=2, mb=8/4=2, L=16, M=32]: stage dim on "stage", the rest as
  // activations [x, null, y].
  int annotated = 0;
  for (const Instruction& in : model.module.entry().instructions()) {
    if (in.opcode != compiler::Opcode::kCustomCall || !in.sharding) continue;
    if (in.shape.dims() != std::vector<int64_t>{2, 2, 16, 32}) continue;
    auto axes = compiler::mesh_axes_of(compiler::parse_sharding(*in.sharding), model.mesh, 4);
    ASSERT_TRUE(axes.has_value());
    EXPECT_EQ(*axes, (compiler::DimsMapping{{"stage"}, {"x"}, {}, {"y"}}));
    ++annotated;
  }
  // Two annotations (shifted input and stage output) per iteration, M + S - 1 = 5 iterations.
  EXPECT_EQ(annotated, 10);
}

TEST(PipelinedModel, ParameterCountIsUnchanged) {
  BuiltModel model =
      build_model(load_workload(source("workloads/small.yaml"), pipelined_overrides()));
  int64_t total = 0;
  for (compiler::InstrId p : model.module.entry().parameters()) {
    const Instruction& in = model.module.entry().instr(p);
    if (in.op_name.rfind("param/", 0) == 0) total += in.shape.num_elements();
  }
  EXPECT_EQ(total, model.info.parameters);
}

// Token ids (i * 7 + salt) mod V: deterministic and in range.
Literal tokens(const compiler::Shape& shape, int64_t vocab, size_t salt) {
  Literal l(shape);
  for (size_t i = 0; i < l.values().size(); ++i)
    l.mutable_values()[i] = static_cast<double>((i * 7 + salt) % static_cast<size_t>(vocab));
  return l;
}

// The pipelined forward and the plain layer stack with the same weights give
// the same loss (variant: extra overrides for both, e.g. the FFN kind).
void expect_pipelined_loss_equals_plain(const std::vector<std::string>& variant) {
  std::vector<std::string> overrides = pipelined_overrides();
  overrides.insert(overrides.end(), variant.begin(), variant.end());
  BuiltModel piped = build_model(load_workload(source("workloads/small.yaml"), overrides));
  // The same model without pipelining: training off so the plain forward sees
  // the whole batch too (microbatching would halve it).
  std::vector<std::string> plain_overrides = {"mesh.axes={stage: 2, x: 2, y: 2}", "model.layers=4",
                                              "model.dtypes={params: f32, activations: f32}",
                                              "training.enabled=false"};
  plain_overrides.insert(plain_overrides.end(), variant.begin(), variant.end());
  BuiltModel plain = build_model(load_workload(source("workloads/small.yaml"), plain_overrides));

  // Random weights for the pipelined entry; the plain model reads global
  // layer k = s * (4 / 2) + j from entry s of stacked "layer_j".
  std::map<std::string, Literal> by_name;
  std::vector<Literal> piped_args;
  uint64_t seed = 1;
  for (compiler::InstrId p : piped.module.entry().parameters()) {
    const Instruction& in = piped.module.entry().instr(p);
    Literal value = in.op_name.rfind("input/", 0) == 0 ? tokens(in.shape, 64, seed)
                                                       : compiler::random_literal(in.shape, seed);
    by_name[in.op_name] = value;
    piped_args.push_back(value);
    ++seed;
  }
  std::vector<Literal> plain_args;
  for (compiler::InstrId p : plain.module.entry().parameters()) {
    const Instruction& in = plain.module.entry().instr(p);
    const std::string& name = in.op_name;
    if (name.rfind("param/layer_", 0) != 0) {
      ASSERT_TRUE(by_name.count(name)) << name;
      plain_args.push_back(by_name[name]);
      continue;
    }
    const size_t slash = name.find('/', 12);
    const int64_t layer = std::stoll(name.substr(12, slash - 12));
    const std::string stacked =
        fmt::format("param/stage/layer_{}{}", layer % 2, name.substr(slash));
    ASSERT_TRUE(by_name.count(stacked)) << stacked;
    const Literal& all = by_name[stacked];
    const size_t chunk = static_cast<size_t>(in.shape.num_elements());
    const auto begin =
        all.values().begin() + static_cast<std::ptrdiff_t>(chunk * static_cast<size_t>(layer / 2));
    plain_args.emplace_back(in.shape,
                            std::vector<double>(begin, begin + static_cast<std::ptrdiff_t>(chunk)));
  }
  const double piped_loss = compiler::evaluate(piped.module, piped_args).scalar_value();
  const double plain_loss = compiler::evaluate(plain.module, plain_args).scalar_value();
  EXPECT_TRUE(std::isfinite(piped_loss));
  EXPECT_GT(piped_loss, 0.0);
  EXPECT_NEAR(piped_loss, plain_loss, 1e-5 * std::abs(plain_loss));
}

TEST(PipelinedModel, LossIsFiniteAndEqualsThePlainStack) {
  expect_pipelined_loss_equals_plain({});
  // Learned positions (added before the pipeline) and a two-matrix FFN.
  SCOPED_TRACE("learned positions, relu");
  expect_pipelined_loss_equals_plain({"model.position=learned", "model.ffn=relu"});
}

TEST(PipelinedModel, ShippedExampleBuildsAndRuns) {
  // examples/pipelined_small.yaml: bf16 activations, loss finite and positive.
  BuiltModel model = build_model(load_workload(source("workloads/examples/pipelined_small.yaml")));
  EXPECT_NO_THROW(compiler::check_pipelined_forward(model.module, 2));
  std::vector<Literal> args;
  uint64_t seed = 1;
  for (compiler::InstrId p : model.module.entry().parameters()) {
    const Instruction& in = model.module.entry().instr(p);
    args.push_back(in.op_name.rfind("input/", 0) == 0 ? tokens(in.shape, 64, seed)
                                                      : compiler::random_literal(in.shape, seed));
    ++seed;
  }
  const double loss = compiler::evaluate(model.module, args).scalar_value();
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_GT(loss, 0.0);
}

TEST(PipelinedModel, TrainingStepAcceptsThePipelinedForward) {
  // What `podsim run` does with it: the step takes the pipeline's own
  // microbatches, keeps the global batch on its inputs and gives every
  // stacked weight an update of its own shape.
  Workload w = load_workload(source("workloads/small.yaml"), pipelined_overrides());
  BuiltModel model = build_model(w);
  compiler::TrainingStepOptions options;
  options.optimizer.kind = compiler::OptimizerKind::kSgd;
  options.microbatches = w.training.microbatches;
  options.pipeline_stages = w.training.pipeline_stages;
  options.mesh = model.mesh;
  compiler::TrainingStep step = compiler::build_training_step(model.module, options);
  EXPECT_NO_THROW(compiler::verify_module(step.module));
  EXPECT_EQ(parameter(step.module, "input/tokens")->shape.dims(), (std::vector<int64_t>{8, 16}));
  const compiler::Shape& root = step.module.entry().root_instr().shape;
  const Instruction* wq = parameter(step.module, "param/stage/layer_0/attention/wq");
  ASSERT_NE(wq, nullptr);
  bool has_update = false;
  for (const compiler::Shape& leaf : root.tuple_shapes()) has_update |= leaf == wq->shape;
  EXPECT_TRUE(has_update);
}

TEST(PipelinedModel, CompiledStepShiftsTheStateWithCollectivePermutes) {
  // With the stage dim on the 2-device "stage" axis, the shift of the state
  // (concatenate of the next microbatch with state[0:S-1]) moves stage s's
  // output to the device holding stage s+1: the partitioner turns it into a
  // collective-permute (GSPMD section 3.3).
  Workload w = load_workload(source("workloads/small.yaml"), pipelined_overrides());
  BuiltModel model = build_model(w);
  compiler::CompileOptions options;
  options.num_devices = w.mesh.device_count();
  compiler::TrainingStepOptions training;
  training.optimizer.kind = compiler::OptimizerKind::kSgd;
  training.microbatches = w.training.microbatches;
  training.pipeline_stages = w.training.pipeline_stages;
  training.mesh = model.mesh;
  options.training = training;
  compiler::SpmdProgram program = compiler::compile(model.module, options);
  int permutes = 0;
  for (const Instruction& in : program.module.entry().instructions())
    permutes += in.opcode == compiler::Opcode::kCollectivePermute;
  EXPECT_GT(permutes, 0);
}

TEST(PipelinedModel, ShippedExampleCompilesWithAdafactorAndFullRemat) {
  // The example's own training section (Adafactor, factored moments of the
  // rank-3..5 stacked weights, weight-update sharding) plus full remat,
  // which recomputes each pipeline iteration: the recomputed FLOPs are > 0.
  Workload w = load_workload(source("workloads/examples/pipelined_small.yaml"));
  BuiltModel model = build_model(w);
  compiler::CompileOptions options;
  options.num_devices = w.mesh.device_count();
  compiler::TrainingStepOptions training;  // Adafactor by default, as the YAML
  training.weight_update_sharding = w.training.weight_update_sharding;
  training.microbatches = w.training.microbatches;
  training.pipeline_stages = w.training.pipeline_stages;
  training.remat = compiler::RematKind::kFull;
  training.mesh = model.mesh;
  options.training = training;
  compiler::SpmdProgram program = compiler::compile(model.module, options);
  EXPECT_EQ(program.num_devices, 8);
  EXPECT_GT(program.stats.recomputed_flops, 0.0);
}

UserError expect_error(const std::vector<std::string>& overrides) {
  try {
    build_model(load_workload(source("workloads/small.yaml"), overrides));
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a UserError";
  return UserError("none");
}

TEST(PipelinedModel, LayersThatDoNotDivideIntoStagesAreAnError) {
  std::vector<std::string> overrides = pipelined_overrides();
  overrides.push_back("model.layers=3");
  UserError e = expect_error(overrides);
  EXPECT_NE(e.message().find("model.layers (3) does not divide into training.pipeline_stages (2)"),
            std::string::npos)
      << e.what();
  EXPECT_NE(e.hint().find("divides model.layers"), std::string::npos) << e.what();
}

TEST(PipelinedModel, MissingStageAxisIsAnError) {
  UserError e = expect_error(
      {"mesh.axes={stage: 2, x: 2, y: 2}", "model.layers=4", "training.pipeline_stages=2"});
  EXPECT_NE(e.message().find("needs the mesh axis of the stages"), std::string::npos) << e.what();
  EXPECT_NE(e.hint().find("stage: [<mesh axis>]"), std::string::npos) << e.what();
}

TEST(PipelinedModel, StageAxisSharingAnotherTensorIsAPositionedError) {
  // The stage axis x also shards the activations, small.yaml's first entry.
  UserError e =
      expect_error({"model.layers=4", "training.pipeline_stages=2", "sharding.stage=[x]"});
  EXPECT_NE(e.message().find("'sharding.activations' uses mesh axis 'x', the pipeline stage axis"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(e.location().line, 24);  // "  activations: [x, null, y]"
}

TEST(PipelinedModel, StageShardingWithoutPipeliningIsAnError) {
  UserError e = expect_error({"mesh.axes={stage: 2, x: 2, y: 2}", "sharding.stage=[stage]"});
  EXPECT_NE(e.message().find("'sharding.stage' is given but training.pipeline_stages is 1"),
            std::string::npos)
      << e.what();
}

TEST(PipelinedModel, MoeModelsAreNotPipelined) {
  try {
    build_model(load_workload(source("workloads/moe_37b_128.yaml"),
                              {"mesh.axes={stage: 2, x: 64}", "mesh.physical=[8, 8, 2]",
                               "model.layers=4", "model.global_batch=4", "model.seq_len=64",
                               "training.pipeline_stages=2", "sharding.stage=[stage]"}));
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("dense_transformer models only"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace podsim::workloads
