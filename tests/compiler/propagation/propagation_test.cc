// XLA's propagation options on the engine (PropagationOptions: the
// allow_spmd_sharding_propagation_to_output / _to_parameters vectors and
// is_spmd). Modules written for these tests; expected shardings derived in
// comments ("<=[4]" is devices 0..3 in order).
#include "common/error.h"
#include "tests/compiler/propagation/test_util.h"

namespace podsim::compiler::testing {
namespace {

PropagationOptions xla(std::vector<bool> to_output, std::vector<bool> to_parameters) {
  PropagationOptions o;
  o.allow_to_output = std::move(to_output);
  o.allow_to_parameters = std::move(to_parameters);
  return o;
}

// Both result leaves come from p0's [4,1] tiling through elementwise ops.
const char* kTwoOutputs = R"(
  %p0 = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  %a = f32[8,4] negate(%p0)
  %b = f32[8,4] exponential(%p0)
  ROOT %t = (f32[8,4], f32[8,4]) tuple(%a, %b)
)";

TEST(PropagationOptions, OutputFlagsApplyPerResultLeaf) {
  // {true, false}: leaf 0 keeps the propagated [4,1]; leaf 1 may not be
  // chosen and had no annotation -> replicated. The values feeding it keep
  // their tiling (only the result is restored).
  Module m = propagate_text(module(kTwoOutputs), xla({true, false}, {true}));
  EXPECT_EQ(sharding_of(m, "t"), canon("{{devices=[4,1]<=[4]}, {replicated}}"));
  EXPECT_EQ(sharding_of(m, "b"), canon("{devices=[4,1]<=[4]}"));
  // One value for the whole result: both leaves.
  Module all = propagate_text(module(kTwoOutputs), xla({true}, {true}));
  EXPECT_EQ(sharding_of(all, "t"), canon("{{devices=[4,1]<=[4]}, {devices=[4,1]<=[4]}}"));
  Module none = propagate_text(module(kTwoOutputs), xla({false}, {true}));
  EXPECT_EQ(sharding_of(none, "t"), canon("{{replicated}, {replicated}}"));
}

TEST(PropagationOptions, OutputTakesATilingOnlyIfItDividesEvenly) {
  // One flag per result leaf: the slice's 6 rows over 4 tiles, 6 % 4 != 0
  // -> replicated; the 8-row negate divides -> tiled.
  Module m = propagate_text(module(R"(
  %p0 = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  %n = f32[8,4] negate(%p0)
  %s = f32[6,4] slice(%n), slice={[0:6], [0:4]}
  ROOT %t = (f32[8,4], f32[6,4]) tuple(%n, %s)
)"),
                            xla({true, true}, {true}));
  EXPECT_EQ(sharding_of(m, "t"), canon("{{devices=[4,1]<=[4]}, {replicated}}"));
  // podsim's default (no vectors) tiles the uneven leaf and pads.
  Module d = propagate_text(module(R"(
  %p0 = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  %n = f32[8,4] negate(%p0)
  ROOT %s = f32[6,4] slice(%n), slice={[0:6], [0:4]}
)"));
  EXPECT_EQ(sharding_of(d, "s"), canon("{devices=[4,1]<=[4]}"));
}

const char* kTwoParameters = R"(
  %p0 = f32[8] parameter(0), sharding={replicated}
  %p1 = f32[8] parameter(1)
  %a = f32[8] add(%p0, %p1), sharding={devices=[4]<=[4]}
  ROOT %n = f32[8] negate(%a)
)";

TEST(PropagationOptions, AnAllowedParameterAnnotationIsNotFinal) {
  // Allowed: p0's {replicated} is replaced by the user's [4] (more tiles);
  // podsim's default keeps every annotation.
  Module m = propagate_text(module(kTwoParameters), xla({true}, {true, true}));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{devices=[4]<=[4]}"));
  Module d = propagate_text(module(kTwoParameters));
  EXPECT_EQ(sharding_of(d, "p0"), canon("{replicated}"));
}

TEST(PropagationOptions, ParameterFlagsApplyPerParameter) {
  // {true, false}: p0 may be refined, p1 keeps no sharding (replicated).
  Module m = propagate_text(module(kTwoParameters), xla({true}, {true, false}));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{replicated}"));
}

TEST(PropagationOptions, AnUnevenPropagatedParameterTilingBecomesReplicated) {
  // p1 (6 elements) is annotated [2] rep 2 (6 % 2 == 0); the add offers [4]
  // (more tiles, taken during propagation) but 6 % 4 != 0, so p1 ends
  // replicated, as in XLA. With one flag for two parameters XLA makes no
  // such check and p1 keeps the uneven [4].
  const std::string text = module(R"(
  %p0 = f32[6] parameter(0)
  %p1 = f32[6] parameter(1), sharding={devices=[2,2]<=[4] last_tile_dim_replicate}
  %a = f32[6] add(%p0, %p1), sharding={devices=[4]<=[4]}
  ROOT %n = f32[6] negate(%a)
)");
  Module m = propagate_text(text, xla({false}, {false, true}));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{replicated}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{replicated}"));
  Module one = propagate_text(text, xla({false}, {true}));
  EXPECT_EQ(sharding_of(one, "p1"), canon("{devices=[4]<=[4]}"));
}

TEST(PropagationOptions, SingleTupleParameterTakesOneFlagPerLeaf) {
  // One tuple parameter, two flags: leaf 0 stays replicated, leaf 1 takes
  // its user's [4].
  Module m = propagate_text(module(R"(
  %p = (f32[8], f32[8]) parameter(0)
  %g0 = f32[8] get-tuple-element(%p), index=0
  %g1 = f32[8] get-tuple-element(%p), index=1
  %a0 = f32[8] negate(%g0), sharding={devices=[4]<=[4]}
  %a1 = f32[8] negate(%g1), sharding={devices=[4]<=[4]}
  ROOT %t = (f32[8], f32[8]) tuple(%a0, %a1)
)"),
                            xla({false}, {false, true}));
  EXPECT_EQ(sharding_of(m, "p"), canon("{{replicated}, {devices=[4]<=[4]}}"));
}

TEST(PropagationOptions, AVectorOfAnotherLengthAppliesAnyTrueToAll) {
  // Three values for two parameters fit neither reading: as XLA, "any true"
  // (here true) applies to both; {false, false} on the one-result output
  // likewise means false.
  Module m = propagate_text(module(kTwoParameters), xla({false, false}, {false, true, false}));
  EXPECT_EQ(sharding_of(m, "p0"), canon("{devices=[4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "p1"), canon("{devices=[4]<=[4]}"));
  EXPECT_EQ(sharding_of(m, "n"), canon("{replicated}"));
}

TEST(PropagationOptions, NonSpmdDoesNotMergePartialShardings) {
  // The two partial tilings combine into [2,2] 0,2,1,3 in SPMD mode
  // (propagation_rules_test PartialShardingOnElementwise); without SPMD
  // partial shardings never merge, so the add keeps the first operand's.
  const std::string text = module(R"(
  %p0 = f32[4,4] parameter(0), sharding={devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}
  %p1 = f32[4,4] parameter(1), sharding={devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}
  ROOT %add = f32[4,4] add(%p0, %p1)
)");
  PropagationOptions non_spmd;
  non_spmd.is_spmd = false;
  EXPECT_EQ(sharding_of(propagate_text(text, non_spmd), "add"),
            canon("{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}"));
  EXPECT_EQ(sharding_of(propagate_text(text), "add"), canon("{devices=[2,2]0,2,1,3}"));
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

TEST(PropagationFrontendAttributes, ShardyMeshInEitherPrintedForm) {
  // Both fixtures name mesh "data"=1 x "expert"=4 (one quoted and escaped,
  // one an unquoted brace value) and shard p's dim 0 over "expert": 4 tiles
  // on devices 0..3, which reach e through the elementwise ops.
  for (const char* stem : {"frontend_attributes_quoted", "frontend_attributes_unquoted"}) {
    Module m =
        parse_hlo_file(std::string(PODSIM_SOURCE_DIR "/tests/fixtures/hlo/") + stem + ".hlo");
    propagate_shardings(m);
    EXPECT_EQ(sharding_of(m, "e"), canon("{devices=[4,1]<=[4]}")) << stem;
  }
}

}  // namespace
}  // namespace podsim::compiler::testing

namespace podsim::compiler::testing {
namespace {

TEST(PropagationAnnotations, XlasCsePreventionShardingIsNotAnAnnotation) {
  // b's [4] in order 0..3 carries XLA's CSE-prevention mark: it is dropped,
  // and b takes its user's reversed order (3,2,1,0) like any unannotated value.
  Module m = propagate_text(module(R"(
  %p = f32[] parameter(0), sharding={replicated}
  %b = f32[8] broadcast(%p), dimensions={}, sharding={devices=[4]0,1,2,3 metadata={op_name="_sharding_propagation_cse_prevention"}}
  %a = f32[8] add(%b, %b)
  ROOT %c = f32[8] copy(%a), sharding={devices=[4]3,2,1,0}
)"));
  EXPECT_EQ(sharding_of(m, "b"), canon("{devices=[4]3,2,1,0}"));
  EXPECT_EQ(sharding_of(m, "a"), canon("{devices=[4]3,2,1,0}"));
}

}  // namespace
}  // namespace podsim::compiler::testing
