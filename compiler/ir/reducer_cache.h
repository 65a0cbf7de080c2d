// Scalar reducer computations `name(x, y) = op(x, y)` over one dtype (the
// body of a reduce / all-reduce / reduce-scatter), added to a module once
// per (op, dtype) and remembered: the training transforms' and the
// partitioner's one cache.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "compiler/ir/module.h"

namespace podsim::compiler {

class ScalarReducerCache {
 public:
  // A computation named "<prefix>_<op>_<dtype>" already in the module:
  // kReuse takes it (the training transforms may run over a module holding
  // their earlier reducers); kAdd adds this cache's own all the same (each
  // partitioner context adds its reducers to the module it builds).
  enum class Existing : uint8_t { kReuse, kAdd };
  ScalarReducerCache(Module* module, std::string prefix, Existing existing)
      : module_(module), prefix_(std::move(prefix)), existing_(existing) {}
  // Finds or adds `op` over scalars of `dtype`. The module may be the one a
  // ComputationBuilder points into (the builder only reads through it), so
  // adding computations while building is fine.
  CompId get(Opcode op, DType dtype);
  Module* module() const { return module_; }

 private:
  Module* module_;
  std::string prefix_;
  Existing existing_;
  std::map<std::pair<Opcode, DType>, CompId> cache_;
};

}  // namespace podsim::compiler
