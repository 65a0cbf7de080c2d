// Collective plans against closed forms: ring and bidirectional ring
// all-gather / all-reduce, the per-dimension torus all-reduce (two-way and
// one-way rings, pipelined in chunks), the ring step overhead, all-to-all on
// a torus (hand derivation), collective-permute, and the fair-share timing.
// docs/collectives.md derives the closed forms.
#include <gtest/gtest.h>

#include <numeric>

#include "common/error.h"
#include "hw_models/config.h"
#include "hw_models/ici/collectives.h"
#include "hw_models/ici/placement.h"

namespace podsim::hw {
namespace {

// ici.collective_algorithm reads the registry: every preset choice loads and
// prints back; direct (chosen only by auto) is rejected with the valid names.
TEST(CollectiveAlgorithmRegistry, PresetChoicesComeFromTheRegistry) {
  for (const CollectiveAlgorithmEntry& e : collective_algorithms()) {
    EXPECT_EQ(collective_algorithm_from_name(std::string(e.name)), e.algorithm);
    if (!e.preset_choice) {
      EXPECT_THROW(load_hardware("tpuv3", {{"ici.collective_algorithm", std::string(e.name)}}),
                   UserError);
      continue;
    }
    const HardwareConfig config =
        load_hardware("tpuv3", {{"ici.collective_algorithm", std::string(e.name)}});
    EXPECT_EQ(config.ici.collective_algorithm, e.algorithm);
    EXPECT_EQ(hardware_value_text(config, "ici.collective_algorithm"), e.name);
  }
  EXPECT_THROW(collective_algorithm_from_name("ring2"), UserError);
}

constexpr double kW = 1e11;    // link bandwidth, bytes/s per direction
constexpr double kHop = 1e-6;  // per-hop latency
constexpr double kV = 64e6;    // bytes per device
const LinkParams kParams{kW, kHop, 4.5e11, 0.5e-6};

std::vector<CoreId> iota_group(int64_t n) {
  std::vector<CoreId> g(static_cast<size_t>(n));
  std::iota(g.begin(), g.end(), CoreId{0});
  return g;
}

CollectivePlan plan(const Topology& t, CollectiveKind kind, CollectiveAlgorithm algorithm,
                    std::vector<int64_t> group_shape = {}, int64_t chunks = 0) {
  CollectiveQuery q;
  q.kind = kind;
  q.bytes_per_device = kV;
  q.group = iota_group(t.num_devices());
  q.group_shape = std::move(group_shape);
  q.algorithm = algorithm;
  q.chunks = chunks;
  return plan_collective(t, q);
}

double relative_error(double got, double want) { return std::abs(got - want) / want; }

TEST(Collectives, RingAllGatherMatchesClosedForm) {
  // 8 chips on a 1-D torus, one device each: n-1 = 7 steps of V/8 over one hop:
  // T = V (n-1)/n / W + (n-1) hop latency.
  const Topology t(Slice{{8}, {true}, 1}, kParams);
  const double want = kV * 7.0 / 8.0 / kW + 7 * kHop;
  const CollectivePlan ag = plan(t, CollectiveKind::kAllGather, CollectiveAlgorithm::kRing);
  EXPECT_EQ(ag.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_LT(relative_error(ag.analytic_time_s, want), 0.02);
  EXPECT_NEAR(ag.analytic_time_s, want, 1e-12);
  EXPECT_NEAR(ag.bytes_sent_per_device, kV * 7.0 / 8.0, 1e-3);
  // All-reduce = reduce-scatter + all-gather: twice that.
  const CollectivePlan ar = plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kRing);
  EXPECT_LT(relative_error(ar.analytic_time_s, 2 * want), 0.02);
  // Uniform ring steps: fair sharing changes nothing.
  EXPECT_NEAR(time_plan_fair_share(t, ar), ar.analytic_time_s, 1e-9 * ar.analytic_time_s);
}

TEST(Collectives, LinkEfficiencyScalesOnlyTheBandwidthTerm) {
  // ici.link_efficiency = 0.5 on 1e11 B/s links: collectives see 0.5e11 B/s;
  // the ring all-gather of the test above becomes V (n-1)/n / (0.5 W) +
  // (n-1) hops (latency unchanged). Raw parameters keep the full rate.
  const HardwareConfig c =
      load_hardware("tpuv3", {{"ici.link_bandwidth", "1e11"}, {"ici.link_efficiency", "0.5"}});
  EXPECT_DOUBLE_EQ(link_params(c).ici_bandwidth, 0.5e11);
  EXPECT_DOUBLE_EQ(raw_link_params(c).ici_bandwidth, 1e11);
  LinkParams params = link_params(c);
  params.ici_hop_latency_s = kHop;
  const Topology t(Slice{{8}, {true}, 1}, params);
  const CollectivePlan ag = plan(t, CollectiveKind::kAllGather, CollectiveAlgorithm::kRing);
  EXPECT_NEAR(ag.analytic_time_s, kV * 7.0 / 8.0 / 0.5e11 + 7 * kHop, 1e-12);
}

TEST(Collectives, BidirectionalRingHalvesBandwidthTerm) {
  // hardware.md#collective-cost-on-a-ring: all-gather on a bidirectional ring ~ V/(2W), latency ~
  // n/2 hops. n = 8: 3 steps of V/8 each way + 1 half step of V/16 each way: T = (3/8 + 1/16) V/W +
  // 4 hops = (n-1)/n V/(2W) + n/2 hops.
  const Topology t(Slice{{8}, {true}, 1}, kParams);
  const double want = kV * 7.0 / 16.0 / kW + 4 * kHop;
  const CollectivePlan ag =
      plan(t, CollectiveKind::kAllGather, CollectiveAlgorithm::kBidirectionalRing);
  EXPECT_NEAR(ag.analytic_time_s, want, 1e-12);
  EXPECT_NEAR(time_plan_fair_share(t, ag), want, 1e-9 * want);
  // Odd n = 7: 3 full steps of V/7 each way: T = 3/7 V/W + 3 hops = (n-1)/n V/(2W) + (n-1)/2 hops.
  const Topology t7(Slice{{7}, {true}, 1}, kParams);
  const CollectivePlan ag7 =
      plan(t7, CollectiveKind::kAllGather, CollectiveAlgorithm::kBidirectionalRing);
  EXPECT_NEAR(ag7.analytic_time_s, kV * 3.0 / 7.0 / kW + 3 * kHop, 1e-12);
  // Reduce-scatter mirrors all-gather.
  const CollectivePlan rs =
      plan(t, CollectiveKind::kReduceScatter, CollectiveAlgorithm::kBidirectionalRing);
  EXPECT_NEAR(rs.analytic_time_s, want, 1e-12);
  // auto on a 1-D group picks the bidirectional ring.
  EXPECT_EQ(plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kAuto).algorithm,
            CollectiveAlgorithm::kBidirectionalRing);
}

TEST(Collectives, RingOnALineIsFoldedToTwoHopSteps) {
  // 8 chips in a line without wraparound. In member order the closing flow
  // 7 -> 0 would take 7 hops; the folded embedding 0,2,4,6,7,5,3,1 has edges
  // of at most 2 hops, and every link direction carries exactly one edge:
  // 0->2 uses +x links 0-1 and 1-2, 2->4 uses 2-3 and 3-4, 4->6 4-5 and 5-6,
  // 6->7 6-7; 7->5, 5->3, 3->1, 1->0 use each -x link once. So per step
  // max load V/8 over W plus 2 hop latencies, 7 steps.
  const Topology t(Slice{{8}, {false}, 1}, kParams);
  const CollectivePlan ag = plan(t, CollectiveKind::kAllGather, CollectiveAlgorithm::kRing);
  EXPECT_NEAR(ag.analytic_time_s, 7 * (kV / 8 / kW + 2 * kHop), 1e-12);
  for (const Phase& phase : ag.phases)
    for (const LinkTransfer& load : phase.link_loads) EXPECT_NEAR(load.bytes, kV / 8, 1e-6);
  // The same line with wraparound keeps the member order: 1-hop steps.
  const Topology torus(Slice{{8}, {true}, 1}, kParams);
  const CollectivePlan wrapped =
      plan(torus, CollectiveKind::kAllGather, CollectiveAlgorithm::kRing);
  EXPECT_NEAR(wrapped.analytic_time_s, 7 * (kV / 8 / kW + 1 * kHop), 1e-12);
}

TEST(Collectives, TorusAllReduceByDims) {
  // 4x4 torus, group [4, 4] row-major. Per dim a bidirectional 4-ring pass of
  // data D costs 3/8 D/W + 2 hops. Reduce-scatter dim 0 (V), dim 1 (V/4), then
  // all-gather dim 1 (V/4), dim 0 (V): T = 2 * 3/8 * (V + V/4)/W + 8 hops
  // = 15/16 V/W + 8 hops.
  const Topology t(Slice{{4, 4}, {true, true}, 1}, kParams);
  const CollectivePlan ar = plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kAuto, {4, 4});
  EXPECT_EQ(ar.algorithm, CollectiveAlgorithm::kTorus);
  const double want = 15.0 / 16.0 * kV / kW + 8 * kHop;
  EXPECT_NEAR(ar.analytic_time_s, want, 1e-12);
  EXPECT_NEAR(time_plan_fair_share(t, ar), want, 1e-9 * want);
  // A 16-device bidirectional ring in row-major order on the same torus is
  // slower: its row-to-row steps share links.
  const CollectivePlan ring =
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kBidirectionalRing);
  EXPECT_GT(ring.analytic_time_s, ar.analytic_time_s);
}

TEST(Collectives, RingPerDimUsesOneDirectionPerDim) {
  // 4x4 torus, one-way 4-rings per dim: a pass over data D is 3 steps of D/4
  // over one hop: 3/4 D/W + 3 hops. RS dim 0 (V), dim 1 (V/4), AG dim 1, dim 0:
  // T = 2 * 3/4 * (V + V/4)/W + 12 hops = 15/8 V/W + 12 hops,
  // twice the torus bandwidth term (15/16 V/W) with 12 instead of 8 hops.
  const Topology t(Slice{{4, 4}, {true, true}, 1}, kParams);
  const CollectivePlan ar =
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kRingPerDim, {4, 4});
  EXPECT_EQ(ar.algorithm, CollectiveAlgorithm::kRingPerDim);
  const double want = 15.0 / 8.0 * kV / kW + 12 * kHop;
  EXPECT_NEAR(ar.analytic_time_s, want, 1e-12);
  EXPECT_NEAR(time_plan_fair_share(t, ar), want, 1e-9 * want);
  ASSERT_EQ(ar.phases.size(), 4u);
  for (const Phase& phase : ar.phases) {
    EXPECT_EQ(phase.repeat, 3);
    EXPECT_EQ(phase.link_loads.size(), 16u);  // 4 rings x 4 links, one direction
    for (const LinkTransfer& load : phase.link_loads) EXPECT_EQ(t.link(load.link).direction, +1);
  }
  // On a 1-D group it is the one-way ring.
  const Topology ring(Slice{{8}, {true}, 1}, kParams);
  EXPECT_NEAR(
      plan(ring, CollectiveKind::kAllReduce, CollectiveAlgorithm::kRingPerDim).analytic_time_s,
      plan(ring, CollectiveKind::kAllReduce, CollectiveAlgorithm::kRing).analytic_time_s, 1e-15);
}

TEST(Collectives, PipelinedTorusAllReduceOn4x4) {
  // 4x4 torus, C = 8 chunks. Stages RS0, RS1, AG1, AG0; a stage is a whole
  // bidirectional 4-ring pass of one chunk: per link direction (V_s/C)/4 *
  // 3/2 bytes, 2 steps of 1 hop (L = 2 hops). Dim 0 stages carry V_s = V:
  // 3/8 V/(C W); dim 1 stages V/4: 3/32 V/(C W). Chunk c runs stage s in slot
  // c + s: C + 3 = 11 slots; per slot the busier dim (stages on one dim add):
  //   slots 0-2 (RS0 | RS0,RS1 | RS0,RS1,AG1): dim 0 carries one stage, 3/8
  //   slots 3-7 (all four): dim 0 carries RS0 + AG0, 3/4
  //   slots 8-10 (RS1,AG1,AG0 | AG1,AG0 | AG0): 3/8
  // T = (6 * 3/8 + 5 * 3/4) / 8 * V/W + 11 * 2 hops = 3/4 V/W + 22 hops.
  const Topology t(Slice{{4, 4}, {true, true}, 1}, kParams);
  const CollectivePlan ar =
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorusPipelined, {4, 4}, 8);
  EXPECT_EQ(ar.algorithm, CollectiveAlgorithm::kTorusPipelined);
  const double want = 3.0 / 4.0 * kV / kW + 22 * kHop;
  EXPECT_NEAR(ar.analytic_time_s, want, 1e-12);
  // Stages on one dim carry equal bytes, so fair sharing finishes them together.
  EXPECT_NEAR(time_plan_fair_share(t, ar), want, 1e-9 * want);
  // 3 fill slots, the 5 steady slots as one phase, 3 drain slots.
  ASSERT_EQ(ar.phases.size(), 7u);
  EXPECT_EQ(ar.phases[3].repeat, 5);
  // The same bytes leave each device as in the torus plan: 2 * 3/4 (V + V/4).
  const CollectivePlan torus =
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorus, {4, 4});
  EXPECT_NEAR(ar.bytes_sent_per_device, torus.bytes_sent_per_device, 1e-6);
  EXPECT_NEAR(ar.bytes_sent_per_device, 15.0 / 8.0 * kV, 1e-6);
  // C = 2 < 4 stages: slots RS0 | RS0,RS1 | RS1,AG1 | AG1,AG0 | AG0; the
  // middle one only uses dim 1 (2 * 3/32 / 2):
  // T = (4 * 3/8 + 3/16) / 2 * V/W + 5 * 2 hops = 27/32 V/W + 10 hops.
  const CollectivePlan two =
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorusPipelined, {4, 4}, 2);
  EXPECT_NEAR(two.analytic_time_s, 27.0 / 32.0 * kV / kW + 10 * kHop, 1e-12);
  EXPECT_NEAR(time_plan_fair_share(t, two), two.analytic_time_s, 1e-9 * two.analytic_time_s);
  // C = 1 is the torus plan.
  const CollectivePlan one =
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorusPipelined, {4, 4}, 1);
  EXPECT_DOUBLE_EQ(one.analytic_time_s, torus.analytic_time_s);
  EXPECT_EQ(one.phases.size(), torus.phases.size());
  // A 1-D group has nothing to overlap (its stages share one dim's links):
  // it runs unchunked, the bidirectional ring.
  const Topology ring(Slice{{8}, {true}, 1}, kParams);
  EXPECT_DOUBLE_EQ(
      plan(ring, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorusPipelined, {}, 8)
          .analytic_time_s,
      plan(ring, CollectiveKind::kAllReduce, CollectiveAlgorithm::kBidirectionalRing)
          .analytic_time_s);
}

TEST(Collectives, PipelinedTorusIsFourFifthsOfTorusBandwidthOn4x4) {
  // Without hop latency the 4x4 pipelined bandwidth term 3/4 V/W (any C >= 3,
  // test above) against the torus' 15/16 V/W: 0.8, i.e. 20% faster.
  LinkParams params = kParams;
  params.ici_hop_latency_s = 0;
  const Topology t(Slice{{4, 4}, {true, true}, 1}, params);
  const double torus =
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorus, {4, 4}).analytic_time_s;
  for (int64_t chunks : {3, 4, 16, 64}) {
    const CollectivePlan p =
        plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorusPipelined, {4, 4}, chunks);
    EXPECT_NEAR(p.analytic_time_s / torus, 0.8, 1e-12) << chunks;
  }
}

TEST(Collectives, PipelinedTorusOnUnequalDims) {
  // 8x4 torus, C = 2. Stages: RS0 on V over 8-rings: per link direction
  // (V/2)/8 * 7/2 = 7/32 V, 4 steps (L = 4 hops); RS1 on V/8 over 4-rings:
  // (V/16)/4 * 3/2 = 3/128 V, 2 steps (L = 2 hops); AG1, AG0 alike.
  // Slots RS0 | RS0,RS1 | RS1,AG1 | AG1,AG0 | AG0: four slots carry one dim-0
  // stage (7/32 V/W, 4 hops), the middle one both dim-1 stages (6/128 V/W,
  // 2 hops): T = (7/8 + 3/64) V/W + 18 hops = 59/64 V/W + 18 hops.
  const Topology t(Slice{{8, 4}, {true, true}, 1}, kParams);
  const CollectivePlan ar =
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorusPipelined, {8, 4}, 2);
  const double want = 59.0 / 64.0 * kV / kW + 18 * kHop;
  EXPECT_NEAR(ar.analytic_time_s, want, 1e-12);
  EXPECT_NEAR(time_plan_fair_share(t, ar), want, 1e-9 * want);
  // Reduce-scatter alone, C = 2: slots RS0 | RS0,RS1 | RS1:
  // T = (2 * 7/32 + 3/128) V/W + (4 + 4 + 2) hops = 59/128 V/W + 10 hops.
  const CollectivePlan rs =
      plan(t, CollectiveKind::kReduceScatter, CollectiveAlgorithm::kTorusPipelined, {8, 4}, 2);
  EXPECT_NEAR(rs.analytic_time_s, 59.0 / 128.0 * kV / kW + 10 * kHop, 1e-12);
  // All-gather mirrors it.
  const CollectivePlan ag =
      plan(t, CollectiveKind::kAllGather, CollectiveAlgorithm::kTorusPipelined, {8, 4}, 2);
  EXPECT_NEAR(ag.analytic_time_s, rs.analytic_time_s, 1e-15);
}

TEST(Collectives, PipelinedTorusOn4x4x4) {
  // 4x4x4 torus, C = 3: 6 stages, 8 slots, every stage's L = 2 hops. Per chunk
  // and link direction: dim 0 stages a = 3/8 V/(3W), dim 1 a/4, dim 2 a/16.
  //   slots RS0 | RS0,RS1 | RS0,RS1,RS2: a each (one dim-0 stage)
  //   slots RS1,RS2,AG2 | RS2,AG2,AG1: a/4 (dim 1 carries one stage, dim 2 two of a/16)
  //   slots AG2,AG1,AG0 | AG1,AG0 | AG0: a each
  // T = (6 + 2/4) a + 8 x 2 hops = 13/16 V/W + 16 hops, against the torus'
  // 2 * 3/8 (1 + 1/4 + 1/16) V/W + 12 hops = 63/64 V/W + 12 hops.
  const Topology t(Slice{{4, 4, 4}, {true, true, true}, 1}, kParams);
  const CollectivePlan ar =
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorusPipelined, {4, 4, 4}, 3);
  const double want = 13.0 / 16.0 * kV / kW + 16 * kHop;
  EXPECT_NEAR(ar.analytic_time_s, want, 1e-12);
  EXPECT_NEAR(time_plan_fair_share(t, ar), want, 1e-9 * want);
  EXPECT_NEAR(
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorus, {4, 4, 4}).analytic_time_s,
      63.0 / 64.0 * kV / kW + 12 * kHop, 1e-12);
}

TEST(Collectives, RingStepOverheadIsPaidPerStep) {
  // ici.ring_step_overhead_s = o adds o to every ring step's latency.
  LinkParams params = kParams;
  const double o = 2.5e-6;
  params.ring_step_overhead_s = o;
  const Topology ring(Slice{{8}, {true}, 1}, params);
  // One-way 8-ring all-reduce: 2 * 7 steps: 2 * (7/8 V/W + 7 (hop + o)).
  EXPECT_NEAR(plan(ring, CollectiveKind::kAllReduce, CollectiveAlgorithm::kRing).analytic_time_s,
              2 * (7.0 / 8.0 * kV / kW + 7 * (kHop + o)), 1e-12);
  // Bidirectional: 2 * (3 full + 1 half) steps: 2 * (7/16 V/W + 4 (hop + o)).
  EXPECT_NEAR(plan(ring, CollectiveKind::kAllReduce, CollectiveAlgorithm::kBidirectionalRing)
                  .analytic_time_s,
              2 * (7.0 / 16.0 * kV / kW + 4 * (kHop + o)), 1e-12);
  // 4x4 torus: 4 passes of 2 steps: 15/16 V/W + 8 (hop + o); pipelined C = 8:
  // 11 slots of one stage's 2 steps: 3/4 V/W + 22 (hop + o).
  const Topology t(Slice{{4, 4}, {true, true}, 1}, params);
  EXPECT_NEAR(
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorus, {4, 4}).analytic_time_s,
      15.0 / 16.0 * kV / kW + 8 * (kHop + o), 1e-12);
  const CollectivePlan pipelined =
      plan(t, CollectiveKind::kAllReduce, CollectiveAlgorithm::kTorusPipelined, {4, 4}, 8);
  EXPECT_NEAR(pipelined.analytic_time_s, 3.0 / 4.0 * kV / kW + 22 * (kHop + o), 1e-12);
  EXPECT_NEAR(time_plan_fair_share(t, pipelined), pipelined.analytic_time_s,
              1e-9 * pipelined.analytic_time_s);
  // Not a ring: the direct all-to-all does not pay it.
  const Topology plain(Slice{{8}, {true}, 1}, kParams);
  EXPECT_DOUBLE_EQ(
      plan(ring, CollectiveKind::kAllToAll, CollectiveAlgorithm::kAuto).analytic_time_s,
      plan(plain, CollectiveKind::kAllToAll, CollectiveAlgorithm::kAuto).analytic_time_s);
  // The presets' key feeds it (default 0).
  EXPECT_DOUBLE_EQ(link_params(load_hardware("tpuv4")).ring_step_overhead_s, 0);
  EXPECT_DOUBLE_EQ(link_params(load_hardware("tpuv4", {{"ici.ring_step_overhead_s", "2.5e-6"}}))
                       .ring_step_overhead_s,
                   2.5e-6);
}

TEST(Collectives, AllToAllOnTorusByHand) {
  // 4x4 torus, one device per chip, direct all-to-all of V: each device sends
  // V/16 to each of 15 others, dimension-order routed (x then y).
  // x links of the line y = y_s carry a 1-D all-to-all of that line with V/4
  // per pair (4 destination y's). On a 4-ring: distance-1 flows put V/4 on
  // every link of their direction; the distance-2 flows go + from even and -
  // from odd sources (tie rule), each crossing 2 links: one more V/4 per link.
  // So every x link carries V/2; y links the same by symmetry (the y leg runs
  // in the destination column, pairs again V/4). Longest route 2+2 hops:
  // T = V/(2W) + 4 hops.
  const Topology t(Slice{{4, 4}, {true, true}, 1}, kParams);
  const CollectivePlan a2a = plan(t, CollectiveKind::kAllToAll, CollectiveAlgorithm::kAuto);
  EXPECT_EQ(a2a.algorithm, CollectiveAlgorithm::kDirect);
  ASSERT_EQ(a2a.phases.size(), 1u);
  EXPECT_EQ(a2a.phases[0].link_loads.size(), 64u);
  for (const LinkTransfer& lt : a2a.phases[0].link_loads) EXPECT_NEAR(lt.bytes, kV / 2, 1e-6);
  EXPECT_NEAR(a2a.analytic_time_s, kV / (2 * kW) + 4 * kHop, 1e-12);
  EXPECT_NEAR(a2a.bytes_sent_per_device, kV * 15.0 / 16.0, 1e-3);
  // Fair sharing cannot beat the link-load bound.
  EXPECT_GE(time_plan_fair_share(t, a2a), a2a.analytic_time_s * (1 - 1e-12));
  // The per-dim exchange moves the same link-bytes on half the links at a
  // time: two phases of V/(2W) + 2 hops.
  const CollectivePlan per_dim =
      plan(t, CollectiveKind::kAllToAll, CollectiveAlgorithm::kTorus, {4, 4});
  EXPECT_EQ(per_dim.phases.size(), 2u);
  EXPECT_NEAR(per_dim.analytic_time_s, kV / kW + 4 * kHop, 1e-12);
}

TEST(Collectives, AllToAllPaysOneMessageIssuePerDestination) {
  // The 4x4 torus above with a message overhead o: each device issues its 15
  // messages one after another, so the direct all-to-all takes
  // V/(2W) + 4 hops + 15 o. A ring all-gather sends one message per step and
  // keeps its closed form (n-1)/n V/W + (n-1) hops on the 16-device ring.
  LinkParams params = kParams;
  params.message_overhead_s = 3e-6;
  const Topology t(Slice{{4, 4}, {true, true}, 1}, params);
  const CollectivePlan a2a = plan(t, CollectiveKind::kAllToAll, CollectiveAlgorithm::kAuto);
  EXPECT_NEAR(a2a.analytic_time_s, kV / (2 * kW) + 4 * kHop + 15 * 3e-6, 1e-12);
  const Topology no_overhead(Slice{{4, 4}, {true, true}, 1}, kParams);
  EXPECT_NEAR(
      plan(t, CollectiveKind::kAllGather, CollectiveAlgorithm::kTorus, {4, 4}).analytic_time_s,
      plan(no_overhead, CollectiveKind::kAllGather, CollectiveAlgorithm::kTorus, {4, 4})
          .analytic_time_s,
      1e-15);
  // The presets carry it (ici.message_overhead_s).
  EXPECT_DOUBLE_EQ(link_params(load_hardware("tpuv3")).message_overhead_s, 1e-6);
}

TEST(Collectives, AllToAllOnARingIsAQuarterOfAllGather) {
  // 1-D torus of n = 64, V per device, V/64 per pair (chunk c). Clockwise, a
  // link carries every flow of distance d = 1..31 crossing it: sum d = 496 c,
  // plus the distance-32 ties from the 32 even sources, 32 hops each over 64
  // links: 16 c. Total 512 c = 8V per link: T = 8V/W + 32 hops.
  // hardware.md#collective-cost-on-a-ring: all-to-all ~ all-gather / 4 for the same total array (64
  // V): bidirectional all-gather = 63/64 * 64V / (2W) = 31.5 V/W; 8 / 31.5 = 0.254.
  const Topology t(Slice{{64}, {true}, 1}, kParams);
  const CollectivePlan a2a = plan(t, CollectiveKind::kAllToAll, CollectiveAlgorithm::kAuto);
  EXPECT_NEAR(a2a.analytic_time_s, 8 * kV / kW + 32 * kHop, 1e-12);
  CollectiveQuery ag;
  ag.kind = CollectiveKind::kAllGather;
  ag.bytes_per_device = 64 * kV;
  ag.group = iota_group(64);
  const double ratio =
      (a2a.analytic_time_s - 32 * kHop) / (plan_collective(t, ag).analytic_time_s - 32 * kHop);
  EXPECT_NEAR(ratio, 0.25, 0.02 * 0.25);
}

TEST(Collectives, AllToAllAggregatesChipPairsExactly) {
  // 2 devices per chip: flows between two chips are one Flow with count 4.
  // Link loads must equal the sum over individual device pairs.
  const Topology t(Slice{{4}, {true}, 2}, kParams);
  const CollectivePlan a2a = plan(t, CollectiveKind::kAllToAll, CollectiveAlgorithm::kDirect);
  // 8 devices, V/8 per pair. +x link 0->1 carries: chip 0 -> chip 1 (4 pairs)
  // and chip 0 -> chip 2 (tie, even source goes +, 4 pairs) and chip 3 -> chip 1
  // (tie from odd chip 3 goes -: not this link). So 8 pairs x V/8 = V.
  const LinkId plus01 = t.ici_link(0, 0, +1);
  double load = 0;
  for (const LinkTransfer& lt : a2a.phases[0].link_loads)
    if (lt.link == plus01) load = lt.bytes;
  EXPECT_NEAR(load, kV, 1e-6);
}

TEST(Collectives, CollectivePermuteShift) {
  // Shift by one on an 8-ring torus: each link +x carries V once: T = V/W + 1 hop.
  const Topology t(Slice{{8}, {true}, 1}, kParams);
  CollectiveQuery q;
  q.kind = CollectiveKind::kCollectivePermute;
  q.bytes_per_device = kV;
  for (CoreId i = 0; i < 8; ++i) q.permute_pairs.emplace_back(i, (i + 1) % 8);
  const CollectivePlan p = plan_collective(t, q);
  EXPECT_NEAR(p.analytic_time_s, kV / kW + kHop, 1e-12);
  q.permute_pairs.emplace_back(0, 99);
  EXPECT_THROW(plan_collective(t, q), UserError);
}

TEST(Collectives, FairShareMatchesBoundWhenBottleneckStaysBusy) {
  // 3 chips in a line: flows 0->1, 0->2, 1->2 of V each. Links 0->1 and 1->2
  // carry 2V each: bound 2V/W. Max-min gives every flow W/2 and all finish at
  // 2V/W; the 2-hop flow adds 2 hop latencies.
  const Topology t(Slice{{3}, {false}, 1}, kParams);
  CollectiveQuery q;
  q.kind = CollectiveKind::kCollectivePermute;
  q.bytes_per_device = kV;
  q.permute_pairs = {{0, 1}, {0, 2}, {1, 2}};
  const CollectivePlan p = plan_collective(t, q);
  EXPECT_NEAR(p.analytic_time_s, 2 * kV / kW + 2 * kHop, 1e-12);
  EXPECT_NEAR(time_plan_fair_share(t, p), p.analytic_time_s, 1e-12);
}

TEST(Collectives, FairShareExceedsBoundWhenFlowsAreHeldElsewhere) {
  // 4 chips in a line. P1 = 0->2 and P2 = 1->3 carry 4V each and share link
  // 1->2 (load 8V: bound 8V/W). Three flows of V on 0->1 and three on 2->3
  // hold P1 and P2 to W/4 each at first, so 1->2 runs half empty:
  //   until 4V/W: every flow at W/4; the short flows finish, P1 and P2 have 3V left;
  //   then P1 and P2 share 1->2 at W/2: 6V/W more. Total 10V/W > 8V/W.
  const Topology t(Slice{{4}, {false}, 1}, kParams);
  CollectivePlan plan;
  Phase phase;
  phase.flows = {Flow{0, 2, 4 * kV, 1}, Flow{1, 3, 4 * kV, 1}, Flow{0, 1, kV, 3},
                 Flow{2, 3, kV, 3}};
  plan.phases.push_back(phase);
  EXPECT_NEAR(time_plan_fair_share(t, plan), 10 * kV / kW, 1e-9 * 10 * kV / kW);
}

TEST(Collectives, EmptyOrForeignGroupsAreUserErrors) {
  const Topology t(Slice{{4}, {true}, 1}, kParams);
  CollectiveQuery q;
  q.kind = CollectiveKind::kAllReduce;
  q.bytes_per_device = kV;
  EXPECT_THROW(plan_collective(t, q), UserError);
  q.group = {0, 1, 9};
  EXPECT_THROW(plan_collective(t, q), UserError);
  q.group = {0, 1, 2, 3};
  q.group_shape = {3};
  EXPECT_THROW(plan_collective(t, q), UserError);
  EXPECT_THROW(collective_algorithm_from_name("tree"), UserError);
  EXPECT_EQ(collective_algorithm_from_name("torus"), CollectiveAlgorithm::kTorus);
  EXPECT_EQ(collective_algorithm_from_name("ring_per_dim"), CollectiveAlgorithm::kRingPerDim);
  EXPECT_EQ(collective_algorithm_from_name("torus_pipelined"),
            CollectiveAlgorithm::kTorusPipelined);
}

TEST(Collectives, FullPodPlansStayCheap) {
  // 2048 TPUv3 devices: the torus all-reduce over the [32, 64] mesh in
  // ring-preserving order, and a direct all-to-all over all devices. Only
  // structure is checked (no wall-clock asserts); the test's own runtime
  // shows the cost.
  const HardwareConfig v3 = load_hardware("tpuv3");
  const Slice pod = full_pod(v3);
  const Topology t(pod, link_params(v3));
  const Placement placement =
      place_mesh(pod, PlacementQuery{{32, 64}, PlacementOrder::kRingPreserving, {}});
  CollectiveQuery q;
  q.kind = CollectiveKind::kAllReduce;
  q.bytes_per_device = kV;
  q.group = placement.core_of_device;
  q.group_shape = {32, 64};
  const CollectivePlan ar = plan_collective(t, q);
  EXPECT_EQ(ar.algorithm, CollectiveAlgorithm::kTorus);
  // Lower bound: the inner 64-ring passes alone need 2 * 63/64 * V/(2W).
  EXPECT_GT(ar.analytic_time_s, 63.0 / 64.0 * kV / v3.ici.link_bandwidth);
  q.kind = CollectiveKind::kAllToAll;
  q.group_shape = {};
  const CollectivePlan a2a = plan_collective(t, q);
  ASSERT_EQ(a2a.phases.size(), 1u);
  EXPECT_EQ(a2a.phases[0].link_loads.size(), static_cast<size_t>(t.num_links()));
}

// Multi-slice plans (docs/collectives.md#multi-slice-collectives). S slices of a 4-chip ring
// (pod [4], wraparound, one device per chip); DCN at kDcnW bytes/s per chip per direction and
// kDcnL per transfer.
constexpr double kDcnW = 5e9;
constexpr double kDcnL = 1e-5;

Topology sliced_ring(int64_t slices, int64_t per_chip = 1) {
  LinkParams params = kParams;
  params.dcn_bandwidth = kDcnW;
  params.dcn_latency_s = kDcnL;
  return Topology(Slice{{4}, {true}, per_chip}, params, slices);
}

// One column per chip position: member j of every slice.
std::vector<std::vector<CoreId>> columns(const Topology& t, int64_t per_slice_members) {
  std::vector<std::vector<CoreId>> out(static_cast<size_t>(per_slice_members));
  for (int64_t j = 0; j < per_slice_members; ++j)
    for (int64_t s = 0; s < t.num_slices(); ++s)
      out[static_cast<size_t>(j)].push_back(s * t.num_devices() + j);
  return out;
}

// A ring over n slices moves V/n per step on every chip's DCN link: all-reduce 2(n-1) steps,
// all-gather and reduce-scatter n-1, each V/(nB) + L; all-to-all sends V/n to each of the n-1
// others at once, (n-1)V/(nB) + L. Four columns run at once on their own chips' links, so the
// time is one column's.
TEST(MultiSlice, ColumnsAcrossSlicesTakeTheRingClosedForms) {
  const Topology t = sliced_ring(4);
  const double n = 4;
  const double step = kV / n / kDcnW + kDcnL;
  const auto cols = columns(t, 4);
  const struct {
    CollectiveKind kind;
    double want;
  } cases[] = {
      {CollectiveKind::kAllReduce, 2 * (n - 1) * step},
      {CollectiveKind::kAllGather, (n - 1) * step},
      {CollectiveKind::kReduceScatter, (n - 1) * step},
      {CollectiveKind::kAllToAll, (n - 1) * kV / n / kDcnW + kDcnL},
  };
  for (const auto& c : cases) {
    const CollectivePlan p = plan_over_columns(t, c.kind, cols, kV);
    EXPECT_LT(relative_error(p.analytic_time_s, c.want), 1e-12) << collective_kind_name(c.kind);
    EXPECT_LT(relative_error(dcn_time_s(p), c.want), 1e-12);
    EXPECT_LT(relative_error(time_plan_fair_share(t, p), c.want), 1e-12);
    for (const Phase& phase : p.phases) {
      EXPECT_TRUE(phase.dcn);
      for (const LinkTransfer& l : phase.link_loads) EXPECT_EQ(t.link(l.link).kind, LinkKind::kDcn);
    }
  }
}

// Two devices of one chip share its DCN link: two columns from one chip's two devices carry
// twice the bytes on it, so a step takes 2V/(nB) + L.
TEST(MultiSlice, DevicesOfAChipShareItsDcnLink) {
  const Topology t = sliced_ring(2, 2);
  const std::vector<std::vector<CoreId>> cols = {{0, 8}, {1, 9}};  // chip 0's devices, 2 slices
  const CollectivePlan p = plan_over_columns(t, CollectiveKind::kAllGather, cols, kV);
  EXPECT_LT(relative_error(p.analytic_time_s, 2 * kV / 2 / kDcnW + kDcnL), 1e-12);
}

// A group of k = 4 members in each of 2 slices runs hierarchically; with R(V) the in-slice
// reduce-scatter and G(V) the in-slice all-gather of the ring of 4 (bidirectional ring:
// (k-1)/k V/(2W) + k/2 hops each, as ring_all_reduce's halves) and D(kind, V) the column ring
// above over n = 2 slices:
//   all-reduce V     = R(V) + D(all-reduce, V/k) + G(V)
//   all-gather V     = D(all-gather, V/k) + G(V)
//   reduce-scatter V = R(V) + D(reduce-scatter, V/k)
//   all-to-all V     = in-slice all-to-all(V) + D(all-to-all, V)
TEST(MultiSlice, GroupsAcrossSlicesSplitIntoSliceAndDcnParts) {
  const Topology t = sliced_ring(2);
  const double k = 4, n = 2;
  const double half = (k - 1) / k * kV / (2 * kW) + k / 2 * kHop;  // R(V) = G(V)
  const double dcn_step = kV / k / n / kDcnW + kDcnL;              // a ring step of V/k
  CollectiveQuery in_slice_a2a;
  in_slice_a2a.kind = CollectiveKind::kAllToAll;
  in_slice_a2a.bytes_per_device = kV;
  in_slice_a2a.group = iota_group(4);
  const double a2a_in_slice = plan_collective(sliced_ring(1), in_slice_a2a).analytic_time_s;
  const struct {
    CollectiveKind kind;
    double want, want_dcn;
  } cases[] = {
      {CollectiveKind::kAllReduce, 2 * half + 2 * (n - 1) * dcn_step, 2 * (n - 1) * dcn_step},
      {CollectiveKind::kAllGather, half + (n - 1) * dcn_step, (n - 1) * dcn_step},
      {CollectiveKind::kReduceScatter, half + (n - 1) * dcn_step, (n - 1) * dcn_step},
      {CollectiveKind::kAllToAll, a2a_in_slice + (n - 1) * kV / n / kDcnW + kDcnL,
       (n - 1) * kV / n / kDcnW + kDcnL},
  };
  SlicePlanner in_slice = [&](CollectiveKind kind, double bytes, const std::vector<CoreId>& g) {
    for (CoreId c : g) EXPECT_LT(c, 4);  // planned on slice 0
    CollectiveQuery q;
    q.kind = kind;
    q.bytes_per_device = bytes;
    q.group = g;
    return plan_collective(t, q);
  };
  for (const auto& c : cases) {
    CollectiveQuery q;
    q.kind = c.kind;
    q.bytes_per_device = kV;
    q.group = iota_group(8);
    const CollectivePlan p = plan_across_slices(t, q, in_slice);
    EXPECT_LT(relative_error(p.analytic_time_s, c.want), 1e-12) << collective_kind_name(c.kind);
    EXPECT_LT(relative_error(dcn_time_s(p), c.want_dcn), 1e-12) << collective_kind_name(c.kind);
    // Both slices' in-slice parts run at once on their own links: fair sharing agrees (the
    // direct all-to-all's flows see different bottlenecks inside a slice: no closed form).
    if (c.kind != CollectiveKind::kAllToAll) {
      EXPECT_LT(relative_error(time_plan_fair_share(t, p), c.want), 1e-12);
    }
  }
}

// One member per slice: the DCN ring alone; members spread unevenly: one routed ring over the
// whole group (each DCN hop V/n per step on the sender's link).
TEST(MultiSlice, OneMemberPerSliceIsTheDcnRingAlone) {
  const Topology t = sliced_ring(4);
  CollectiveQuery q;
  q.kind = CollectiveKind::kAllReduce;
  q.bytes_per_device = kV;
  q.group = {1, 5, 9, 13};
  SlicePlanner unused = [](CollectiveKind, double, const std::vector<CoreId>&) -> CollectivePlan {
    ADD_FAILURE() << "no in-slice part";
    return {};
  };
  const CollectivePlan p = plan_across_slices(t, q, unused);
  EXPECT_LT(relative_error(p.analytic_time_s, 2 * 3 * (kV / 4 / kDcnW + kDcnL)), 1e-12);
  EXPECT_EQ(members_by_slice(t, {0, 1, 4}).size(), 2u);
}

}  // namespace
}  // namespace podsim::hw
