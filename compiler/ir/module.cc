// Computation and Module container operations.
#include "compiler/ir/module.h"

#include <algorithm>

namespace podsim::compiler {

InstrId Computation::append(Instruction instr) {
  // Grows 4x instead of push_back's 2x: an Instruction is large (~1.4 kB), so
  // relocating them on growth is a visible share of compile time (the
  // partitioner and autodiff build computations of 10^5 instructions one by
  // one); 4x moves each instruction ~1/3 times instead of ~1 time on
  // average. Unused capacity of a large vector is address space only.
  if (instructions_.size() == instructions_.capacity())
    instructions_.reserve(std::max<size_t>(16, 4 * instructions_.size()));
  instructions_.push_back(std::move(instr));
  return static_cast<InstrId>(instructions_.size() - 1);
}

std::vector<InstrId> Computation::parameters() const {
  std::vector<InstrId> params;
  for (InstrId i = 0; i < size(); ++i)
    if (instr(i).opcode == Opcode::kParameter) params.push_back(i);
  std::stable_sort(params.begin(), params.end(), [&](InstrId a, InstrId b) {
    return instr(a).attrs.parameter_number < instr(b).attrs.parameter_number;
  });
  return params;
}

InstrId Computation::find(std::string_view name) const {
  for (InstrId i = 0; i < size(); ++i)
    if (instr(i).name == name) return i;
  return kNoId;
}

std::vector<std::vector<InstrId>> Computation::compute_users() const {
  std::vector<std::vector<InstrId>> users(instructions_.size());
  for (InstrId i = 0; i < size(); ++i) {
    for (InstrId op : instr(i).operands) {
      auto& u = users[static_cast<size_t>(op)];
      if (u.empty() || u.back() != i) u.push_back(i);
    }
  }
  return users;
}

UserLists::UserLists(const Computation& computation) {
  const auto n = static_cast<size_t>(computation.size());
  // Pass 1 counts, pass 2 fills; last_user[op] skips an operand read twice
  // by the same instruction (as compute_users does).
  std::vector<InstrId> last_user(n, kNoId);
  std::vector<uint32_t> count(n + 1, 0);
  for (InstrId i = 0; i < computation.size(); ++i)
    for (InstrId op : computation.instr(i).operands) {
      auto k = static_cast<size_t>(op);
      if (last_user[k] == i) continue;
      last_user[k] = i;
      ++count[k];
    }
  first_.assign(n + 1, 0);
  for (size_t k = 0; k < n; ++k) first_[k + 1] = first_[k] + count[k];
  ids_.resize(first_[n]);
  std::vector<uint32_t> next(first_.begin(), first_.end() - 1);
  last_user.assign(n, kNoId);
  for (InstrId i = 0; i < computation.size(); ++i)
    for (InstrId op : computation.instr(i).operands) {
      auto k = static_cast<size_t>(op);
      if (last_user[k] == i) continue;
      last_user[k] = i;
      ids_[next[k]++] = i;
    }
}

CompId Module::add_computation(Computation c) {
  computations_.push_back(std::move(c));
  return static_cast<CompId>(computations_.size() - 1);
}

Module Module::copy_emptying(CompId emptied) const {
  Module copy(name_);
  copy.entry_ = entry_;
  copy.num_partitions_ = num_partitions_;
  copy.replica_count_ = replica_count_;
  copy.computations_.reserve(computations_.size());
  for (CompId c = 0; c < computation_count(); ++c)
    copy.computations_.push_back(c == emptied ? Computation(computation(c).name())
                                              : computation(c));
  return copy;
}

CompId Module::find_computation(std::string_view name) const {
  for (CompId i = 0; i < computation_count(); ++i)
    if (computation(i).name() == name) return i;
  return kNoId;
}

}  // namespace podsim::compiler
