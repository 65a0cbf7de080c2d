// Text for `podsim hardware show PRESET`: every preset value with its source,
// then figures derived from them and from the pod's link list, so users can
// check them against the published figures (docs/reference/hardware.md);
// and the table of `podsim hardware list`.
#pragma once

#include <cstdint>
#include <string>

#include "hw_models/config.h"

namespace podsim::hw {

struct DerivedFigures {
  double peak_flops_per_device = 0;  // bf16 matmul: 2 x MXUs x rows x cols x clock
  double peak_flops_per_chip = 0;
  double peak_flops_per_pod = 0;
  double hbm_bytes_per_device = 0;
  double hbm_bandwidth_per_device = 0;
  int64_t pod_chips = 0;
  int64_t pod_devices = 0;
  int64_t ici_links_per_chip = 0;  // physical (bidirectional) links
  // Sum of one-way bandwidth over every directed ICI link of the full pod:
  // the bandwidth an all-reduce keeping every link busy in both directions
  // moves. (Cloud TPU docs' "all-reduce bandwidth per Pod".)
  double pod_all_reduce_bandwidth = 0;
  double bisection_bandwidth = 0;  // one way, weakest halving cut of the pod
};

DerivedFigures derive_figures(const HardwareConfig& config);

std::string describe_hardware(const HardwareConfig& config);

// `podsim hardware list`: each shipped preset with the figures that tell them
// apart (per device: peak matmul rate and HBM; the pod's chips and torus) and
// its calibration status.
std::string describe_presets();

}  // namespace podsim::hw
