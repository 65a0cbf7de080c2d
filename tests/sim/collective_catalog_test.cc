// CollectiveCatalog specs (sim/collective_catalog.h): the HBM bytes a
// collective's DMAs move on a member device (dma_hbm_bytes).
#include "sim/collective_catalog.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <string>

#include "tests/sim/sim_test_util.h"

namespace podsim::sim {
namespace {

using testing::program_from_hlo;
using testing::ring_system;

constexpr const char* kThreeCollectives = R"(HloModule three, num_partitions=4
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %add = f32[] add(%x, %y)
}
ENTRY %main (p: f32[1024,256]) -> (f32[4096,256], f32[256,256], f32[1024,256]) {
  %p = f32[1024,256]{1,0} parameter(0)
  %ag = f32[4096,256]{1,0} all-gather(%p), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}
  %rs = f32[256,256]{1,0} reduce-scatter(%p), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%sum
  %ar = f32[1024,256]{1,0} all-reduce(%p), channel_id=3, replica_groups={{0,1,2,3}}, to_apply=%sum
  ROOT %t = (f32[4096,256]{1,0}, f32[256,256]{1,0}, f32[1024,256]{1,0}) tuple(%ag, %rs, %ar)
})";

// On a closed ring of 4 (bidirectional ring algorithm), a member sends
// (n-1)/n = 3/4 of V for an all-gather of result V or a reduce-scatter of
// operand V, and twice that for an all-reduce of V (reduce-scatter then
// all-gather). DMA HBM bytes: 2 x sent (read to send, write on receipt),
// plus 2 per byte received into a reduction (read back with the local
// partial): all of a reduce-scatter's, half of an all-reduce's.
// V = 1 MiB (the f32[1024,256] operand) for the reduce-scatter and the
// all-reduce, 4 MiB (its f32[4096,256] result) for the all-gather.
TEST(CollectiveCatalog, DmaHbmBytesPerKind) {
  const compiler::SpmdProgram program = program_from_hlo(kThreeCollectives);
  const hw::System system = ring_system(4);
  CollectiveCatalog catalog(system, 4);
  const compiler::Computation& entry = program.module.entry();
  std::map<std::string, double> dma;
  for (const auto& instr : entry.instructions())
    if (instr.name == "ag" || instr.name == "rs" || instr.name == "ar")
      dma[instr.name] = catalog.spec(catalog.spec_of(entry, instr)).dma_hbm_bytes;
  const double mib = 1048576.0;
  EXPECT_DOUBLE_EQ(dma.at("ag"), 2 * 0.75 * 4 * mib);         // 6 MiB
  EXPECT_DOUBLE_EQ(dma.at("rs"), (2 + 2) * 0.75 * mib);       // 3 MiB
  EXPECT_DOUBLE_EQ(dma.at("ar"), (2 + 2 * 0.5) * 1.5 * mib);  // 4.5 MiB
}

}  // namespace
}  // namespace podsim::sim

namespace podsim::sim {
namespace {

// An asynchronous all-gather-start ((operand), result) is the all-gather of
// its result element: the same spec, the same bytes, as the synchronous one.
// (Built from the synchronous module with the opcode and shape changed, so
// the test does not depend on the reader's async syntax.)
TEST(CollectiveCatalog, AsyncStartIsTheCollectiveItWraps) {
  compiler::SpmdProgram program = program_from_hlo(kThreeCollectives);
  const hw::System system = ring_system(4);
  CollectiveCatalog catalog(system, 4);
  compiler::Computation& entry = program.module.mutable_entry();
  const compiler::Instruction sync = entry.instr(entry.find("ag"));
  compiler::Instruction start = sync;
  start.opcode = compiler::Opcode::kAllGatherStart;
  start.shape = compiler::Shape::tuple(
      {compiler::Shape::tuple({entry.instr(sync.operand(0)).shape}), sync.shape});
  EXPECT_EQ(collective_opcode(start), compiler::Opcode::kAllGather);
  const int32_t sync_spec = catalog.spec_of(entry, sync);
  EXPECT_EQ(catalog.spec_of(entry, start), sync_spec);  // same kind, bytes and groups: one spec
  EXPECT_DOUBLE_EQ(catalog.spec(sync_spec).bytes_per_device,
                   4096.0 * 256 * 4);  // the gathered result
  // The short async form of an all-to-all wraps it the same way.
  compiler::Instruction a2a = sync;
  a2a.opcode = compiler::Opcode::kAsyncStart;
  a2a.attrs.async_wrapped = compiler::Opcode::kAllToAll;
  EXPECT_EQ(collective_opcode(a2a), compiler::Opcode::kAllToAll);
  EXPECT_EQ(catalog.spec(catalog.spec_of(entry, a2a)).kind, hw::CollectiveKind::kAllToAll);
}

// XLA's group modes: the all-reduce without a channel id or global ids,
// replica_groups={}, is cross-replica; with one replica each of the 4
// partitions is its own group and nothing moves (0 s). The same text with a
// channel id is one group of all 4 partitions: a positive ring time.
TEST(CollectiveCatalog, NoChannelIdAllReduceIsCrossReplica) {
  const std::string text = R"(HloModule m, num_partitions=4
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %add = f32[] add(%x, %y)
}
ENTRY %main (p: f32[1024,256]) -> f32[1024,256] {
  %p = f32[1024,256]{1,0} parameter(0)
  ROOT %ar = f32[1024,256]{1,0} all-reduce(%p), CHANNELreplica_groups={}, to_apply=%sum
})";
  const hw::System system = ring_system(4);
  auto spec_for = [&](const std::string& channel) {
    std::string t = text;
    t.replace(t.find("CHANNEL"), 7, channel);
    compiler::SpmdProgram program = program_from_hlo(t);
    CollectiveCatalog catalog(system, 4);
    const compiler::Computation& entry = program.module.entry();
    return catalog.spec(catalog.spec_of(entry, entry.instr(entry.find("ar"))));
  };
  const CollectiveSpec alone = spec_for("");
  EXPECT_EQ(alone.groups.size(), 4u);
  for (const hw::CollectivePlan& plan : alone.plans) EXPECT_EQ(plan.analytic_time_s, 0.0);
  const CollectiveSpec across = spec_for("channel_id=1, ");
  ASSERT_EQ(across.groups.size(), 1u);
  EXPECT_EQ(across.groups[0].size(), 4u);
  EXPECT_GT(across.plans.at(0).analytic_time_s, 0.0);
}

}  // namespace
}  // namespace podsim::sim

namespace podsim::sim {
namespace {

// Groups over chips and the two cores of each chip (plan_group;
// docs/collectives.md "Groups over both cores of a chip"). tpuv3 links: W
// per ICI link direction, h per hop, B and l for the on-chip link between a
// chip's two cores. The pods below are whole (wraparound), so a ring of d
// chips on a dim is closed: a bidirectional ring pass of data D over d
// members moves (d-1)/d D/2 over each link direction in floor(d/2) steps.
// An all-reduce is two passes (reduce-scatter, all-gather), so every closed
// form below is 2 x a pass. The step of a program holding only the
// all-reduce is the all-reduce's time, in both fidelities (to 10 ps: the
// simulator's clock counts whole picoseconds, rounded at each phase).
constexpr double kW = testing::kLinkBandwidth;
constexpr double kH = testing::kHopLatency;
constexpr double kB = 450e9;   // tpuv3 chip.on_chip_bandwidth
constexpr double kL = 0.5e-6;  // tpuv3 chip.on_chip_latency_s

std::string all_reduce_module(int64_t devices, const std::string& groups, int64_t elements) {
  return fmt::format(R"(HloModule ar, num_partitions={0}
%sum (x: f32[], y: f32[]) -> f32[] {{
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %add = f32[] add(%x, %y)
}}
ENTRY %main (p: f32[{2}]) -> f32[{2}] {{
  %p = f32[{2}]{{0}} parameter(0)
  ROOT %ar = f32[{2}]{{0}} all-reduce(%p), channel_id=1, replica_groups={1}, use_global_device_ids=true, to_apply=%sum
}})",
                     devices, groups, elements);
}

hw::System cores_system(const std::string& pod_dims, const std::string& wraparound,
                        int64_t devices) {
  return testing::make_system({devices},
                              {{"ici.pod_dims", pod_dims}, {"ici.pod_wraparound", wraparound}});
}

struct Planned {
  std::string label;
  double fast_s, full_s;
};

Planned plan_and_run(const hw::System& system, int64_t devices, const std::string& groups,
                     int64_t elements) {
  const compiler::SpmdProgram program =
      program_from_hlo(all_reduce_module(devices, groups, elements));
  CollectiveCatalog catalog(system, devices);
  const compiler::Computation& entry = program.module.entry();
  const int32_t spec = catalog.spec_of(entry, entry.instr(entry.find("ar")));
  return {catalog.spec(spec).plan_labels.front(),
          testing::run(program, system, Fidelity::kFast).step_time_s,
          testing::run(program, system, Fidelity::kFull).step_time_s};
}

// One core per chip: mesh [8, 2] row-major on 8 chips x 2 cores (a closed
// ring of 8), groups along the 8-axis: {0, 2, ..., 14} on core 0 of every
// chip and its sibling {1, 3, ..., 15} on core 1, over the same links. A
// group alone is a bidirectional ring, 7/8 V/(2W) + 4h a pass; the two at
// once double every link's load: T = 2 (7/8 V/W + 4h).
TEST(CollectiveCatalog, SiblingGroupsOnOneCorePerChipShareTheLinks) {
  const hw::System system = cores_system("[8]", "[true]", 16);
  const int64_t elements = 4194304;
  const double v = 4.0 * elements;
  const Planned p = plan_and_run(system, 16, "[2,8]<=[8,2]T(1,0)", elements);
  EXPECT_EQ(p.label, "bidirectional_ring [8], mesh order");
  const double want = 2 * (7.0 / 8 * v / kW + 4 * kH);
  EXPECT_NEAR(p.fast_s, want, 1e-11);
  EXPECT_NEAR(p.full_s, want, 1e-11);
}

// Both cores of each chip: one group of all 16 devices on 8 chips x 2 cores
// (a closed ring of 8 chips). A pass of each candidate:
//   per-core rings, then on-chip [8, 2]: 7/8 V/W + 4h + V/(16B) + l
//   on-chip first [2, 8]:                V/(2B) + l + 7/8 V/(2W) + 4h
//   one ring through both cores [16]:    15/16 V/(2W) + 8h
// (the one ring: each ICI link direction carries one ring edge each way;
// its on-chip edges run alongside the ICI edges in the same steps). A large
// all-reduce takes the one ring, a small (latency-bound) one on-chip first.
TEST(CollectiveCatalog, GroupOverBothCoresIsTheFastestOfItsPlans) {
  const hw::System system = cores_system("[8]", "[true]", 16);
  for (const int64_t elements : {int64_t{4194304}, int64_t{64}}) {
    const double v = 4.0 * elements;
    const double per_core = 2 * (7.0 / 8 * v / kW + 4 * kH + v / (16 * kB) + kL);
    const double on_chip_first = 2 * (v / (2 * kB) + kL + 7.0 / 8 * v / (2 * kW) + 4 * kH);
    const double one_ring = 2 * (15.0 / 16 * v / (2 * kW) + 8 * kH);
    const Planned p = plan_and_run(system, 16, "[1,16]<=[16]", elements);
    const double want = std::min({per_core, on_chip_first, one_ring});
    if (elements > 64) {
      EXPECT_EQ(p.label, "bidirectional_ring [16], one ring through the cores of each chip");
      EXPECT_EQ(want, one_ring);
    } else {
      EXPECT_EQ(p.label, "torus [2, 8], on-chip first, then per-core rings");
      EXPECT_EQ(want, on_chip_first);
    }
    EXPECT_NEAR(p.fast_s, want, 1e-11) << elements;
    EXPECT_NEAR(p.full_s, want, 1e-11) << elements;
  }
}

// The same group on a line of 8 chips (no wraparound links): rings are
// folded (docs/collectives.md), so each link direction carries one edge of
// each ring direction, twice a closed ring's load; a per-core ring's step
// crosses 2 hops, the one ring's 1 (c0 out, c1 back). A pass:
//   per-core rings [8, 2]:  2 (7/8) V/W + 4 (2h) + V/(16B) + l
//   on-chip first [2, 8]:   V/(2B) + l + 7/8 V/W + 4 (2h)
//   one ring [16]:          15/16 V/W + 8h
TEST(CollectiveCatalog, GroupOverBothCoresOnALine) {
  const hw::System system = cores_system("[8]", "[false]", 16);
  const int64_t elements = 4194304;
  const double v = 4.0 * elements;
  const double per_core = 2 * (2 * 7.0 / 8 * v / kW + 8 * kH + v / (16 * kB) + kL);
  const double on_chip_first = 2 * (v / (2 * kB) + kL + 7.0 / 8 * v / kW + 8 * kH);
  const double one_ring = 2 * (15.0 / 16 * v / kW + 8 * kH);
  const Planned p = plan_and_run(system, 16, "[1,16]<=[16]", elements);
  EXPECT_EQ(p.label, "bidirectional_ring [16], one ring through the cores of each chip");
  EXPECT_EQ(std::min({per_core, on_chip_first, one_ring}), one_ring);
  EXPECT_NEAR(p.fast_s, one_ring, 1e-11);
  EXPECT_NEAR(p.full_s, one_ring, 1e-11);
}

// Each plan of the tables above, planned alone (the losers too), against
// its closed form: 8 chips x 2 cores, on a closed ring and on a line.
TEST(CollectiveCatalog, EveryPlanOverBothCoresMatchesItsClosedForm) {
  const double v = 16.0 * 1048576;
  std::vector<hw::CoreId> sorted(16), cores_first;
  std::iota(sorted.begin(), sorted.end(), 0);
  for (hw::CoreId c : {0, 1})
    for (hw::CoreId chip = 0; chip < 8; ++chip) cores_first.push_back(chip * 2 + c);
  struct Case {
    std::vector<hw::CoreId> group;
    std::vector<int64_t> shape;
    double closed, line;  // a pass
  };
  const Case cases[] = {
      {sorted,
       {8, 2},
       7.0 / 8 * v / kW + 4 * kH + v / (16 * kB) + kL,
       2 * 7.0 / 8 * v / kW + 8 * kH + v / (16 * kB) + kL},
      {cores_first,
       {2, 8},
       v / (2 * kB) + kL + 7.0 / 8 * v / (2 * kW) + 4 * kH,
       v / (2 * kB) + kL + 7.0 / 8 * v / kW + 8 * kH},
      {sorted, {16}, 15.0 / 16 * v / (2 * kW) + 8 * kH, 15.0 / 16 * v / kW + 8 * kH},
  };
  for (const bool wraps : {true, false}) {
    const hw::System system = cores_system("[8]", wraps ? "[true]" : "[false]", 16);
    for (const Case& c : cases) {
      hw::CollectiveQuery q;
      q.kind = hw::CollectiveKind::kAllReduce;
      q.bytes_per_device = v;
      q.group = c.group;
      q.group_shape = c.shape;
      const double want = 2 * (wraps ? c.closed : c.line);
      EXPECT_NEAR(system.plan(q).analytic_time_s, want, 1e-12 * want)
          << c.shape.size() << " wraps=" << wraps;
    }
  }
}

// A 2-D group: all 32 devices of a 4x4 torus x 2 cores. Torus passes over
// the grid's dims in order, the data on dim j being V / (sizes before it);
// rings of one core per chip on a dim share its links with the other core's.
// A pass of each candidate:
//   per-core rings [4, 4, 2]:   3/4 V/W + 2h + 3/16 V/W + 2h + V/(32B) + l
//   on-chip first [2, 4, 4]:    V/(2B) + l + 3/8 V/W + 2h + 3/32 V/W + 2h
//   one ring inside [4, 8]:     3/4 V/W + 2h + 7/64 V/W + 4h
//   one ring first [8, 4]:      7/16 V/W + 4h + 3/32 V/W + 2h
// ([8, 4]: the 8-member ring through both cores of the 4 chips of a y line,
// data V, one edge per link direction each way; then x rings of data V/8,
// two per x line.) Large: [8, 4]; small: [2, 4, 4].
TEST(CollectiveCatalog, TwoDimensionalGroupOverBothCores) {
  const hw::System system = cores_system("[4, 4]", "[true, true]", 32);
  for (const int64_t elements : {int64_t{4194304}, int64_t{64}}) {
    const double v = 4.0 * elements;
    const double per_core = 2 * (15.0 / 16 * v / kW + 4 * kH + v / (32 * kB) + kL);
    const double on_chip_first = 2 * (v / (2 * kB) + kL + 15.0 / 32 * v / kW + 4 * kH);
    const double ring_inside = 2 * (55.0 / 64 * v / kW + 6 * kH);
    const double ring_first = 2 * (17.0 / 32 * v / kW + 6 * kH);
    const Planned p = plan_and_run(system, 32, "[1,32]<=[32]", elements);
    const double want = std::min({per_core, on_chip_first, ring_inside, ring_first});
    if (elements > 64) {
      EXPECT_EQ(p.label, "torus [8, 4], one ring through the cores of each chip, first");
      EXPECT_EQ(want, ring_first);
    } else {
      EXPECT_EQ(p.label, "torus [2, 4, 4], on-chip first, then per-core rings");
      EXPECT_EQ(want, on_chip_first);
    }
    EXPECT_NEAR(p.fast_s, want, 1e-11) << elements;
    EXPECT_NEAR(p.full_s, want, 1e-11) << elements;
  }
}

}  // namespace
}  // namespace podsim::sim
