// Symmetry classes for full fidelity: the devices that a translation of the torus maps onto each
// other, with everything the engine sees (collective groups and their link loads, link figures,
// per-device chip variants) mapped alike, behave identically; the engine simulates one
// representative per class and runs each orbit of translated collective groups as one fabric job
// carrying all their link loads. What is checked and why it is exact:
// docs/simulator.md#symmetry-classes-full-fidelity
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw_models/system.h"
#include "sim/collective_catalog.h"

namespace podsim::sim {

// One collective spec's groups under the symmetry: the orbits of its groups.
struct SpecOrbits {
  std::vector<int32_t> orbit_of_group;  // per group of the spec
  // Per orbit: its first group, the number of classes with members in its groups (the arrivals a
  // run of it waits for: one representative each), and when it holds several groups their plans
  // merged phase by phase with the link loads concatenated (each group's loads kept as entries).
  std::vector<int32_t> first_group;
  std::vector<int64_t> classes;
  std::vector<char> merged_used;
  std::vector<hw::CollectivePlan> merged;
};

struct SymmetryClasses {
  // True when some translation maps devices onto others (fewer classes than devices); false:
  // simulate every device (`reason` says why).
  bool applied = false;
  std::string note;  // "2048 devices in 2 symmetry classes (...)" or "per device: <reason>"
  std::vector<int64_t> period;           // per chip dim: the translation step used (dim size: none)
  std::vector<int64_t> representatives;  // per class: its lowest program device, ascending
  std::vector<int32_t> class_of_device;  // per program device
  std::vector<int64_t> class_size;       // per class
  std::vector<SpecOrbits> specs;         // per catalog spec (when applied)

  const hw::CollectivePlan& plan(const CollectiveCatalog& catalog, int32_t spec,
                                 int32_t orbit) const;
};

// The classes for the collectives the catalog holds now (every spec the program uses: flatten the
// program first). device_variant: per program device its chip variant (EngineInputs::
// device_variant; -1 = the machine's), empty = all the machine's. spec_names: per spec, an
// op using it (for the reason a translation fails; may be empty).
SymmetryClasses find_symmetry_classes(const hw::System& system, const CollectiveCatalog& catalog,
                                      int64_t devices, const std::vector<int32_t>& device_variant,
                                      const std::vector<std::string>& spec_names = {});

// Per device, with `reason` (when symmetry is switched off or cannot apply for a reason outside
// the machine, e.g. a trace that shows every device).
SymmetryClasses per_device_classes(int64_t devices, const std::string& reason);

}  // namespace podsim::sim
