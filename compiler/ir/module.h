// The IR container types: Instruction, Computation, Module.
//
// Ownership is by value: a Module owns its Computations, a Computation owns
// its Instructions in a vector. Instructions refer to operands by InstrId (an
// index into the same computation) and to called computations by CompId (an
// index into the module). Invariant (checked by the verifier): every operand
// id is smaller than the user's id, i.e. the vector is in topological order.
// Copying a Module is a deep copy.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "compiler/ir/attributes.h"
#include "compiler/ir/opcode.h"
#include "compiler/ir/shape.h"

namespace podsim::compiler {

using InstrId = int32_t;
using CompId = int32_t;
inline constexpr int32_t kNoId = -1;

struct Instruction {
  std::string name;  // unique within its computation, without the '%'
  Opcode opcode = Opcode::kParameter;
  Shape shape;
  std::vector<InstrId> operands;
  // Called computations, in the order XLA prints them:
  //   reduce, reduce-window, scatter, all-reduce, reduce-scatter, call: {to_apply}
  //   while: {condition, body}
  //   conditional: {branch 0, branch 1, ...} (the pred form: {true, false})
  //   select-and-scatter: {select, scatter}
  //   sort, map, topk (comparator), fusion, async-start (long form): {to_apply}
  std::vector<CompId> called;
  Attributes attrs;
  // The sharding attribute in XLA text form ("{devices=[2,1]0,1}"), if any.
  std::optional<std::string> sharding;
  // In a partitioned program: the sharding (XLA text) of the global value
  // this instruction holds one device's shard of, as the partitioner knew it.
  // Not printed; reports show it beside the per-device buffer.
  std::string global_sharding;
  // Where the instruction came from (HLO text position), for error messages.
  SourceLocation location;
  // XLA's metadata={op_name="..."}: the model-level name of what this
  // instruction computes (e.g. "fwd/layer_3/ffn/wi"). Passes keep it on the
  // instructions they derive, so reports and traces can name the model op.
  std::string op_name;

  const InstrId& operand(int i) const { return operands[static_cast<size_t>(i)]; }
  int operand_count() const { return static_cast<int>(operands.size()); }
  CompId to_apply() const { return called.empty() ? kNoId : called[0]; }
  CompId while_condition() const { return called.at(0); }
  CompId while_body() const { return called.at(1); }
};

class Computation {
 public:
  Computation() = default;
  explicit Computation(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  const std::vector<Instruction>& instructions() const { return instructions_; }
  std::vector<Instruction>& mutable_instructions() { return instructions_; }
  int size() const { return static_cast<int>(instructions_.size()); }
  const Instruction& instr(InstrId id) const { return instructions_[static_cast<size_t>(id)]; }
  Instruction& mutable_instr(InstrId id) { return instructions_[static_cast<size_t>(id)]; }

  // Appends an instruction; returns its id. Does not check anything.
  InstrId append(Instruction instr);

  InstrId root() const { return root_; }
  void set_root(InstrId id) { root_ = id; }
  const Instruction& root_instr() const { return instr(root_); }

  // Parameter instruction ids ordered by parameter_number.
  std::vector<InstrId> parameters() const;
  InstrId find(std::string_view name) const;  // kNoId if absent
  // users[i] = ids of instructions that use instruction i (each user once).
  std::vector<std::vector<InstrId>> compute_users() const;

 private:
  std::string name_;
  std::vector<Instruction> instructions_;
  InstrId root_ = kNoId;
};

// Users of every instruction of a computation in one flat array: the same
// lists as Computation::compute_users (each user once, ascending) without a
// heap vector per instruction.
class UserLists {
 public:
  explicit UserLists(const Computation& computation);
  std::span<const InstrId> operator[](InstrId id) const {
    const auto i = static_cast<size_t>(id);
    return {ids_.data() + first_[i], ids_.data() + first_[i + 1]};
  }

 private:
  std::vector<uint32_t> first_;  // users of i: ids_[first_[i] .. first_[i + 1])
  std::vector<InstrId> ids_;
};

class Module {
 public:
  Module() = default;
  explicit Module(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  const std::vector<Computation>& computations() const { return computations_; }
  const Computation& computation(CompId id) const { return computations_[static_cast<size_t>(id)]; }
  Computation& mutable_computation(CompId id) { return computations_[static_cast<size_t>(id)]; }
  int computation_count() const { return static_cast<int>(computations_.size()); }
  CompId add_computation(Computation c);
  CompId find_computation(std::string_view name) const;  // kNoId if absent

  // A copy in which computation `emptied` keeps its name but has no
  // instructions (for a pass that rebuilds that one computation: it is not
  // copied only to be replaced).
  Module copy_emptying(CompId emptied) const;

  CompId entry_id() const { return entry_; }
  void set_entry(CompId id) { entry_ = id; }
  const Computation& entry() const { return computation(entry_); }
  Computation& mutable_entry() { return mutable_computation(entry_); }

  // Number of SPMD partitions (devices) the module is compiled for; 1 for an
  // unpartitioned module. Printed as "num_partitions=" in the HloModule line.
  int64_t num_partitions() const { return num_partitions_; }
  void set_num_partitions(int64_t n) { num_partitions_ = n; }
  int64_t replica_count() const { return replica_count_; }
  void set_replica_count(int64_t n) { replica_count_ = n; }
  // "is_scheduled=true" in the HloModule line: each computation's
  // instructions are in XLA's execution order.
  bool is_scheduled() const { return is_scheduled_; }
  void set_is_scheduled(bool s) { is_scheduled_ = s; }
  // The HloModule line's frontend_attributes={...}, verbatim (Shardy's
  // xla.sdy.meshes lives here); empty when the line has none.
  const std::string& frontend_attributes() const { return frontend_attributes_; }
  // allow_spmd_sharding_propagation_to_parameters={...} / _to_output={...}
  // of the HloModule line: one flag for all, or one per entry parameter /
  // output leaf; empty when the line has none (allowed).
  const std::vector<bool>& propagation_to_parameters() const { return propagation_to_parameters_; }
  const std::vector<bool>& propagation_to_output() const { return propagation_to_output_; }
  void set_propagation_to_parameters(std::vector<bool> flags) {
    propagation_to_parameters_ = std::move(flags);
  }
  void set_propagation_to_output(std::vector<bool> flags) {
    propagation_to_output_ = std::move(flags);
  }
  void set_frontend_attributes(std::string text) { frontend_attributes_ = std::move(text); }

 private:
  std::string name_;
  std::vector<Computation> computations_;
  CompId entry_ = kNoId;
  int64_t num_partitions_ = 1;
  int64_t replica_count_ = 1;
  bool is_scheduled_ = false;
  std::string frontend_attributes_;
  std::vector<bool> propagation_to_parameters_;
  std::vector<bool> propagation_to_output_;
};

}  // namespace podsim::compiler
