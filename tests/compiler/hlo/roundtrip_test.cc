// Round trip over every fixture in tests/fixtures/hlo: the fixture parses,
// passes the IR verifier, and print(parse(x)) is a fixed point:
// print(parse(print(parse(x)))) == print(parse(x)). The fixtures together
// must use every opcode of compiler/ir/opcode.h.
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/ir/verifier.h"
#include "tests/fixtures/fixture_paths.h"

namespace podsim::compiler {
namespace {

std::vector<std::string> fixture_paths() {
  return podsim::testing::hlo_fixture_paths(/*forms_only=*/false);
}

class FixtureRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureRoundTrip, PrintParseIsAFixedPointAndVerifies) {
  Module first = parse_hlo_file(GetParam());
  EXPECT_NO_THROW(verify_module(first)) << GetParam();
  std::string printed = print_hlo(first);
  Module second = parse_hlo(printed, "printed");
  std::string reprinted = print_hlo(second);
  EXPECT_EQ(printed, reprinted);
  // Structure survives: same computations, sizes, entry and partition counts.
  ASSERT_EQ(first.computation_count(), second.computation_count());
  EXPECT_EQ(first.entry().name(), second.entry().name());
  EXPECT_EQ(first.num_partitions(), second.num_partitions());
  EXPECT_EQ(first.entry().size(), second.entry().size());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureRoundTrip, ::testing::ValuesIn(fixture_paths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::filesystem::path path(info.param);
                           std::string stem = path.stem().string();
                           if (path.parent_path().filename() == "forms") stem = "forms_" + stem;
                           std::replace(stem.begin(), stem.end(), '-', '_');
                           return stem;
                         });

TEST(FixtureCoverage, AtLeastThirtyFixturesUsingEveryOpcode) {
  auto paths = fixture_paths();
  EXPECT_GE(paths.size(), 30u);
  std::set<Opcode> used;
  for (const auto& path : paths) {
    Module m = parse_hlo_file(path);
    for (const auto& comp : m.computations())
      for (const auto& instr : comp.instructions()) used.insert(instr.opcode);
  }
  for (int i = 0; i < opcode_count(); ++i)
    EXPECT_TRUE(used.count(static_cast<Opcode>(i)))
        << "no fixture uses " << opcode_name(static_cast<Opcode>(i));
}

TEST(ExampleWorkload, TransformerLayerParsesAndVerifies) {
  Module m = parse_hlo_file(PODSIM_SOURCE_DIR "/workloads/examples/transformer_layer_2d.hlo");
  EXPECT_NO_THROW(verify_module(m));
  std::string printed = print_hlo(m);
  EXPECT_EQ(print_hlo(parse_hlo(printed)), printed);
  EXPECT_EQ(m.num_partitions(), 8);
}

}  // namespace
}  // namespace podsim::compiler
