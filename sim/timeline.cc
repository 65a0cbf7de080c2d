// Names for the Timeline's enums (timeline.h).
#include "sim/timeline.h"

namespace podsim::sim {

const char* fidelity_name(Fidelity fidelity) {
  switch (fidelity) {
    case Fidelity::kFast:
      return "fast";
    case Fidelity::kFull:
      return "full";
  }
  return "?";
}

}  // namespace podsim::sim
