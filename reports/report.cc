// summarize(): Timeline + SpmdProgram + ModelInfo -> Report (reports/report.h
// gives the formulas). Every list in the Report has a fixed order so that the
// same input always prints the same bytes.
#include "reports/report.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "compiler/backend/memory_plan.h"
#include "compiler/ir/trip_count.h"
#include "compiler/sharding/sharding.h"
#include "reports/formats.h"
#include "sim/custom_call_cost.h"

namespace podsim::reports {

namespace {

constexpr compiler::ValueRole kRolesInOrder[] = {
    compiler::ValueRole::kParameter,       compiler::ValueRole::kOptimizerState,
    compiler::ValueRole::kGradient,        compiler::ValueRole::kActivation,
    compiler::ValueRole::kInput,           compiler::ValueRole::kTemporary,
    compiler::ValueRole::kCollectiveBuffer};

std::string bound_key(hw::Bound bound) {
  switch (bound) {
    case hw::Bound::kMxu:
      return "mxu";
    case hw::Bound::kVpu:
      return "vpu";
    case hw::Bound::kHbm:
      return "hbm";
    case hw::Bound::kOverhead:
      return "overhead";
  }
  return "overhead";
}

int64_t static_count_of(const compiler::SpmdStats& stats, const std::string& kind) {
  if (kind == "all-reduce") return stats.all_reduces;
  if (kind == "all-gather") return stats.all_gathers;
  if (kind == "reduce-scatter") return stats.reduce_scatters;
  if (kind == "all-to-all") return stats.all_to_alls;
  if (kind == "collective-permute") return stats.collective_permutes;
  return 0;
}

TopOp top_op_of(const sim::OpRecord& op, double step_time_s) {
  TopOp row;
  row.name = op.name;
  row.op_name = op.op_name;
  row.opcode = op.opcode;
  row.shape = op.shape;
  row.executions = op.executions;
  row.seconds = op.seconds;
  row.step_fraction = step_time_s > 0 ? op.seconds / step_time_s : 0;
  row.flops = op.flops;
  row.bound = op.collective ? "collective" : bound_key(op.bound);
  row.bytes = op.collective ? op.collective_bytes : op.hbm_bytes;
  row.exposed_seconds = op.exposed_seconds;
  row.dcn_seconds = op.dcn_seconds;
  return row;
}

// The n longest ops of one kind (collective or not); ties broken by name so
// the order does not depend on the simulator's sort.
std::vector<TopOp> top_ops(const std::vector<sim::OpRecord>& ops, bool collectives, int n,
                           double step_time_s) {
  std::vector<const sim::OpRecord*> picked;
  for (const sim::OpRecord& op : ops)
    if (op.collective == collectives) picked.push_back(&op);
  std::stable_sort(picked.begin(), picked.end(),
                   [](const sim::OpRecord* a, const sim::OpRecord* b) {
                     if (a->seconds != b->seconds) return a->seconds > b->seconds;
                     return a->name < b->name;
                   });
  if (static_cast<int>(picked.size()) > n) picked.resize(std::max(n, 0));
  std::vector<TopOp> rows;
  for (const sim::OpRecord* op : picked) rows.push_back(top_op_of(*op, step_time_s));
  return rows;
}

// "add.16" -> "add": an instruction's name without its number.
std::string name_stem(const std::string& name) { return name.substr(0, name.rfind('.')); }

// The n longest op groups of one kind: ops with equal op_name_pattern,
// opcode, instruction name without its number, shape and bound, summed
// (seconds, executions, FLOPs, bytes, exposed time); a group is named by its
// longest member. Ties broken by pattern and shape.
std::vector<TopOp> top_op_groups(const std::vector<sim::OpRecord>& ops, bool collectives, int n,
                                 double step_time_s) {
  struct Group {
    TopOp sum;
    double longest_s = 0;  // of one member: the group is named by it
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Group> groups;
  for (const sim::OpRecord& op : ops) {
    if (op.collective != collectives) continue;
    TopOp row = top_op_of(op, step_time_s);
    row.op_name = op_name_pattern(op.op_name);
    // The name without its number too ("add.16" -> "add"), so two kernels
    // of one layer with equal shapes stay apart.
    std::string kernel = op.opcode + ":" + name_stem(op.name);
    auto [it, inserted] =
        groups.try_emplace(std::make_tuple(row.op_name, std::move(kernel), row.shape, row.bound),
                           Group{row, op.seconds});
    if (inserted) continue;
    Group& group = it->second;
    if (op.seconds > group.longest_s ||
        (op.seconds == group.longest_s && op.name < group.sum.name)) {
      group.longest_s = op.seconds;
      group.sum.name = op.name;
    }
    group.sum.executions += row.executions;
    group.sum.seconds += row.seconds;
    group.sum.step_fraction += row.step_fraction;
    group.sum.flops += row.flops;
    group.sum.bytes += row.bytes;
    group.sum.exposed_seconds += row.exposed_seconds;
    group.sum.dcn_seconds += row.dcn_seconds;
    ++group.sum.instances;
  }
  std::vector<TopOp> rows;
  rows.reserve(groups.size());
  for (auto& [key, group] : groups) rows.push_back(std::move(group.sum));
  std::stable_sort(rows.begin(), rows.end(), [](const TopOp& a, const TopOp& b) {
    if (a.seconds != b.seconds) return a.seconds > b.seconds;
    if (a.op_name != b.op_name) return a.op_name < b.op_name;
    return a.shape < b.shape;
  });
  if (static_cast<int>(rows.size()) > n) rows.resize(static_cast<size_t>(std::max(n, 0)));
  return rows;
}

bool is_matmul(compiler::Opcode op) {
  return op == compiler::Opcode::kDot || op == compiler::Opcode::kConvolution;
}

// TopOp::kernel for every row: a fusion that holds a dot or convolution is
// "fusion(dot+<root>)" ("fusion(dot)" when the dot is the root), since a
// matmul with a bias add is a matmul kernel, not an add.
void label_kernels(const compiler::SpmdProgram& program, std::vector<TopOp*> rows) {
  for (TopOp* row : rows) row->kernel = kernel_label(row->opcode, row->name);
  std::set<std::string> fusions;
  for (TopOp* row : rows)
    if (row->opcode == "fusion") fusions.insert(row->name);
  if (fusions.empty()) return;
  std::map<std::string, std::string> matmul_of;  // fusion root name -> its matmul opcode
  const auto count = static_cast<size_t>(program.module.computation_count());
  for (size_t c = 0; c < count && c < program.fusion.size(); ++c) {
    const compiler::Computation& comp =
        program.module.computation(static_cast<compiler::CompId>(c));
    for (const compiler::FusionGroup& group : program.fusion[c].groups) {
      if (group.members.empty() || !fusions.count(comp.instr(group.members.back()).name)) continue;
      for (compiler::InstrId m : group.members)
        if (is_matmul(comp.instr(m).opcode)) {
          matmul_of[comp.instr(group.members.back()).name] =
              std::string(compiler::opcode_name(comp.instr(m).opcode));
          break;
        }
    }
  }
  for (TopOp* row : rows) {
    if (row->opcode != "fusion") continue;
    auto it = matmul_of.find(row->name);
    if (it == matmul_of.end()) continue;
    const std::string root = name_stem(row->name);
    row->kernel =
        root == it->second ? "fusion(" + root + ")" : "fusion(" + it->second + "+" + root + ")";
  }
}

// The peak's instruction, its largest live buffers and the live bytes over
// the step (memory_plan.h), replanned with the options the program was
// planned with (the same peak).
MemoryPeak memory_peak_of(const compiler::SpmdProgram& program, int top_n, int timeline_points) {
  MemoryPeak peak;
  const compiler::Module& module = program.module;
  if (module.entry_id() == compiler::kNoId) return peak;
  const compiler::MemoryPlanInput plan_input{
      module, program.schedule, program.fusion,
      compiler::MemoryPlanOptions{.outputs_alias_parameters =
                                      program.memory.outputs_alias_parameters}};
  const compiler::Computation& entry = module.entry();
  peak.schedule_length = entry.size();
  if (program.memory.peak_at != compiler::kNoId) {
    const compiler::Instruction& at = entry.instr(program.memory.peak_at);
    peak.instruction = at.name;
    peak.op_name = at.op_name;
    peak.pass = classify_op_name(at.op_name).pass;
    const auto entry_id = static_cast<size_t>(module.entry_id());
    const std::vector<compiler::InstrId>* order =
        entry_id < program.schedule.size() &&
                program.schedule[entry_id].size() == static_cast<size_t>(entry.size())
            ? &program.schedule[entry_id]
            : nullptr;
    peak.schedule_position =
        order ? std::find(order->begin(), order->end(), program.memory.peak_at) - order->begin()
              : program.memory.peak_at;
  }
  compiler::MemoryPlanDetail detail = compiler::describe_memory_plan(plan_input);
  const std::vector<compiler::LiveBufferAtPeak>& live = detail.live_at_peak;
  peak.live_buffers = static_cast<int64_t>(live.size());
  for (const compiler::LiveBufferAtPeak& b : live) {
    if (static_cast<int>(peak.top_buffers.size()) >= top_n) break;
    peak.top_buffers.push_back({b.instruction, b.op_name, b.shape, b.sharding,
                                memory_role_key(b.role), classify_op_name(b.op_name).pass,
                                b.bytes});
  }
  const std::vector<int64_t>& series = detail.live_by_position;
  const auto n = static_cast<int64_t>(series.size());
  const int64_t buckets = std::min<int64_t>(n, std::max(timeline_points, 1));
  for (int64_t i = 0; i < buckets; ++i) {
    const int64_t begin = i * n / buckets, end = (i + 1) * n / buckets;
    peak.timeline_positions.push_back(begin);
    peak.timeline_bytes.push_back(*std::max_element(series.begin() + begin, series.begin() + end));
  }
  return peak;
}

// ---- notes on what the numbers silently rest on ----

// Uneven sharding: a tensor dim of size d over t tiles is padded to
// ceil(d / t) x t (XLA pads every shard to the same extent), so that much of
// the tensor, and of the work of each op on it, is padding. Over the
// sharding annotations of the module as given (before partitioning); one
// line per distinct op_name pattern, shape and sharding.
void add_padding_note(Report& r, const compiler::Module& annotated) {
  struct Padded {
    std::string what;  // op_name pattern or name, and shape
    std::vector<int64_t> padded_dims;
    int64_t elements = 0;
    int64_t padded_elements = 0;
    double fraction() const {
      return padded_elements > 0 ? 1.0 - double(elements) / double(padded_elements) : 0;
    }
  };
  std::map<std::string, Padded> padded;  // by what + sharding text
  for (const compiler::Computation& comp : annotated.computations())
    for (const compiler::Instruction& instr : comp.instructions()) {
      if (!instr.sharding || !instr.shape.is_array() || instr.shape.rank() == 0) continue;
      compiler::Sharding sharding;
      try {
        sharding = compiler::parse_sharding(*instr.sharding);
      } catch (const UserError&) {
        continue;
      }
      if (!sharding.is_tiled()) continue;
      const std::vector<int64_t> tiles = sharding.data_tile_dims();
      if (static_cast<int>(tiles.size()) != instr.shape.rank()) continue;
      Padded p;
      p.elements = 1;
      p.padded_elements = 1;
      bool uneven = false;
      for (int i = 0; i < instr.shape.rank(); ++i) {
        const int64_t d = instr.shape.dim(i),
                      t = std::max<int64_t>(tiles[static_cast<size_t>(i)], 1);
        const int64_t padded_d = (d + t - 1) / t * t;
        uneven |= padded_d != d;
        p.padded_dims.push_back(padded_d);
        p.elements *= d;
        p.padded_elements *= padded_d;
      }
      if (!uneven) continue;
      p.what =
          fmt::format("{} {}", instr.op_name.empty() ? instr.name : op_name_pattern(instr.op_name),
                      instr.shape.to_string(false));
      padded.try_emplace(p.what + " " + *instr.sharding, std::move(p));
    }
  if (padded.empty()) return;
  std::vector<const Padded*> rows;
  int64_t elements = 0, padded_elements = 0;
  for (const auto& [key, p] : padded) {
    rows.push_back(&p);
    elements += p.elements;
    padded_elements += p.padded_elements;
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Padded* a, const Padded* b) { return a->fraction() > b->fraction(); });
  constexpr size_t kShown = 3;
  std::string list;
  for (size_t i = 0; i < rows.size() && i < kShown; ++i)
    list += fmt::format("{}{} to [{}] ({:.1f} % padding)", i ? "; " : "", rows[i]->what,
                        fmt::join(rows[i]->padded_dims, ","), rows[i]->fraction() * 100);
  r.notes.push_back(fmt::format(
      "uneven sharding: {} annotated tensor(s) have a dim that does not divide by its tiles, so "
      "each shard is padded "
      "(the ops on them do that much more work; HFU counts it, MFU does not): {}{}; {} padded "
      "elements, {:.1f} % of "
      "those tensors",
      rows.size(), list, rows.size() > kShown ? "; ..." : "", padded_elements - elements,
      100.0 * (1.0 - double(elements) / double(padded_elements))));
}

// What made a collective, from its kind, op_name and the computation it runs
// in (the partitioner's windowed-einsum loops are computations named
// windowed_*).
std::string collective_cause(const TopOp& op, const std::string& computation) {
  const bool windowed = computation.rfind("windowed_", 0) == 0;
  if (windowed)
    return "a step of a windowed-einsum loop (compiler.windowed_einsum chose to window this dot; "
           "its transfers are "
           "not hidden behind the loop's matmul steps)";
  // A group's op_name is a pattern (layer_*): classify it as one layer's.
  std::string one_layer = op.op_name;
  for (size_t star = one_layer.find("_*"); star != std::string::npos;
       star = one_layer.find("_*", star))
    one_layer.replace(star + 1, 1, "0");
  const OpNameParts parts = classify_op_name(one_layer);
  const std::string& kind = op.opcode;
  auto is = [&kind](const char* k) { return kind.rfind(k, 0) == 0; };
  if (is("all-gather"))
    return parts.layer_matmul
               ? "the dot's strategy gathers a sharded operand whole (not windowed: see "
                 "compiler.windowed_einsum threshold_mib and overlap_test)"
               : "a reshard to a less sharded layout (an operand gathered for its op)";
  if (is("reduce-scatter"))
    return parts.layer_matmul
               ? "the dot's partial sums scattered to its output's sharding (not windowed: see "
                 "compiler.windowed_einsum)"
               : "partial sums scattered to the result's sharding";
  if (is("all-reduce")) {
    if (parts.pass == "optimizer")
      return "a sum over the devices that split a weight or its gradient (e.g. a norm)";
    if (parts.pass == "backward")
      return "partial sums of a backward dot contracted over a sharded dim, or a gradient summed "
             "over its "
             "data-parallel copies";
    return "partial sums of a dot contracted over a sharded dim";
  }
  if (is("all-to-all")) return "a reshard that moves which dim is sharded";
  if (is("collective-permute")) return "a halo exchange or a reshard between device orders";
  return "a reshard";
}

// When the compute stream waits long on communication, which collectives
// (summed over layers) it waits on and which compiler decision made them.
void add_exposed_communication_note(Report& r, const sim::Timeline& t,
                                    const compiler::SpmdProgram& program) {
  constexpr double kLargeFraction = 0.1;  // of the step
  if (t.step_time_s <= 0 || t.exposed_communication_s < kLargeFraction * t.step_time_s) return;
  std::vector<TopOp> groups = top_op_groups(t.ops, true, INT_MAX, t.step_time_s);
  std::stable_sort(groups.begin(), groups.end(), [](const TopOp& a, const TopOp& b) {
    return a.exposed_seconds > b.exposed_seconds;
  });
  std::map<std::string, std::string> computation_of;  // instruction name -> its computation's name
  for (const compiler::Computation& comp : program.module.computations())
    for (const compiler::Instruction& instr : comp.instructions())
      if (compiler::is_collective(instr.opcode) || compiler::is_async_start(instr.opcode))
        computation_of.emplace(instr.name, comp.name());
  constexpr size_t kShown = 3;
  std::string list;
  for (size_t i = 0; i < groups.size() && i < kShown && groups[i].exposed_seconds > 0; ++i) {
    const TopOp& g = groups[i];
    auto it = computation_of.find(g.name);
    list += fmt::format("{}{} {} {} ({} exposed, {:.0f} % of it, {} op(s)): {}", i ? "; " : "",
                        g.opcode, g.op_name.empty() ? g.name : g.op_name, g.shape,
                        format_seconds(g.exposed_seconds),
                        100 * g.exposed_seconds / t.exposed_communication_s, g.instances,
                        collective_cause(g, it == computation_of.end() ? "" : it->second));
  }
  if (list.empty()) return;
  r.notes.push_back(
      fmt::format("exposed communication is {} ({:.1f} % of the step); most of it: {}",
                  format_seconds(t.exposed_communication_s),
                  100 * t.exposed_communication_s / t.step_time_s, list));
}

}  // namespace

std::string kernel_label(const std::string& opcode, const std::string& name) {
  return opcode == "fusion" ? "fusion(" + name_stem(name) + ")" : opcode;
}

const std::vector<std::string>& collective_kinds() {
  static const std::vector<std::string> kinds = {"all-reduce", "all-gather", "reduce-scatter",
                                                 "all-to-all", "collective-permute"};
  return kinds;
}

std::string memory_role_key(compiler::ValueRole role) {
  switch (role) {
    case compiler::ValueRole::kParameter:
      return "parameters";
    case compiler::ValueRole::kOptimizerState:
      return "optimizer_state";
    case compiler::ValueRole::kInput:
      return "inputs";
    case compiler::ValueRole::kGradient:
      return "gradients";
    case compiler::ValueRole::kActivation:
      return "activations";
    case compiler::ValueRole::kTemporary:
      return "temporaries";
    case compiler::ValueRole::kCollectiveBuffer:
      return "collective_buffers";
  }
  return "temporaries";
}

Report summarize(const SummaryInput& input) {
  assert(input.timeline && input.program);
  const sim::Timeline& t = *input.timeline;
  const compiler::SpmdProgram& program = *input.program;
  Report r;
  r.workload = input.workload_name;
  r.mode = input.mode;
  if (!r.mode.empty())
    r.notes.push_back(
        "'entry float elements' (json: parameters) counts every floating-point element the entry "
        "takes, "
        "over all devices: weights, optimizer state and float inputs alike (an HLO module does not "
        "say "
        "which is which)");
  if (r.mode == "as-is")
    r.notes.push_back(
        "MFU counts every matmul FLOP the program executes (an XLA module does not mark "
        "recomputation), so MFU = HFU's matmul part");
  if (t.unknown_trip_counts > 0)
    r.notes.push_back(
        fmt::format("{} while loop(s) with a trip count podsim could not derive ran once",
                    t.unknown_trip_counts));
  if (t.conditionals_first_branch > 0)
    r.notes.push_back(fmt::format(
        "{} conditional(s) ran their first branch (the branch taken is a run-time value)",
        t.conditionals_first_branch));
  {
    int64_t offloaded = 0, offloaded_bytes = 0;
    for (const compiler::Computation& comp : program.module.computations())
      for (const compiler::Instruction& instr : comp.instructions())
        if (sim::moves_to_host(instr)) {
          ++offloaded;
          offloaded_bytes += instr.shape.byte_size();
        }
    if (offloaded > 0)
      r.notes.push_back(
          fmt::format("{} value(s) offloaded to host memory ({} bytes per device, one of each): "
                      "podsim does not model host "
                      "memory, so they stay in the HBM plan too (peak memory is an upper bound); "
                      "each transfer is timed over "
                      "the host link (chip.host_bandwidth)",
                      offloaded, offloaded_bytes));
  }
  {
    std::set<std::string> unknown_names, targets;
    for (const compiler::Computation& comp : program.module.computations())
      for (const compiler::Instruction& instr : comp.instructions())
        if (instr.opcode == compiler::Opcode::kCustomCall &&
            sim::classify_custom_call(instr) == sim::CustomCallKind::kUnknown) {
          ++r.unknown_custom_calls.count;
          unknown_names.insert(instr.name);
          targets.insert(instr.attrs.custom_call_target);
        }
    for (const sim::OpRecord& op : t.ops)
      if (op.opcode == "custom-call" && unknown_names.count(op.name))
        r.unknown_custom_calls.seconds += op.seconds;
    r.unknown_custom_calls.targets.assign(targets.begin(), targets.end());
  }
  r.hardware = input.hardware_name;
  r.fidelity = t.fidelity == sim::Fidelity::kFull ? "full" : "fast";
  r.fallback_reason = t.fallback_reason;
  r.approximation_note = t.approximation_note;
  r.per_device = t.per_device;
  r.simulated_devices = t.simulated_devices;
  r.devices = t.devices;
  r.devices_simulated = t.devices_simulated;
  r.parameters = input.model.parameters;
  r.tokens_per_step = input.model.tokens_per_step;

  r.step_time_s = t.step_time_s;
  r.model_flops_per_step = input.model.model_flops_per_step;
  r.executed_flops_per_step = t.executed_flops_per_device * static_cast<double>(t.devices);
  r.peak_flops_per_device = input.peak_flops_per_device;
  if (t.step_time_s > 0) {
    r.tokens_per_second = static_cast<double>(r.tokens_per_step) / t.step_time_s;
    if (t.devices > 0)
      r.model_flops_per_second_per_device = r.model_flops_per_step / (t.step_time_s * t.devices);
    // Peak FLOPs the devices could have done in the step (report.h formulas).
    double peak_flops_in_step =
        t.step_time_s * static_cast<double>(t.devices) * input.peak_flops_per_device;
    if (peak_flops_in_step > 0) {
      r.mfu = r.model_flops_per_step / peak_flops_in_step;
      r.hfu = r.executed_flops_per_step / peak_flops_in_step;
    }
  }

  r.peak_memory_bytes = program.memory.peak_bytes;
  r.hbm_capacity_bytes = input.hbm_capacity_bytes;
  r.fits_in_memory = static_cast<double>(r.peak_memory_bytes) <= input.hbm_capacity_bytes;
  for (compiler::ValueRole role : kRolesInOrder) {
    auto it = program.memory.at_peak.bytes.find(role);
    r.memory_breakdown.push_back(
        {memory_role_key(role), it == program.memory.at_peak.bytes.end() ? 0 : it->second});
  }
  r.memory_peak = memory_peak_of(program, input.memory_top_n, input.memory_timeline_points);

  r.time.compute_s = t.compute_s;
  r.time.mxu_bound_s = t.mxu_bound_s;
  r.time.vpu_bound_s = t.vpu_bound_s;
  r.time.memory_bound_s = t.hbm_bound_s;
  r.time.hbm_contention_s = t.hbm_contention_s;
  r.time.overhead_s = t.overhead_s;
  r.time.exposed_communication_s = t.exposed_communication_s;
  r.time.exposed_dcn_s = t.exposed_dcn_s;
  r.time.dcn_busy_s = t.dcn_busy_s;
  r.time.idle_s = t.idle_s;

  for (const std::string& kind : collective_kinds())
    r.collectives.push_back({kind, 0, static_count_of(program.stats.spmd, kind), 0, 0});
  for (const sim::CollectiveSummary& c : t.collectives) {
    auto it = std::find_if(r.collectives.begin(), r.collectives.end(),
                           [&](const CollectiveStats& s) { return s.kind == c.kind; });
    if (it == r.collectives.end()) {
      r.collectives.push_back({c.kind, 0, 0, 0, 0});
      it = r.collectives.end() - 1;
    }
    it->count += c.count;
    it->bytes += c.bytes;
    it->seconds += c.seconds;
  }

  r.top_ops = top_ops(t.ops, false, input.top_n, t.step_time_s);
  r.top_collectives = top_ops(t.ops, true, input.top_n, t.step_time_s);
  r.top_op_groups = top_op_groups(t.ops, false, input.top_n, t.step_time_s);
  r.top_collective_groups = top_op_groups(t.ops, true, input.top_n, t.step_time_s);
  r.parts = summarize_parts(t.ops, input.peak_flops_per_device);
  if (input.annotated && r.mode != "as-is") add_padding_note(r, *input.annotated);
  add_exposed_communication_note(r, t, program);
  {
    std::vector<TopOp*> rows;
    for (std::vector<TopOp>* list :
         {&r.top_ops, &r.top_collectives, &r.top_op_groups, &r.top_collective_groups})
      for (TopOp& op : *list) rows.push_back(&op);
    label_kernels(program, rows);
  }

  r.compile.instructions_annotated = program.stats.instructions_annotated;
  r.compile.instructions_partitioned = program.stats.instructions_partitioned;
  r.compile.full_replications = program.stats.spmd.full_replications;
  r.compile.default_fallbacks = program.stats.spmd.default_fallbacks;
  r.compile.remat_applied = program.stats.remat_applied;
  r.compile.recomputed_flops = program.stats.recomputed_flops;

  r.compile_wall_s = input.compile_wall_s;
  r.simulate_wall_s = input.simulate_wall_s > 0 ? input.simulate_wall_s : t.simulate_wall_s;
  return r;
}

}  // namespace podsim::reports
