// compile() end to end on the 2-D sharded Transformer layer, remat "auto"
// choice selection with stand-in compiles, and partition_module.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "compiler/backend/remat_auto.h"
#include "compiler/compile.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

using pipeline_test::expect_topological_permutation;

int64_t role_bytes(const MemoryPlan& plan, ValueRole role) {
  auto it = plan.at_peak.bytes.find(role);
  return it == plan.at_peak.bytes.end() ? 0 : it->second;
}

class TransformerLayerCompile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    annotated_ = new Module(parse_hlo_file(std::string(PODSIM_SOURCE_DIR) +
                                           "/workloads/examples/transformer_layer_2d.hlo"));
    program_ = new SpmdProgram(compile(*annotated_, CompileOptions{.num_devices = 8}));
  }
  static void TearDownTestSuite() {
    delete program_;
    delete annotated_;
  }
  static Module* annotated_;
  static SpmdProgram* program_;
};
Module* TransformerLayerCompile::annotated_ = nullptr;
SpmdProgram* TransformerLayerCompile::program_ = nullptr;

TEST_F(TransformerLayerCompile, StatsDescribeThePartitionedProgram) {
  const SpmdProgram& p = *program_;
  EXPECT_EQ(p.num_devices, 8);
  EXPECT_EQ(p.module.num_partitions(), 8);
  EXPECT_EQ(p.stats.instructions_annotated, annotated_->entry().size());
  // No while loops here: everything cleanup removed came from the entry.
  EXPECT_EQ(p.stats.instructions_partitioned - p.stats.dead_instructions_removed -
                p.stats.sharding_markers_removed,
            p.module.entry().size());
  // 2-D sharded matmuls contract over sharded dims: partial sums are reduced.
  EXPECT_GT(p.stats.spmd.all_reduces + p.stats.spmd.reduce_scatters, 0);
  EXPECT_EQ(p.stats.remat_applied, "none");
  EXPECT_EQ(p.stats.remat_attempts, 1);
  EXPECT_GT(p.stats.fusion_groups, 0);
  EXPECT_GE(p.stats.total_wall_s, p.stats.propagate_wall_s + p.stats.partition_wall_s);
}

TEST_F(TransformerLayerCompile, ScheduleAndFusionAreConsistent) {
  const SpmdProgram& p = *program_;
  const auto count = static_cast<size_t>(p.module.computation_count());
  ASSERT_EQ(p.schedule.size(), count);
  ASSERT_EQ(p.fusion.size(), count);
  for (size_t c = 0; c < count; ++c) {
    const Computation& comp = p.module.computation(static_cast<CompId>(c));
    expect_topological_permutation(comp, p.schedule[c]);
    ASSERT_EQ(p.fusion[c].group_of.size(), static_cast<size_t>(comp.size()));
    std::vector<int64_t> place(p.schedule[c].size());
    for (size_t i = 0; i < place.size(); ++i)
      place[static_cast<size_t>(p.schedule[c][i])] = static_cast<int64_t>(i);
    for (const FusionGroup& g : p.fusion[c].groups) {
      ASSERT_FALSE(g.members.empty());
      // Members in schedule order, the root (last) after all of them.
      EXPECT_TRUE(std::is_sorted(g.members.begin(), g.members.end(), [&](InstrId a, InstrId b) {
        return place[static_cast<size_t>(a)] < place[static_cast<size_t>(b)];
      }));
      for (InstrId m : g.members) {
        EXPECT_FALSE(is_collective(comp.instr(m).opcode));
        EXPECT_NE(comp.instr(m).opcode, Opcode::kParameter);
      }
    }
  }
}

TEST_F(TransformerLayerCompile, MemoryPlanHoldsTheParameterShards) {
  const MemoryPlan& mem = program_->memory;
  // Per-device parameter shards (f32, 4 B), from the annotations:
  //   x [8,16,32] / [2,1,4] -> [4,16,8] = 512 el = 2048 B
  //   ln1/ln2 scale [32] / 4 (replicated over x) -> 8 el = 32 B each
  //   wq, wk, wv [32,4,8] / [2,4,1] -> [16,1,8] = 128 el = 512 B each
  //   wo_attn [4,8,32] / [4,1,2] -> [1,8,16] = 128 el = 512 B
  //   wi_0, wi_1 [32,64] / [2,4] -> [16,16] = 256 el = 1024 B each
  //   wo_ffn [64,32] / [4,2] -> [16,16] = 1024 B
  // Sum: 2048 + 2*32 + 4*512 + 3*1024 = 7232 B, live throughout.
  EXPECT_EQ(role_bytes(mem, ValueRole::kParameter), 7232);
  EXPECT_EQ(mem.at_peak.total(), mem.peak_bytes);
  EXPECT_GT(mem.peak_bytes, 7232);  // plus at least the value being computed
  ASSERT_NE(mem.peak_at, kNoId);
  EXPECT_LT(mem.peak_at, program_->module.entry().size());
}

TEST_F(TransformerLayerCompile, CollectivesMoveEarlier) {
  // In the schedule, no collective starts later than in the partitioner's
  // order relative to the instructions it does not depend on: measured as
  // the number of non-collective instructions before it, which can only
  // shrink when a collective is hoisted (users are delayed, never earlier).
  const SpmdProgram& p = *program_;
  const Computation& entry = p.module.entry();
  const std::vector<InstrId>& order = p.schedule[static_cast<size_t>(p.module.entry_id())];
  int64_t hoisted = 0, collectives = 0;
  int64_t compute_before = 0;
  for (InstrId id : order) {
    if (is_collective(entry.instr(id).opcode)) {
      ++collectives;
      int64_t compute_before_originally = 0;
      for (InstrId earlier = 0; earlier < id; ++earlier)
        if (!is_collective(entry.instr(earlier).opcode)) ++compute_before_originally;
      EXPECT_LE(compute_before, compute_before_originally) << entry.instr(id).name;
      if (compute_before < compute_before_originally) ++hoisted;
    } else {
      ++compute_before;
    }
  }
  EXPECT_GT(collectives, 0);
  EXPECT_GT(hoisted, 0);
}

TEST(Compile, RejectsAnEmptyMesh) {
  Module m = parse_hlo(
      "HloModule m\nENTRY %e (p: f32[4]) -> f32[4] {\n  ROOT %p = f32[4] parameter(0)\n}\n");
  EXPECT_THROW(compile(m, CompileOptions{.num_devices = 0}), UserError);
  SpmdProgram one = compile(m, CompileOptions{.num_devices = 1});
  EXPECT_EQ(one.memory.peak_bytes, 16);  // the parameter, 4 x f32, is the whole program
  // The collectives' execution options reach the program for the simulator.
  EXPECT_EQ(one.collectives.async.size(), 5u);  // default: every kind asynchronous
  CompileOptions v4{.num_devices = 1};
  v4.collectives.async = {Opcode::kAllGather};
  EXPECT_EQ(compile(m, v4).collectives.async, (std::set<Opcode>{Opcode::kAllGather}));
}

// Stand-in compile: peak bytes per remat choice name.
CompileOneChoice fake_compile(std::map<std::string, int64_t> peak_by_choice,
                              std::vector<std::string>* tried) {
  return [peak_by_choice, tried](const RematChoice& choice) {
    tried->push_back(choice.name());
    SpmdProgram p;
    p.memory.peak_bytes = peak_by_choice.at(choice.name());
    p.stats.total_wall_s = 1.0;
    return p;
  };
}

TEST(RematAuto, PicksTheLeastRecomputationThatFits) {
  const std::vector<RematChoice> choices{
      {RematKind::kNone, ""}, {RematKind::kSelective, "save_dots"}, {RematKind::kFull, ""}};
  const std::map<std::string, int64_t> peaks{{"none", 300}, {"save_dots", 200}, {"full", 100}};
  std::vector<std::string> tried;
  SpmdProgram fits_all = compile_with_auto_remat(choices, 1000, fake_compile(peaks, &tried));
  EXPECT_EQ(fits_all.stats.remat_applied, "none");
  EXPECT_EQ(fits_all.stats.remat_attempts, 1);
  tried.clear();
  SpmdProgram middle = compile_with_auto_remat(choices, 250, fake_compile(peaks, &tried));
  EXPECT_EQ(middle.stats.remat_applied, "save_dots");
  EXPECT_EQ(middle.stats.remat_attempts, 2);
  EXPECT_EQ(tried, (std::vector<std::string>{"none", "save_dots"}));
  EXPECT_DOUBLE_EQ(middle.stats.total_wall_s, 2.0);  // both attempts are compile time
  tried.clear();
  // Nothing fits: the most recomputation is kept and its peak reported.
  SpmdProgram none_fit = compile_with_auto_remat(choices, 50, fake_compile(peaks, &tried));
  EXPECT_EQ(none_fit.stats.remat_applied, "full");
  EXPECT_EQ(none_fit.stats.remat_attempts, 3);
  EXPECT_EQ(none_fit.memory.peak_bytes, 100);
}

namespace podsim::compiler {
namespace {

// A per-device program: two all-reduces and a multiply chain. podsim's own
// scheduler would issue the second all-reduce before the multiplies (to
// hide it); XLA's order puts it last.
constexpr const char* kPerDevice = R"(HloModule per_device, num_partitions=4
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}
ENTRY %main.9_spmd (p: f32[64], q: f32[64]) -> (f32[64], f32[64]) {
  %p = f32[64]{0} parameter(0)
  %q = f32[64]{0} parameter(1)
  %r1 = f32[64]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%sum
  %m1 = f32[64]{0} multiply(%r1, %r1)
  %m2 = f32[64]{0} multiply(%m1, %m1)
  %r2 = f32[64]{0} all-reduce(%q), channel_id=2, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%sum
  ROOT %t = (f32[64]{0}, f32[64]{0}) tuple(%m2, %r2)
})";

TEST(CompileAsIs, KeepsTheModuleAndCountsItsCollectives) {
  const Module m = parse_hlo(kPerDevice);
  const SpmdProgram p = compile_as_is(m, 4);
  EXPECT_EQ(p.num_devices, 4);
  EXPECT_EQ(p.module.entry().size(), m.entry().size());  // nothing partitioned, nothing added
  EXPECT_EQ(p.stats.spmd.all_reduces, 2);
  EXPECT_EQ(p.stats.spmd.all_gathers, 0);
  // Entry parameters (2 x 64 x 4 B) and the two outputs are live at the end
  // at the least: the plan counts at least the parameters.
  EXPECT_GE(p.memory.peak_bytes, 2 * 64 * 4);
}

TEST(CompileAsIs, ScheduledModuleKeepsXlaOrder) {
  Module m = parse_hlo(kPerDevice);
  m.set_is_scheduled(true);
  const SpmdProgram scheduled = compile_as_is(m, 4);
  const auto& order = scheduled.schedule[static_cast<size_t>(scheduled.module.entry_id())];
  ASSERT_EQ(order.size(), static_cast<size_t>(m.entry().size()));
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], static_cast<InstrId>(i));
  // Unscheduled, podsim's scheduler hoists r2 above the multiplies.
  m.set_is_scheduled(false);
  const SpmdProgram own = compile_as_is(m, 4);
  const auto& own_order = own.schedule[static_cast<size_t>(own.module.entry_id())];
  const InstrId r2 = own.module.entry().find("r2");
  const InstrId m2 = own.module.entry().find("m2");
  const auto pos = [&](InstrId id) {
    return std::find(own_order.begin(), own_order.end(), id) - own_order.begin();
  };
  EXPECT_LT(pos(r2), pos(m2));
}

TEST(CompileAsIs, RejectsNoDevices) {
  EXPECT_THROW(compile_as_is(parse_hlo(kPerDevice), 0), UserError);
}

}  // namespace
}  // namespace podsim::compiler

// partition_module (`podsim partition`'s entry point) on the sharded matmul
// fixture: f32[16,32] split [2,2] and f32[32,64] split 2 on its rows (the
// other 2 replicated) over 4 devices.
Module sharded_matmul() {
  return parse_hlo_file(std::string(PODSIM_SOURCE_DIR) +
                        "/tests/fixtures/hlo/dot_matmul_sharded.hlo");
}

TEST(PartitionModule, PerDeviceProgramMatchesTheInterpreterOnFourDevices) {
  PartitionRequest request;
  request.verify = true;
  const PartitionResult result = partition_module(sharded_matmul(), request);
  ASSERT_TRUE(result.verified);
  EXPECT_TRUE(result.verify_ok);
  ASSERT_EQ(result.verify_lines.size(), 1u);
  EXPECT_TRUE(result.verify_lines[0].starts_with("verify: ok (4 devices"))
      << result.verify_lines[0];
  // Each device holds a quarter of the lhs (16/2 x 32/2) and half of the rhs rows (32/2 x 64).
  const Computation& entry = result.module.entry();
  const std::vector<InstrId> params = entry.parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(entry.instr(params[0]).shape.dims(), (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(entry.instr(params[1]).shape.dims(), (std::vector<int64_t>{16, 64}));
}

TEST(PartitionModule, WithoutVerifyNothingIsChecked) {
  const PartitionResult result = partition_module(sharded_matmul(), PartitionRequest{});
  EXPECT_FALSE(result.verified);
  EXPECT_TRUE(result.verify_ok);
  EXPECT_TRUE(result.verify_lines.empty());
  EXPECT_EQ(result.module.entry().instr(result.module.entry().parameters()[0]).shape.dims(),
            (std::vector<int64_t>{8, 16}));
}

constexpr const char* kUnannotatedRoot = R"(HloModule m, num_partitions=4

ENTRY %main (p: f32[16,8]) -> f32[16,8] {
  %p = f32[16,8]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT %n = f32[16,8]{1,0} negate(f32[16,8]{1,0} %p)
}
)";

TEST(PartitionModule, PropagateOnlyKeepsGlobalShapesAndHonoursTheOutputFlag) {
  PartitionRequest request;
  request.propagate_only = true;
  const PartitionResult to_output = partition_module(parse_hlo(kUnannotatedRoot), request);
  const Instruction& root = to_output.module.entry().root_instr();
  EXPECT_EQ(root.shape.dims(), (std::vector<int64_t>{16, 8}));  // not partitioned
  ASSERT_TRUE(root.sharding.has_value());
  EXPECT_EQ(root.sharding->find("replicated"), std::string::npos)
      << *root.sharding;  // the operand's split

  request.propagate_to_output = false;
  const PartitionResult kept = partition_module(parse_hlo(kUnannotatedRoot), request);
  const Instruction& kept_root = kept.module.entry().root_instr();
  ASSERT_TRUE(kept_root.sharding.has_value());
  EXPECT_NE(kept_root.sharding->find("replicated"), std::string::npos) << *kept_root.sharding;
}

}  // namespace
}  // namespace podsim::compiler
