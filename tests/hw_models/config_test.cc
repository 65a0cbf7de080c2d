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

namespace podsim::hw {
namespace {

// ---- per-chip overrides (docs/reference/hardware.md#per-chip-overrides) ----

// The UserError `load` throws (a failure when it throws none).
template <class F>
UserError error_of(F&& load) {
  try {
    load();
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << "expected UserError";
  return UserError("none");
}

TEST(ChipOverrides, SetFormGivesOneEntryPerKeyInOrder) {
  const HardwareConfig config = load_hardware(
      "tpuv3", {{"chips.17.core.clock_hz", "4.7e8"}, {"chips.0-3.hbm.bandwidth", "2.25e11"}});
  ASSERT_EQ(config.chip_overrides.size(), 2u);
  const ChipOverride& clock = config.chip_overrides[0];
  EXPECT_EQ(clock.first_chip, 17);
  EXPECT_EQ(clock.last_chip, 17);
  EXPECT_EQ(clock.key, ChipKey::kCoreClockHz);
  EXPECT_DOUBLE_EQ(clock.value, 4.7e8);
  EXPECT_EQ(clock.where.file, "--set hardware.chips.17.core.clock_hz=4.7e8");
  const ChipOverride& hbm = config.chip_overrides[1];
  EXPECT_EQ(hbm.first_chip, 0);
  EXPECT_EQ(hbm.last_chip, 3);
  EXPECT_EQ(hbm.key, ChipKey::kHbmBandwidth);
  // The machine's own values are untouched (tpuv3: 940 MHz, 4.5e11 B/s per device).
  EXPECT_DOUBLE_EQ(config.core.clock_hz, 9.4e8);
  EXPECT_DOUBLE_EQ(config.hbm.bandwidth, 4.5e11);
  EXPECT_EQ(per_chip_keys(), (std::vector<std::string>{"core.clock_hz", "hbm.bandwidth"}));
  HardwareConfig changed = config;
  apply_chip_value(changed, ChipKey::kCoreClockHz, 4.7e8);
  EXPECT_DOUBLE_EQ(chip_value(changed, ChipKey::kCoreClockHz), 4.7e8);
  EXPECT_DOUBLE_EQ(chip_value(changed, ChipKey::kHbmBandwidth), 4.5e11);
  EXPECT_EQ(chip_key_name(ChipKey::kHbmBandwidth), "hbm.bandwidth");
}

TEST(ChipOverrides, DocumentFormNestedOrDottedAddsToTheBase) {
  // A file's `chips:` map, keys nested like the rest of the file or dotted, after its base's.
  const HardwareConfig config = load_hardware_from_string(
      "base: tpuv3\nchips:\n  5:\n    core:\n      clock_hz: 7e8\n"
      "  6-7:\n    hbm.bandwidth: 3e11\n",
      "slow.yaml", {{"chips.1.core.clock_hz", "8e8"}});
  ASSERT_EQ(config.chip_overrides.size(), 3u);
  EXPECT_EQ(config.chip_overrides[0].first_chip, 5);
  EXPECT_EQ(config.chip_overrides[0].where.line, 5);  // the value's line
  EXPECT_EQ(config.chip_overrides[1].first_chip, 6);
  EXPECT_EQ(config.chip_overrides[1].last_chip, 7);
  EXPECT_EQ(config.chip_overrides[1].key, ChipKey::kHbmBandwidth);
  EXPECT_EQ(config.chip_overrides[2].first_chip, 1);  // the --set comes last
}

TEST(ChipOverrides, BadIdsKeysAndValuesAreUserErrorsWithHints) {
  auto set = [](const std::string& key, const std::string& value) {
    return error_of([&] { load_hardware("tpuv3", {{key, value}}); });
  };
  // Not a chip id.
  UserError e = set("chips.x.core.clock_hz", "1e9");
  EXPECT_EQ(e.message(), "bad chip id 'x' in hardware key 'chips.x.core.clock_hz'");
  EXPECT_NE(e.hint().find("first-last"), std::string::npos) << e.hint();
  EXPECT_EQ(e.location().file, "--set hardware.chips.x.core.clock_hz=1e9");
  EXPECT_EQ(set("chips.-1.core.clock_hz", "1e9").message(),
            "bad chip id '-1' in hardware key 'chips.-1.core.clock_hz'");
  // Beyond any machine (2^20 chips), and a range written backwards.
  EXPECT_NE(set("chips.1048576.core.clock_hz", "1e9").message().find("beyond any machine"),
            std::string::npos);
  e = set("chips.3-1.core.clock_hz", "1e9");
  EXPECT_NE(e.message().find("runs backwards"), std::string::npos);
  EXPECT_EQ(e.hint(), "write the lower id first: 1-3");
  // No key, a key that cannot differ per chip, a misspelt key.
  EXPECT_NE(set("chips.1", "1e9").message().find("names chips but no key"), std::string::npos);
  e = set("chips.1.core.mxu_rows", "64");
  EXPECT_EQ(e.message(),
            "hardware key 'core.mxu_rows' cannot differ per chip ('chips.1.core.mxu_rows')");
  EXPECT_EQ(e.hint(),
            "per-chip keys: core.clock_hz, hbm.bandwidth (every other key is the machine's)");
  EXPECT_EQ(set("chips.1.core.clock", "1e9").hint(), "did you mean 'chips.1.core.clock_hz'?");
  // Values: the machine-wide key's range (clock 1e6..1e11 Hz), NaN and words rejected.
  for (const char* value : {"1e12", ".nan", "fast", "-1e9"}) {
    e = set("chips.1.core.clock_hz", value);
    EXPECT_NE(e.message().find("per-chip key 'chips.1.core.clock_hz'"), std::string::npos)
        << value << ": " << e.message();
  }
  EXPECT_NE(set("chips.1.hbm.bandwidth", "1e20").hint().find("hbm.bandwidth must be"),
            std::string::npos);
}

TEST(ChipOverrides, DocumentErrorsHaveLineAndColumn) {
  auto load = [](const std::string& text) {
    return error_of([&] { load_hardware_from_string(text, "c.yaml"); });
  };
  // A bad value: at the value.
  UserError e = load("base: tpuv3\nchips:\n  2:\n    core: {clock_hz: .nan}\n");
  EXPECT_EQ(e.location().line, 4);
  EXPECT_EQ(e.location().column, 22);
  // An unknown per-chip key: at its value, with the nearest per-chip key.
  e = load("base: tpuv3\nchips:\n  2:\n    hbm: {bandwith: 1e11}\n");
  EXPECT_EQ(e.location().line, 4);
  EXPECT_EQ(e.hint(), "did you mean 'chips.2.hbm.bandwidth'?");
  // A chip entry that is not a map, and chips that is not a map.
  EXPECT_EQ(load("base: tpuv3\nchips:\n  2: 7e8\n").location().line, 3);
  EXPECT_EQ(load("base: tpuv3\nchips: [1, 2]\n").location().line, 2);
  // A misspelt `chips` is an unknown key pointing at it, with the right word.
  e = load("base: tpuv3\nchipz:\n  2: {core: {clock_hz: 7e8}}\n");
  EXPECT_EQ(e.location().line, 2);
  EXPECT_NE(e.hint().find("did you mean 'chips'"), std::string::npos) << e.hint();
  // `chip:` is the chip section: its key '2' is unknown there, at line 3.
  e = load("base: tpuv3\nchip:\n  2: {core: {clock_hz: 7e8}}\n");
  EXPECT_EQ(e.message(), "unknown hardware key 'chip.2'");
  EXPECT_EQ(e.location().line, 3);
}

}  // namespace
}  // namespace podsim::hw
