// Tuples, while loops and calls under SPMD partitioning
// (docs/reference/gspmd.md#partitioner-structure, #per-op-partitioning, #partitioner-checklist item
// 24). Loop state keeps shard shapes; the loop body is partitioned with the loop's sharding, so a
// reduction over a tiled dim inside the body becomes an all-reduce inside the body.
#include <gtest/gtest.h>

#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::expect_equivalent;
using spmd_test::partition_text;
using spmd_test::Partitioned;

// verify_partitioning compares array roots; for a tuple root each leaf is
// reassembled from the devices' shards with its leaf sharding.
void expect_tuple_equivalent(const Partitioned& p, uint64_t seed = 1) {
  const Computation& entry = p.annotated.entry();
  const int64_t devices = p.result.module.num_partitions();
  std::vector<Literal> args;
  std::vector<std::vector<Literal>> per_device(static_cast<size_t>(devices));
  for (InstrId param : entry.parameters()) {
    const Instruction& instr = entry.instr(param);
    args.push_back(random_literal(instr.shape, seed + static_cast<uint64_t>(args.size())));
    for (int64_t d = 0; d < devices; ++d)
      per_device[static_cast<size_t>(d)].push_back(shard_of(args.back(), value_sharding(instr), d));
  }
  const Literal expected = evaluate(p.annotated, args);
  const std::vector<Literal> shards = evaluate_spmd(p.result.module, per_device);
  const Instruction& root = entry.root_instr();
  ASSERT_TRUE(root.shape.is_tuple());
  const Sharding s = parse_sharding(*root.sharding);
  for (int i = 0; i < static_cast<int>(root.shape.tuple_shapes().size()); ++i) {
    const Sharding leaf = s.is_tuple() ? s.tuple_elements()[static_cast<size_t>(i)] : s;
    std::vector<Literal> leaf_shards;
    for (const Literal& shard : shards) leaf_shards.push_back(shard.element(i));
    const Literal actual = reassemble(
        leaf_shards, leaf.is_maximal() ? Sharding::replicated() : leaf, root.shape.tuple_shape(i));
    Comparison c = compare_literals(expected.element(i), actual, 1e-4);
    EXPECT_TRUE(c.ok) << "leaf " << i << ": " << c.first_mismatch << "\n"
                      << print_hlo(p.result.module);
  }
}

const Instruction* find_instr(const Computation& c, Opcode op) {
  for (const Instruction& instr : c.instructions())
    if (instr.opcode == op) return &instr;
  return nullptr;
}

constexpr const char* kLoop = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  p = (s32[], f32[8,6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[8,6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[8,6] get-tuple-element(p), index=1
  z = f32[] constant(0)
  colsum = f32[6] reduce(x, z), dimensions={0}, to_apply=add
  b = f32[8,6] broadcast(colsum), dimensions={1}
  quarter = f32[] constant(0.25)
  q = f32[8,6] broadcast(quarter), dimensions={}
  y = f32[8,6] multiply(b, q)
  x2 = f32[8,6] add(x, y)
  ROOT t = (s32[], f32[8,6]) tuple(next, x2)
}
ENTRY e {
  x = f32[8,6] parameter(0), sharding=SHARDING
  z = s32[] constant(0)
  t = (s32[], f32[8,6]) tuple(z, x)
  w = (s32[], f32[8,6]) while(t), condition=cond, body=body
  ROOT r = f32[8,6] get-tuple-element(w), index=1, sharding=SHARDING
}
)";

std::string loop_with(const std::string& sharding) {
  std::string text = kLoop;
  for (size_t at = text.find("SHARDING"); at != std::string::npos; at = text.find("SHARDING"))
    text.replace(at, 8, sharding);
  return text;
}

TEST(SpmdControlFlow, WhileLoopBodyPartitioned) {
  // x rows tiled n ways: the loop carries [8/n, 6] shards; the column sum in
  // the body is a local reduce + all-reduce (one, inside the body); the loop
  // runs 3 times on every device.
  for (int n : {2, 4, 8}) {
    auto p = partition_text(
        loop_with("{devices=[" + std::to_string(n) + ",1]<=[" + std::to_string(n) + "]}"), n);
    expect_equivalent(p);
    EXPECT_EQ(p.result.stats.all_reduces, 1) << n;
    EXPECT_EQ(p.result.stats.all_gathers + p.result.stats.full_replications, 0) << n;
    const Instruction* loop = find_instr(p.result.module.entry(), Opcode::kWhile);
    ASSERT_NE(loop, nullptr);
    EXPECT_EQ(loop->shape.tuple_shape(1).dims(), (std::vector<int64_t>{8 / n, 6}));
  }
}

TEST(SpmdControlFlow, WhileLoopOn2x2MeshUneven) {
  // 8 rows / 6 columns on [2,2] with a 3-way... columns 6 over 2 even, rows
  // 8 over 2: the reduce over rows all-reduces within column groups.
  auto p = partition_text(loop_with("{devices=[2,2]<=[4]}"), 4);
  expect_equivalent(p);
  EXPECT_EQ(p.result.stats.full_replications, 0);
}

TEST(SpmdControlFlow, WhileLoopInitResharded) {
  // The init tuple is replicated but the loop carries row tiles: the init is
  // resharded leaf by leaf (a local dynamic-slice of x, no collective) and
  // the loop state keeps [2,6] shards on 4 devices.
  std::string text = loop_with("{replicated}");
  const std::string init = "  t = (s32[], f32[8,6]) tuple(z, x)\n";
  text.replace(text.find(init), init.size(),
               "  t = (s32[], f32[8,6]) tuple(z, x), sharding={{replicated}, {replicated}}\n");
  const std::string loop = "  w = (s32[], f32[8,6]) while(t), condition=cond, body=body\n";
  text.replace(text.find(loop), loop.size(),
               "  w = (s32[], f32[8,6]) while(t), condition=cond, body=body, "
               "sharding={{replicated}, {devices=[4,1]<=[4]}}\n");
  auto p = partition_text(text, 4);
  expect_equivalent(p);
  const Instruction* w = find_instr(p.result.module.entry(), Opcode::kWhile);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape.tuple_shape(1).dims(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(p.result.stats.full_replications, 0);
}

TEST(SpmdControlFlow, CallInsideWhileBody) {
  // The body calls g on the tiled state: the callee is partitioned inside
  // the body's partitioning (nested contexts), no communication at all.
  auto p = partition_text(R"(HloModule m
g {
  a = f32[8,4] parameter(0)
  h = f32[] constant(0.5)
  hb = f32[8,4] broadcast(h), dimensions={}
  ROOT m = f32[8,4] multiply(a, hb)
}
cond {
  p = (s32[], f32[8,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(2)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[8,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[8,4] get-tuple-element(p), index=1
  y = f32[8,4] call(x), to_apply=g
  ROOT t = (s32[], f32[8,4]) tuple(next, y)
}
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,2,2]<=[8] last_tile_dim_replicate}
  z = s32[] constant(0)
  t = (s32[], f32[8,4]) tuple(z, x)
  w = (s32[], f32[8,4]) while(t), condition=cond, body=body
  ROOT r = f32[8,4] get-tuple-element(w), index=1, sharding={devices=[2,2,2]<=[8] last_tile_dim_replicate}
}
)",
                          8);
  expect_equivalent(p);
  EXPECT_EQ(
      p.result.stats.all_gathers + p.result.stats.all_reduces + p.result.stats.collective_permutes,
      0);
}

TEST(SpmdControlFlow, TupleRoot) {
  // The entry returns (x + y, column sums of x): leaf 0 stays tiled, leaf 1
  // is replicated after one all-reduce.
  auto p = partition_text(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[7,4] parameter(0), sharding={devices=[4,1]<=[4]}
  y = f32[7,4] parameter(1), sharding={devices=[4,1]<=[4]}
  s = f32[7,4] add(x, y)
  z = f32[] constant(0)
  r = f32[4] reduce(x, z), dimensions={0}, to_apply=add
  ROOT t = (f32[7,4], f32[4]) tuple(s, r), sharding={{devices=[4,1]<=[4]}, {replicated}}
}
)",
                          4);
  expect_tuple_equivalent(p);
  EXPECT_EQ(p.result.stats.all_reduces, 1);
  EXPECT_EQ(p.result.module.entry().root_instr().shape.tuple_shape(0).dims(),
            (std::vector<int64_t>{2, 4}));
}

TEST(SpmdControlFlow, TupleRootReshardsLeaves) {
  // A tuple built from tiled values whose root asks for other tilings: each
  // leaf is resharded on its own (all-to-all for the moved tiling).
  auto p = partition_text(R"(HloModule m
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  y = f32[6] parameter(1), sharding={devices=[2]<=[2]}
  t = (f32[8,4], f32[6]) tuple(x, y), sharding={{devices=[2,1]<=[2]}, {devices=[2]<=[2]}}
  g0 = f32[8,4] get-tuple-element(t), index=0
  g1 = f32[6] get-tuple-element(t), index=1
  ROOT c = (f32[8,4], f32[6]) tuple(g0, g1), sharding={{devices=[1,2]<=[2]}, {replicated}}
}
)",
                          2);
  expect_tuple_equivalent(p);
}

TEST(SpmdControlFlow, CallPartitioned) {
  // The callee is partitioned with the call's operand shardings: it computes
  // on [4,2] shards, no communication.
  auto p = partition_text(R"(HloModule m
f {
  a = f32[8,4] parameter(0)
  b = f32[8,4] parameter(1)
  ROOT m = f32[8,4] multiply(a, b)
}
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,2]<=[4]}
  y = f32[8,4] parameter(1), sharding={devices=[2,2]<=[4]}
  ROOT c = f32[8,4] call(x, y), to_apply=f, sharding={devices=[2,2]<=[4]}
}
)",
                          4);
  expect_equivalent(p);
  EXPECT_EQ(
      p.result.stats.all_gathers + p.result.stats.all_reduces + p.result.stats.collective_permutes,
      0);
  const Instruction* call = find_instr(p.result.module.entry(), Opcode::kCall);
  ASSERT_NE(call, nullptr);
  const Computation& callee = p.result.module.computation(call->to_apply());
  EXPECT_EQ(callee.instr(callee.parameters()[0]).shape.dims(), (std::vector<int64_t>{4, 2}));
}

TEST(SpmdControlFlow, CallSitesWithDifferentShardingsGetClones) {
  // f is called on a row-tiled and on a column-tiled value: two partitioned
  // versions of f, both correct.
  auto p = partition_text(R"(HloModule m
f {
  a = f32[8,4] parameter(0)
  ROOT n = f32[8,4] negate(a)
}
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  y = f32[8,4] parameter(1), sharding={devices=[1,2]<=[2]}
  c1 = f32[8,4] call(x), to_apply=f, sharding={devices=[2,1]<=[2]}
  c2 = f32[8,4] call(y), to_apply=f, sharding={devices=[1,2]<=[2]}
  ROOT s = f32[8,4] add(c1, c2), sharding={devices=[2,1]<=[2]}
}
)",
                          2);
  expect_equivalent(p);
  std::vector<CompId> callees;
  for (const Instruction& instr : p.result.module.entry().instructions())
    if (instr.opcode == Opcode::kCall) callees.push_back(instr.to_apply());
  ASSERT_EQ(callees.size(), 2u);
  EXPECT_NE(callees[0], callees[1]);
}

TEST(SpmdControlFlow, ConditionalBranchesArePartitionedLikeCalls) {
  // Built as a call and turned into conditional(c, x, y) with branches
  // {negate, exponential}: the reader may not infer a conditional's shape
  // yet. Branch 0 takes x's [4,1] tiling; the roots and the result agree, so
  // branch 1's parameter and y take it too; the predicate is replicated.
  // Every device runs the branches on [2,4] shards: no collective at all.
  Module m = parse_hlo(R"(HloModule m
b0 {
  p = f32[8,4] parameter(0)
  ROOT n = f32[8,4] negate(p)
}
b1 {
  p = f32[8,4] parameter(0)
  ROOT e = f32[8,4] exponential(p)
}
ENTRY e {
  c = pred[] parameter(0)
  x = f32[8,4] parameter(1), sharding={devices=[4,1]<=[4]}
  y = f32[8,4] parameter(2)
  ROOT r = f32[8,4] call(x), to_apply=b0
}
)");
  m.set_num_partitions(4);
  Computation& entry = m.mutable_computation(m.entry_id());
  Instruction& r = entry.mutable_instr(entry.root());
  r.opcode = Opcode::kConditional;
  r.operands = {entry.find("c"), entry.find("x"), entry.find("y")};
  r.called = {m.find_computation("b0"), m.find_computation("b1")};
  propagate_shardings(m);
  EXPECT_EQ(*entry.instr(entry.find("y")).sharding, "{devices=[4,1]<=[4]}");
  EXPECT_EQ(*entry.instr(entry.root()).sharding, "{devices=[4,1]<=[4]}");
  SpmdResult result = partition_spmd_with_stats(m, SpmdOptions{4});
  EXPECT_EQ(spmd_test::total_collectives(result.stats), 0);
  const Computation& out = result.module.entry();
  const Instruction& cond = out.instr(out.root());
  ASSERT_EQ(cond.opcode, Opcode::kConditional);
  EXPECT_EQ(cond.shape.dims(), (std::vector<int64_t>{2, 4}));
  ASSERT_EQ(cond.called.size(), 2u);
  for (CompId branch : cond.called) {
    const Computation& b = result.module.computation(branch);
    EXPECT_EQ(b.instr(b.parameters().at(0)).shape.dims(), (std::vector<int64_t>{2, 4}));
    EXPECT_EQ(b.instr(b.root()).shape.dims(), (std::vector<int64_t>{2, 4}));
  }
}

}  // namespace
}  // namespace podsim::compiler
