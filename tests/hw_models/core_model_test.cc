// Core model: MXU tile-loop efficiency in closed form, VPU cost classes, HBM
// streaming and the bound classification.
#include <gtest/gtest.h>

#include "hw_models/config.h"
#include "hw_models/core/core_model.h"

namespace podsim::hw {
namespace {

// The registry is what core.model validates against: both implementations,
// each making the model its name says (roofline has no tiling losses, so a
// ragged matmul is faster there than on the systolic model).
TEST(CoreModelRegistry, NamesTheImplementationsAndMakesThem) {
  ASSERT_EQ(core_models().size(), 2u);
  EXPECT_EQ(core_models()[0].name, "systolic");
  EXPECT_EQ(core_models()[1].name, "roofline");
  for (const CoreModelEntry& entry : core_models()) {
    const HardwareConfig config = load_hardware("tpuv3", {{"core.model", std::string(entry.name)}});
    EXPECT_EQ(config.core.model, entry.kind);
    EXPECT_EQ(hardware_value_text(config, "core.model"), entry.name);
    EXPECT_NE(make_core_model(config), nullptr);
  }
}

// The tpuv3 preset with the ideal tile loop (core.mxu_sustained_fraction 1,
// every cycle streams a row): the closed forms below are the loop's own.
HardwareConfig ideal_tpuv3() {
  HardwareConfig config = load_hardware("tpuv3");
  config.core.mxu_sustained_fraction = 1.0;
  return config;
}

double efficiency(const CoreConfig& core, const MatmulWork& w) {
  const double macs = static_cast<double>(w.batch * w.m * w.k * w.n);
  return macs / (static_cast<double>(mxus_per_device(core) * core.mxu_rows * core.mxu_cols) *
                 systolic_matmul_cycles(core, w));
}

TEST(SystolicCore, FullEfficiencyForMultiplesOf128AtLargeM) {
  const CoreConfig core = ideal_tpuv3().core;
  // M=8192, K=N=1024: 8*8 = 64 tiles, 32 per MXU, each streams 8192 rows:
  // cycles = 32*8192 + 128 (first weight load) + 256 (fill/drain) = 262528;
  // ideal = 8192*1024*1024 / (2*16384) = 262144 -> efficiency 0.998537.
  const MatmulWork w{1, 8192, 1024, 1024};
  EXPECT_DOUBLE_EQ(systolic_matmul_cycles(core, w), 262528.0);
  EXPECT_NEAR(efficiency(core, w), 262144.0 / 262528.0, 1e-12);
  EXPECT_GT(efficiency(core, MatmulWork{1, 65536, 4096, 4096}), 0.9999);
}

TEST(SystolicCore, RaggedDimsArePaddedToTiles) {
  const CoreConfig core = ideal_tpuv3().core;
  // M = 2^20, K = N = 130. rhs stationary pads K and N: 2x2 tiles, 2 per MXU
  // streaming 2^20 rows -> efficiency 130^2/256^2 = 0.258. lhs stationary pads
  // only K: 2 * 8192 tiles, 8192 per MXU streaming N = 130 rows:
  // cycles = 8192*130 + 384 = 1065344, efficiency = 2^20*130*130 / (2*16384*1065344)
  // = 0.50763. The model keeps the cheaper orientation.
  const double expected = (1048576.0 * 130 * 130) / (2.0 * 16384 * 1065344);
  EXPECT_NEAR(efficiency(core, MatmulWork{1, 1 << 20, 130, 130}), expected, 1e-9);
  // M = N = 2^12 and K = 130: every orientation pads K -> efficiency 130/256 at size.
  EXPECT_NEAR(efficiency(core, MatmulWork{1, 1 << 14, 130, 1 << 14}), 130.0 / 256, 1e-3);
  // K = 192 (1.5 tiles), N = 1024: efficiency 192/256 = 0.75.
  EXPECT_NEAR(efficiency(core, MatmulWork{1, 1 << 20, 192, 1024}), 0.75, 1e-3);
}

TEST(SystolicCore, ShortStreamsExposeWeightLoads) {
  const CoreConfig core = ideal_tpuv3().core;
  // M = N = 32 < 128 load cycles: each of the 8 K-tiles (K=1024) costs 128
  // cycles, 4 per MXU: cycles = 4*128 + 128 + 256 = 896.
  EXPECT_DOUBLE_EQ(systolic_matmul_cycles(core, MatmulWork{1, 32, 1024, 32}), 896.0);
}

TEST(SystolicCore, StationarySideIsTheCheaperOne) {
  const CoreConfig core = ideal_tpuv3().core;
  // m=128, n=65536: rhs stationary = 512 tiles * max(128,128) -> 256*128;
  // lhs stationary = 1 tile streaming 65536 rows on one MXU. Cheaper: 256*128.
  const MatmulWork w{1, 128, 128, 65536};
  EXPECT_DOUBLE_EQ(systolic_matmul_cycles(core, w), 256.0 * 128 + 128 + 256);
  const MatmulWork t{1, 65536, 128, 128};  // the transpose costs the same
  EXPECT_DOUBLE_EQ(systolic_matmul_cycles(core, t), systolic_matmul_cycles(core, w));
}

TEST(SystolicCore, F32CostsConfiguredPasses) {
  CoreConfig core = load_hardware("tpuv3").core;
  // The preset is XLA's DEFAULT precision (Cloud TPU docs): f32 runs as bf16.
  EXPECT_EQ(core.f32_matmul_passes, 1);
  MatmulWork w{4, 1024, 1024, 1024};
  const double bf16 = systolic_matmul_cycles(core, w);
  w.input = MatmulInputKind::kF32;
  EXPECT_DOUBLE_EQ(systolic_matmul_cycles(core, w), bf16);
  core.f32_matmul_passes = 3;  // HIGH (bf16_3x): three bf16 products
  EXPECT_DOUBLE_EQ(systolic_matmul_cycles(core, w), 3 * bf16);
}

TEST(SystolicCore, SustainedFractionStretchesTheTileLoop) {
  // The presets' fraction, fitted to the calibration rows (docs/reference/
  // hardware.md#core-model-constants).
  EXPECT_EQ(load_hardware("tpuv3").core.mxu_sustained_fraction, 0.92);
  EXPECT_EQ(load_hardware("tpuv4").core.mxu_sustained_fraction, 0.92);
  CoreConfig core = ideal_tpuv3().core;
  // [1,8192,1024,1024] takes 262528 ideal cycles (derivation in
  // FullEfficiencyForMultiplesOf128AtLargeM); fed on 80% of the cycles the
  // loop takes 1/0.8 as long.
  const MatmulWork w{1, 8192, 1024, 1024};
  EXPECT_DOUBLE_EQ(systolic_matmul_cycles(core, w), 262528.0);
  core.mxu_sustained_fraction = 0.8;
  EXPECT_DOUBLE_EQ(systolic_matmul_cycles(core, w), 262528.0 / 0.8);
  HardwareConfig config = load_hardware("tpuv3");
  config.core.mxu_sustained_fraction = 0.5;
  MatmulQuery q;
  q.work = MatmulWork{1, 8192, 8192, 8192};
  EXPECT_NEAR(make_core_model(config)->time_matmul(q).mxu_utilization, 0.5, 0.005);
}

TEST(SystolicCore, LargeMatmulIsMxuBoundNearPeak) {
  const HardwareConfig config = ideal_tpuv3();
  const auto model = make_core_model(config);
  MatmulQuery q;
  q.work = MatmulWork{1, 8192, 8192, 8192};
  const OpTiming t = model->time_matmul(q);
  EXPECT_EQ(t.bound, Bound::kMxu);
  EXPECT_DOUBLE_EQ(t.flops, 2.0 * 8192.0 * 8192.0 * 8192.0);
  EXPECT_GT(t.mxu_utilization, 0.99);
  EXPECT_LE(t.mxu_utilization, 1.0);
}

TEST(SystolicCore, MatrixVectorIsHbmBound) {
  const HardwareConfig config = ideal_tpuv3();
  const auto model = make_core_model(config);
  MatmulQuery q;
  q.work = MatmulWork{1, 8, 8192, 8192};  // weights 8192*8192*2 B = 128 MiB from HBM
  const OpTiming t = model->time_matmul(q);
  EXPECT_EQ(t.bound, Bound::kHbm);
  const double bytes = (8.0 * 8192 + 8192.0 * 8192) * 2 + 8.0 * 8192 * 4;
  EXPECT_DOUBLE_EQ(t.hbm_bytes, bytes);
  EXPECT_DOUBLE_EQ(t.seconds, bytes / 450e9 + config.hbm.latency_s + config.core.op_overhead_s);
}

// A measured v5e matmul: the Pallas TPU matmul guide (jax docs/pallas/tpu/
// matmul, run on a TPU v5e) times XLA's jnp.matmul of bf16 8192 x 8192 x 8192
// at 6.047 ms, 92.3% of the chip's 197 TFLOP/s, Python dispatch included.
// The tpuv5e preset's tile loop: 2 x 8192^3 FLOPs over 4 MXUs of 128x128 at
// 1.5 GHz, fed on 0.92 of the cycles, 1.1e12 / (196.6e12 x 0.92) = 6.08 ms,
// MXU-bound (compulsory HBM traffic 0.4 GB, 0.5 ms). A model that makes this
// matmul HBM-bound on v5e (say, operand strips re-read per output block of
// side 384: 182 FLOPs per byte, 7.4 ms) contradicts the measurement
// (docs/reference/measurements.md, the v5e section).
TEST(SystolicCore, V5eBf16MatmulTakesThePallasGuidesMeasuredTime) {
  const HardwareConfig config = load_hardware("tpuv5e");
  MatmulQuery q;
  q.work = MatmulWork{1, 8192, 8192, 8192};
  q.output_bytes_per_element = 2;
  const OpTiming t = make_core_model(config)->time_matmul(q);
  EXPECT_EQ(t.bound, Bound::kMxu);
  EXPECT_NEAR(t.seconds, 6.047e-3, 0.03 * 6.047e-3);
}

TEST(SystolicCore, VectorOpsByCostClass) {
  const HardwareConfig config = load_hardware("tpuv3");
  const auto model = make_core_model(config);
  // 1M elements = 1024 vregs of 8x128; simple: 1024 cycles; transcendental: 4x.
  VectorQuery q;
  q.work = VectorWork{1 << 20, VectorCostClass::kSimple};
  const OpTiming simple = model->time_vector_op(q);
  EXPECT_DOUBLE_EQ(simple.vpu_seconds, 1024.0 / 940e6);
  EXPECT_EQ(simple.bound, Bound::kVpu);
  q.work.cost_class = VectorCostClass::kTranscendental;
  EXPECT_DOUBLE_EQ(model->time_vector_op(q).vpu_seconds, 4 * 1024.0 / 940e6);
  // Streaming the f32 operand in and out: 8 MiB at 450 GB/s = 18.6 us >> 1.1 us VPU.
  q.bytes_read = q.bytes_written = 4.0 * (1 << 20);
  EXPECT_EQ(model->time_vector_op(q).bound, Bound::kHbm);
}

TEST(SystolicCore, FusedOpReadsOnceAndOverlapsUnits) {
  const HardwareConfig config = load_hardware("tpuv3");
  const auto model = make_core_model(config);
  OpQuery fused;
  fused.matmuls.push_back(MatmulWork{1, 4096, 4096, 4096});
  fused.vector_work.push_back(VectorWork{4096 * 4096, VectorCostClass::kTranscendental});
  fused.hbm_bytes_read = 2.0 * 2 * 4096 * 4096;
  fused.hbm_bytes_written = 2.0 * 4096 * 4096;
  const OpTiming t = model->time_op(fused);
  const double busiest = std::max({t.mxu_seconds, t.vpu_seconds, t.hbm_seconds});
  EXPECT_DOUBLE_EQ(t.seconds, busiest + config.hbm.latency_s + config.core.op_overhead_s);
  EXPECT_EQ(t.bound, Bound::kMxu);
}

TEST(SystolicCore, MemoryOpsAreHbmTime) {
  const HardwareConfig config = load_hardware("tpuv3");
  const auto model = make_core_model(config);
  const OpTiming t =
      model->time_memory_op(MemoryQuery{MemoryOpKind::kDynamicUpdateSlice, 450e6, 450e6});
  // 900 MB through 450 GB/s = 2 ms.
  EXPECT_DOUBLE_EQ(t.hbm_seconds, 2e-3);
  EXPECT_EQ(t.bound, Bound::kHbm);
  EXPECT_EQ(t.flops, 0);
}

TEST(RooflineCore, IsALowerBoundOfSystolic) {
  const HardwareConfig systolic = load_hardware("tpuv3");
  const HardwareConfig roofline = load_hardware("tpuv3", {{"core.model", "roofline"}});
  const auto s = make_core_model(systolic);
  const auto r = make_core_model(roofline);
  EXPECT_EQ(r->name(), "roofline");
  for (int64_t dim : {100, 128, 1000, 4096}) {
    MatmulQuery q;
    q.work = MatmulWork{2, dim, dim, dim};
    EXPECT_LE(r->time_matmul(q).seconds, s->time_matmul(q).seconds) << dim;
  }
  MatmulQuery q;
  q.work = MatmulWork{1, 1024, 1024, 1024};
  // Roofline: 2*2^30 FLOP / 61.6e12 vs 6 MiB / 450e9: MXU 34.9 us > HBM 14.0 us.
  EXPECT_DOUBLE_EQ(r->time_matmul(q).seconds,
                   2.0 * 1024 * 1024 * 1024 / (2.0 * 2 * 128 * 128 * 940e6));
}

}  // namespace
}  // namespace podsim::hw
