// SystemC device streams and the run loop (see engine.h).
#include "sim/engine.h"

#include <systemc>

#include <cstdlib>
#include <fmt/format.h>
#include <memory>
#include <stdexcept>
#include <unordered_map>

#include "sim/fabric.h"

// libsystemc's main() calls sc_main; podsim never enters through it (its own
// main drives sc_start), but the symbol must exist for the link. Kept in this
// file so every program that runs the engine links it.
int sc_main(int, char**) { return 0; }

namespace podsim::sim {

using sc_core::sc_time;
using sc_core::SC_SEC;
using sc_core::SC_ZERO_TIME;

namespace {

enum class ComputeState { kStart, kBusy, kWaiting, kTail, kDone };

struct Device {
  int64_t id = 0;
  ComputeState compute = ComputeState::kStart;
  size_t cursor = 0;
  int32_t waiting_for = -1;  // collective ordinal
  double wait_start_s = 0;
  double busy_start_s = 0;
  size_t next_progress = 0;
  // Collective stream.
  int32_t issued = 0, started = 0, done = 0;
  bool collective_running = false;
  int32_t running_ordinal = -1;
  int32_t running_group = -1;
  double collective_start_s = 0;
  GroupRun* current = nullptr;
  std::vector<double> own_ready_s, group_start_s;  // per ordinal
  sc_core::sc_event issued_event, done_event;
  DeviceAccount account;
};

std::string link_label(const hw::Topology& topology, hw::LinkId id) {
  const hw::Link& link = topology.link(id);
  if (link.kind == hw::LinkKind::kOnChip) return fmt::format("ici {} on-chip {}->{}", id, link.src_core, link.dst_core);
  return fmt::format("ici {} chip {}->{} dim {}{}", id, link.src_chip, link.dst_chip, link.dim,
                     link.direction > 0 ? '+' : '-');
}

class EngineRun {
 public:
  explicit EngineRun(const EngineInputs& in) : in_(in), steps_(in.program.steps) {}

  EngineResult run() {
    base_ = sc_core::sc_time_stamp();
    const int64_t simulated = in_.fidelity == Fidelity::kFast ? 1 : in_.devices;
    const size_t collectives = in_.program.collective_steps.size();
    for (int64_t i = 0; i < simulated; ++i) {
      auto d = std::make_unique<Device>();
      d->id = i;
      d->own_ready_s.assign(collectives, 0.0);
      d->group_start_s.assign(collectives, 0.0);
      d->account.collective_busy_s.assign(in_.program.ops.size(), 0.0);
      d->account.collective_exposed_s.assign(in_.program.ops.size(), 0.0);
      devices_.push_back(std::move(d));
    }
    if (in_.fidelity == Fidelity::kFull) {
      LinkTraceHook hook;
      if (in_.record_trace)
        hook.on_transfer = [this](hw::LinkId link, int32_t op, double start, double duration) {
          const hw::Link& l = in_.topology.link(link);
          const int64_t device = l.kind == hw::LinkKind::kOnChip
                                     ? l.src_core
                                     : l.src_chip * in_.topology.slice().devices_per_chip;
          result_.events.push_back(TraceEvent{device, link_label(in_.topology, link),
                                              in_.program.ops[static_cast<size_t>(op)].name, start, duration, {}});
        };
      fabric_ = std::make_unique<Fabric>(in_.topology, std::move(hook), [this] { return now(); });
    }
    std::vector<sc_core::sc_process_handle> processes;
    sc_core::sc_spawn_options method;
    method.spawn_method();
    for (auto& d : devices_) {
      Device* device = d.get();
      processes.push_back(sc_core::sc_spawn([this, device] { on_compute(*device); }, nullptr, &method));
      processes.push_back(sc_core::sc_spawn([this, device] { on_collective(*device); }, nullptr, &method));
    }
    if (fabric_) {
      Fabric* fabric = fabric_.get();
      processes.push_back(sc_core::sc_spawn([fabric] { fabric->on_wake(); }, nullptr, &method));
    }
    sc_core::sc_start();
    for (auto& p : processes) p.kill();
    for (const auto& d : devices_)
      if (d->compute != ComputeState::kDone)
        throw std::logic_error(fmt::format("simulation stalled: device {} at step {} of {}", d->id, d->cursor,
                                           steps_.size()));
    for (auto& d : devices_) result_.devices.push_back(std::move(d->account));
    result_.kernel_events = activations_ + (fabric_ ? fabric_->activations() : 0);
    return std::move(result_);
  }

 private:
  double now() const { return (sc_core::sc_time_stamp() - base_).to_seconds(); }

  const OpInfo& op_of_step(size_t step) const { return in_.program.ops[static_cast<size_t>(steps_[step].op)]; }

  void on_compute(Device& d) {
    ++activations_;
    const double t = now();
    switch (d.compute) {
      case ComputeState::kBusy: finish_op(d, t); break;
      case ComputeState::kWaiting:
      case ComputeState::kTail:
        if (d.done <= d.waiting_for) {
          sc_core::next_trigger(d.done_event);
          return;
        }
        account_wait(d, t);
        if (d.compute == ComputeState::kTail) {
          d.compute = ComputeState::kDone;
          d.account.finish_s = t;
          return;
        }
        break;
      case ComputeState::kDone: return;
      case ComputeState::kStart: break;
    }
    d.compute = ComputeState::kStart;
    while (true) {
      if (d.cursor == steps_.size()) {
        if (d.done < d.issued) {  // the step ends when its last collective does
          wait_for_collective(d, d.issued - 1, ComputeState::kTail, t);
          return;
        }
        d.compute = ComputeState::kDone;
        d.account.finish_s = t;
        return;
      }
      if (d.id == 0 && in_.progress && d.cursor >= d.next_progress) {
        in_.progress(static_cast<double>(d.cursor) / static_cast<double>(steps_.size()));
        d.next_progress = d.cursor + std::max<size_t>(1, steps_.size() / 100);
      }
      const Step& step = steps_[d.cursor];
      if (step.collective) {
        ++d.issued;
        d.issued_event.notify(SC_ZERO_TIME);
        ++d.cursor;
        continue;
      }
      if (step.wait_for >= d.done) {
        wait_for_collective(d, step.wait_for, ComputeState::kWaiting, t);
        return;
      }
      const OpCost& cost = in_.program.ops[static_cast<size_t>(step.op)].cost;
      if (cost.seconds <= 0) {
        ++d.cursor;
        continue;
      }
      d.compute = ComputeState::kBusy;
      d.busy_start_s = t;
      sc_core::next_trigger(sc_time(cost.seconds, SC_SEC));
      return;
    }
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
    const double busy = t - d.busy_start_s;
    const double unit = std::min(busy, op.cost.unit_seconds);
    DeviceAccount& a = d.account;
    a.compute_s += busy;
    a.overhead_s += busy - unit;
    switch (op.cost.bound) {
      case hw::Bound::kMxu: a.mxu_s += unit; break;
      case hw::Bound::kVpu: a.vpu_s += unit; break;
      case hw::Bound::kHbm: a.hbm_s += unit; break;
      case hw::Bound::kOverhead: a.overhead_s += unit; break;
    }
    if (in_.record_trace)
      result_.events.push_back(TraceEvent{d.id, "compute", op.name, d.busy_start_s, busy,
                                          {{"op_name", op.op_name},
                                           {"opcode", op.opcode},
                                           {"shape", op.shape},
                                           {"bound", hw::bound_name(op.cost.bound)}}});
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
    const auto op = static_cast<size_t>(steps_[static_cast<size_t>(in_.program.collective_steps[w])].op);
    d.account.collective_exposed_s[op] += wait - idle;
  }

  void on_collective(Device& d) {
    ++activations_;
    const double t = now();
    if (d.collective_running) {
      if (d.current && !d.current->done) {
        sc_core::next_trigger(d.current->done_event);
        return;
      }
      complete_collective(d, t);
    }
    while (d.started < d.issued) {
      const int32_t ordinal = d.started++;
      const auto w = static_cast<size_t>(ordinal);
      d.own_ready_s[w] = t;
      d.group_start_s[w] = t;
      d.running_ordinal = ordinal;
      d.collective_start_s = t;
      d.collective_running = true;
      const int32_t op = steps_[static_cast<size_t>(in_.program.collective_steps[w])].op;
      const int32_t spec_index = in_.program.ops[static_cast<size_t>(op)].collective;
      if (in_.fidelity == Fidelity::kFast) {
        const double duration = in_.fast_collective_s[static_cast<size_t>(spec_index)];
        if (duration > 0) {
          sc_core::next_trigger(sc_time(duration, SC_SEC));
          return;
        }
      } else {
        const CollectiveSpec& spec = in_.collectives.spec(spec_index);
        const int32_t group = spec.group_of_device[static_cast<size_t>(d.id)];
        if (group >= 0) {
          d.running_group = group;
          d.current = arrive(ordinal, group, op, spec);
          sc_core::next_trigger(d.current->done_event);
          return;
        }
      }
      complete_collective(d, t);
    }
    sc_core::next_trigger(d.issued_event);
  }

  GroupRun* arrive(int32_t ordinal, int32_t group, int32_t op, const CollectiveSpec& spec) {
    const int64_t key = (static_cast<int64_t>(ordinal) << 32) | static_cast<uint32_t>(group);
    auto& slot = runs_[key];
    if (!slot) {
      slot = std::make_unique<GroupRun>();
      slot->plan = &spec.plans[static_cast<size_t>(group)];
      slot->op = op;
      slot->expected = static_cast<int64_t>(spec.groups[static_cast<size_t>(group)].size());
    }
    GroupRun* run = slot.get();
    if (++run->arrived == run->expected) fabric_->start(run);
    return run;
  }

  void complete_collective(Device& d, double t) {
    const auto w = static_cast<size_t>(d.running_ordinal);
    if (d.current) {
      d.group_start_s[w] = d.current->start_s;
      d.collective_start_s = d.current->start_s;
      if (++d.current->released == d.current->expected)
        runs_.erase((static_cast<int64_t>(d.running_ordinal) << 32) | static_cast<uint32_t>(d.running_group));
      d.current = nullptr;
    }
    const size_t step = static_cast<size_t>(in_.program.collective_steps[w]);
    const OpInfo& op = op_of_step(step);
    const double busy = t - d.collective_start_s;
    d.account.collective_busy_s[static_cast<size_t>(steps_[step].op)] += busy;
    if (in_.record_trace) {
      const auto& spec = in_.collectives.spec(op.collective);
      result_.events.push_back(TraceEvent{d.id, "collectives", op.name, d.collective_start_s, busy,
                                          {{"op_name", op.op_name},
                                           {"opcode", op.opcode},
                                           {"shape", op.shape},
                                           {"bytes", fmt::format("{}", spec.bytes_per_device)}}});
    }
    ++d.done;
    d.collective_running = false;
    d.done_event.notify(SC_ZERO_TIME);
  }

  const EngineInputs& in_;
  const std::vector<Step>& steps_;
  sc_time base_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::unique_ptr<Fabric> fabric_;
  std::unordered_map<int64_t, std::unique_ptr<GroupRun>> runs_;
  EngineResult result_;
  uint64_t activations_ = 0;
};

}  // namespace

EngineResult run_engine(const EngineInputs& inputs) {
  // The kernel prints a banner on first use unless told not to; podsim's
  // stdout carries reports.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return EngineRun(inputs).run();
}

}  // namespace podsim::sim
