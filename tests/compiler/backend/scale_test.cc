// Compile-time scale: a generated Megatron-style MLP stack of ~50k entry
// instructions (each layer: column-parallel dot, bias, tanh, row-parallel
// dot -> all-reduce, residual add) through the whole pipeline. Prints the
// wall time per phase (never asserted) and checks the per-phase results
// stay consistent at size.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <chrono>

#include "compiler/backend/fusion.h"
#include "compiler/backend/memory_plan.h"
#include "compiler/backend/schedule.h"
#include "compiler/compile.h"
#include "tests/compiler/backend/test_util.h"

namespace podsim::compiler {
namespace {

// h [B=16, M=32]; wi [32, 64] split on columns over 8 devices, wo [64, 32]
// split on rows: the second dot contracts a sharded dim -> all-reduce.
std::string mlp_stack_hlo(int layers) {
  std::string params, body;
  int p = 1;
  std::string h = "%x";
  for (int l = 0; l < layers; ++l) {
    params += fmt::format(", wi{0}: f32[32,64], b{0}: f32[64], wo{0}: f32[64,32]", l);
    body += fmt::format(
        "  %wi{0} = f32[32,64] parameter({1}), sharding={{devices=[1,8]<=[8]}}\n"
        "  %b{0} = f32[64] parameter({2}), sharding={{devices=[8]<=[8]}}\n"
        "  %wo{0} = f32[64,32] parameter({3}), sharding={{devices=[8,1]<=[8]}}\n"
        "  %a{0} = f32[16,64] dot({4}, %wi{0}), lhs_contracting_dims={{1}}, "
        "rhs_contracting_dims={{0}}\n"
        "  %bb{0} = f32[16,64] broadcast(%b{0}), dimensions={{1}}\n"
        "  %ab{0} = f32[16,64] add(%a{0}, %bb{0})\n"
        "  %t{0} = f32[16,64] tanh(%ab{0})\n"
        "  %o{0} = f32[16,32] dot(%t{0}, %wo{0}), lhs_contracting_dims={{1}}, "
        "rhs_contracting_dims={{0}}\n"
        "  %h{0} = f32[16,32] add({4}, %o{0})\n",
        l, p, p + 1, p + 2, h);
    p += 3;
    h = fmt::format("%h{}", l);
  }
  return fmt::format(
      "HloModule mlp_stack, num_partitions=8\n"
      "ENTRY %main (x: f32[16,32]{0}) -> f32[16,32] {{\n"
      "  %x = f32[16,32] parameter(0), sharding={{replicated}}\n{1}"
      "  ROOT %out = f32[16,32] copy({2}), sharding={{replicated}}\n}}\n",
      params, body, h);
}

TEST(CompileScale, FiftyThousandInstructionProgram) {
  const int layers = 5600;  // 9 annotated instructions per layer -> 50k
  auto t0 = std::chrono::steady_clock::now();
  Module annotated = parse_hlo(mlp_stack_hlo(layers));
  double parse_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  SpmdProgram program = compile(annotated, CompileOptions{.num_devices = 8});
  const CompileStats& s = program.stats;
  fmt::print(
      "mlp stack: {} annotated / {} partitioned entry instructions, {} fusion groups\n"
      "  parse {:.3f} s, propagate {:.3f} s, partition {:.3f} s, fusion {:.3f} s, schedule {:.3f} "
      "s, "
      "memory {:.3f} s, compile total {:.3f} s; peak {} B\n",
      s.instructions_annotated, s.instructions_partitioned, s.fusion_groups, parse_s,
      s.propagate_wall_s, s.partition_wall_s, s.fusion_wall_s, s.schedule_wall_s, s.memory_wall_s,
      s.total_wall_s, program.memory.peak_bytes);
  EXPECT_GE(s.instructions_annotated, 50000);
  EXPECT_EQ(s.spmd.all_reduces, layers);  // one per row-parallel dot
  // Output fusion per layer: dot a + bias broadcast + add + tanh -> one group;
  // the residual add reads the all-reduce result and fuses on its own or not.
  EXPECT_GE(s.fusion_groups, layers);
  pipeline_test::expect_topological_permutation(
      program.module.entry(), program.schedule[static_cast<size_t>(program.module.entry_id())]);
  EXPECT_EQ(program.memory.at_peak.total(), program.memory.peak_bytes);
}

}  // namespace
}  // namespace podsim::compiler
