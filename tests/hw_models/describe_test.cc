// describe_hardware and the derived figures against docs/reference/hardware.md.
#include <gtest/gtest.h>

#include "hw_models/describe.h"

namespace podsim::hw {
namespace {

TEST(Describe, TpuV3DerivedFigures) {
  const DerivedFigures f = derive_figures(load_hardware("tpuv3"));
  // hardware.md: 61.5 TFLOP/s per core, 123 per chip.
  EXPECT_NEAR(f.peak_flops_per_device, 61.5e12, 0.05 * 61.5e12);
  EXPECT_NEAR(f.peak_flops_per_chip, 123e12, 0.05 * 123e12);
  EXPECT_EQ(f.pod_chips, 1024);
  EXPECT_EQ(f.pod_devices, 2048);
  EXPECT_EQ(f.ici_links_per_chip, 4);  // hardware.md 'ICI links per chip'
  // hardware.md (Cloud TPU v3 docs): bisection 6.4 TB/s = 64 crossing links x 1e11.
  EXPECT_NEAR(f.bisection_bandwidth, 6.4e12, 0.05 * 6.4e12);
  // hardware.md: pod all-reduce bandwidth 340 TB/s. Achieved one-way
  // bandwidth summed over the 4096 directed links: 4096 x 1e11 x 0.83
  // (ici.link_efficiency) = 340.0 TB/s. The bisection above stays on the raw
  // 1e11 rate: both anchor rows hold.
  EXPECT_NEAR(f.pod_all_reduce_bandwidth, 340e12, 0.05 * 340e12);
  EXPECT_DOUBLE_EQ(f.pod_all_reduce_bandwidth, 4096 * 1e11 * 0.83);
}

TEST(Describe, TpuV4DerivedFigures) {
  const DerivedFigures f = derive_figures(load_hardware("tpuv4"));
  EXPECT_NEAR(f.peak_flops_per_chip, 275e12, 0.05 * 275e12);
  EXPECT_EQ(f.pod_chips, 4096);
  EXPECT_EQ(f.ici_links_per_chip, 6);
  // hardware.md: pod all-reduce bandwidth 1.1 PB/s = 4096 chips x 6 x 4.5e10.
  EXPECT_NEAR(f.pod_all_reduce_bandwidth, 1.1e15, 0.05 * 1.1e15);
  // 16^3 torus: halving one dim cuts 256 lines x 2 links x 4.5e10 = 23 TB/s.
  EXPECT_DOUBLE_EQ(f.bisection_bandwidth, 512 * 4.5e10);
}

TEST(Describe, TextListsValuesSourcesAndDerivedFigures) {
  const std::string text = describe_hardware(load_hardware("tpuv3", {{"ici.link_bandwidth", "2e11"}}));
  EXPECT_NE(text.find("core.clock_hz"), std::string::npos);
  EXPECT_NE(text.find("docs/reference/hardware.md"), std::string::npos);
  EXPECT_NE(text.find("override (--set)"), std::string::npos);
  EXPECT_NE(text.find("61.6 TFLOP/s"), std::string::npos);
  // Doubled links double the bisection: 12.80 TB/s.
  EXPECT_NE(text.find("12.80 TB/s"), std::string::npos);
}

}  // namespace
}  // namespace podsim::hw
