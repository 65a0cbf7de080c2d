// A forward written as HLO text (as a user's exported model would be):
// sharded weights, metadata op_names, XLA-style instruction names that
// collide with the names the transforms generate. The step verifies,
// prints and reparses, and its gradient matches finite differences.
#include <gtest/gtest.h>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/training/training_step.h"
#include "gradient_check.h"

namespace podsim::compiler::testing {
namespace {

constexpr const char* kForward = R"(
HloModule mlp, num_partitions=8

add.0 {
  x = f64[] parameter(0)
  y = f64[] parameter(1)
  ROOT add.1 = f64[] add(x, y)
}

ENTRY main {
  w = f64[8,4] parameter(0), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}, metadata={op_name="param/w"}
  x = f64[2,8] parameter(1), metadata={op_name="input/x"}
  dot.0 = f64[2,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="fwd/layer_0/dot"}
  tanh.0 = f64[2,4] tanh(dot.0), metadata={op_name="fwd/layer_0/act"}
  constant.0 = f64[] constant(0)
  ROOT reduce.0 = f64[] reduce(tanh.0, constant.0), dimensions={0,1}, to_apply=add.0, metadata={op_name="fwd/loss"}
}
)";

TEST(HloForward, StepFromHloTextVerifiesAndRoundTrips) {
  Module forward = parse_hlo(kForward);
  check_gradients(forward, default_args(forward));
  TrainingStepOptions options;
  options.mesh = DeviceMesh({{"x", 2}, {"y", 4}});
  options.remat = RematKind::kFull;
  TrainingStep step = build_training_step(forward, options);
  verify_module(step.module);
  EXPECT_EQ(step.module.num_partitions(), 8);
  Module reparsed = parse_hlo(print_hlo(step.module));
  verify_module(reparsed);
  EXPECT_EQ(reparsed.entry().size(), step.module.entry().size());
  // The weight is split {-, y} (device x*4 + y holds column tile y) and
  // replicated over x: x goes to dim 0 for the update (8 rows per device >
  // 4/4 columns), and the v_row slot [8] keeps x, replicated over y.
  const Instruction& v_row = step.module.entry().instr(step.module.entry().parameters()[2]);
  EXPECT_EQ(v_row.op_name, "opt_state/w/v_row");
  EXPECT_EQ(parse_sharding(*v_row.sharding),
            parse_sharding("{devices=[2,4]<=[8] last_tile_dim_replicate}"));
}

}  // namespace
}  // namespace podsim::compiler::testing
