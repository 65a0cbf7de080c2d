// Numeric equivalence of partitioned training steps :
// a small forward with sharded weights -> build_training_step (SGD, Adam,
// Adafactor; remat none/save_dots/full; microbatches; pipelining;
// weight-update sharding on/off) -> propagate_shardings -> partition_spmd
// -> verify_partitioning on a [2,2] or [2,4] mesh.
//
// Values are f64 so the only differences between the reference and the
// per-device program are summation-order roundings (~1e-16 relative per
// term over < 100 terms); 1e-9 relative is far above that and far below a
// wrong gradient or update (inputs are multiples of 1/64 in [-1, 1]).
// Optimizer slots get positive inputs (second moments >= 1/64) and Adam's
// step count 3, so no update divides by zero or takes sqrt of a negative
// (a NaN would match the reference's NaN and hide a wrong element); the
// tests also assert the reference result is finite.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "compiler/hlo/hlo_printer.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/propagation/propagation.h"
#include "compiler/sharding/mesh.h"
#include "compiler/spmd/partitioner.h"
#include "compiler/spmd/verify.h"
#include "compiler/training/pipelined_forward.h"
#include "compiler/training/training_step.h"
#include "gradient_check.h"
#include "test_models.h"

namespace podsim::compiler::testing {
namespace {

const DType F = DType::kF64;
constexpr int64_t kD = 4, kHidden = 8;
constexpr double kTolerance = 1e-9;

DeviceMesh mesh22() { return DeviceMesh({{"x", 2}, {"y", 2}}); }
DeviceMesh mesh24() { return DeviceMesh({{"x", 2}, {"y", 4}}); }

std::string split(const DeviceMesh& mesh, int64_t rank, const DimsMapping& dims) {
  return mesh_split(rank, mesh, dims).to_string();
}

// Two residual MLP layers on x [batch, 4], data-parallel over mesh axis x,
// model-parallel (hidden dim) over y:
//   layer l: h = x w_in (4 x 8, {-, y}); a = tanh(h) * h;
//            x' = x + (a w_out (8 x 4, {y, -})) * scale (4, replicated)
//   loss = mean((x_final - target)^2), x and target {x, -}.
// Ops are scoped "fwd/layer_<l>/ffn" (remat finds the layers) and "fwd/loss".
struct MlpSpec {
  DeviceMesh mesh;
  int64_t batch = 4;
  int64_t hidden = kHidden;
  DType dtype = F;
  DimsMapping w_in{{}, {"y"}};
  DimsMapping w_out{{"y"}, {}};
  DimsMapping activations{{"x"}, {}};  // x and target
};

Module sharded_mlp(const MlpSpec& spec) {
  const DType t = spec.dtype;
  const int64_t batch = spec.batch;
  ForwardBuilder f;
  auto& b = f.b;
  struct Layer {
    InstrId w_in, w_out, scale;
  };
  std::vector<Layer> layers;
  for (int l = 0; l < 2; ++l) {
    Layer layer{f.param(Shape(t, {kD, spec.hidden}), fmt::format("layer_{}/w_in", l)),
                f.param(Shape(t, {spec.hidden, kD}), fmt::format("layer_{}/w_out", l)),
                f.param(Shape(t, {kD}), fmt::format("layer_{}/scale", l))};
    b.set_sharding(layer.w_in, split(spec.mesh, 2, spec.w_in));
    b.set_sharding(layer.w_out, split(spec.mesh, 2, spec.w_out));
    b.set_sharding(layer.scale, "{replicated}");
    layers.push_back(layer);
  }
  InstrId x = f.input(Shape(t, {batch, kD}), "x");
  InstrId target = f.input(Shape(t, {batch, kD}), "target");
  b.set_sharding(x, split(spec.mesh, 2, spec.activations));
  b.set_sharding(target, split(spec.mesh, 2, spec.activations));
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  for (int l = 0; l < 2; ++l) {
    const Layer& layer = layers[static_cast<size_t>(l)];
    b.set_op_name_scope(fmt::format("fwd/layer_{}/ffn", l));
    InstrId h = b.dot(x, layer.w_in, mm);
    InstrId a = b.binary(Opcode::kMultiply, b.unary(Opcode::kTanh, h), h);
    InstrId y = b.binary(Opcode::kMultiply, b.dot(a, layer.w_out, mm),
                         b.broadcast(layer.scale, {batch, kD}, {1}));
    x = b.binary(Opcode::kAdd, x, y);
  }
  b.set_op_name_scope("fwd/loss");
  InstrId diff = b.binary(Opcode::kSubtract, x, target);
  InstrId sum = training::reduce_sum_all(b, f.reducers, b.binary(Opcode::kMultiply, diff, diff));
  InstrId loss =
      b.binary(Opcode::kMultiply, sum, b.scalar_constant(t, 1.0 / static_cast<double>(batch * kD)));
  f.module.set_entry(f.module.add_computation(std::move(b).build(loss)));
  return f.module;
}

Module sharded_mlp(const DeviceMesh& mesh, int64_t batch) {
  return sharded_mlp(MlpSpec{mesh, batch});
}

// Random inputs (seed 1000 + number, as default_args), with optimizer state
// made valid: slots |v| + 1/64, Adam's step count 3.
std::vector<Literal> step_arguments(const Module& step) {
  std::vector<Literal> args;
  const Computation& entry = step.entry();
  for (InstrId param : entry.parameters()) {
    const Instruction& in = entry.instr(param);
    Literal value = random_literal(in.shape, 1000 + static_cast<uint64_t>(args.size()));
    if (in.op_name == "opt_state/global/step") {
      value = Literal::scalar(in.shape.dtype(), 3);
    } else if (training::starts_with(in.op_name, "opt_state/")) {
      for (double& v : value.mutable_values()) v = std::abs(v) + 1.0 / 64;
    }
    args.push_back(std::move(value));
  }
  return args;
}

bool all_finite(const Literal& value) {
  if (value.is_tuple()) {
    for (const Literal& element : value.elements())
      if (!all_finite(element)) return false;
    return true;
  }
  for (double v : value.values())
    if (!std::isfinite(v)) return false;
  return true;
}

struct PartitionedStep {
  Module annotated;
  SpmdResult result;
  VerifyResult verify;
  int64_t reduce_scatter_ops = 0;  // counted in every computation of the program
};

// build_training_step -> propagate -> partition -> verify.
PartitionedStep partition_step(const Module& forward, const TrainingStepOptions& options,
                               int64_t devices, double tolerance = kTolerance) {
  PartitionedStep p{build_training_step(forward, options).module, {}, {}};
  p.annotated.set_num_partitions(devices);
  propagate_shardings(p.annotated);
  p.result = partition_spmd_with_stats(p.annotated, SpmdOptions{devices});
  VerifyOptions verify;
  verify.tolerance = tolerance;
  verify.arguments = step_arguments(p.annotated);
  EXPECT_TRUE(all_finite(evaluate(p.annotated, verify.arguments)));
  p.verify = verify_partitioning(p.annotated, p.result.module, verify);
  for (const Computation& c : p.result.module.computations())
    for (const Instruction& in : c.instructions())
      p.reduce_scatter_ops += in.opcode == Opcode::kReduceScatter;
  return p;
}

TrainingStepOptions options_for(OptimizerKind kind, const DeviceMesh& mesh,
                                bool weight_update_sharding) {
  TrainingStepOptions options;
  options.optimizer.kind = kind;
  if (kind == OptimizerKind::kAdam) options.optimizer.beta1 = 0.9;
  options.optimizer.epsilon = 1e-8;
  options.weight_update_sharding = weight_update_sharding;
  options.mesh = mesh;
  return options;
}

std::string describe(const PartitionedStep& p) {
  return fmt::format(
      "{}\nall-reduces {}, reduce-scatters {}, all-gathers {}, full replications {}, fallbacks {}",
      p.verify.first_mismatch, p.result.stats.all_reduces, p.result.stats.reduce_scatters,
      p.result.stats.all_gathers, p.result.stats.full_replications,
      p.result.stats.default_fallbacks);
}

TEST(PartitionedStep, EachOptimizerWithAndWithoutWeightUpdateSharding) {
  for (OptimizerKind kind :
       {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdafactor}) {
    for (bool wus : {false, true}) {
      for (const DeviceMesh& mesh : {mesh22(), mesh24()}) {
        PartitionedStep p =
            partition_step(sharded_mlp(mesh, 4), options_for(kind, mesh, wus), mesh.num_devices());
        EXPECT_TRUE(p.verify.ok) << "optimizer " << static_cast<int>(kind) << " wus " << wus
                                 << " devices " << mesh.num_devices() << ": " << describe(p);
      }
    }
  }
}

// The batch is split over x, so every weight gradient is a partial sum over
// x. With weight-update sharding on mesh {x: 2, y: 4} each update is split
// over x as well (weight_update_sharding.h: x goes to the dim with the
// largest per-device extent): w_in [4,8] {-,y} -> {x,y} (extents 4 vs 2),
// w_out [8,4] {y,-} -> {y,x} (extents 2 vs 4), both [2,2] per device;
// scale [4] -> {x}, [2] per device. Without it the updates keep the
// weights' shardings (replicated over x) and the sums stay all-reduces.
PartitionedStep sgd_step_on_mesh24(bool weight_update_sharding) {
  const DeviceMesh mesh = mesh24();
  return partition_step(sharded_mlp(mesh, 4),
                        options_for(OptimizerKind::kSgd, mesh, weight_update_sharding), 8);
}

std::vector<Shape> reduce_scatter_shapes(const Module& program) {
  std::vector<Shape> shapes;
  for (const Computation& c : program.computations())
    for (const Instruction& in : c.instructions())
      if (in.opcode == Opcode::kReduceScatter) shapes.push_back(in.shape);
  return shapes;
}

TEST(PartitionedStep, WeightUpdateShardingTurnsMatrixGradientsIntoReduceScatters) {
  PartitionedStep on = sgd_step_on_mesh24(true);
  PartitionedStep off = sgd_step_on_mesh24(false);
  EXPECT_TRUE(on.verify.ok) << describe(on);
  EXPECT_TRUE(off.verify.ok) << describe(off);
  // The four matrix gradients (dots contracting the x-split batch) are
  // reduce-scattered straight into their [2,2] update shards.
  std::vector<Shape> shapes = reduce_scatter_shapes(on.result.module);
  EXPECT_EQ(on.reduce_scatter_ops, on.result.stats.reduce_scatters);
  EXPECT_GE(std::count(shapes.begin(), shapes.end(), Shape(F, {2, 2})), 4) << describe(on);
  // Without weight-update sharding no gradient is scattered.
  EXPECT_EQ(off.reduce_scatter_ops, 0) << describe(off);
}

// DISABLED: partitioner gap (compiler/spmd/reduce_handler.cc). The scale
// gradients are reduces over the x-split batch whose result is split over x
// ({devices=[2,4]<=[8] last_tile_dim_replicate}); the reduce handler
// all-reduces the full [4] partial sums and then dynamic-slices the [2]
// shard instead of reduce-scattering (twice the bytes on the wire). Numbers
// are right (the verify tests above pass); enable once reduce + tiled
// result emits a reduce-scatter.
TEST(PartitionedStep, WeightUpdateShardingReduceScattersVectorGradients) {
  PartitionedStep on = sgd_step_on_mesh24(true);
  std::vector<Shape> shapes = reduce_scatter_shapes(on.result.module);
  EXPECT_EQ(std::count(shapes.begin(), shapes.end(), Shape(F, {2})), 2) << describe(on);
}

TEST(PartitionedStep, VerifyCatchesAWrongUpdateAndNamesItsLeaf) {
  // Doubling the learning rate of layer_0/scale's update in the per-device
  // program changes root leaf 3 (tuple(loss, w_in, w_out, scale, ...)) by
  // lr * gradient, far above 1e-9 unless that gradient is 0 everywhere.
  PartitionedStep p = sgd_step_on_mesh24(true);
  ASSERT_TRUE(p.verify.ok) << describe(p);
  Computation& entry = p.result.module.mutable_entry();
  int changed = 0;
  for (Instruction& in : entry.mutable_instructions()) {
    if (in.opcode == Opcode::kConstant && in.op_name == "opt/layer_0/scale" && in.attrs.literal &&
        !in.attrs.literal->is_tuple() && in.attrs.literal->values().size() == 1 &&
        in.attrs.literal->scalar_value() == 1e-3) {
      in.attrs.literal->mutable_values()[0] = 2e-3;
      ++changed;
    }
  }
  ASSERT_EQ(changed, 1) << print_hlo(p.result.module);
  VerifyOptions options;
  options.tolerance = kTolerance;
  options.arguments = step_arguments(p.annotated);
  VerifyResult wrong = verify_partitioning(p.annotated, p.result.module, options);
  EXPECT_FALSE(wrong.ok);
  EXPECT_NE(wrong.first_mismatch.find("{3}"), std::string::npos) << wrong.first_mismatch;
}

TEST(PartitionedStep, RematPolicies) {
  const DeviceMesh mesh = mesh24();
  struct Case {
    RematKind kind;
    std::string policy;
  };
  for (const Case& c : {Case{RematKind::kNone, ""}, Case{RematKind::kSelective, "save_dots"},
                        Case{RematKind::kFull, ""}}) {
    TrainingStepOptions options = options_for(OptimizerKind::kAdam, mesh, true);
    options.remat = c.kind;
    options.remat_policy = c.policy;
    PartitionedStep p = partition_step(sharded_mlp(mesh, 4), options, 8);
    EXPECT_TRUE(p.verify.ok) << "remat " << static_cast<int>(c.kind) << ": " << describe(p);
  }
}

TEST(PartitionedStep, TwoMicrobatches) {
  // Forward built for 4 rows; the step's inputs hold 8 (rows k, k+2, ...).
  for (bool wus : {false, true}) {
    const DeviceMesh mesh = mesh24();
    TrainingStepOptions options = options_for(OptimizerKind::kAdafactor, mesh, wus);
    options.microbatches = 2;
    PartitionedStep p = partition_step(sharded_mlp(mesh, 4), options, 8);
    EXPECT_TRUE(p.verify.ok) << "wus " << wus << ": " << describe(p);
    EXPECT_EQ(p.annotated.entry().instr(p.annotated.entry().parameters()[6]).shape,
              Shape(F, {8, kD}));
  }
}

// ---- Pipelining: 2 stages over mesh axis "stage", data over "data" ----

// stage(a [mb, 4], w [4, 4], s [4]) = tanh(a w) * s + a
CompId add_stage_body(Module& m, int64_t mb) {
  ComputationBuilder b("stage", &m);
  b.set_op_name_scope("fwd/stage");
  InstrId a = b.parameter(0, Shape(F, {mb, kD}), "a");
  InstrId w = b.parameter(1, Shape(F, {kD, kD}), "w");
  InstrId s = b.parameter(2, Shape(F, {kD}), "s");
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  InstrId h = b.unary(Opcode::kTanh, b.dot(a, w, mm));
  InstrId out =
      b.binary(Opcode::kAdd, b.binary(Opcode::kMultiply, h, b.broadcast(s, {mb, kD}, {1})), a);
  return m.add_computation(std::move(b).build(out));
}

DeviceMesh pipeline_mesh(int64_t data = 2) { return DeviceMesh({{"stage", 2}, {"data", data}}); }

// 2 stages, 2 microbatches of mb rows; stage weights [2, ...] split over
// "stage", the state [2, mb, 4] over (stage, data), inputs over data.
Module pipelined_forward(int64_t mb = 2, const DeviceMesh& mesh = pipeline_mesh()) {
  const int64_t stages = 2, microbatches = 2, batch = mb * microbatches;
  ForwardBuilder f;
  auto& b = f.b;
  InstrId w = f.param(Shape(F, {stages, kD, kD}), "w");
  InstrId s = f.param(Shape(F, {stages, kD}), "s");
  InstrId x = f.input(Shape(F, {batch, kD}), "x");
  InstrId target = f.input(Shape(F, {batch, kD}), "target");
  b.set_sharding(w, split(mesh, 3, {{"stage"}, {}, {}}));
  b.set_sharding(s, split(mesh, 2, {{"stage"}, {}}));
  b.set_sharding(x, split(mesh, 2, {{"data"}, {}}));
  b.set_sharding(target, split(mesh, 2, {{"data"}, {}}));
  PipelineRequest r;
  r.stages = stages;
  r.microbatches = microbatches;
  r.stage_body = add_stage_body(f.module, mb);
  r.inputs = x;
  r.stacked_weights = {w, s};
  r.state_sharding = split(mesh, 3, {{"stage"}, {"data"}, {}});
  InstrId out = emit_pipeline(b, f.module, r);
  b.set_op_name_scope("fwd/loss");
  InstrId diff = b.binary(Opcode::kSubtract, out, target);
  InstrId sum = training::reduce_sum_all(b, f.reducers, b.binary(Opcode::kMultiply, diff, diff));
  InstrId loss =
      b.binary(Opcode::kMultiply, sum, b.scalar_constant(F, 1.0 / static_cast<double>(batch * kD)));
  f.module.set_entry(f.module.add_computation(std::move(b).build(loss)));
  return f.module;
}

TEST(PartitionedStep, TwoPipelineStages) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam}) {
    for (bool wus : {false, true}) {
      TrainingStepOptions options = options_for(kind, pipeline_mesh(), wus);
      options.pipeline_stages = 2;
      options.microbatches = 2;
      PartitionedStep p = partition_step(pipelined_forward(), options, 4);
      EXPECT_TRUE(p.verify.ok) << "optimizer " << static_cast<int>(kind) << " wus " << wus << ": "
                               << describe(p);
      // The stage shift of a stage-sharded state is a collective-permute.
      EXPECT_GT(p.result.stats.collective_permutes, 0) << describe(p);
    }
  }
}

TEST(PartitionedStep, TwoPipelineStagesWithFullRemat) {
  TrainingStepOptions options = options_for(OptimizerKind::kAdafactor, pipeline_mesh(), true);
  options.pipeline_stages = 2;
  options.microbatches = 2;
  options.remat = RematKind::kFull;
  PartitionedStep p = partition_step(pipelined_forward(), options, 4);
  EXPECT_TRUE(p.verify.ok) << describe(p);
}

TEST(PartitionedStep, TwoPipelineStagesOnMesh24WithSaveDots) {
  // {stage: 2, data: 4}, 4-row microbatches (one row per data device).
  const DeviceMesh mesh = pipeline_mesh(4);
  TrainingStepOptions options = options_for(OptimizerKind::kAdafactor, mesh, true);
  options.pipeline_stages = 2;
  options.microbatches = 2;
  options.remat = RematKind::kSelective;
  options.remat_policy = "save_dots";
  PartitionedStep p = partition_step(pipelined_forward(4, mesh), options, 8);
  EXPECT_TRUE(p.verify.ok) << describe(p);
  EXPECT_GT(p.result.stats.collective_permutes, 0) << describe(p);
}

// ---- Variants: padding, 2-D weight sharding, f32, combinations ----

// MaxText's FSDP with data parallelism beside it (mesh {x: 2, y: 4}, x the
// data axis): the batch is split over both axes, the weights over y only
// (w_in {y, -}, w_out {-, y}) and the updates keep those shardings. Each
// matrix gradient is then a partial sum over all 8 devices wanted split 4
// ways: a reduce-scatter over y (groups of 4: w_in [4,8] -> [1,8], w_out
// [8,4] -> [8,1]), then an all-reduce of that shard over x (groups of 2),
// never an all-reduce of a whole [4,8] or [8,4] gradient. (Batch 256: with
// only a few rows per device the dot plans gather the activations instead,
// which is cheaper than any reduction of the gradient.)
TEST(PartitionedStep, DataTimesFsdpGradientsReduceScatterThenAllReduceTheShard) {
  MlpSpec spec{mesh24()};
  spec.batch = 256;
  spec.activations = {{"x", "y"}, {}};
  spec.w_in = {{"y"}, {}};
  spec.w_out = {{}, {"y"}};
  PartitionedStep p =
      partition_step(sharded_mlp(spec), options_for(OptimizerKind::kAdam, spec.mesh, false), 8);
  EXPECT_TRUE(p.verify.ok) << describe(p);
  const Shape w_in_shard(F, {1, 8}), w_out_shard(F, {8, 1});
  int64_t scattered = 0, shard_sums = 0;
  for (const Computation& c : p.result.module.computations())
    for (const Instruction& in : c.instructions()) {
      const bool shard = in.shape == w_in_shard || in.shape == w_out_shard;
      if (in.opcode == Opcode::kReduceScatter && shard) {
        EXPECT_EQ(in.attrs.replica_groups.group_size(8), 4) << in.name;
        ++scattered;
      }
      if (in.opcode != Opcode::kAllReduce) continue;
      EXPECT_NE(in.shape, Shape(F, {4, 8})) << in.name;
      EXPECT_NE(in.shape, Shape(F, {8, 4})) << in.name;
      if (shard) {
        EXPECT_EQ(in.attrs.replica_groups.group_size(8), 2) << in.name;
        ++shard_sums;
      }
    }
  EXPECT_EQ(scattered, 4) << describe(p);  // two layers x (w_in, w_out)
  EXPECT_EQ(shard_sums, 4) << describe(p);
}

TEST(PartitionedStep, UnevenHiddenDimPadsShards) {
  // hidden 6 over y = 4: ceil(6/4) = 2 rows per device, the last device
  // holds 0 valid rows and 2 padding rows (filled with the verify sentinel
  // 37, so padding leaking into a dot or a reduction shows up).
  for (bool wus : {false, true}) {
    MlpSpec spec{mesh24()};
    spec.hidden = 6;
    PartitionedStep p =
        partition_step(sharded_mlp(spec), options_for(OptimizerKind::kAdam, spec.mesh, wus), 8);
    EXPECT_TRUE(p.verify.ok) << "wus " << wus << ": " << describe(p);
  }
}

TEST(PartitionedStep, TwoDimensionalWeightSharding) {
  // Weights split over both axes (w_in {x, y}, w_out {y, x}); activations
  // batch over x. Nothing is left for weight-update sharding to add, so
  // both settings give the same update shardings.
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdafactor}) {
    MlpSpec spec{mesh24()};
    spec.w_in = {{"x"}, {"y"}};
    spec.w_out = {{"y"}, {"x"}};
    PartitionedStep p = partition_step(sharded_mlp(spec), options_for(kind, spec.mesh, true), 8);
    EXPECT_TRUE(p.verify.ok) << "optimizer " << static_cast<int>(kind) << ": " << describe(p);
  }
}

TEST(PartitionedStep, Float32Step) {
  // f32: summation-order roundings are ~6e-8 relative per term over < 100
  // terms, amplified at most ~8x by Adam's 1/sqrt(v) with v >= 1/64; 1e-4
  // relative is above that and below any wrong element (>= 1/64 * lr).
  // A wrong update of lr 1e-3 is not always above 1e-4 relative, so the
  // learning rate is 0.5 here.
  MlpSpec spec{mesh24()};
  spec.dtype = DType::kF32;
  TrainingStepOptions options = options_for(OptimizerKind::kAdam, spec.mesh, true);
  options.optimizer.learning_rate = 0.5;
  PartitionedStep p = partition_step(sharded_mlp(spec), options, 8, 1e-4);
  EXPECT_TRUE(p.verify.ok) << describe(p);
}

TEST(PartitionedStep, MicrobatchesWithFullRematAndAdamOnMesh22) {
  const DeviceMesh mesh = mesh22();
  TrainingStepOptions options = options_for(OptimizerKind::kAdam, mesh, true);
  options.microbatches = 2;
  options.remat = RematKind::kFull;
  PartitionedStep p = partition_step(sharded_mlp(mesh, 4), options, 4);
  EXPECT_TRUE(p.verify.ok) << describe(p);
  EXPECT_GT(p.reduce_scatter_ops, 0) << describe(p);
}

TEST(PartitionedStep, AdafactorUnfactoredWithFirstMoment) {
  // Slots v (like the weight) and m (beta1 > 0) instead of row/column stats.
  const DeviceMesh mesh = mesh24();
  TrainingStepOptions options = options_for(OptimizerKind::kAdafactor, mesh, true);
  options.optimizer.factored = false;
  options.optimizer.beta1 = 0.9;
  PartitionedStep p = partition_step(sharded_mlp(mesh, 4), options, 8);
  EXPECT_TRUE(p.verify.ok) << describe(p);
}

TEST(PartitionedStep, PipelineWeightUpdateShardingScattersStageGradients) {
  // Stage weights w [2,4,4] {stage,-,-} are replicated over "data", whose
  // rows every device sums partially: the update adds data to dim 1
  // (per-device extents 1, 4, 4 -> the lower of the tied dims), so each
  // iteration's stage-gradient dot can reduce-scatter its [1,4,4] partial
  // sum into 8-element shards. With 16-row microbatches (8 per device) that is
  // cheaper than the alternative the dot strategies also have, gathering
  // both [1,16,4] operands' batch rows (with 2-row microbatches the
  // operands are smaller than the result and the gather is chosen, which
  // is right). Without weight-update sharding there is nothing to scatter.
  auto step = [](bool wus) {
    TrainingStepOptions options = options_for(OptimizerKind::kSgd, pipeline_mesh(), wus);
    options.pipeline_stages = 2;
    options.microbatches = 2;
    return partition_step(pipelined_forward(16), options, 4);
  };
  PartitionedStep on = step(true);
  PartitionedStep off = step(false);
  EXPECT_TRUE(on.verify.ok) << describe(on);
  EXPECT_TRUE(off.verify.ok) << describe(off);
  std::vector<Shape> shapes = reduce_scatter_shapes(on.result.module);
  // One per pipeline iteration (M + S - 1 = 3), each a [1,2,4] update
  // shard of w (8 elements; the dot's result order may put d_in first).
  // The stage vector gradients (sums over rows, i.e. reduces) are
  // reduce-scattered too, into f64[1,2] shards: 2 elements each.
  const auto weight_shards = std::count_if(shapes.begin(), shapes.end(),
                                           [](const Shape& s) { return s.num_elements() == 8; });
  EXPECT_EQ(weight_shards, 3) << describe(on);
  for (const Shape& shape : shapes)
    EXPECT_TRUE(shape.num_elements() == 8 || shape.num_elements() == 2) << shape.to_string();
  EXPECT_EQ(off.reduce_scatter_ops, 0) << describe(off);
}

TEST(PartitionedStep, RmsNormMlpWithOnlyInputsAnnotated) {
  // test_models' two-layer MLP (RMS norm, rsqrt) with no weight
  // annotations: propagation picks the weights' shardings from the
  // batch-split inputs; weight-update sharding splits the (replicated)
  // weights' updates over every mesh axis that divides a dim.
  const DeviceMesh mesh = mesh22();
  Module forward = two_layer_mlp(F, 4);
  Computation& entry = forward.mutable_entry();
  for (InstrId param : entry.parameters()) {
    Instruction& in = entry.mutable_instr(param);
    if (training::starts_with(in.op_name, "input/")) in.sharding = split(mesh, 2, {{"x"}, {}});
  }
  for (bool wus : {false, true}) {
    PartitionedStep p =
        partition_step(forward, options_for(OptimizerKind::kAdafactor, mesh, wus), 4);
    EXPECT_TRUE(p.verify.ok) << "wus " << wus << ": " << describe(p);
  }
}

// ---- A counted while loop over stacked layers (a scan) ----

// carry (i s32, a [4,4], ws [3,4,4]); body: a' = tanh(a ws[i]) + a, i < 3.
// ws split {-, -, y} (each layer's output features over y), a batch over x;
// loss = sum(a_final * probe) (ForwardBuilder::finish). The reverse loop
// recomputes the body from the recorded carries (while_autodiff.h).
Module scan_forward(const DeviceMesh& mesh) {
  constexpr int64_t kLayers = 3, kB = 4;
  ForwardBuilder f;
  Module& mod = f.module;
  InstrId ws_param = f.param(Shape(F, {kLayers, kD, kD}), "ws");
  InstrId x = f.input(Shape(F, {kB, kD}), "x");
  f.b.set_sharding(ws_param, split(mesh, 3, {{}, {}, {"y"}}));
  f.b.set_sharding(x, split(mesh, 2, {{"x"}, {}}));
  Shape carry =
      Shape::tuple({Shape::scalar(DType::kS32), Shape(F, {kB, kD}), Shape(F, {kLayers, kD, kD})});

  ComputationBuilder body("layer_body", &mod);
  body.set_op_name_scope("fwd/layers/body");
  InstrId p = body.parameter(0, carry, "carry");
  InstrId i = body.get_tuple_element(p, 0);
  InstrId a = body.get_tuple_element(p, 1);
  InstrId ws = body.get_tuple_element(p, 2);
  InstrId zero = body.scalar_constant(DType::kS32, 0);
  InstrId w = body.reshape(body.dynamic_slice(ws, {i, zero, zero}, {1, kD, kD}), {kD, kD});
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  InstrId next = body.binary(Opcode::kAdd, body.unary(Opcode::kTanh, body.dot(a, w, mm)), a);
  InstrId inc = body.binary(Opcode::kAdd, i, body.scalar_constant(DType::kS32, 1));
  CompId body_id = mod.add_computation(std::move(body).build(body.tuple({inc, next, ws})));

  ComputationBuilder cond("layer_cond", &mod);
  InstrId cp = cond.parameter(0, carry, "carry");
  InstrId more = cond.compare(cond.get_tuple_element(cp, 0),
                              cond.scalar_constant(DType::kS32, kLayers), ComparisonDirection::kLt);
  CompId cond_id = mod.add_computation(std::move(cond).build(more));

  auto& b = f.b;
  b.set_op_name_scope("fwd/layers");
  InstrId init = b.tuple({b.scalar_constant(DType::kS32, 0), x, ws_param});
  InstrId loop = b.while_loop(init, cond_id, body_id);
  b.set_op_name_scope("fwd/loss");
  return f.finish(b.get_tuple_element(loop, 1));
}

TEST(PartitionedStep, ScanOverStackedLayers) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam}) {
    for (bool wus : {false, true}) {
      const DeviceMesh mesh = mesh22();
      PartitionedStep p = partition_step(scan_forward(mesh), options_for(kind, mesh, wus), 4);
      EXPECT_TRUE(p.verify.ok) << "optimizer " << static_cast<int>(kind) << " wus " << wus << ": "
                               << describe(p);
      // Both loops survive partitioning: the recording forward loop and the
      // reverse loop, each with per-device (shard-shaped) carries.
      int loops = 0;
      for (const Instruction& in : p.result.module.entry().instructions())
        loops += in.opcode == Opcode::kWhile;
      EXPECT_EQ(loops, 2);
    }
  }
}

}  // namespace
}  // namespace podsim::compiler::testing
