// known_trip_count on hand-written while loops; every expected count is
// worked out from the loop's constants in the comment next to it.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/ir/trip_count.h"

// Tests spell loops as designated initializers naming only what differs from
// the default loop; GCC would warn about every member left out.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace podsim::compiler {
namespace {

// A counted loop: state (counter, limit, acc); the condition compares
// `cond_lhs` with `cond_rhs` (HLO names in the condition) in direction `dir`.
struct LoopText {
  int64_t start = 0;
  int64_t limit = 10;
  int64_t step = 1;
  std::string dir = "LT";
  std::string cond_lhs = "%i";
  std::string cond_rhs = "%limit";
  bool limit_in_state = false;  // compare against state element 1 instead of a constant
  std::string backend_config;
};

std::string loop_hlo(const LoopText& t) {
  std::string limit_def = t.limit_in_state ? "%limit = s32[] get-tuple-element(%state), index=1"
                                           : fmt::format("%limit = s32[] constant({})", t.limit);
  return fmt::format(
      R"(HloModule loop
%cond (state: (s32[], s32[], f32[4])) -> pred[] {{
  %state = (s32[], s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  {limit_def}
  ROOT %c = pred[] compare({lhs}, {rhs}), direction={dir}
}}
%body (s: (s32[], s32[], f32[4])) -> (s32[], s32[], f32[4]) {{
  %s = (s32[], s32[], f32[4]) parameter(0)
  %i.1 = s32[] get-tuple-element(%s), index=0
  %n.1 = s32[] get-tuple-element(%s), index=1
  %step = s32[] constant({step})
  %next = s32[] add(%step, %i.1)
  %acc = f32[4] get-tuple-element(%s), index=2
  %acc.next = f32[4] add(%acc, %acc)
  ROOT %out = (s32[], s32[], f32[4]) tuple(%next, %n.1, %acc.next)
}}
ENTRY %main (x: f32[4]) -> f32[4] {{
  %start = s32[] constant({start})
  %n = s32[] constant({limit})
  %x = f32[4] parameter(0)
  %init = (s32[], s32[], f32[4]) tuple(%start, %n, %x)
  %loop = (s32[], s32[], f32[4]) while(%init), condition=%cond, body=%body{config}
  ROOT %r = f32[4] get-tuple-element(%loop), index=2
}}
)",
      fmt::arg("limit_def", limit_def), fmt::arg("lhs", t.cond_lhs), fmt::arg("rhs", t.cond_rhs),
      fmt::arg("dir", t.dir), fmt::arg("step", t.step), fmt::arg("start", t.start),
      fmt::arg("limit", t.limit),
      fmt::arg("config", t.backend_config.empty() ? "" : ", backend_config=" + t.backend_config));
}

std::optional<int64_t> trip_count_of(const LoopText& t) {
  Module m = parse_hlo(loop_hlo(t));
  const Computation& entry = m.entry();
  return known_trip_count(m, entry.instr(entry.find("loop")));
}

TEST(KnownTripCount, LessThanConstant) {
  // i = 0; i < 10; i += 1 -> 10 iterations.
  EXPECT_EQ(trip_count_of({}), 10);
  // i = 3; i < 10; i += 2 -> i = 3,5,7,9 -> 4 iterations (ceil(7/2)).
  EXPECT_EQ(trip_count_of({.start = 3, .step = 2}), 4);
  // i = 12; i < 10 -> never runs.
  EXPECT_EQ(trip_count_of({.start = 12}), 0);
}

TEST(KnownTripCount, LessEqualAndDescending) {
  // i = 0; i <= 10; i += 5 -> i = 0,5,10 -> 3.
  EXPECT_EQ(trip_count_of({.step = 5, .dir = "LE"}), 3);
  // i = 10; i > 0; i += -3 -> i = 10,7,4,1 -> 4.
  EXPECT_EQ(trip_count_of({.start = 10, .limit = 0, .step = -3, .dir = "GT"}), 4);
  // i = 10; i >= 0; i += -5 -> i = 10,5,0 -> 3.
  EXPECT_EQ(trip_count_of({.start = 10, .limit = 0, .step = -5, .dir = "GE"}), 3);
  // i = 2; i != 8; i += 2 -> i = 2,4,6 -> 3.
  EXPECT_EQ(trip_count_of({.start = 2, .limit = 8, .step = 2, .dir = "NE"}), 3);
}

TEST(KnownTripCount, CounterOnTheRightAndLimitInState) {
  // limit > i is i < limit: i = 0..6 with limit 7 -> 7.
  EXPECT_EQ(trip_count_of({.limit = 7, .dir = "GT", .cond_lhs = "%limit", .cond_rhs = "%i"}), 7);
  // Limit carried unchanged in state element 1, initialised to constant 6 -> 6.
  EXPECT_EQ(trip_count_of({.limit = 6, .limit_in_state = true}), 6);
}

TEST(KnownTripCount, UnknownLoops) {
  // i != 7 stepping by 2 from 0 never hits 7: not a counted loop.
  EXPECT_EQ(trip_count_of({.limit = 7, .step = 2, .dir = "NE"}), std::nullopt);
  // Counting down while i < 10 never ends.
  EXPECT_EQ(trip_count_of({.step = -1}), std::nullopt);
  // The condition does not read the counter (compares the limit with itself).
  EXPECT_EQ(trip_count_of({.cond_lhs = "%limit", .cond_rhs = "%limit"}), std::nullopt);
}

TEST(KnownTripCount, BackendConfigFallback) {
  // Pattern unknown (never-ending NE), but XLA's analysis result is attached.
  EXPECT_EQ(trip_count_of({.limit = 7,
                           .step = 2,
                           .dir = "NE",
                           .backend_config = R"({"known_trip_count":{"n":"12"}})"}),
            12);
}

TEST(KnownTripCount, CounterReadThroughATupleOfTheState) {
  // A copied body (autodiff's recording loop) reads the counter as
  // get-tuple-element(tuple(state elements...), 0): still i = 0; i < 10; i += 1 -> 10.
  Module m = parse_hlo(R"(HloModule loop
%cond (state: (s32[], f32[4])) -> pred[] {
  %state = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %limit = s32[] constant(10)
  ROOT %c = pred[] compare(%i, %limit), direction=LT
}
%body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s = (s32[], f32[4]) parameter(0)
  %i.0 = s32[] get-tuple-element(%s), index=0
  %a.0 = f32[4] get-tuple-element(%s), index=1
  %t = (s32[], f32[4]) tuple(%i.0, %a.0)
  %i.1 = s32[] get-tuple-element(%t), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i.1, %one)
  %a.1 = f32[4] get-tuple-element(%t), index=1
  %a.2 = f32[4] add(%a.1, %a.1)
  ROOT %out = (s32[], f32[4]) tuple(%next, %a.2)
}
ENTRY %main (x: f32[4]) -> f32[4] {
  %start = s32[] constant(0)
  %x = f32[4] parameter(0)
  %init = (s32[], f32[4]) tuple(%start, %x)
  %loop = (s32[], f32[4]) while(%init), condition=%cond, body=%body
  ROOT %r = f32[4] get-tuple-element(%loop), index=1
}
)");
  const Computation& entry = m.entry();
  EXPECT_EQ(known_trip_count(m, entry.instr(entry.find("loop"))), 10);
}

TEST(KnownTripCount, FixtureLoop) {
  // tests/fixtures/hlo/while_loop.hlo: i from 0, i < constant(10), i += 1 -> 10.
  Module m = parse_hlo_file(std::string(PODSIM_SOURCE_DIR) + "/tests/fixtures/hlo/while_loop.hlo");
  const Computation& entry = m.entry();
  Instruction copy = entry.instr(entry.find("loop"));
  copy.attrs.backend_config.clear();  // the count must come from the loop itself
  EXPECT_EQ(known_trip_count(m, copy), 10);
  // Told the computation holding it, the same count.
  EXPECT_EQ(known_trip_count(m, entry, copy), 10);
}

TEST(KnownTripCount, PatternBeforeBackendConfig) {
  // i = 0; i < 10; i += 1 -> 10 trips, whatever a backend_config claims.
  EXPECT_EQ(trip_count_of({.backend_config = R"({"known_trip_count":{"n":"7"}})"}), 10);
}

}  // namespace
}  // namespace podsim::compiler
