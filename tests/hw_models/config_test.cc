// Hardware config loading: presets load, every key is validated with a
// location and a hint, overrides apply and are checked.
#include <gtest/gtest.h>

#include "common/error.h"
#include "hw_models/config.h"

namespace podsim::hw {
namespace {

TEST(HardwareConfig, PresetsLoadWithEveryKeySourced) {
  const std::vector<std::string> presets{"tpu7x", "tpuv3", "tpuv4", "tpuv5e", "tpuv5p", "tpuv6e"};
  for (const std::string& name : presets) {
    const HardwareConfig config = load_hardware(name);
    EXPECT_EQ(config.name, name);
    for (const std::string& key : hardware_keys())
      EXPECT_TRUE(config.sources.count(key)) << name << " " << key;
  }
  EXPECT_EQ(preset_names(), presets);
}

TEST(HardwareConfig, NewGenerationPeaksMatchPublishedFigures) {
  // docs/reference/hardware.md#clock: peak = 2 x MXUs x rows x cols x clock.
  // v5e: 197 TFLOP/s per chip (one device) = 4 x 128x128 x 2 x 1.5 GHz = 196.6e12.
  const HardwareConfig v5e = load_hardware("tpuv5e");
  EXPECT_DOUBLE_EQ(peak_matmul_flops_per_device(v5e.core), 2.0 * 4 * 128 * 128 * 1.5e9);
  EXPECT_NEAR(peak_matmul_flops_per_device(v5e.core), 197e12, 0.01 * 197e12);
  // v5p: 459 per chip = megacore device, 8 x 128x128 x 2 x 1.75 GHz = 458.8e12.
  const HardwareConfig v5p = load_hardware("tpuv5p");
  EXPECT_DOUBLE_EQ(peak_matmul_flops_per_device(v5p.core), 2.0 * 8 * 128 * 128 * 1.75e9);
  EXPECT_NEAR(peak_matmul_flops_per_device(v5p.core), 459e12, 0.01 * 459e12);
  // v6e: 918 per chip (one device) = 4 x 256x256 x 2 x 1.75 GHz = 917.5e12; the
  // other reading, 2 MXUs at 3.5 GHz, gives the same peak.
  const HardwareConfig v6e = load_hardware("tpuv6e");
  EXPECT_DOUBLE_EQ(peak_matmul_flops_per_device(v6e.core), 2.0 * 4 * 256 * 256 * 1.75e9);
  EXPECT_NEAR(peak_matmul_flops_per_device(v6e.core), 918e12, 0.01 * 918e12);
  const HardwareConfig v6e_two =
      load_hardware("tpuv6e", {{"core.mxus_per_tensor_core", "2"}, {"core.clock_hz", "3.5e9"}});
  EXPECT_DOUBLE_EQ(peak_matmul_flops_per_device(v6e_two.core),
                   peak_matmul_flops_per_device(v6e.core));
  // TPU7x: 2307 per chip of 2 devices = 2 x (4 x 256x256 x 2 x 2.2 GHz) = 2306.9e12.
  const HardwareConfig v7 = load_hardware("tpu7x");
  EXPECT_EQ(v7.chip.devices_per_chip, 2);
  EXPECT_NEAR(2 * peak_matmul_flops_per_device(v7.core), 2307e12, 0.01 * 2307e12);
  // HBM per device: TPU7x's 192 GiB and ~7.37 TB/s per chip, half per chiplet.
  EXPECT_DOUBLE_EQ(v7.hbm.capacity_bytes, 96.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(2 * v7.hbm.bandwidth, 7.37e12);
}

TEST(HardwareConfig, CalibrationStatusIsReadAndPrinted) {
  // docs/reference/hardware.md#calibration-status.
  for (const char* name : {"tpuv3", "tpuv4", "tpuv5e", "tpuv5p"})
    EXPECT_EQ(load_hardware(name).status, CalibrationStatus::kCalibrated) << name;
  for (const char* name : {"tpuv6e", "tpu7x"})
    EXPECT_EQ(load_hardware(name).status, CalibrationStatus::kUncalibrated) << name;
  EXPECT_EQ(calibration_status_text(CalibrationStatus::kUncalibrated),
            "uncalibrated (published specs only)");
  EXPECT_EQ(calibration_status_text(CalibrationStatus::kCalibrated), "calibrated");
  // A file based on a preset inherits its status; a bad name lists the two.
  EXPECT_EQ(load_hardware_from_string("base: tpuv6e\n", "x.yaml").status,
            CalibrationStatus::kUncalibrated);
  try {
    load_hardware_from_string("base: tpuv3\nstatus: maybe\n", "x.yaml");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 2);
    EXPECT_EQ(e.hint(), "valid values: calibrated, uncalibrated");
  }
}

TEST(HardwareConfig, TpuV3PeakMatchesAnchors) {
  // hardware.md: 61.5 TFLOP/s per v3 core; 2 MXU * 128*128 MAC * 2 FLOP * 940e6 = 61.6e12.
  const HardwareConfig v3 = load_hardware("tpuv3");
  EXPECT_NEAR(peak_matmul_flops_per_device(v3.core), 61.5e12, 0.01 * 61.5e12);
  EXPECT_DOUBLE_EQ(peak_matmul_flops_per_device(v3.core), 2.0 * 2 * 128 * 128 * 940e6);
  // hardware.md: 275 TFLOP/s per v4 chip = device (megacore): 8 MXUs * 16384 * 2 * 1050e6 =
  // 275.3e12.
  const HardwareConfig v4 = load_hardware("tpuv4");
  EXPECT_NEAR(peak_matmul_flops_per_device(v4.core), 275e12, 0.01 * 275e12);
}

TEST(HardwareConfig, OverridesApplyAndAreMarked) {
  const HardwareConfig config =
      load_hardware("tpuv3", {{"ici.link_bandwidth", "2e11"}, {"ici.pod_dims", "[16, 16]"}});
  EXPECT_DOUBLE_EQ(config.ici.link_bandwidth, 2e11);
  EXPECT_EQ(config.ici.pod_dims, (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(config.sources.at("ici.link_bandwidth"), "override (--set)");
}

TEST(HardwareConfig, UnknownOverrideKeyNamesTheKey) {
  try {
    load_hardware("tpuv3", {{"ici.link_bandwith", "2e11"}});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("ici.link_bandwith"), std::string::npos);
    // The nearest key, not a wall of every key, as the flag to type.
    EXPECT_EQ(e.hint(), "did you mean --set hardware.ici.link_bandwidth=2e11?");
  }
  try {
    // The right leaf under the wrong section: '.' and '_' read alike, so
    // "chip.hbm_bandwidth" ends with "hbm.bandwidth" (by spelling alone the
    // nearest would be chip.host_bandwidth).
    load_hardware("tpuv3", {{"chip.hbm_bandwidth", "9e11"}});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.hint(), "did you mean --set hardware.hbm.bandwidth=9e11?");
  }
  try {
    load_hardware("tpuv3", {{"qqqqqqqq", "1"}});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.hint().find("valid keys: "), std::string::npos)
        << e.hint();  // nothing close: the list
  }
}

TEST(HardwareConfig, BadOverrideValueNamesTheKey) {
  try {
    load_hardware("tpuv3", {{"hbm.bandwidth", "-3"}});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("hbm.bandwidth"), std::string::npos);
  }
  EXPECT_THROW(load_hardware("tpuv3", {{"core.mxu_rows", "12.5"}}), UserError);
  EXPECT_THROW(load_hardware("tpuv3", {{"core.model", "magic"}}), UserError);
  // Two pod dims but three wraparound flags.
  EXPECT_THROW(load_hardware("tpuv3", {{"ici.pod_wraparound", "[true, true, true]"}}), UserError);
}

TEST(HardwareConfig, UnknownDocumentKeyHasLineColumnAndHint) {
  const std::string text =
      "base: tpuv3\n"
      "ici:\n"
      "  link_bandwidht: 2e11\n";
  try {
    load_hardware_from_string(text, "mine.yaml");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "mine.yaml");
    EXPECT_EQ(e.location().line, 3);
    EXPECT_EQ(e.location().column, 3);
    EXPECT_EQ(e.hint(), "did you mean 'ici.link_bandwidth'?");
  }
  // Nothing close: the keys of that section.
  try {
    load_hardware_from_string("base: tpuv3\nici:\n  qqqqqqqqqq: 1\n", "mine.yaml");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.hint().find("valid keys under 'ici': "), std::string::npos) << e.hint();
    EXPECT_NE(e.hint().find("hop_latency_s"), std::string::npos) << e.hint();
    EXPECT_EQ(e.hint().find("core"), std::string::npos) << e.hint();
  }
}

TEST(HardwareConfig, BaseInheritanceChangesOnlyGivenKeys) {
  const HardwareConfig config =
      load_hardware_from_string("base: tpuv3\nhbm:\n  bandwidth: 900e9\n", "x.yaml");
  EXPECT_DOUBLE_EQ(config.hbm.bandwidth, 900e9);
  // Inherited from tpuv3: 656 Gbit/s per direction (hardware.md#ici-link-rate).
  EXPECT_DOUBLE_EQ(config.ici.link_bandwidth, 8.2e10);
  EXPECT_EQ(config.sources.at("hbm.bandwidth"), "set in x.yaml");
}

TEST(HardwareConfig, DocumentWithoutBaseMustGiveEveryKey) {
  try {
    load_hardware_from_string("name: partial\n", "partial.yaml");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("core.clock_hz"), std::string::npos);
  }
}

TEST(HardwareConfig, UnknownPresetListsPresets) {
  try {
    load_hardware("tpuv9");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.hint().find("tpuv3"), std::string::npos);
    EXPECT_NE(e.hint().find("podsim hardware list"), std::string::npos) << e.hint();
  }
  try {
    load_hardware("tpu4");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.hint().rfind("did you mean 'tpuv4'? ", 0), 0u) << e.hint();
  }
}

TEST(HardwareConfig, BadValueInDocumentHasLocation) {
  try {
    load_hardware_from_string("base: tpuv3\ncore:\n  clock_hz: fast\n", "y.yaml");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 3);
    EXPECT_EQ(e.location().column, 13);
    EXPECT_NE(e.message().find("core.clock_hz"), std::string::npos);
  }
}

}  // namespace
}  // namespace podsim::hw

namespace podsim::hw {
namespace {

TEST(HardwareConfig, SourcesMustNameKnownKeysWithText) {
  EXPECT_THROW(load_hardware_from_string("base: tpuv3\nsources:\n  ici.bogus: x\n", "s.yaml"),
               UserError);
  EXPECT_THROW(
      load_hardware_from_string("base: tpuv3\nsources:\n  ici.link_bandwidth: [1, 2]\n", "s.yaml"),
      UserError);
  const HardwareConfig c = load_hardware_from_string(
      "base: tpuv3\nici:\n  link_bandwidth: 2e11\nsources:\n  ici.link_bandwidth: mine\n",
      "s.yaml");
  EXPECT_EQ(c.sources.at("ici.link_bandwidth"), "mine");
}

// A list used as a key (as the workload fuzzer found for workloads): a
// positioned UserError, not a yaml-cpp exception escaping the loader.
TEST(Config, ComplexKeyIsAUserError) {
  EXPECT_THROW(load_hardware_from_string("base: tpuv3\nici:\n  ? [a, b]\n  : 1\n", "k.yaml"),
               UserError);
}

// The DCN keys: every preset gives them with a source (the published per-chip figures of
// docs/reference/hardware.md#data-centre-network; TPU v3: none, 0); a negative value is
// rejected naming the key.
TEST(HardwareConfig, DcnKeysComeFromTheReferenceTable) {
  const std::pair<const char*, double> published[] = {{"tpuv3", 0},        {"tpuv4", 6.25e9},
                                                      {"tpuv5e", 3.125e9}, {"tpuv5p", 6.25e9},
                                                      {"tpuv6e", 1.25e10}, {"tpu7x", 1.25e10}};
  for (const auto& [preset, bandwidth] : published) {
    const HardwareConfig c = load_hardware(preset);
    EXPECT_DOUBLE_EQ(c.dcn.bandwidth_per_chip, bandwidth) << preset;
    EXPECT_GT(c.dcn.latency_s, 0) << preset;
    EXPECT_NE(c.sources.at("dcn.bandwidth_per_chip").find("data-centre-network"),
              std::string::npos);
  }
  try {
    load_hardware("tpuv4", {{"dcn.bandwidth_per_chip", "-1"}});
    FAIL() << "negative bandwidth accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("dcn.bandwidth_per_chip"), std::string::npos);
  }
}

}  // namespace
}  // namespace podsim::hw
