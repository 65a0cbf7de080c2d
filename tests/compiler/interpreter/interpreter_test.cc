// The reference interpreter over the reader's form fixtures
// (tests/fixtures/hlo/forms: one small module per XLA opcode, element type or
// syntax form): every fixture whose value is defined runs, on as many devices
// as its HloModule line names; the others are exactly the ones whose ops have
// no defined value, and the interpreter says so by name before running.
#include "compiler/interpreter/interpreter.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/interpreter/cost_estimate.h"
#include "compiler/ir/verifier.h"
#include "tests/fixtures/fixture_paths.h"

namespace podsim::compiler {
namespace {

std::vector<std::string> form_paths() {
  return podsim::testing::hlo_fixture_paths(/*forms_only=*/true);
}

std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

// Fixtures the interpreter refuses up front: ops without a defined value
// (random numbers: rng, rng-bit-generator, stochastic rounding; host output:
// outfeed (infeed_outfeed also has an infeed, which gives seeded data),
// send/recv; a custom-call to an unknown kernel).
const std::set<std::string> kUndefined = {"rng", "stochastic_convert", "infeed_outfeed",
                                          "send_recv", "kept_attributes"};

class FormInterpreter : public ::testing::TestWithParam<std::string> {};

TEST_P(FormInterpreter, RunsEveryFormWithADefinedValue) {
  const Module m = parse_hlo_file(GetParam());
  verify_module(m);
  const std::vector<const Instruction*> blocked = uninterpretable_instructions(m);
  if (kUndefined.count(stem(GetParam()))) {
    EXPECT_FALSE(blocked.empty()) << "expected the interpreter to refuse " << GetParam();
    EXPECT_THROW(check_interpretable(m), UserError);
    return;
  }
  ASSERT_TRUE(blocked.empty()) << GetParam() << ": cannot run " << blocked.front()->name;
  const Computation& entry = m.entry();
  std::vector<Literal> args;
  uint64_t seed = 1;
  for (InstrId id : entry.parameters())
    args.push_back(random_literal(entry.instr(id).shape, seed++));
  const int64_t devices = std::max(m.num_partitions(), m.replica_count());
  if (devices <= 1) {
    const Literal out = evaluate(m, args);
    EXPECT_EQ(out.shape(), entry.root_instr().shape) << GetParam();
  } else {
    const std::vector<Literal> out =
        evaluate_spmd(m, std::vector<std::vector<Literal>>(static_cast<size_t>(devices), args));
    ASSERT_EQ(out.size(), static_cast<size_t>(devices));
    for (const Literal& l : out) EXPECT_EQ(l.shape(), entry.root_instr().shape) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, FormInterpreter, ::testing::ValuesIn(form_paths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return stem(info.param);
                         });

TEST(FormInterpreter, TheUndefinedFormsAllExist) {
  // A renamed fixture must not silently turn the refusal check off.
  std::set<std::string> stems;
  for (const std::string& p : form_paths()) stems.insert(stem(p));
  for (const std::string& s : kUndefined) EXPECT_TRUE(stems.count(s)) << s;
  EXPECT_GE(stems.size(), 30u);
}

}  // namespace
}  // namespace podsim::compiler
