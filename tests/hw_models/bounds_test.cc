// Plausibility bounds of the hardware keys (hw_models/config.cc): every
// numeric key rejects absurd, NaN and infinite values with a UserError naming
// the key, its position (file:line:column, or the --set flag) and the allowed
// range; the bounds themselves are accepted; derived figures at the bounds
// stay exact (no int64 overflow).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "hw_models/config.h"

namespace podsim::hw {
namespace {

// The keys holding one integer, and those holding one real number.
const std::vector<std::string> kIntKeys = {"core.tensor_cores_per_device",
                                           "core.mxus_per_tensor_core",
                                           "core.mxu_rows",
                                           "core.mxu_cols",
                                           "core.vpu_lanes",
                                           "core.vpu_sublanes",
                                           "chip.devices_per_chip",
                                           "ici.collectives_in_flight_per_kind",
                                           "ici.collectives_in_flight",
                                           "ici.collective_chunks"};

std::vector<std::string> real_keys() {
  std::vector<std::string> keys;
  for (const std::string& key : hardware_keys()) {
    const bool other = key == "name" || key == "status" || key == "core.model" ||
                       key == "ici.collective_algorithm" || key == "ici.pod_dims" ||
                       key == "ici.pod_wraparound" || key == "ici.torus_block";
    if (!other && std::find(kIntKeys.begin(), kIntKeys.end(), key) == kIntKeys.end())
      keys.push_back(key);
  }
  return keys;
}

// Loads tpuv3 with one override that must fail; returns the error.
UserError override_error(const std::string& key, const std::string& value) {
  try {
    load_hardware("tpuv3", {{key, value}});
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << key << "=" << value << " was accepted";
  return UserError("accepted");
}

TEST(HardwareBounds, EveryRealKeyRejectsAbsurdNanAndInfiniteValues) {
  const std::vector<std::string> keys = real_keys();
  // clock, 2 MXU cycle counts, f32 passes, MXU sustained fraction, 5 VPU
  // cycle counts, op overhead,
  // 3 HBM, 3 chip (on-chip bandwidth and latency, host bandwidth) and 5
  // ICI numbers (link bandwidth, efficiency, hop latency, message and ring
  // step overheads), 2 DCN (bandwidth per chip, latency): a new real key must land here too.
  ASSERT_EQ(keys.size(), 24u);
  for (const std::string& key : keys)
    for (const std::string value : {"1e300", ".nan", ".inf", "-.inf", "-1e300"}) {
      const UserError e = override_error(key, value);
      EXPECT_NE(e.message().find("'" + key + "'"), std::string::npos)
          << key << "=" << value << ": " << e.message();
      EXPECT_EQ(e.location().file, "--set hardware." + key + "=" + value);
      EXPECT_NE(e.hint().find("a finite number in ["), std::string::npos)
          << key << ": " << e.hint();
    }
}

TEST(HardwareBounds, EveryIntegerKeyRejectsAbsurdCounts) {
  for (const std::string& key : kIntKeys) {
    // 10^12 is a valid int64, so only the upper bound can reject it.
    const UserError e = override_error(key, "1000000000000");
    EXPECT_NE(e.message().find("'" + key + "'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("outside the plausible range [1, "), std::string::npos)
        << e.message();
    EXPECT_EQ(e.location().file, "--set hardware." + key + "=1000000000000");
    EXPECT_NE(e.hint().find("must be an integer in [1, "), std::string::npos) << e.hint();
  }
}

TEST(HardwareBounds, TorusBlockIsAChipCountFromZero) {
  // 0 = only the full pod wraps (TPU v3); negative or beyond any pod is absurd.
  EXPECT_EQ(load_hardware("tpuv3", {{"ici.torus_block", "0"}}).ici.torus_block, 0);
  EXPECT_EQ(load_hardware("tpuv3", {{"ici.torus_block", "4"}}).ici.torus_block, 4);
  for (const char* value : {"-1", "1000000000000", "2.5"}) {
    const UserError e = override_error("ici.torus_block", value);
    EXPECT_NE(e.message().find("'ici.torus_block'"), std::string::npos) << e.message();
  }
}

TEST(HardwareBounds, DocumentValueOutOfRangeHasLineColumnAndRange) {
  // "  clock_hz: 1e300" on line 3: the value starts at column 13.
  try {
    load_hardware_from_string("base: tpuv3\ncore:\n  clock_hz: 1e300\n", "fast.yaml");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "fast.yaml");
    EXPECT_EQ(e.location().line, 3);
    EXPECT_EQ(e.location().column, 13);
    EXPECT_NE(e.message().find("core.clock_hz"), std::string::npos);
    EXPECT_NE(e.hint().find("[1e+06, 1e+11] Hz"), std::string::npos) << e.hint();
  }
  // "  capacity_bytes: 1e30" on line 3: column 19. The range reads in powers of two.
  try {
    load_hardware_from_string("base: tpuv4\nhbm:\n  capacity_bytes: 1e30\n", "big.yaml");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 3);
    EXPECT_EQ(e.location().column, 19);
    EXPECT_NE(e.hint().find("[2^20, 2^50] bytes"), std::string::npos) << e.hint();
  }
  // A NaN link bandwidth: "  link_bandwidth: .nan", value at column 19.
  try {
    load_hardware_from_string("base: tpuv3\nici:\n  link_bandwidth: .nan\n", "nan.yaml");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 3);
    EXPECT_EQ(e.location().column, 19);
    EXPECT_NE(e.message().find("ici.link_bandwidth"), std::string::npos);
  }
}

TEST(HardwareBounds, BoundsAreInclusiveAndJustBeyondFails) {
  EXPECT_DOUBLE_EQ(load_hardware("tpuv3", {{"core.clock_hz", "1e11"}}).core.clock_hz, 1e11);
  EXPECT_DOUBLE_EQ(load_hardware("tpuv3", {{"core.clock_hz", "1e6"}}).core.clock_hz, 1e6);
  override_error("core.clock_hz", "1.0001e11");
  override_error("core.clock_hz", "9.999e5");
  EXPECT_DOUBLE_EQ(load_hardware("tpuv3", {{"ici.link_efficiency", "1"}}).ici.link_efficiency, 1.0);
  override_error("ici.link_efficiency", "1.01");
  EXPECT_DOUBLE_EQ(load_hardware("tpuv3", {{"ici.link_bandwidth", "1e15"}}).ici.link_bandwidth,
                   1e15);
  override_error("ici.link_bandwidth", "1.1e15");
  // 1 PiB = 2^50 bytes of HBM per device passes, one more GiB does not.
  EXPECT_DOUBLE_EQ(
      load_hardware("tpuv3", {{"hbm.capacity_bytes", "1125899906842624"}}).hbm.capacity_bytes,
      1125899906842624.0);
  override_error("hbm.capacity_bytes", "1125900980584448");
  EXPECT_EQ(load_hardware("tpuv3", {{"core.mxu_rows", "65536"}}).core.mxu_rows, 65536);
  override_error("core.mxu_rows", "65537");
  // Zero stays valid where it was (a latency), not where it divides.
  EXPECT_DOUBLE_EQ(load_hardware("tpuv3", {{"ici.hop_latency_s", "0"}}).ici.hop_latency_s, 0.0);
  override_error("hbm.bandwidth", "0");
}

TEST(HardwareBounds, PodDimsAreBoundedEachAndInProduct) {
  // [256, 256] = 2^16 chips is the largest pod; [512, 256] is twice that.
  EXPECT_EQ(load_hardware("tpuv3", {{"ici.pod_dims", "[256, 256]"}}).ici.pod_dims,
            (std::vector<int64_t>{256, 256}));
  const UserError product = override_error("ici.pod_dims", "[512, 256]");
  EXPECT_NE(product.message().find("131072 chips"), std::string::npos) << product.message();
  EXPECT_EQ(product.location().file, "--set hardware.ici.pod_dims=[512, 256]");
  const UserError one = override_error("ici.pod_dims", "[1000000000000, 1]");
  EXPECT_NE(one.message().find("ici.pod_dims"), std::string::npos) << one.message();
  EXPECT_NE(one.hint().find("[1, 2^16]"), std::string::npos) << one.hint();
}

TEST(HardwareBounds, PodListLengthMismatchPointsAtTheList) {
  // tpuv3's pod is 2-D; "  pod_wraparound: [true]" is line 3, the list at column 19.
  try {
    load_hardware_from_string("base: tpuv3\nici:\n  pod_wraparound: [true]\n", "wrap.yaml");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 3);
    EXPECT_EQ(e.location().column, 19);
    EXPECT_NE(e.message().find("ici.pod_wraparound has 1 entries but ici.pod_dims has 2"),
              std::string::npos)
        << e.message();
  }
}

TEST(HardwareBounds, DerivedPeaksAtTheBoundsDoNotOverflow) {
  // Every factor at its maximum: 2^10 tensor cores x 2^16 MXUs x 2^16 x 2^16
  // PEs = 2^58 MACs per cycle, x 2 FLOP x 1e11 Hz = 2^59 x 1e11 FLOP/s. An
  // int64 overflow of the MAC count would wrap to a different (or negative)
  // number. The VPU: 2^10 x 2^16 lanes x 2^16 sublanes x 1e11 = 2^42 x 1e11.
  const HardwareConfig c = load_hardware("tpuv3", {{"core.tensor_cores_per_device", "1024"},
                                                   {"core.mxus_per_tensor_core", "65536"},
                                                   {"core.mxu_rows", "65536"},
                                                   {"core.mxu_cols", "65536"},
                                                   {"core.vpu_lanes", "65536"},
                                                   {"core.vpu_sublanes", "65536"},
                                                   {"core.clock_hz", "1e11"}});
  EXPECT_DOUBLE_EQ(peak_matmul_flops_per_device(c.core),
                   576460752303423488.0 * 1e11);                              // 2^59 x 1e11
  EXPECT_DOUBLE_EQ(vpu_elements_per_second(c.core), 4398046511104.0 * 1e11);  // 2^42 x 1e11
}

TEST(HardwareBounds, UnknownOverrideKeyNamesTheFlag) {
  const UserError e = override_error("core.clok_hz", "1e9");
  EXPECT_EQ(e.location().file, "--set hardware.core.clok_hz=1e9");
}

}  // namespace
}  // namespace podsim::hw
