// compile() with a training step: a two-matmul model with a scalar loss,
// built by build_training_step, then partitioned and planned.
#include <gtest/gtest.h>

#include "compiler/pipeline/compile.h"
#include "tests/compiler/pipeline/test_util.h"

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
    EXPECT_FALSE(instr.opcode == Opcode::kCustomCall && instr.attrs.custom_call_target == "Sharding");
    if (instr.opcode != Opcode::kParameter && id != entry.root())
      EXPECT_FALSE(users[static_cast<size_t>(id)].empty()) << instr.name;
  }
  EXPECT_GT(p.stats.dead_instructions_removed, 0);
}

}  // namespace
}  // namespace podsim::compiler
