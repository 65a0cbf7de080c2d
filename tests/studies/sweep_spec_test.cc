// Sweep specification, grid expansion, sharding and result tables.
// Expected grids are enumerated by hand in the comments.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "common/csv.h"
#include "common/error.h"
#include "studies/sweep_spec.h"
#include "workloads/workload.h"

namespace podsim::studies {
namespace {

const char* kSweep = R"(name: demo
base: ../workloads/small.yaml
set: {training.remat: none}
grid:
  model.layers: [2, 4, 8]
zip:
  mesh.axes.x: [2, 4]
  mesh.axes.y: [4, 2]
)";

TEST(Sweep, CartesianGridTimesZipGroupLastAxisFastest) {
  const SweepSpec spec = parse_sweep(kSweep, "/sweeps/demo.yaml");
  EXPECT_EQ(spec.name, "demo");
  EXPECT_EQ(spec.base_workload, "/workloads/small.yaml");  // relative to the sweep file
  ASSERT_EQ(spec.axes.size(), 2u);
  // 3 layer values x 2 zipped (x, y) pairs = 6 points:
  // 0:(2,2,4) 1:(2,4,2) 2:(4,2,4) 3:(4,4,2) 4:(8,2,4) 5:(8,4,2)
  const std::vector<SweepPoint> points = expand_sweep(spec);
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[3].index, 3);
  EXPECT_EQ(points[3].values,
            (std::vector<std::pair<std::string, std::string>>{
                {"model.layers", "4"}, {"mesh.axes.x", "4"}, {"mesh.axes.y", "2"}}));
  EXPECT_EQ(points[4].values[0].second, "8");
  EXPECT_EQ(points[4].values[1].second, "2");
  EXPECT_EQ(points[5].overrides(spec),
            (std::vector<std::string>{"training.remat=none", "model.layers=8", "mesh.axes.x=4",
                                      "mesh.axes.y=2"}));
}

TEST(Sweep, ZipAsListOfGroupsMakesOneAxisPerGroup) {
  const SweepSpec spec = parse_sweep(
      "base: w.yaml\nzip:\n  - {a: [1, 2]}\n  - {b: [x, y, z], c: [1, 2, 3]}\n", "s.yaml");
  ASSERT_EQ(spec.axes.size(), 2u);
  EXPECT_EQ(expand_sweep(spec).size(), 6u);  // 2 x 3
}

TEST(Sweep, ShardsPartitionThePointsRoundRobin) {
  const std::vector<SweepPoint> points = expand_sweep(parse_sweep(kSweep, "s.yaml"));
  // 6 points over 4 shards: shard 1 gets 0 and 4, shard 2 gets 1 and 5,
  // shards 3 and 4 one each; together every point exactly once.
  std::vector<int64_t> seen;
  for (int64_t i = 1; i <= 4; ++i)
    for (const SweepPoint& p : select_shard(points, parse_shard(std::to_string(i) + "/4")))
      seen.push_back(p.index);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(select_shard(points, parse_shard("1/4")).size(), 2u);
  EXPECT_EQ(select_shard(points, parse_shard("3/4")).size(), 1u);
}

TEST(Sweep, BadShardTextsAreUserErrors) {
  for (const char* bad : {"0/4", "5/4", "x/4", "4", "1/0", "1/4x"})
    EXPECT_THROW(parse_shard(bad), UserError) << bad;
}

TEST(Sweep, BadSpecsNamePosition) {
  try {
    parse_sweep("base: w.yaml\ngrid:\n  a: [1]\nzip:\n  b: [1, 2]\n  c: [1]\n", "s.yaml");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 6);  // the shorter zipped list
    EXPECT_NE(e.message().find("'c' has 1 values"), std::string::npos) << e.what();
  }
  try {
    parse_sweep("base: w.yaml\ngird:\n  a: [1]\n", "s.yaml");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().line, 2);
    EXPECT_NE(e.message().find("unknown sweep key 'gird'"), std::string::npos);
  }
  EXPECT_THROW(parse_sweep("grid: {a: [1]}\n", "s.yaml"), UserError);  // no base
  EXPECT_THROW(parse_sweep("base: w.yaml\ngrid:\n  ? [a, b]\n  : [1]\n", "s.yaml"),
               UserError);                                                          // complex key
  EXPECT_THROW(parse_sweep("base: w.yaml\n", "s.yaml"), UserError);                 // nothing swept
  EXPECT_THROW(parse_sweep("base: w.yaml\ngrid: {a: []}\n", "s.yaml"), UserError);  // empty list
  EXPECT_THROW(parse_sweep("base: w.yaml\ngrid: {a: [1]}\nzip: {a: [2]}\n", "s.yaml"),
               UserError);  // twice
}

PointResult result(const std::vector<SweepPoint>& points, int64_t i, bool ok) {
  PointResult r;
  r.point = points[static_cast<size_t>(i)];
  r.ok = ok;
  if (ok) {
    r.metrics = {{"step_time_s", std::to_string(i + 1)}, {"mfu", "0.5"}};
  } else {
    r.error = "w.yaml:3:5: error: does not fit, \"really\"";
  }
  return r;
}

TEST(Sweep, FailedPointsAreRowsAndShardMergeEqualsTheWholeTable) {
  const SweepSpec spec = parse_sweep(kSweep, "s.yaml");
  const std::vector<SweepPoint> points = expand_sweep(spec);
  std::vector<PointResult> all;
  for (int64_t i = 0; i < 6; ++i) all.push_back(result(points, i, i != 2));
  const std::string whole = sweep_csv(spec, all);
  // Header + 6 rows; the failed point keeps its row with the quoted error.
  const auto table = parse_csv(whole, "whole.csv");
  ASSERT_EQ(table.size(), 7u);
  EXPECT_EQ(table[0],
            (std::vector<std::string>{"point", "model.layers", "mesh.axes.x", "mesh.axes.y",
                                      "status", "error", "step_time_s", "mfu"}));
  EXPECT_EQ(table[3][4], "error");
  EXPECT_EQ(table[3][5], "w.yaml:3:5: error: does not fit, \"really\"");
  EXPECT_EQ(table[3][6], "");
  // Shards 2/3, 1/3, 3/3 (out of order) merge back to the same bytes.
  std::vector<std::pair<std::string, std::string>> shards;
  for (int64_t s : {2, 1, 3}) {
    std::vector<PointResult> part;
    for (const SweepPoint& p : select_shard(points, ShardSpec{s, 3}))
      part.push_back(all[static_cast<size_t>(p.index)]);
    shards.emplace_back("shard" + std::to_string(s) + ".csv",
                        sweep_csv(spec, part, {"step_time_s", "mfu"}));
  }
  EXPECT_EQ(merge_sweep_csvs(shards), whole);
  // A shard whose points all failed has the same header when the fixed
  // metric columns are passed.
  EXPECT_EQ(parse_csv(sweep_csv(spec, {all[2]}, {"step_time_s", "mfu"}), "f.csv")[0], table[0]);
  // The same shard twice is an error naming the second file and row.
  shards.push_back(shards[0]);
  try {
    merge_sweep_csvs(shards);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("appears twice"), std::string::npos);
    EXPECT_EQ(e.location().file, "shard2.csv");
  }
}

TEST(Sweep, JsonLinesOnePerPoint) {
  const SweepSpec spec = parse_sweep(kSweep, "s.yaml");
  const std::vector<SweepPoint> points = expand_sweep(spec);
  const std::string lines =
      sweep_json_lines(spec, {result(points, 1, true), result(points, 0, false)});
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 2);
  EXPECT_EQ(lines.find("{\"sweep\":\"demo\",\"point\":0,"), 0u) << lines;
}

TEST(Sweep, ShippedSweepsParseAndEveryPointIsAValidWorkload) {
  // Points per shipped sweep: mesh shape 5 (zip), ICI bandwidth 5, MoE
  // experts 5 (zip), windowed einsum 2 x 3 (grid), the README's what-if
  // study 5 link rates x 2 HBM bandwidths (grid).
  const std::map<std::string, size_t> expected_points = {
      {"mesh_shape_128b_512.yaml", 5},  {"ici_bandwidth_1t.yaml", 5}, {"moe_experts.yaml", 5},
      {"windowed_einsum_128b.yaml", 6}, {"what_if_128b.yaml", 10},    {"slices_16b_v5e.yaml", 5}};
  std::set<std::string> seen;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(PODSIM_SOURCE_DIR) + "/sweeps")) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string name = entry.path().filename().string();
    seen.insert(name);
    ASSERT_TRUE(expected_points.contains(name))
        << "a new shipped sweep: add its point count here: " << name;
    SweepSpec spec = load_sweep(entry.path().string());
    ASSERT_TRUE(std::filesystem::exists(spec.base_workload)) << entry.path();
    const std::vector<SweepPoint> points = expand_sweep(spec);
    EXPECT_EQ(points.size(), expected_points.at(name)) << entry.path();
    // Every point's keys and values are ones the workload reader accepts
    // (hardware keys are checked when the run loads the preset).
    for (const SweepPoint& point : points)
      EXPECT_NO_THROW(workloads::load_workload(spec.base_workload, point.overrides(spec)))
          << name << " point " << point.index;
  }
  EXPECT_EQ(seen.size(), expected_points.size());
}

}  // namespace
}  // namespace podsim::studies
