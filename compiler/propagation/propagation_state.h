// Internal state of sharding propagation: the current sharding of every
// instruction of every reachable computation, which ones the user provided,
// users lists, and control-flow groups whose members must agree (a while, its
// body parameter and root and its condition parameter; a call and its
// callee's root). Not part of the public API.
//
// Every write of a sharding stamps the value with a tick of a change clock,
// so the engine can skip re-running a rule whose inputs did not change since
// it last ran and changed nothing (same inputs, same outcome).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/sharding/sharding.h"

namespace podsim::compiler::propagation {

struct ValueRef {
  CompId comp = kNoId;
  InstrId instr = kNoId;
  auto operator<=>(const ValueRef&) const = default;
};

// Where a computation is called from (for parameters of callees).
struct CallSite {
  CompId comp = kNoId;
  InstrId instr = kNoId;
};

class PropagationState {
 public:
  explicit PropagationState(const Module& module);

  const Module& module() const { return module_; }
  const std::vector<CompId>& reachable() const { return reachable_; }
  const Instruction& instr(ValueRef r) const { return module_.computation(r.comp).instr(r.instr); }
  const std::optional<Sharding>& sharding(ValueRef r) const {
    return shardings_[idx(r.comp)][idx(r.instr)];
  }
  bool provided(ValueRef r) const { return provided_[idx(r.comp)][idx(r.instr)]; }
  std::span<const InstrId> users(ValueRef r) const { return (*users_[idx(r.comp)])[r.instr]; }
  const std::optional<CallSite>& caller(CompId c) const { return callers_[idx(c)]; }
  // XLA's is_spmd (PropagationOptions::is_spmd): some rules differ.
  bool is_spmd() const { return is_spmd_; }
  void set_is_spmd(bool is_spmd) { is_spmd_ = is_spmd; }
  // The change clock: ticks once per sharding write; starts at 1.
  uint64_t clock() const { return clock_; }
  // True when the value's sharding (or provided flag) was written after tick `t`.
  bool changed_since(ValueRef r, uint64_t t) const {
    return changed_at_[idx(r.comp)][idx(r.instr)] > t;
  }
  // Per instruction of computation c: the tick of its last write (0 = never).
  const std::vector<uint64_t>& change_ticks(CompId c) const { return changed_at_[idx(c)]; }

  // Sets a user annotation (provided; never overwritten).
  void set_provided(ValueRef r, Sharding s);
  // Marks a value provided without a sharding: nothing may give it one (an
  // entry parameter or result XLA's options keep out of propagation).
  void freeze(ValueRef r);
  // Sets a sharding and copies it to the value's control-flow group. Members
  // that are provided keep theirs.
  void set(ValueRef r, const Sharding& s);
  // After annotations are read: a group with a provided member gives its
  // sharding to every member, which all become provided.
  void sync_provided_groups();

 private:
  static size_t idx(int32_t i) { return static_cast<size_t>(i); }
  void add_group(std::vector<ValueRef> members);
  void stamp(ValueRef r) { changed_at_[idx(r.comp)][idx(r.instr)] = ++clock_; }

  const Module& module_;
  std::vector<CompId> reachable_;
  std::vector<std::vector<std::optional<Sharding>>> shardings_;
  std::vector<std::vector<bool>> provided_;
  std::vector<std::vector<uint64_t>> changed_at_;  // tick of the last write, 0 = never
  uint64_t clock_ = 1;
  bool is_spmd_ = true;
  std::vector<std::optional<UserLists>> users_;  // per reachable computation
  std::vector<std::optional<CallSite>> callers_;
  std::map<ValueRef, int> group_of_;
  std::vector<std::vector<ValueRef>> groups_;
};

}  // namespace podsim::compiler::propagation
