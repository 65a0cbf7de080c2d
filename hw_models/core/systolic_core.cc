// "systolic" core model: matmuls timed by their weight-stationary tile loop on
// the MXUs, vector work by VPU vregs per cost class, HBM streaming overlapped.
//
// MXU tile loop (weight-stationary, rows x cols array, R = mxu_rows, C = mxu_cols):
//   One operand is stationary: a tile of R contraction elements x C output
//   columns is loaded into an MXU; the other operand streams through it one
//   row of R contraction elements per cycle, so a tile takes `stream` cycles
//   for `stream` rows. Partial sums of successive K tiles accumulate, so the
//   pipeline fills and drains once per op (mxu_fill_drain_cycles ~ R + C).
//   Weight loads are double-buffered: the next tile shifts in while the
//   current one streams, so a tile costs max(stream, weight_load) and only the
//   first load is exposed.
//     tiles  = batch * ceil(K / R) * ceil(N_stationary / C)
//     cycles = ceil(tiles / mxus) * max(stream, load) + load + fill_drain
//   The stationary side is chosen to minimise cycles (rhs stationary streams
//   M rows; lhs stationary streams N rows). Ragged K and N are padded up to
//   the tile, so K = N = 130 costs as K = N = 256. f32 inputs cost
//   core.f32_matmul_passes bf16 passes.
//   Efficiency at large M with K, N multiples of 128 and tiles divisible by
//   the MXU count: B*M*K*N / (mxus*R*C*cycles) -> 1. A real kernel feeds the
//   arrays on core.mxu_sustained_fraction of its cycles (operand pushes,
//   result pops and DMA waits it does not hide): cycles / that fraction.
//
// VPU: elements are processed one vreg (lanes x sublanes) at a time; a vreg
//   costs vpu_cycles.<class> cycles; a device with several TensorCores splits
//   the vregs over their VPUs.
#include <algorithm>
#include <cmath>

#include "hw_models/core/core_impl.h"

namespace podsim::hw {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

double tile_loop_cycles(const CoreConfig& core, int64_t batch, int64_t k, int64_t stationary_width,
                        int64_t stream_rows) {
  const int64_t tiles =
      batch * ceil_div(k, core.mxu_rows) * ceil_div(stationary_width, core.mxu_cols);
  const int64_t tiles_per_mxu = ceil_div(tiles, mxus_per_device(core));
  const double per_tile = std::max(static_cast<double>(stream_rows), core.mxu_weight_load_cycles);
  return static_cast<double>(tiles_per_mxu) * per_tile + core.mxu_weight_load_cycles +
         core.mxu_fill_drain_cycles;
}

class SystolicCore final : public CoreModel {
 public:
  explicit SystolicCore(HardwareConfig config) : config_(std::move(config)) {}
  std::string name() const override { return "systolic"; }

  OpTiming time_op(const OpQuery& query) const override {
    const CoreConfig& core = config_.core;
    UnitTimes units;
    double mxu_cycles = 0;
    for (const auto& m : query.matmuls) mxu_cycles += systolic_matmul_cycles(core, m);
    units.mxu_s = mxu_cycles / core.clock_hz;
    const double vreg_elements = static_cast<double>(core.vpu_lanes * core.vpu_sublanes);
    double vpu_cycles = 0;
    for (const auto& v : query.vector_work) {
      const double vregs = std::ceil(static_cast<double>(v.elements) / vreg_elements);
      vpu_cycles += vregs * vpu_cycles_per_vreg(core, v.cost_class);
    }
    units.vpu_s = vpu_cycles / (core.clock_hz * static_cast<double>(core.tensor_cores_per_device));
    return combine_unit_times(units, query, config_, /*add_fixed_costs=*/true);
  }

 private:
  HardwareConfig config_;
};

}  // namespace

double systolic_matmul_cycles(const CoreConfig& core, const MatmulWork& w) {
  if (w.batch <= 0 || w.m <= 0 || w.k <= 0 || w.n <= 0) return 0;
  const double rhs_stationary = tile_loop_cycles(core, w.batch, w.k, w.n, w.m);
  const double lhs_stationary = tile_loop_cycles(core, w.batch, w.k, w.m, w.n);
  const double passes = w.input == MatmulInputKind::kF32 ? core.f32_matmul_passes : 1.0;
  return passes * std::min(rhs_stationary, lhs_stationary) / core.mxu_sustained_fraction;
}

const CoreModelEntry kSystolicCore{
    CoreModelKind::kSystolic, "systolic", [](const HardwareConfig& config) {
      return std::unique_ptr<CoreModel>(std::make_unique<SystolicCore>(config));
    }};

}  // namespace podsim::hw
