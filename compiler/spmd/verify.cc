// Numeric verification of partitioned programs with the reference interpreter.
#include "compiler/spmd/verify.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/interpreter/interpreter.h"

namespace podsim::compiler {

Sharding value_sharding(const Instruction& instr) {
  if (!instr.sharding) return Sharding::replicated();
  Sharding s = parse_sharding(*instr.sharding, instr.location);
  return s.is_maximal() ? Sharding::replicated() : s;
}

double padding_sentinel(DType dtype) { return dtype == DType::kPred ? 1.0 : 37.0; }

Literal shard_of(const Literal& full, const Sharding& sharding, int64_t device) {
  const auto& dims = full.shape().dims();
  ShardRegion region = shard_region(sharding, dims, device);
  Literal out(Shape(full.shape().dtype(), shard_shape(sharding, dims)));
  for_each_index(out.shape().dims(), [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> source(index.size());
    for (size_t i = 0; i < index.size(); ++i) {
      source[i] = region.offsets[i] + index[i];
      if (source[i] >= region.limits[i]) {
        out.set(index, padding_sentinel(full.shape().dtype()));
        return;
      }
    }
    out.set(index, full.at(source));
  });
  return out;
}

Literal reassemble(const std::vector<Literal>& shards, const Sharding& sharding, const Shape& shape) {
  Literal out(shape);
  for (size_t device = 0; device < shards.size(); ++device) {
    ShardRegion region = shard_region(sharding, shape.dims(), static_cast<int64_t>(device));
    std::vector<int64_t> extent;
    for (size_t i = 0; i < region.offsets.size(); ++i) extent.push_back(region.limits[i] - region.offsets[i]);
    // A shard smaller than its region (or of another rank) is a wrong
    // program, not something to read past: reported as a mismatch.
    const Shape& got = shards[device].shape();
    bool holds = got.is_array() && got.rank() == static_cast<int64_t>(extent.size());
    for (size_t i = 0; holds && i < extent.size(); ++i) holds = got.dims()[i] >= extent[i];
    if (!holds)
      throw ShardShapeMismatch(fmt::format("device {}: the value is {}, its sharding {} needs at least [{}]", device,
                                           got.to_string(), sharding.to_string(), fmt::join(extent, ",")));
    for_each_index(extent, [&](const std::vector<int64_t>& index) {
      std::vector<int64_t> target(index.size());
      for (size_t i = 0; i < index.size(); ++i) target[i] = region.offsets[i] + index[i];
      out.set(target, shards[device].at(index));
    });
  }
  return out;
}

namespace {

// The leaf shardings of a value of `shape` carrying `sharding` (pre-order,
// as Sharding::tuple flattens): a tuple sharding gives one per leaf, a leaf
// sharding on a tuple value applies to every leaf (XLA's convention for a
// tuple annotated with one sharding). Maximal leaves count as replicated.
std::vector<Sharding> leaf_shardings(const Shape& shape, const Sharding& sharding, const SourceLocation& where) {
  const int64_t leaves = shape.leaf_count();
  std::vector<Sharding> out;
  if (sharding.is_tuple()) {
    if (static_cast<int64_t>(sharding.tuple_elements().size()) != leaves)
      throw UserError(where, fmt::format("tuple sharding has {} leaves, the shape {}",
                                         sharding.tuple_elements().size(), leaves));
    for (const Sharding& leaf : sharding.tuple_elements())
      out.push_back(leaf.is_maximal() ? Sharding::replicated() : leaf);
  } else {
    out.assign(static_cast<size_t>(leaves), sharding.is_maximal() ? Sharding::replicated() : sharding);
  }
  return out;
}

std::vector<Sharding> instr_leaf_shardings(const Instruction& instr) {
  if (!instr.sharding) return leaf_shardings(instr.shape, Sharding::replicated(), instr.location);
  return leaf_shardings(instr.shape, parse_sharding(*instr.sharding, instr.location), instr.location);
}

// `device`'s shard of a (possibly tuple) value, leaf `next_leaf` onwards.
Literal shard_value(const Literal& full, const std::vector<Sharding>& leaves, size_t& next_leaf, int64_t device) {
  if (!full.is_tuple()) return shard_of(full, leaves[next_leaf++], device);
  std::vector<Literal> elements;
  for (const Literal& element : full.elements()) elements.push_back(shard_value(element, leaves, next_leaf, device));
  return Literal::tuple(std::move(elements));
}

// The logical value of `shape` from every device's (possibly tuple) shard.
Literal reassemble_value(const std::vector<const Literal*>& shards, const std::vector<Sharding>& leaves,
                         size_t& next_leaf, const Shape& shape) {
  if (shape.is_array()) {
    std::vector<Literal> leaf_shards;
    for (const Literal* shard : shards) leaf_shards.push_back(*shard);
    return reassemble(leaf_shards, leaves[next_leaf++], shape);
  }
  std::vector<Literal> elements;
  for (int i = 0; i < static_cast<int>(shape.tuple_shapes().size()); ++i) {
    std::vector<const Literal*> element_shards;
    for (const Literal* shard : shards) element_shards.push_back(&shard->element(i));
    elements.push_back(reassemble_value(element_shards, leaves, next_leaf, shape.tuple_shape(i)));
  }
  return Literal::tuple(std::move(elements));
}

// Compares leaf by leaf so a mismatch names the leaf (its index in the
// root tuple, pre-order).
void compare_leaves(const Literal& expected, const Literal& actual, double tolerance, const std::string& where,
                    VerifyResult& result) {
  if (expected.is_tuple() && actual.is_tuple() && expected.elements().size() == actual.elements().size()) {
    for (size_t i = 0; i < expected.elements().size(); ++i)
      compare_leaves(expected.elements()[i], actual.elements()[i], tolerance, fmt::format("{}{{{}}}", where, i),
                     result);
    return;
  }
  Comparison c = compare_literals(expected, actual, tolerance);
  result.max_abs_error = std::max(result.max_abs_error, c.max_abs_error);
  if (!c.ok && result.ok) {
    result.ok = false;
    result.first_mismatch = fmt::format("{}: {}", where, c.first_mismatch);
  }
}

}  // namespace

VerifyResult verify_partitioning(const Module& annotated, const Module& partitioned, uint64_t seed,
                                 double tolerance) {
  VerifyOptions options;
  options.seed = seed;
  options.tolerance = tolerance;
  return verify_partitioning(annotated, partitioned, options);
}

VerifyResult verify_partitioning(const Module& annotated, const Module& partitioned, const VerifyOptions& options) {
  const Computation& entry = annotated.entry();
  const int64_t devices = partitioned.num_partitions();
  const std::vector<InstrId> params = entry.parameters();
  if (!options.arguments.empty() && options.arguments.size() != params.size())
    throw UserError(fmt::format("verify: {} arguments for {} entry parameters", options.arguments.size(),
                                    params.size()));
  std::vector<Literal> args;
  std::vector<std::vector<Literal>> per_device(static_cast<size_t>(devices));
  for (InstrId param : params) {
    const Instruction& instr = entry.instr(param);
    const size_t number = args.size();
    args.push_back(options.arguments.empty() ? random_literal(instr.shape, options.seed + number)
                                             : options.arguments[number]);
    if (!(args.back().shape() == instr.shape))
      throw UserError(instr.location, fmt::format("verify: argument {} does not have the parameter's shape", number));
    const std::vector<Sharding> leaves = instr_leaf_shardings(instr);
    for (int64_t d = 0; d < devices; ++d) {
      size_t next_leaf = 0;
      per_device[static_cast<size_t>(d)].push_back(shard_value(args.back(), leaves, next_leaf, d));
    }
  }
  const Literal expected = evaluate(annotated, args);
  const std::vector<Literal> shards = evaluate_spmd(partitioned, per_device);
  const Instruction& root = entry.root_instr();
  std::vector<const Literal*> shard_pointers;
  for (const Literal& shard : shards) shard_pointers.push_back(&shard);
  size_t next_leaf = 0;
  VerifyResult r;
  r.devices = devices;
  Literal actual;
  try {
    actual = reassemble_value(shard_pointers, instr_leaf_shardings(root), next_leaf, root.shape);
  } catch (const ShardShapeMismatch& e) {
    r.ok = false;
    r.first_mismatch = fmt::format("entry result '{}': {}", root.name, e.what());
    return r;
  }
  r.ok = true;
  compare_leaves(expected, actual, options.tolerance, fmt::format("entry result '{}'", root.name), r);
  return r;
}

}  // namespace podsim::compiler
