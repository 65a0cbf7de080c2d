// Symmetry class detection (sim/symmetry.h): which translations of the torus map devices onto
// each other alike, on tori, meshes without wraparound, uneven placements and per-device chip
// variants.
#include "sim/symmetry.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "sim/op_cost.h"
#include "sim/step_program.h"
#include "tests/sim/sim_test_util.h"

namespace podsim::sim {
namespace {

using testing::make_system;
using testing::program_from_hlo;

constexpr const char* kSum = R"(%sum (x: bf16[], y: bf16[]) -> bf16[] {
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add = bf16[] add(%x, %y)
})";

// An all-reduce over rows ([4,4]<=[16]: 4 consecutive devices) and an all-gather over columns
// ([4,4]<=[4,4]T(1,0)) of 16 devices.
std::string rows_and_columns() {
  return fmt::format(R"(HloModule rc, num_partitions=16
{0}
ENTRY %main (p: bf16[1024,1024]) -> bf16[4096,1024] {{
  %p = bf16[1024,1024]{{1,0}} parameter(0)
  %ar = bf16[1024,1024]{{1,0}} all-reduce(%p), channel_id=1, replica_groups=[4,4]<=[16], use_global_device_ids=true, to_apply=%sum
  ROOT %ag = bf16[4096,1024]{{1,0}} all-gather(%ar), channel_id=2, replica_groups=[4,4]<=[4,4]T(1,0), dimensions={{0}}, use_global_device_ids=true
}})",
                     kSum);
}

// The catalog filled by flattening the program (as sim::simulate does), then the classes.
SymmetryClasses classes_of(const std::string& hlo, const hw::System& system,
                           const std::vector<int32_t>& variant = {}) {
  const compiler::SpmdProgram program = program_from_hlo(hlo);
  OpCostModel costs(system.core(), &program.module);
  CollectiveCatalog catalog(system, program.num_devices);
  const StepProgram steps = flatten_program(FlattenInputs{program, costs, catalog});
  std::vector<std::string> names(static_cast<size_t>(catalog.size()));
  for (const OpInfo& op : steps.ops)
    if (op.collective >= 0) names[static_cast<size_t>(op.collective)] = op.name;
  return find_symmetry_classes(system, catalog, program.num_devices, variant, names);
}

hw::System torus(const std::string& wrap, int64_t per_chip, std::vector<int64_t> physical,
                 hw::MeshLayout layout = {}) {
  layout.mesh_shape = {16};
  layout.physical = std::move(physical);
  return hw::System(
      hw::load_hardware("tpuv3", {{"ici.pod_dims", fmt::format("[{}, 4]", 16 / 4 / per_chip)},
                                  {"ici.pod_wraparound", wrap},
                                  {"chip.devices_per_chip", std::to_string(per_chip)}}),
      layout);
}

TEST(Symmetry, TorusWithOneDevicePerChipIsOneClass) {
  // 4x4 torus, one device per chip, row-major: each row group is a ring on dim 1's links, each
  // column group a ring on dim 0's; a unit step along either dim maps rings onto rings and their
  // neighbour-to-neighbour routes onto the translated routes, so every device is in one class.
  const SymmetryClasses c = classes_of(rows_and_columns(), torus("[true, true]", 1, {4, 4, 1}));
  ASSERT_TRUE(c.applied) << c.note;
  EXPECT_EQ(c.representatives, std::vector<int64_t>{0});
  EXPECT_EQ(c.class_size, std::vector<int64_t>{16});
  EXPECT_EQ(c.period, (std::vector<int64_t>{1, 1}));
  // Each spec's 4 groups are translates of each other: one orbit, every member in class 0.
  for (const SpecOrbits& s : c.specs) {
    EXPECT_EQ(s.first_group.size(), 1u);
    EXPECT_EQ(s.classes, std::vector<int64_t>{1});
  }
  EXPECT_NE(c.note.find("16 devices in 1 symmetry class"), std::string::npos) << c.note;
}

TEST(Symmetry, TwoDevicesPerChipSplitIntoClassesByCoreAndGroupPeriod) {
  // 2x4 chips x 2 devices, row-major: the rows [4,4]<=[16] are 4 consecutive devices, i.e. both
  // cores of two neighbouring chips along dim 1 ({(0,0),(0,1)}, {(0,2),(0,3)}, ...). A unit
  // step along dim 1 maps a row onto chips (0,1),(0,2), no row; a step of 2 maps rows onto rows;
  // along dim 0 a unit step does. A translation never maps a chip's first core onto its second:
  // classes = 2 cores x 2 (dim 1 coordinate mod 2) = 4, representatives 0, 1 (chip (0,0)) and
  // 2, 3 (chip (0,1)), 4 devices each. Each row holds one device of every class, so a row's run
  // waits for 4 representatives.
  const SymmetryClasses c = classes_of(rows_and_columns(), torus("[true, true]", 2, {2, 4, 2}));
  ASSERT_TRUE(c.applied) << c.note;
  EXPECT_EQ(c.period, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c.representatives, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(c.class_size, (std::vector<int64_t>{4, 4, 4, 4}));
  ASSERT_FALSE(c.specs.empty());
  EXPECT_EQ(c.specs.front().classes, std::vector<int64_t>{4});
}

TEST(Symmetry, MeshWithoutWraparoundIsPerDevice) {
  // 4x4 chips without wraparound: the link from the last chip of a row to the next has no
  // translate, along either dim and at any step.
  const SymmetryClasses c = classes_of(rows_and_columns(), torus("[false, false]", 1, {4, 4, 1}));
  EXPECT_FALSE(c.applied);
  EXPECT_EQ(c.representatives.size(), 16u);
  EXPECT_NE(c.note.find("per device"), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("no wraparound"), std::string::npos) << c.note;
}

TEST(Symmetry, UnevenExplicitPlacementIsPerDevice) {
  // Row-major except devices 1 and 4 swapped: device 0's row {0,1,2,3} sits on cores
  // {0,4,2,3}, which no translation maps onto another row's cores (rows 1..3 are translates of
  // a straight row), so no translation keeps the groups.
  hw::MeshLayout layout;
  layout.order = hw::PlacementOrder::kExplicit;
  layout.explicit_devices = {0, 4, 2, 3, 1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const SymmetryClasses c =
      classes_of(rows_and_columns(), torus("[true, true]", 1, {4, 4, 1}, layout));
  EXPECT_FALSE(c.applied);
  EXPECT_NE(c.note.find("all-reduce 'ar'"), std::string::npos) << c.note;
}

TEST(Symmetry, DifferingChipVariantBreaksSymmetryWhereItDiffers) {
  const hw::System system = torus("[true, true]", 1, {4, 4, 1});
  // One device on a chip variant: every non-zero translation moves it onto a machine's chip.
  std::vector<int32_t> variant(16, -1);
  variant[5] = 0;
  const SymmetryClasses one = classes_of(rows_and_columns(), system, variant);
  EXPECT_FALSE(one.applied);
  EXPECT_NE(one.note.find("device 5, on a chip with per-chip overrides (variant 0)"), std::string::npos) << one.note;
  // Every chip of an even row (dim 0 coordinate) on variant 0, of an odd row on variant 1: steps
  // of 2 along dim 0 and of 1 along dim 1 keep the variants, so the classes are the even and the
  // odd rows (two variants differ as a variant and the machine's chip do).
  for (int64_t d = 0; d < 16; ++d) variant[static_cast<size_t>(d)] = (d / 4) % 2 == 0 ? 0 : 1;
  const SymmetryClasses rows = classes_of(rows_and_columns(), system, variant);
  ASSERT_TRUE(rows.applied) << rows.note;
  EXPECT_EQ(rows.period, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(rows.representatives, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(rows.class_of_device[9], 0);   // row 2
  EXPECT_EQ(rows.class_of_device[13], 1);  // row 3
}

// A collective-permute of 16 devices laid row-major on the 4x4 torus, pairs d -> target(d).
std::string permute(int (*target)(int)) {
  std::string pairs;
  for (int d = 0; d < 16; ++d) pairs += fmt::format("{}{{{},{}}}", d ? "," : "", d, target(d));
  return fmt::format(R"(HloModule cp, num_partitions=16
ENTRY %main (p: bf16[1024,1024]) -> bf16[1024,1024] {{
  %p = bf16[1024,1024]{{1,0}} parameter(0)
  ROOT %cp = bf16[1024,1024]{{1,0}} collective-permute(%p), channel_id=1, source_target_pairs={{{}}}
}})",
                     pairs);
}

TEST(Symmetry, PermuteKeepsSymmetryOnlyWhenItsPairsTranslateOntoItsPairs) {
  const hw::System system = torus("[true, true]", 1, {4, 4, 1});
  // Each device sends to the next of its row, cyclically: a step along either dim maps the pair
  // (r,c) -> (r,c+1) onto (r',c') -> (r',c'+1), a pair: one class.
  const SymmetryClasses shift =
      classes_of(permute([](int d) { return d / 4 * 4 + (d + 1) % 4; }), system);
  EXPECT_TRUE(shift.applied) << shift.note;
  EXPECT_EQ(shift.representatives.size(), 1u);
  // The transpose (r,c) -> (c,r): a step along dim 1 maps the pair 0 -> 0 onto 1 -> 1, which is
  // not a pair (1 sends to 4); along dim 0 onto 4 -> 4 (4 sends to 1); likewise at step 2.
  const SymmetryClasses transpose =
      classes_of(permute([](int d) { return d % 4 * 4 + d / 4; }), system);
  EXPECT_FALSE(transpose.applied);
  EXPECT_NE(transpose.note.find("collective-permute 'cp': its source-target pairs translated are "
                                "not its pairs"),
            std::string::npos)
      << transpose.note;
}

}  // namespace
}  // namespace podsim::sim
