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
  // hardware.md#ici-link-rate: 656 Gbit/s per link per direction (CACM 2020,
  // Ten Lessons Table 1) = 8.2e10 B/s, link_efficiency 1. Halving the 32x32
  // torus cuts 32 rows x 2 links = 64: 64 x 8.2e10 = 5.248 TB/s, the paper's
  // ~42 Tbit/s (the Cloud docs' 6.4 TB/s does not reconcile; podsim follows
  // the paper).
  EXPECT_DOUBLE_EQ(f.bisection_bandwidth, 64 * 8.2e10);
  // Cloud TPU v3 docs: pod all-reduce bandwidth 340 TB/s = the 4096 directed
  // links at the paper's rate, 4096 x 8.2e10 = 335.9 TB/s (within 1.2%).
  EXPECT_NEAR(f.pod_all_reduce_bandwidth, 340e12, 0.015 * 340e12);
  EXPECT_DOUBLE_EQ(f.pod_all_reduce_bandwidth, 4096 * 8.2e10);
}

TEST(Describe, TpuV4DerivedFigures) {
  const DerivedFigures f = derive_figures(load_hardware("tpuv4"));
  EXPECT_NEAR(f.peak_flops_per_chip, 275e12, 0.05 * 275e12);
  EXPECT_EQ(f.pod_chips, 4096);
  EXPECT_EQ(f.ici_links_per_chip, 6);
  // hardware.md#ici-link-rate: pod all-reduce bandwidth 1.1 PB/s over
  // 4096 chips x 6 directed links = 4.48e10 B/s; preset 4.5e10 -> 1.106 PB/s.
  EXPECT_NEAR(f.pod_all_reduce_bandwidth, 1.1e15, 0.01 * 1.1e15);
  EXPECT_DOUBLE_EQ(f.pod_all_reduce_bandwidth, 4096 * 6 * 4.5e10);
  // 16^3 torus: halving one dim cuts 256 lines x 2 links = 512 x 4.5e10 =
  // 23.0 TB/s, the Cloud docs' 24 TB/s within 5% (read one way).
  EXPECT_DOUBLE_EQ(f.bisection_bandwidth, 512 * 4.5e10);
  EXPECT_NEAR(f.bisection_bandwidth, 24e12, 0.05 * 24e12);
}

TEST(Describe, TextListsValuesSourcesAndDerivedFigures) {
  const std::string text =
      describe_hardware(load_hardware("tpuv3", {{"ici.link_bandwidth", "2e11"}}));
  EXPECT_NE(text.find("core.clock_hz"), std::string::npos);
  EXPECT_NE(text.find("docs/reference/hardware.md"), std::string::npos);
  EXPECT_NE(text.find("override (--set)"), std::string::npos);
  EXPECT_NE(text.find("61.6 TFLOP/s"), std::string::npos);
  // Doubled links double the bisection: 12.80 TB/s.
  EXPECT_NE(text.find("12.80 TB/s"), std::string::npos);
}

TEST(Describe, PresetTableHasOneRowPerPresetWithItsFigures) {
  const std::string text = describe_presets();
  // tpuv3: a 32x32 torus of chips with 2 cores each (2048 devices); a core
  // is 2 MXUs x 128 x 128 x 2 flops x 940 MHz = 61.6 TFLOP/s with 16 GiB HBM.
  EXPECT_NE(text.find("tpuv3          2048           61.6         16     1024  32x32\n"),
            std::string::npos)
      << text;
  // tpuv4: a 16x16x16 torus, one (megacore) device per chip, 32 GiB.
  EXPECT_NE(text.find("tpuv4          4096          275.3         32     4096  16x16x16\n"),
            std::string::npos)
      << text;
  EXPECT_TRUE(text.starts_with("preset      devices")) << text;
  EXPECT_TRUE(text.ends_with("details: podsim hardware show <preset>\n")) << text;
}

}  // namespace
}  // namespace podsim::hw
