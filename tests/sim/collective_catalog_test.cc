// CollectiveCatalog specs (sim/collective_catalog.h): the HBM bytes a
// collective's DMAs move on a member device (dma_hbm_bytes).
#include "sim/collective_catalog.h"

#include <gtest/gtest.h>

#include <map>
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
  EXPECT_DOUBLE_EQ(dma.at("ag"), 2 * 0.75 * 4 * mib);            // 6 MiB
  EXPECT_DOUBLE_EQ(dma.at("rs"), (2 + 2) * 0.75 * mib);          // 3 MiB
  EXPECT_DOUBLE_EQ(dma.at("ar"), (2 + 2 * 0.5) * 1.5 * mib);     // 4.5 MiB
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
  start.shape = compiler::Shape::tuple({compiler::Shape::tuple({entry.instr(sync.operand(0)).shape}), sync.shape});
  EXPECT_EQ(collective_opcode(start), compiler::Opcode::kAllGather);
  const int32_t sync_spec = catalog.spec_of(entry, sync);
  EXPECT_EQ(catalog.spec_of(entry, start), sync_spec);  // same kind, bytes and groups: one spec
  EXPECT_DOUBLE_EQ(catalog.spec(sync_spec).bytes_per_device, 4096.0 * 256 * 4);  // the gathered result
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
