// Fluid fair-share ICI fabric for full fidelity (see fabric.h).
#include "sim/fabric.h"

#include <algorithm>
#include <limits>

namespace podsim::sim {

namespace {
// SystemC time has a 1 ps resolution: a transfer predicted to end within a
// couple of ps of now has ended (its remainder is rounding).
constexpr double kTimeEpsilon = 2e-12;
}  // namespace

Fabric::Fabric(const hw::Topology& topology, LinkTraceHook hook, std::function<double()> now_s)
    : topology_(topology),
      hook_(std::move(hook)),
      now_s_(std::move(now_s)),
      residual_(static_cast<size_t>(topology.num_links()), 0.0),
      weight_(residual_.size(), 0.0),
      jobs_on_link_(residual_.size()) {}

void Fabric::start(GroupRun* run) {
  const double now = now_s_();
  advance(now);
  run->started = true;
  run->start_s = now;
  Job job;
  job.run = run;
  begin_phase(job, now);
  jobs_.push_back(job);
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void Fabric::begin_phase(Job& job, double now) {
  if (job.phase >= job.run->plan->phases.size()) return;
  const hw::Phase& phase = phase_of(job);
  job.in_latency = phase.link_loads.empty();
  job.remaining = 1;
  job.rate = 0;
  job.transfer_start_s = now;
  job.latency_until_s = now + static_cast<double>(phase.repeat) * phase.latency_s;
}

void Fabric::advance(double now) {
  const double dt = now - last_update_s_;
  if (dt > 0)
    for (Job& job : jobs_)
      if (!job.in_latency) job.remaining = std::max(0.0, job.remaining - job.rate * dt);
  last_update_s_ = now;
}

void Fabric::on_wake() {
  ++activations_;
  const double now = now_s_();
  advance(now);
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < jobs_.size();) {
      Job& job = jobs_[i];
      if (job.phase >= job.run->plan->phases.size()) {  // finished (or a plan without phases)
        job.run->done = true;
        job.run->end_s = now;
        for (sc_core::sc_event* wake : job.run->member_wakes) wake->notify(sc_core::SC_ZERO_TIME);
        jobs_[i] = jobs_.back();
        jobs_.pop_back();
        changed = true;
        continue;
      }
      if (!job.in_latency &&
          (job.remaining <= 1e-12 || (job.rate > 0 && job.remaining / job.rate <= kTimeEpsilon))) {
        if (hook_.on_transfer)
          for (const auto& t : phase_of(job).link_loads)
            hook_.on_transfer(t.link, job.run->op, job.transfer_start_s, now - job.transfer_start_s,
                              t.bytes * static_cast<double>(phase_of(job).repeat));
        const hw::Phase& phase = phase_of(job);
        job.in_latency = true;
        job.latency_until_s = now + static_cast<double>(phase.repeat) * phase.latency_s;
        changed = true;
      }
      if (job.in_latency && job.latency_until_s <= now + kTimeEpsilon) {
        ++job.phase;
        begin_phase(job, now);
        changed = true;
      }
      ++i;
    }
  }
  assign_rates();
  double next = std::numeric_limits<double>::infinity();
  for (const Job& job : jobs_) {
    if (job.in_latency)
      next = std::min(next, job.latency_until_s - now);
    else if (job.rate > 0)
      next = std::min(next, job.remaining / job.rate);
  }
  if (next < std::numeric_limits<double>::infinity())
    sc_core::next_trigger(sc_core::sc_time(std::max(next, 0.0), sc_core::SC_SEC), wake_);
  else
    sc_core::next_trigger(wake_);
}

void Fabric::assign_rates() {
  std::vector<hw::LinkId> touched;
  std::vector<int32_t> unfrozen_on_link(residual_.size(), 0);
  std::vector<bool> frozen(jobs_.size(), false);
  for (size_t j = 0; j < jobs_.size(); ++j) {
    Job& job = jobs_[j];
    job.rate = 0;
    if (job.in_latency) {
      frozen[j] = true;
      continue;
    }
    const hw::Phase& phase = phase_of(job);
    for (const auto& t : phase.link_loads) {
      const auto l = static_cast<size_t>(t.link);
      if (jobs_on_link_[l].empty()) {
        touched.push_back(t.link);
        residual_[l] = topology_.link(t.link).bandwidth;
        weight_[l] = 0;
      }
      jobs_on_link_[l].push_back(static_cast<int32_t>(j));
      weight_[l] += t.bytes * static_cast<double>(phase.repeat);
      ++unfrozen_on_link[l];
    }
  }
  // Progressive filling: the link with the smallest rate per unit of load
  // fixes the rate of every job crossing it.
  while (true) {
    double best_share = std::numeric_limits<double>::infinity();
    hw::LinkId best = -1;
    for (hw::LinkId id : touched) {
      const auto l = static_cast<size_t>(id);
      if (unfrozen_on_link[l] == 0 || weight_[l] <= 0) continue;
      const double share = std::max(residual_[l], 0.0) / weight_[l];
      if (share < best_share) best_share = share, best = id;
    }
    if (best < 0) break;
    for (int32_t j : jobs_on_link_[static_cast<size_t>(best)]) {
      if (frozen[static_cast<size_t>(j)]) continue;
      frozen[static_cast<size_t>(j)] = true;
      Job& job = jobs_[static_cast<size_t>(j)];
      job.rate = best_share;
      const hw::Phase& phase = phase_of(job);
      for (const auto& t : phase.link_loads) {
        const auto l = static_cast<size_t>(t.link);
        const double load = t.bytes * static_cast<double>(phase.repeat);
        residual_[l] -= best_share * load;
        weight_[l] -= load;
        --unfrozen_on_link[l];
      }
    }
  }
  for (hw::LinkId id : touched) jobs_on_link_[static_cast<size_t>(id)].clear();
}

}  // namespace podsim::sim
