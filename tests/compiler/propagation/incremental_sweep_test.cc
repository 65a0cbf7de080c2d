// The sweeps' skipping of unchanged rules (propagation.cc) must not change
// anything: every fixture propagated with and without it gets the same
// sharding on every instruction and the same sweep and change counts. Also
// the change clock of PropagationState that the skip relies on.

#include "compiler/propagation/propagation_state.h"
#include "tests/compiler/propagation/test_util.h"
#include "tests/test_files.h"

namespace podsim::compiler::testing {
namespace {

struct Propagated {
  Module module;
  PropagationStats stats;
};

Propagated propagate_file(const std::string& relative_path, bool rerun_every_rule) {
  Propagated out{parse_hlo(test_files::read_source_file(relative_path), relative_path), {}};
  PropagationOptions options;
  options.rerun_every_rule = rerun_every_rule;
  out.stats = propagate_shardings(out.module, options);
  return out;
}

class SkipChangesNothing : public ::testing::TestWithParam<const char*> {};

TEST_P(SkipChangesNothing, SameShardingsSweepsAndChanges) {
  const Propagated skipping = propagate_file(GetParam(), false);
  const Propagated full = propagate_file(GetParam(), true);
  EXPECT_EQ(skipping.stats.sweeps, full.stats.sweeps);
  EXPECT_EQ(skipping.stats.changes, full.stats.changes);
  EXPECT_EQ(skipping.stats.defaulted_replicated, full.stats.defaulted_replicated);
  ASSERT_EQ(skipping.module.computation_count(), full.module.computation_count());
  for (CompId c = 0; c < full.module.computation_count(); ++c) {
    const Computation& a = skipping.module.computation(c);
    const Computation& b = full.module.computation(c);
    ASSERT_EQ(a.size(), b.size());
    for (InstrId i = 0; i < a.size(); ++i)
      EXPECT_EQ(a.instr(i).sharding, b.instr(i).sharding) << a.instr(i).name;
  }
}

// Fixtures with dots, broadcasts (levels 2 and 3), tuples, while loops,
// scatter/gather, custom-call annotations with open dims.
INSTANTIATE_TEST_SUITE_P(
    Fixtures, SkipChangesNothing,
    ::testing::Values("workloads/examples/transformer_layer_2d.hlo",
                      "tests/fixtures/hlo/mlp_sharded.hlo", "tests/fixtures/hlo/while_loop.hlo",
                      "tests/fixtures/hlo/tuple_gte.hlo", "tests/fixtures/hlo/moe_dispatch.hlo",
                      "tests/fixtures/hlo/scatter_embedding_grad.hlo",
                      "tests/fixtures/hlo/gather_embedding.hlo",
                      "tests/fixtures/hlo/custom_call_sharding.hlo",
                      "tests/fixtures/hlo/layer_norm.hlo", "tests/fixtures/hlo/softmax.hlo"));

// A while loop's control-flow group (while, body parameter, body root,
// condition parameter): setting one member stamps every member, and only
// them, with ticks after the clock read before the write.
TEST(ChangeClock, WriteStampsTheValueAndItsControlFlowGroup) {
  Module m = parse_hlo(test_files::read_source_file("tests/fixtures/hlo/while_loop.hlo"), "while");
  propagation::PropagationState state(m);
  const CompId entry = m.entry_id();
  InstrId while_id = kNoId;
  for (InstrId i = 0; i < m.entry().size(); ++i)
    if (m.entry().instr(i).opcode == Opcode::kWhile) while_id = i;
  ASSERT_NE(while_id, kNoId);
  const Instruction& loop = m.entry().instr(while_id);
  const propagation::ValueRef body_param{loop.while_body(),
                                         m.computation(loop.while_body()).parameters().at(0)};
  const propagation::ValueRef cond_param{loop.while_condition(),
                                         m.computation(loop.while_condition()).parameters().at(0)};
  const propagation::ValueRef other{entry, loop.operand(0)};

  const uint64_t before = state.clock();
  EXPECT_FALSE(state.changed_since({entry, while_id}, before));
  state.set({entry, while_id}, Sharding::replicated());
  EXPECT_TRUE(state.changed_since({entry, while_id}, before));
  EXPECT_TRUE(state.changed_since(body_param, before));
  EXPECT_TRUE(state.changed_since(cond_param, before));
  EXPECT_FALSE(state.changed_since(other, before));  // the loop's init tuple is no group member
  const uint64_t after = state.clock();
  EXPECT_GT(after, before);
  EXPECT_FALSE(state.changed_since(body_param, after));
  state.set_provided(other, Sharding::replicated());
  EXPECT_TRUE(state.changed_since(other, after));
}

}  // namespace
}  // namespace podsim::compiler::testing
