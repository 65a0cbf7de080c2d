// System assembly: default slice, placement, preset collective algorithm.
#include <gtest/gtest.h>

#include "common/error.h"
#include "hw_models/system.h"

namespace podsim::hw {
namespace {

TEST(System, DefaultSliceAndPlacement) {
  const System system(load_hardware("tpuv3"), MeshLayout{{2, 4}, {}, PlacementOrder::kRowMajor, {}});
  // docs/design.md: 8 TPUv3 cores -> 2x2 chips x 2 cores, no wraparound.
  EXPECT_EQ(system.slice().physical_shape(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(system.topology().num_devices(), 8);
  EXPECT_EQ(system.placement().core_at({1, 3}), 7);
  EXPECT_EQ(system.core().name(), "systolic");
  EXPECT_THROW(System(load_hardware("tpuv3"), MeshLayout{{4, 4}, {2, 2, 2}, PlacementOrder::kRowMajor, {}}),
               UserError);
}

TEST(System, PresetAlgorithmReplacesAuto) {
  // Mesh [16] on 8 chips x 2: with the preset forced to "ring", an auto
  // all-gather plan uses the unidirectional ring.
  const System ring(load_hardware("tpuv3", {{"ici.collective_algorithm", "ring"}}),
                    MeshLayout{{16}, {}, PlacementOrder::kRowMajor, {}});
  CollectiveQuery q;
  q.kind = CollectiveKind::kAllGather;
  q.bytes_per_device = 1e6;
  q.group = ring.placement().core_of_device;
  EXPECT_EQ(ring.plan(q).algorithm, CollectiveAlgorithm::kRing);
  const System automatic(load_hardware("tpuv3"), MeshLayout{{16}, {}, PlacementOrder::kRowMajor, {}});
  EXPECT_EQ(automatic.plan(q).algorithm, CollectiveAlgorithm::kBidirectionalRing);
}

}  // namespace
}  // namespace podsim::hw
