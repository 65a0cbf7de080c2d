// ScalarReducerCache: one computation per (op, dtype), named after the prefix;
// kReuse takes a computation of that name already in the module, kAdd adds
// its own.
#include <gtest/gtest.h>

#include "compiler/ir/builder.h"
#include "compiler/ir/reducer_cache.h"

namespace podsim::compiler {
namespace {

TEST(ScalarReducerCache, OnePerOpAndDtype) {
  Module m("m");
  ScalarReducerCache cache(&m, "spmd", ScalarReducerCache::Existing::kAdd);
  const CompId add = cache.get(Opcode::kAdd, DType::kF32);
  EXPECT_EQ(cache.get(Opcode::kAdd, DType::kF32), add);
  const CompId max = cache.get(Opcode::kMaximum, DType::kF32);
  const CompId add16 = cache.get(Opcode::kAdd, DType::kBF16);
  EXPECT_NE(max, add);
  EXPECT_NE(add16, add);
  EXPECT_EQ(m.computation_count(), 3);
  EXPECT_EQ(m.computation(add).name(), "spmd_add_f32");
  EXPECT_EQ(m.computation(add16).name(), "spmd_add_bf16");
  // max(x, y) over f32 scalars.
  const Computation& c = m.computation(max);
  EXPECT_EQ(c.root_instr().opcode, Opcode::kMaximum);
  EXPECT_EQ(c.parameters().size(), 2u);
  EXPECT_EQ(c.root_instr().shape, Shape::scalar(DType::kF32));
}

TEST(ScalarReducerCache, ExistingComputationReusedOrNot) {
  Module m("m");
  const CompId earlier =
      m.add_computation(scalar_binary_computation("training_add_f32", Opcode::kAdd, DType::kF32));
  ScalarReducerCache reuse(&m, "training", ScalarReducerCache::Existing::kReuse);
  EXPECT_EQ(reuse.get(Opcode::kAdd, DType::kF32), earlier);
  EXPECT_EQ(m.computation_count(), 1);
  ScalarReducerCache own(&m, "training", ScalarReducerCache::Existing::kAdd);
  EXPECT_NE(own.get(Opcode::kAdd, DType::kF32), earlier);
  EXPECT_EQ(m.computation_count(), 2);
}

}  // namespace
}  // namespace podsim::compiler
