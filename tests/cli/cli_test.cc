// End-to-end checks of the podsim executable: commands listed, exit codes,
// error format (file:line:column), no partial output files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_test_util.h"

namespace {

using Result = podsim::cli_test::MergedRun;
using podsim::cli_test::run_merged;

using podsim::cli_test::source_path;

// Writes an HLO module to <temp>/<dir_name>/<file_name> and returns its path.
std::filesystem::path write_temp_hlo(const std::string& dir_name, const std::string& text,
                                     const std::string& file_name = "m.hlo") {
  auto dir = std::filesystem::temp_directory_path() / dir_name;
  std::filesystem::create_directories(dir);
  auto file = dir / file_name;
  std::ofstream(file) << text;
  return file;
}

TEST(Cli, HelpListsEveryCommandOfTheDesign) {
  Result r = run_merged("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* cmd : {"run", "partition", "sweep", "regress", "hardware"})
    EXPECT_NE(r.output.find(cmd), std::string::npos) << cmd;
}

TEST(Cli, UnknownOptionExits2) {
  Result r = run_merged("partition --no-such-flag x.hlo");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Cli, PropagateOnlyPrintsEveryInstructionWithASharding) {
  Result r = run_merged("partition " + source_path("workloads/examples/transformer_layer_2d.hlo") +
                        " --propagate-only");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("%q = f32[8,16,4,8]{3,2,1,0} dot(%h, %wq)"), std::string::npos);
  EXPECT_NE(r.output.find("sharding={devices=[2,1,4,1]<=[8]}"), std::string::npos);
}

TEST(Cli, BadHloReportsFileLineColumnAndExits2WithoutOutputFile) {
  auto bad = write_temp_hlo("podsim_cli_test",
                            "HloModule m\n\nENTRY %e {\n  %p = f32[4] parameter(0)\n  ROOT %n = "
                            "f32[4] frobnicate(%p)\n}\n",
                            "bad.hlo");
  auto out = bad.parent_path() / "out.hlo";
  std::filesystem::remove(out);
  Result r = run_merged("partition " + bad.string() + " --propagate-only -o " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(bad.string() + ":5:"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(Cli, PropagationToParametersCanBeTurnedOff) {
  // p's only user is tiled [4,1]; by default p takes that tiling, with
  // --no-propagate-to-parameters it stays replicated (XLA's option).
  auto file =
      write_temp_hlo("podsim_cli_no_param_propagation",
                     "HloModule m, num_partitions=4\n\nENTRY %e {\n  %p = f32[8,4] parameter(0)\n"
                     "  ROOT %n = f32[8,4] negate(%p), sharding={devices=[4,1]<=[4]}\n}\n");
  Result on = run_merged("partition " + file.string() + " --propagate-only");
  ASSERT_EQ(on.exit_code, 0) << on.output;
  EXPECT_NE(on.output.find("parameter(0), sharding={devices=[4,1]<=[4]}"), std::string::npos)
      << on.output;
  Result off =
      run_merged("partition " + file.string() + " --propagate-only --no-propagate-to-parameters");
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_NE(off.output.find("parameter(0), sharding={replicated}"), std::string::npos)
      << off.output;
}

TEST(Cli, PropagationTakesShardingsOverDeviceIdsBeyondTheMesh) {
  // {devices=[2,1]0,5} names device 5 on a 2-device mesh: propagation reads
  // ids as labels (n takes p's sharding), partitioning refuses the id.
  auto file = write_temp_hlo(
      "podsim_cli_ids_beyond_mesh",
      "HloModule m\n\nENTRY %e {\n  %p = f32[8,4] parameter(0), sharding={devices=[2,1]0,5}\n"
      "  ROOT %n = f32[8,4] negate(%p)\n}\n");
  Result propagated = run_merged("partition " + file.string() + " --mesh x=2 --propagate-only");
  ASSERT_EQ(propagated.exit_code, 0) << propagated.output;
  EXPECT_NE(propagated.output.find("negate(%p), sharding={devices=[2,1]0,5}"), std::string::npos)
      << propagated.output;
  EXPECT_NE(propagated.output.find("up to 5 but --mesh x=2 has 2 devices"), std::string::npos)
      << propagated.output;
  Result partitioned = run_merged("partition " + file.string() + " --mesh x=2");
  EXPECT_EQ(partitioned.exit_code, 2) << partitioned.output;
  EXPECT_NE(partitioned.output.find("device 5 is out of range"), std::string::npos)
      << partitioned.output;
}

TEST(Cli, MeshMustMatchTheModule) {
  Result r = run_merged("partition " + source_path("workloads/examples/transformer_layer_2d.hlo") +
                        " --propagate-only --mesh x=4,y=4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("num_partitions=8"), std::string::npos) << r.output;
}

TEST(Cli, PartitionVerifyRunsBothProgramsAndReportsOk) {
  Result r = run_merged("partition " + source_path("workloads/examples/transformer_layer_2d.hlo") +
                        " --verify");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verify: ok (8 devices, max abs error"), std::string::npos) << r.output;
  // The per-device program: the layer input shard is f32[4,16,8] (B/2, L, M/4).
  EXPECT_NE(r.output.find("f32[4,16,8]"), std::string::npos);
  // The layer norm's sum over M (split 4 ways on y) is all-reduced within
  // each row of the 2x4 mesh: 2 groups of 4, in iota form.
  EXPECT_NE(r.output.find("all-reduce(%reduce"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("replica_groups=[2,4]<=[8]"), std::string::npos) << r.output;
}

// 2 x f32[8192,8192] dot operands: 1 GiB each as interpreter doubles, so the
// full-shape check is over the default 2 GiB limit.
std::string write_large_dot(const std::string& dir_name) {
  return write_temp_hlo(dir_name,
                        "HloModule m, num_partitions=2\n\nENTRY %e {\n"
                        "  %a = f32[8192,8192] parameter(0), sharding={devices=[2,1]0,1}\n"
                        "  %b = f32[8192,8192] parameter(1), sharding={devices=[1,2]0,1}\n"
                        "  ROOT %d = f32[8192,8192] dot(%a, %b), lhs_contracting_dims={1}, "
                        "rhs_contracting_dims={0}, "
                        "sharding={devices=[2,1]0,1}\n}\n",
                        "large_dot.hlo")
      .string();
}

TEST(Cli, VerifyOverTheLimitChecksReducedShapesAndSaysSo) {
  Result r = run_merged("partition " + write_large_dot("podsim_cli_verify_reduced") + " --verify");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verify: ok at reduced shapes (dims /"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(": f32[8192,8192] -> f32["), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("full shapes need about"), std::string::npos) << r.output;
  // The per-device program written out is the full-shape one.
  EXPECT_NE(r.output.find("f32[4096,8192]"), std::string::npos) << r.output;
}

TEST(Cli, VerifyFullOnlyRefusesInsteadOfReducing) {
  Result r = run_merged("partition " + write_large_dot("podsim_cli_verify_full_only") +
                        " --verify --verify-full-only");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--verify would need about"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("reduced shapes"), std::string::npos) << r.output;
}

TEST(Cli, PartitionWorkloadYamlBuildsTheModelAndVerifies) {
  // small.yaml: a bf16 2-layer model on 8 devices; the forward (with loss)
  // is built from the YAML, partitioned and checked at bf16 tolerance.
  Result r = run_merged("partition " + source_path("workloads/small.yaml") + " --verify");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verify: ok (8 devices"), std::string::npos) << r.output;
  // bf16 sums of 32 terms: 4 x 2^-8 x sqrt(32) = 0.0884 (compiler/spmd/verify.h).
  EXPECT_NE(r.output.find("relative tolerance 0.0883883 of the RMS"), std::string::npos)
      << r.output;
  // The softmax's stop-gradient barrier is gone from the per-device program
  // (no gradient is taken here, as compile() removes it after autodiff).
  EXPECT_EQ(r.output.find("StopGradient"), std::string::npos);
  // --set reaches the workload; --mesh does not apply to it.
  Result layers = run_merged("partition " + source_path("workloads/small.yaml") +
                             " --set model.layers=1 --propagate-only");
  EXPECT_EQ(layers.exit_code, 0) << layers.output;
  EXPECT_EQ(layers.output.find("fwd/layer_1/"), std::string::npos);
  Result mesh = run_merged("partition " + source_path("workloads/small.yaml") + " --mesh x=2");
  EXPECT_EQ(mesh.exit_code, 2);
}

TEST(Cli, PartitionWorkloadYamlTakesItsCompilerSection) {
  // small.yaml's dots are far below XLA's 256 MiB threshold: no windowed
  // loop. At threshold 0 without the overlap test (XLA's rule, size only)
  // its eligible dots become loops of collective-permutes, and the program
  // still computes what the module does.
  const std::string small = "partition " + source_path("workloads/small.yaml");
  Result plain = run_merged(small);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output.find("collective-permute("), std::string::npos);
  Result windowed = run_merged(small +
                               " --set compiler.windowed_einsum.threshold_mib=0"
                               " --set compiler.windowed_einsum.overlap_test=false --verify");
  ASSERT_EQ(windowed.exit_code, 0) << windowed.output;
  EXPECT_NE(windowed.output.find("collective-permute("), std::string::npos);
  EXPECT_NE(windowed.output.find("verify: ok (8 devices"), std::string::npos) << windowed.output;
}

TEST(Cli, HardwareShowPrintsDerivedPeak) {
  Result r = run_merged("hardware show tpuv3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("61.6 TFLOP/s"), std::string::npos) << r.output;
  Result bad = run_merged("hardware show tpuv9");
  EXPECT_EQ(bad.exit_code, 2);
}

TEST(Cli, HardwareListNamesEveryPreset) {
  Result r = run_merged("hardware list");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // tpuv3: 32x32 chips x 2 devices per chip = 2048 devices of 61.6 TFLOP/s.
  EXPECT_NE(r.output.find("tpuv3          2048           61.6"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tpuv4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("32x32"), std::string::npos) << r.output;
}

TEST(Cli, XlaPropagationOptionsAreFlags) {
  // Root tuple (n, e), both from p's [4,1]. XLA's per-leaf output vector
  // true,false keeps leaf 0 tiled and leaf 1 replicated; a parameter vector
  // of false keeps the unannotated q replicated although its user is tiled.
  auto file = write_temp_hlo("podsim_cli_xla_options",
                             "HloModule m, num_partitions=4\n\nENTRY %e {\n"
                             "  %p = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}\n"
                             "  %q = f32[8,4] parameter(1)\n"
                             "  %n = f32[8,4] add(%p, %q)\n"
                             "  %x = f32[8,4] exponential(%p)\n"
                             "  ROOT %t = (f32[8,4], f32[8,4]) tuple(%n, %x)\n}\n");
  Result r = run_merged("partition " + file.string() +
                        " --propagate-only --allow-spmd-sharding-propagation-to-output=true,false"
                        " --allow-spmd-sharding-propagation-to-parameters={false} --is-spmd=false");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("parameter(1), sharding={replicated}"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sharding={{devices=[4,1]<=[4]}, {replicated}}"), std::string::npos)
      << r.output;
  Result bad = run_merged("partition " + file.string() +
                          " --propagate-only --allow-spmd-sharding-propagation-to-output=yes");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("'yes' is not a bool"), std::string::npos) << bad.output;
}

}  // namespace
