// Properties of the partitioned program itself: collectives use compact iota
// replica groups, the entry signature has the padded shard shapes, the
// module prints and re-parses, and 2-D mesh cases of dot/reduce stay
// numerically equivalent.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::expect_equivalent;
using spmd_test::partition_text;

constexpr const char* kMlp = R"(HloModule mlp
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[16,10] parameter(0), sharding={devices=[2,2]<=[4]}
  w = f32[10,12] parameter(1), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  h = f32[16,12] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,2]<=[4]}
  t = f32[16,12] tanh(h)
  z = f32[] constant(0)
  ROOT r = f32[16] reduce(t, z), dimensions={1}, to_apply=add, sharding={devices=[2,2]<=[4] last_tile_dim_replicate}
}
)";

TEST(SpmdProgram, CollectivesUseIotaGroups) {
  auto p = partition_text(kMlp, 4);
  expect_equivalent(p);
  int collectives = 0;
  for (const Instruction& instr : p.result.module.entry().instructions()) {
    if (instr.opcode == Opcode::kAllReduce || instr.opcode == Opcode::kAllGather ||
        instr.opcode == Opcode::kAllToAll || instr.opcode == Opcode::kReduceScatter) {
      ++collectives;
      EXPECT_TRUE(instr.attrs.replica_groups.iota.has_value()) << instr.name;
      EXPECT_TRUE(instr.attrs.replica_groups.explicit_groups.empty()) << instr.name;
    }
  }
  // x is tiled on K (contracting): local dot, then its partial sums are
  // reduce-scattered onto the output's tiled dim (cheaper than all-reduce:
  // V(n-1)/n instead of 2V(n-1)/n); the reduce over the 2-way tiled dim 1 of
  // t: local reduce + all-reduce. So 2 collectives, both in iota form.
  EXPECT_GE(collectives, 2);
  EXPECT_EQ(p.result.stats.reduce_scatters, 1);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
}

TEST(SpmdProgram, CollectivesCarryUniqueChannelIdsAndGlobalDeviceIds) {
  // As XLA's partitioner emits them: every collective cross-partition with a
  // channel id of its own; all-reduce / all-gather / reduce-scatter name
  // global device ids. The module's cross-replica all-reduce (no channel
  // id) is left as it is.
  const std::string text =
      std::string(kMlp).replace(std::string(kMlp).find("  ROOT r"), 0,
                                "  c = f32[16,10] all-reduce(x), replica_groups={}, to_apply=add, "
                                "sharding={devices=[2,2]<=[4]}\n");
  auto p = partition_text(text, 4);
  std::set<int64_t> channels;
  int cross_replica = 0;
  for (const Instruction& instr : p.result.module.entry().instructions()) {
    if (!is_collective(instr.opcode)) continue;
    if (instr.name == "c" || !instr.attrs.channel_id) {
      ++cross_replica;
      EXPECT_FALSE(instr.attrs.use_global_device_ids) << instr.name;
      continue;
    }
    EXPECT_TRUE(channels.insert(*instr.attrs.channel_id).second)
        << "channel id reused by " << instr.name;
    if (instr.opcode != Opcode::kAllToAll && instr.opcode != Opcode::kCollectivePermute) {
      EXPECT_TRUE(instr.attrs.use_global_device_ids) << instr.name;
    }
  }
  EXPECT_EQ(cross_replica, 1);
  EXPECT_GE(channels.size(), 2u);
  expect_equivalent(p);
}

TEST(SpmdProgram, EntrySignatureHasPaddedShardShapes) {
  // f32[7,5] over [4,1]: ceil(7/4) = 2 rows per device.
  auto p = partition_text(
      "HloModule m\nENTRY e {\n  x = f32[7,5] parameter(0), sharding={devices=[4,1]<=[4]}\n"
      "  ROOT n = f32[7,5] negate(x), sharding={devices=[4,1]<=[4]}\n}\n",
      4);
  const Computation& entry = p.result.module.entry();
  EXPECT_EQ(entry.instr(entry.parameters()[0]).shape, Shape(DType::kF32, {2, 5}));
  EXPECT_EQ(entry.root_instr().shape, Shape(DType::kF32, {2, 5}));
  EXPECT_EQ(p.result.module.num_partitions(), 4);
  expect_equivalent(p);
}

TEST(SpmdProgram, PrintsAndReparses) {
  auto p = partition_text(kMlp, 4);
  const std::string text = print_hlo(p.result.module);
  Module reparsed = parse_hlo(text);
  EXPECT_EQ(print_hlo(reparsed), text);
}

TEST(SpmdProgram, SameInstructionCountOn2x2And2x4Meshes) {
  auto mesh = [](const std::string& tiles, const std::string& rep, int n) {
    return partition_text(
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] "
        "add(a, b)\n}\n"
        "ENTRY e {\n  x = f32[16,16] parameter(0), sharding={devices=" +
            tiles +
            "}\n"
            "  z = f32[] constant(0)\n"
            "  ROOT r = f32[16] reduce(x, z), dimensions={0}, to_apply=add, sharding={devices=" +
            rep + " last_tile_dim_replicate}\n}\n",
        n);
  };
  auto small = mesh("[2,2]<=[4]", "[2,2]<=[2,2]T(1,0)", 4);
  auto large = mesh("[2,4]<=[8]", "[4,2]<=[2,4]T(1,0)", 8);
  expect_equivalent(small);
  expect_equivalent(large);
  EXPECT_EQ(small.result.module.entry().size(), large.result.module.entry().size());
}

TEST(SpmdProgram, ReduceBothDimsOf2x2MeshUneven) {
  // 5x3 over [2,2]: both dims uneven, both reduced -> masks on both dims and
  // one all-reduce over all 4 devices.
  auto p = partition_text(
      "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] "
      "add(a, b)\n}\n"
      "ENTRY e {\n  x = f32[5,3] parameter(0), sharding={devices=[2,2]<=[4]}\n"
      "  one = f32[] constant(1)\n  o = f32[5,3] broadcast(one), dimensions={}\n"
      "  y = f32[5,3] add(x, o)\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[] reduce(y, z), dimensions={0,1}, to_apply=add\n}\n",
      4);
  // Shards are ceil(5/2) x ceil(3/2) = 3x2, so 4 devices hold 24 cells for
  // 15 elements. The harness pads x with the sentinel 37, so y's 9 padding
  // cells are 38 and an unmasked sum would be off by 9 * 38 = 342.
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
}

// A replicated value sliced to {devices=[k,2]<=[2,k]T(1,0)} (n = 2k): tile
// (i, j) is on device j*k + i, so the row offset is (pid % k) * rows and the
// column offset (pid / k) * cols: scalar arithmetic on partition-id, never a
// table with one entry per device. Same program for k = 4 and k = 256.
TEST(SpmdProgram, PartitionOffsetsAreArithmeticNotTables) {
  auto program = [](int64_t k) {
    const std::string tiles =
        "{devices=[" + std::to_string(k) + ",2]<=[2," + std::to_string(k) + "]T(1,0)}";
    return partition_text(
        "HloModule m\nENTRY e {\n  x = f32[1024,8] parameter(0), sharding={replicated}\n"
        "  ROOT c = f32[1024,8] copy(x), sharding=" +
            tiles + "\n}\n",
        2 * k);
  };
  auto small = program(4);
  auto large = program(256);
  expect_equivalent(small);
  for (const auto* p : {&small, &large}) {
    EXPECT_EQ(p->result.stats.all_gathers + p->result.stats.all_reduces +
                  p->result.stats.collective_permutes,
              0);
    for (const Instruction& instr : p->result.module.entry().instructions())
      if (instr.opcode == Opcode::kConstant) {
        EXPECT_LE(instr.shape.num_elements(), 1) << instr.name;
      }
  }
  EXPECT_EQ(small.result.module.entry().size(), large.result.module.entry().size());
  EXPECT_EQ(print_hlo(parse_hlo(print_hlo(large.result.module))), print_hlo(large.result.module));
}

}  // namespace
}  // namespace podsim::compiler
