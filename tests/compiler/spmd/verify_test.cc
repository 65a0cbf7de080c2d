// The --verify guard: the estimate of verify_partitioning's memory and work
// (closed forms on hand-written programs), its refusals, and byte sizes.
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/interpreter/cost_estimate.h"
#include "compiler/spmd/partitioner.h"
#include "compiler/spmd/verify.h"

namespace podsim::compiler {
namespace {

constexpr const char* kAnnotated = R"(HloModule m, num_partitions=2
ENTRY e {
  p = f32[1024,1024] parameter(0), sharding={devices=[2,1]0,1}
  ROOT n = f32[1024,1024] negate(p), sharding={devices=[2,1]0,1}
}
)";

constexpr const char* kPartitioned = R"(HloModule m, num_partitions=2
ENTRY e {
  p = f32[512,1024] parameter(0)
  ROOT n = f32[512,1024] negate(p)
}
)";

TEST(VerifyGuard, EstimateIsTheClosedForm) {
  // Full value F (2^20 elements), half H (2^19). Original peak 2F (p and n),
  // per-device peak 2H; inputs F + 2H; with the expected result (F), the
  // two devices (2 x 2H) and the reassembled result (F):
  //   peak = 1.25 (margin) x (F + 2H + max(2F, F + 4H) + F).
  const double F = interpreter_value_bytes(Shape(DType::kF32, {1024, 1024}));
  const double H = interpreter_value_bytes(Shape(DType::kF32, {512, 1024}));
  const VerifyEstimate e = estimate_verify(parse_hlo(kAnnotated), parse_hlo(kPartitioned));
  EXPECT_EQ(e.devices, 2);
  EXPECT_DOUBLE_EQ(e.peak_bytes,
                   kVerifyMemoryMargin * (F + 2 * H + std::max(2 * F, F + 4 * H) + F));
  // Work: original 2^20 (p) + 2 x 2^20 (negate); each device half of that.
  const double n = 1 << 20;
  EXPECT_DOUBLE_EQ(e.element_ops, 3 * n + 2 * (3 * n / 2));
  // 1.25 (3F + 6H) = 60 MiB and a few bytes: accepted by the default 2 GiB.
  EXPECT_NO_THROW(check_verify_estimate(parse_hlo(kAnnotated), parse_hlo(kPartitioned),
                                        kDefaultVerifyLimitBytes));
}

TEST(VerifyGuard, RefusesOverTheMemoryLimitNamingEstimateLimitAndOption) {
  const Module a = parse_hlo(kAnnotated);
  const Module p = parse_hlo(kPartitioned);
  const double peak = estimate_verify(a, p).peak_bytes;
  EXPECT_NO_THROW(check_verify_estimate(a, p, peak));
  try {
    check_verify_estimate(a, p, 40.0 * 1024 * 1024);
    FAIL() << "expected a refusal";
  } catch (const UserError& e) {
    const std::string m = e.message();
    EXPECT_NE(m.find("about 60 MiB"), std::string::npos) << m;  // the estimate, 1.25 (3F + 6H)
    EXPECT_NE(m.find("limit of 40 MiB"), std::string::npos) << m;
    EXPECT_NE(e.hint().find("--verify-limit"), std::string::npos) << e.hint();
  }
}

TEST(VerifyGuard, RefusesTooMuchWork) {
  // A 4096^3 dot is 6.9e10 multiply-accumulates, over 2e10, while its values
  // (five 128 MiB values at the dot: inputs, their packed copies, result;
  // with verify's own copies and the margin about 1.7 GiB) fit in 2 GiB.
  const char* big = R"(HloModule m, num_partitions=1
ENTRY e {
  a = f32[4096,4096] parameter(0)
  b = f32[4096,4096] parameter(1)
  ROOT d = f32[4096,4096] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  const Module m = parse_hlo(big);
  EXPECT_LT(estimate_verify(m, m).peak_bytes, kDefaultVerifyLimitBytes);
  try {
    check_verify_estimate(m, m, kDefaultVerifyLimitBytes);
    FAIL() << "expected a refusal";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("element operations"), std::string::npos) << e.message();
    // Original and "partitioned" (the same module, 1 device) each do
    // 4096^3 MACs + 5 x 4096^2 elements (2 parameters, the dot's 2 reads and
    // 1 write): 2 x (6.872e10 + 8.4e7) = 1.376e11.
    EXPECT_NE(e.message().find("1.38e+11"), std::string::npos) << e.message();
  }
}

TEST(VerifyGuard, ByteSizes) {
  EXPECT_EQ(parse_byte_size("4GiB"), 4.0 * (1 << 30));
  EXPECT_EQ(parse_byte_size("512MiB"), 512.0 * (1 << 20));
  EXPECT_EQ(parse_byte_size("2G"), 2.0 * (1 << 30));
  EXPECT_EQ(parse_byte_size("3GB"), 3e9);
  EXPECT_EQ(parse_byte_size("1e9"), 1e9);
  EXPECT_EQ(parse_byte_size("1048576"), 1048576.0);
  EXPECT_EQ(parse_byte_size("16kib"), 16384.0);
  EXPECT_THROW(parse_byte_size("lots"), UserError);
  EXPECT_THROW(parse_byte_size("-1GiB"), UserError);
  EXPECT_THROW(parse_byte_size("4XB"), UserError);
  EXPECT_THROW(parse_byte_size(""), UserError);
}

}  // namespace
}  // namespace podsim::compiler

namespace podsim::compiler {
namespace {

// A one-instruction module "ROOT r = <type> <op>" for the tolerance rule.
Module tolerance_module(const std::string& body, int64_t partitions = 1) {
  return parse_hlo(fmt::format(R"(HloModule m, num_partitions={}
add {{
  x = {} parameter(0)
  y = {} parameter(1)
  ROOT s = {} add(x, y)
}}
ENTRY e {{
{}
}}
)",
                               partitions, "f32[]", "f32[]", "f32[]", body));
}

// A complex result is reassembled with both halves of every element: the
// right program verifies, one that drops the negation does not.
TEST(VerifyPartitioning, ComplexShardsKeepTheirImaginaryParts) {
  const Module annotated = parse_hlo(R"(HloModule m, num_partitions=2
ENTRY e {
  p = c64[4] parameter(0), sharding={devices=[2]0,1}
  ROOT n = c64[4] negate(p), sharding={devices=[2]0,1}
})");
  const Module right = parse_hlo(R"(HloModule m, num_partitions=2
ENTRY e {
  p = c64[2] parameter(0)
  ROOT n = c64[2] negate(p)
})");
  const Module wrong = parse_hlo(R"(HloModule m, num_partitions=2
ENTRY e {
  ROOT p = c64[2] parameter(0)
})");
  EXPECT_TRUE(verify_partitioning(annotated, right, 1, 1e-4).ok);
  EXPECT_FALSE(verify_partitioning(annotated, wrong, 1, 1e-4).ok);
}

// A manual region between SPMDFullToShardShape and SPMDShardToFullShape: the
// reference runs on every device (device d adds d to its rows), so the
// partitioned program that adds its partition id verifies and one that adds
// 1 - id does not.
TEST(VerifyPartitioning, ManualRegionIsReferencedPerDevice) {
  const Module annotated = parse_hlo(R"(HloModule m, num_partitions=2
ENTRY e {
  p = f32[4,2] parameter(0), sharding={devices=[2,1]0,1}
  s = f32[2,2] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={manual}
  id = u32[] partition-id(), sharding={manual}
  c = f32[] convert(id), sharding={manual}
  b = f32[2,2] broadcast(c), dimensions={}, sharding={manual}
  a = f32[2,2] add(s, b), sharding={manual}
  ROOT f = f32[4,2] custom-call(a), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1]0,1}
})");
  EXPECT_TRUE(needs_every_device(annotated));
  EXPECT_FALSE(has_collectives(annotated));
  const std::string partitioned = R"(HloModule m, num_partitions=2
ENTRY e {
  p = f32[2,2] parameter(0)
  id = u32[] partition-id()
  c = f32[] convert(id)
  one = f32[] constant(1)
  other = f32[] subtract(one, c)
  b = f32[2,2] broadcast(%s), dimensions={}
  ROOT a = f32[2,2] add(p, b)
})";
  auto with = [&](const char* added) {
    std::string text = partitioned;
    text.replace(text.find("%s"), 2, added);
    return parse_hlo(text);
  };
  EXPECT_TRUE(verify_partitioning(annotated, with("c"), 1, 1e-4).ok);
  EXPECT_FALSE(verify_partitioning(annotated, with("other"), 1, 1e-4).ok);
}

TEST(VerifyTolerance, F32StaysAtTheFloor) {
  // 4 x 2^-24 x sqrt(1024) = 7.6e-6 < 1e-4.
  const Module m = tolerance_module(R"(  p = f32[4,1024] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(p, z), dimensions={1}, to_apply=add)");
  const VerifyTolerance t = verify_tolerance(m, m);
  EXPECT_EQ(t.tolerance, 1e-4);
  EXPECT_EQ(t.scale, CompareScale::kElement);
}

TEST(VerifyTolerance, LongBf16SumGrowsAsSqrtN) {
  // bf16 reduce of 1024: 4 x 2^-8 x 32 = 0.5, relative to the RMS.
  const Module m = tolerance_module(R"(  p = bf16[4,1024] parameter(0)
  z = bf16[] constant(0)
  ROOT r = bf16[4] reduce(p, z), dimensions={1}, to_apply=add)");
  const VerifyTolerance t = verify_tolerance(m, m);
  EXPECT_EQ(t.tolerance, 0.5);
  EXPECT_EQ(t.longest_sum, 1024);
  EXPECT_EQ(t.unit_roundoff, std::ldexp(1.0, -8));
  EXPECT_EQ(t.scale, CompareScale::kLeafRms);
}

TEST(VerifyTolerance, Bf16ScatterAddCountsEveryUpdate) {
  // 64 updates scattered into 16 rows may all land on one row and are
  // combined one by one in an order partitioning does not keep:
  // 4 x 2^-8 x sqrt(64) = 0.125 of the RMS.
  const Module m = tolerance_module(R"(  p = bf16[16,8] parameter(0)
  i = s32[64,1] parameter(1)
  u = bf16[64,8] parameter(2)
  ROOT s = bf16[16,8] scatter(p, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add)");
  const VerifyTolerance t = verify_tolerance(m, m);
  EXPECT_DOUBLE_EQ(t.tolerance, 0.125);
  EXPECT_EQ(t.longest_sum, 64);
  EXPECT_EQ(t.scale, CompareScale::kLeafRms);
}

TEST(VerifyTolerance, Bf16WithoutLongSumsKeepsTheFloor) {
  // Elementwise bf16 on 1 device: no sum longer than 1 -> 2e-2 per element.
  const Module m = tolerance_module(R"(  p = bf16[64] parameter(0)
  ROOT r = bf16[64] negate(p))");
  const VerifyTolerance t = verify_tolerance(m, m);
  EXPECT_EQ(t.tolerance, 2e-2);
  EXPECT_EQ(t.scale, CompareScale::kElement);
}

TEST(VerifyTolerance, SplitBf16DotCountsOnePartialPerDevice) {
  // 8 partial sums: 4 x 2^-8 x sqrt(8) = 0.0442; the 4096-long contraction
  // itself is accumulated in double and does not count.
  const Module m = tolerance_module(R"(  a = bf16[8,4096] parameter(0)
  b = bf16[4096,8] parameter(1)
  ROOT d = bf16[8,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})",
                                    8);
  const VerifyTolerance t = verify_tolerance(m, m);
  EXPECT_DOUBLE_EQ(t.tolerance, 4 * std::ldexp(1.0, -8) * std::sqrt(8.0));
  EXPECT_EQ(t.longest_sum, 8);
}

TEST(VerifyTolerance, AnF32SumInABf16ModuleUsesF32Precision) {
  // The reduce is f32 (2^-24): its growth is below the bf16 floor.
  const Module m = tolerance_module(R"(  p = bf16[4,1024] parameter(0)
  c = f32[4,1024] convert(p)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(c, z), dimensions={1}, to_apply=add)");
  const VerifyTolerance t = verify_tolerance(m, m);
  EXPECT_EQ(t.tolerance, 2e-2);
  EXPECT_EQ(t.scale, CompareScale::kElement);
}

// A manual result is each device's own value: partition-id under {manual}
// is d on device d, in the global module run as device d and in the
// per-device program alike. A per-device program that returns 0 everywhere
// is wrong from device 1 on.
TEST(VerifyManualResult, ComparesDeviceByDevice) {
  const Module global = parse_hlo(
      "HloModule m, num_partitions=4\nENTRY e {\n"
      "  ROOT p = u32[] partition-id(), sharding={manual}\n}\n");
  const VerifyResult same = verify_partitioning(global, global, VerifyOptions{});
  EXPECT_TRUE(same.ok) << same.first_mismatch;
  const Module zeros = parse_hlo(
      "HloModule m, num_partitions=4\nENTRY e {\n"
      "  ROOT z = u32[] constant(0), sharding={manual}\n}\n");
  const VerifyResult wrong = verify_partitioning(global, zeros, VerifyOptions{});
  EXPECT_FALSE(wrong.ok);
  EXPECT_NE(wrong.first_mismatch.find("on device 1"), std::string::npos) << wrong.first_mismatch;
}

TEST(VerifyCollectives, AModuleWithItsOwnAllReduceIsTheSameOnEveryDevice) {
  // all-reduce over replica_groups {0,1,2,3} of a value every device holds
  // whole: the logical result is 4 x p on every device. Evaluated on one
  // device, the groups would name devices that do not exist.
  const Module annotated = parse_hlo(R"(HloModule m, num_partitions=4
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[4,2] parameter(0), sharding={devices=[2,2]<=[4]}
  ROOT r = f32[4,2] all-reduce(p), to_apply=sum, replica_groups={{0,1,2,3}}, use_global_device_ids=true,
    channel_id=1
})");
  EXPECT_TRUE(has_collectives(annotated));
  const Module program = partition_spmd(annotated, SpmdOptions{});
  const VerifyResult v = verify_partitioning(annotated, program);
  EXPECT_TRUE(v.ok) << v.first_mismatch;
  EXPECT_EQ(v.devices, 4);
}

TEST(VerifyCollectives, DevicesThatDisagreeAreRefused) {
  // partition-id differs per device, and the all-reduce of a pair group
  // keeps that difference: no one logical result.
  const Module annotated = parse_hlo(R"(HloModule m, num_partitions=4
sum {
  a = u32[] parameter(0)
  b = u32[] parameter(1)
  ROOT s = u32[] add(a, b)
}
ENTRY e {
  id = u32[] partition-id()
  ROOT r = u32[] all-reduce(id), to_apply=sum, replica_groups={{0,1},{2,3}}, use_global_device_ids=true,
    channel_id=1, sharding={replicated}
})");
  const Module program = partition_spmd(annotated, SpmdOptions{});
  try {
    verify_partitioning(annotated, program);
    FAIL() << "expected a refusal";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("another result than device 0"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace podsim::compiler
