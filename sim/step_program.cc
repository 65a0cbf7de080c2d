// Flattening of the per-device schedule into steps (see step_program.h).
#include "sim/step_program.h"

#include <fmt/format.h>
#include <algorithm>
#include <iterator>
#include <limits>
#include <unordered_map>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/ir/trip_count.h"

namespace podsim::sim {

using compiler::CompId;
using compiler::Computation;
using compiler::InstrId;
using compiler::Instruction;
using compiler::Opcode;

namespace {

// The collectives a value reads through free ops (ordinals, ascending,
// distinct); per element for tuples, so a get-tuple-element of loop state
// only waits for its element's collectives.
using Ordinals = std::vector<int32_t>;

struct Pending {
  Ordinals reads;
  std::vector<Pending> elements;
};

void add_reads(Ordinals& into, const Ordinals& more) {
  if (more.empty()) return;
  if (into.empty()) {
    into = more;
    return;
  }
  Ordinals both;
  both.reserve(into.size() + more.size());
  std::set_union(into.begin(), into.end(), more.begin(), more.end(), std::back_inserter(both));
  into = std::move(both);
}

Pending merged(Ordinals reads) { return Pending{std::move(reads), {}}; }

// State element k when `id` is get-tuple-element(parameter 0, k), also
// through get-tuple-element(tuple(...), j) (a copied loop body).
std::optional<int64_t> state_element(const Computation& c, InstrId id) {
  const Instruction* at = &c.instr(id);
  while (at->opcode == Opcode::kGetTupleElement && c.instr(at->operand(0)).opcode == Opcode::kTuple)
    at = &c.instr(c.instr(at->operand(0)).operand(static_cast<int>(at->attrs.tuple_index)));
  if (at->opcode != Opcode::kGetTupleElement) return std::nullopt;
  const Instruction& src = c.instr(at->operand(0));
  if (src.opcode != Opcode::kParameter || src.attrs.parameter_number != 0) return std::nullopt;
  return at->attrs.tuple_index;
}

// Which body instructions the loop pipelining moves (program.h
// LoopOptimizations): `early` one iteration earlier, `late` one later.
struct LoopMoves {
  std::vector<char> early;
  std::vector<char> late;
  bool any = false;
};

bool is_kind(const Instruction& instr, std::initializer_list<Opcode> kinds) {
  const Opcode op = collective_opcode(instr);
  return std::find(kinds.begin(), kinds.end(), op) != kinds.end();
}

LoopMoves plan_loop_moves(const compiler::Module& module, const Instruction& loop,
                          const compiler::LoopOptimizations& options) {
  const Computation& body = module.computation(loop.while_body());
  const auto n = static_cast<size_t>(body.size());
  LoopMoves moves;
  moves.early.assign(n, 0);
  moves.late.assign(n, 0);
  const Instruction& root = body.root_instr();
  if (root.opcode != Opcode::kTuple) return moves;
  // Elements the body passes through (invariant) or steps by a constant (the counter).
  std::vector<char> steady(static_cast<size_t>(root.operand_count()), 0);
  for (int k = 0; k < root.operand_count(); ++k) {
    const Instruction& next = body.instr(root.operand(k));
    if (state_element(body, root.operand(k)) == k) steady[static_cast<size_t>(k)] = 1;
    if (next.opcode == Opcode::kAdd)
      for (int side = 0; side < 2; ++side)
        if (state_element(body, next.operand(side)) == k &&
            body.instr(next.operand(1 - side)).opcode == Opcode::kConstant)
          steady[static_cast<size_t>(k)] = 1;
  }
  std::vector<std::vector<InstrId>> users(n);
  for (InstrId id = 0; id < body.size(); ++id)
    for (InstrId op : body.instr(id).operands) users[static_cast<size_t>(op)].push_back(id);

  // Early: all-gathers of values known before the iteration (built from
  // steady elements and constants only) and the ops forming them.
  if (options.pipelined_all_gather) {
    std::vector<char> known(n, 0);
    for (InstrId id = 0; id < body.size(); ++id) {
      const Instruction& in = body.instr(id);
      if (in.opcode == Opcode::kParameter || in.opcode == Opcode::kWhile ||
          in.opcode == Opcode::kCall || in.opcode == Opcode::kConditional)
        continue;
      if (auto k = state_element(body, id)) {
        known[static_cast<size_t>(id)] =
            static_cast<size_t>(*k) < steady.size() && steady[static_cast<size_t>(*k)];
        continue;
      }
      bool all = true;
      for (InstrId op : in.operands) all = all && known[static_cast<size_t>(op)];
      known[static_cast<size_t>(id)] = all;
    }
    std::vector<InstrId> stack;
    for (InstrId id = 0; id < body.size(); ++id) {
      const Instruction& in = body.instr(id);
      if (known[static_cast<size_t>(id)] && classify(in) == OpClass::kCollective &&
          is_kind(in, {Opcode::kAllGather}))
        stack.push_back(id);
    }
    while (!stack.empty()) {
      const InstrId id = stack.back();
      stack.pop_back();
      if (moves.early[static_cast<size_t>(id)]) continue;
      moves.early[static_cast<size_t>(id)] = 1;
      moves.any = true;
      for (InstrId op : body.instr(id).operands)
        if (known[static_cast<size_t>(op)] && !moves.early[static_cast<size_t>(op)])
          stack.push_back(op);
    }
  }
  // Late: ops after a reduce-scatter / all-reduce whose values only reach
  // loop state that only such ops read (a gradient slice accumulated into
  // the stacked gradient), so the iteration does not wait for the collective.
  if (options.pipelined_reduce_scatter) {
    std::vector<char> sinkable(n, 0);
    const auto& cond = module.computation(loop.while_condition());
    std::vector<char> cond_reads(steady.size(), 0);
    for (InstrId id = 0; id < cond.size(); ++id)
      if (auto k = state_element(cond, id); k && static_cast<size_t>(*k) < cond_reads.size())
        cond_reads[static_cast<size_t>(*k)] = 1;
    // Readers of each state element in the body.
    std::vector<std::vector<InstrId>> element_readers(steady.size());
    for (InstrId id = 0; id < body.size(); ++id) {
      if (body.instr(id).opcode != Opcode::kGetTupleElement) continue;
      if (auto k = state_element(body, id); k && static_cast<size_t>(*k) < steady.size())
        for (InstrId u : users[static_cast<size_t>(id)])
          if (body.instr(u).opcode != Opcode::kTuple)
            element_readers[static_cast<size_t>(*k)].push_back(u);
    }
    // Greatest fixpoint: start from every candidate, drop those with a
    // reader that stays in the iteration.
    for (InstrId id = 0; id < body.size(); ++id) {
      const Instruction& in = body.instr(id);
      const OpClass cls = classify(in);
      sinkable[static_cast<size_t>(id)] = id != body.root() && in.opcode != Opcode::kParameter &&
                                          in.opcode != Opcode::kGetTupleElement &&
                                          cls != OpClass::kCollective && cls != OpClass::kControl &&
                                          !users[static_cast<size_t>(id)].empty();
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (InstrId id = body.size() - 1; id >= 0; --id) {
        if (!sinkable[static_cast<size_t>(id)]) continue;
        bool ok = true;
        for (InstrId u : users[static_cast<size_t>(id)]) {
          if (u != body.root()) {
            ok = ok && sinkable[static_cast<size_t>(u)];
            continue;
          }
          for (int k = 0; k < root.operand_count() && ok; ++k) {
            if (root.operand(k) != id) continue;
            ok = !cond_reads[static_cast<size_t>(k)];
            for (InstrId r : element_readers[static_cast<size_t>(k)])
              ok = ok && sinkable[static_cast<size_t>(r)];
          }
        }
        if (!ok) {
          sinkable[static_cast<size_t>(id)] = 0;
          changed = true;
        }
      }
    }
    // They move when they wait for such a collective.
    bool waits = false;
    for (InstrId id = 0; id < body.size() && !waits; ++id) {
      if (!sinkable[static_cast<size_t>(id)]) continue;
      for (InstrId op : body.instr(id).operands) {
        InstrId at = op;  // through free ops
        while (classify(body.instr(at)) == OpClass::kFree && body.instr(at).operand_count() == 1 &&
               body.instr(at).opcode != Opcode::kGetTupleElement)
          at = body.instr(at).operand(0);
        const Instruction& o = body.instr(at);
        waits = waits || (classify(o) == OpClass::kCollective &&
                          is_kind(o, {Opcode::kReduceScatter, Opcode::kAllReduce}));
      }
    }
    if (waits)
      for (size_t i = 0; i < n; ++i)
        if (sinkable[i] && classify(body.instr(static_cast<InstrId>(i))) != OpClass::kFree) {
          moves.late[i] = 1;
          moves.any = true;
        }
  }
  return moves;
}

class Flattener {
 public:
  explicit Flattener(const FlattenInputs& in) : in_(in), module_(in.program.module) {}

  StepProgram run() {
    flatten(module_.entry_id(), {});
    return std::move(out_);
  }

 private:
  const std::vector<InstrId>& order_of(CompId comp) {
    const auto& schedule = in_.program.schedule;
    if (static_cast<size_t>(comp) < schedule.size() && !schedule[static_cast<size_t>(comp)].empty())
      return schedule[static_cast<size_t>(comp)];
    auto& order = default_order_[comp];
    if (order.empty()) {
      order.resize(static_cast<size_t>(module_.computation(comp).size()));
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<InstrId>(i);
    }
    return order;
  }

  std::optional<int64_t> trip_count(CompId comp, InstrId id) {
    const auto key = (static_cast<int64_t>(comp) << 32) | static_cast<uint32_t>(id);
    auto it = trips_.find(key);
    if (it != trips_.end()) return it->second;
    const auto trips = compiler::known_trip_count(module_, module_.computation(comp).instr(id));
    trips_.emplace(key, trips);
    return trips;
  }

  const compiler::FusionPlan* fusion_of(CompId comp) const {
    const auto& fusion = in_.program.fusion;
    if (static_cast<size_t>(comp) >= fusion.size()) return nullptr;
    const auto& plan = fusion[static_cast<size_t>(comp)];
    if (plan.group_of.size() != static_cast<size_t>(module_.computation(comp).size()))
      return nullptr;
    return &plan;
  }

  int32_t op_index(CompId comp, InstrId id, const compiler::FusionGroup* group) {
    const auto key = (static_cast<int64_t>(comp) << 32) | static_cast<uint32_t>(id);
    auto it = op_of_.find(key);
    if (it != op_of_.end()) return it->second;
    const Computation& c = module_.computation(comp);
    const Instruction& instr = c.instr(id);
    OpInfo info, reduction;
    info.name = instr.name;
    info.op_name = instr.op_name;
    info.opcode = group ? "fusion" : std::string(compiler::opcode_name(instr.opcode));
    info.shape = instr.shape.to_string(false);
    if (group)
      info.cost = in_.costs.fusion(c, *group);
    else if (classify(instr) == OpClass::kCollective) {
      info.collective = in_.collectives.spec_of(c, instr);
      const Opcode kind = collective_opcode(instr);
      info.collective_kind = std::string(compiler::opcode_name(kind));
      // Collectives across slices run asynchronously whatever the flags (XLA's DCN collectives
      // overlap compute: docs/collectives.md#multi-slice-collectives).
      info.synchronous = !in_.program.collectives.is_async(kind) &&
                         !in_.collectives.spec(info.collective).crosses_slices;
      if (!in_.program.collectives.fusion &&
          (kind == Opcode::kAllReduce || kind == Opcode::kReduceScatter))
        reduction = reduction_op(c, instr, info.collective);
    } else
      info.cost = in_.costs.instruction(c, instr);
    const auto index = static_cast<int32_t>(out_.ops.size());
    out_.ops.push_back(std::move(info));
    op_of_.emplace(key, index);
    if (reduction.cost.seconds > 0) {
      reduction_of_.emplace(index, static_cast<int32_t>(out_.ops.size()));
      out_.ops.push_back(std::move(reduction));
    }
    return index;
  }

  // Without collective fusion, the reduction a reduce-scatter or all-reduce does as a TensorCore
  // kernel: over a group of n, (n-1)/n of the reduced operand's elements are added to the local
  // partial (the ring's, and every torus decomposition's, count), reading the received chunk and
  // the partial from HBM and writing the sum. docs/simulator.md#collective-fusion
  OpInfo reduction_op(const Computation& c, const Instruction& instr, int32_t spec) {
    const CollectiveSpec& collective = in_.collectives.spec(spec);
    const double n =
        collective.groups.empty() ? 1.0 : static_cast<double>(collective.groups.front().size());
    double elements = 0, bytes = 0;
    for (InstrId op : instr.operands) {
      const compiler::Shape& shape = c.instr(op).shape;
      if (shape.is_tuple()) continue;
      elements += static_cast<double>(shape.num_elements());
      bytes += static_cast<double>(shape.byte_size());
    }
    OpInfo info;
    info.name = instr.name + ".reduction";
    info.op_name = instr.op_name;
    info.opcode = "collective-reduction";
    info.shape = instr.shape.to_string(false);
    if (n <= 1 || elements <= 0) return info;
    const double share = (n - 1) / n;
    hw::OpQuery query;
    query.vector_work.push_back(
        {static_cast<int64_t>(share * elements), hw::VectorCostClass::kSimple});
    query.hbm_bytes_read = 2 * share * bytes;
    query.hbm_bytes_written = share * bytes;
    info.cost = in_.costs.time(fmt::format("collective-reduction {} {}",
                                           query.vector_work[0].elements, query.hbm_bytes_written),
                               query);
    return info;
  }

  void emit(int32_t op, const Ordinals& reads, bool collective) {
    if (static_cast<int64_t>(out_.steps.size()) >= in_.max_steps ||
        out_.waits.size() + reads.size() > std::numeric_limits<uint32_t>::max())
      throw UserError(fmt::format("the flattened program exceeds {} steps (while loops unrolled)",
                                  in_.max_steps),
                      "reduce the trip counts or the number of layers");
    Step step;
    step.op = op;
    step.collective = collective;
    step.wait_begin = static_cast<uint32_t>(out_.waits.size());
    out_.waits.insert(out_.waits.end(), reads.begin(), reads.end());
    step.wait_end = static_cast<uint32_t>(out_.waits.size());
    if (step.collective)
      out_.collective_steps.push_back(static_cast<int32_t>(out_.steps.size()));
    else
      out_.total_compute_s += out_.ops[static_cast<size_t>(step.op)].cost.seconds;
    out_.steps.push_back(step);
  }

  // A step moved one iteration later (LoopMoves::late), emitted after the
  // next iteration's own steps.
  struct Deferred {
    int32_t op = 0;
    Ordinals reads;
  };
  // The pipelining state of one loop while its iterations are flattened.
  struct LoopRun {
    const LoopMoves* moves = nullptr;
    bool prologue = false;  // emit only iteration 0's early steps
    bool has_next = false;  // there is a next iteration to emit early steps for
    std::unordered_map<InstrId, Pending> early_now, early_next;
    std::vector<Deferred> late_prev, late_now;
  };

  const LoopMoves& moves_of(CompId comp, InstrId id) {
    const auto key = (static_cast<int64_t>(comp) << 32) | static_cast<uint32_t>(id);
    auto it = moves_.find(key);
    if (it == moves_.end())
      it = moves_
               .emplace(key, plan_loop_moves(module_, module_.computation(comp).instr(id),
                                             in_.program.loops))
               .first;
    return it->second;
  }

  // Emits one step (a fusion group at its root, or an instruction) and
  // returns the value's pending collectives.
  Pending emit_step(CompId comp, InstrId id, const compiler::FusionGroup* group,
                    const Ordinals& reads) {
    const Instruction& instr = module_.computation(comp).instr(id);
    if (!group && classify(instr) == OpClass::kCollective) {
      const int32_t op = op_index(comp, id, nullptr);
      emit(op, reads, true);
      const auto ordinal = static_cast<int32_t>(out_.collective_steps.size()) - 1;
      // Its reduction kernel (collective fusion off) runs on the compute stream while it
      // transfers: once the collective's own inputs are ready, not waiting for its end.
      if (auto r = reduction_of_.find(op); r != reduction_of_.end()) emit(r->second, reads, false);
      return merged({ordinal});
    }
    emit(op_index(comp, id, group), reads, false);
    return {};
  }

  Pending run_loop(CompId comp, InstrId id, Pending state) {
    const Instruction& instr = module_.computation(comp).instr(id);
    const std::optional<int64_t> trips = trip_count(comp, id);
    if (!trips) ++out_.unknown_trip_counts;
    int64_t n = trips.value_or(1);
    EntryLoop* record = nullptr;
    const size_t steps_before = out_.steps.size();
    if (comp == module_.entry_id()) {
      const int64_t key = loop_key(comp, id);
      auto it = std::find_if(out_.entry_loops.begin(), out_.entry_loops.end(),
                             [&](const EntryLoop& l) { return l.key == key; });
      if (it == out_.entry_loops.end())
        it = out_.entry_loops.insert(out_.entry_loops.end(), EntryLoop{key, n, 0});
      record = &*it;
      if (auto cap = in_.iteration_caps.find(key); cap != in_.iteration_caps.end())
        n = std::min(n, cap->second);
    }
    struct CountSteps {  // adds the steps this loop emitted to its record
      EntryLoop* record;
      const std::vector<Step>& steps;
      size_t before;
      ~CountSteps() {
        if (record) record->steps += static_cast<int64_t>(steps.size() - before);
      }
    } count_steps{record, out_.steps, steps_before};
    const compiler::LoopOptimizations& loops = in_.program.loops;
    const LoopMoves* moves =
        n >= 2 && (loops.pipelined_all_gather || loops.pipelined_reduce_scatter)
            ? &moves_of(comp, id)
            : nullptr;
    if (!moves || !moves->any) {
      for (int64_t i = 0; i < n; ++i) state = flatten(instr.while_body(), {state});
      return state;
    }
    LoopRun run;
    run.moves = moves;
    run.prologue = true;
    flatten(instr.while_body(), {state}, &run);  // iteration 0's early steps, before the loop
    run.prologue = false;
    for (int64_t i = 0; i < n; ++i) {
      run.early_now = std::move(run.early_next);
      run.early_next.clear();
      run.has_next = i + 1 < n;
      run.late_prev = std::move(run.late_now);
      run.late_now.clear();
      state = flatten(instr.while_body(), {state}, &run);
    }
    for (const Deferred& d : run.late_now)
      emit(d.op, d.reads, false);  // the last iteration's, after the loop
    return state;
  }

  Pending flatten(CompId comp, const std::vector<Pending>& params, LoopRun* run = nullptr) {
    const Computation& c = module_.computation(comp);
    const compiler::FusionPlan* fusion = fusion_of(comp);
    std::vector<Pending> pending(static_cast<size_t>(c.size()));
    auto reads_of = [&](InstrId id) -> const Ordinals& {
      return pending[static_cast<size_t>(id)].reads;
    };
    auto operand_reads = [&](const Instruction& instr, Ordinals& into) {
      for (InstrId op : instr.operands) add_reads(into, reads_of(op));
    };
    auto operands_read = [&](const Instruction& instr) {
      Ordinals reads;
      operand_reads(instr, reads);
      return reads;
    };
    // The reads of the next iteration's copy of an early step: its early
    // operands' next values.
    auto next_reads = [&](const std::vector<InstrId>& members) {
      Ordinals reads;
      for (InstrId member : members)
        for (InstrId op : c.instr(member).operands) {
          auto it = run->early_next.find(op);
          add_reads(reads, it != run->early_next.end() ? it->second.reads : reads_of(op));
        }
      return reads;
    };
    for (InstrId id : order_of(comp)) {
      const Instruction& instr = c.instr(id);
      Pending& mine = pending[static_cast<size_t>(id)];
      const int32_t group_index = fusion ? fusion->group_of[static_cast<size_t>(id)] : -1;
      const compiler::FusionGroup* group =
          group_index >= 0 ? &fusion->groups[static_cast<size_t>(group_index)] : nullptr;
      if (group && (group->members.empty() || group->members.back() != id))
        continue;  // runs at its root
      const OpClass cls = classify(instr);
      const bool step = group || cls == OpClass::kCompute || cls == OpClass::kCollective;
      if (run && step) {
        const auto sid = static_cast<size_t>(id);
        const std::vector<InstrId> single{id};
        const std::vector<InstrId>& members = group ? group->members : single;
        if (run->moves->early[sid]) {
          if (run->prologue) {
            run->early_next[id] = emit_step(comp, id, group, next_reads(members));
            continue;
          }
          auto it = run->early_now.find(id);
          if (it != run->early_now.end()) mine = it->second;
          if (run->has_next) run->early_next[id] = emit_step(comp, id, group, next_reads(members));
          continue;
        }
        if (run->prologue) continue;
        if (run->moves->late[sid] && cls != OpClass::kCollective) {
          Ordinals reads;
          for (InstrId member : members) operand_reads(c.instr(member), reads);
          run->late_now.push_back(Deferred{op_index(comp, id, group), std::move(reads)});
          continue;
        }
      }
      if (group) {
        Ordinals reads;
        for (InstrId member : group->members) operand_reads(c.instr(member), reads);
        emit(op_index(comp, id, group), reads, false);
        continue;
      }
      if (run && run->prologue && cls != OpClass::kFree)
        continue;  // only early steps and free values
      switch (instr.opcode) {
        case Opcode::kParameter: {
          const auto n = static_cast<size_t>(instr.attrs.parameter_number);
          if (n < params.size()) mine = params[n];
          break;
        }
        case Opcode::kTuple:
          for (InstrId op : instr.operands)
            mine.elements.push_back(pending[static_cast<size_t>(op)]);
          mine.reads = operands_read(instr);
          break;
        case Opcode::kGetTupleElement: {
          const Pending& tuple = pending[static_cast<size_t>(instr.operand(0))];
          const auto index = static_cast<size_t>(instr.attrs.tuple_index);
          mine = index < tuple.elements.size() ? tuple.elements[index] : merged(tuple.reads);
          break;
        }
        case Opcode::kWhile:
          mine = run_loop(comp, id, pending[static_cast<size_t>(instr.operand(0))]);
          break;
        case Opcode::kCall: {
          std::vector<Pending> args;
          for (InstrId op : instr.operands) args.push_back(pending[static_cast<size_t>(op)]);
          mine = flatten(instr.to_apply(), args);
          break;
        }
        case Opcode::kConditional: {
          // The branch taken is a run-time value: the first one runs (the
          // pred form's true branch), counted in conditionals_first_branch.
          ++out_.conditionals_first_branch;
          if (instr.called.empty() || instr.operand_count() < 2) break;
          mine = flatten(instr.called.front(), {pending[static_cast<size_t>(instr.operand(1))]});
          add_reads(mine.reads, reads_of(instr.operand(0)));
          break;
        }
        default:
          switch (cls) {
            case OpClass::kFree:
              mine = merged(operands_read(instr));
              break;
            default:
              mine = emit_step(comp, id, nullptr, operands_read(instr));
              break;
          }
      }
    }
    if (run && !run->prologue)
      for (const Deferred& d : run->late_prev)
        emit(d.op, d.reads, false);  // the previous iteration's
    return c.root() == compiler::kNoId ? Pending{} : pending[static_cast<size_t>(c.root())];
  }

  const FlattenInputs& in_;
  const compiler::Module& module_;
  StepProgram out_;
  std::unordered_map<int64_t, int32_t> op_of_;
  std::unordered_map<int32_t, int32_t> reduction_of_;  // collective op -> its reduction kernel op
  std::unordered_map<int64_t, std::optional<int64_t>> trips_;
  std::unordered_map<CompId, std::vector<InstrId>> default_order_;
  std::unordered_map<int64_t, LoopMoves> moves_;
};

}  // namespace

StepProgram flatten_program(const FlattenInputs& inputs) { return Flattener(inputs).run(); }

}  // namespace podsim::sim
