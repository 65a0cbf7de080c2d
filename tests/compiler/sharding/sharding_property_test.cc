// Seeded random property tests of the sharding representation and algebra.
// Each property runs a few hundred cases; a failure prints its seed and the
// sharding so it can be replayed.
#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "compiler/sharding/sharding_groups.h"
#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler {
namespace {

using Ids = std::vector<int64_t>;
constexpr int kCases = 300;

// Splits n into `parts` factors (each >= 1) at random.
Ids random_factorisation(int64_t n, size_t parts, std::mt19937& rng) {
  Ids out(parts, 1);
  if (parts == 0) return out;
  for (int64_t p = 2; n > 1;) {
    if (n % p == 0) {
      out[std::uniform_int_distribution<size_t>(0, parts - 1)(rng)] *= p;
      n /= p;
    } else {
      ++p;
    }
  }
  return out;
}

// A random tiled (or canonically collapsed) sharding of `rank` dims on n devices:
// data dims, optional manual and replicated subgroups, device order either an
// iota with a random transpose or a random permutation.
Sharding random_sharding(int64_t rank, int64_t n, std::mt19937& rng, bool allow_manual = true) {
  const bool manual = allow_manual && rng() % 4 == 0;
  const bool replicated = rng() % 2 == 0;
  std::vector<SubgroupType> types;
  if (manual) types.push_back(SubgroupType::kManual);
  if (replicated) types.push_back(SubgroupType::kReplicated);
  const Ids dims = random_factorisation(n, static_cast<size_t>(rank) + types.size(), rng);
  TileAssignment tiles;
  if (rng() % 2 == 0) {
    const Ids reshape = random_factorisation(n, 1 + rng() % 3, rng);
    Ids perm(reshape.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    tiles = TileAssignment::iota(dims, reshape, perm);
  } else {
    Ids devices(static_cast<size_t>(n));
    std::iota(devices.begin(), devices.end(), 0);
    std::shuffle(devices.begin(), devices.end(), rng);
    tiles = TileAssignment::from_devices(dims, devices);
  }
  return Sharding::subgroup(tiles, types);
}

int64_t random_device_count(std::mt19937& rng) {
  static const int64_t counts[] = {1, 2, 3, 4, 6, 8, 12, 16, 24};
  return counts[rng() % std::size(counts)];
}

#define SEEDED(seed, s) ::testing::Message() << "seed " << (seed) << " sharding " << (s).to_string()

TEST(ShardingProperty, ParsePrintRoundTrip) {
  for (int seed = 0; seed < kCases; ++seed) {
    std::mt19937 rng(seed);
    const int64_t rank = 1 + rng() % 4;
    const int64_t n = random_device_count(rng);
    const Sharding s = random_sharding(rank, n, rng);
    EXPECT_EQ(parse_sharding(s.to_string()), s) << SEEDED(seed, s);
    if (s.is_tiled()) {
      EXPECT_NO_THROW(s.validate(rank, n)) << SEEDED(seed, s);
    }
  }
}

TEST(ShardingProperty, TransposeThenInverseIsIdentity) {
  for (int seed = 0; seed < kCases; ++seed) {
    std::mt19937 rng(seed);
    const int64_t rank = 1 + rng() % 4;
    const Sharding s = random_sharding(rank, random_device_count(rng), rng);
    Ids perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Ids inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    EXPECT_EQ(transpose_sharding(transpose_sharding(s, perm), inverse), s) << SEEDED(seed, s);
  }
}

TEST(ShardingProperty, GroupThenUngroupIsIdentity) {
  for (int seed = 0; seed < kCases; ++seed) {
    std::mt19937 rng(seed);
    const int64_t rank = 1 + rng() % 3;
    const Sharding s = random_sharding(rank, random_device_count(rng), rng);
    if (!s.is_tiled()) continue;
    // Random subset of data dims (plus maybe the replication dim), each
    // keeping a random divisor of its count as inner shards.
    Ids dims, shards;
    for (int64_t d = 0; d < s.tile_assignment().rank(); ++d) {
      if (d >= rank && d != s.subgroup_replication_dim()) continue;
      if (rng() % 2 != 0) continue;
      const int64_t count = s.tile_assignment().dim(d);
      Ids divisors;
      for (int64_t k = 1; k <= count; ++k) {
        if (count % k == 0) divisors.push_back(k);
      }
      dims.push_back(d);
      shards.push_back(divisors[rng() % divisors.size()]);
    }
    const auto grouped = group_sharding_on_dims(s, dims, shards);
    int64_t groups = 1;
    for (int64_t g : grouped.group_dim_sizes) groups *= g;
    EXPECT_EQ(static_cast<int64_t>(grouped.device_groups.size()), groups) << SEEDED(seed, s);
    EXPECT_EQ(ungroup_sharding(grouped), s) << SEEDED(seed, s);
  }
}

TEST(ShardingProperty, MergeIsCommutativeAndRefinesBoth) {
  int merged_count = 0;
  for (int seed = 0; seed < kCases; ++seed) {
    std::mt19937 rng(seed);
    const int64_t rank = 1 + rng() % 3;
    const int64_t n = random_device_count(rng);
    const Sharding base = random_sharding(rank, n, rng, /*allow_manual=*/false);
    // Two coarsenings of one sharding are always mergeable (into at least the
    // base's common part); an unrelated one mostly is not.
    Ids da, db;
    for (int64_t d = 0; d < rank; ++d) {
      if (rng() % 2) da.push_back(d);
      if (rng() % 2) db.push_back(d);
    }
    const Sharding a = partially_replicate_on_dims(base, da);
    const Sharding b = rng() % 3 == 0 ? random_sharding(rank, n, rng, false)
                                      : partially_replicate_on_dims(base, db);
    const auto ab = merge_if_compatible(a, b);
    const auto ba = merge_if_compatible(b, a);
    ASSERT_EQ(ab.has_value(), ba.has_value()) << SEEDED(seed, a) << " with " << b.to_string();
    if (!ab) continue;
    ++merged_count;
    EXPECT_EQ(*ab, *ba) << SEEDED(seed, a) << " with " << b.to_string();
    // The merge puts every device's data inside its tiles under a and b.
    Ids dims(static_cast<size_t>(rank));
    for (auto& d : dims) d = 24;  // divisible by every tile count used
    EXPECT_TRUE(is_subtiling_or_equal(dims, *ab, a)) << SEEDED(seed, *ab);
    EXPECT_TRUE(is_subtiling_or_equal(dims, *ab, b)) << SEEDED(seed, *ab);
  }
  EXPECT_GT(merged_count, kCases / 2);  // the property was exercised
}

// Small random dims for coverage checks.
Ids random_dims(int64_t rank, std::mt19937& rng) {
  Ids dims(static_cast<size_t>(rank));
  for (auto& d : dims) d = 1 + rng() % 7;
  return dims;
}

TEST(ShardingProperty, ShardShapeTimesTilesCoversDims) {
  for (int seed = 0; seed < kCases; ++seed) {
    std::mt19937 rng(seed);
    const int64_t rank = 1 + rng() % 4;
    const Sharding s = random_sharding(rank, random_device_count(rng), rng);
    if (!s.is_tiled()) continue;
    const Ids dims = random_dims(rank, rng);
    const Ids shape = shard_shape(s, dims);
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t tiles = s.tile_assignment().dim(d);
      const auto i = static_cast<size_t>(d);
      // ceil: the smallest size whose `tiles` copies cover the dim.
      EXPECT_GE(shape[i] * tiles, dims[i]) << SEEDED(seed, s);
      EXPECT_LT((shape[i] - 1) * tiles, dims[i]) << SEEDED(seed, s);
    }
  }
}

TEST(ShardingProperty, DeviceRegionsTileTheTensorExactly) {
  for (int seed = 0; seed < kCases; ++seed) {
    std::mt19937 rng(seed);
    const int64_t rank = 1 + rng() % 3;
    const int64_t n = random_device_count(rng);
    const Sharding s = random_sharding(rank, n, rng);
    if (!s.is_tiled()) continue;
    const Ids dims = random_dims(rank, rng);
    const int64_t copies = s.total_num_tiles() / s.num_tiles();
    // Count, for every element, the devices whose region holds it.
    std::map<Ids, int64_t> held;
    for (int64_t device = 0; device < n; ++device) {
      const ShardRegion r = shard_region(s, dims, device);
      if (r.empty()) continue;
      Ids index = r.offsets;
      while (true) {
        ++held[index];
        int64_t d = rank - 1;
        for (; d >= 0; --d) {
          const auto i = static_cast<size_t>(d);
          if (++index[i] < r.limits[i]) break;
          index[i] = r.offsets[i];
        }
        if (d < 0) break;
      }
    }
    EXPECT_EQ(static_cast<int64_t>(held.size()), product_of(dims)) << SEEDED(seed, s);
    for (const auto& [index, count] : held) {
      ASSERT_EQ(count, copies) << SEEDED(seed, s);
    }
  }
}

// Flat element ids a device holds under a sharding of `dims`.
std::set<int64_t> flat_elements(const Sharding& s, const Ids& dims, int64_t device) {
  std::set<int64_t> out;
  const ShardRegion r = shard_region(s, dims, device);
  if (r.empty()) return out;
  Ids index = r.offsets;
  while (true) {
    int64_t flat = 0;
    for (size_t i = 0; i < dims.size(); ++i) flat = flat * dims[i] + index[i];
    out.insert(flat);
    int64_t d = static_cast<int64_t>(dims.size()) - 1;
    for (; d >= 0; --d) {
      const auto i = static_cast<size_t>(d);
      if (++index[i] < r.limits[i]) break;
      index[i] = r.offsets[i];
    }
    if (d < 0) break;
  }
  return out;
}

TEST(ShardingProperty, ReshapeKeepsEveryDeviceDataInItsNewTile) {
  int applied = 0, checked = 0;
  for (int seed = 0; seed < kCases; ++seed) {
    std::mt19937 rng(seed);
    const int64_t n = random_device_count(rng);
    // Element count = n * small factor, split into random source and target shapes.
    const int64_t total = n * (1 + rng() % 4);
    const Ids src = random_factorisation(total, 1 + rng() % 3, rng);
    const Ids tgt = random_factorisation(total, 1 + rng() % 3, rng);
    const Sharding s = random_sharding(static_cast<int64_t>(src.size()), n, rng, false);
    for (bool strict : {true, false}) {
      std::optional<Sharding> r = strict ? reshape_sharding(src, tgt, s)
                                         : std::optional(propagate_through_reshape(src, tgt, s));
      if (!r || !r->is_tiled() || !s.is_tiled()) continue;
      ++applied;
      EXPECT_NO_THROW(r->validate(static_cast<int64_t>(tgt.size()), n)) << SEEDED(seed, s);
      // Sound means: what a device holds now lies inside its new tile (the
      // new sharding is the same layout or a coarsening of it).
      for (int64_t device = 0; device < n; ++device) {
        const auto before = flat_elements(s, src, device);
        const auto after = flat_elements(*r, tgt, device);
        if (!evenly_partitions(s, src)) break;  // padding makes flat ids incomparable
        if (device == 0) ++checked;
        EXPECT_TRUE(std::includes(after.begin(), after.end(), before.begin(), before.end()))
            << SEEDED(seed, s) << " -> " << r->to_string() << " device " << device;
      }
    }
  }
  EXPECT_GT(applied, kCases / 4);
  EXPECT_GT(checked, kCases / 8);
  std::printf("reshape property: %d reshapes applied, %d checked element-wise\n", applied, checked);
}

}  // namespace
}  // namespace podsim::compiler
