// "roofline" core model: time = max(matmul FLOPs / MXU peak, vector elements x
// cost / VPU rate, bytes / HBM bandwidth). No tiling, padding, fill/drain,
// latency, issue overhead or sustained-rate loss (core.mxu_sustained_fraction):
// the upper bound the systolic model approaches.
#include "hw_models/core/core_impl.h"

namespace podsim::hw {
namespace {

class RooflineCore final : public CoreModel {
 public:
  explicit RooflineCore(HardwareConfig config) : config_(std::move(config)) {}
  std::string name() const override { return "roofline"; }

  OpTiming time_op(const OpQuery& query) const override {
    const CoreConfig& core = config_.core;
    UnitTimes units;
    for (const auto& m : query.matmuls) {
      const double passes = m.input == MatmulInputKind::kF32 ? core.f32_matmul_passes : 1.0;
      units.mxu_s += passes * matmul_flops(m) / peak_matmul_flops_per_device(core);
    }
    for (const auto& v : query.vector_work)
      units.vpu_s += static_cast<double>(v.elements) * vpu_cycles_per_vreg(core, v.cost_class) /
                     vpu_elements_per_second(core);
    return combine_unit_times(units, query, config_, /*add_fixed_costs=*/false);
  }

 private:
  HardwareConfig config_;
};

}  // namespace

const CoreModelEntry kRooflineCore{
    CoreModelKind::kRoofline, "roofline", [](const HardwareConfig& config) {
      return std::unique_ptr<CoreModel>(std::make_unique<RooflineCore>(config));
    }};

}  // namespace podsim::hw
