// Slices of a pod, the link list of a slice, dimension-order routing and the
// link-count derived figures (aggregate and bisection bandwidth).
#include "hw_models/ici/topology.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cassert>
#include <functional>
#include <numeric>

#include "common/error.h"

namespace podsim::hw {

int64_t Slice::num_chips() const {
  return std::accumulate(chip_dims.begin(), chip_dims.end(), int64_t{1}, std::multiplies<>());
}

std::vector<int64_t> Slice::physical_shape() const {
  std::vector<int64_t> shape = chip_dims;
  shape.push_back(devices_per_chip);
  return shape;
}

std::string Slice::to_string() const {
  const bool torus = std::any_of(wraparound.begin(), wraparound.end(), [](bool w) { return w; });
  return fmt::format("{} {} x {} device(s) per chip", fmt::join(chip_dims, "x"),
                     torus ? "torus" : "mesh", devices_per_chip);
}

Slice full_pod(const HardwareConfig& config) {
  return Slice{config.ici.pod_dims, config.ici.pod_wraparound, config.chip.devices_per_chip};
}

namespace {

// The rule of slice_shape_allowed in words, for hints: "every chip dim a
// multiple of 4 (e.g. 4x4x8), or every dim at most 4 (inside one 4x4x4 block)".
std::string slice_rule_text(const HardwareConfig& config) {
  const int64_t b = config.ici.torus_block;
  const std::vector<int64_t> block(config.ici.pod_dims.size(), b);
  std::vector<int64_t> two_blocks = block;
  two_blocks.back() = 2 * b;
  return fmt::format(
      "a {} slice is whole {} blocks or lies inside one: every chip dim a multiple of {} "
      "(e.g. {}), or every chip dim at most {}",
      config.name, fmt::join(block, "x"), b, fmt::join(two_blocks, "x"), b);
}

// The full pod wraps where the preset says; a smaller slice wraps along a
// dim that is a whole number of torus blocks (ici.torus_block: TPU v4's
// optical switches close a ring of 4x4x4 cubes), else it is a mesh there.
std::vector<bool> wraparound_for(const HardwareConfig& config,
                                 const std::vector<int64_t>& chip_dims) {
  if (chip_dims == config.ici.pod_dims) return config.ici.pod_wraparound;
  std::vector<bool> wrap(chip_dims.size(), false);
  const int64_t block = config.ici.torus_block;
  if (block <= 0) return wrap;
  for (size_t d = 0; d < chip_dims.size(); ++d)
    wrap[d] = config.ici.pod_wraparound[d] && chip_dims[d] % block == 0;
  return wrap;
}

// All ways to write `chips` as a product of dims.size() factors, each within
// the pod's dim and forming an allowed slice shape; keeps the squarest
// (smallest max, then lexicographically smallest).
void best_factorization(const HardwareConfig& config, int64_t chips, size_t dim,
                        std::vector<int64_t>& current, std::vector<int64_t>& best) {
  const std::vector<int64_t>& pod_dims = config.ici.pod_dims;
  if (dim + 1 == pod_dims.size()) {
    if (chips > pod_dims[dim]) return;
    current.push_back(chips);
    if (!slice_shape_allowed(config, current)) {
      current.pop_back();
      return;
    }
    auto key = [](const std::vector<int64_t>& d) { return *std::max_element(d.begin(), d.end()); };
    if (best.empty() || key(current) < key(best) || (key(current) == key(best) && current < best))
      best = current;
    current.pop_back();
    return;
  }
  for (int64_t f = 1; f <= std::min(chips, pod_dims[dim]); ++f) {
    if (chips % f != 0) continue;
    current.push_back(f);
    best_factorization(config, chips / f, dim + 1, current, best);
    current.pop_back();
  }
}

}  // namespace

Slice default_slice(const HardwareConfig& config, int64_t devices) {
  const int64_t per_chip = config.chip.devices_per_chip;
  const Slice pod = full_pod(config);
  if (devices <= 0 || devices > pod.num_devices())
    throw UserError(fmt::format("{} devices do not fit a {} pod ({} devices)", devices, config.name,
                                pod.num_devices()),
                    "use fewer devices or a preset with a larger pod");
  if (devices < per_chip)
    return Slice{std::vector<int64_t>(pod.chip_dims.size(), 1),
                 std::vector<bool>(pod.chip_dims.size(), false), devices};
  if (devices % per_chip != 0)
    throw UserError(fmt::format("{} devices do not fill whole {} chips of {} devices", devices,
                                config.name, per_chip),
                    fmt::format("use a multiple of {} devices, or one device per chip: --set "
                                "hardware.chip.devices_per_chip=1",
                                per_chip));
  std::vector<int64_t> current, best;
  best_factorization(config, devices / per_chip, 0, current, best);
  if (best.empty())
    throw UserError(
        fmt::format("{} chips cannot be arranged as a slice of the {} pod", devices / per_chip,
                    fmt::join(pod.chip_dims, "x")),
        config.ici.torus_block > 0
            ? fmt::format("use a device count that fits one: {}", slice_rule_text(config))
            : "give mesh.physical explicitly or use a power-of-two device count");
  return Slice{best, wraparound_for(config, best), per_chip};
}

Slice slice_from_physical(const HardwareConfig& config, const std::vector<int64_t>& physical) {
  const auto& pod = config.ici.pod_dims;
  if (physical.size() != pod.size() + 1)
    throw UserError(
        fmt::format("physical shape [{}] must have {} entries: {} chip dims and devices per chip",
                    fmt::join(physical, ", "), pod.size() + 1, pod.size()),
        fmt::format("give the chips along each of the {} pod dims, then the devices per chip",
                    fmt::join(pod, "x")));
  std::vector<int64_t> chips(physical.begin(), physical.end() - 1);
  for (size_t d = 0; d < chips.size(); ++d)
    if (chips[d] < 1 || chips[d] > pod[d])
      throw UserError(fmt::format("physical shape [{}] does not fit the {} pod",
                                  fmt::join(physical, ", "), fmt::join(pod, "x")),
                      fmt::format("each chip dim must be between 1 and the pod's size along "
                                  "it: at most {}",
                                  fmt::join(pod, "x")));
  const int64_t per_chip = physical.back();
  if (per_chip < 1 || per_chip > config.chip.devices_per_chip)
    throw UserError(
        fmt::format("physical shape [{}] uses {} devices per chip; {} has {}",
                    fmt::join(physical, ", "), per_chip, config.name, config.chip.devices_per_chip),
        fmt::format("the last entry counts devices per chip: 1 to {}",
                    config.chip.devices_per_chip));
  if (!slice_shape_allowed(config, chips))
    throw UserError(fmt::format("physical shape [{}] is not a {} slice: chip dims {} mix "
                                "whole {}-chip blocks with partial ones",
                                fmt::join(physical, ", "), config.name, fmt::join(chips, "x"),
                                config.ici.torus_block),
                    slice_rule_text(config));
  return Slice{chips, wraparound_for(config, chips), per_chip};
}

bool slice_shape_allowed(const HardwareConfig& config, const std::vector<int64_t>& chip_dims) {
  const int64_t b = config.ici.torus_block;
  if (b <= 0) return true;
  const bool inside_one_block =
      std::all_of(chip_dims.begin(), chip_dims.end(), [b](int64_t d) { return d <= b; });
  const bool whole_blocks =
      std::all_of(chip_dims.begin(), chip_dims.end(), [b](int64_t d) { return d % b == 0; });
  return inside_one_block || whole_blocks;
}

LinkParams link_params(const HardwareConfig& config) {
  LinkParams params = raw_link_params(config);
  params.ici_bandwidth *= config.ici.link_efficiency;
  return params;
}

LinkParams raw_link_params(const HardwareConfig& config) {
  return LinkParams{config.ici.link_bandwidth,     config.ici.hop_latency_s,
                    config.chip.on_chip_bandwidth, config.chip.on_chip_latency_s,
                    config.ici.message_overhead_s, config.ici.ring_step_overhead_s,
                    config.dcn.bandwidth_per_chip, config.dcn.latency_s};
}

Topology::Topology(Slice slice, LinkParams params, int64_t num_slices)
    : slice_(std::move(slice)),
      params_(params),
      num_slices_(std::max<int64_t>(num_slices, 1)),
      graph_(static_cast<size_t>(slice_.num_chips() * std::max<int64_t>(num_slices, 1))) {
  assert(slice_.wraparound.size() == slice_.chip_dims.size());
  const int r = rank();
  strides_.assign(static_cast<size_t>(r), 1);
  for (int d = r - 2; d >= 0; --d) strides_[d] = strides_[d + 1] * slice_.chip_dims[d + 1];
  const int64_t chips = num_chips();
  const int64_t all_chips = chips * num_slices_;
  const int64_t per_chip = slice_.devices_per_chip;
  ici_table_.assign(static_cast<size_t>(all_chips * r * 2), -1);
  on_chip_table_.assign(static_cast<size_t>(all_chips * per_chip * per_chip), -1);
  for (int64_t s = 0; s < num_slices_; ++s) {
    for (ChipId chip = s * chips; chip < (s + 1) * chips; ++chip) {
      const std::vector<int64_t> coords = chip_coords(chip);
      for (int d = 0; d < r; ++d) {
        const int64_t k = slice_.chip_dims[d];
        for (int direction : {+1, -1}) {
          int64_t next = coords[d] + direction;
          if (next < 0 || next >= k) {
            if (!wraps(d)) continue;
            next = (next + k) % k;
          }
          const ChipId dst = chip + (next - coords[d]) * strides_[d];
          const auto id = static_cast<LinkId>(links_.size());
          links_.push_back(Link{LinkKind::kIci, chip, dst, d, direction, -1, -1,
                                params_.ici_bandwidth, params_.ici_hop_latency_s});
          ici_table_[static_cast<size_t>((chip * r + d) * 2 + (direction > 0 ? 0 : 1))] = id;
          boost::add_edge(static_cast<size_t>(chip), static_cast<size_t>(dst), id, graph_);
        }
      }
    }
    for (ChipId chip = s * chips; chip < (s + 1) * chips; ++chip)
      for (int64_t a = 0; a < per_chip; ++a)
        for (int64_t b = 0; b < per_chip; ++b) {
          if (a == b) continue;
          const auto id = static_cast<LinkId>(links_.size());
          links_.push_back(Link{LinkKind::kOnChip, chip, chip, -1, 0, chip * per_chip + a,
                                chip * per_chip + b, params_.on_chip_bandwidth,
                                params_.on_chip_latency_s});
          on_chip_table_[static_cast<size_t>((chip * per_chip + a) * per_chip + b)] = id;
        }
    if (s == 0) links_per_slice_ = static_cast<int64_t>(links_.size());
  }
  if (num_slices_ > 1) {
    // The transfer's latency is charged once, on the way out.
    first_dcn_link_ = static_cast<LinkId>(links_.size());
    for (ChipId chip = 0; chip < all_chips; ++chip) {
      links_.push_back(Link{LinkKind::kDcn, chip, chip, -1, +1, -1, -1, params_.dcn_bandwidth,
                            params_.dcn_latency_s});
      links_.push_back(
          Link{LinkKind::kDcn, chip, chip, -1, -1, -1, -1, params_.dcn_bandwidth, 0.0});
    }
  }
}

LinkId Topology::dcn_out(ChipId chip) const {
  return first_dcn_link_ < 0 ? -1 : static_cast<LinkId>(first_dcn_link_ + 2 * chip);
}

LinkId Topology::dcn_in(ChipId chip) const {
  return first_dcn_link_ < 0 ? -1 : static_cast<LinkId>(first_dcn_link_ + 2 * chip + 1);
}

std::vector<int64_t> Topology::chip_coords(ChipId chip) const {
  std::vector<int64_t> coords(static_cast<size_t>(rank()));
  for (int d = 0; d < rank(); ++d) coords[d] = (chip / strides_[d]) % slice_.chip_dims[d];
  return coords;
}

ChipId Topology::chip_at(const std::vector<int64_t>& coords) const {
  ChipId chip = 0;
  for (int d = 0; d < rank(); ++d) chip += coords[d] * strides_[d];
  return chip;
}

bool Topology::wraps(int dim) const { return slice_.wraparound[dim] && slice_.chip_dims[dim] > 2; }

LinkId Topology::ici_link(ChipId chip, int dim, int direction) const {
  return ici_table_[static_cast<size_t>((chip * rank() + dim) * 2 + (direction > 0 ? 0 : 1))];
}

LinkId Topology::on_chip_link(CoreId src, CoreId dst) const {
  const int64_t per_chip = slice_.devices_per_chip;
  assert(chip_of(src) == chip_of(dst) && src != dst);
  return on_chip_table_[static_cast<size_t>(src * per_chip + dst % per_chip)];
}

void Topology::append_route(CoreId src, CoreId dst, std::vector<LinkId>& out) const {
  if (src == dst) return;
  ChipId current = chip_of(src);
  const ChipId target = chip_of(dst);
  if (current == target) {
    out.push_back(on_chip_link(src, dst));
    return;
  }
  if (slice_of(src) != slice_of(dst)) {
    out.push_back(dcn_out(current));
    out.push_back(dcn_in(target));
    return;
  }
  for (int d = 0; d < rank(); ++d) {
    const int64_t k = slice_.chip_dims[d];
    const Leg step = leg(d, (current / strides_[d]) % k, (target / strides_[d]) % k);
    for (int64_t s = 0; s < step.steps; ++s) {
      const LinkId id = ici_link(current, d, step.direction);
      assert(id >= 0);
      out.push_back(id);
      current = links_[static_cast<size_t>(id)].dst_chip;
    }
  }
}

Topology::Leg Topology::leg(int dim, int64_t c, int64_t t) const {
  if (c == t) return Leg{0, 0};
  const int64_t k = slice_.chip_dims[dim];
  if (!wraps(dim)) return t > c ? Leg{+1, t - c} : Leg{-1, c - t};
  const int64_t forward = (t - c + k) % k;
  const int64_t backward = k - forward;
  if (forward < backward) return Leg{+1, forward};
  if (backward < forward) return Leg{-1, backward};
  return Leg{c % 2 == 0 ? +1 : -1, forward};  // tie: split by parity
}

std::vector<LinkId> Topology::route(CoreId src, CoreId dst) const {
  std::vector<LinkId> path;
  append_route(src, dst, path);
  return path;
}

std::vector<LinkId> Topology::route_chips(ChipId src, ChipId dst) const {
  return route(src * slice_.devices_per_chip, dst * slice_.devices_per_chip);
}

int Topology::hops(ChipId src, ChipId dst) const {
  return static_cast<int>(route_chips(src, dst).size());
}

double aggregate_ici_bandwidth(const Topology& topology) {
  double total = 0;
  for (const Link& link : topology.links())
    if (link.kind == LinkKind::kIci) total += link.bandwidth;
  return total;
}

double bisection_bandwidth(const Topology& topology) {
  double weakest = -1;
  for (int d = 0; d < topology.rank(); ++d) {
    const int64_t k = topology.slice().chip_dims[d];
    if (k < 2) continue;
    double crossing = 0;
    for (const Link& link : topology.links()) {
      if (link.kind != LinkKind::kIci || link.dim != d) continue;
      const bool from_lower = topology.chip_coords(link.src_chip)[d] < k / 2;
      const bool to_upper = topology.chip_coords(link.dst_chip)[d] >= k / 2;
      if (from_lower && to_upper) crossing += link.bandwidth;
    }
    if (weakest < 0 || crossing < weakest) weakest = crossing;
  }
  return std::max(weakest, 0.0);
}

}  // namespace podsim::hw
