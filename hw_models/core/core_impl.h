// Internal to hw_models/core: factories of the core model implementations and
// the helpers they share. Not part of the public interface.
#pragma once

#include <memory>

#include "hw_models/core/core_model.h"

namespace podsim::hw {

// Registry entries (core_models()), each defined next to its implementation.
extern const CoreModelEntry kSystolicCore;  // systolic_core.cc
extern const CoreModelEntry kRooflineCore;  // roofline_core.cc

struct UnitTimes {
  double mxu_s = 0;
  double vpu_s = 0;
};

double vpu_cycles_per_vreg(const CoreConfig& core, VectorCostClass cost_class);
// Overlaps the unit times with the HBM time of `query` into an OpTiming;
// `add_fixed_costs` adds HBM first-access latency and the op issue overhead.
OpTiming combine_unit_times(const UnitTimes& units, const OpQuery& query,
                            const HardwareConfig& config, bool add_fixed_costs);

}  // namespace podsim::hw
