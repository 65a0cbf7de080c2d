// SystemC device streams and the run loop (see engine.h).
#include "sim/engine.h"

#include <systemc>

#include <fmt/format.h>
#include <array>
#include <cstdlib>
#include <deque>
#include <memory>
#include <stdexcept>
#include <unordered_map>

#include "sim/collective_sharing.h"
#include "sim/fabric.h"

// libsystemc's main() calls sc_main; podsim never enters through it (its own
// main drives sc_start), but the symbol must exist for the link. Kept in this
// file so every program that runs the engine links it.
int sc_main(int, char**) { return 0; }

namespace podsim::sim {

using sc_core::SC_SEC;
using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

namespace {

// SystemC's default time resolution: a finish time within it of now is now.
constexpr double kTimeResolution_s = 2e-12;

enum class ComputeState { kStart, kBusy, kWaiting, kTail, kDone };

// The least share of HBM bandwidth a compute kernel keeps while collective
// DMAs use the rest: [D] round-robin arbitration between core and DMA engines
// (docs/reference/hardware.md#constants-in-code).
constexpr double kMinComputeHbmShare = 0.5;

constexpr size_t kCollectiveKinds = 5;  // hw::CollectiveKind
static_assert(static_cast<size_t>(hw::CollectiveKind::kCollectivePermute) + 1 == kCollectiveKinds);

// A collective this device is running.
struct Running {
  int32_t ordinal = -1;
  int32_t op = -1;    // StepProgram op
  int32_t spec = -1;  // catalog spec
  size_t kind = 0;
  double start_s = 0;
  // Fast mode: a transfer part (the fraction left, its uncontended
  // duration and its speed among the device's transferring collectives,
  // collective_sharing.h), then the plan's latencies back to back (as the
  // fabric runs a phase's transfer, then its latency), which use no link.
  double remaining = 1;
  double transfer_s = 0;
  double speed = 1;
  double latency_s = 0;
  double finish_s = -1;  // set when the transfer is done
  // Uncontended duration: its DMAs move dma_hbm_bytes evenly over it.
  double alone_s = 0;
  // Full mode: the group run on the fabric.
  GroupRun* run = nullptr;
  int32_t group = -1;
  int32_t slot = -1;  // the run's key: the group, or by symmetry class its orbit
};

struct Device {
  int64_t id = 0;
  int32_t variant = -1;  // EngineInputs::device_variant
  ComputeState compute = ComputeState::kStart;
  size_t cursor = 0;
  int32_t waiting_for = -1;  // collective ordinal
  double wait_start_s = 0;
  double busy_start_s = 0;
  // The op in progress: the fraction done by op_progress_s, at the HBM
  // share the collectives leave it (re-timed on hbm_change).
  double op_progress = 0;
  double op_progress_s = 0;
  double hbm_share = 1;
  size_t reported_cursor = 0;  // steps counted into EngineRun::steps_done_
  // Collective stream: issued ordinals wait per kind (in issue order) until
  // fewer than the kind's in-flight limit run; kinds run concurrently.
  int32_t issued = 0;
  int32_t completed_count = 0;
  std::vector<char> completed;   // per ordinal
  int32_t first_unfinished = 0;  // the step's tail: no ordinal below it is running
  std::array<std::deque<int32_t>, kCollectiveKinds> queued;
  std::array<int64_t, kCollectiveKinds> running_of_kind{};
  std::vector<Running> running;
  double shares_updated_s = 0;                     // fast mode: when `remaining` was last advanced
  std::vector<double> own_ready_s, group_start_s;  // per ordinal
  sc_core::sc_event collective_wake, done_event, hbm_change;
  DeviceAccount account;
};

// The plan a device's group of a collective runs (CollectiveSpec::plan_labels).
std::string plan_label(const CollectiveSpec& spec, int64_t device) {
  const int32_t group = spec.group_of_device[static_cast<size_t>(device)];
  return group >= 0 && static_cast<size_t>(group) < spec.plan_labels.size()
             ? spec.plan_labels[static_cast<size_t>(group)]
             : std::string();
}

std::string link_label(const hw::Topology& topology, hw::LinkId id) {
  const hw::Link& link = topology.link(id);
  if (link.kind == hw::LinkKind::kOnChip)
    return fmt::format("ici {} on-chip {}->{}", id, link.src_core, link.dst_core);
  if (link.kind == hw::LinkKind::kDcn)  // a chip's share of the data-centre network
    return fmt::format("dcn {} chip {} {}", id, link.src_chip, link.direction > 0 ? "out" : "in");
  return fmt::format("ici {} chip {}->{} dim {}{}", id, link.src_chip, link.dst_chip, link.dim,
                     link.direction > 0 ? '+' : '-');
}

class EngineRun {
 public:
  explicit EngineRun(const EngineInputs& in) : in_(in), steps_(in.program.steps) {}

  EngineResult run() {
    base_ = sc_core::sc_time_stamp();
    std::vector<int64_t> simulated;
    check_variants();
    contention_ = in_.hbm_bandwidth > 0;
    for (const VariantCosts& v : in_.variants) contention_ = contention_ || v.hbm_bandwidth > 0;
    if (const SymmetryClasses* sym = classes()) {
      // The classes must have been found with these variants (a class runs on one).
      for (size_t d = 0; d < in_.device_variant.size(); ++d) {
        const auto rep = sym->representatives[static_cast<size_t>(sym->class_of_device[d])];
        if (in_.device_variant[d] != in_.device_variant[static_cast<size_t>(rep)])
          throw std::logic_error(fmt::format(
              "symmetry class of device {} found without its chip variant (sim/symmetry.h)", d));
      }
      simulated = sym->representatives;
    } else
      for (int64_t i = 0; i < (in_.fidelity == Fidelity::kFast ? 1 : in_.devices); ++i)
        simulated.push_back(i);
    const size_t collectives = in_.program.collective_steps.size();
    for (int64_t i : simulated) {
      auto d = std::make_unique<Device>();
      d->id = i;
      if (!in_.device_variant.empty()) d->variant = in_.device_variant[static_cast<size_t>(i)];
      d->completed.assign(collectives, 0);
      d->own_ready_s.assign(collectives, 0.0);
      d->group_start_s.assign(collectives, 0.0);
      d->account.op_busy_s.assign(in_.program.ops.size(), 0.0);
      d->account.collective_exposed_s.assign(in_.program.ops.size(), 0.0);
      devices_.push_back(std::move(d));
    }
    if (in_.fidelity == Fidelity::kFull) {
      LinkTraceHook hook;
      if (in_.link_totals)
        result_.link_busy_s.assign(static_cast<size_t>(in_.topology.num_links()), 0.0);
      if (in_.record_trace || in_.link_totals)
        hook.on_transfer = [this](hw::LinkId link, int32_t, double start, double duration,
                                  double bytes) {
          if (in_.link_totals) result_.link_busy_s[static_cast<size_t>(link)] += duration;
          if (!in_.record_trace) return;
          const int64_t device = device_of_link(link);
          if (!traced(device) || duration <= 0) return;
          const double utilisation =
              std::min(1.0, bytes / (duration * in_.topology.link(link).bandwidth));
          record(LinkLoad{device, link_label(in_.topology, link), start, duration, utilisation});
        };
      fabric_ = std::make_unique<Fabric>(in_.topology, std::move(hook), [this] { return now(); });
    }
    std::vector<sc_core::sc_process_handle> processes;
    sc_core::sc_spawn_options method;
    method.spawn_method();
    for (auto& d : devices_) {
      Device* device = d.get();
      processes.push_back(
          sc_core::sc_spawn([this, device] { on_compute(*device); }, nullptr, &method));
      processes.push_back(
          sc_core::sc_spawn([this, device] { on_collective(*device); }, nullptr, &method));
    }
    if (fabric_) {
      Fabric* fabric = fabric_.get();
      processes.push_back(sc_core::sc_spawn([fabric] { fabric->on_wake(); }, nullptr, &method));
    }
    sc_core::sc_start();
    if (stopped_) {
      result_.stopped = true;
      return std::move(result_);
    }
    for (auto& p : processes) p.kill();
    for (const auto& d : devices_)
      if (d->compute != ComputeState::kDone)
        throw std::logic_error(fmt::format("simulation stalled: device {} at step {} of {}", d->id,
                                           d->cursor, steps_.size()));
    for (auto& d : devices_) result_.devices.push_back(std::move(d->account));
    result_.kernel_events = activations_ + (fabric_ ? fabric_->activations() : 0);
    return std::move(result_);
  }

 private:
  double now() const { return (sc_core::sc_time_stamp() - base_).to_seconds(); }

  // The variants must cover the program's devices and ops (costed on the same StepProgram).
  void check_variants() const {
    if (!in_.device_variant.empty() &&
        in_.device_variant.size() != static_cast<size_t>(in_.devices))
      throw std::logic_error(fmt::format("device_variant holds {} devices, the program {}",
                                         in_.device_variant.size(), in_.devices));
    for (int32_t v : in_.device_variant)
      if (v < -1 || v >= static_cast<int32_t>(in_.variants.size()))
        throw std::logic_error(fmt::format("device variant {} of {}", v, in_.variants.size()));
    for (const VariantCosts& v : in_.variants)
      if (v.ops.size() != in_.program.ops.size())
        throw std::logic_error(fmt::format("a chip variant costs {} ops, the program has {}",
                                           v.ops.size(), in_.program.ops.size()));
  }

  // An op's cost on the device's own chip (its variant's, else the machine's).
  const OpCost& cost_of(const Device& d, int32_t op) const {
    return d.variant < 0
               ? in_.program.ops[static_cast<size_t>(op)].cost
               : in_.variants[static_cast<size_t>(d.variant)].ops[static_cast<size_t>(op)];
  }
  double hbm_bandwidth_of(const Device& d) const {
    return d.variant < 0 ? in_.hbm_bandwidth
                         : in_.variants[static_cast<size_t>(d.variant)].hbm_bandwidth;
  }

  // Full mode by symmetry class (one representative device each).
  const SymmetryClasses* classes() const {
    return in_.fidelity == Fidelity::kFull && in_.symmetry && in_.symmetry->applied ? in_.symmetry
                                                                                    : nullptr;
  }

  // The device whose chip sends on the link (its first core; on-chip: the
  // sending core).
  int64_t device_of_link(hw::LinkId id) const {
    const hw::Link& l = in_.topology.link(id);
    return l.kind == hw::LinkKind::kOnChip ? l.src_core
                                           : l.src_chip * in_.topology.slice().devices_per_chip;
  }

  bool traced(int64_t device) const {
    return device >= 0 && static_cast<size_t>(device) < in_.traced.size() &&
           in_.traced[static_cast<size_t>(device)];
  }

  // Trace recording, bounded by the selection's max_events: true when an
  // item starting at start_s and lasting duration_s is kept.
  bool keep(double start_s, double duration_s) {
    const TraceSelection& sel = in_.trace;
    if (start_s >= sel.window_end_s || start_s + duration_s < sel.window_begin_s) return false;
    if (result_.trace_cut_s >= 0) return start_s < result_.trace_cut_s;  // what straddles the cut
    ++result_.trace_events_seen;
    const auto kept = static_cast<int64_t>(result_.events.size() + result_.link_loads.size());
    if (sel.max_events <= 0 || kept < sel.max_events) return true;
    if (sel.window_given) {
      result_.trace_over_limit = true;
      return false;
    }
    // Without a window the trace ends now: items still running on some
    // device that started before now are kept as they finish (at most the
    // items in flight), later ones are not.
    result_.trace_cut_s = now();
    return start_s < result_.trace_cut_s;
  }
  void record(TraceEvent&& e) {
    if (keep(e.start_s, e.duration_s)) result_.events.push_back(std::move(e));
  }
  void record(LinkLoad&& l) {
    if (keep(l.start_s, l.duration_s)) result_.link_loads.push_back(std::move(l));
  }

  // Fast mode: the links a traced device sends on that a collective spec
  // loads (link, seconds busy), cached per spec.
  const std::vector<std::pair<hw::LinkId, double>>& traced_links(int32_t spec) {
    auto& slot = traced_links_[spec];
    if (!slot) {
      slot = std::make_unique<std::vector<std::pair<hw::LinkId, double>>>();
      for (const auto& [link, busy] : in_.collectives.fast_timing(spec).link_busy_s)
        if (traced(device_of_link(link))) slot->emplace_back(link, busy);
    }
    return *slot;
  }

  const OpInfo& op_of_step(size_t step) const {
    return in_.program.ops[static_cast<size_t>(steps_[step].op)];
  }

  void on_compute(Device& d) {
    ++activations_;
    const double t = now();
    switch (d.compute) {
      case ComputeState::kBusy:
        if (!op_done(d, t)) return;
        finish_op(d, t);
        break;
      case ComputeState::kWaiting:
      case ComputeState::kTail:
        if (!d.completed[static_cast<size_t>(d.waiting_for)]) {
          sc_core::next_trigger(d.done_event);
          return;
        }
        account_wait(d, t);
        if (d.compute == ComputeState::kTail) {
          finish_tail(d, t);
          return;
        }
        break;
      case ComputeState::kDone:
        return;
      case ComputeState::kStart:
        break;
    }
    d.compute = ComputeState::kStart;
    while (true) {
      if (d.cursor == steps_.size()) {
        finish_tail(d, t);
        return;
      }
      if (in_.progress) report_progress(d);
      const Step& step = steps_[d.cursor];
      if (step.collective) {
        const int32_t ordinal = d.issued++;
        enqueue(d, ordinal);
        d.collective_wake.notify(SC_ZERO_TIME);
        ++d.cursor;
        // A synchronous collective: nothing after it in the schedule starts before it ends.
        if (op_of_step(d.cursor - 1).synchronous) {
          wait_for_collective(d, ordinal, ComputeState::kWaiting, t);
          return;
        }
        continue;
      }
      if (const int32_t unfinished = first_unfinished_read(d, step); unfinished >= 0) {
        wait_for_collective(d, unfinished, ComputeState::kWaiting, t);
        return;
      }
      const OpCost& cost = cost_of(d, step.op);
      if (cost.seconds <= 0) {
        ++d.cursor;
        continue;
      }
      d.compute = ComputeState::kBusy;
      d.busy_start_s = t;
      d.op_progress = 0;
      d.op_progress_s = t;
      sc_core::next_trigger(sc_time(kernel_seconds(d, cost), SC_SEC), d.hbm_change);
      return;
    }
  }

  // A compute kernel's duration on the device (cost: its cost on the device's chip) at the HBM
  // share the collectives leave it.
  double kernel_seconds(const Device& d, const OpCost& cost) const {
    return seconds_with_hbm_share(cost, d.hbm_share);
  }

  // The first collective the step reads that is not done yet, -1 if none.
  int32_t first_unfinished_read(const Device& d, const Step& step) const {
    for (uint32_t i = step.wait_begin; i < step.wait_end; ++i) {
      const int32_t ordinal = in_.program.waits[i];
      if (!d.completed[static_cast<size_t>(ordinal)]) return ordinal;
    }
    return -1;
  }

  // The op at the cursor progressed at the current HBM share since the last
  // update.
  void advance_op(Device& d, double t) {
    const double duration = kernel_seconds(d, cost_of(d, steps_[d.cursor].op));
    d.op_progress += (t - d.op_progress_s) / duration;
    d.op_progress_s = t;
  }

  // The compute stream woke while busy (its op's timer or a change of HBM
  // share): true when the op is done, else it sleeps until the op's new end.
  bool op_done(Device& d, double t) {
    advance_op(d, t);
    const double left_s =
        (1 - d.op_progress) * kernel_seconds(d, cost_of(d, steps_[d.cursor].op));
    if (left_s <= kTimeResolution_s) return true;
    sc_core::next_trigger(sc_time(left_s, SC_SEC), d.hbm_change);
    return false;
  }

  // Called by the collective stream after its running set or speeds
  // changed: the share of HBM the compute kernel gets from now on.
  void update_hbm_share(Device& d, double t) {
    const double bandwidth = hbm_bandwidth_of(d);
    if (bandwidth <= 0) return;
    double dma_rate = 0;
    for (const Running& r : d.running) {
      const double bytes = in_.collectives.spec(r.spec).dma_hbm_bytes;
      if (bytes <= 0 || r.alone_s <= 0) continue;
      if (r.run) {
        if (r.run->started && !r.run->done) dma_rate += bytes / r.alone_s;
      } else {
        dma_rate += bytes / r.alone_s * (r.finish_s < 0 ? r.speed : 1.0);
      }
    }
    const double share = std::max(kMinComputeHbmShare, 1 - dma_rate / bandwidth);
    if (share == d.hbm_share) return;
    if (d.compute == ComputeState::kBusy) advance_op(d, t);
    d.hbm_share = share;
    if (d.compute == ComputeState::kBusy) d.hbm_change.notify(SC_ZERO_TIME);
  }

  // The step ends when every collective it issued has: wait for the first
  // one still running (collectives of different kinds finish out of order).
  void finish_tail(Device& d, double t) {
    if (d.completed_count < d.issued) {
      // Completions only ever set flags, so the first unfinished ordinal
      // only moves forward.
      while (d.completed[static_cast<size_t>(d.first_unfinished)]) ++d.first_unfinished;
      wait_for_collective(d, d.first_unfinished, ComputeState::kTail, t);
      return;
    }
    d.compute = ComputeState::kDone;
    d.account.finish_s = t;
  }

  void wait_for_collective(Device& d, int32_t ordinal, ComputeState state, double t) {
    d.compute = state;
    d.waiting_for = ordinal;
    d.wait_start_s = t;
    sc_core::next_trigger(d.done_event);
  }

  // The op at the cursor ran from busy_start_s to t: its time split into the
  // bounding unit's part and the fixed overhead.
  void finish_op(Device& d, double t) {
    const OpInfo& op = op_of_step(d.cursor);
    const OpCost& cost = cost_of(d, steps_[d.cursor].op);  // the kernel alone on this device
    const double busy = t - d.busy_start_s;
    const double alone = std::min(busy, cost.seconds);
    const double unit = std::min(alone, cost.unit_seconds);
    DeviceAccount& a = d.account;
    a.compute_s += busy;
    a.op_busy_s[static_cast<size_t>(steps_[d.cursor].op)] += busy;
    a.overhead_s += alone - unit;
    a.hbm_s += busy - alone;
    a.hbm_contention_s += busy - alone;
    switch (cost.bound) {
      case hw::Bound::kMxu:
        a.mxu_s += unit;
        break;
      case hw::Bound::kVpu:
        a.vpu_s += unit;
        break;
      case hw::Bound::kHbm:
        a.hbm_s += unit;
        break;
      case hw::Bound::kOverhead:
        a.overhead_s += unit;
        break;
    }
    if (in_.record_trace && traced(d.id))
      record(TraceEvent{d.id,
                        "compute",
                        op.name,
                        d.busy_start_s,
                        busy,
                        {{"op_name", op.op_name},
                         {"opcode", op.opcode},
                         {"shape", op.shape},
                         {"bound", hw::bound_name(cost.bound)}},
                        {{"flops", cost.flops}, {"hbm_bytes", cost.hbm_bytes}},
                        busy > 0 ? cost.hbm_bytes / busy : 0.0,
                        -1});
    ++d.cursor;
  }

  // The compute stream waited from wait_start_s to t for collective
  // waiting_for: the part during which that collective waited for its
  // group's other members is idle, the rest exposed communication.
  void account_wait(Device& d, double t) {
    const auto w = static_cast<size_t>(d.waiting_for);
    const double wait = t - d.wait_start_s;
    const double peer_from = std::max(d.wait_start_s, d.own_ready_s[w]);
    const double peer_to = std::min(t, d.group_start_s[w]);
    const double idle = std::max(0.0, peer_to - peer_from);
    d.account.idle_s += idle;
    d.account.exposed_s += wait - idle;
    d.account.collective_exposed_s[static_cast<size_t>(op_of_ordinal(d.waiting_for))] +=
        wait - idle;
  }

  // The collective stream: retire what finished, start what the per-kind
  // limit lets start (in issue order), then sleep until the next finish or
  // issue.
  void on_collective(Device& d) {
    ++activations_;
    const double t = now();
    const bool fast = in_.fidelity == Fidelity::kFast;
    if (fast) advance_shares(d, t);
    for (size_t i = 0; i < d.running.size();) {
      const Running& r = d.running[i];
      const bool finished =
          fast ? r.finish_s >= 0 && r.finish_s <= t + kTimeResolution_s : r.run->done;
      if (!finished) {
        ++i;
        continue;
      }
      --d.running_of_kind[r.kind];
      complete(d, r, t);
      d.running.erase(d.running.begin() + static_cast<std::ptrdiff_t>(i));
    }
    while (static_cast<int64_t>(d.running.size()) < in_.in_flight) {
      // Among the kinds that may start one, the lowest ordinal first; a
      // kind's next collective waits until the collectives it reads are done
      // (and the kind's later ones behind it, in issue order).
      size_t best = kCollectiveKinds;
      for (size_t k = 0; k < kCollectiveKinds; ++k)
        if (!d.queued[k].empty() && d.running_of_kind[k] < in_.in_flight_per_kind &&
            (best == kCollectiveKinds || d.queued[k].front() < d.queued[best].front()) &&
            first_unfinished_read(
                d, steps_[static_cast<size_t>(
                       in_.program.collective_steps[static_cast<size_t>(d.queued[k].front())])]) <
                0)
          best = k;
      if (best == kCollectiveKinds) break;
      const int32_t ordinal = d.queued[best].front();
      d.queued[best].pop_front();
      start(d, ordinal, best, t);
    }
    if (fast) assign_shares(d);
    update_hbm_share(d, t);
    if (fast) {
      double next = -1;
      for (const Running& r : d.running) {
        const double left = r.finish_s >= 0 ? r.finish_s - t : r.remaining * r.transfer_s / r.speed;
        if (next < 0 || left < next) next = std::max(0.0, left);
      }
      if (next >= 0) {
        sc_core::next_trigger(sc_time(next, SC_SEC), d.collective_wake);
        return;
      }
    }
    sc_core::next_trigger(d.collective_wake);
  }

  void enqueue(Device& d, int32_t ordinal) {
    const int32_t spec = spec_of_ordinal(ordinal);
    d.queued[static_cast<size_t>(in_.collectives.spec(spec).kind)].push_back(ordinal);
  }

  int32_t op_of_ordinal(int32_t ordinal) const {
    return steps_[static_cast<size_t>(in_.program.collective_steps[static_cast<size_t>(ordinal)])]
        .op;
  }
  int32_t spec_of_ordinal(int32_t ordinal) const {
    return in_.program.ops[static_cast<size_t>(op_of_ordinal(ordinal))].collective;
  }

  void start(Device& d, int32_t ordinal, size_t kind, double t) {
    const auto w = static_cast<size_t>(ordinal);
    d.own_ready_s[w] = t;
    d.group_start_s[w] = t;
    Running r;
    r.ordinal = ordinal;
    r.op = op_of_ordinal(ordinal);
    r.spec = spec_of_ordinal(ordinal);
    r.kind = kind;
    r.start_s = t;
    if (in_.fidelity == Fidelity::kFast) {
      const double alone = in_.fast_collective_s[static_cast<size_t>(r.spec)];
      if (alone <= 0) {
        complete(d, r, t);
        return;
      }
      r.alone_s = alone;
      r.latency_s = std::min(alone, in_.collectives.fast_timing(r.spec).latency_s);
      r.transfer_s = alone - r.latency_s;
      if (r.transfer_s <= 0) r.finish_s = t + alone;
    } else {
      const CollectiveSpec& spec = in_.collectives.spec(r.spec);
      r.group = spec.group_of_device[static_cast<size_t>(d.id)];
      if (r.group < 0) {
        complete(d, r, t);
        return;
      }
      r.alone_s = spec.plans[static_cast<size_t>(r.group)].analytic_time_s;
      r.slot = r.group;
      if (const SymmetryClasses* sym = classes())
        r.slot =
            sym->specs[static_cast<size_t>(r.spec)].orbit_of_group[static_cast<size_t>(r.group)];
      r.run = arrive(ordinal, r.slot, r.op, r.spec);
      r.run->member_wakes.push_back(&d.collective_wake);
    }
    ++d.running_of_kind[kind];
    d.running.push_back(r);
  }

  // Fast mode: progress of every running collective since the last update
  // at its speed; one whose finish time has come (within the kernel's 1 ps
  // time resolution) is done.
  void advance_shares(Device& d, double t) {
    const double elapsed = t - d.shares_updated_s;
    d.shares_updated_s = t;
    for (Running& r : d.running) {
      if (r.finish_s >= 0) continue;
      const double left_s = r.remaining * r.transfer_s / r.speed - elapsed;
      if (left_s <= kTimeResolution_s) {
        r.remaining = 0;
        r.finish_s = t + std::max(0.0, left_s) + r.latency_s;
      } else {
        r.remaining = left_s * r.speed / r.transfer_s;
      }
    }
  }

  void assign_shares(Device& d) {
    std::vector<Running*> transferring;
    for (Running& r : d.running)
      if (r.finish_s < 0) transferring.push_back(&r);
    if (transferring.size() == 1) transferring[0]->speed = 1;
    if (transferring.size() < 2) return;
    std::vector<int32_t> specs;
    std::vector<SharedCollective> shared;
    for (const Running* r : transferring) {
      specs.push_back(r->spec);
      shared.push_back({r->transfer_s, &in_.collectives.fast_timing(r->spec).link_busy_s});
    }
    const std::vector<double>& speeds = sharing_.speeds(specs, shared);
    for (size_t i = 0; i < transferring.size(); ++i) transferring[i]->speed = speeds[i];
  }

  // A member arrives at its group's run (by symmetry class: a representative at its group's
  // orbit's run, which waits for one representative per class in the orbit's groups).
  GroupRun* arrive(int32_t ordinal, int32_t slot_index, int32_t op, int32_t spec_index) {
    const CollectiveSpec& spec = in_.collectives.spec(spec_index);
    const int64_t key = (static_cast<int64_t>(ordinal) << 32) | static_cast<uint32_t>(slot_index);
    auto& slot = runs_[key];
    if (!slot) {
      slot = std::make_unique<GroupRun>();
      slot->op = op;
      if (const SymmetryClasses* sym = classes()) {
        if (static_cast<size_t>(spec_index) >= sym->specs.size())
          throw std::logic_error("symmetry classes computed before every collective was known");
        slot->plan = &sym->plan(in_.collectives, spec_index, slot_index);
        slot->expected =
            sym->specs[static_cast<size_t>(spec_index)].classes[static_cast<size_t>(slot_index)];
      } else {
        slot->plan = &spec.plans[static_cast<size_t>(slot_index)];
        slot->expected = static_cast<int64_t>(spec.groups[static_cast<size_t>(slot_index)].size());
      }
    }
    GroupRun* run = slot.get();
    if (++run->arrived == run->expected) {
      fabric_->start(run);
      // The members that arrived earlier start transferring now: their
      // collective streams re-share their HBM (nothing else of theirs
      // changes, so without DMA traffic they sleep on).
      if (contention_ && spec.dma_hbm_bytes > 0)
        for (sc_core::sc_event* wake : run->member_wakes) wake->notify(SC_ZERO_TIME);
    }
    return run;
  }

  void complete(Device& d, const Running& r, double t) {
    const auto w = static_cast<size_t>(r.ordinal);
    double start_s = r.start_s;
    if (r.run) {
      d.group_start_s[w] = r.run->start_s;
      start_s = r.run->start_s;
      if (++r.run->released == r.run->expected)
        runs_.erase((static_cast<int64_t>(r.ordinal) << 32) | static_cast<uint32_t>(r.slot));
    }
    const OpInfo& op = in_.program.ops[static_cast<size_t>(r.op)];
    const double busy = t - start_s;
    d.account.op_busy_s[static_cast<size_t>(r.op)] += busy;
    if (in_.record_trace && traced(d.id)) {
      const CollectiveSpec& spec = in_.collectives.spec(op.collective);
      const int64_t flow =
          r.run ? static_cast<int64_t>(r.ordinal) * (in_.devices + 1) + r.group : -1;
      record(TraceEvent{d.id,
                        fmt::format("collectives {}", hw::collective_kind_name(spec.kind)),
                        op.name,
                        start_s,
                        busy,
                        {{"op_name", op.op_name},
                         {"opcode", op.opcode},
                         {"shape", op.shape},
                         {"plan", plan_label(spec, d.id)}},
                        dcn_numbers(spec, op.collective),
                        busy > 0 ? spec.dma_hbm_bytes / busy : 0.0,
                        flow});
      // Fast mode: the links the collective loads, each busy link_busy_s of
      // the collective's run (sharing with others stretches the run).
      if (!r.run && busy > 0)
        for (const auto& [link, link_busy] : traced_links(op.collective))
          record(LinkLoad{device_of_link(link), link_label(in_.topology, link), start_s, busy,
                          std::min(1.0, link_busy / busy)});
    }
    d.completed[w] = 1;
    ++d.completed_count;
    // Only the collective the compute stream waits for wakes it (it would
    // find any other still unfinished and sleep on).
    if ((d.compute == ComputeState::kWaiting || d.compute == ComputeState::kTail) &&
        d.waiting_for == r.ordinal)
      d.done_event.notify(SC_ZERO_TIME);
  }

  // A collective's numeric trace args: its bytes, and across slices its DCN busy time.
  std::vector<std::pair<std::string, double>> dcn_numbers(const CollectiveSpec& spec,
                                                          int32_t index) {
    std::vector<std::pair<std::string, double>> numbers = {{"bytes", spec.bytes_per_device}};
    if (spec.crosses_slices)
      numbers.emplace_back("dcn_busy_s", in_.collectives.fast_timing(index).dcn_s);
    return numbers;
  }

  // Progress: the steps every simulated device has passed, as a fraction of
  // steps x devices, reported at each 1% (monotone: the count only grows).
  void report_progress(Device& d) {
    steps_done_ += d.cursor - d.reported_cursor;
    d.reported_cursor = d.cursor;
    if (steps_done_ < next_progress_) return;
    const size_t all = steps_.size() * devices_.size();
    in_.progress(static_cast<double>(steps_done_) / static_cast<double>(all));
    next_progress_ = steps_done_ + std::max<size_t>(1, all / 100);
    if (in_.stop && *in_.stop && !stopped_) {
      stopped_ = true;
      // The kernel would print "Simulation stopped by user." on stdout,
      // which carries reports.
      sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                              sc_core::SC_DO_NOTHING);
      sc_core::sc_stop();
    }
  }

  const EngineInputs& in_;
  const std::vector<Step>& steps_;
  size_t steps_done_ = 0;
  size_t next_progress_ = 0;
  sc_time base_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::unique_ptr<Fabric> fabric_;
  std::unordered_map<int64_t, std::unique_ptr<GroupRun>> runs_;
  std::unordered_map<int32_t, std::unique_ptr<std::vector<std::pair<hw::LinkId, double>>>>
      traced_links_;
  SharingCache sharing_;
  EngineResult result_;
  uint64_t activations_ = 0;
  bool stopped_ = false;
  bool contention_ = false;  // some device's HBM is shared with collective DMAs
};

}  // namespace

EngineResult run_engine(const EngineInputs& inputs) {
  // The kernel prints a banner on first use unless told not to; podsim's
  // stdout carries reports.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return EngineRun(inputs).run();
}

}  // namespace podsim::sim
