// The 2-D sharded Transformer layer (workloads/examples/transformer_layer_2d.hlo,
// mesh [x=2, y=4]) through propagation and the partitioner: the dot
// strategies must group devices on the matched mesh axes so that no value
// is ever fully replicated (gspmd-algorithms.md 3.4 "grouping"; GSPMD's 2-D
// sharding moves activations and weights only within mesh rows/columns),
// and the program must compute the same layer.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/compiler/spmd/dot_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_dot_test::count_ops;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SpmdDotTransformer, Layer2DHasNoFullReplicationAndIsEquivalent) {
  auto p = spmd_dot_test::partition(read_file(std::string(PODSIM_SOURCE_DIR) + "/workloads/examples/transformer_layer_2d.hlo"), 8);
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
  // The weights are all-gathered along one mesh axis, and the contracting
  // sums scattered back: both kinds must be present.
  EXPECT_GT(s.all_gathers, 0);
  EXPECT_GT(s.reduce_scatters + s.all_reduces, 0);
  RecordProperty("all_gathers", static_cast<int>(s.all_gathers));
  RecordProperty("reduce_scatters", static_cast<int>(s.reduce_scatters));
  RecordProperty("all_reduces", static_cast<int>(s.all_reduces));
  std::cout << "transformer 2-D: all-gathers " << s.all_gathers << ", reduce-scatters " << s.reduce_scatters
            << ", all-reduces " << s.all_reduces << ", all-to-alls " << s.all_to_alls << ", permutes "
            << s.collective_permutes << "\n";
}

}  // namespace
}  // namespace podsim::compiler
