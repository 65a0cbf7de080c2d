// Collective algorithms -> plans of link transfers (see collectives.h for the
// algorithms, the byte conventions and the time formulas).
#include "hw_models/ici/collectives.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cassert>
#include <functional>
#include <numeric>

#include "common/error.h"

namespace podsim::hw {

const char* collective_kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
    case CollectiveKind::kCollectivePermute:
      return "collective-permute";
  }
  return "?";
}

const std::vector<CollectiveAlgorithmEntry>& collective_algorithms() {
  static const std::vector<CollectiveAlgorithmEntry> table = {
      {CollectiveAlgorithm::kAuto, "auto", true},
      {CollectiveAlgorithm::kRing, "ring", true},
      {CollectiveAlgorithm::kBidirectionalRing, "bidirectional_ring", true},
      {CollectiveAlgorithm::kTorus, "torus", true},
      {CollectiveAlgorithm::kDirect, "direct", false},
      {CollectiveAlgorithm::kRingPerDim, "ring_per_dim", true},
      {CollectiveAlgorithm::kTorusPipelined, "torus_pipelined", true},
  };
  return table;
}

const char* collective_algorithm_name(CollectiveAlgorithm algorithm) {
  for (const CollectiveAlgorithmEntry& e : collective_algorithms())
    if (e.algorithm == algorithm) return e.name.data();  // the literals are NUL-terminated
  return "?";
}

CollectiveAlgorithm collective_algorithm_from_name(const std::string& name) {
  std::vector<std::string> names;
  for (const CollectiveAlgorithmEntry& e : collective_algorithms()) {
    if (e.name == name) return e.algorithm;
    names.emplace_back(e.name);
  }
  throw UserError(fmt::format("unknown collective algorithm '{}'", name),
                  fmt::format("valid algorithms: {}", fmt::join(names, ", ")));
}

namespace {

// Accumulates the flows of one phase and their per-link loads; reused across
// phases so a 2048-device plan allocates its per-link array once.
class PhaseBuilder {
 public:
  explicit PhaseBuilder(const Topology& topology)
      : topology_(topology),
        load_(static_cast<size_t>(topology.num_links()), 0.0),
        sent_(static_cast<size_t>(topology.total_devices()), 0.0),
        phase_sent_(sent_.size(), 0.0) {}

  void add_flow(CoreId src, CoreId dst, double bytes, int64_t count = 1) {
    if (src == dst || bytes <= 0) return;
    path_.clear();
    topology_.append_route(src, dst, path_);
    const double total = bytes * static_cast<double>(count);
    for (LinkId id : path_) {
      auto& slot = load_[static_cast<size_t>(id)];
      if (slot == 0) touched_.push_back(id);
      slot += total;
    }
    // A route is one on-chip link, ICI hops only, or a DCN transfer between slices.
    const double latency =
        topology_.slice_of(src) != topology_.slice_of(dst) ? topology_.params().dcn_latency_s
        : topology_.chip_of(src) == topology_.chip_of(dst)
            ? topology_.params().on_chip_latency_s
            : static_cast<double>(path_.size()) * topology_.params().ici_hop_latency_s;
    latency_ = std::max(latency_, latency);
    flows_.push_back(Flow{src, dst, bytes, count});
    auto& sent = phase_sent_[static_cast<size_t>(src)];
    if (sent == 0) senders_.push_back(src);
    sent += total;
  }

  // Closes the phase; it runs `repeat` times.
  void finish(std::string label, int64_t repeat, std::vector<Phase>& out) {
    if (flows_.empty() || repeat <= 0) {
      reset();
      return;
    }
    Phase phase;
    phase.label = std::move(label);
    phase.repeat = repeat;
    phase.latency_s = latency_ + extra_latency_;
    std::sort(touched_.begin(), touched_.end());
    double slowest = 0;
    for (LinkId id : touched_) {
      const double bytes = load_[static_cast<size_t>(id)];
      phase.link_loads.push_back(LinkTransfer{id, bytes});
      slowest = std::max(slowest, bytes / topology_.link(id).bandwidth);
    }
    phase.step_time_s = slowest + phase.latency_s;
    phase.flows = std::move(flows_);
    for (CoreId device : senders_)
      sent_[static_cast<size_t>(device)] +=
          phase_sent_[static_cast<size_t>(device)] * static_cast<double>(repeat);
    out.push_back(std::move(phase));
    reset();
  }

  void reserve_flows(size_t count) { flows_.reserve(count); }
  double ring_step_overhead_s() const { return topology_.params().ring_step_overhead_s; }

  // For planners that sum link loads themselves (all-to-all by legs): a flow
  // recorded without routing, its load and latency given separately.
  void add_unrouted_flow(CoreId src, CoreId dst, double bytes, int64_t count) {
    const double total = bytes * static_cast<double>(count);
    flows_.push_back(Flow{src, dst, bytes, count});
    auto& sent = phase_sent_[static_cast<size_t>(src)];
    if (sent == 0) senders_.push_back(src);
    sent += total;
  }
  void add_link_load(LinkId id, double bytes) {
    auto& slot = load_[static_cast<size_t>(id)];
    if (slot == 0) touched_.push_back(id);
    slot += bytes;
  }
  void note_latency(double latency) { latency_ = std::max(latency_, latency); }
  // A fixed cost per repetition on top of the longest route (ring steps).
  void add_fixed_latency(double seconds) { extra_latency_ += seconds; }

  double max_sent() const {
    return sent_.empty() ? 0 : *std::max_element(sent_.begin(), sent_.end());
  }

 private:
  void reset() {
    for (LinkId id : touched_) load_[static_cast<size_t>(id)] = 0;
    touched_.clear();
    flows_ = {};
    for (CoreId device : senders_) phase_sent_[static_cast<size_t>(device)] = 0;
    senders_.clear();
    latency_ = 0;
    extra_latency_ = 0;
  }

  const Topology& topology_;
  std::vector<double> load_;
  std::vector<double> sent_;
  std::vector<LinkId> touched_;
  std::vector<LinkId> path_;
  std::vector<Flow> flows_;
  std::vector<double> phase_sent_;  // per device, this phase
  std::vector<CoreId> senders_;
  double latency_ = 0;
  double extra_latency_ = 0;
};

using Rings = std::vector<std::vector<CoreId>>;  // concurrent rings of equal size

// Rings along `dim` of the row-major grid `shape` over `group`.
Rings lines_along(const std::vector<CoreId>& group, const std::vector<int64_t>& shape, size_t dim) {
  int64_t stride = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
  const int64_t size = shape[dim];
  Rings rings;
  for (int64_t start = 0; start < static_cast<int64_t>(group.size()); ++start) {
    if ((start / stride) % size != 0) continue;  // not the first member of its line
    std::vector<CoreId> ring;
    for (int64_t i = 0; i < size; ++i)
      ring.push_back(group[static_cast<size_t>(start + i * stride)]);
    rings.push_back(std::move(ring));
  }
  return rings;
}

// A ring laid along a path without wraparound (each member one hop or one
// on-chip link from the next, the closing edge back across the whole path)
// is re-embedded as a folded ring: the even positions out, the odd ones back
// (0, 2, 4, ..., 5, 3, 1). Every edge is then at most two hops instead of one
// edge of n-1 hops, so a ring step's latency (the slowest route) drops from
// (n-1) to 2 hop latencies, while each link direction still carries one ring
// edge per direction: link loads, hence bandwidth time, are unchanged. (The
// standard embedding of a ring in a linear array; e.g. Leighton,
// "Introduction to Parallel Algorithms and Architectures", 1.2.) Rings that
// are not such paths (a wrapped torus line, arbitrary groups) are kept.
std::vector<CoreId> embedded_ring(const Topology& topology, const std::vector<CoreId>& ring) {
  const size_t n = ring.size();
  if (n < 4) return ring;
  auto hops = [&](CoreId a, CoreId b) {
    return topology.hops(topology.chip_of(a), topology.chip_of(b));
  };
  for (size_t i = 0; i + 1 < n; ++i)
    if (hops(ring[i], ring[i + 1]) > 1) return ring;
  if (hops(ring[n - 1], ring[0]) <= 2) return ring;
  std::vector<CoreId> folded;
  folded.reserve(n);
  for (size_t i = 0; i < n; i += 2) folded.push_back(ring[i]);
  for (size_t i = (n % 2 == 0 ? n - 1 : n - 2);; i -= 2) {
    folded.push_back(ring[i]);
    if (i < 2) break;
  }
  return folded;
}

Rings embedded_rings(const Topology& topology, Rings rings) {
  for (auto& ring : rings) ring = embedded_ring(topology, ring);
  return rings;
}

void ring_step(PhaseBuilder& builder, const Rings& rings, double forward_bytes,
               double backward_bytes) {
  for (const auto& ring : rings) {
    const size_t n = ring.size();
    for (size_t i = 0; i < n; ++i) {
      builder.add_flow(ring[i], ring[(i + 1) % n], forward_bytes);
      builder.add_flow(ring[i], ring[(i + n - 1) % n], backward_bytes);
    }
  }
}

// All-gather (full result V per ring member) or reduce-scatter (full operand
// V) over concurrent rings: the same transfers, data growing or shrinking.
void ring_pass(PhaseBuilder& builder, const Rings& rings, double v, bool bidirectional,
               const std::string& what, std::vector<Phase>& out) {
  if (rings.empty() || rings.front().size() < 2) return;
  const auto n = static_cast<int64_t>(rings.front().size());
  const double chunk = v / static_cast<double>(n);
  if (!bidirectional) {
    ring_step(builder, rings, chunk, 0);
    builder.add_fixed_latency(builder.ring_step_overhead_s());
    builder.finish(fmt::format("{} ring step (n={})", what, n), n - 1, out);
    return;
  }
  const int64_t full_steps = (n - 1) / 2;
  ring_step(builder, rings, chunk, chunk);
  builder.add_fixed_latency(builder.ring_step_overhead_s());
  builder.finish(fmt::format("{} bidirectional ring step (n={})", what, n), full_steps, out);
  if (n % 2 == 0) {
    ring_step(builder, rings, chunk / 2, chunk / 2);
    builder.add_fixed_latency(builder.ring_step_overhead_s());
    builder.finish(
        fmt::format("{} bidirectional ring half step to the opposite member (n={})", what, n), 1,
        out);
  }
}

// One stage of a pipelined torus pass: a bidirectional ring pass along one
// dim over data of `bytes` per member (the full operand of a reduce-scatter,
// the full result of an all-gather).
struct Stage {
  std::string name;
  Rings rings;
  double bytes = 0;
  double latency_s = 0;  // its n/2 steps x (slowest ring edge + ring step overhead)
};

double ring_edge_latency(const Topology& topology, const Rings& rings) {
  double worst = 0;
  std::vector<LinkId> path;
  for (const auto& ring : rings)
    for (size_t i = 0; i < ring.size(); ++i)
      for (CoreId next : {ring[(i + 1) % ring.size()], ring[(i + ring.size() - 1) % ring.size()]}) {
        if (next == ring[i]) continue;
        path.clear();
        topology.append_route(ring[i], next, path);
        worst = std::max(
            worst, topology.chip_of(ring[i]) == topology.chip_of(next)
                       ? topology.params().on_chip_latency_s
                       : static_cast<double>(path.size()) * topology.params().ici_hop_latency_s);
      }
  return worst;
}

Stage make_stage(const Topology& topology, Rings rings, double bytes, std::string name) {
  Stage stage{std::move(name), embedded_rings(topology, std::move(rings)), bytes, 0};
  const auto n = static_cast<int64_t>(stage.rings.front().size());
  // A bidirectional ring pass: (n-1)/2 full steps, plus a half step for even n.
  stage.latency_s = static_cast<double>(n / 2) * (ring_edge_latency(topology, stage.rings) +
                                                  topology.params().ring_step_overhead_s);
  return stage;
}

// Chunk c (0..C-1) runs stage s in slot c + s; a slot's phase holds the
// stages some chunk runs in it, each as one flow per ring edge and direction
// carrying that stage's whole pass for one chunk: (n-1)/2 x V_s/(C n) bytes.
// Consecutive identical slots (the steady state) are one phase repeated.
void pipelined_passes(PhaseBuilder& builder, const std::vector<Stage>& stages, int64_t chunks,
                      std::vector<Phase>& out) {
  const auto k = static_cast<int64_t>(stages.size());
  if (k == 0) return;
  int64_t t = 0;
  while (t < chunks + k - 1) {
    const int64_t lo = std::max<int64_t>(0, t - chunks + 1);
    const int64_t hi = std::min(t, k - 1);
    int64_t repeat =
        1;  // slots with the same active stages follow only while lo = 0 and hi = k - 1
    while (t + repeat < chunks + k - 1 && std::max<int64_t>(0, t + repeat - chunks + 1) == lo &&
           std::min(t + repeat, k - 1) == hi)
      ++repeat;
    double latency = 0;
    for (int64_t s = lo; s <= hi; ++s) {
      const Stage& stage = stages[static_cast<size_t>(s)];
      const auto n = static_cast<double>(stage.rings.front().size());
      const double per_direction = stage.bytes / static_cast<double>(chunks) / n * (n - 1) / 2;
      ring_step(builder, stage.rings, per_direction, per_direction);
      latency = std::max(latency, stage.latency_s);
    }
    builder.note_latency(latency);
    builder.finish(fmt::format("pipelined slots {}..{} of {}: {} to {} ({} chunks)", t,
                               t + repeat - 1, chunks + k - 1, stages[static_cast<size_t>(lo)].name,
                               stages[static_cast<size_t>(hi)].name, chunks),
                   repeat, out);
    t += repeat;
  }
}

int64_t product(const std::vector<int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

void all_to_all_direct(PhaseBuilder& builder, const Topology& topology,
                       const std::vector<CoreId>& group, double v, std::vector<Phase>& out) {
  const auto n = static_cast<int64_t>(group.size());
  const double chunk = v / static_cast<double>(n);
  // Large groups: flows between two chips share one route, so they are kept
  // as one Flow with a count (exact for link loads and for fair sharing).
  std::vector<std::vector<CoreId>> members(static_cast<size_t>(topology.num_chips()));
  std::vector<ChipId> chips;
  for (CoreId core : group) {
    auto& list = members[static_cast<size_t>(topology.chip_of(core))];
    if (list.empty()) chips.push_back(topology.chip_of(core));
    list.push_back(core);
  }
  builder.reserve_flows(chips.size() * chips.size());
  // Device pairs on one chip: routed one by one (on-chip links).
  for (ChipId a : chips) {
    const auto& on = members[static_cast<size_t>(a)];
    for (CoreId s : on)
      for (CoreId d : on) builder.add_flow(s, d, chunk);
  }
  // Chip pairs: one Flow each, counted; their ICI loads are summed by legs.
  // Dimension-order routing moves along dim d from a_d to b_d on the line
  // whose other coordinates are (b_0..b_{d-1}, a_{d+1}..). The bytes of all
  // pairs using that leg factor as chunk * A_d * B_d with
  //   A_d(a_d, a_{>d}) = devices on chips with those coordinates (any a_{<d}),
  //   B_d(b_{<d}, b_d) = devices on chips with those coordinates (any b_{>d}),
  // so each dim costs lines x k^2 leg walks instead of chips^2 routes.
  const int rank = topology.rank();
  const auto& dims = topology.slice().chip_dims;
  const auto chip_count = static_cast<size_t>(topology.num_chips());
  auto coord = [&](ChipId chip, int d) { return (chip / topology.stride(d)) % dims[d]; };
  auto zero_dims = [&](ChipId chip, int from, int to) {  // coords [from, to) set to 0
    for (int d = from; d < to; ++d) chip -= coord(chip, d) * topology.stride(d);
    return chip;
  };
  std::vector<double> occupancy(chip_count, 0.0);
  for (ChipId c : chips)
    occupancy[static_cast<size_t>(c)] = static_cast<double>(members[static_cast<size_t>(c)].size());
  for (int d = 0; d < rank; ++d) {
    const int64_t k = dims[d];
    if (k < 2) continue;
    std::vector<double> a_sum(chip_count, 0.0), b_sum(chip_count, 0.0);
    for (ChipId c : chips) {
      a_sum[static_cast<size_t>(zero_dims(c, 0, d))] += occupancy[static_cast<size_t>(c)];
      b_sum[static_cast<size_t>(zero_dims(c, d + 1, rank))] += occupancy[static_cast<size_t>(c)];
    }
    for (ChipId line = 0; line < topology.num_chips(); ++line) {
      if (coord(line, d) != 0) continue;
      const ChipId a_key = zero_dims(line, 0, d);         // (0.., a_d = 0, a_{>d})
      const ChipId b_key = zero_dims(line, d + 1, rank);  // (b_{<d}, b_d = 0, 0..)
      for (int64_t from = 0; from < k; ++from) {
        const double a_devices = a_sum[static_cast<size_t>(a_key + from * topology.stride(d))];
        if (a_devices == 0) continue;
        for (int64_t to = 0; to < k; ++to) {
          const double b_devices = b_sum[static_cast<size_t>(b_key + to * topology.stride(d))];
          if (to == from || b_devices == 0) continue;
          const double bytes = chunk * a_devices * b_devices;
          const Topology::Leg leg = topology.leg(d, from, to);
          ChipId at = line + from * topology.stride(d);
          for (int64_t s = 0; s < leg.steps; ++s) {
            const LinkId id = topology.ici_link(at, d, leg.direction);
            builder.add_link_load(id, bytes);
            at = topology.link(id).dst_chip;
          }
        }
      }
    }
  }
  // Longest route: per dim, the longest leg between occupied coordinates,
  // summed (exact when the group's chips form a box, an upper bound otherwise).
  double max_hops = 0;
  for (int d = 0; d < rank; ++d) {
    std::vector<bool> used(static_cast<size_t>(dims[d]), false);
    for (ChipId c : chips) used[static_cast<size_t>(coord(c, d))] = true;
    int64_t longest = 0;
    for (int64_t from = 0; from < dims[d]; ++from)
      for (int64_t to = 0; to < dims[d]; ++to)
        if (used[static_cast<size_t>(from)] && used[static_cast<size_t>(to)])
          longest = std::max(longest, topology.leg(d, from, to).steps);
    max_hops += static_cast<double>(longest);
  }
  for (ChipId a : chips)
    for (ChipId b : chips) {
      if (a == b) continue;
      const auto& from = members[static_cast<size_t>(a)];
      const auto& to = members[static_cast<size_t>(b)];
      builder.add_unrouted_flow(from.front(), to.front(), chunk,
                                static_cast<int64_t>(from.size() * to.size()));
    }
  // Each device issues its n-1 messages one after another (LogP's overhead
  // o per message); the transfers themselves pipeline behind the issue, so
  // the latency term is the longest route plus (n-1) issue costs. At 2048
  // members this, not bandwidth, is most of a small all-to-all (GShard's
  // all-to-all share grows from 16% at 128 experts to 36% at 2048).
  builder.note_latency(max_hops * topology.params().ici_hop_latency_s +
                       static_cast<double>(n - 1) * topology.params().message_overhead_s);
  builder.finish(fmt::format("all-to-all direct (n={})", n), 1, out);
}

void validate(const Topology& topology, const CollectiveQuery& q) {
  if (q.kind == CollectiveKind::kCollectivePermute) {
    for (const auto& [s, d] : q.permute_pairs)
      if (s < 0 || d < 0 || s >= topology.total_devices() || d >= topology.total_devices())
        throw UserError(
            fmt::format("collective-permute pair {}->{} is outside the {} devices of the slice", s,
                        d, topology.total_devices()));
    return;
  }
  if (q.group.empty())
    throw UserError(fmt::format("{} over an empty device group", collective_kind_name(q.kind)));
  for (CoreId core : q.group)
    if (core < 0 || core >= topology.num_devices())
      throw UserError(fmt::format("{} group names device {} outside the {} devices of the slice",
                                  collective_kind_name(q.kind), core, topology.num_devices()));
  if (!q.group_shape.empty() && product(q.group_shape) != static_cast<int64_t>(q.group.size()))
    throw UserError(fmt::format("group shape [{}] does not hold the group's {} devices",
                                fmt::join(q.group_shape, ", "), q.group.size()));
}

CollectiveAlgorithm resolve(const CollectiveQuery& q, int grid_dims) {
  const auto a = q.algorithm;
  switch (q.kind) {
    case CollectiveKind::kCollectivePermute:
      return CollectiveAlgorithm::kDirect;
    case CollectiveKind::kAllToAll:
      // Direct (every pair, dimension-order routed) moves the same link-bytes
      // as the per-dim exchange but keeps all dims' links busy at once, so it
      // is never slower on a torus; per-dim only when asked for.
      if (a == CollectiveAlgorithm::kTorus && grid_dims >= 1) return CollectiveAlgorithm::kTorus;
      return CollectiveAlgorithm::kDirect;
    default:
      if (a == CollectiveAlgorithm::kAuto)
        return grid_dims >= 2 ? CollectiveAlgorithm::kTorus
                              : CollectiveAlgorithm::kBidirectionalRing;
      if (a == CollectiveAlgorithm::kDirect) return CollectiveAlgorithm::kBidirectionalRing;
      return a;
  }
}

}  // namespace

CollectivePlan plan_collective(const Topology& topology, const CollectiveQuery& q) {
  validate(topology, q);
  std::vector<int64_t> shape = q.group_shape.empty()
                                   ? std::vector<int64_t>{static_cast<int64_t>(q.group.size())}
                                   : q.group_shape;
  const int grid_dims =
      static_cast<int>(std::count_if(shape.begin(), shape.end(), [](int64_t d) { return d > 1; }));
  CollectivePlan plan;
  plan.kind = q.kind;
  plan.algorithm = resolve(q, grid_dims);
  PhaseBuilder builder(topology);
  const double v = q.bytes_per_device;
  const bool bidirectional = plan.algorithm != CollectiveAlgorithm::kRing &&
                             plan.algorithm != CollectiveAlgorithm::kRingPerDim;
  const bool per_dim = plan.algorithm == CollectiveAlgorithm::kTorus ||
                       plan.algorithm == CollectiveAlgorithm::kRingPerDim ||
                       plan.algorithm == CollectiveAlgorithm::kTorusPipelined;
  // Pipelining overlaps stages on different dims; on one dim it would only
  // add latency, so a 1-D group runs unchunked.
  const int64_t chunks = plan.algorithm == CollectiveAlgorithm::kTorusPipelined && grid_dims >= 2
                             ? std::max<int64_t>(q.chunks, 1)
                             : 1;
  const auto n = static_cast<int64_t>(q.group.size());

  // Reduce-scatter over dims in order, each shrinking the data by its size;
  // all-gather the same dims in reverse. ring and bidirectional_ring treat
  // the group as 1-D.
  if (!per_dim) shape = {n};
  auto reduce_scatter = [&](double operand) {
    for (size_t d = 0; d < shape.size(); ++d) {
      ring_pass(builder, embedded_rings(topology, lines_along(q.group, shape, d)), operand,
                bidirectional, fmt::format("reduce-scatter dim {}", d), plan.phases);
      operand /= static_cast<double>(shape[d]);
    }
  };
  auto all_gather = [&](double result) {
    std::vector<double> full(shape.size());  // full result of the sub-gather on dim d
    for (size_t d = 0; d < shape.size(); ++d) {
      full[d] = result;
      result /= static_cast<double>(shape[d]);
    }
    for (size_t d = shape.size(); d-- > 0;)
      ring_pass(builder, embedded_rings(topology, lines_along(q.group, shape, d)), full[d],
                bidirectional, fmt::format("all-gather dim {}", d), plan.phases);
  };

  // Pipelined: the same passes as stages, chunks flowing through them.
  auto pipelined = [&](bool scatter, bool gather) {
    std::vector<Stage> stages;
    std::vector<double> full(shape.size());  // data on dim d: V / (sizes of the dims before it)
    double data = v;
    for (size_t d = 0; d < shape.size(); ++d) {
      full[d] = data;
      data /= static_cast<double>(shape[d]);
    }
    for (size_t d = 0; scatter && d < shape.size(); ++d)
      if (shape[d] > 1)
        stages.push_back(make_stage(topology, lines_along(q.group, shape, d), full[d],
                                    fmt::format("reduce-scatter dim {}", d)));
    for (size_t d = shape.size(); gather && d-- > 0;)
      if (shape[d] > 1)
        stages.push_back(make_stage(topology, lines_along(q.group, shape, d), full[d],
                                    fmt::format("all-gather dim {}", d)));
    pipelined_passes(builder, stages, chunks, plan.phases);
  };
  switch (q.kind) {
    case CollectiveKind::kAllReduce:
      if (chunks > 1) {
        pipelined(true, true);
      } else {
        reduce_scatter(v);
        all_gather(v);
      }
      break;
    case CollectiveKind::kAllGather:
      chunks > 1 ? pipelined(false, true) : all_gather(v);
      break;
    case CollectiveKind::kReduceScatter:
      chunks > 1 ? pipelined(true, false) : reduce_scatter(v);
      break;
    case CollectiveKind::kAllToAll:
      if (plan.algorithm == CollectiveAlgorithm::kTorus) {
        for (size_t d = 0; d < shape.size(); ++d) {
          if (shape[d] < 2) continue;
          const double chunk = v / static_cast<double>(shape[d]);
          for (const auto& line : lines_along(q.group, shape, d))
            for (CoreId s : line)
              for (CoreId t : line) builder.add_flow(s, t, chunk);
          builder.finish(fmt::format("all-to-all dim {} (n={})", d, shape[d]), 1, plan.phases);
        }
      } else {
        all_to_all_direct(builder, topology, q.group, v, plan.phases);
      }
      break;
    case CollectiveKind::kCollectivePermute: {
      bool dcn = false;
      for (const auto& [s, t] : q.permute_pairs) {
        builder.add_flow(s, t, v);
        dcn = dcn || topology.slice_of(s) != topology.slice_of(t);
      }
      builder.finish("collective-permute", 1, plan.phases);
      for (Phase& phase : plan.phases) phase.dcn = dcn;
      break;
    }
  }
  for (const Phase& phase : plan.phases)
    plan.analytic_time_s += static_cast<double>(phase.repeat) * phase.step_time_s;
  plan.bytes_sent_per_device = builder.max_sent();
  if (q.kind == CollectiveKind::kAllToAll && plan.algorithm == CollectiveAlgorithm::kDirect)
    plan.bytes_sent_per_device =
        v * static_cast<double>(n - 1) / static_cast<double>(n);  // counted flows
  return plan;
}

std::vector<std::vector<CoreId>> members_by_slice(const Topology& topology,
                                                  const std::vector<CoreId>& group) {
  std::vector<std::vector<CoreId>> out;
  std::vector<int64_t> slices;
  for (CoreId core : group) {
    const int64_t s = topology.slice_of(core);
    const auto it = std::find(slices.begin(), slices.end(), s);
    if (it == slices.end()) {
      slices.push_back(s);
      out.push_back({core});
    } else {
      out[static_cast<size_t>(it - slices.begin())].push_back(core);
    }
  }
  return out;
}

CollectivePlan shift_to_slice(const Topology& topology, const CollectivePlan& plan, int64_t slice) {
  if (slice == 0) return plan;
  CollectivePlan out = plan;
  const CoreId core_shift = slice * topology.num_devices();
  const auto link_shift = static_cast<LinkId>(slice * topology.links_per_slice());
  for (Phase& phase : out.phases) {
    for (Flow& f : phase.flows) f.src += core_shift, f.dst += core_shift;
    for (LinkTransfer& t : phase.link_loads) t.link += link_shift;
  }
  return out;
}

namespace {

// Phase i of every plan runs together (disjoint links: the plans lie in different slices);
// plans whose phases differ run one after another.
CollectivePlan run_together(std::vector<CollectivePlan> plans) {
  CollectivePlan out = plans.front();
  bool aligned = true;
  for (const CollectivePlan& p : plans) {
    if (p.phases.size() != out.phases.size()) aligned = false;
    for (size_t i = 0; aligned && i < p.phases.size(); ++i)
      aligned = p.phases[i].repeat == out.phases[i].repeat;
  }
  for (size_t j = 1; j < plans.size(); ++j) {
    const CollectivePlan& p = plans[j];
    if (!aligned) {
      out.phases.insert(out.phases.end(), p.phases.begin(), p.phases.end());
      continue;
    }
    for (size_t i = 0; i < p.phases.size(); ++i) {
      Phase& phase = out.phases[i];
      phase.flows.insert(phase.flows.end(), p.phases[i].flows.begin(), p.phases[i].flows.end());
      phase.link_loads.insert(phase.link_loads.end(), p.phases[i].link_loads.begin(),
                              p.phases[i].link_loads.end());
      phase.latency_s = std::max(phase.latency_s, p.phases[i].latency_s);
      phase.step_time_s = std::max(phase.step_time_s, p.phases[i].step_time_s);
    }
    out.bytes_sent_per_device = std::max(out.bytes_sent_per_device, p.bytes_sent_per_device);
  }
  out.analytic_time_s = 0;
  for (const Phase& phase : out.phases)
    out.analytic_time_s += static_cast<double>(phase.repeat) * phase.step_time_s;
  return out;
}

// Appends `part`'s phases to `plan` (one after another).
void append_plan(CollectivePlan& plan, const CollectivePlan& part) {
  plan.phases.insert(plan.phases.end(), part.phases.begin(), part.phases.end());
  plan.analytic_time_s += part.analytic_time_s;
  plan.bytes_sent_per_device += part.bytes_sent_per_device;
}

}  // namespace

CollectivePlan plan_over_columns(const Topology& topology, CollectiveKind kind,
                                 const std::vector<std::vector<CoreId>>& columns, double bytes) {
  CollectivePlan plan;
  plan.kind = kind;
  plan.algorithm =
      kind == CollectiveKind::kAllToAll ? CollectiveAlgorithm::kDirect : CollectiveAlgorithm::kRing;
  PhaseBuilder builder(topology);
  int64_t n_max = 0;
  for (const auto& column : columns) {
    const auto n = static_cast<int64_t>(column.size());
    n_max = std::max(n_max, n);
    if (n < 2) continue;
    const double chunk = bytes / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
      const CoreId src = column[static_cast<size_t>(i)];
      if (kind == CollectiveKind::kAllToAll) {
        for (int64_t j = 0; j < n; ++j)
          if (j != i) builder.add_flow(src, column[static_cast<size_t>(j)], chunk);
      } else {
        builder.add_flow(src, column[static_cast<size_t>((i + 1) % n)], chunk);
      }
    }
  }
  const int64_t steps = kind == CollectiveKind::kAllReduce  ? 2 * (n_max - 1)
                        : kind == CollectiveKind::kAllToAll ? 1
                                                            : n_max - 1;
  builder.finish(fmt::format("dcn {} (n={})", collective_kind_name(kind), n_max), steps,
                 plan.phases);
  for (Phase& phase : plan.phases) {
    phase.dcn = true;
    plan.analytic_time_s += static_cast<double>(phase.repeat) * phase.step_time_s;
  }
  plan.bytes_sent_per_device = builder.max_sent();
  return plan;
}

CollectivePlan plan_across_slices(const Topology& topology, const CollectiveQuery& q,
                                  const SlicePlanner& in_slice) {
  const std::vector<std::vector<CoreId>> by_slice = members_by_slice(topology, q.group);
  const size_t k = by_slice.front().size();
  const bool even = std::all_of(by_slice.begin(), by_slice.end(),
                                [k](const std::vector<CoreId>& m) { return m.size() == k; });
  if (!even) return plan_over_columns(topology, q.kind, {q.group}, q.bytes_per_device);
  // Columns: the j-th member of every slice.
  std::vector<std::vector<CoreId>> columns(k);
  for (size_t j = 0; j < k; ++j)
    for (const auto& members : by_slice) columns[j].push_back(members[j]);
  const double v = q.bytes_per_device;
  const double per_member = v / static_cast<double>(k);
  // The in-slice part in every slice at once, each planned on slice 0.
  auto in_slices = [&](CollectiveKind kind, double bytes) {
    std::vector<CollectivePlan> plans;
    for (const auto& members : by_slice) {
      const int64_t s = topology.slice_of(members.front());
      std::vector<CoreId> local = members;
      for (CoreId& c : local) c -= s * topology.num_devices();
      plans.push_back(shift_to_slice(topology, in_slice(kind, bytes, local), s));
    }
    return run_together(std::move(plans));
  };
  CollectivePlan plan;
  plan.kind = q.kind;
  plan.algorithm = CollectiveAlgorithm::kRing;
  const bool local = k > 1;
  switch (q.kind) {
    case CollectiveKind::kAllReduce:
      if (local) append_plan(plan, in_slices(CollectiveKind::kReduceScatter, v));
      append_plan(plan, plan_over_columns(topology, q.kind, columns, per_member));
      if (local) append_plan(plan, in_slices(CollectiveKind::kAllGather, v));
      break;
    case CollectiveKind::kAllGather:
      append_plan(plan, plan_over_columns(topology, q.kind, columns, per_member));
      if (local) append_plan(plan, in_slices(CollectiveKind::kAllGather, v));
      break;
    case CollectiveKind::kReduceScatter:
      if (local) append_plan(plan, in_slices(CollectiveKind::kReduceScatter, v));
      append_plan(plan, plan_over_columns(topology, q.kind, columns, per_member));
      break;
    case CollectiveKind::kAllToAll:
      if (local) append_plan(plan, in_slices(CollectiveKind::kAllToAll, v));
      append_plan(plan, plan_over_columns(topology, q.kind, columns, v));
      break;
    case CollectiveKind::kCollectivePermute:
      return plan_over_columns(topology, q.kind, {q.group}, v);  // not reached: routed directly
  }
  return plan;
}

double dcn_time_s(const CollectivePlan& plan) {
  double seconds = 0;
  for (const Phase& phase : plan.phases)
    if (phase.dcn) seconds += static_cast<double>(phase.repeat) * phase.step_time_s;
  return seconds;
}

}  // namespace podsim::hw
