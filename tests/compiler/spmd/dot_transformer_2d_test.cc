// The 2-D sharded Transformer layer (workloads/examples/transformer_layer_2d.hlo,
// mesh [x=2, y=4]) through propagation and the partitioner: the dot
// strategies must group devices on the matched mesh axes so that no value
// is ever fully replicated (docs/reference/gspmd.md#dot-strategies "grouping"; GSPMD's 2-D
// sharding moves activations and weights only within mesh rows/columns),
// and the program must compute the same layer.
#include <gtest/gtest.h>

#include "tests/compiler/spmd/dot_test_util.h"
#include "tests/test_files.h"

namespace podsim::compiler {
namespace {

TEST(SpmdDotTransformer, Layer2DHasNoFullReplicationAndIsEquivalent) {
  auto p = spmd_dot_test::partition(
      test_files::read_source_file("workloads/examples/transformer_layer_2d.hlo"), 8);
  spmd_dot_test::expect_equivalent(p, 11);
  const SpmdStats& s = p.result.stats;
  EXPECT_EQ(s.full_replications, 0);
  EXPECT_EQ(s.default_fallbacks, 0);
  // Every collective stays within a mesh row or column (group size 2 or 4,
  // never all 8 devices), which is what "no full replication" buys.
  for (const Instruction& instr : p.result.module.entry().instructions()) {
    if (instr.opcode == Opcode::kAllReduce || instr.opcode == Opcode::kAllGather ||
        instr.opcode == Opcode::kReduceScatter || instr.opcode == Opcode::kAllToAll) {
      const int64_t g = instr.attrs.replica_groups.group_size(8);
      EXPECT_TRUE(g == 2 || g == 4) << instr.name << " group size " << g;
    }
  }
  // Counts the 2-D sharding implies (activations [B/x, L, M/y], weights as in
  // the file header):
  //  * all-gathers 9: h over y for Q/K/V (one, shared by the three dots via
  //    the reshard cache), wq/wk/wv over x (3), wo_attn's M over x (1), h2
  //    over y (1), wi_0/wi_1 over x (2), wo_ffn's M over x (1);
  //  * reduce-scatters 2: the attention output and FFN output projections
  //    contract over heads / H tiled on y and land tiled on M by y;
  //  * all-reduces 4: the two sums of each layer norm over M (tiled on y);
  //  * scores and context are batch/head-parallel: nothing.
  EXPECT_EQ(s.all_gathers, 9);
  EXPECT_EQ(s.reduce_scatters, 2);
  EXPECT_EQ(s.all_reduces, 4);
  EXPECT_EQ(s.all_to_alls + s.collective_permutes, 0);
  for (const Instruction& instr : p.result.module.entry().instructions())
    if (instr.opcode == Opcode::kAllReduce || instr.opcode == Opcode::kAllGather ||
        instr.opcode == Opcode::kReduceScatter) {
      EXPECT_TRUE(instr.attrs.replica_groups.iota.has_value()) << instr.name;
    }
}

}  // namespace
}  // namespace podsim::compiler
