// Scalar reducer cache (see reducer_cache.h).
#include "compiler/ir/reducer_cache.h"

#include <fmt/format.h>

#include "compiler/ir/builder.h"

namespace podsim::compiler {

CompId ScalarReducerCache::get(Opcode op, DType dtype) {
  const auto key = std::make_pair(op, dtype);
  if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::string name = fmt::format("{}_{}_{}", prefix_, opcode_name(op), dtype_name(dtype));
  CompId id = existing_ == Existing::kReuse ? module_->find_computation(name) : kNoId;
  if (id == kNoId)
    id = module_->add_computation(scalar_binary_computation(std::move(name), op, dtype));
  cache_.emplace(key, id);
  return id;
}

}  // namespace podsim::compiler
