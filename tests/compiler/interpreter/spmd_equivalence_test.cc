// The interpreter as the partitioner's oracle: a hand-partitioned program on
// 4 devices must reproduce the single-device result. Inputs are
// random_literal values (multiples of 1/64), so every product and partial
// sum here is exact in f32 and the comparison can use tolerance 0 even
// though the partitioned sums associate differently.
#include <gtest/gtest.h>

#include "tests/compiler/interpreter/interp_test_util.h"

namespace podsim::compiler::testing {
namespace {

// Block `index` of `parts` equal blocks of `full` along `dim`.
Literal shard(const Literal& full, int dim, int parts, int index) {
  std::vector<int64_t> dims = full.shape().dims();
  const int64_t block = dims[static_cast<size_t>(dim)] / parts;
  dims[static_cast<size_t>(dim)] = block;
  Literal out{Shape(full.shape().dtype(), dims)};
  size_t k = 0;
  for_each_index(dims, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> src = idx;
    src[static_cast<size_t>(dim)] += block * index;
    out.mutable_values()[k++] = full.at(src);
  });
  return out;
}

constexpr const char* kOriginal = R"(HloModule m
ENTRY main {
  a = f32[8,16] parameter(0)
  b = f32[16,4] parameter(1)
  ROOT d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

TEST(SpmdEquivalence, ContractingDimShardedDotPlusAllReduce) {
  // Each device multiplies its 4 columns of a by its 4 rows of b; the
  // all-reduce sums the partial products into the full [8,4] result.
  Module partitioned = parse_verified(R"(HloModule m, num_partitions=4
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT r = f32[] add(x, y)
}
ENTRY main {
  a = f32[8,4] parameter(0)
  b = f32[4,4] parameter(1)
  d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[8,4] all-reduce(d), channel_id=1, replica_groups={}, to_apply=add
})");
  const Literal a = random_literal(Shape(DType::kF32, {8, 16}), 11);
  const Literal b = random_literal(Shape(DType::kF32, {16, 4}), 12);
  const Literal expected = evaluate(parse_verified(kOriginal), {a, b});
  std::vector<std::vector<Literal>> args;
  for (int d = 0; d < 4; ++d) args.push_back({shard(a, 1, 4, d), shard(b, 0, 4, d)});
  const auto per_device = evaluate_spmd(partitioned, args);
  for (int d = 0; d < 4; ++d) {
    const Comparison c = compare_literals(expected, per_device[static_cast<size_t>(d)], 0.0);
    EXPECT_TRUE(c.ok) << "device " << d << ": " << c.first_mismatch;
  }
}

TEST(SpmdEquivalence, RowShardedDotPlusAllGather) {
  // Each device computes 2 rows of the result; all-gather restores [8,4].
  Module partitioned = parse_verified(R"(HloModule m, num_partitions=4
ENTRY main {
  a = f32[2,16] parameter(0)
  b = f32[16,4] parameter(1)
  d = f32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT g = f32[8,4] all-gather(d), dimensions={0}, channel_id=1, replica_groups={}
})");
  const Literal a = random_literal(Shape(DType::kF32, {8, 16}), 21);
  const Literal b = random_literal(Shape(DType::kF32, {16, 4}), 22);
  const Literal expected = evaluate(parse_verified(kOriginal), {a, b});
  std::vector<std::vector<Literal>> args;
  for (int d = 0; d < 4; ++d) args.push_back({shard(a, 0, 4, d), b});
  const auto per_device = evaluate_spmd(partitioned, args);
  for (int d = 0; d < 4; ++d) {
    const Comparison c = compare_literals(expected, per_device[static_cast<size_t>(d)], 0.0);
    EXPECT_TRUE(c.ok) << "device " << d << ": " << c.first_mismatch;
  }
  // A wrong partitioning (devices gathering in reverse order) is caught.
  std::vector<std::vector<Literal>> reversed;
  for (int d = 0; d < 4; ++d) reversed.push_back({shard(a, 0, 4, 3 - d), b});
  EXPECT_FALSE(compare_literals(expected, evaluate_spmd(partitioned, reversed)[0], 1e-3).ok);
}

}  // namespace
}  // namespace podsim::compiler::testing
