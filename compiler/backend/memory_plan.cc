// Liveness-based memory plan (memory_plan.h). Each computation is swept once:
// buffers are created in id order, reads extend last uses, and a difference
// array over schedule positions gives the live bytes at every position in
// O(instructions + buffers). The breakdown by role is recomputed only at
// the peak position. While bodies and callees are planned once each
// (memoized) and their peaks added at the calling position.
#include "compiler/backend/memory_plan.h"

#include "compiler/backend/fusion.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace podsim::compiler {
namespace {

constexpr size_t kRoleCount = 7;
using RoleBytes = std::array<int64_t, kRoleCount>;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

struct Buffer {
  int64_t bytes = 0;
  int64_t def = 0;       // first schedule position it occupies memory
  int64_t written = 0;   // schedule position of its producer
  int64_t last_use = 0;  // last schedule position that reads it
  InstrId producer = kNoId;
  DType dtype = DType::kF32;    // of the leaf
  const Shape* leaf = nullptr;  // in the producer's shape
};

struct ComputationPeak {
  int64_t peak_bytes = 0;
  RoleBytes by_role{};
  InstrId peak_at = kNoId;
  std::vector<LiveBufferAtPeak> live;     // only when the planner collects them
  std::vector<int64_t> live_by_position;  // the entry's, only when collected
};

class MemoryPlanner {
 public:
  MemoryPlanner(const MemoryPlanInput& in, bool collect_live)
      : in_(in),
        collect_live_(collect_live),
        memo_(static_cast<size_t>(in.module.computation_count())) {}

  ComputationPeak plan(CompId comp_id, bool is_entry);

  const MemoryPlanInput& input() const { return in_; }
  bool collect_live() const { return collect_live_; }

 private:
  class ComputationSweep;
  const MemoryPlanInput& in_;
  bool collect_live_;
  std::vector<std::optional<ComputationPeak>> memo_;
};

class MemoryPlanner::ComputationSweep {
 public:
  ComputationSweep(MemoryPlanner& planner, CompId id, bool is_entry)
      : planner_(planner),
        comp_id_(id),
        comp_(planner.input().module.computation(id)),
        is_entry_(is_entry) {}

  ComputationPeak run() {
    const int n = comp_.size();
    if (n == 0) return {};
    set_positions();
    users_ = comp_.compute_users();
    set_read_positions();
    mark_expansions();
    leaves_.resize(static_cast<size_t>(n));
    for (InstrId id : order_) create_buffers(id);
    for (InstrId id = 0; id < n; ++id) record_reads(id);
    for (int32_t b : leaves_[static_cast<size_t>(comp_.root())]) {
      extend(b, n - 1);
      // Entry outputs get their own allocation for the whole run (XLA's
      // live-out buffers share no memory with temporaries).
      if (is_entry_ && b != kNoId) buffers_[static_cast<size_t>(b)].def = 0;
    }
    if (is_entry_ && planner_.input().options.outputs_alias_parameters)
      alias_outputs_to_parameters();
    return sweep();
  }

 private:
  // ---- positions ----
  void set_positions() {
    const auto n = static_cast<size_t>(comp_.size());
    const auto& schedules = planner_.input().schedule;
    if (static_cast<size_t>(comp_id_) < schedules.size() &&
        schedules[static_cast<size_t>(comp_id_)].size() == n) {
      order_ = schedules[static_cast<size_t>(comp_id_)];
    } else {
      order_.resize(n);
      for (size_t i = 0; i < n; ++i) order_[i] = static_cast<InstrId>(i);
    }
    pos_.assign(n, 0);
    for (size_t p = 0; p < n; ++p) pos_[static_cast<size_t>(order_[p])] = static_cast<int64_t>(p);
    const auto& fusions = planner_.input().fusion;
    if (static_cast<size_t>(comp_id_) < fusions.size() &&
        fusions[static_cast<size_t>(comp_id_)].group_of.size() == n)
      fusion_ = &fusions[static_cast<size_t>(comp_id_)];
  }

  // A fused instruction is read (and reads) when its group's root runs; a
  // duplicated one at the last of its groups' roots.
  void set_read_positions() {
    read_pos_ = pos_;
    materialized_.assign(static_cast<size_t>(comp_.size()), true);
    if (!fusion_) return;
    std::vector<bool> seen(static_cast<size_t>(comp_.size()), false);
    const std::vector<bool> recomputed = duplicated_members(*fusion_, comp_.size());
    for (size_t gi = 0; gi < fusion_->groups.size(); ++gi) {
      const FusionGroup& g = fusion_->groups[gi];
      if (g.members.empty()) continue;
      const InstrId root = g.members.back();
      for (InstrId m : g.members) {
        const auto sm = static_cast<size_t>(m);
        if (m == root) continue;
        // Listed in another group than its own and not a cheap op that each
        // group recomputes: an inconsistent plan; it belongs to its own.
        if (fusion_->group_of[sm] != static_cast<int32_t>(gi) &&
            !is_cheap_to_duplicate(comp_.instr(m).opcode))
          continue;
        // A multi-output fusion's extra output (read outside its group) is
        // written by the kernel: a buffer from its (contiguous) position.
        if (!recomputed[sm] && std::any_of(users_[sm].begin(), users_[sm].end(), [&](InstrId u) {
              return fusion_->group_of[static_cast<size_t>(u)] != static_cast<int32_t>(gi);
            }))
          continue;
        materialized_[sm] = false;
        read_pos_[sm] = seen[sm] ? std::max(read_pos_[sm], pos_[static_cast<size_t>(root)])
                                 : pos_[static_cast<size_t>(root)];
        seen[sm] = true;
      }
    }
  }

  // ---- expansions ----
  // Cheap ops a consumer kernel recomputes from their inputs (elementwise
  // and data movement): the ops fusion duplicates (fusion.h), so an
  // expensive one (exp, log, divide, ...) is written, as XLA writes it, and
  // the simulator charges that write.
  static bool is_cheap_expansion_op(Opcode op) {
    return op != Opcode::kConstant && is_cheap_to_duplicate(op);
  }
  // Readers that need the value in a buffer of its own.
  static bool needs_buffer(Opcode reader) {
    switch (reader) {
      case Opcode::kTuple:
      case Opcode::kGetTupleElement:
      case Opcode::kWhile:
      case Opcode::kCall:
      case Opcode::kCustomCall:
      case Opcode::kDynamicUpdateSlice:
      case Opcode::kScatter:
        return true;
      default:
        return is_collective(reader);
    }
  }

  // Marks the expanding values (memory_plan.h): a materialized cheap op
  // whose inputs, read through other expansions and fused members, are at
  // most 1/kExpansionRatio of its size (a one-hot mask or a broadcast:
  // iota/broadcast + compare/convert/select/arithmetic). XLA fuses such a
  // producer into every consumer (duplicating it) rather than writing it.
  void mark_expansions() {
    constexpr int64_t kNotCheap = INT64_MAX / 4;
    const auto n = static_cast<size_t>(comp_.size());
    expansion_.assign(n, false);
    std::vector<int64_t> input_bytes(n, 0);  // bytes a reader reads through this value
    for (InstrId id = 0; id < comp_.size(); ++id) {
      const auto sid = static_cast<size_t>(id);
      const Instruction& instr = comp_.instr(id);
      const int64_t own = instr.shape.byte_size();
      if (!is_cheap_expansion_op(instr.opcode) || instr.shape.is_tuple()) {
        // A fused member that is not cheap (a reduce, a dot) cannot be
        // recomputed in another kernel; a constant or partition-id is read.
        input_bytes[sid] = materialized_[sid] || instr.operands.empty() ? own : kNotCheap;
        continue;
      }
      int64_t inputs = 0;
      for (InstrId op : instr.operands)
        inputs = std::min(kNotCheap, inputs + input_bytes[static_cast<size_t>(op)]);
      if (!materialized_[sid]) {
        input_bytes[sid] = inputs;
        continue;
      }
      const bool expands = id != comp_.root() && inputs <= own / kExpansionRatio &&
                           std::none_of(users_[sid].begin(), users_[sid].end(), [&](InstrId u) {
                             return needs_buffer(comp_.instr(u).opcode);
                           });
      expansion_[sid] = expands;
      input_bytes[sid] = expands ? inputs : own;
    }
  }

  // Buffers read when `id` is read: its own, or for a fused member or an
  // expansion those of its inputs.
  std::vector<int32_t> read_through(InstrId id) {
    const auto sid = static_cast<size_t>(id);
    if (materialized_[sid] && !expansion_[sid]) return leaves_[sid];
    auto [it, inserted] = through_.try_emplace(id);
    if (inserted) {
      std::vector<int32_t> all;
      for (InstrId op : comp_.instr(id).operands) {
        std::vector<int32_t> part = read_through(op);
        all.insert(all.end(), part.begin(), part.end());
      }
      std::sort(all.begin(), all.end());
      all.erase(std::unique(all.begin(), all.end()), all.end());
      through_[id] = std::move(all);
      return through_[id];
    }
    return it->second;
  }

  // ---- buffers ----
  int32_t new_buffer(const Shape& leaf, int64_t def, InstrId producer) {
    buffers_.push_back(Buffer{leaf.byte_size(), def, def, def, producer, leaf.dtype(), &leaf});
    return static_cast<int32_t>(buffers_.size() - 1);
  }

  void create_buffers(InstrId id) {
    const Instruction& instr = comp_.instr(id);
    auto& mine = leaves_[static_cast<size_t>(id)];
    const int64_t def = pos_[static_cast<size_t>(id)];
    switch (instr.opcode) {
      case Opcode::kParameter:
        // Entry parameters: live throughout. Inner parameters alias buffers
        // of the caller (kNoId: not counted here).
        for (const Shape* leaf : instr.shape.leaves())
          mine.push_back(is_entry_ ? new_buffer(*leaf, 0, id) : kNoId);
        if (is_entry_)
          for (int32_t b : mine) buffers_[static_cast<size_t>(b)].last_use = comp_.size() - 1;
        return;
      case Opcode::kTuple:
        for (InstrId op : instr.operands) {
          const auto& src = leaves_[static_cast<size_t>(op)];
          mine.insert(mine.end(), src.begin(), src.end());
        }
        return;
      case Opcode::kGetTupleElement: {
        const auto [begin, count] = element_leaf_range(instr.operand(0), instr.attrs.tuple_index);
        const auto& src = leaves_[static_cast<size_t>(instr.operand(0))];
        if (begin + count <= static_cast<int64_t>(src.size()))
          mine.assign(src.begin() + begin, src.begin() + begin + count);
        return;
      }
      case Opcode::kWhile:    // the loop state is updated in place
      case Opcode::kBitcast:  // views of their operand's buffers
      case Opcode::kOptimizationBarrier:
      case Opcode::kAddDependency:
      case Opcode::kDomain:
      case Opcode::kAllReduceDone:  // all-reduce-start's result is the all-reduce's
        mine = leaves_[static_cast<size_t>(instr.operand(0))];
        return;
      case Opcode::kAllGatherDone:  // element 1 of the start: its result
      case Opcode::kCollectivePermuteDone:
      case Opcode::kAsyncDone:
      case Opcode::kCopyDone:  // element 0 of copy-start: the destination
      case Opcode::kRecvDone: {
        const bool first = instr.opcode == Opcode::kCopyDone || instr.opcode == Opcode::kRecvDone;
        const auto [begin, count] = element_leaf_range(instr.operand(0), first ? 0 : 1);
        const auto& src = leaves_[static_cast<size_t>(instr.operand(0))];
        if (count > 0 && begin + count <= static_cast<int64_t>(src.size()))
          mine.assign(src.begin() + begin, src.begin() + begin + count);
        return;
      }
      case Opcode::kAllGatherStart:
      case Opcode::kCollectivePermuteStart:
      case Opcode::kAsyncStart:
      case Opcode::kCopyStart:
        if (instr.shape.is_tuple() && create_start_buffers(id)) return;
        break;
      default:
        break;
    }
    if (!materialized_[static_cast<size_t>(id)]) return;
    if (expansion_[static_cast<size_t>(id)]) {  // no buffer: readers read its inputs
      mine = read_through(id);
      return;
    }
    if (updates_in_place(id)) {
      mine = leaves_[static_cast<size_t>(instr.operand(0))];
      return;
    }
    for (const Shape* leaf : instr.shape.leaves()) mine.push_back(new_buffer(*leaf, def, id));
  }

  // A dynamic-update-slice writes into its operand's buffer (XLA's in-place
  // dynamic-update-slice) when it is that operand's last reader (others, such
  // as the dynamic-slice of a read-modify-write, read it no later: in its
  // kernel or before): a materialized buffer of this computation that is not
  // an entry parameter, or the caller's (a loop state element updated in the
  // loop body).
  bool updates_in_place(InstrId id) const {
    const Instruction& instr = comp_.instr(id);
    if (instr.opcode != Opcode::kDynamicUpdateSlice) return false;
    const InstrId target = instr.operand(0);
    const auto st = static_cast<size_t>(target);
    const bool last_reader = std::all_of(users_[st].begin(), users_[st].end(), [&](InstrId u) {
      const Opcode op = comp_.instr(u).opcode;
      return u == id || (op != Opcode::kTuple && op != Opcode::kGetTupleElement &&
                         read_pos_[static_cast<size_t>(u)] <= read_pos_[static_cast<size_t>(id)]);
    });
    if (!last_reader || !materialized_[st] || expansion_[st] || leaves_[st].size() != 1)
      return false;
    const int32_t b = leaves_[st][0];
    if (b == kNoId) return true;
    const Buffer& buffer = buffers_[static_cast<size_t>(b)];
    return !(is_entry_ && comp_.instr(buffer.producer).opcode == Opcode::kParameter) &&
           buffer.bytes == instr.shape.byte_size();
  }

  // Leaves [begin, begin + count) of element `index` of tuple-shaped
  // instruction `tuple`, in pre-order. Leaf offsets are computed once per
  // tuple (loop states with thousands of elements are read by as many
  // get-tuple-elements).
  // An async start's tuple: the element that holds its operands (element 0;
  // copy-start's source, element 1) aliases their buffers, the others (its
  // result, contexts) are new. False when the operands do not match that
  // element leaf for leaf (then every leaf is new).
  bool create_start_buffers(InstrId id) {
    const Instruction& instr = comp_.instr(id);
    const size_t alias_element = instr.opcode == Opcode::kCopyStart ? 1 : 0;
    std::vector<int32_t> operand_leaves;
    for (InstrId op : instr.operands) {
      const auto& src = leaves_[static_cast<size_t>(op)];
      operand_leaves.insert(operand_leaves.end(), src.begin(), src.end());
    }
    const auto& elements = instr.shape.tuple_shapes();
    if (elements.size() <= alias_element ||
        elements[alias_element].leaf_count() != static_cast<int64_t>(operand_leaves.size()))
      return false;
    auto& mine = leaves_[static_cast<size_t>(id)];
    const int64_t def = pos_[static_cast<size_t>(id)];
    for (size_t e = 0; e < elements.size(); ++e) {
      if (e == alias_element) {
        mine.insert(mine.end(), operand_leaves.begin(), operand_leaves.end());
        continue;
      }
      for (const Shape* leaf : elements[e].leaves()) mine.push_back(new_buffer(*leaf, def, id));
    }
    return true;
  }

  std::pair<int64_t, int64_t> element_leaf_range(InstrId tuple, int64_t index) {
    const Shape& shape = comp_.instr(tuple).shape;
    if (!shape.is_tuple() || index < 0 ||
        index >= static_cast<int64_t>(shape.tuple_shapes().size()))
      return {0, 0};
    auto [it, inserted] = leaf_offsets_.try_emplace(tuple);
    std::vector<int64_t>& offsets = it->second;
    if (inserted) {
      offsets.reserve(shape.tuple_shapes().size() + 1);
      offsets.push_back(0);
      for (const Shape& element : shape.tuple_shapes())
        offsets.push_back(offsets.back() + element.leaf_count());
    }
    const auto i = static_cast<size_t>(index);
    return {offsets[i], offsets[i + 1] - offsets[i]};
  }

  void extend(int32_t buffer, int64_t position) {
    if (buffer == kNoId) return;
    Buffer& b = buffers_[static_cast<size_t>(buffer)];
    b.last_use = std::max(b.last_use, position);
  }

  void record_reads(InstrId id) {
    const Instruction& instr = comp_.instr(id);
    if (instr.opcode == Opcode::kTuple || instr.opcode == Opcode::kGetTupleElement)
      return;  // aliases, no read
    const int64_t at = read_pos_[static_cast<size_t>(id)];
    for (InstrId op : instr.operands)
      for (int32_t b : leaves_[static_cast<size_t>(op)]) extend(b, at);
  }

  // Root tuple element i+1 is written into the i-th donated parameter.
  void alias_outputs_to_parameters() {
    const Instruction& root = comp_.root_instr();
    if (root.opcode != Opcode::kTuple) return;
    std::vector<InstrId> donated;
    for (InstrId p : comp_.parameters()) {
      ValueRole role = parameter_role(comp_.instr(p));
      if (role == ValueRole::kParameter || role == ValueRole::kOptimizerState) donated.push_back(p);
    }
    for (size_t i = 0; i < donated.size() && i + 1 < root.operands.size(); ++i) {
      const InstrId out = root.operands[i + 1];
      if (comp_.instr(out).shape.byte_size() != comp_.instr(donated[i]).shape.byte_size()) continue;
      for (int32_t b : leaves_[static_cast<size_t>(out)]) {
        if (b == kNoId) continue;
        Buffer& buf = buffers_[static_cast<size_t>(b)];
        if (comp_.instr(buf.producer).opcode != Opcode::kParameter) buf.bytes = 0;
      }
    }
  }

  // ---- roles ----
  ValueRole role_of(const Buffer& b, int64_t at, int64_t first_backward) const {
    const Instruction& producer = comp_.instr(b.producer);
    if (is_collective(producer.opcode) && b.written == at) return ValueRole::kCollectiveBuffer;
    if (producer.opcode == Opcode::kParameter) {
      return is_entry_ ? parameter_role(producer) : ValueRole::kTemporary;
    }
    const std::string& name = producer.op_name;
    // Gradients: floating-point bwd/ values read by the optimizer (not the
    // index arithmetic the partitioner tags with the same op_name).
    if (starts_with(name, "bwd/") && is_floating(b.dtype)) {
      for (InstrId u : users_[static_cast<size_t>(b.producer)])
        if (starts_with(comp_.instr(u).op_name, "opt/")) return ValueRole::kGradient;
      return ValueRole::kTemporary;
    }
    if (starts_with(name, "fwd/") && b.last_use >= first_backward) return ValueRole::kActivation;
    return ValueRole::kTemporary;
  }

  // ---- sweep ----
  ComputationPeak sweep() {
    const int64_t n = comp_.size();
    std::vector<int64_t> delta(static_cast<size_t>(n + 1), 0);
    for (const Buffer& b : buffers_) {
      delta[static_cast<size_t>(b.def)] += b.bytes;
      delta[static_cast<size_t>(b.last_use + 1)] -= b.bytes;
    }
    // Peaks of called control computations, added at the caller's position.
    std::vector<ComputationPeak> inner(static_cast<size_t>(n));
    for (InstrId id = 0; id < n; ++id) {
      const Instruction& instr = comp_.instr(id);
      if (instr.opcode == Opcode::kWhile) {
        ComputationPeak body = planner_.plan(instr.while_body(), false);
        ComputationPeak cond = planner_.plan(instr.while_condition(), false);
        inner[static_cast<size_t>(id)] = body.peak_bytes >= cond.peak_bytes ? body : cond;
      } else if (instr.opcode == Opcode::kCall && instr.to_apply() != kNoId) {
        inner[static_cast<size_t>(id)] = planner_.plan(instr.to_apply(), false);
      }
    }
    ComputationPeak result;
    result.peak_bytes = -1;
    int64_t live = 0, peak_pos = 0;
    for (int64_t p = 0; p < n; ++p) {
      live += delta[static_cast<size_t>(p)];
      const int64_t total =
          live + inner[static_cast<size_t>(order_[static_cast<size_t>(p)])].peak_bytes;
      if (is_entry_ && planner_.collect_live()) result.live_by_position.push_back(total);
      if (total > result.peak_bytes) {
        result.peak_bytes = total;
        peak_pos = p;
      }
    }
    result.peak_at = order_[static_cast<size_t>(peak_pos)];
    int64_t first_backward = n;  // activations: forward values still live when the backward starts
    for (InstrId id = 0; id < n; ++id)
      if (starts_with(comp_.instr(id).op_name, "bwd/"))
        first_backward = std::min(first_backward, pos_[static_cast<size_t>(id)]);
    for (size_t i = 0; i < buffers_.size(); ++i) {
      const Buffer& b = buffers_[i];
      if (b.def > peak_pos || peak_pos > b.last_use || b.bytes == 0) continue;
      const ValueRole role = role_of(b, peak_pos, first_backward);
      result.by_role[static_cast<size_t>(role)] += b.bytes;
      if (planner_.collect_live()) result.live.push_back(describe(b, role));
    }
    const ComputationPeak& nested = inner[static_cast<size_t>(result.peak_at)];
    for (size_t r = 0; r < kRoleCount; ++r) result.by_role[r] += nested.by_role[r];
    result.live.insert(result.live.end(), nested.live.begin(), nested.live.end());
    return result;
  }

  LiveBufferAtPeak describe(const Buffer& b, ValueRole role) const {
    const Instruction& producer = comp_.instr(b.producer);
    LiveBufferAtPeak live;
    live.computation = comp_id_;
    live.producer = b.producer;
    live.instruction = producer.name;
    live.op_name = producer.op_name;
    live.shape = b.leaf ? b.leaf->to_string(false) : producer.shape.to_string(false);
    live.sharding = producer.sharding.value_or(producer.global_sharding);
    live.role = role;
    live.bytes = b.bytes;
    return live;
  }

  MemoryPlanner& planner_;
  CompId comp_id_;
  const Computation& comp_;
  bool is_entry_;
  const FusionPlan* fusion_ = nullptr;
  std::vector<InstrId> order_;
  std::vector<int64_t> pos_;
  std::vector<int64_t> read_pos_;
  std::vector<bool> materialized_;
  std::vector<bool> expansion_;                                // mark_expansions
  std::unordered_map<InstrId, std::vector<int32_t>> through_;  // read_through memo
  std::vector<std::vector<InstrId>> users_;
  std::vector<std::vector<int32_t>> leaves_;  // buffer ids per instruction leaf (kNoId: caller's)
  std::vector<Buffer> buffers_;
  std::unordered_map<InstrId, std::vector<int64_t>> leaf_offsets_;
};

ComputationPeak MemoryPlanner::plan(CompId comp_id, bool is_entry) {
  if (!is_entry && memo_[static_cast<size_t>(comp_id)]) return *memo_[static_cast<size_t>(comp_id)];
  ComputationPeak result = ComputationSweep(*this, comp_id, is_entry).run();
  if (!is_entry) memo_[static_cast<size_t>(comp_id)] = result;
  return result;
}

}  // namespace

ValueRole parameter_role(const Instruction& parameter) {
  const std::string& name = parameter.op_name;
  if (starts_with(name, "opt_state/")) return ValueRole::kOptimizerState;
  if (starts_with(name, "input/")) return ValueRole::kInput;
  return ValueRole::kParameter;
}

MemoryPlan plan_memory(const MemoryPlanInput& input) {
  MemoryPlan plan;
  plan.outputs_alias_parameters = input.options.outputs_alias_parameters;
  if (input.module.entry_id() == kNoId) return plan;
  MemoryPlanner planner(input, /*collect_live=*/false);
  ComputationPeak entry = planner.plan(input.module.entry_id(), true);
  plan.peak_bytes = entry.peak_bytes;
  plan.peak_at = entry.peak_at;
  for (size_t r = 0; r < kRoleCount; ++r)
    if (entry.by_role[r] != 0) plan.at_peak.bytes[static_cast<ValueRole>(r)] = entry.by_role[r];
  return plan;
}

MemoryPlanDetail describe_memory_plan(const MemoryPlanInput& input) {
  if (input.module.entry_id() == kNoId) return {};
  MemoryPlanner planner(input, /*collect_live=*/true);
  ComputationPeak entry = planner.plan(input.module.entry_id(), true);
  MemoryPlanDetail detail{std::move(entry.live), std::move(entry.live_by_position)};
  std::stable_sort(detail.live_at_peak.begin(), detail.live_at_peak.end(),
                   [](const LiveBufferAtPeak& a, const LiveBufferAtPeak& b) {
                     if (a.bytes != b.bytes) return a.bytes > b.bytes;
                     if (a.computation != b.computation) return a.computation < b.computation;
                     return a.producer < b.producer;
                   });
  return detail;
}

std::vector<LiveBufferAtPeak> live_buffers_at_peak(const MemoryPlanInput& input) {
  return describe_memory_plan(input).live_at_peak;
}

std::vector<int64_t> live_bytes_by_position(const MemoryPlanInput& input) {
  return describe_memory_plan(input).live_by_position;
}

}  // namespace podsim::compiler
