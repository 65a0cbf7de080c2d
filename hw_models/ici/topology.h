// ICI topology of a slice of a TPU pod: chips on a 1-D/2-D/3-D mesh or torus
// (wraparound per dim), several devices per chip sharing the chip's links,
// directed links with bandwidth and latency, dimension-order routing.
//
// Numbering. Chips are numbered row-major over their coordinates (last dim
// fastest); device ("core") ids are chip * devices_per_chip + index in chip,
// i.e. row-major over the physical shape [chip dims..., devices per chip].
// Links are directed: every physical ICI link is two links, one per direction.
// Devices of one chip talk over on-chip links (one per ordered device pair).
//
// The chip graph is a Boost.Graph adjacency list whose edges carry link ids;
// routing itself is arithmetic (dimension order), so a 2048-device route costs
// a few dozen operations.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "hw_models/config.h"

namespace podsim::hw {

using ChipId = int64_t;
using CoreId = int64_t;  // a device: one XLA device (a TensorCore on v3)
using LinkId = int32_t;

// A box of chips from the pod with the devices used on each chip.
struct Slice {
  std::vector<int64_t> chip_dims;
  std::vector<bool> wraparound;  // per dim; ignored for dims of size <= 2
  int64_t devices_per_chip = 1;

  int64_t num_chips() const;
  int64_t num_devices() const { return num_chips() * devices_per_chip; }
  // [chip dims..., devices per chip], the `mesh.physical` form (docs/design.md).
  std::vector<int64_t> physical_shape() const;
  std::string to_string() const;  // "32x32 torus x 2 devices"
};

// The whole pod of the preset, with its wraparound links.
Slice full_pod(const HardwareConfig& config);

// The smallest slice of the pod holding `devices` devices: chips =
// devices / devices_per_chip, factored into the pod's dims as squarely as
// possible (smallest largest dim, ties: ascending dims). The full pod keeps
// its wraparound links; a smaller slice wraps along the dims that are a
// multiple of ici.torus_block (TPU v4: 4; 0 = none, TPU v3). UserError when the count
// does not fit the pod or does not fill whole chips.
Slice default_slice(const HardwareConfig& config, int64_t devices);

// A slice given explicitly as [chip dims..., devices per chip]; checked to fit
// the pod and to be a slice shape the machine forms (slice_shape_allowed).
// Wraparound as for default_slice.
Slice slice_from_physical(const HardwareConfig& config, const std::vector<int64_t>& physical);

// The slice-shape rule of machines built of torus blocks (ici.torus_block
// b > 0: TPU v4, v5p and TPU7x cubes of 4x4x4): a slice either lies inside
// one block (every chip dim at most b: 2x2x1, 4x4x4) or is made of whole
// blocks (every chip dim a multiple of b: 4x4x8; not 4x6x8). With b = 0 (TPU
// v3), or b at least every pod dim (TPU v5e, v6e: 16 on a 16x16 pod), any
// box inside the pod is a slice. docs/reference/hardware.md#slice-shapes.
bool slice_shape_allowed(const HardwareConfig& config, const std::vector<int64_t>& chip_dims);

// kDcn: a chip's share of the data-centre network joining slices, one link
// out of the chip and one into it (a multi-slice topology only).
enum class LinkKind { kIci, kOnChip, kDcn };

struct Link {
  LinkKind kind = LinkKind::kIci;
  ChipId src_chip = 0;
  ChipId dst_chip = 0;
  int dim = -1;          // ICI: torus dimension; on-chip: -1
  int direction = 0;     // ICI: +1 or -1 along dim
  CoreId src_core = -1;  // on-chip only
  CoreId dst_core = -1;  // on-chip only
  double bandwidth = 0;  // bytes/s
  double latency_s = 0;
};

struct LinkParams {
  double ici_bandwidth = 0;
  double ici_hop_latency_s = 0;
  double on_chip_bandwidth = 0;
  double on_chip_latency_s = 0;
  double message_overhead_s = 0;    // per message issued (ici.message_overhead_s)
  double ring_step_overhead_s = 0;  // per ring step of a collective (ici.ring_step_overhead_s)
  double dcn_bandwidth = 0;         // per chip per direction (dcn.bandwidth_per_chip)
  double dcn_latency_s = 0;         // per transfer between slices (dcn.latency_s)
};
// What collectives see: ici_bandwidth = link_bandwidth x link_efficiency.
LinkParams link_params(const HardwareConfig& config);
// Raw link capacity (ici_bandwidth = link_bandwidth), for datasheet figures.
LinkParams raw_link_params(const HardwareConfig& config);

class Topology {
 public:
  using Graph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                            boost::property<boost::edge_index_t, LinkId>>;

  // `num_slices` copies of `slice` joined by the data-centre network: chip
  // ids run slice by slice (slice * chips per slice + chip in slice), so core
  // ids are slice * devices per slice + core in slice; slice s's ICI and
  // on-chip links are slice 0's shifted by s x links_per_slice(); then two
  // DCN links per chip (out, in). A route between slices leaves through the
  // sender chip's DCN link and enters through the receiver's.
  Topology(Slice slice, LinkParams params, int64_t num_slices = 1);

  const Slice& slice() const { return slice_; }
  const LinkParams& params() const { return params_; }
  int rank() const { return static_cast<int>(slice_.chip_dims.size()); }
  // Of one slice (what the collective algorithms plan over).
  int64_t num_chips() const { return slice_.num_chips(); }
  int64_t num_devices() const { return slice_.num_devices(); }
  int64_t num_slices() const { return num_slices_; }
  int64_t total_devices() const { return num_devices() * num_slices_; }
  int64_t slice_of(CoreId core) const { return core / num_devices(); }
  int64_t links_per_slice() const { return links_per_slice_; }
  // The chip's DCN link out of it / into it; -1 on one slice.
  LinkId dcn_out(ChipId chip) const;
  LinkId dcn_in(ChipId chip) const;
  int64_t num_links() const { return static_cast<int64_t>(links_.size()); }
  const Link& link(LinkId id) const { return links_[static_cast<size_t>(id)]; }
  const std::vector<Link>& links() const { return links_; }
  const Graph& graph() const { return graph_; }  // vertices = chips, edges = ICI links

  ChipId chip_of(CoreId core) const { return core / slice_.devices_per_chip; }
  std::vector<int64_t> chip_coords(ChipId chip) const;
  ChipId chip_at(const std::vector<int64_t>& coords) const;
  // Whether dim has wraparound links (wraparound requested and size > 2).
  bool wraps(int dim) const;

  // The ICI link leaving `chip` along `dim` in `direction` (+1/-1); -1 if none.
  LinkId ici_link(ChipId chip, int dim, int direction) const;
  LinkId on_chip_link(CoreId src, CoreId dst) const;

  // Dimension-order route: dim 0 first, then dim 1, ...; on a wrapped dim the
  // shorter way round; on a tie (distance exactly half the ring) the positive
  // way from chips with an even coordinate in that dim and the negative way
  // from odd ones, so half-ring traffic splits evenly over both directions.
  std::vector<LinkId> route_chips(ChipId src, ChipId dst) const;
  // Device route: on-chip link between devices of one chip, else the chip route.
  std::vector<LinkId> route(CoreId src, CoreId dst) const;
  // Adds the route's links to `out` without allocating (hot path of planners).
  void append_route(CoreId src, CoreId dst, std::vector<LinkId>& out) const;

  int hops(ChipId src, ChipId dst) const;

  // The leg of a dimension-order route along `dim` from coordinate `from` to
  // `to`: direction (+1/-1) and hop count, by the rules of route_chips.
  struct Leg {
    int direction = 0;
    int64_t steps = 0;
  };
  Leg leg(int dim, int64_t from, int64_t to) const;
  int64_t stride(int dim) const { return strides_[static_cast<size_t>(dim)]; }

 private:
  Slice slice_;
  LinkParams params_;
  int64_t num_slices_ = 1;
  int64_t links_per_slice_ = 0;
  LinkId first_dcn_link_ = -1;
  std::vector<int64_t> strides_;  // chip id stride per dim
  std::vector<Link> links_;
  std::vector<LinkId> ici_table_;      // [chip][dim][0:+,1:-] -> link or -1
  std::vector<LinkId> on_chip_table_;  // [chip][src index][dst index] -> link or -1
  Graph graph_;
};

// Figures derived from the links (describe_hardware uses them).
// Sum of all directed ICI link bandwidths (bytes/s).
double aggregate_ici_bandwidth(const Topology& topology);
// One-way bandwidth across the weakest cut that halves the slice along one dim:
// the directed ICI links from the lower half to the upper half, counted from
// the link list, minimised over dims of even size.
double bisection_bandwidth(const Topology& topology);

}  // namespace podsim::hw
