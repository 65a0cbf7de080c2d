// Reshard sweep: every pair of a family of shardings on 8 devices (tile
// counts 1..8 per dim, full or partial replication, all six device orders
// <=[2,2,2]T(perm)) must reshard to a program that computes the copy
// exactly, on even and uneven shapes. Exercises every rung of the ladder
// (reshard.h), in particular the greedy digit planner's forced coarsens and
// the relabeled rung's permute-first / permute-last paths, whose
// collectives the targeted tests (reshard_relabel_test.cc,
// reshard_conformance_test.cc) pin on chosen cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/verifier.h"
#include "tests/compiler/spmd/spmd_test_util.h"

namespace podsim::compiler {
namespace {

using spmd_test::copy_module;
using spmd_test::partition_text;

// Canonical texts of the shardings with `rank` data dims whose tile counts
// are powers of 2 with product <= 8, the rest replicated, in each device
// order of the 2 x 2 x 2 digits.
std::vector<std::string> sweep_shardings(int rank) {
  std::set<std::string> out;
  out.insert(Sharding::replicated().to_string());
  std::vector<int64_t> counts(static_cast<size_t>(rank), 1);
  const int64_t choices[] = {1, 2, 4, 8};
  std::vector<int> pick(static_cast<size_t>(rank), 0);
  for (;;) {
    int64_t tiles = 1;
    std::string dims;
    for (int d = 0; d < rank; ++d) {
      tiles *= choices[pick[static_cast<size_t>(d)]];
      if (d > 0) dims += ",";
      dims += std::to_string(choices[pick[static_cast<size_t>(d)]]);
    }
    if (tiles > 1 && tiles <= 8) {
      std::vector<int> perm = {0, 1, 2};
      do {
        const std::string order = "<=[2,2,2]T(" + std::to_string(perm[0]) + "," +
                                  std::to_string(perm[1]) + "," + std::to_string(perm[2]) + ")";
        const std::string text = tiles == 8
                                     ? "{devices=[" + dims + "]" + order + "}"
                                     : "{devices=[" + dims + "," + std::to_string(8 / tiles) + "]" +
                                           order + " last_tile_dim_replicate}";
        out.insert(parse_sharding(text).to_string());
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
    int d = 0;
    while (d < rank && ++pick[static_cast<size_t>(d)] == 4) pick[static_cast<size_t>(d++)] = 0;
    if (d == rank) break;
  }
  return {out.begin(), out.end()};
}

// A shape to sweep; `even`: every tile count of the family divides every
// dim, where the digit rungs must never fall back to full replication.
struct SweepShape {
  std::string dims;
  bool even = false;
};

// Partitions the copy from -> to on the shape, checks the program is well
// formed and computes the copy (and on even shapes that no full
// replication was needed); returns a description of a failure.
std::string check(const SweepShape& shape, const std::string& from, const std::string& to) {
  auto p = partition_text(copy_module(shape.dims, from, to), 8);
  verify_module(p.result.module);
  const std::string pair = from + " -> " + to + " on [" + shape.dims + "]: ";
  VerifyResult r = verify_partitioning(p.annotated, p.result.module, 5, 1e-6);
  if (!r.ok) return pair + r.first_mismatch;
  if (shape.even && p.result.stats.full_replications != 0) return pair + "full replication";
  return "";
}

void sweep(int rank, const std::vector<SweepShape>& shapes) {
  const std::vector<std::string> shardings = sweep_shardings(rank);
  // 1 + 6 distinct orders of some counts (fewer where orders coincide):
  // enough that the sweep cannot silently shrink to nothing.
  ASSERT_GT(shardings.size(), 20u);
  int failures = 0;
  for (const SweepShape& shape : shapes)
    for (const std::string& from : shardings)
      for (const std::string& to : shardings) {
        const std::string failure = check(shape, from, to);
        if (failure.empty()) continue;
        ADD_FAILURE() << failure;
        if (++failures >= 5) return;
      }
}

// 8 x 16 tiles evenly every way: every pair is digit steps (up to a
// relabeling) or an earlier rung, never a full replication -- before the
// relabeled rung and the greedy planner, 1308 of the 2401 pairs were. 6 x 5
// is uneven for every count but 1 (and 5 over 8 leaves three devices only
// padding): extents that do not nest still fall back (516 pairs).
TEST(ReshardSweep, EveryPairOfMatrixShardings) { sweep(2, {{"8,16", true}, {"6,5", false}}); }

// Rank 3: tile counts per dim up to 8, 3-D device orders; one even shape
// (before: 5976 of 11236 pairs fully replicated) and one uneven.
TEST(ReshardSweep, EveryPairOfRank3Shardings) { sweep(3, {{"8,8,16", true}, {"3,5,6", false}}); }

}  // namespace
}  // namespace podsim::compiler
