// Module mode (global program vs per-device program) and device count of an
// HLO module, on modules written for the purpose.
#include <gtest/gtest.h>

#include "common/error.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/module_mode.h"

namespace podsim::compiler {
namespace {

// A global program: one sharding annotation through XLA's Sharding marker.
constexpr const char* kGlobal = R"(HloModule global
ENTRY %main (p: f32[8,4]) -> f32[8,4] {
  %p = f32[8,4]{1,0} parameter(0)
  %s = f32[8,4]{1,0} custom-call(%p), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}
  ROOT %n = f32[8,4]{1,0} negate(%s)
})";

TEST(ModuleMode, ShardingMarkerMeansPartition) {
  const Module m = parse_hlo(kGlobal);
  const ModeEvidence e = collect_mode_evidence(m);
  EXPECT_EQ(e.global.size(), 1u);
  EXPECT_TRUE(e.per_device.empty());
  EXPECT_EQ(decide_module_mode(m), ModuleMode::kPartition);
}

TEST(ModuleMode, NoEvidenceMeansPartition) {
  const Module m = parse_hlo(R"(HloModule plain
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0), sharding={devices=[2]<=[2]}
  ROOT %n = f32[8]{0} negate(%p)
})");
  EXPECT_EQ(decide_module_mode(m), ModuleMode::kPartition);
}

TEST(ModuleMode, SpmdEntryNameMeansAsIs) {
  const Module m = parse_hlo(R"(HloModule done, num_partitions=2
ENTRY %main.3_spmd (p: f32[4]) -> f32[8] {
  %p = f32[4]{0} parameter(0), sharding={devices=[2]<=[2]}
  ROOT %g = f32[8]{0} all-gather(%p), channel_id=1, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
})");
  const ModeEvidence e = collect_mode_evidence(m);
  ASSERT_EQ(e.per_device.size(), 1u);
  EXPECT_NE(e.per_device[0].what.find("main.3_spmd"), std::string::npos);
  EXPECT_EQ(e.per_device_weak.size(), 1u);  // the channel all-gather
  EXPECT_EQ(decide_module_mode(m), ModuleMode::kAsIs);
}

TEST(ModuleMode, PartitionIdAloneMeansAsIs) {
  const Module m = parse_hlo(R"(HloModule pid
ENTRY %main () -> u32[] {
  ROOT %id = u32[] partition-id()
})");
  EXPECT_TRUE(collect_mode_evidence(m).per_device.empty());
  EXPECT_EQ(decide_module_mode(m), ModuleMode::kAsIs);
}

// A shard_map region: the markers win over the weak per-device signals its
// body carries (an all-reduce with a channel id inside a manual region).
TEST(ModuleMode, ManualRegionCollectivesStayGlobal) {
  const Module m = parse_hlo(R"(HloModule shard_map
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0), sharding={devices=[2]<=[2]}
  %local = f32[4]{0} custom-call(%p), custom_call_target="SPMDFullToShardShape", sharding={manual}
  %r = f32[4]{0} all-reduce(%local), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%sum, sharding={manual}
  ROOT %full = f32[8]{0} custom-call(%r), custom_call_target="SPMDShardToFullShape", sharding={devices=[2]<=[2]}
})");
  const ModeEvidence e = collect_mode_evidence(m);
  EXPECT_EQ(e.global.size(), 2u);
  EXPECT_EQ(e.per_device_weak.size(), 1u);
  EXPECT_EQ(decide_module_mode(m), ModuleMode::kPartition);
}

TEST(ModuleMode, MixedEvidenceIsAnErrorNamingBoth) {
  Module m = parse_hlo(kGlobal);
  m.set_is_scheduled(true);
  try {
    decide_module_mode(m);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("Sharding"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("is_scheduled=true"), std::string::npos) << e.message();
    EXPECT_NE(e.hint().find("--mode"), std::string::npos);
  }
}

TEST(ModuleMode, ParseModeNames) {
  EXPECT_EQ(parse_module_mode("as-is"), ModuleMode::kAsIs);
  EXPECT_EQ(parse_module_mode("partition"), ModuleMode::kPartition);
  EXPECT_EQ(parse_module_mode("auto"), std::nullopt);
  EXPECT_THROW(parse_module_mode("asis"), UserError);
}

TEST(InferDeviceCount, HeaderCountWins) {
  EXPECT_EQ(infer_device_count(parse_hlo(R"(HloModule m, num_partitions=16
ENTRY %main (p: f32[8]) -> f32[8] {
  ROOT %p = f32[8]{0} parameter(0), sharding={devices=[2]<=[2]}
})")),
            16);
}

TEST(InferDeviceCount, LargestShardingDevicePlusOne) {
  // Devices 0, 1, 4, 5 are used: the module needs at least 6.
  EXPECT_EQ(infer_device_count(parse_hlo(R"(HloModule m
ENTRY %main (p: f32[8,8]) -> f32[8,8] {
  ROOT %p = f32[8,8]{1,0} parameter(0), sharding={devices=[2,2]0,1,4,5}
})")),
            6);
  EXPECT_EQ(infer_device_count(parse_hlo(R"(HloModule m
ENTRY %main (p: f32[8,8]) -> f32[8,8] {
  ROOT %p = f32[8,8]{1,0} parameter(0), sharding={maximal device=3}
})")),
            4);
}

TEST(InferDeviceCount, ReplicaGroupsAndPairs) {
  // Iota groups [2,64]<=[128]: 2 groups of 64 -> devices 0..127.
  EXPECT_EQ(infer_device_count(parse_hlo(R"(HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %r = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups=[2,64]<=[128], use_global_device_ids=true, to_apply=%sum
})")),
            128);
  EXPECT_EQ(infer_device_count(parse_hlo(R"(HloModule m
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %c = f32[8]{0} collective-permute(%p), channel_id=1, source_target_pairs={{0,7},{7,0}}
})")),
            8);
  EXPECT_EQ(infer_device_count(parse_hlo(R"(HloModule m
ENTRY %main (p: f32[8]) -> f32[8] {
  ROOT %n = f32[8]{0} parameter(0)
})")),
            1);
}

}  // namespace
}  // namespace podsim::compiler
