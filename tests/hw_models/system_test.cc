// System assembly: default slice, placement, preset collective algorithm.
#include <gtest/gtest.h>

#include "common/error.h"
#include "hw_models/system.h"

namespace podsim::hw {
namespace {

TEST(System, DefaultSliceAndPlacement) {
  const System system(load_hardware("tpuv3"),
                      MeshLayout{{2, 4}, {}, PlacementOrder::kRowMajor, {}});
  // docs/design.md: 8 TPUv3 cores -> 2x2 chips x 2 cores, no wraparound.
  EXPECT_EQ(system.slice().physical_shape(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(system.topology().num_devices(), 8);
  EXPECT_EQ(system.placement().core_at({1, 3}), 7);
  EXPECT_EQ(system.core().name(), "systolic");
  EXPECT_THROW(
      System(load_hardware("tpuv3"), MeshLayout{{4, 4}, {2, 2, 2}, PlacementOrder::kRowMajor, {}}),
      UserError);
}

TEST(System, PresetAlgorithmReplacesAuto) {
  // Mesh [16] on 8 chips x 2: with the preset forced to "ring", an auto
  // all-gather plan uses the unidirectional ring.
  const System ring(load_hardware("tpuv3", {{"ici.collective_algorithm", "ring"}}),
                    MeshLayout{{16}, {}, PlacementOrder::kRowMajor, {}});
  CollectiveQuery q;
  q.kind = CollectiveKind::kAllGather;
  q.bytes_per_device = 1e6;
  q.group = ring.placement().core_of_device;
  EXPECT_EQ(ring.plan(q).algorithm, CollectiveAlgorithm::kRing);
  const System automatic(load_hardware("tpuv3"),
                         MeshLayout{{16}, {}, PlacementOrder::kRowMajor, {}});
  EXPECT_EQ(automatic.plan(q).algorithm, CollectiveAlgorithm::kBidirectionalRing);
}

TEST(System, PresetChunksFeedThePipelinedTorus) {
  // 16 TPUv4 devices as a 4x4 torus: ici.collective_chunks stands in for a
  // query's chunks = 0; 4 stages and C = 8 give 3 fill, 1 steady (x5) and 3
  // drain phases (collectives_test derives them), C = 1 the torus' 4 passes
  // of one repeated full step and one half step each.
  auto system = [](const std::string& chunks) {
    return System(load_hardware("tpuv4", {{"ici.pod_dims", "[4, 4]"},
                                          {"ici.pod_wraparound", "[true, true]"},
                                          {"ici.collective_algorithm", "torus_pipelined"},
                                          {"ici.collective_chunks", chunks}}),
                  MeshLayout{{4, 4}, {}, PlacementOrder::kRowMajor, {}});
  };
  const System eight = system("8");
  CollectiveQuery q;
  q.kind = CollectiveKind::kAllReduce;
  q.bytes_per_device = 1e6;
  q.group = eight.placement().core_of_device;
  q.group_shape = {4, 4};
  const CollectivePlan p = eight.plan(q);
  EXPECT_EQ(p.algorithm, CollectiveAlgorithm::kTorusPipelined);
  ASSERT_EQ(p.phases.size(), 7u);
  EXPECT_EQ(p.phases[3].repeat, 5);
  EXPECT_EQ(system("1").plan(q).phases.size(), 8u);
  q.chunks = 2;  // the query's own count wins: 5 slots, all different
  EXPECT_EQ(eight.plan(q).phases.size(), 5u);
}

// Slices: device d of slice s sits on core s x devices per slice + the slice's own placement of
// d; several slices on a preset without a DCN figure (TPU v3: 0) are a UserError naming the key.
TEST(System, SlicesRepeatThePlacementAndNeedADcnBandwidth) {
  MeshLayout layout{{2, 4}, {}, PlacementOrder::kColumnMajor, {}};
  layout.slices = 3;
  const System system(load_hardware("tpuv3", {{"dcn.bandwidth_per_chip", "1e9"}}), layout);
  EXPECT_EQ(system.slices(), 3);
  ASSERT_EQ(system.placement().core_of_device.size(), 24u);
  for (int64_t d = 0; d < 8; ++d)
    for (int64_t s = 1; s < 3; ++s)
      EXPECT_EQ(system.placement().core(s * 8 + d), s * 8 + system.placement().core(d));
  try {
    System(load_hardware("tpuv3"), layout);
    FAIL() << "no DCN bandwidth accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("dcn.bandwidth_per_chip"), std::string::npos);
    EXPECT_NE(e.hint().find("--set hardware.dcn.bandwidth_per_chip"), std::string::npos);
  }
  layout.slices = 1;  // one slice never reads it
  EXPECT_NO_THROW(System(load_hardware("tpuv3"), layout));
}

}  // namespace
}  // namespace podsim::hw

namespace podsim::hw {
namespace {

// ---- per-chip overrides resolved on the machine ----

TEST(SystemChipVariants, ChipsMapToTheirDevicesAndEqualValuesGroup) {
  // 8 TPUv3 devices row-major on 2x2 chips x 2 cores: chip c holds devices 2c and 2c+1
  // (core = chip x devices_per_chip + index, placement row-major = identity).
  const System system(
      load_hardware("tpuv3", {{"chips.1.core.clock_hz", "4.7e8"},
                              {"chips.3.core.clock_hz", "4.7e8"},
                              {"chips.0-1.hbm.bandwidth", "2.25e11"},
                              {"chips.0.hbm.bandwidth", "3e11"}}),  // later wins for chip 0
      MeshLayout{{8}, {}, PlacementOrder::kRowMajor, {}});
  const std::vector<ChipVariant>& v = system.chip_variants();
  // chip 0: hbm 3e11; chip 1: clock + hbm 2.25e11; chip 3: clock alone. Three variants.
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].chips, (std::vector<int64_t>{0}));
  EXPECT_EQ(v[0].devices, (std::vector<int64_t>{0, 1}));
  EXPECT_DOUBLE_EQ(v[0].config.hbm.bandwidth, 3e11);
  EXPECT_DOUBLE_EQ(v[0].config.core.clock_hz, 9.4e8);
  EXPECT_EQ(v[1].chips, (std::vector<int64_t>{1}));
  EXPECT_EQ(v[1].devices, (std::vector<int64_t>{2, 3}));
  EXPECT_DOUBLE_EQ(v[1].config.core.clock_hz, 4.7e8);
  EXPECT_DOUBLE_EQ(v[1].config.hbm.bandwidth, 2.25e11);
  EXPECT_EQ(v[2].chips, (std::vector<int64_t>{3}));
  EXPECT_EQ(v[2].devices, (std::vector<int64_t>{6, 7}));
  EXPECT_TRUE(v[2].config.chip_overrides.empty());
  EXPECT_EQ(system.chip_variants_text(),
            "chip 0 (devices 0, 1) hbm.bandwidth 3e11 of 4.5e11; "
            "chip 1 (devices 2, 3) core.clock_hz 4.7e8 of 9.4e8, hbm.bandwidth 2.25e11 of 4.5e11; "
            "chip 3 (devices 6, 7) core.clock_hz 4.7e8 of 9.4e8");
  // No override: no variant, no text.
  const System plain(load_hardware("tpuv3"), MeshLayout{{8}, {}, PlacementOrder::kRowMajor, {}});
  EXPECT_TRUE(plain.chip_variants().empty());
  EXPECT_EQ(plain.chip_variants_text(), "");
}

TEST(SystemChipVariants, ChipIdsFollowThePlacementAndRunSliceMajor) {
  // Column-major placement of a [2, 4] mesh on 2x2 chips x 2: device (i, j) = i x 4 + j sits on
  // core j x 2 + i, so chip 1 (cores 2, 3) holds devices 1 and 5.
  const System column(load_hardware("tpuv3", {{"chips.1.core.clock_hz", "4.7e8"}}),
                      MeshLayout{{2, 4}, {}, PlacementOrder::kColumnMajor, {}});
  ASSERT_EQ(column.placement().core_of_device[1], 2);  // premise: the column-major layout
  ASSERT_EQ(column.chip_variants().size(), 1u);
  EXPECT_EQ(column.chip_variants()[0].devices, (std::vector<int64_t>{1, 5}));
  // Two slices of 4 chips (dcn): chip 5 is slice 1's chip 1, devices 8 + 2 and 8 + 3.
  MeshLayout two{{8}, {}, PlacementOrder::kRowMajor, {}};
  two.slices = 2;
  const System sliced(load_hardware("tpuv3", {{"dcn.bandwidth_per_chip", "6.25e9"},
                                              {"chips.5.core.clock_hz", "4.7e8"}}),
                      two);
  ASSERT_EQ(sliced.chip_variants().size(), 1u);
  EXPECT_EQ(sliced.chip_variants()[0].devices, (std::vector<int64_t>{10, 11}));
}

TEST(SystemChipVariants, ChipBeyondTheMachineIsAUserErrorAtTheOverride) {
  // 4 chips: ids 0-3; chip 4 is beyond.
  try {
    System(load_hardware("tpuv3", {{"chips.2-4.core.clock_hz", "4.7e8"}}),
           MeshLayout{{8}, {}, PlacementOrder::kRowMajor, {}});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "--set hardware.chips.2-4.core.clock_hz=4.7e8");
    EXPECT_EQ(e.message(),
              "chip 4 (hardware key 'chips.2-4.core.clock_hz') is beyond the machine: the run "
              "uses 4 chip(s), ids 0-3");
    EXPECT_NE(e.hint().find("2 device(s) each"), std::string::npos) << e.hint();
  }
}

}  // namespace
}  // namespace podsim::hw
