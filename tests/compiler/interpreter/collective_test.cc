// Interpreter: collectives on 2-, 4- and 8-device runs with all-device,
// explicit and iota replica groups (incl. transposed subgroups), plus
// partition-id driven slicing.
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

using V = std::vector<double>;

constexpr const char* kBodies = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
)";

// Runs `entry` (an ENTRY computation text) on n devices; device d's single
// argument comes from make_arg(d).
template <typename MakeArg>
std::vector<Literal> run_devices(const std::string& entry, int n, MakeArg make_arg) {
  Module m = parse_verified(fmt::format("HloModule m, num_partitions={}\n", n) + kBodies + entry);
  std::vector<std::vector<Literal>> args;
  for (int d = 0; d < n; ++d) args.push_back({make_arg(d)});
  return evaluate_spmd(m, args);
}

// XLA's combined all-gather / reduce-scatter take several operands and
// return the tuple of each one's result. 2 devices; device d holds
// p = {d, 10+d}. Gathering p and p*2 gives ({0,10,1,11}, {0,20,2,22});
// reduce-scatter of p sums to {1, 21}, device d keeps element d.
TEST(CombinedCollectives, EachOperandIsCollectedOnItsOwn) {
  auto out = run_devices(R"(ENTRY main {
  p = f32[2] parameter(0)
  two = f32[] constant(2)
  twos = f32[2] broadcast(two), dimensions={}
  q = f32[2] multiply(p, twos)
  ag = (f32[4], f32[4]) all-gather(p, q), dimensions={0}, replica_groups={{0,1}}
  rs = (f32[1], f32[1]) reduce-scatter(p, q), dimensions={0}, replica_groups={{0,1}}, to_apply=add
  ROOT t = ((f32[4], f32[4]), (f32[1], f32[1])) tuple(ag, rs)
})",
                         2, [](int d) {
                           return f32({2}, {double(d), 10.0 + d});
                         });
  ASSERT_EQ(out.size(), 2u);
  for (int d = 0; d < 2; ++d) {
    const Literal& ag = out[static_cast<size_t>(d)].element(0);
    EXPECT_EQ(ag.element(0).values(), (V{0, 10, 1, 11}));
    EXPECT_EQ(ag.element(1).values(), (V{0, 20, 2, 22}));
    const Literal& rs = out[static_cast<size_t>(d)].element(1);
    EXPECT_EQ(rs.element(0).values(), (V{d == 0 ? 1.0 : 21.0}));
    EXPECT_EQ(rs.element(1).values(), (V{d == 0 ? 2.0 : 42.0}));
  }
}

// XLA's group modes: without channel_id or use_global_device_ids an
// all-reduce is cross-replica; with one replica and 4 partitions each
// partition reduces alone, so every device keeps its own {d, 10d}. With a
// channel id the same text is cross-partition: the sum 0+1+2+3 = 6.
TEST(CollectiveModes, NoChannelIdMeansAcrossReplicasNotPartitions) {
  auto alone = run_devices(R"(ENTRY main {
  p = f32[2] parameter(0)
  ROOT r = f32[2] all-reduce(p), replica_groups={}, to_apply=add
})",
                           4, [](int d) {
                             return f32({2}, {double(d), 10.0 * d});
                           });
  for (int d = 0; d < 4; ++d)
    EXPECT_EQ(alone[static_cast<size_t>(d)].values(), (V{double(d), 10.0 * d}));
  auto across = run_devices(R"(ENTRY main {
  p = f32[2] parameter(0)
  ROOT r = f32[2] all-reduce(p), channel_id=1, replica_groups={}, to_apply=add
})",
                            4, [](int d) {
                              return f32({2}, {double(d), 10.0 * d});
                            });
  for (int d = 0; d < 4; ++d) EXPECT_EQ(across[static_cast<size_t>(d)].values(), (V{6, 60}));
}

// ragged-all-to-all on 2 devices: device d's input is {10d, 10d+1, 10d+2};
// it sends rows [0, 1) to device 0 and [1, 3) to device 1 (sizes 1, 2).
// Senders place their chunks at their own offsets: device 0 writes at row 0
// of each receiver, device 1 at row 1 of device 0 and row 2 of device 1.
// Device 0 gets {0, 10, -1, -1} (rows of the -1 output buffer untouched);
// device 1 gets {1, 2, 11, 12}.
TEST(CombinedCollectives, RaggedAllToAllMovesEachSendersRowsToTheirLanding) {
  auto out = run_devices(R"(ENTRY main {
  p = f32[3] parameter(0)
  minus = f32[] constant(-1)
  buffer = f32[4] broadcast(minus), dimensions={}
  in_off = s32[2] constant({0, 1})
  sizes = s32[2] constant({1, 2})
  pid = u32[] partition-id()
  pid_s = s32[] convert(pid)
  zero = s32[] constant(0)
  is0 = pred[] compare(pid_s, zero), direction=EQ
  off0 = s32[2] constant({0, 0})
  off1 = s32[2] constant({1, 2})
  out_off = s32[2] select(is0, off0, off1)
  recv = s32[2] constant({1, 2})
  ROOT r = f32[4] ragged-all-to-all(p, buffer, in_off, sizes, out_off, recv), channel_id=1, replica_groups={{0,1}}
})",
                         2, [](int d) {
                           return f32({3}, {10.0 * d, 10.0 * d + 1, 10.0 * d + 2});
                         });
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].values(), (V{0, 10, -1, -1}));
  EXPECT_EQ(out[1].values(), (V{1, 2, 11, 12}));
}

class CollectiveOnN : public ::testing::TestWithParam<int> {};

TEST_P(CollectiveOnN, AllReduceSumOverAllDevices) {
  // Device d holds {d, 10d}; the sum over d < n is n(n-1)/2 -> {s, 10s}.
  const int n = GetParam();
  auto out = run_devices(R"(ENTRY main {
  p = f32[2] parameter(0)
  ROOT r = f32[2] all-reduce(p), channel_id=1, replica_groups={}, to_apply=add
})",
                         n, [](int d) {
                           return f32({2}, {double(d), 10.0 * d});
                         });
  const double s = n * (n - 1) / 2.0;
  ASSERT_EQ(out.size(), static_cast<size_t>(n));
  for (int d = 0; d < n; ++d)
    EXPECT_EQ(out[static_cast<size_t>(d)].values(), (V{s, 10 * s})) << "device " << d;
}

TEST_P(CollectiveOnN, AllGatherConcatenatesInGroupOrder) {
  // Device d holds [[d],[10+d]]; gathering dim 1 gives [[0..n-1],[10..10+n-1]].
  const int n = GetParam();
  const std::string entry = fmt::format(R"(ENTRY main {{
  p = f32[2,1] parameter(0)
  ROOT r = f32[2,{}] all-gather(p), dimensions={{1}}, channel_id=1, replica_groups={{}}
}})",
                                        n);
  auto out = run_devices(entry, n, [](int d) { return f32({2, 1}, {double(d), 10.0 + d}); });
  V expected;
  for (int row = 0; row < 2; ++row)
    for (int d = 0; d < n; ++d) expected.push_back(row * 10.0 + d);
  for (int d = 0; d < n; ++d)
    EXPECT_EQ(out[static_cast<size_t>(d)].values(), expected) << "device " << d;
}

// Device d holds c64[1] (d, 10+d); gathering gives the pairs in device order:
// (0,10), (1,11), ... on every device.
TEST_P(CollectiveOnN, AllGatherOfComplexKeepsBothHalves) {
  const int n = GetParam();
  const std::string entry = fmt::format(R"(ENTRY main {{
  p = c64[1] parameter(0)
  ROOT r = c64[{}] all-gather(p), dimensions={{0}}, channel_id=1, replica_groups={{}}
}})",
                                        n);
  auto out = run_devices(entry, n, [](int d) {
    return lit(DType::kC64, {1}, {double(d), 10.0 + d});
  });
  V expected;
  for (int d = 0; d < n; ++d) {
    expected.push_back(d);
    expected.push_back(10.0 + d);
  }
  for (int d = 0; d < n; ++d)
    EXPECT_EQ(out[static_cast<size_t>(d)].values(), expected) << "device " << d;
}

TEST_P(CollectiveOnN, AllToAllTransposesChunks) {
  // Device s holds {10s + j : j < n}; chunk j goes to device j, so device r
  // receives {10s + r : s < n} in sender order.
  const int n = GetParam();
  const std::string entry = fmt::format(R"(ENTRY main {{
  p = f32[{0}] parameter(0)
  ROOT r = f32[{0}] all-to-all(p), dimensions={{0}}, channel_id=1, replica_groups={{}}
}})",
                                        n);
  auto out = run_devices(entry, n, [n](int d) {
    V v;
    for (int j = 0; j < n; ++j) v.push_back(10.0 * d + j);
    return f32({n}, v);
  });
  for (int r = 0; r < n; ++r) {
    V expected;
    for (int s = 0; s < n; ++s) expected.push_back(10.0 * s + r);
    EXPECT_EQ(out[static_cast<size_t>(r)].values(), expected) << "device " << r;
  }
}

TEST_P(CollectiveOnN, CollectivePermuteRingShift) {
  // Pairs d -> (d+1) mod n: device d receives device d-1's value 100 + (d-1).
  const int n = GetParam();
  std::string pairs;
  for (int d = 0; d < n; ++d) pairs += fmt::format("{}{{{},{}}}", d ? "," : "", d, (d + 1) % n);
  const std::string entry = fmt::format(R"(ENTRY main {{
  p = f32[] parameter(0)
  ROOT r = f32[] collective-permute(p), source_target_pairs={{{}}}
}})",
                                        pairs);
  auto out = run_devices(entry, n, [](int d) { return f32({}, {100.0 + d}); });
  for (int d = 0; d < n; ++d)
    EXPECT_EQ(out[static_cast<size_t>(d)].values(), (V{100.0 + (d + n - 1) % n})) << "device " << d;
}

INSTANTIATE_TEST_SUITE_P(Devices, CollectiveOnN, ::testing::Values(2, 4, 8));

TEST(Collective, AllReduceMaxOverExplicitSubgroups) {
  // Groups {0,2} and {1,3}, device d holds d: max is 2 for {0,2}, 3 for {1,3}.
  auto out = run_devices(R"(ENTRY main {
  p = f32[] parameter(0)
  ROOT r = f32[] all-reduce(p), replica_groups={{0,2},{1,3}}, to_apply=max
})",
                         4, [](int d) { return f32({}, {double(d)}); });
  EXPECT_EQ(out[0].values(), (V{2}));
  EXPECT_EQ(out[1].values(), (V{3}));
  EXPECT_EQ(out[2].values(), (V{2}));
  EXPECT_EQ(out[3].values(), (V{3}));
}

TEST(Collective, AllReduceOverTransposedIotaGroups) {
  // [2,4]<=[4,2]T(1,0): iota(8) as [4,2] = [[0,1],[2,3],[4,5],[6,7]],
  // transposed = [[0,2,4,6],[1,3,5,7]]. Device d holds d: even devices sum
  // 0+2+4+6 = 12, odd devices 1+3+5+7 = 16.
  auto out = run_devices(R"(ENTRY main {
  p = f32[] parameter(0)
  ROOT r = f32[] all-reduce(p), replica_groups=[2,4]<=[4,2]T(1,0), to_apply=add
})",
                         8, [](int d) { return f32({}, {double(d)}); });
  for (int d = 0; d < 8; ++d)
    EXPECT_EQ(out[static_cast<size_t>(d)].values(), (V{d % 2 ? 16.0 : 12.0})) << d;
}

TEST(Collective, AllReduceOverContiguousIotaPairs) {
  // [4,2]<=[8]: groups {2k, 2k+1}; device d holds d -> 4k + 1 with k = d/2.
  auto out = run_devices(R"(ENTRY main {
  p = f32[] parameter(0)
  ROOT r = f32[] all-reduce(p), replica_groups=[4,2]<=[8], to_apply=add
})",
                         8, [](int d) { return f32({}, {double(d)}); });
  for (int d = 0; d < 8; ++d)
    EXPECT_EQ(out[static_cast<size_t>(d)].values(), (V{4.0 * (d / 2) + 1})) << d;
}

TEST(Collective, AllGatherFollowsExplicitGroupOrder) {
  // Group {3,2,1,0}: the gather lists device 3's value first.
  auto out = run_devices(R"(ENTRY main {
  p = f32[1] parameter(0)
  ROOT r = f32[4] all-gather(p), dimensions={0}, replica_groups={{3,2,1,0}}
})",
                         4, [](int d) { return f32({1}, {double(d)}); });
  for (int d = 0; d < 4; ++d) EXPECT_EQ(out[static_cast<size_t>(d)].values(), (V{3, 2, 1, 0}));
}

TEST(Collective, ReduceScatterOverAllAndSubgroups) {
  // Device d holds {10d + i : i < 4}.
  auto arg = [](int d) { return f32({4}, {10.0 * d, 10.0 * d + 1, 10.0 * d + 2, 10.0 * d + 3}); };
  // All 4 devices: sum = {60 + 4i}; device d keeps element d.
  auto all = run_devices(R"(ENTRY main {
  p = f32[4] parameter(0)
  ROOT r = f32[1] reduce-scatter(p), dimensions={0}, channel_id=1, replica_groups={}, to_apply=add
})",
                         4, arg);
  for (int d = 0; d < 4; ++d) EXPECT_EQ(all[static_cast<size_t>(d)].values(), (V{60.0 + 4 * d}));
  // Groups [2,2]<=[4] = {0,1},{2,3}: {0,1} sums to {10+2i} = {10,12,14,16},
  // device 0 keeps {10,12}, device 1 {14,16}; {2,3} sums to {50+2i}.
  auto sub = run_devices(R"(ENTRY main {
  p = f32[4] parameter(0)
  ROOT r = f32[2] reduce-scatter(p), dimensions={0}, replica_groups=[2,2]<=[4], to_apply=add
})",
                         4, arg);
  EXPECT_EQ(sub[0].values(), (V{10, 12}));
  EXPECT_EQ(sub[1].values(), (V{14, 16}));
  EXPECT_EQ(sub[2].values(), (V{50, 52}));
  EXPECT_EQ(sub[3].values(), (V{54, 56}));
}

TEST(Collective, AllToAllWithinTransposedSubgroups) {
  // Groups {0,2,4,6} and {1,3,5,7}; device d holds {10d + j : j < 4} and is
  // member k = d/2 of its group, so it receives chunk k from each member:
  // device 0 -> {0, 20, 40, 60}; device 3 (k=1) -> {11, 31, 51, 71}.
  auto out = run_devices(R"(ENTRY main {
  p = f32[4] parameter(0)
  ROOT r = f32[4] all-to-all(p), dimensions={0}, replica_groups=[2,4]<=[4,2]T(1,0)
})",
                         8, [](int d) {
                           return f32({4}, {10.0 * d, 10.0 * d + 1, 10.0 * d + 2, 10.0 * d + 3});
                         });
  EXPECT_EQ(out[0].values(), (V{0, 20, 40, 60}));
  EXPECT_EQ(out[3].values(), (V{11, 31, 51, 71}));
  EXPECT_EQ(out[6].values(), (V{3, 23, 43, 63}));
}

TEST(Collective, PermuteNonTargetsGetZeros) {
  // Only 0 -> 1: device 1 gets 5, all others zeros.
  auto out = run_devices(R"(ENTRY main {
  p = f32[2] parameter(0)
  ROOT r = f32[2] collective-permute(p), source_target_pairs={{0,1}}
})",
                         4, [](int d) {
                           return f32({2}, {5.0 + d, 5.0 + d});
                         });
  EXPECT_EQ(out[0].values(), (V{0, 0}));
  EXPECT_EQ(out[1].values(), (V{5, 5}));
  EXPECT_EQ(out[2].values(), (V{0, 0}));
  EXPECT_EQ(out[3].values(), (V{0, 0}));
}

TEST(Collective, PartitionIdDrivesDynamicSlice) {
  // Each of 4 devices slices [2d, 2d+2) of iota(8) using its partition id,
  // then all-gathers: every device ends with 0..7.
  auto out = run_devices(R"(ENTRY main {
  p = f32[8] parameter(0)
  id = u32[] partition-id()
  two = u32[] constant(2)
  off = u32[] multiply(id, two)
  s = f32[2] dynamic-slice(p, off), dynamic_slice_sizes={2}
  ROOT g = f32[8] all-gather(s), dimensions={0}, channel_id=1, replica_groups={}
})",
                         4, [](int) { return iota_literal(DType::kF32, {8}); });
  for (int d = 0; d < 4; ++d)
    EXPECT_EQ(out[static_cast<size_t>(d)].values(), (V{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Collective, SingleDeviceEvaluateSeesPartitionZeroAndTrivialGroups) {
  // evaluate() is one device: partition-id 0, all-reduce over {0} is identity.
  Literal r = run("HloModule m\n" + std::string(kBodies) + R"(ENTRY main {
  p = f32[2] parameter(0)
  a = f32[2] all-reduce(p), channel_id=1, replica_groups={}, to_apply=add
  id = u32[] partition-id()
  ROOT t = (f32[2], u32[]) tuple(a, id)
})",
                  {f32({2}, {3, 4})});
  EXPECT_EQ(r.element(0).values(), (V{3, 4}));
  EXPECT_EQ(r.element(1).values(), (V{0}));
}

TEST(Collective, GroupsNamingMissingDevicesAreUserErrors) {
  // Group {0,5} on a 4-device run.
  EXPECT_THROW(run_devices(R"(ENTRY main {
  p = f32[] parameter(0)
  ROOT r = f32[] all-reduce(p), replica_groups={{0,1},{2,3},{4,5}}, to_apply=add
})",
                           4, [](int d) { return f32({}, {double(d)}); }),
               UserError);
}

}  // namespace
}  // namespace podsim::compiler::testing
