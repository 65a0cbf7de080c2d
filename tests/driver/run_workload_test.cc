// compile_workload + simulate_compiled (driver/run_workload.h): one
// compiled program simulated on hardware variants, in process.
#include "driver/run_workload.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "reports/formats.h"
#include "tests/test_files.h"

namespace podsim::driver {
namespace {

using reports::CollectiveStats;
using reports::Report;

RunRequest small_request(std::vector<std::string> overrides = {}) {
  RunRequest request;
  request.workload_path = test_files::source_path("workloads/small.yaml");
  request.overrides = std::move(overrides);
  return request;
}

TEST(SimulateCompiled, WithoutVariantItIsTheRunAndAVariantIsTheRunWithThatSet) {
  const RunRequest request = small_request();
  CompiledWorkload compiled = compile_workload(request);
  EXPECT_EQ(simulate_compiled(compiled, request).report.step_time_s,
            run_workload(request).report.step_time_s);
  const RunResult slower = simulate_compiled(compiled, request, {{"core.op_overhead_s", "2e-6"}});
  EXPECT_EQ(slower.report.step_time_s,
            run_workload(small_request({"hardware.core.op_overhead_s=2e-6"})).report.step_time_s);
  EXPECT_GT(slower.report.step_time_s, run_workload(request).report.step_time_s);
}

TEST(CompileWorkload, AScannedStackSaysItsBodyIsRecomputedWhateverTheRematChoice) {
  // small.yaml trains with remat none; scanned, its layer body is still
  // recomputed in the backward loop (docs/loops.md), which the report names.
  const Report unrolled = run_workload(small_request()).report;
  const Report scanned = run_workload(small_request({"model.layer_loop=scan"})).report;
  EXPECT_EQ(scanned.compile.remat_applied,
            "full (scan body); elsewhere " + unrolled.compile.remat_applied);
  EXPECT_GT(scanned.compile.recomputed_flops, unrolled.compile.recomputed_flops);
}

// Collective-permutes the step executes (the windowed loops' steps).
int64_t permutes(const Report& report) {
  for (const CollectiveStats& c : report.collectives)
    if (c.kind == "collective-permute") return c.count;
  ADD_FAILURE() << "no collective-permute row";
  return -1;
}

// A variant whose hardware changes the compile options is compiled for
// itself: its report is the one of a run with that --set, not of the
// program compiled for the workload's own hardware.
void expect_variant_is_its_own_run(const std::vector<std::string>& workload_sets,
                                   const std::string& key, const std::string& value) {
  const RunRequest request = small_request(workload_sets);
  CompiledWorkload compiled = compile_workload(request);
  std::vector<std::string> with_key = workload_sets;
  with_key.push_back("hardware." + key + "=" + value);
  const Report variant = simulate_compiled(compiled, request, {{key, value}}).report;
  const Report separate = run_workload(small_request(with_key)).report;
  EXPECT_EQ(variant.step_time_s, separate.step_time_s);
  EXPECT_EQ(variant.executed_flops_per_step, separate.executed_flops_per_step);
  EXPECT_EQ(variant.compile.recomputed_flops, separate.compile.recomputed_flops);
  EXPECT_EQ(permutes(variant), permutes(separate));
}

TEST(SimulateCompiled, RematAutoVariantOfTheHbmCapacityIsCompiledForIt) {
  // A 256-wide, 128-token version of the small model peaks at ~7.5 MB per
  // device without recomputation; remat: auto in 4 MB recomputes (full).
  const std::vector<std::string> sets = {"model.model_dim=256", "model.ffn_dim=1024",
                                         "model.seq_len=128", "training.remat=auto"};
  const RunRequest request = small_request(sets);
  CompiledWorkload compiled = compile_workload(request);
  ASSERT_EQ(compiled.program.stats.remat_applied, "none");
  const RunResult variant = simulate_compiled(compiled, request, {{"hbm.capacity_bytes", "4e6"}});
  EXPECT_GT(variant.report.compile.recomputed_flops, 0);
  expect_variant_is_its_own_run(sets, "hbm.capacity_bytes", "4e6");
  // The same capacity, or any key the compiler does not weigh, reuses the program.
  EXPECT_EQ(simulate_compiled(compiled, request, {{"hbm.capacity_bytes", "17179869184"}})
                .report.compile.recomputed_flops,
            0);
}

TEST(SimulateCompiled, WindowedEinsumOverlapTestWeighsTheVariantsLinkRate) {
  // With the size threshold at 0 every eligible dot of the small model may
  // be windowed, but none passes the overlap test at tpuv3's 8.2e10 B/s (a step's
  // tiny dot cannot hide a permute); at 1e14 B/s (0.74 flops per byte) they do.
  const std::vector<std::string> sets = {"compiler.windowed_einsum.threshold_mib=0"};
  const RunRequest request = small_request(sets);
  CompiledWorkload compiled = compile_workload(request);
  EXPECT_EQ(permutes(simulate_compiled(compiled, request).report), 0);
  EXPECT_GT(permutes(simulate_compiled(compiled, request, {{"ici.link_bandwidth", "1e14"}}).report),
            0);
  expect_variant_is_its_own_run(sets, "ici.link_bandwidth", "1e14");
  // Without the overlap test the link rate does not enter the compile.
  expect_variant_is_its_own_run(
      {"compiler.windowed_einsum.threshold_mib=0", "compiler.windowed_einsum.overlap_test=false"},
      "ici.link_bandwidth", "1e14");
}

TEST(SimulateCompiled, KeepsTheLatestVariantProgramsForReuse) {
  const RunRequest request = small_request({"compiler.windowed_einsum.threshold_mib=0"});
  CompiledWorkload compiled = compile_workload(request);
  const double fast_links =
      simulate_compiled(compiled, request, {{"ici.link_bandwidth", "1e14"}}).report.step_time_s;
  ASSERT_EQ(compiled.variant_programs.size(), 1u);
  // Keys the compiler does not weigh and the compiled hardware itself add none.
  simulate_compiled(compiled, request, {{"core.op_overhead_s", "2e-6"}});
  simulate_compiled(compiled, request, {{"ici.link_bandwidth", "8.2e10"}});  // tpuv3's own rate
  EXPECT_EQ(compiled.variant_programs.size(), 1u);
  // The same variant again reuses its program: same answer, nothing added.
  EXPECT_EQ(
      simulate_compiled(compiled, request, {{"ici.link_bandwidth", "1e14"}}).report.step_time_s,
      fast_links);
  EXPECT_EQ(compiled.variant_programs.size(), 1u);
  // Further link rates: at most kVariantProgramsKept, the latest first.
  for (const char* rate : {"2e14", "3e14", "4e14"})
    simulate_compiled(compiled, request, {{"ici.link_bandwidth", rate}});
  ASSERT_EQ(compiled.variant_programs.size(), CompiledWorkload::kVariantProgramsKept);
  EXPECT_EQ(compiled.variant_programs.front().options.spmd.windowed_einsum_min_flops_per_byte,
            hw::peak_matmul_flops_per_device(compiled.system->config().core) / (4e14 * 1.0));
  EXPECT_EQ(
      simulate_compiled(compiled, request, {{"ici.link_bandwidth", "1e14"}}).report.step_time_s,
      fast_links);
}

TEST(SpmdOptionsFromWorkload, OverlapTestWeighsPeakAgainstOneLinkDirection) {
  const hw::HardwareConfig tpuv3 = hw::load_hardware("tpuv3");
  workloads::CompilerSpec spec;
  const compiler::SpmdOptions options = spmd_options(spec, tpuv3);
  // hardware.md: 2 MXUs x 128 x 128 MACs x 2 flops x 940 MHz = 61.6e12 flop/s
  // over 8.2e10 B/s x 1 per link direction (hardware.md#ici-link-rate): 751
  // flops per byte.
  EXPECT_NEAR(options.windowed_einsum_min_flops_per_byte,
              2.0 * 128 * 128 * 2 * 940e6 / (8.2e10 * 1.0), 1e-6);
  EXPECT_EQ(options.windowed_einsum_threshold_bytes, int64_t{256} << 20);
  EXPECT_EQ(options.windowed_einsum_max_devices, 32);
  EXPECT_FALSE(options.windowed_einsum_bidirectional);
  hw::HardwareConfig faster_links = tpuv3;
  faster_links.ici.link_bandwidth *= 2;
  EXPECT_NEAR(spmd_options(spec, faster_links).windowed_einsum_min_flops_per_byte,
              options.windowed_einsum_min_flops_per_byte / 2, 1e-9);
  spec.windowed_einsum = {
      .threshold_mib = 0.5, .max_devices = 8, .bidirectional = true, .overlap_test = false};
  const compiler::SpmdOptions set = spmd_options(spec, tpuv3);
  EXPECT_EQ(set.windowed_einsum_min_flops_per_byte, 0);  // XLA's rule: size alone
  EXPECT_EQ(set.windowed_einsum_threshold_bytes, 512 * 1024);
  EXPECT_EQ(set.windowed_einsum_max_devices, 8);
  EXPECT_TRUE(set.windowed_einsum_bidirectional);
}

// The reshard plans' per-collective latency in bytes is the hardware's hop
// latency x link rate: TPUv3 1e-6 s x 8.2e10 B/s = 8.2e4 (the compiler's
// standalone default, 1e5, is the same product at the 1e11 B/s rate podsim
// used before; the shipped workloads compile to the same programs at
// either); slower hops make each collective dearer in bytes, slower links
// cheaper.
TEST(SpmdOptionsFromWorkload, CollectiveLatencyIsHopLatencyTimesLinkRate) {
  const hw::HardwareConfig tpuv3 = hw::load_hardware("tpuv3");
  const workloads::CompilerSpec spec;
  EXPECT_DOUBLE_EQ(spmd_options(spec, tpuv3).collective_latency_bytes, 1e-6 * 8.2e10);
  hw::HardwareConfig slow_hops = tpuv3;
  slow_hops.ici.hop_latency_s = 3e-6;
  EXPECT_DOUBLE_EQ(spmd_options(spec, slow_hops).collective_latency_bytes, 3e-6 * 8.2e10);
  hw::HardwareConfig slower_links = tpuv3;
  slower_links.ici.link_bandwidth = 4.5e10;
  EXPECT_DOUBLE_EQ(spmd_options(spec, slower_links).collective_latency_bytes, 1e-6 * 4.5e10);
}

TEST(RunOptions, FidelityNames) {
  EXPECT_EQ(fidelity_from_name("fast"), sim::Fidelity::kFast);
  EXPECT_EQ(fidelity_from_name("full"), sim::Fidelity::kFull);
  EXPECT_THROW(fidelity_from_name("exact"), UserError);
}

double collective_seconds(const Report& report, const std::string& kind) {
  for (const CollectiveStats& c : report.collectives)
    if (c.kind == kind) return c.seconds;
  ADD_FAILURE() << "no " << kind << " row";
  return 0;
}

// The mechanism of the TPU v4 calibration row (docs/calibration.md): MaxText's
// 2023-04 run made only all-gathers asynchronous, so the compute stream waits
// for every reduce-scatter (and all-reduce) whole. A synchronous collective is
// exposed for all of its busy time (one collective of a kind at a time), so
// the exposed communication is at least the reduce-scatters' and all-reduces'
// busy time, and the step is longer than with every collective asynchronous.
TEST(RunWorkload, MaxTextV4FlagsExposeEveryReduceScatterWhole) {
  const std::vector<std::string> small = {"model.layers=4", "model.seq_len=256",
                                          "model.global_batch=64"};
  RunRequest flags;
  flags.workload_path = test_files::source_path("workloads/maxtext_22b_v4_128.yaml");
  flags.overrides = small;
  RunRequest all_async = flags;
  all_async.overrides.push_back(
      "compiler.async_collectives=[all-gather, reduce-scatter, all-reduce, all-to-all, "
      "collective-permute]");
  const Report sync = run_workload(flags).report;
  const Report async = run_workload(all_async).report;
  const double blocking =
      collective_seconds(sync, "reduce-scatter") + collective_seconds(sync, "all-reduce");
  ASSERT_GT(collective_seconds(sync, "reduce-scatter"), 0);
  EXPECT_GE(sync.time.exposed_communication_s, blocking * (1 - 1e-9));
  EXPECT_GT(sync.step_time_s, async.step_time_s);
  EXPECT_LT(async.time.exposed_communication_s, sync.time.exposed_communication_s);
}

// The loop flags of the TPU v5e calibration rows (measurements.md, "The runs'
// XLA flags as compiler options"): no all-gather pipeliner, so each scanned
// iteration gathers its own weights, starting when the iteration starts. The
// 16B layer's smallest weight gather (q, k, v, output: 5120 x 32 x 256 bf16,
// V = 83,886,080 B) over the 16x16 torus, one dim after the other on
// bidirectional rings of 2 x 5e10 B/s: 15 V/256 / 1e11 + 15 V/16 / 1e11 =
// 0.8356 ms. Before its first matmul an iteration runs only the RMS norm; at
// one sequence per device ([1, 2048, 5120]) that is at most one f32 read and
// one f32 write, 2 x 4 x 10,485,760 B / 819e9 B/s = 0.1024 ms. So each of the
// 32 forward iterations exposes at least 0.7332 ms, 23.5 ms per step; with
// the pipeliner the gathers start in the iteration before and the step
// exposes less than that.
TEST(RunWorkload, MaxTextV5eFlagsExposeEachLayersFirstWeightGather) {
  RunRequest flags;
  flags.workload_path = test_files::source_path("workloads/maxtext_16b_v5e_256.yaml");
  flags.overrides = {"model.global_batch=256"};
  RunRequest pipelined = flags;
  pipelined.overrides.push_back("compiler.loops.pipelined_all_gather=true");
  const Report as_run = run_workload(flags).report;
  const Report with_pipeliner = run_workload(pipelined).report;
  const double gather = 15.0 * 83886080 / 256 / 1e11 + 15.0 * 83886080 / 16 / 1e11;
  const double norm = 2.0 * 4 * 10485760 / 819e9;
  const double bound = 32 * (gather - norm);
  EXPECT_GE(as_run.time.exposed_communication_s, bound);
  EXPECT_LT(with_pipeliner.time.exposed_communication_s, bound);
  EXPECT_GT(as_run.step_time_s, with_pipeliner.step_time_s);
}

// mesh.dcn: {data: 1} is one slice: the run is the run without it. Two slices of the same mesh
// (data parallel across them) double the devices and the tokens; the step is the one-slice step
// plus what the gradient reduction across slices adds (so tokens/s at most doubles), and the
// report shows DCN time. TPU v3 has no DCN figure: the run names the key to set.
TEST(RunWorkload, OneSliceIsNoDcnAxisAndTwoSlicesAddDcnTime) {
  const Report plain = run_workload(small_request()).report;
  const Report one = run_workload(small_request({"mesh.dcn={data: 1}"})).report;
  EXPECT_EQ(one.step_time_s, plain.step_time_s);
  EXPECT_EQ(one.tokens_per_second, plain.tokens_per_second);
  EXPECT_EQ(one.time.dcn_busy_s, 0);
  const std::vector<std::string> two_slices = {"mesh.dcn={data: 2}", "model.global_batch=16",
                                               "sharding.activations=[[data, x], null, y]",
                                               "hardware.dcn.bandwidth_per_chip=1e9"};
  const Report two = run_workload(small_request(two_slices)).report;
  EXPECT_EQ(two.devices, 2 * plain.devices);
  EXPECT_GT(two.time.dcn_busy_s, 0);
  EXPECT_GE(two.step_time_s, plain.step_time_s);
  EXPECT_LE(two.tokens_per_second, 2 * plain.tokens_per_second * (1 + 1e-12));
  EXPECT_THROW(run_workload(small_request({"mesh.dcn={data: 2}"})), UserError);
}

// Two slices, the weights split inside a slice only (x, y) and updated as
// split (no weight-update sharding), the batch over data x x (MaxText's
// FSDP with data parallelism across slices): a matrix gradient is a partial
// sum over data x x wanted split over x, so it is reduce-scattered inside
// the slice and its shard all-reduced across the slices (one member per
// slice: devices d and d + 8), never all-reduced whole over both slices.
TEST(CompileWorkload, GradientsAcrossSlicesReduceScatterInSliceThenAllReduceTheShard) {
  const CompiledWorkload compiled = compile_workload(small_request(
      {"mesh.dcn={data: 2}", "model.global_batch=64", "sharding.activations=[[data, x], null, y]",
       "hardware.dcn.bandwidth_per_chip=1e9", "training.weight_update_sharding=false"}));
  const compiler::Module& program = compiled.program.module;
  ASSERT_EQ(program.num_partitions(), 16);
  int64_t split_sums = 0;
  for (const compiler::Computation& c : program.computations())
    for (const compiler::Instruction& in : c.instructions()) {
      const bool gradient =
          in.op_name.rfind("bwd/", 0) == 0 && in.op_name.find("/ffn/w") != std::string::npos;
      if (in.opcode != compiler::Opcode::kAllReduce || !gradient) continue;
      // Its operand is the reduce-scatter of the same gradient.
      const compiler::Instruction& operand = c.instr(in.operands[0]);
      EXPECT_EQ(operand.opcode, compiler::Opcode::kReduceScatter) << in.name << " " << in.op_name;
      EXPECT_EQ(operand.op_name, in.op_name);
      for (const auto& group : in.attrs.replica_groups.expand(16))
        EXPECT_EQ(group, (std::vector<int64_t>{group[0], group[0] + 8})) << in.op_name;
      ++split_sums;
    }
  EXPECT_EQ(split_sums, 6);  // 2 layers x (wi_0, wi_1, wo)
}

}  // namespace
}  // namespace podsim::driver

namespace podsim::driver {
namespace {

TEST(RunWorkload, OneSlowChipTakesThePerDeviceAnswerAndTheReportSaysSo) {
  // small.yaml: 8 TPUv3 devices on 2x2 chips x 2, row-major, so chip 1 holds devices 2 and 3.
  // At half clock its devices compute longer: the step grows, fast falls back to full, and
  // every format names the chip, its devices and the value against the machine's.
  const Report base = run_workload(small_request()).report;
  const RunResult slow = run_workload(small_request({"hardware.chips.1.core.clock_hz=4.7e8"}));
  const Report& r = slow.report;
  const std::string line = "chip 1 (devices 2, 3) core.clock_hz 4.7e8 of 9.4e8";
  EXPECT_EQ(r.fidelity, "full");
  EXPECT_EQ(r.devices_simulated, 8);
  EXPECT_EQ(r.per_device, line);
  EXPECT_NE(r.fallback_reason.find("chips differ"), std::string::npos) << r.fallback_reason;
  EXPECT_GT(r.step_time_s, base.step_time_s);
  EXPECT_NE(
      reports::format_report(r, reports::Format::kTable)
          .find("(per-device: " + line + "; every device simulated with its own compute time)"),
      std::string::npos);
  EXPECT_NE(
      reports::format_report(r, reports::Format::kJson).find("\"per_device\": \"" + line + "\""),
      std::string::npos);
  const reports::FlatReport flat = reports::report_flat_fields(r);
  EXPECT_EQ(flat.text("per_device"), line);  // the csv column
  // A run whose chips are all alike has no per_device key (its columns are unchanged).
  EXPECT_EQ(reports::format_report(base, reports::Format::kJson).find("\"per_device\""),
            std::string::npos);
  // A compiled workload simulated with the override as a variant is the same run.
  const RunRequest request = small_request();
  CompiledWorkload compiled = compile_workload(request);
  EXPECT_EQ(
      simulate_compiled(compiled, request, {{"chips.1.core.clock_hz", "4.7e8"}}).report.step_time_s,
      r.step_time_s);
}

TEST(RunWorkload, FullWithOneSlowChipEqualsEveryIteration) {
  // The scanned small model (a loop over its layers) at full fidelity with one slow chip (half
  // clock, or half HBM bandwidth): the steady-state run, its short programs costed on the chip's
  // own config too, equals the every-iteration run within 0.1 % (the steady test checks every
  // device's iteration time; simulator.cc).
  struct Case {
    std::string set, line;
  };
  for (const Case& c :
       {Case{"hardware.chips.2.core.clock_hz=4.7e8",
             "chip 2 (devices 4, 5) core.clock_hz 4.7e8 of 9.4e8"},
        Case{"hardware.chips.2.hbm.bandwidth=2.25e11",
             "chip 2 (devices 4, 5) hbm.bandwidth 2.25e11 of 4.5e11"}}) {
    SCOPED_TRACE(c.set);
    RunRequest steady = small_request({"model.layer_loop=scan", "model.layers=12", c.set});
    steady.fidelity = sim::Fidelity::kFull;
    RunRequest every = steady;
    every.steady_state_loops = false;
    const RunResult a = run_workload(steady);
    const RunResult b = run_workload(every);
    EXPECT_NE(a.report.approximation_note.find("12 iterations simulated for their first 2"),
              std::string::npos)
        << a.report.approximation_note;
    EXPECT_TRUE(b.report.approximation_note.empty()) << b.report.approximation_note;
    EXPECT_NEAR(a.report.step_time_s, b.report.step_time_s, 1e-3 * b.report.step_time_s);
    EXPECT_EQ(a.report.per_device, c.line);
  }
}

}  // namespace
}  // namespace podsim::driver
