// compile() with a training step: a two-matmul model with a scalar loss,
// built by build_training_step, then partitioned and planned.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "compiler/compile.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

// w1 [8,16] split on columns, w2 [16,8] on rows over 2 devices; x [4,8]
// replicated. loss = sum((tanh(x w1) w2)^2).
constexpr const char* kForward = R"(HloModule mlp, num_partitions=2
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (w1: f32[8,16], w2: f32[16,8], x: f32[4,8]) -> f32[] {
  %w1 = f32[8,16] parameter(0), sharding={devices=[1,2]<=[2]}, metadata={op_name="param/w1"}
  %w2 = f32[16,8] parameter(1), sharding={devices=[2,1]<=[2]}, metadata={op_name="param/w2"}
  %x = f32[4,8] parameter(2), sharding={replicated}, metadata={op_name="input/x"}
  %h = f32[4,16] dot(%x, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="fwd/layer_0/h"}
  %t = f32[4,16] tanh(%h), metadata={op_name="fwd/layer_0/t"}
  %o = f32[4,8] dot(%t, %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="fwd/layer_0/o"}
  %sq = f32[4,8] multiply(%o, %o), metadata={op_name="fwd/loss/sq"}
  %zero = f32[] constant(0), metadata={op_name="fwd/loss/zero"}
  ROOT %loss = f32[] reduce(%sq, %zero), dimensions={0,1}, to_apply=%sum, metadata={op_name="fwd/loss"}
})";

TEST(TrainingCompile, SgdStepCompilesAndPlansMemory) {
  Module forward = parse_hlo(kForward);
  TrainingStepOptions training;
  training.optimizer.kind = OptimizerKind::kSgd;
  SpmdProgram p = compile(forward, CompileOptions{.num_devices = 2, .training = training});
  const MemoryPlan& mem = p.memory;
  auto bytes = [&](ValueRole r) {
    auto it = mem.at_peak.bytes.find(r);
    return it == mem.at_peak.bytes.end() ? int64_t{0} : it->second;
  };
  // Per-device shards: w1 [8,8] and w2 [8,8] = 256 B each; x [4,8] = 128 B.
  EXPECT_EQ(bytes(ValueRole::kParameter), 512);
  EXPECT_EQ(bytes(ValueRole::kInput), 128);
  EXPECT_EQ(mem.at_peak.total(), mem.peak_bytes);
  EXPECT_EQ(p.stats.remat_applied, "none");
  // Cleanup: no Sharding markers left, and every instruction but the
  // parameters and the root has a user (the input gradient x^T.. and its
  // all-reduce were dead).
  const Computation& entry = p.module.entry();
  std::vector<std::vector<InstrId>> users = entry.compute_users();
  for (InstrId id = 0; id < entry.size(); ++id) {
    const Instruction& instr = entry.instr(id);
    EXPECT_FALSE(instr.opcode == Opcode::kCustomCall &&
                 instr.attrs.custom_call_target == "Sharding");
    if (instr.opcode != Opcode::kParameter && id != entry.root()) {
      EXPECT_FALSE(users[static_cast<size_t>(id)].empty()) << instr.name;
    }
  }
  EXPECT_GT(p.stats.dead_instructions_removed, 0);
}

// Two layers of [B=64, M=32] x [32, 256] -> tanh -> [256, 32]: each layer's
// hidden activation (64x256 f32 = 64 KiB, halved per device) dominates the
// memory, so recomputing it in the backward pass ("full") lowers the peak.
std::string two_layer_forward() {
  std::string text = R"(HloModule mlp2, num_partitions=2
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (wi0: f32[32,256], wo0: f32[256,32], wi1: f32[32,256], wo1: f32[256,32], x: f32[64,32]) -> f32[] {
  %wi0 = f32[32,256] parameter(0), sharding={devices=[1,2]<=[2]}, metadata={op_name="param/wi0"}
  %wo0 = f32[256,32] parameter(1), sharding={devices=[2,1]<=[2]}, metadata={op_name="param/wo0"}
  %wi1 = f32[32,256] parameter(2), sharding={devices=[1,2]<=[2]}, metadata={op_name="param/wi1"}
  %wo1 = f32[256,32] parameter(3), sharding={devices=[2,1]<=[2]}, metadata={op_name="param/wo1"}
  %x = f32[64,32] parameter(4), sharding={replicated}, metadata={op_name="input/x"}
)";
  for (int l = 0; l < 2; ++l) {
    std::string in = l == 0 ? "%x" : "%y0";
    text += fmt::format(
        "  %h{0} = f32[64,256] dot({1}, %wi{0}), lhs_contracting_dims={{1}}, "
        "rhs_contracting_dims={{0}}, metadata={{op_name=\"fwd/layer_{0}/h\"}}\n"
        "  %t{0} = f32[64,256] tanh(%h{0}), metadata={{op_name=\"fwd/layer_{0}/t\"}}\n"
        "  %u{0} = f32[64,256] multiply(%t{0}, %h{0}), metadata={{op_name=\"fwd/layer_{0}/u\"}}\n"
        "  %y{0} = f32[64,32] dot(%u{0}, %wo{0}), lhs_contracting_dims={{1}}, "
        "rhs_contracting_dims={{0}}, metadata={{op_name=\"fwd/layer_{0}/y\"}}\n",
        l, in);
  }
  text += R"(  %sq = f32[64,32] multiply(%y1, %y1), metadata={op_name="fwd/loss/sq"}
  %zero = f32[] constant(0), metadata={op_name="fwd/loss/zero"}
  ROOT %loss = f32[] reduce(%sq, %zero), dimensions={0,1}, to_apply=%sum, metadata={op_name="fwd/loss"}
})";
  return text;
}

TEST(TrainingCompile, RematAutoRecomputesOnlyWhenOverBudget) {
  Module forward = parse_hlo(two_layer_forward());
  TrainingStepOptions training;
  training.optimizer.kind = OptimizerKind::kSgd;
  CompileOptions options{.num_devices = 2, .training = training};
  const int64_t none_peak = compile(forward, options).memory.peak_bytes;
  options.training->remat = RematKind::kFull;
  SpmdProgram full = compile(forward, options);
  ASSERT_LT(full.memory.peak_bytes, none_peak) << "full remat should lower this model's peak";
  EXPECT_GT(full.stats.recomputed_flops, 0);

  options.training->remat = RematKind::kNone;
  options.remat_auto = true;
  options.hbm_budget_bytes = none_peak;  // fits without recomputation
  SpmdProgram roomy = compile(forward, options);
  EXPECT_EQ(roomy.stats.remat_applied, "none");
  EXPECT_EQ(roomy.stats.remat_attempts, 1);
  EXPECT_EQ(roomy.stats.recomputed_flops, 0);

  // One byte less must recompute: the first of save_dots (recomputes the
  // elementwise ops only, 0 matmul FLOPs) and full that fits is taken.
  options.remat_auto = false;
  options.training->remat = RematKind::kSelective;
  options.training->remat_policy = "save_dots";
  const int64_t save_dots_peak = compile(forward, options).memory.peak_bytes;
  options.training->remat = RematKind::kNone;
  options.training->remat_policy.clear();
  options.remat_auto = true;
  options.hbm_budget_bytes = none_peak - 1;
  SpmdProgram tight = compile(forward, options);
  if (save_dots_peak < none_peak) {
    EXPECT_EQ(tight.stats.remat_applied, "save_dots");
    EXPECT_EQ(tight.stats.remat_attempts, 2);
    EXPECT_EQ(tight.memory.peak_bytes, save_dots_peak);
  } else {
    EXPECT_EQ(tight.stats.remat_applied, "full");
    EXPECT_EQ(tight.stats.remat_attempts, 3);
    EXPECT_EQ(tight.memory.peak_bytes, full.memory.peak_bytes);
    EXPECT_EQ(tight.stats.recomputed_flops, full.stats.recomputed_flops);
  }
  // A budget below full's peak: full is kept and reported over budget.
  options.hbm_budget_bytes = full.memory.peak_bytes - 1;
  SpmdProgram over = compile(forward, options);
  EXPECT_EQ(over.stats.remat_applied, "full");
  EXPECT_GT(over.memory.peak_bytes, options.hbm_budget_bytes);
}

}  // namespace
}  // namespace podsim::compiler
