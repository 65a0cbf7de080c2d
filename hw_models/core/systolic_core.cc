// "systolic" core model: matmuls timed by their weight-stationary tile loop on
// the MXUs (padding to the tile, double-buffered weight loads, one fill and
// drain per op, core.mxu_sustained_fraction of cycles fed), vector work by VPU
// vregs per cost class, HBM streaming overlapped. The formulas:
// docs/simulator.md#systolic-core-model.
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
