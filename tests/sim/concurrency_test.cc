// Concurrent collectives on one device (ici.collectives_in_flight and
// ici.collectives_in_flight_per_kind): kinds on disjoint links overlap fully,
// the same kind waits for its per-kind slot, and collectives sharing links
// share their bandwidth in both fidelities.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <string>
#include <vector>

#include "tests/sim/sim_test_util.h"

namespace podsim::sim {
namespace {

using testing::make_system;
using testing::program_from_hlo;
using testing::run;

using testing::kHopLatency;
using testing::kLinkBandwidth;

constexpr const char* kSum = R"(%sum (x: bf16[], y: bf16[]) -> bf16[] {
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
})";

// A torus of chips (one device each) closed in every dim, with the given
// in-flight limits.
hw::System torus(std::vector<int64_t> dims, int64_t in_flight, int64_t per_kind) {
  std::vector<std::string> wrap(dims.size(), "true");
  int64_t devices = 1;
  for (int64_t d : dims) devices *= d;
  std::vector<int64_t> physical = dims;
  physical.push_back(1);  // one device per chip
  return make_system({devices},
                     {{"ici.pod_dims", fmt::format("[{}]", fmt::join(dims, ", "))},
                      {"ici.pod_wraparound", fmt::format("[{}]", fmt::join(wrap, ", "))},
                      {"chip.devices_per_chip", "1"},
                      {"ici.collectives_in_flight", std::to_string(in_flight)},
                      {"ici.collectives_in_flight_per_kind", std::to_string(per_kind)}},
                     physical);
}

// On a 4x4 torus (16 devices, row-major): an all-reduce within each row
// (groups of 4 consecutive devices: the links of the last dim) and/or an
// all-gather within each column (the first dim's links), independent of
// each other.
std::string row_and_column_program(bool row_all_reduce, bool column_all_gather) {
  std::string body;
  std::vector<std::string> roots, shapes;
  if (row_all_reduce) {
    body +=
        "  %ar = bf16[1024,1024]{1,0} all-reduce(%p), channel_id=1, replica_groups=[4,4]<=[16], "
        "use_global_device_ids=true, to_apply=%sum\n";
    roots.push_back("%ar");
    shapes.push_back("bf16[1024,1024]{1,0}");
  }
  if (column_all_gather) {
    body +=
        "  %ag = bf16[4096,1024]{1,0} all-gather(%q), channel_id=2, "
        "replica_groups=[4,4]<=[4,4]T(1,0), "
        "dimensions={0}, use_global_device_ids=true\n";
    roots.push_back("%ag");
    shapes.push_back("bf16[4096,1024]{1,0}");
  }
  const std::string tuple = fmt::format("({})", fmt::join(shapes, ", "));
  return fmt::format(R"(HloModule rows_columns, num_partitions=16
{0}
ENTRY %main (p: bf16[1024,1024], q: bf16[1024,1024]) -> {1} {{
  %p = bf16[1024,1024]{{1,0}} parameter(0)
  %q = bf16[1024,1024]{{1,0}} parameter(1)
{2}  ROOT %t = {1} tuple({3})
}})",
                     kSum, tuple, body, fmt::join(roots, ", "));
}

TEST(Concurrency, KindsOnDisjointLinksOverlapFully) {
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull}) {
    const hw::System concurrent = torus({4, 4}, 2, 1), serial = torus({4, 4}, 1, 1);
    const double ar =
        run(program_from_hlo(row_and_column_program(true, false)), concurrent, f).step_time_s;
    const double ag =
        run(program_from_hlo(row_and_column_program(false, true)), concurrent, f).step_time_s;
    ASSERT_GT(ar, 0);
    ASSERT_GT(ag, 0);
    const auto both = program_from_hlo(row_and_column_program(true, true));
    // Rows and columns use different links: together they take the longer.
    EXPECT_NEAR(run(both, concurrent, f).step_time_s, std::max(ar, ag), 1e-11) << fidelity_name(f);
    // One at a time: the sum.
    EXPECT_NEAR(run(both, serial, f).step_time_s, ar + ag, 1e-11) << fidelity_name(f);
  }
}

// Two independent all-reduces of V bytes over one 8-device ring.
std::string two_all_reduces() {
  return fmt::format(R"(HloModule two, num_partitions=8
{}
ENTRY %main (p: bf16[1024,1024], q: bf16[1024,1024]) -> (bf16[1024,1024], bf16[1024,1024]) {{
  %p = bf16[1024,1024]{{1,0}} parameter(0)
  %q = bf16[1024,1024]{{1,0}} parameter(1)
  %a = bf16[1024,1024]{{1,0}} all-reduce(%p), channel_id=1, replica_groups=[1,8]<=[8], use_global_device_ids=true, to_apply=%sum
  %b = bf16[1024,1024]{{1,0}} all-reduce(%q), channel_id=2, replica_groups=[1,8]<=[8], use_global_device_ids=true, to_apply=%sum
  ROOT %t = (bf16[1024,1024]{{1,0}}, bf16[1024,1024]{{1,0}}) tuple(%a, %b)
}})",
                     kSum);
}

TEST(Concurrency, SameKindWaitsForItsSlot) {
  // Per kind 1: the second all-reduce starts when the first ends, however
  // many collectives of other kinds could run.
  const double v = 1024.0 * 1024 * 2;
  const int n = 8;
  const double alone = 2 * ((n - 1.0) / n * v / (2 * kLinkBandwidth) + n / 2.0 * kHopLatency);
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull})
    EXPECT_NEAR(run(program_from_hlo(two_all_reduces()), torus({8}, 5, 1), f).step_time_s,
                2 * alone, 1e-11)
        << fidelity_name(f);
}

TEST(Concurrency, CollectivesOnTheSameLinksShareTheirBandwidth) {
  // Bidirectional ring all-reduce of V over n: two passes, each moving
  // (n-1)/n x V/2 over every link direction, so every link is busy
  //   busy = (n-1)/n x V / W
  // of the collective's time alone = busy + n hop latencies.
  const double v = 1024.0 * 1024 * 2;
  const int n = 8;
  const double busy = (n - 1.0) / n * v / kLinkBandwidth;
  const double alone = busy + n * kHopLatency;
  const auto program = program_from_hlo(two_all_reduces());
  const hw::System both = torus({8}, 2, 2);
  // Both start together and every link carries both transfers, each at half
  // rate, so the transfers end at 2 busy; the latencies (which use no link)
  // run side by side: 2 busy + n hop latencies = alone + busy. Fast mode
  // shares the transfer part (collective_sharing.h) and full mode the links
  // phase by phase (fabric.h): the same closed form.
  for (Fidelity f : {Fidelity::kFast, Fidelity::kFull})
    EXPECT_NEAR(run(program, both, f).step_time_s, alone + busy, 1e-9) << fidelity_name(f);
  // Against one at a time (2 alone), sharing saves the overlapped latencies.
  EXPECT_LT(alone + busy, 2 * alone);
}

TEST(Concurrency, EachKindHasItsOwnTraceTrack) {
  const hw::System system = torus({4, 4}, 2, 1);
  const Timeline t =
      run(program_from_hlo(row_and_column_program(true, true)), system, Fidelity::kFast, true);
  std::set<std::string> tracks;
  for (const TraceEvent& e : t.events) tracks.insert(e.track);
  EXPECT_EQ(tracks, (std::set<std::string>{"collectives all-gather", "collectives all-reduce"}));
}

}  // namespace
}  // namespace podsim::sim
