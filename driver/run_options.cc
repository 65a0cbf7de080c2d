// Names of run options as the command line spells them (driver/run_workload.h).
// Kept apart from run_workload.cc so that users of these helpers need not
// link the whole compile + simulate pipeline.
#include <fmt/format.h>

#include "common/error.h"
#include "driver/run_workload.h"

namespace podsim::driver {

sim::Fidelity fidelity_from_name(const std::string& name) {
  if (name == "fast") return sim::Fidelity::kFast;
  if (name == "full") return sim::Fidelity::kFull;
  throw UserError(fmt::format("unknown fidelity '{}'", name), "use fast or full");
}

}  // namespace podsim::driver
