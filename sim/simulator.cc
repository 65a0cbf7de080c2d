// sim::simulate: flatten the program, cost its ops and collectives, pick the
// fidelity (fast falls back to full where it is not exact and full is
// affordable), run the SystemC engine and turn the per-device accounts into
// a Timeline.
#include "sim/simulator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>

#include "common/error.h"
#include "compiler/ir/trip_count.h"
#include "sim/engine.h"
#include "sim/step_program.h"
#include "sim/symmetry.h"

namespace podsim::sim {

namespace {

// Full mode simulates devices x steps events (plus the fabric); beyond this
// a fallback would take minutes, so fast mode is kept with a note instead.
constexpr double kFullFallbackBudget = 2e7;

struct FidelityChoice {
  Fidelity fidelity = Fidelity::kFast;
  std::string fallback_reason;
  std::string approximation_note;
};

// `per_device`: the chips that differ (per-chip overrides), "" if none. One representative
// device cannot stand for them: fast falls back to full, or refuses when full is too large.
FidelityChoice choose_fidelity(const SimOptions& options, const StepProgram& steps,
                               CollectiveCatalog& catalog, int64_t devices,
                               const std::string& per_device) {
  FidelityChoice choice{options.fidelity, {}, {}};
  if (options.fidelity == Fidelity::kFull) return choice;
  if (!per_device.empty()) {
    const double work = static_cast<double>(devices) * static_cast<double>(steps.steps.size());
    if (work > kFullFallbackBudget)
      throw UserError(
          fmt::format("chips differ ({}), and fast fidelity simulates one representative device; "
                      "full fidelity ({} devices x {} steps) is over the {:.3g} device-steps fast "
                      "falls back to on its own",
                      per_device, devices, steps.steps.size(), kFullFallbackBudget),
          "add --fidelity full to simulate every device (it may take minutes; --time-limit bounds "
          "it), or drop the per-chip override (hardware.chips.*)");
    choice.fidelity = Fidelity::kFull;
    choice.fallback_reason =
        "chips differ (per-chip hardware overrides), so one representative device does not stand "
        "for every device";
    return choice;
  }
  for (int32_t spec = 0; spec < catalog.size(); ++spec) {
    const FastCollectiveTiming& t = catalog.fast_timing(spec);
    if (t.symmetric) continue;
    // The name of the first op using this spec.
    std::string name = "?";
    for (const OpInfo& op : steps.ops)
      if (op.collective == spec) {
        name = op.name;
        break;
      }
    const std::string reason = fmt::format(
        "{} '{}': its device groups are not symmetric on the placement (alone, the fastest group "
        "takes {:.6g} s "
        "and the slowest {:.6g} s), so one representative device does not see every group's time",
        hw::collective_kind_name(catalog.spec(spec).kind), name, t.fastest_group_s,
        t.slowest_group_s);
    const double work = static_cast<double>(devices) * static_cast<double>(steps.steps.size());
    if (work <= kFullFallbackBudget) {
      choice.fidelity = Fidelity::kFull;
      choice.fallback_reason = reason;
    } else {
      choice.approximation_note =
          reason +
          fmt::format(
              "; full mode ({} devices x {} steps) is too large to fall back to, so every group is "
              "charged the time of all groups running at once (the slowest)",
              devices, steps.steps.size());
    }
    break;
  }
  return choice;
}

// `own`: the reported device's op costs when its chip differs (VariantCosts::ops), else null.
void fill_ops(const StepProgram& steps, CollectiveCatalog& catalog, const DeviceAccount& account,
              const std::vector<OpCost>* own, Timeline& timeline) {
  auto cost_of = [&](size_t op) -> const OpCost& { return own ? (*own)[op] : steps.ops[op].cost; };
  std::vector<OpRecord> records(steps.ops.size());
  for (size_t i = 0; i < steps.ops.size(); ++i) {
    const OpInfo& op = steps.ops[i];
    OpRecord& r = records[i];
    r.name = op.name;
    r.op_name = op.op_name;
    r.opcode = op.opcode;
    r.shape = op.shape;
    r.collective = op.collective >= 0;
    r.bound = cost_of(i).bound;
  }
  for (const Step& step : steps.steps) {
    OpRecord& r = records[static_cast<size_t>(step.op)];
    const OpInfo& op = steps.ops[static_cast<size_t>(step.op)];
    ++r.executions;
    if (step.collective) {
      r.collective_bytes += catalog.spec(op.collective).bytes_per_device;
      r.dcn_seconds += catalog.fast_timing(op.collective).dcn_s;
    } else {
      const OpCost& cost = cost_of(static_cast<size_t>(step.op));
      r.flops += cost.flops;
      r.hbm_bytes += cost.hbm_bytes;
      timeline.executed_flops_per_device += cost.flops;
      timeline.executed_matmul_flops_per_device += cost.matmul_flops;
    }
  }
  std::map<std::string, CollectiveSummary> by_kind;
  for (size_t i = 0; i < records.size(); ++i) {
    OpRecord& r = records[i];
    r.seconds = account.op_busy_s[i];
    if (!r.collective || r.executions == 0) continue;
    r.exposed_seconds = account.collective_exposed_s[i];
    if (r.dcn_seconds > 0) {
      const FastCollectiveTiming& timing = catalog.fast_timing(steps.ops[i].collective);
      r.exposed_dcn_seconds =
          timing.seconds > 0 ? r.exposed_seconds * std::min(1.0, timing.dcn_s / timing.seconds) : 0;
      timeline.exposed_dcn_s += r.exposed_dcn_seconds;
      timeline.dcn_busy_s += r.dcn_seconds;
    }
    const std::string& kind = steps.ops[i].collective_kind;
    auto& summary = by_kind[kind];
    summary.kind = kind;
    summary.count += r.executions;
    summary.bytes += r.collective_bytes;
    summary.seconds += r.seconds;
    summary.dcn_seconds += r.dcn_seconds;
  }
  records.erase(std::remove_if(records.begin(), records.end(),
                               [](const OpRecord& r) { return r.executions == 0; }),
                records.end());
  std::stable_sort(records.begin(), records.end(),
                   [](const OpRecord& a, const OpRecord& b) { return a.seconds > b.seconds; });
  timeline.ops = std::move(records);
  for (auto& [kind, summary] : by_kind) timeline.collectives.push_back(std::move(summary));
}

// The devices a trace keeps: the selection's list or sample, among the
// simulated ones (fast mode simulates device 0 alone).
std::vector<int64_t> traced_devices(const TraceSelection& selection, int64_t program_devices,
                                    int64_t simulated) {
  std::vector<int64_t> traced;
  if (selection.sample > 0) {
    const int64_t n = std::min(selection.sample, simulated);
    for (int64_t i = 0; i < n; ++i) traced.push_back(i * simulated / n);
    return traced;
  }
  if (selection.devices.empty()) {
    for (int64_t i = 0; i < simulated; ++i) traced.push_back(i);
    return traced;
  }
  for (int64_t device : selection.devices) {
    if (device < 0 || device >= program_devices)
      throw UserError(
          SourceLocation{"--trace-devices", 0, 0},
          fmt::format("device {} is not among the program's {} devices", device, program_devices),
          fmt::format("trace devices 0..{}, or sample:N", program_devices - 1));
    if (device < simulated) traced.push_back(device);
  }
  std::sort(traced.begin(), traced.end());
  traced.erase(std::unique(traced.begin(), traced.end()), traced.end());
  if (traced.empty())
    throw UserError(SourceLocation{"--trace-devices", 0, 0},
                    "none of the traced devices is simulated: fast mode simulates device 0 alone",
                    "trace device 0, or add --fidelity full to simulate every device");
  return traced;
}

// A window over the whole step gets one slice per compute step that takes
// time and per collective step on every traced device (link loads come on
// top): over the limit already, it is refused before the simulation runs.
void check_trace_estimate(const TraceSelection& selection, const StepProgram& steps,
                          size_t traced) {
  if (!selection.window_given || selection.max_events <= 0 || selection.window_begin_s > 0 ||
      std::isfinite(selection.window_end_s))
    return;
  int64_t per_device = 0;
  for (const Step& step : steps.steps)
    if (step.collective || steps.ops[static_cast<size_t>(step.op)].cost.seconds > 0) ++per_device;
  const int64_t slices = per_device * static_cast<int64_t>(traced);
  if (slices <= selection.max_events) return;
  throw UserError(
      SourceLocation{"--trace-window", 0, 0},
      fmt::format("the trace would hold at least {} events (about {:.3g} MB) in its window on {} "
                  "device(s), over the {:.3g} MB limit; nothing was simulated or written",
                  slices, static_cast<double>(slices) * selection.bytes_per_item / 1e6, traced,
                  static_cast<double>(selection.max_events) * selection.bytes_per_item / 1e6),
      "narrow --trace-window (ms of the step), trace fewer devices with --trace-devices (a list or "
      "sample:N), or raise --trace-limit (e.g. 200MB; 0 = none)");
}

// ---- steady-state loops (simulator.h) ----

// Iterations of each entry loop simulated before the steady-state test, and
// the test: two consecutive iteration times (the step time added by one
// more iteration) agree within this fraction.
constexpr int64_t kSteadyFirstIterations = 2;
constexpr double kSteadyTolerance = 1e-3;
// Loops this short, or holding less of the program's steps than this
// fraction, are simulated whole; at most kSteadyMaxLoops loops (the
// largest) are tested (each costs two more short runs).
constexpr int64_t kSteadyMinTrips = 8;
constexpr double kSteadyMinShare = 0.1;
constexpr size_t kSteadyMaxLoops = 4;

// a + factor (c - b), field by field (c - b: one iteration's worth).
DeviceAccount extrapolated(const DeviceAccount& a, const DeviceAccount& b, const DeviceAccount& c,
                           double factor) {
  DeviceAccount out = a;
  auto add = [&](double& o, double vb, double vc) { o += factor * (vc - vb); };
  add(out.finish_s, b.finish_s, c.finish_s);
  add(out.compute_s, b.compute_s, c.compute_s);
  add(out.mxu_s, b.mxu_s, c.mxu_s);
  add(out.vpu_s, b.vpu_s, c.vpu_s);
  add(out.hbm_s, b.hbm_s, c.hbm_s);
  add(out.overhead_s, b.overhead_s, c.overhead_s);
  add(out.hbm_contention_s, b.hbm_contention_s, c.hbm_contention_s);
  add(out.exposed_s, b.exposed_s, c.exposed_s);
  add(out.idle_s, b.idle_s, c.idle_s);
  for (size_t i = 0; i < out.op_busy_s.size(); ++i)
    add(out.op_busy_s[i], b.op_busy_s[i], c.op_busy_s[i]);
  for (size_t i = 0; i < out.collective_exposed_s.size(); ++i)
    add(out.collective_exposed_s[i], b.collective_exposed_s[i], c.collective_exposed_s[i]);
  return out;
}

struct SteadyRun {
  bool used = false;
  EngineResult result;
  std::string note;
};

// The loops a steady-state run of k first iterations caps: entry loops of at
// least kSteadyMinTrips trips with more than k + 2 of them, holding at least
// kSteadyMinShare of the steps, the kSteadyMaxLoops largest.
std::vector<EntryLoop> capped_loops(const StepProgram& full, int64_t k) {
  std::vector<EntryLoop> capped;
  const double all_steps = static_cast<double>(full.steps.size());
  for (const EntryLoop& loop : full.entry_loops)
    if (loop.trips >= kSteadyMinTrips && loop.trips > k + 2 &&
        static_cast<double>(loop.steps) >= kSteadyMinShare * all_steps)
      capped.push_back(loop);
  std::stable_sort(capped.begin(), capped.end(),
                   [](const EntryLoop& a, const EntryLoop& b) { return a.steps > b.steps; });
  if (capped.size() > kSteadyMaxLoops) capped.resize(kSteadyMaxLoops);
  return capped;
}

// Loops tested together: fast mode tests each loop alone; full mode tests
// the loops of equal trip count together (their iterations' sum is what the
// step adds per extra trip), saving two whole-machine runs per loop.
std::vector<std::vector<EntryLoop>> test_groups(const std::vector<EntryLoop>& capped, bool full) {
  std::vector<std::vector<EntryLoop>> groups;
  for (const EntryLoop& loop : capped) {
    auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return full && g.front().trips == loop.trips;
    });
    if (same == groups.end())
      groups.push_back({loop});
    else
      same->push_back(loop);
  }
  return groups;
}

// How far the second extra iteration differs from the first: per simulated
// device its finish time's increment, relative to that increment; per ICI
// link (full mode) its busy time's increment, relative to the larger of it
// and the longest device increment.
struct RepeatCheck {
  double device = 0;
  double link = 0;
};
RepeatCheck repeat_check(const EngineResult& base, const EngineResult& one,
                         const EngineResult& two) {
  RepeatCheck check;
  double iteration = 0;
  for (size_t i = 0; i < base.devices.size(); ++i) {
    const double first = one.devices[i].finish_s - base.devices[i].finish_s;
    const double second = two.devices[i].finish_s - one.devices[i].finish_s;
    iteration = std::max(iteration, std::abs(second));
    check.device =
        std::max(check.device, std::abs(second - first) / std::max(std::abs(second), 1e-12));
  }
  for (size_t l = 0; l < base.link_busy_s.size(); ++l) {
    const double first = one.link_busy_s[l] - base.link_busy_s[l];
    const double second = two.link_busy_s[l] - one.link_busy_s[l];
    check.link = std::max(check.link, std::abs(second - first) /
                                          std::max({std::abs(second), iteration, 1e-12}));
  }
  return check;
}

// Two flattenings index their ops alike: the same ops, in the same order.
bool same_ops(const StepProgram& a, const StepProgram& b) {
  if (a.ops.size() != b.ops.size()) return false;
  for (size_t i = 0; i < a.ops.size(); ++i)
    if (a.ops[i].name != b.ops[i].name || a.ops[i].opcode != b.ops[i].opcode ||
        a.ops[i].collective != b.ops[i].collective)
      return false;
  return true;
}

// Steady-state loops. Each test group of capped loops (capped_loops,
// test_groups) is simulated for K, K+1 and K+2 iterations (the other loops at
// K); when the last two iteration times agree within kSteadyTolerance for
// every group (full mode: on every device, and every link's busy time per
// iteration too), the step is the K-iteration run plus (trips - K) iteration
// times per group, op by op and device by device; else K doubles, up to
// simulating the loops whole. Full mode runs the whole machine each time. A short program must
// number its ops as the whole one does (else the loops are simulated whole); `run` simulates it,
// given the inputs it was flattened from (a chip variant costs it again from them).
SteadyRun steady_state(
    const FlattenInputs& base, const StepProgram& full, bool full_fidelity,
    const std::function<EngineResult(const FlattenInputs&, const StepProgram&, double)>& run) {
  SteadyRun out;
  for (int64_t k = kSteadyFirstIterations;; k *= 2) {
    const std::vector<EntryLoop> capped = capped_loops(full, k);
    if (capped.empty()) return out;
    const std::vector<std::vector<EntryLoop>> groups = test_groups(capped, full_fidelity);
    auto inputs_with = [&](const std::vector<EntryLoop>* group, int64_t iterations) {
      FlattenInputs inputs = base;
      for (const EntryLoop& loop : capped) inputs.iteration_caps[loop.key] = k;
      if (group)
        for (const EntryLoop& loop : *group) inputs.iteration_caps[loop.key] = iterations;
      return inputs;
    };
    // The accounts are extrapolated op by op: a short program must number its ops as the whole.
    auto run_with = [&](const std::vector<EntryLoop>* group, int64_t iterations,
                        double planned) -> std::optional<EngineResult> {
      const FlattenInputs inputs = inputs_with(group, iterations);
      const StepProgram program = flatten_program(inputs);
      if (!same_ops(program, full)) return std::nullopt;
      return run(inputs, program, planned);
    };
    const StepProgram shortest = flatten_program(inputs_with(nullptr, k));
    if (!same_ops(shortest, full)) return out;  // op numbering differs: simulate whole
    // Full mode: a test costing as much as the whole run is not worth it.
    if (full_fidelity && shortest.steps.size() * (1 + 2 * groups.size()) >= full.steps.size())
      return out;
    // The steps this try's runs hold (for progress): the shortest program
    // 1 + 2 x groups times, plus 1 + 2 iterations of each group's loops
    // (a loop's steps over its trips: one iteration, prologue included).
    auto planned = static_cast<double>(shortest.steps.size() * (1 + 2 * groups.size()));
    for (const std::vector<EntryLoop>& group : groups)
      for (const EntryLoop& loop : group)
        planned += 3.0 * static_cast<double>(loop.steps) / static_cast<double>(loop.trips);
    EngineResult result = run(inputs_with(nullptr, k), shortest, planned);
    std::vector<DeviceAccount> total = result.devices;
    bool steady = true;
    RepeatCheck worst;
    for (const std::vector<EntryLoop>& group : groups) {
      const std::optional<EngineResult> one = run_with(&group, k + 1, planned);
      const std::optional<EngineResult> two =
          one ? run_with(&group, k + 2, planned) : std::nullopt;
      if (!two) return out;  // op numbering differs: simulate whole
      const RepeatCheck check = repeat_check(result, *one, *two);
      worst.device = std::max(worst.device, check.device);
      worst.link = std::max(worst.link, check.link);
      if (check.device > kSteadyTolerance || check.link > kSteadyTolerance) {
        steady = false;
        break;
      }
      const auto extra = static_cast<double>(group.front().trips - k);
      for (size_t i = 0; i < total.size(); ++i)
        total[i] = extrapolated(total[i], one->devices[i], two->devices[i], extra);
    }
    if (!steady) continue;
    result.devices = std::move(total);
    result.link_busy_s.clear();
    out.used = true;
    out.result = std::move(result);
    std::vector<std::string> loops;
    for (const EntryLoop& loop : capped) loops.push_back(fmt::format("{}", loop.trips));
    // The loops simulated and how they were tested, then what was checked.
    const std::string simulated =
        fmt::format("{} loop(s) of {} iterations simulated for their first {} (and {}, {} to test)",
                    capped.size(), fmt::join(loops, ", "), k, k + 1, k + 2);
    const std::string checked =
        full_fidelity
            ? fmt::format(" on every device: the whole machine repeated (every device's iteration "
                          "time within {:.2g} %, every ICI link's busy time per iteration within "
                          "{:.2g} % of it)",
                          100 * worst.device + 0.0, 100 * worst.link + 0.0)
            : fmt::format(": the iteration time was steady (consecutive iterations within {:.2g} %)",
                          100 * worst.device + 0.0);
    out.note = simulated + checked + ", the remaining iterations are counted at it";
    return out;
  }
}

// The chip variants (per-chip overrides, hw::System::chip_variants) whose devices run differently
// from the machine's: some op costs differently on the variant's own config, or its HBM bandwidth
// differs while collectives share HBM. Each keeps its cost model, to cost every program the engine
// runs (the whole one and the steady-state short ones) op by op (docs/simulator.md#one-slow-chip).
class ChipVariants {
 public:
  ChipVariants(const compiler::SpmdProgram& program, const hw::System& system,
               CollectiveCatalog& catalog, const FlattenInputs& machine, const StepProgram& steps) {
    if (system.chip_variants().empty()) return;
    bool dma = false;  // some collective's DMAs share HBM with the kernels
    for (int32_t spec = 0; spec < catalog.size(); ++spec)
      dma = dma || catalog.spec(spec).dma_hbm_bytes > 0;
    for (const hw::ChipVariant& variant : system.chip_variants()) {
      Model model;
      model.core = hw::make_core_model(variant.config);
      model.costs = std::make_unique<OpCostModel>(
          *model.core, &program.module,
          variant.config.chip.host_bandwidth /
              static_cast<double>(std::max<int64_t>(1, variant.config.chip.devices_per_chip)));
      model.hbm_bandwidth = variant.config.hbm.bandwidth;
      VariantCosts costs = costs_of(model, machine, steps);
      bool differs = dma && system.config().hbm.bandwidth > 0 &&
                     model.hbm_bandwidth != system.config().hbm.bandwidth;
      for (size_t op = 0; op < steps.ops.size() && !differs; ++op)
        differs = costs.ops[op] != steps.ops[op].cost;
      if (!differs) continue;
      if (device_variant_.empty())
        device_variant_.assign(static_cast<size_t>(program.num_devices), -1);
      for (int64_t device : variant.devices)
        device_variant_[static_cast<size_t>(device)] = static_cast<int32_t>(models_.size());
      models_.push_back(std::move(model));
      whole_.push_back(std::move(costs));
    }
  }

  bool empty() const { return models_.empty(); }
  // Per program device its variant (EngineInputs::device_variant); empty when none differs.
  const std::vector<int32_t>& device_variant() const { return device_variant_; }
  // Per variant, the op costs of the whole program.
  const std::vector<VariantCosts>& whole() const { return whole_; }
  // Per variant, the op costs of `steps`, flattened from `inputs` with the machine's costs.
  std::vector<VariantCosts> costs(const FlattenInputs& inputs, const StepProgram& steps) const {
    std::vector<VariantCosts> out;
    for (const Model& model : models_) out.push_back(costs_of(model, inputs, steps));
    return out;
  }

 private:
  struct Model {
    std::unique_ptr<hw::CoreModel> core;
    std::unique_ptr<OpCostModel> costs;
    double hbm_bandwidth = 0;
  };
  // `steps` flattened again with the variant's costs: the same ops (the flattening does not
  // depend on costs), each at its cost on the variant.
  static VariantCosts costs_of(const Model& model, const FlattenInputs& inputs,
                               const StepProgram& steps) {
    FlattenInputs own{inputs.program, *model.costs, inputs.collectives, inputs.max_steps,
                      inputs.iteration_caps};
    const StepProgram program = flatten_program(own);
    if (!same_ops(program, steps))
      throw std::logic_error("a chip variant's flattened program numbers its ops differently");
    VariantCosts out;
    out.hbm_bandwidth = model.hbm_bandwidth;
    for (const OpInfo& op : program.ops) out.ops.push_back(op.cost);
    return out;
  }

  std::vector<Model> models_;
  std::vector<int32_t> device_variant_;
  std::vector<VariantCosts> whole_;
};

}  // namespace

Timeline simulate(const compiler::SpmdProgram& program, const hw::System& system,
                  const SimOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const auto placed = static_cast<int64_t>(system.placement().core_of_device.size());
  if (program.num_devices != placed)
    throw UserError(
        fmt::format("the program is partitioned for {} devices but the hardware mesh places {}",
                    program.num_devices, placed),
        "compile for the mesh the hardware is given (mesh shape product = devices)");
  const hw::HardwareConfig& hardware = system.config();
  OpCostModel costs(system.core(), &program.module,
                    hardware.chip.host_bandwidth /
                        static_cast<double>(std::max<int64_t>(1, hardware.chip.devices_per_chip)));
  CollectiveCatalog catalog(system, program.num_devices);
  const FlattenInputs flatten_inputs{program, costs, catalog};
  const StepProgram steps = flatten_program(flatten_inputs);
  const ChipVariants variants(program, system, catalog, flatten_inputs, steps);
  const std::string per_device = variants.empty() ? "" : system.chip_variants_text();
  FidelityChoice choice = choose_fidelity(options, steps, catalog, program.num_devices, per_device);

  // The progress the engine reports: the caller's, and the time limit's test.
  bool stop = false;
  double estimate_s = 0, estimated_at = 0;
  std::function<void(double)> progress;
  if (options.progress || options.time_limit_s > 0)
    progress = [&](double fraction) {
      if (options.progress) options.progress(fraction);
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
      if (!stop && options.time_limit_s > 0 && fraction >= 0.02 &&
          elapsed >= std::min(1.0, options.time_limit_s / 4) &&
          elapsed / fraction > options.time_limit_s) {
        stop = true;
        estimate_s = elapsed / fraction;
        estimated_at = fraction;
      }
    };
  auto refuse_if_stopped = [&](const EngineResult& result) {
    if (!result.stopped) return;
    throw UserError(
        SourceLocation{"--time-limit", 0, 0},
        fmt::format("{} fidelity would take about {:.3g} s to simulate (estimated after {:.0f} % "
                    "of it), over the {:.3g} s limit; stopped",
                    fidelity_name(choice.fidelity), estimate_s, 100 * estimated_at,
                    options.time_limit_s),
        "use --fidelity fast (one representative device), raise --time-limit, or make the "
        "workload smaller (e.g. --set model.layers=...)");
  };
  auto engine_inputs = [&](const StepProgram& step_program) {
    return EngineInputs{step_program,
                        catalog,
                        system.topology(),
                        choice.fidelity,
                        program.num_devices,
                        {},
                        system.config().ici.collectives_in_flight,
                        system.config().ici.collectives_in_flight_per_kind,
                        options.record_trace,
                        progress,
                        system.config().hbm.bandwidth,
                        {},
                        {},
                        false,
                        nullptr,
                        variants.device_variant(),
                        {},
                        nullptr};
  };
  EngineInputs inputs = engine_inputs(steps);
  inputs.variants = variants.whole();
  // Full mode: the symmetry classes simulated (one device each), or per device and why.
  SymmetryClasses classes;
  std::string simulated_devices;
  if (choice.fidelity == Fidelity::kFull) {
    std::vector<std::string> spec_names(static_cast<size_t>(catalog.size()));
    for (const OpInfo& op : steps.ops)
      if (op.collective >= 0 && spec_names[static_cast<size_t>(op.collective)].empty())
        spec_names[static_cast<size_t>(op.collective)] = op.name;
    classes = !options.symmetry ? per_device_classes(program.num_devices, "symmetry switched off")
              : options.record_trace
                  ? per_device_classes(program.num_devices, "a trace shows devices one by one")
                  : find_symmetry_classes(system, catalog, program.num_devices,
                                          inputs.device_variant, spec_names);
    inputs.symmetry = &classes;
    if (program.num_devices > 1) simulated_devices = classes.note;
  }
  std::vector<int64_t> traced;
  if (options.record_trace) {
    const int64_t simulated = choice.fidelity == Fidelity::kFast ? 1 : program.num_devices;
    traced = traced_devices(options.trace, program.num_devices, simulated);
    check_trace_estimate(options.trace, steps, traced.size());
    inputs.trace = options.trace;
    inputs.traced.assign(static_cast<size_t>(simulated), 0);
    for (int64_t device : traced) inputs.traced[static_cast<size_t>(device)] = 1;
  }
  if (choice.fidelity == Fidelity::kFast)
    for (int32_t spec = 0; spec < catalog.size(); ++spec)
      inputs.fast_collective_s.push_back(catalog.fast_timing(spec).seconds);
  SteadyRun steady;
  // Full fidelity asked for (not a fallback from fast, which stays exact).
  const bool full_asked = options.fidelity == Fidelity::kFull;
  if ((choice.fidelity == Fidelity::kFast || full_asked) && !options.record_trace &&
      options.steady_state_loops) {
    // Full mode's progress over the short runs: their steps against the
    // steps planned for this K (kept monotone and below 1 when K doubles).
    double done = 0, shown = 0, last_planned = 0;
    steady = steady_state(
        flatten_inputs, steps, choice.fidelity == Fidelity::kFull,
        [&](const FlattenInputs& short_flatten, const StepProgram& short_program, double planned) {
          if (planned != last_planned) done = 0;  // a new K
          last_planned = planned;
          EngineInputs short_inputs = engine_inputs(short_program);
          short_inputs.symmetry = inputs.symmetry;
          short_inputs.variants = variants.costs(short_flatten, short_program);
          short_inputs.fast_collective_s = inputs.fast_collective_s;
          short_inputs.progress = nullptr;
          short_inputs.link_totals = choice.fidelity == Fidelity::kFull;
          const double share = static_cast<double>(short_program.steps.size()) / planned;
          if (progress && choice.fidelity == Fidelity::kFull)
            short_inputs.progress = [&, share](double fraction) {
              shown = std::max(shown, std::min(0.99, done + share * fraction));
              progress(shown);
            };
          short_inputs.stop = &stop;
          EngineResult short_result = run_engine(short_inputs);
          refuse_if_stopped(short_result);
          done += share;
          return short_result;
        });
    // Not steady: the whole run's progress continues from what was shown.
    if (!steady.used && shown > 0)
      inputs.progress = [&progress, shown](double fraction) {
        progress(shown + (1 - shown) * fraction);
      };
  }
  if (steady.used) {
    choice.approximation_note += (choice.approximation_note.empty() ? "" : "; ") + steady.note;
  }
  inputs.stop = &stop;
  EngineResult result = steady.used ? std::move(steady.result) : run_engine(inputs);
  refuse_if_stopped(result);

  // The reported device: the slowest (the first of equals). When chips differ, of the devices
  // finishing last (within the kernel's 1 ps) the one idling least: the device the others waited
  // for (a slow chip's, whose time split is its own kernels').
  size_t reported = 0;
  for (size_t i = 1; i < result.devices.size(); ++i)
    if (result.devices[i].finish_s > result.devices[reported].finish_s) reported = i;
  if (!variants.empty()) {
    const double last = result.devices[reported].finish_s;
    for (size_t i = 0; i < result.devices.size(); ++i)
      if (result.devices[i].finish_s >= last - 1e-12 &&
          result.devices[i].idle_s < result.devices[reported].idle_s)
        reported = i;
  }
  const DeviceAccount& a = result.devices[reported];
  // Its program device, and its own op costs when its chip differs.
  const auto reported_device = static_cast<int64_t>(
      inputs.symmetry && inputs.symmetry->applied ? classes.representatives[reported] : reported);
  const std::vector<OpCost>* reported_costs = nullptr;
  if (!inputs.device_variant.empty())
    if (const int32_t v = inputs.device_variant[static_cast<size_t>(reported_device)]; v >= 0)
      reported_costs = &inputs.variants[static_cast<size_t>(v)].ops;

  Timeline timeline;
  timeline.fidelity = choice.fidelity;
  timeline.devices = program.num_devices;
  timeline.unknown_trip_counts = steps.unknown_trip_counts;
  timeline.conditionals_first_branch = steps.conditionals_first_branch;
  timeline.devices_simulated = static_cast<int64_t>(result.devices.size());
  timeline.fallback_reason = choice.fallback_reason;
  timeline.simulated_devices = simulated_devices;
  timeline.approximation_note = choice.approximation_note;
  timeline.per_device = per_device;
  timeline.step_time_s = a.finish_s;
  timeline.compute_s = a.compute_s;
  timeline.mxu_bound_s = a.mxu_s;
  timeline.vpu_bound_s = a.vpu_s;
  timeline.hbm_bound_s = a.hbm_s;
  timeline.hbm_contention_s = a.hbm_contention_s;
  timeline.overhead_s = a.overhead_s;
  timeline.exposed_communication_s = a.exposed_s;
  timeline.idle_s = a.idle_s;
  fill_ops(steps, catalog, a, reported_costs, timeline);
  timeline.events = std::move(result.events);
  timeline.link_loads = std::move(result.link_loads);
  timeline.traced_devices = std::move(traced);
  timeline.trace_selection = options.trace;
  timeline.trace_events_seen = result.trace_events_seen;
  timeline.trace_over_limit = result.trace_over_limit;
  timeline.trace_cut_s = result.trace_cut_s;
  timeline.kernel_events = result.kernel_events;
  if (options.progress) options.progress(1.0);
  timeline.simulate_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return timeline;
}

}  // namespace podsim::sim
