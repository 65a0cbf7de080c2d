// Running a sweep (studies/sweep.h), the parts that need no child: which
// points share a compile, and how groups are cut for -j. Running points
// through real children is tested in tests/cli/sweep_cli_test.cc.
#include "studies/sweep.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "studies/sweep_spec.h"

namespace podsim::studies {
namespace {

using Variant = std::vector<std::pair<std::string, std::string>>;

TEST(GroupByCompile, PointsDifferingOnlyInHardwareKeysShareAGroup) {
  const SweepSpec spec = parse_sweep(
      "base: w.yaml\nset: {training.remat: none}\ngrid:\n  model.layers: [1, 2]\n  "
      "hardware.hbm.bandwidth: [9e11, 1.8e12]\n",
      "s.yaml");
  const std::vector<CompileGroup> groups = group_by_compile(spec, expand_sweep(spec));
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].compile_overrides,
            (std::vector<std::string>{"training.remat=none", "model.layers=1"}));
  EXPECT_EQ(groups[0].points, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(groups[0].variants,
            (std::vector<Variant>{{{"hbm.bandwidth", "9e11"}}, {{"hbm.bandwidth", "1.8e12"}}}));
  EXPECT_EQ(groups[1].compile_overrides,
            (std::vector<std::string>{"training.remat=none", "model.layers=2"}));
  EXPECT_EQ(groups[1].points, (std::vector<size_t>{2, 3}));
}

TEST(GroupByCompile, AWholePresetOrAValueWithASpaceStaysInSet) {
  // `hardware=tpuv4` is applied in order with the hardware.* keys by --set:
  // those points keep every key in --set, so each is a group of its own.
  const SweepSpec preset = parse_sweep(
      "base: w.yaml\nset: {hardware: tpuv4}\ngrid:\n  hardware.hbm.bandwidth: [1, 2]\n", "s.yaml");
  const std::vector<CompileGroup> by_preset = group_by_compile(preset, expand_sweep(preset));
  ASSERT_EQ(by_preset.size(), 2u);
  EXPECT_EQ(by_preset[1].compile_overrides,
            (std::vector<std::string>{"hardware=tpuv4", "hardware.hbm.bandwidth=2"}));
  EXPECT_EQ(by_preset[1].variants, (std::vector<Variant>{{}}));
  // A serve line is whitespace-separated words.
  const SweepSpec spaced =
      parse_sweep("base: w.yaml\ngrid:\n  hardware.core.model: ['a b', c]\n", "s.yaml");
  const std::vector<CompileGroup> by_space = group_by_compile(spaced, expand_sweep(spaced));
  ASSERT_EQ(by_space.size(), 2u);
  EXPECT_EQ(by_space[0].compile_overrides, (std::vector<std::string>{"hardware.core.model=a b"}));
  EXPECT_EQ(by_space[1].compile_overrides, (std::vector<std::string>{}));
  EXPECT_EQ(by_space[1].variants, (std::vector<Variant>{{{"core.model", "c"}}}));
}

CompileGroup group_of(const std::string& name, size_t first, size_t count) {
  CompileGroup g{{name}, {}, {}};
  for (size_t i = first; i < first + count; ++i) {
    g.points.push_back(i);
    g.variants.push_back({{"k", std::to_string(i)}});
  }
  return g;
}

TEST(SplitForJobs, TheLargestGroupsAreCutIntoContiguousPartsOfTwoOrMore) {
  // Groups of 6 and 2 points for 4 jobs: the 6 is cut in two (3 + 3), then
  // in three (2 + 2 + 2) while the 2 cannot be cut; 4 groups, one per job.
  const std::vector<CompileGroup> split =
      split_for_jobs({group_of("a", 0, 6), group_of("b", 6, 2)}, 4);
  ASSERT_EQ(split.size(), 4u);
  EXPECT_EQ(split[0].points, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(split[1].points, (std::vector<size_t>{2, 3}));
  EXPECT_EQ(split[2].points, (std::vector<size_t>{4, 5}));
  EXPECT_EQ(split[2].variants, (std::vector<Variant>{{{"k", "4"}}, {{"k", "5"}}}));
  EXPECT_EQ(split[2].compile_overrides, (std::vector<std::string>{"a"}));
  EXPECT_EQ(split[3].points, (std::vector<size_t>{6, 7}));
  // More jobs than parts of two: no part smaller than two points.
  EXPECT_EQ(split_for_jobs({group_of("a", 0, 6), group_of("b", 6, 2)}, 10).size(), 4u);
  // As many groups as jobs: unchanged.
  EXPECT_EQ(split_for_jobs({group_of("a", 0, 6), group_of("b", 6, 2)}, 2).size(), 2u);
}

// A misspelt key in set, grid or zip is refused at its line of the sweep
// file, with the workload reader's suggestion; a valid sweep passes, also
// one whose first point is an error row of its own (a mesh that does not
// cover the devices is the point's business, not the check's).
SweepSpec spec_over_small(const std::string& body) {
  const std::string base = std::string(PODSIM_SOURCE_DIR) + "/workloads/small.yaml";
  return parse_sweep("name: t\nbase: " + base + "\n" + body, "s.yaml");
}

void expect_refused_at(const std::string& body, int line, int column, const std::string& message,
                       const std::string& hint) {
  const SweepSpec spec = spec_over_small(body);
  try {
    check_sweep_keys(spec, expand_sweep(spec));
    FAIL() << "expected a UserError for " << body;
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "s.yaml");
    EXPECT_EQ(e.location().line, line);
    EXPECT_EQ(e.location().column, column);
    EXPECT_NE(e.message().find(message), std::string::npos) << e.message();
    EXPECT_NE(e.hint().find(hint), std::string::npos) << e.hint();
  }
}

TEST(CheckSweepKeys, AnUnknownKeyIsRefusedWhereTheSweepFileWritesIt) {
  expect_refused_at("grid:\n  model.layres: [2, 3]\n", 4, 3, "unknown key 'layres' in 'model'",
                    "did you mean 'layers'?");
  expect_refused_at("set: {training.optimzer: adam}\ngrid:\n  model.layers: [2]\n", 3, 7,
                    "unknown key 'optimzer' in 'training'", "did you mean 'optimizer'?");
  expect_refused_at("zip:\n  model.layers: [2, 3]\n  hardware.ici.link_bandwith: [1e11, 2e11]\n", 5,
                    3, "unknown hardware key 'ici.link_bandwith'",
                    "did you mean 'hardware.ici.link_bandwidth'?");
}

TEST(CheckSweepKeys, ValidKeysPassEvenWhenAPointIsAnErrorRow) {
  const SweepSpec good =
      spec_over_small("grid:\n  model.layers: [2, 3]\n  hardware.ici.link_bandwidth: [1e11]\n");
  EXPECT_NO_THROW(check_sweep_keys(good, expand_sweep(good)));
  const SweepSpec bad_mesh = spec_over_small("grid:\n  mesh.axes.x: [3]\n");
  EXPECT_NO_THROW(check_sweep_keys(bad_mesh, expand_sweep(bad_mesh)));
}

}  // namespace
}  // namespace podsim::studies
