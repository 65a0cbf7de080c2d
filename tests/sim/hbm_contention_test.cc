// HBM shared between compute kernels and collective DMAs (sim/engine.h): a
// kernel that runs while a collective transfers gets the HBM bandwidth the
// collective's DMAs leave it (at least half), in both fidelities.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "sim/op_cost.h"
#include "tests/sim/sim_test_util.h"

namespace podsim::sim {
namespace {

using testing::kHopLatency;
using testing::kLinkBandwidth;
using testing::make_system;
using testing::program_from_hlo;
using testing::run;

TEST(SecondsWithHbmShare, StretchesOnlyTheHbmTime) {
  OpCost cost;
  cost.mxu_seconds = 2e-6;
  cost.vpu_seconds = 1e-6;
  cost.hbm_seconds = 3e-6;
  cost.seconds = 4e-6;  // 3 us of HBM + 1 us fixed overhead
  EXPECT_DOUBLE_EQ(seconds_with_hbm_share(cost, 1.0), 4e-6);
  EXPECT_DOUBLE_EQ(seconds_with_hbm_share(cost, 0.5), 1e-6 + 6e-6);
  // At share 0.9 the HBM time (3.33 us) still bounds; an op whose other
  // unit bounds is not slowed until HBM overtakes it: mxu 5 us, hbm 3 us,
  // share 0.75 -> hbm 4 us < 5 us.
  EXPECT_NEAR(seconds_with_hbm_share(cost, 0.9), 1e-6 + 3e-6 / 0.9, 1e-18);
  cost.mxu_seconds = 5e-6;
  cost.seconds = 6e-6;
  EXPECT_DOUBLE_EQ(seconds_with_hbm_share(cost, 0.75), 6e-6);
  EXPECT_DOUBLE_EQ(seconds_with_hbm_share(cost, 0.5), 1e-6 + 6e-6);
}

// Two chips, one device each, closed ring. Device d sends %p (bf16[4M] =
// 8 MiB) to the other device while it adds two f32[16M] (64 MiB each)
// operands that do not depend on the permute.
constexpr const char* kPermuteBesideAdd = R"(HloModule permute_beside_add, num_partitions=2
ENTRY %main (p: bf16[4194304], a: f32[16777216], b: f32[16777216]) -> (bf16[4194304], f32[16777216]) {
  %p = bf16[4194304]{0} parameter(0)
  %a = f32[16777216]{0} parameter(1)
  %b = f32[16777216]{0} parameter(2)
  %cp = bf16[4194304]{0} collective-permute(%p), channel_id=1, source_target_pairs={{0,1},{1,0}}
  %sum = f32[16777216]{0} add(%a, %b)
  ROOT %t = (bf16[4194304]{0}, f32[16777216]{0}) tuple(%cp, %sum)
})";

hw::System two_chips(const std::string& hbm_bandwidth) {
  return make_system({2}, {{"ici.pod_dims", "[2]"},
                           {"ici.pod_wraparound", "[true]"},
                           {"chip.devices_per_chip", "1"},
                           {"hbm.bandwidth", hbm_bandwidth}});
}

// Closed form. The permute moves V = 8 MiB over one link each way: it
// takes P = V / W + one hop latency. Its DMAs read V and write V on each
// device, evenly over P: rate 2V / P. The add reads 2 x 64 MiB and writes
// 64 MiB: h = 3 x 64 MiB / B of HBM time (its VPU time, 16M / 1024 lanes /
// 940 MHz = 17 us, is far less), plus o = 1 us fixed (hbm.latency_s +
// core.op_overhead_s). Both start at t = 0. While the permute runs, the
// add runs at share s = max(1/2, 1 - 2V / (P B)): by P it has done
// P / (o + h / s) of its work, the rest at full speed, so it ends at
// P + (1 - P / (o + h / s)) (o + h), which is also the step's end.
struct Expected {
  double step_s;
  double stretch_s;  // beyond the add's o + h alone
};

Expected closed_form(double hbm_bandwidth) {
  const double v = 4194304.0 * 2;
  const double permute = v / kLinkBandwidth + kHopLatency;
  const double share = std::max(0.5, 1 - 2 * v / (permute * hbm_bandwidth));
  const double h = 3 * 16777216.0 * 4 / hbm_bandwidth;
  const double o = 1e-6;
  const double end = permute + (1 - permute / (o + h / share)) * (o + h);
  return {end, end - (o + h)};
}

TEST(HbmContention, AKernelBesideATransferRunsOnTheBandwidthItsDmasLeave) {
  // 450 GB/s: the permute's DMAs take 2 x 8 MiB / 102 us = 164 GB/s,
  // share 0.635.
  const Expected want = closed_form(450e9);
  ASSERT_GT(want.stretch_s, 30e-6);  // a visible effect: 101 us of transfer at 0.63
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    SCOPED_TRACE(fidelity_name(f));
    const Timeline t = run(program_from_hlo(kPermuteBesideAdd), two_chips("450.0e9"), f);
    EXPECT_NEAR(t.step_time_s, want.step_s, 1e-9);
    EXPECT_NEAR(t.hbm_contention_s, want.stretch_s, 1e-9);
    EXPECT_NEAR(t.compute_s, t.mxu_bound_s + t.vpu_bound_s + t.hbm_bound_s + t.overhead_s, 1e-12);
    const auto permute =
        std::find_if(t.ops.begin(), t.ops.end(), [](const OpRecord& r) { return r.collective; });
    ASSERT_NE(permute, t.ops.end());
    EXPECT_NEAR(permute->seconds, 4194304.0 * 2 / kLinkBandwidth + kHopLatency,
                1e-9);  // not slowed
    // The add's own record carries its stretched time (it ran from 0 to the end).
    const auto add = std::find_if(t.ops.begin(), t.ops.end(),
                                  [](const OpRecord& r) { return r.opcode == "add"; });
    ASSERT_NE(add, t.ops.end());
    EXPECT_NEAR(add->seconds, want.step_s, 1e-9);
  }
}

TEST(HbmContention, TheKernelKeepsHalfTheBandwidthWhenDmasWantMore) {
  // 150 GB/s: the DMAs would take 164 GB/s (more than all of it); the
  // kernel keeps half.
  const Expected want = closed_form(150e9);
  const Timeline t = run(program_from_hlo(kPermuteBesideAdd), two_chips("150.0e9"));
  EXPECT_NEAR(t.step_time_s, want.step_s, 1e-9);
  EXPECT_NEAR(t.hbm_contention_s, want.stretch_s, 1e-9);
}

TEST(HbmContention, AChipOfItsOwnBandwidthSharesItsOwnHbm) {
  // Chip 1 at 300 GB/s of the machine's 450 (a per-chip override): each device's add runs at the
  // share its own HBM leaves beside the permute's DMAs (the same permute, P, on both), so device 0
  // ends at the closed form at 450 GB/s (share 0.64), device 1 at the one at 300 GB/s (0.45); the
  // step and the reported contention are device 1's, as on a whole machine at 300 GB/s.
  const Expected fast = closed_form(450e9), slow = closed_form(300e9);
  ASSERT_GT(slow.stretch_s, fast.stretch_s + 10e-6);  // premise: the two shares differ visibly
  hw::System system = make_system({2}, {{"ici.pod_dims", "[2]"},
                                        {"ici.pod_wraparound", "[true]"},
                                        {"chip.devices_per_chip", "1"},
                                        {"hbm.bandwidth", "450.0e9"},
                                        {"chips.1.hbm.bandwidth", "300.0e9"}});
  const Timeline t =
      run(program_from_hlo(kPermuteBesideAdd), system, Fidelity::kFull, /*trace=*/true);
  EXPECT_NEAR(t.step_time_s, slow.step_s, 1e-9);
  EXPECT_NEAR(t.hbm_contention_s, slow.stretch_s, 1e-9);
  int adds = 0;
  for (const TraceEvent& e : t.events)
    if (e.track == "compute") {
      ++adds;
      EXPECT_NEAR(e.duration_s, e.device == 1 ? slow.step_s : fast.step_s, 1e-9) << e.device;
    }
  EXPECT_EQ(adds, 2);
}

}  // namespace
}  // namespace podsim::sim
