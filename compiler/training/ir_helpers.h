// Small IR-building helpers shared by the training transforms: scalar
// reducer computations (one per dtype, cached in the module), zeros, sums
// over dims, "Sharding" annotations, op_name scopes, and the final name
// de-duplication pass.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/module.h"
#include "compiler/ir/reducer_cache.h"

namespace podsim::compiler::training {

// The training transforms' reducers: "training_<op>_<dtype>", an existing
// computation of that name reused (compiler/ir/reducer_cache.h).
class ReducerCache : public ScalarReducerCache {
 public:
  explicit ReducerCache(Module* module)
      : ScalarReducerCache(module, "training", Existing::kReuse) {}
};

// Scalar constant broadcast to `shape` (an array shape).
InstrId filled(ComputationBuilder& b, const Shape& shape, double value);
// Sum of `x` over `dims` (dims removed), in x's dtype. No-op for empty dims.
InstrId reduce_sum(ComputationBuilder& b, ReducerCache& reducers, InstrId x,
                   std::vector<int64_t> dims);
// Sum of all elements of x (a scalar).
InstrId reduce_sum_all(ComputationBuilder& b, ReducerCache& reducers, InstrId x);
// x annotated with an XLA-text sharding through a "Sharding" custom call (as
// jax's with_sharding_constraint); returns x unchanged when text is empty.
InstrId annotate_sharding(ComputationBuilder& b, InstrId x, const std::string& sharding_text);

// "fwd/layer_3/ffn" -> "layer_3/ffn"; names without a "fwd/" prefix unchanged.
std::string_view strip_fwd_prefix(std::string_view op_name);
bool starts_with(std::string_view text, std::string_view prefix);

// Renames instructions whose name repeats an earlier one ("name" ->
// "name.t<k>") so the computation's names are unique. Linear time.
void make_names_unique(Computation& computation);

// Inverse of a permutation.
std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& perm);

}  // namespace podsim::compiler::training
