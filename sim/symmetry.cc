// Symmetry classes: translations of the slice's chips checked against everything full fidelity
// depends on (see symmetry.h).
#include "sim/symmetry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <utility>

namespace podsim::sim {

namespace {

// Plans of translated groups are computed independently (floating sums in another order): their
// figures may differ in the last bits.
constexpr double kRelTolerance = 1e-9;

bool close(double a, double b) {
  return std::abs(a - b) <= kRelTolerance * std::max(std::abs(a), std::abs(b));
}

// One translation of every slice's chips by `step` along `dim` (cyclically), as maps of cores,
// program devices and links.
struct Translation {
  int dim = 0;
  int64_t step = 0;
  std::vector<int64_t> device;              // program device -> its image
  std::vector<hw::LinkId> link;             // link -> its image
  std::vector<std::vector<int32_t>> group;  // per spec: group -> image group
};

class Checker {
 public:
  Checker(const hw::System& system, const CollectiveCatalog& catalog, int64_t devices,
          const std::vector<int32_t>& variant, const std::vector<std::string>& spec_names)
      : system_(system),
        topology_(system.topology()),
        catalog_(catalog),
        devices_(devices),
        variant_(variant),
        names_(spec_names) {
    device_of_core_.assign(static_cast<size_t>(topology_.total_devices()), -1);
    const auto& cores = system.placement().core_of_device;
    for (size_t d = 0; d < cores.size(); ++d)
      device_of_core_[static_cast<size_t>(cores[d])] = static_cast<int64_t>(d);
  }

  // Empty when the translation maps everything alike (t filled), else why not.
  std::string check(int dim, int64_t step, Translation& t) {
    t.dim = dim;
    t.step = step;
    if (std::string why = map_devices(t); !why.empty()) return why;
    if (std::string why = map_links(t); !why.empty()) return why;
    for (int64_t d = 0; d < devices_ && !variant_.empty(); ++d) {
      const int32_t a = variant_[static_cast<size_t>(d)];
      const int32_t b = variant_[static_cast<size_t>(t.device[static_cast<size_t>(d)])];
      auto chip = [](int32_t v) {
        return v < 0 ? std::string("a chip as the machine's")
                     : fmt::format("a chip with per-chip overrides (variant {})", v);
      };
      if (a != b)
        return fmt::format("device {} runs on {} and its translate, device {}, on {}", d, chip(a),
                           t.device[static_cast<size_t>(d)], chip(b));
    }
    t.group.assign(static_cast<size_t>(catalog_.size()), {});
    for (int32_t s = 0; s < catalog_.size(); ++s)
      if (std::string why = map_groups(s, t); !why.empty()) return why;
    return {};
  }

  int64_t device_of_core(hw::CoreId core) const {
    return device_of_core_[static_cast<size_t>(core)];
  }

 private:
  hw::CoreId translate_core(hw::CoreId core, int dim, int64_t step) const {
    const int64_t per_slice = topology_.num_devices();
    const int64_t per_chip = topology_.slice().devices_per_chip;
    const int64_t slice = core / per_slice;
    const int64_t local = core % per_slice;
    std::vector<int64_t> coords = topology_.chip_coords(local / per_chip);
    const int64_t size = topology_.slice().chip_dims[static_cast<size_t>(dim)];
    coords[static_cast<size_t>(dim)] = (coords[static_cast<size_t>(dim)] + step) % size;
    return slice * per_slice + topology_.chip_at(coords) * per_chip + local % per_chip;
  }
  hw::ChipId translate_chip(hw::ChipId chip, int dim, int64_t step) const {
    const int64_t per_chip = topology_.slice().devices_per_chip;
    return translate_core(chip * per_chip, dim, step) / per_chip;
  }

  std::string map_devices(Translation& t) {
    const auto& cores = system_.placement().core_of_device;
    t.device.assign(static_cast<size_t>(devices_), -1);
    for (int64_t d = 0; d < devices_; ++d) {
      const hw::CoreId image = translate_core(cores[static_cast<size_t>(d)], t.dim, t.step);
      const int64_t to = device_of_core(image);
      if (to < 0)
        return fmt::format("device {} (core {}) translates to core {}, which holds no device", d,
                           cores[static_cast<size_t>(d)], image);
      t.device[static_cast<size_t>(d)] = to;
    }
    return {};
  }

  std::string map_links(Translation& t) {
    t.link.assign(static_cast<size_t>(topology_.num_links()), -1);
    for (hw::LinkId id = 0; id < topology_.num_links(); ++id) {
      const hw::Link& l = topology_.link(id);
      hw::LinkId image = -1;
      switch (l.kind) {
        case hw::LinkKind::kIci: {
          const hw::ChipId src = translate_chip(l.src_chip, t.dim, t.step);
          const hw::ChipId dst = translate_chip(l.dst_chip, t.dim, t.step);
          for (int direction : {l.direction, -l.direction}) {
            const hw::LinkId c = topology_.ici_link(src, l.dim, direction);
            if (c >= 0 && topology_.link(c).dst_chip == dst) {
              image = c;
              break;
            }
          }
          if (image < 0)
            return fmt::format(
                "the ICI link from chip {} to chip {} (dim {}) has no translate from chip {} to "
                "chip {} (the dim has no wraparound)",
                l.src_chip, l.dst_chip, l.dim, src, dst);
          break;
        }
        case hw::LinkKind::kOnChip:
          image = topology_.on_chip_link(translate_core(l.src_core, t.dim, t.step),
                                         translate_core(l.dst_core, t.dim, t.step));
          break;
        case hw::LinkKind::kDcn: {
          const hw::ChipId chip = translate_chip(l.src_chip, t.dim, t.step);
          image = l.direction > 0 ? topology_.dcn_out(chip) : topology_.dcn_in(chip);
          break;
        }
      }
      if (image < 0) return fmt::format("link {} has no translate", id);
      const hw::Link& m = topology_.link(image);
      if (m.bandwidth != l.bandwidth || m.latency_s != l.latency_s)
        return fmt::format("link {} and its translate {} differ in bandwidth or latency", id,
                           image);
      t.link[static_cast<size_t>(id)] = image;
    }
    return {};
  }

  std::string spec_name(int32_t s) const {
    const CollectiveSpec& spec = catalog_.spec(s);
    const std::string name = static_cast<size_t>(s) < names_.size() && !names_[s].empty()
                                 ? fmt::format("'{}'", names_[static_cast<size_t>(s)])
                                 : fmt::format("of {:g} bytes per device", spec.bytes_per_device);
    return fmt::format("{} {}", hw::collective_kind_name(spec.kind), name);
  }

  std::string map_groups(int32_t s, Translation& t) {
    const CollectiveSpec& spec = catalog_.spec(s);
    std::vector<int32_t>& image = t.group[static_cast<size_t>(s)];
    image.assign(spec.groups.size(), -1);
    if (!spec.permute_pairs.empty()) {
      // A permute's one group is every device it names: its pairs must translate onto its pairs.
      auto pairs = spec.permute_pairs;
      auto moved = pairs;
      for (auto& [src, dst] : moved)
        src = translate_core(src, t.dim, t.step), dst = translate_core(dst, t.dim, t.step);
      std::sort(pairs.begin(), pairs.end());
      std::sort(moved.begin(), moved.end());
      if (pairs != moved)
        return fmt::format("{}: its source-target pairs translated are not its pairs",
                           spec_name(s));
    }
    for (size_t g = 0; g < spec.groups.size(); ++g) {
      const std::vector<hw::CoreId>& members = spec.groups[g];
      if (members.empty()) continue;
      auto group_of_core = [&](hw::CoreId core) {
        const int64_t device = device_of_core(core);
        const int64_t to = t.device[static_cast<size_t>(device)];
        return spec.group_of_device[static_cast<size_t>(to)];
      };
      const int32_t to = group_of_core(members.front());
      bool same = to >= 0 && spec.groups[static_cast<size_t>(to)].size() == members.size();
      for (size_t m = 1; same && m < members.size(); ++m) same = group_of_core(members[m]) == to;
      if (!same)
        return fmt::format("{}: the translate of its group {} is not one of its groups",
                           spec_name(s), g);
      if (!plans_match(spec.plans[g], spec.plans[static_cast<size_t>(to)], t.link))
        return fmt::format(
            "{}: the plan of its group {} translated is not its translate's plan (member order "
            "or routes differ, e.g. a half-ring route's direction rule)",
            spec_name(s), g);
      image[g] = to;
    }
    return {};
  }

  // Whether `b` is `a` with every link translated: phase by phase the same repeat and latency
  // and the same link loads (as a multiset of (link, bytes)).
  bool plans_match(const hw::CollectivePlan& a, const hw::CollectivePlan& b,
                   const std::vector<hw::LinkId>& link) {
    if (a.phases.size() != b.phases.size() || !close(a.analytic_time_s, b.analytic_time_s))
      return false;
    for (size_t i = 0; i < a.phases.size(); ++i) {
      const hw::Phase& p = a.phases[i];
      const hw::Phase& q = b.phases[i];
      if (p.repeat != q.repeat || !close(p.latency_s, q.latency_s) ||
          p.link_loads.size() != q.link_loads.size())
        return false;
      lhs_.clear(), rhs_.clear();
      for (const auto& l : p.link_loads)
        lhs_.emplace_back(link[static_cast<size_t>(l.link)], l.bytes);
      for (const auto& l : q.link_loads) rhs_.emplace_back(l.link, l.bytes);
      std::sort(lhs_.begin(), lhs_.end());
      std::sort(rhs_.begin(), rhs_.end());
      for (size_t k = 0; k < lhs_.size(); ++k)
        if (lhs_[k].first != rhs_[k].first || !close(lhs_[k].second, rhs_[k].second)) return false;
    }
    return true;
  }

  const hw::System& system_;
  const hw::Topology& topology_;
  const CollectiveCatalog& catalog_;
  int64_t devices_;
  const std::vector<int32_t>& variant_;
  const std::vector<std::string>& names_;
  std::vector<int64_t> device_of_core_;
  std::vector<std::pair<hw::LinkId, double>> lhs_, rhs_;
};

int32_t find_root(std::vector<int32_t>& parent, int32_t x) {
  while (parent[static_cast<size_t>(x)] != x) {
    parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    x = parent[static_cast<size_t>(x)];
  }
  return x;
}

// The orbits of one spec's groups under the generators, with their arrivals and merged plans.
SpecOrbits spec_orbits(const CollectiveSpec& spec, int32_t s,
                       const std::vector<Translation>& generators, const Checker& checker,
                       const std::vector<int32_t>& class_of_device) {
  const auto groups = static_cast<int32_t>(spec.groups.size());
  std::vector<int32_t> parent(static_cast<size_t>(groups));
  std::iota(parent.begin(), parent.end(), 0);
  for (const Translation& t : generators)
    for (int32_t g = 0; g < groups; ++g) {
      const int32_t to = t.group[static_cast<size_t>(s)][static_cast<size_t>(g)];
      if (to < 0) continue;
      const int32_t a = find_root(parent, g), b = find_root(parent, to);
      if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
    }
  SpecOrbits out;
  out.orbit_of_group.assign(static_cast<size_t>(groups), -1);
  std::vector<int32_t> orbit_of_root(static_cast<size_t>(groups), -1);
  std::vector<std::vector<int32_t>> members;
  for (int32_t g = 0; g < groups; ++g) {
    int32_t& orbit = orbit_of_root[static_cast<size_t>(find_root(parent, g))];
    if (orbit < 0) {
      orbit = static_cast<int32_t>(out.first_group.size());
      out.first_group.push_back(g);
      members.emplace_back();
    }
    out.orbit_of_group[static_cast<size_t>(g)] = orbit;
    members[static_cast<size_t>(orbit)].push_back(g);
  }
  const size_t orbits = out.first_group.size();
  out.classes.assign(orbits, 0);
  out.merged_used.assign(orbits, 0);
  out.merged.resize(orbits);
  for (size_t o = 0; o < orbits; ++o) {
    std::vector<int32_t> classes;
    for (hw::CoreId core : spec.groups[static_cast<size_t>(out.first_group[o])])
      classes.push_back(class_of_device[static_cast<size_t>(checker.device_of_core(core))]);
    std::sort(classes.begin(), classes.end());
    out.classes[o] = std::unique(classes.begin(), classes.end()) - classes.begin();
    if (members[o].size() < 2) continue;
    // Merged: phase i of every group of the orbit at once, each group's loads kept as entries
    // (a link two groups load is charged twice, as two jobs on it would be).
    const hw::CollectivePlan& first = spec.plans[static_cast<size_t>(out.first_group[o])];
    hw::CollectivePlan& merged = out.merged[o];
    merged.kind = first.kind;
    merged.algorithm = first.algorithm;
    merged.analytic_time_s = first.analytic_time_s;
    merged.bytes_sent_per_device = first.bytes_sent_per_device;
    for (size_t i = 0; i < first.phases.size(); ++i) {
      hw::Phase phase;
      phase.label = first.phases[i].label;
      phase.repeat = first.phases[i].repeat;
      phase.step_time_s = first.phases[i].step_time_s;
      phase.dcn = first.phases[i].dcn;
      for (int32_t g : members[o]) {
        const hw::Phase& part = spec.plans[static_cast<size_t>(g)].phases[i];
        phase.latency_s = std::max(phase.latency_s, part.latency_s);
        phase.link_loads.insert(phase.link_loads.end(), part.link_loads.begin(),
                                part.link_loads.end());
      }
      merged.phases.push_back(std::move(phase));
    }
    out.merged_used[o] = 1;
  }
  return out;
}

std::vector<int64_t> divisors_below(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 1; p < n; ++p)
    if (n % p == 0) out.push_back(p);
  return out;
}

}  // namespace

const hw::CollectivePlan& SymmetryClasses::plan(const CollectiveCatalog& catalog, int32_t spec,
                                                int32_t orbit) const {
  const SpecOrbits& s = specs[static_cast<size_t>(spec)];
  const auto o = static_cast<size_t>(orbit);
  return s.merged_used[o] ? s.merged[o]
                          : catalog.spec(spec).plans[static_cast<size_t>(s.first_group[o])];
}

SymmetryClasses per_device_classes(int64_t devices, const std::string& reason) {
  SymmetryClasses out;
  out.note = fmt::format("per device: {}", reason);
  for (int64_t d = 0; d < devices; ++d) {
    out.representatives.push_back(d);
    out.class_of_device.push_back(static_cast<int32_t>(d));
    out.class_size.push_back(1);
  }
  return out;
}

SymmetryClasses find_symmetry_classes(const hw::System& system, const CollectiveCatalog& catalog,
                                      int64_t devices, const std::vector<int32_t>& device_variant,
                                      const std::vector<std::string>& spec_names) {
  const hw::Topology& topology = system.topology();
  const hw::Slice& slice = topology.slice();
  if (!device_variant.empty() && device_variant.size() != static_cast<size_t>(devices))
    return per_device_classes(devices, "the per-device chip variants do not match the devices");
  Checker checker(system, catalog, devices, device_variant, spec_names);
  std::vector<Translation> generators;
  std::vector<int64_t> period(slice.chip_dims.size());
  std::vector<std::string> not_translated;
  for (size_t d = 0; d < slice.chip_dims.size(); ++d) {
    const int64_t size = slice.chip_dims[d];
    period[d] = size;
    std::string first_reason;
    for (int64_t p : divisors_below(size)) {
      Translation t;
      std::string why = checker.check(static_cast<int>(d), p, t);
      if (why.empty()) {
        period[d] = p;
        generators.push_back(std::move(t));
        break;
      }
      if (first_reason.empty()) first_reason = std::move(why);
    }
    if (period[d] == size && size > 1)
      not_translated.push_back(fmt::format("dim {} (size {}, steps {} tried; at 1: {})", d, size,
                                           fmt::join(divisors_below(size), ", "), first_reason));
  }
  if (generators.empty()) {
    SymmetryClasses out = per_device_classes(
        devices, devices == 1 ? "one device"
                              : fmt::format("no translation of the {} maps the devices onto each "
                                            "other alike: {}",
                                            slice.to_string(), fmt::join(not_translated, "; ")));
    out.period = period;
    return out;
  }
  // Classes: same slice, same device of the chip, chip coordinates equal modulo the periods.
  SymmetryClasses out;
  out.period = period;
  out.class_of_device.assign(static_cast<size_t>(devices), -1);
  std::unordered_map<int64_t, int32_t> class_of_key;
  const int64_t per_slice = topology.num_devices();
  const int64_t per_chip = slice.devices_per_chip;
  for (int64_t d = 0; d < devices; ++d) {
    const hw::CoreId core = system.placement().core(d);
    const std::vector<int64_t> coords = topology.chip_coords((core % per_slice) / per_chip);
    int64_t key = core / per_slice;
    for (size_t k = 0; k < coords.size(); ++k) key = key * period[k] + coords[k] % period[k];
    key = key * per_chip + core % per_chip;
    auto [it, added] = class_of_key.emplace(key, static_cast<int32_t>(out.representatives.size()));
    if (added) {
      out.representatives.push_back(d);
      out.class_size.push_back(0);
    }
    out.class_of_device[static_cast<size_t>(d)] = it->second;
    ++out.class_size[static_cast<size_t>(it->second)];
  }
  out.applied = true;
  for (int32_t s = 0; s < catalog.size(); ++s)
    out.specs.push_back(spec_orbits(catalog.spec(s), s, generators, checker, out.class_of_device));
  const size_t classes = out.representatives.size();
  out.note = fmt::format(
      "{} devices in {} symmetry class{} of {} (translations of the {} by multiples of {} chips), "
      "one device simulated per class",
      devices, classes, classes == 1 ? "" : "es", out.class_size.front(), slice.to_string(),
      fmt::join(period, "x"));
  if (!not_translated.empty())
    out.note += fmt::format("; not translated: {}", fmt::join(not_translated, "; "));
  return out;
}

}  // namespace podsim::sim
