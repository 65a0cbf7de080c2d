// value_role_name and MemoryBreakdown (compiler/backend/program.h).
#include <gtest/gtest.h>

#include "compiler/backend/program.h"

namespace podsim::compiler {
namespace {

TEST(ValueRoleName, NamesEveryRole) {
  EXPECT_STREQ(value_role_name(ValueRole::kParameter), "parameters");
  EXPECT_STREQ(value_role_name(ValueRole::kOptimizerState), "optimizer_state");
  EXPECT_STREQ(value_role_name(ValueRole::kCollectiveBuffer), "collective_buffers");
  MemoryBreakdown b;
  b.bytes[ValueRole::kGradient] = 5;
  b.bytes[ValueRole::kTemporary] = 7;
  EXPECT_EQ(b.total(), 12);
}

}  // namespace
}  // namespace podsim::compiler
