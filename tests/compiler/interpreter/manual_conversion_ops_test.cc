// SPMDFullToShardShape / SPMDShardToFullShape of an unpartitioned module run
// on every device: each device's part in, the parts of a manual group
// assembled out (manual_conversion_ops.h). Expected values are read off the
// tile assignments by hand (derivations in the comments).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

using V = std::vector<double>;

std::vector<Literal> on_devices(const std::string& hlo, int n, const Literal& arg) {
  return evaluate_spmd(parse_verified(hlo), std::vector<std::vector<Literal>>(n, {arg}));
}

// p = 0..7 as f32[4,2], rows cut 2 ways with device 1 first ({devices=[2,1]1,0}):
// device 1's part is rows 0-1 {0,1,2,3}, device 0's rows 2-3 {4,5,6,7}.
// Each device adds its id, and the exit puts each part back at its rows:
// {0+1, 1+1, 2+1, 3+1, 4+0, 5+0, 6+0, 7+0} on every device.
TEST(ManualConversion, RoundTripFollowsTheDeviceOrderOfTheTiles) {
  const std::string hlo = R"(HloModule m, num_partitions=2
ENTRY main {
  p = f32[4,2] parameter(0), sharding={devices=[2,1]1,0}
  s = f32[2,2] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={manual}
  id = u32[] partition-id()
  c = f32[] convert(id)
  b = f32[2,2] broadcast(c), dimensions={}
  a = f32[2,2] add(s, b), sharding={manual}
  ROOT f = f32[4,2] custom-call(a), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1]1,0}
})";
  const auto out = on_devices(hlo, 2, iota_literal(DType::kF32, {4, 2}));
  for (int d = 0; d < 2; ++d) EXPECT_EQ(out[d].values(), (V{1, 2, 3, 4, 4, 5, 6, 7})) << d;
}

// Uneven tiles: f32[3] cut 2 ways gives parts of ceil(3/2) = 2; device 1's
// part holds element 2 and a zero past the end.
TEST(ManualConversion, UnevenEntryPadsWithZeros) {
  const std::string hlo = R"(HloModule m, num_partitions=2
ENTRY main {
  p = f32[3] parameter(0), sharding={devices=[2]0,1}
  ROOT s = f32[2] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={manual}
})";
  const auto out = on_devices(hlo, 2, f32({3}, {5, 6, 7}));
  EXPECT_EQ(out[0].values(), (V{5, 6}));
  EXPECT_EQ(out[1].values(), (V{7, 0}));
}

// Exit into a manual subgroup: {devices=[2,2]<=[4] last_tile_dims={manual}}
// puts device d at data tile d/2 of manual group d%2. Device d holds {d, d};
// group 0 (devices 0, 2) assembles {0,0,2,2}, group 1 (1, 3) {1,1,3,3}.
TEST(ManualConversion, ExitAssemblesWithinEachManualGroup) {
  const std::string hlo = R"(HloModule m, num_partitions=4
ENTRY main {
  p = f32[] parameter(0)
  id = u32[] partition-id()
  c = f32[] convert(id)
  b = f32[2] broadcast(c), dimensions={}, sharding={manual}
  ROOT f = f32[4] custom-call(b), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,2]<=[4] last_tile_dims={manual}}
})";
  const auto out = on_devices(hlo, 4, f32({}, {0}));
  EXPECT_EQ(out[0].values(), (V{0, 0, 2, 2}));
  EXPECT_EQ(out[2].values(), (V{0, 0, 2, 2}));
  EXPECT_EQ(out[1].values(), (V{1, 1, 3, 3}));
  EXPECT_EQ(out[3].values(), (V{1, 1, 3, 3}));
}

// An entry whose manual side also tiles the data dim: s32[2] under
// {devices=[2,4]<=[4,2]T(1,0) last_tile_dims={manual}} puts device d = 2j + i
// at data tile i of manual group j. Its automatic form tiles s32[8] 8 ways,
// manual index major: device 2j + i holds element 2j + i, so group j's value
// is p[2j : 2j+2] = {2j, 2j+1} (p = 0..7), whatever the operand's sharding.
TEST(ManualConversion, EntryIntoATiledManualSideUsesItsAutomaticForm) {
  const std::string hlo = R"(HloModule m, num_partitions=8
ENTRY main {
  p = s32[8] parameter(0), sharding={devices=[4,2]<=[8] last_tile_dim_replicate}
  ROOT s = s32[2] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={devices=[2,4]<=[4,2]T(1,0) last_tile_dims={manual}}
})";
  const auto out = on_devices(hlo, 8, iota_literal(DType::kS32, {8}));
  for (int d = 0; d < 8; ++d) {
    const double j = d / 2;
    EXPECT_EQ(out[d].values(), (V{2 * j, 2 * j + 1})) << "device " << d;
  }
}

// Complex values move as (real, imag) pairs.
TEST(ManualConversion, ComplexPartsKeepBothHalves) {
  const std::string hlo = R"(HloModule m, num_partitions=2
ENTRY main {
  p = c64[2] parameter(0), sharding={devices=[2]0,1}
  ROOT s = c64[1] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={manual}
})";
  const auto out = on_devices(hlo, 2, lit(DType::kC64, {2}, {1, 2, 3, 4}));
  EXPECT_EQ(out[0].values(), (V{1, 2}));
  EXPECT_EQ(out[1].values(), (V{3, 4}));
}

TEST(ManualConversion, OneDeviceCannotAssembleTheParts) {
  const std::string hlo = R"(HloModule m, num_partitions=2
ENTRY main {
  p = f32[2] parameter(0), sharding={manual}
  ROOT f = f32[4] custom-call(p), custom_call_target="SPMDShardToFullShape", sharding={devices=[2]0,1}
})";
  try {
    run(hlo, {f32({2}, {1, 2})});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("evaluate the module on every device"), std::string::npos)
        << e.message();
  }
}

TEST(ManualConversion, ShapesThatAreNotAValueAndItsPartAreUserErrors) {
  // f32[4] cut 2 ways has parts of 2, not 3.
  const std::string hlo = R"(HloModule m, num_partitions=2
ENTRY main {
  p = f32[4] parameter(0), sharding={devices=[2]0,1}
  ROOT s = f32[3] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={manual}
})";
  EXPECT_THROW(on_devices(hlo, 2, f32({4}, {1, 2, 3, 4})), UserError);
}

}  // namespace
}  // namespace podsim::compiler::testing
