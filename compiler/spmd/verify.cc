// Numeric verification of partitioned programs with the reference interpreter.
#include "compiler/spmd/verify.h"

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
    for_each_index(extent, [&](const std::vector<int64_t>& index) {
      std::vector<int64_t> target(index.size());
      for (size_t i = 0; i < index.size(); ++i) target[i] = region.offsets[i] + index[i];
      out.set(target, shards[device].at(index));
    });
  }
  return out;
}

VerifyResult verify_partitioning(const Module& annotated, const Module& partitioned, uint64_t seed,
                                 double tolerance) {
  const Computation& entry = annotated.entry();
  const int64_t devices = partitioned.num_partitions();
  std::vector<Literal> args;
  std::vector<std::vector<Literal>> per_device(static_cast<size_t>(devices));
  for (InstrId param : entry.parameters()) {
    const Instruction& instr = entry.instr(param);
    if (instr.shape.is_tuple())
      throw UserError(instr.location, "--verify supports array-shaped entry parameters only");
    args.push_back(random_literal(instr.shape, seed + static_cast<uint64_t>(args.size())));
    Sharding s = value_sharding(instr);
    for (int64_t d = 0; d < devices; ++d) per_device[static_cast<size_t>(d)].push_back(shard_of(args.back(), s, d));
  }
  const Literal expected = evaluate(annotated, args);
  const std::vector<Literal> shards = evaluate_spmd(partitioned, per_device);
  const Instruction& root = entry.root_instr();
  const Literal actual = reassemble(shards, value_sharding(root), root.shape);
  Comparison c = compare_literals(expected, actual, tolerance);
  VerifyResult r;
  r.ok = c.ok;
  r.devices = devices;
  r.max_abs_error = c.max_abs_error;
  if (!c.ok) r.first_mismatch = fmt::format("entry result '{}': {}", root.name, c.first_mismatch);
  return r;
}

}  // namespace podsim::compiler
