// compile() on a while loop: the body and condition get their own schedule
// and fusion, the trip count survives partitioning, and the memory plan
// adds the body's peak at the loop.
#include <gtest/gtest.h>

#include "compiler/compile.h"
#include "compiler/ir/trip_count.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

TEST(WhileCompile, LoopKeepsItsTripCountAndBodyPlan) {
  Module m = parse_hlo_file(std::string(PODSIM_SOURCE_DIR) + "/tests/fixtures/hlo/while_loop.hlo");
  SpmdProgram p = compile(m, CompileOptions{.num_devices = 2});
  const Computation& entry = p.module.entry();
  InstrId loop = kNoId;
  for (InstrId id = 0; id < entry.size(); ++id)
    if (entry.instr(id).opcode == Opcode::kWhile) loop = id;
  ASSERT_NE(loop, kNoId);
  Instruction copy = entry.instr(loop);
  copy.attrs.backend_config.clear();  // derived from the loop itself: i < 10 from 0 by 1
  EXPECT_EQ(known_trip_count(p.module, copy), 10);
  const CompId body = entry.instr(loop).while_body();
  pipeline_test::expect_topological_permutation(p.module.computation(body),
                                                p.schedule[static_cast<size_t>(body)]);
  EXPECT_FALSE(p.fusion[static_cast<size_t>(body)].groups.empty());
  // Replicated values, fused body: {one, next} and {two, twos, acc.next}
  // are kernels, so the body holds only next (4 B) and acc.next (32 B) =
  // 36 B; the condition only its compare (1 B). Entry at the loop: counter
  // init 4 B + x 32 B + body 36 B = 72 B.
  EXPECT_EQ(p.memory.peak_bytes, 72);
  EXPECT_EQ(p.memory.peak_at, loop);
  EXPECT_EQ(p.memory.at_peak.total(), p.memory.peak_bytes);
}

}  // namespace
}  // namespace podsim::compiler
