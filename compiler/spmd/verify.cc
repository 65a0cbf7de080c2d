// Numeric verification of partitioned programs with the reference interpreter.
#include "compiler/spmd/verify.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "compiler/interpreter/cost_estimate.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/spmd/verify_shrink.h"

namespace podsim::compiler {

Sharding value_sharding(const Instruction& instr) {
  if (!instr.sharding) return Sharding::replicated();
  Sharding s = parse_sharding(*instr.sharding, instr.location);
  return s.is_maximal() ? Sharding::replicated() : s;
}

namespace {

// One element, both parts of a complex one.
void copy_element(const Literal& from, const std::vector<int64_t>& source, Literal& to,
                  const std::vector<int64_t>& target) {
  const int64_t parts = Literal::values_per_element(from.shape().dtype());
  const int64_t i = from.linear_index(source), j = to.linear_index(target);
  for (int64_t k = 0; k < parts; ++k)
    to.mutable_values()[static_cast<size_t>(j + k)] = from.values()[static_cast<size_t>(i + k)];
}

}  // namespace

double padding_sentinel(DType dtype) { return dtype == DType::kPred ? 1.0 : 37.0; }

Literal shard_of(const Literal& full, const Sharding& sharding, int64_t device) {
  const auto& dims = full.shape().dims();
  ShardRegion region = shard_region(sharding, dims, device);
  Literal out(Shape(full.shape().dtype(), shard_shape(sharding, dims)));
  std::vector<int64_t> source(dims.size());  // reused: no allocation per element
  for_each_index(out.shape().dims(), [&](const std::vector<int64_t>& index) {
    for (size_t i = 0; i < index.size(); ++i) {
      source[i] = region.offsets[i] + index[i];
      if (source[i] >= region.limits[i]) {
        out.set(index, padding_sentinel(full.shape().dtype()));
        return;
      }
    }
    copy_element(full, source, out, index);
  });
  return out;
}

Literal reassemble(const std::vector<Literal>& shards, const Sharding& sharding,
                   const Shape& shape) {
  Literal out(shape);
  for (size_t device = 0; device < shards.size(); ++device) {
    ShardRegion region = shard_region(sharding, shape.dims(), static_cast<int64_t>(device));
    std::vector<int64_t> extent;
    for (size_t i = 0; i < region.offsets.size(); ++i)
      extent.push_back(region.limits[i] - region.offsets[i]);
    // A shard smaller than its region (or of another rank) is a wrong
    // program, not something to read past: reported as a mismatch.
    const Shape& got = shards[device].shape();
    bool holds = got.is_array() && got.rank() == static_cast<int64_t>(extent.size());
    for (size_t i = 0; holds && i < extent.size(); ++i) holds = got.dims()[i] >= extent[i];
    if (!holds)
      throw ShardShapeMismatch(
          fmt::format("device {}: the value is {}, its sharding {} needs at least [{}]", device,
                      got.to_string(), sharding.to_string(), fmt::join(extent, ",")));
    std::vector<int64_t> target(extent.size());  // reused: no allocation per element
    for_each_index(extent, [&](const std::vector<int64_t>& index) {
      for (size_t i = 0; i < index.size(); ++i) target[i] = region.offsets[i] + index[i];
      copy_element(shards[device], index, out, target);
    });
  }
  return out;
}

namespace {

// The leaf shardings of a value of `shape` carrying `sharding` (pre-order,
// as Sharding::tuple flattens): a tuple sharding gives one per leaf, a leaf
// sharding on a tuple value applies to every leaf (XLA's convention for a
// tuple annotated with one sharding). Maximal leaves count as replicated.
std::vector<Sharding> leaf_shardings(const Shape& shape, const Sharding& sharding,
                                     const SourceLocation& where) {
  const int64_t leaves = shape.leaf_count();
  std::vector<Sharding> out;
  if (sharding.is_tuple()) {
    if (static_cast<int64_t>(sharding.tuple_elements().size()) != leaves)
      throw UserError(where, fmt::format("tuple sharding has {} leaves, the shape {}",
                                         sharding.tuple_elements().size(), leaves));
    for (const Sharding& leaf : sharding.tuple_elements())
      out.push_back(leaf.is_maximal() ? Sharding::replicated() : leaf);
  } else {
    out.assign(static_cast<size_t>(leaves),
               sharding.is_maximal() ? Sharding::replicated() : sharding);
  }
  return out;
}

std::vector<Sharding> instr_leaf_shardings(const Instruction& instr) {
  if (!instr.sharding) return leaf_shardings(instr.shape, Sharding::replicated(), instr.location);
  return leaf_shardings(instr.shape, parse_sharding(*instr.sharding, instr.location),
                        instr.location);
}

// `device`'s shard of a (possibly tuple) value, leaf `next_leaf` onwards.
Literal shard_value(const Literal& full, const std::vector<Sharding>& leaves, size_t& next_leaf,
                    int64_t device) {
  if (!full.is_tuple()) return shard_of(full, leaves[next_leaf++], device);
  std::vector<Literal> elements;
  for (const Literal& element : full.elements())
    elements.push_back(shard_value(element, leaves, next_leaf, device));
  return Literal::tuple(std::move(elements));
}

// The logical value of `shape` from every device's (possibly tuple) shard.
Literal reassemble_value(const std::vector<const Literal*>& shards,
                         const std::vector<Sharding>& leaves, size_t& next_leaf,
                         const Shape& shape) {
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
void compare_leaves(const Literal& expected, const Literal& actual, double tolerance,
                    CompareScale scale, const std::string& where, VerifyResult& result) {
  if (expected.is_tuple() && actual.is_tuple() &&
      expected.elements().size() == actual.elements().size()) {
    for (size_t i = 0; i < expected.elements().size(); ++i)
      compare_leaves(expected.elements()[i], actual.elements()[i], tolerance, scale,
                     fmt::format("{}{{{}}}", where, i), result);
    return;
  }
  Comparison c = compare_literals(expected, actual, tolerance, scale);
  result.max_abs_error = std::max(result.max_abs_error, c.max_abs_error);
  if (!c.ok && result.ok) {
    result.ok = false;
    result.first_mismatch = fmt::format("{}: {}", where, c.first_mismatch);
  }
}

}  // namespace

bool has_collectives(const Module& module) {
  for (const Computation& c : module.computations())
    for (const Instruction& in : c.instructions())
      if (is_collective(in.opcode) || (in.opcode == Opcode::kAsyncStart && in.attrs.async_wrapped &&
                                       is_collective(*in.attrs.async_wrapped)))
        return true;
  return false;
}

bool needs_every_device(const Module& module) {
  if (has_collectives(module)) return true;
  for (const Computation& c : module.computations())
    for (const Instruction& in : c.instructions())
      if (in.opcode == Opcode::kCustomCall && in.operands.size() == 1 &&
          (in.attrs.custom_call_target == "SPMDFullToShardShape" ||
           in.attrs.custom_call_target == "SPMDShardToFullShape") &&
          !(c.instr(in.operand(0)).shape == in.shape))
        return true;
  return false;
}

VerifyResult verify_partitioning(const Module& annotated, const Module& partitioned, uint64_t seed,
                                 double tolerance) {
  VerifyOptions options;
  options.seed = seed;
  options.tolerance = tolerance;
  return verify_partitioning(annotated, partitioned, options);
}

VerifyResult verify_partitioning(const Module& annotated, const Module& partitioned,
                                 const VerifyOptions& options) {
  const Computation& entry = annotated.entry();
  const int64_t devices = partitioned.num_partitions();
  const std::vector<InstrId> params = entry.parameters();
  if (!options.arguments.empty() && options.arguments.size() != params.size())
    throw UserError(fmt::format("verify: {} arguments for {} entry parameters",
                                options.arguments.size(), params.size()));
  std::vector<Literal> args;
  std::vector<std::vector<Literal>> per_device(static_cast<size_t>(devices));
  for (InstrId param : params) {
    const Instruction& instr = entry.instr(param);
    const size_t number = args.size();
    args.push_back(options.arguments.empty() ? random_literal(instr.shape, options.seed + number)
                                             : options.arguments[number]);
    if (!(args.back().shape() == instr.shape))
      throw UserError(
          instr.location,
          fmt::format("verify: argument {} does not have the parameter's shape", number));
    const std::vector<Sharding> leaves = instr_leaf_shardings(instr);
    for (int64_t d = 0; d < devices; ++d) {
      size_t next_leaf = 0;
      per_device[static_cast<size_t>(d)].push_back(shard_value(args.back(), leaves, next_leaf, d));
    }
  }
  const std::vector<Literal> shards = evaluate_spmd(partitioned, per_device);
  const Instruction& root = entry.root_instr();
  const std::vector<Sharding> root_leaves = instr_leaf_shardings(root);
  if (root_leaves.size() == 1 && root_leaves[0].is_manual()) {
    // A manual result is each device's own value (partition-id, a shard_map
    // body's output): the reference is the global module run as each device,
    // compared device by device.
    VerifyResult r;
    r.devices = devices;
    r.ok = true;
    const std::vector<Literal> expected_per_device = evaluate_spmd(
        annotated, std::vector<std::vector<Literal>>(static_cast<size_t>(devices), args));
    for (int64_t d = 0; d < devices && r.ok; ++d)
      compare_leaves(expected_per_device[static_cast<size_t>(d)], shards[static_cast<size_t>(d)],
                     options.tolerance, options.scale,
                     fmt::format("entry result '{}' on device {}", root.name, d), r);
    return r;
  }
  Literal expected;
  if (needs_every_device(annotated) && devices > 1) {
    // The module's own collectives (an all-reduce over replica_groups of
    // device ids) act across the devices it is compiled for: its logical
    // result is what every device computes from the full inputs.
    const std::vector<Literal> each = evaluate_spmd(
        annotated, std::vector<std::vector<Literal>>(static_cast<size_t>(devices), args));
    for (int64_t d = 1; d < devices; ++d) {
      VerifyResult same;
      same.ok = true;
      compare_leaves(each[0], each[static_cast<size_t>(d)], options.tolerance, options.scale, "",
                     same);
      if (!same.ok)
        throw UserError(
            fmt::format("verify: the module's own collectives give device {} another result than "
                        "device 0{}; there is no one logical result to compare with",
                        d, same.first_mismatch),
            "verify a module whose collectives reduce over replicated values, or run it per device "
            "with 'podsim run'");
    }
    expected = each[0];
  } else {
    expected = evaluate(annotated, args);
  }
  std::vector<const Literal*> shard_pointers;
  for (const Literal& shard : shards) shard_pointers.push_back(&shard);
  size_t next_leaf = 0;
  VerifyResult r;
  r.devices = devices;
  Literal actual;
  try {
    actual = reassemble_value(shard_pointers, root_leaves, next_leaf, root.shape);
  } catch (const ShardShapeMismatch& e) {
    r.ok = false;
    r.first_mismatch = fmt::format("entry result '{}': {}", root.name, e.what());
    return r;
  }
  r.ok = true;
  compare_leaves(expected, actual, options.tolerance, options.scale,
                 fmt::format("entry result '{}'", root.name), r);
  return r;
}

namespace {

// The largest 4 u sqrt(n) over the module's rounded sums (see
// verify_tolerance), each in its own result type's precision; records the
// longest sum and whether any value is bf16/f16/f8.
void sum_growth(const Module& module, int64_t devices, VerifyTolerance& t, double& growth,
                bool& low_precision) {
  for (const Computation& c : module.computations())
    for (const Instruction& in : c.instructions()) {
      int bits = 0;  // coarsest floating leaf of the result
      for (const Shape* leaf : in.shape.leaves()) {
        const int b = significand_bits(leaf->dtype());
        if (b > 0) bits = bits == 0 ? b : std::min(bits, b);
        low_precision |=
            leaf->dtype() == DType::kBF16 || leaf->dtype() == DType::kF16 || (b > 0 && b < 8);
      }
      if (bits == 0) continue;
      int64_t n = 0;
      if (in.opcode == Opcode::kReduce && !in.operands.empty()) {
        const Shape& operand = c.instr(in.operand(0)).shape;
        n = 1;
        if (operand.is_array())
          for (int64_t d : in.attrs.dimensions)
            if (d >= 0 && d < operand.rank()) n *= operand.dim(static_cast<int>(d));
      } else if (in.opcode == Opcode::kReduceWindow) {
        n = 1;
        for (const WindowDim& w : in.attrs.window) n *= w.size;
      } else if (in.opcode == Opcode::kAllReduce || in.opcode == Opcode::kReduceScatter ||
                 in.opcode == Opcode::kAllReduceStart ||
                 (in.opcode == Opcode::kAsyncStart && in.attrs.async_wrapped &&
                  (*in.attrs.async_wrapped == Opcode::kAllReduce ||
                   *in.attrs.async_wrapped == Opcode::kReduceScatter))) {
        n = in.attrs.replica_groups.group_size(devices);
      } else if (in.opcode == Opcode::kDot || in.opcode == Opcode::kConvolution) {
        n = devices;  // at most one partial result per device
      } else if (in.opcode == Opcode::kScatter && in.operand_count() >= 3) {
        // Updates that collide on one element are combined one by one, in an
        // order the partitioned program does not keep: up to every update.
        const Shape& updates = c.instr(in.operand(in.operand_count() - 1)).shape;
        n = 1;
        if (updates.is_array())
          for (int64_t d = 0; d < updates.rank(); ++d)
            if (std::find(in.attrs.scatter.update_window_dims.begin(),
                          in.attrs.scatter.update_window_dims.end(),
                          d) == in.attrs.scatter.update_window_dims.end())
              n *= updates.dim(static_cast<int>(d));
      }
      if (n <= 1) continue;
      const double g = 4 * std::ldexp(1.0, -bits) * std::sqrt(static_cast<double>(n));
      if (g > growth) {
        growth = g;
        t.longest_sum = n;
        t.unit_roundoff = std::ldexp(1.0, -bits);
      }
    }
}

}  // namespace

VerifyTolerance verify_tolerance(const Module& annotated, const Module& partitioned) {
  VerifyTolerance t;
  const int64_t devices = std::max<int64_t>(1, partitioned.num_partitions());
  double growth = 0;
  bool low = false;
  sum_growth(annotated, devices, t, growth, low);
  sum_growth(partitioned, devices, t, growth, low);
  const double floor = low ? 2e-2 : 1e-4;
  t.tolerance = std::max(floor, growth);
  t.scale = growth > floor ? CompareScale::kLeafRms : CompareScale::kElement;
  return t;
}

VerifyEstimate estimate_verify(const Module& annotated, const Module& partitioned) {
  VerifyEstimate e;
  e.devices = std::max<int64_t>(1, partitioned.num_partitions());
  const auto n = static_cast<double>(e.devices);
  // A module with its own collectives or manual conversions runs on every device
  // (verify_partitioning).
  const InterpreterEstimate original =
      estimate_interpreter(annotated, needs_every_device(annotated) ? e.devices : 1);
  const InterpreterEstimate per_device = estimate_interpreter(partitioned, 1);
  const double inputs = original.parameter_bytes + n * per_device.parameter_bytes;
  e.peak_bytes =
      kVerifyMemoryMargin *
      (inputs + std::max(original.peak_bytes, original.root_bytes + n * per_device.peak_bytes) +
       original.root_bytes);
  e.element_ops = original.element_ops + n * per_device.element_ops;
  e.unknown_trip_loops = original.unknown_trip_loops + per_device.unknown_trip_loops;
  return e;
}

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:.3g} {}", bytes, units[u]);
}

VerifyEstimate check_verify_estimate(const Module& annotated, const Module& partitioned,
                                     double limit_bytes, const std::string& extra_hint) {
  check_interpretable(annotated);
  check_interpretable(partitioned);
  const VerifyEstimate e = estimate_verify(annotated, partitioned);
  const std::string loops =
      e.unknown_trip_loops ? fmt::format(" (counting {} while loop{} of unknown trip count once)",
                                         e.unknown_trip_loops, e.unknown_trip_loops == 1 ? "" : "s")
                           : "";
  if (e.peak_bytes > limit_bytes)
    throw UserError(
        fmt::format("--verify would need about {} of interpreter memory ({} devices){}, over the "
                    "limit of {}",
                    bytes_text(e.peak_bytes), e.devices, loops, bytes_text(limit_bytes)),
        "raise it with --verify-limit (e.g. --verify-limit 8GiB) if the machine has the memory, or "
        "verify a smaller configuration (fewer layers, smaller batch or sequence)" +
            extra_hint);
  if (e.element_ops > kMaxVerifyElementOps)
    throw UserError(
        fmt::format("--verify would take about {:.3g} element operations ({} devices){}, over the "
                    "limit of {:.3g} (over a minute or two of interpreter time)",
                    e.element_ops, e.devices, loops, kMaxVerifyElementOps),
        "verify a smaller configuration (fewer layers, smaller batch or sequence)" + extra_hint);
  return e;
}

bool verify_estimate_fits(const VerifyEstimate& estimate, double limit_bytes) {
  return estimate.peak_bytes <= limit_bytes && estimate.element_ops <= kMaxVerifyElementOps;
}

namespace {

// Opcode name -> count over every computation of a module.
std::map<std::string, int64_t> opcode_counts(const Module& module) {
  std::map<std::string, int64_t> counts;
  for (const Computation& c : module.computations())
    for (const Instruction& in : c.instructions()) ++counts[std::string(opcode_name(in.opcode))];
  return counts;
}

// "while 1 -> 0, collective-permute 2 -> 0"; empty when equal.
std::string count_difference(const std::map<std::string, int64_t>& full,
                             const std::map<std::string, int64_t>& reduced) {
  std::vector<std::string> parts;
  std::map<std::string, int64_t> all = full;
  for (const auto& [name, n] : reduced) all.emplace(name, 0);
  for (const auto& [name, unused] : all) {
    const auto f = full.find(name);
    const auto r = reduced.find(name);
    const int64_t a = f == full.end() ? 0 : f->second, b = r == reduced.end() ? 0 : r->second;
    if (a != b) parts.push_back(fmt::format("{} {} -> {}", name, a, b));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The largest entry parameter whose shape changed, "before -> after".
std::string shrink_example(const Module& full, const Module& reduced) {
  const Computation& a = full.entry();
  const Computation& b = reduced.entry();
  int64_t best = -1;
  std::string text;
  for (InstrId id = 0; id < a.size(); ++id) {
    const Shape& s = a.instr(id).shape;
    if (s == b.instr(id).shape) continue;
    int64_t elements = 0;
    for (const Shape* leaf : s.leaves()) elements += leaf->num_elements();
    const bool parameter = a.instr(id).opcode == Opcode::kParameter;
    // Parameters first: their shapes are what a user wrote.
    const int64_t rank = elements + (parameter ? (int64_t{1} << 62) : 0);
    if (rank > best) {
      best = rank;
      text = fmt::format("{} -> {}", s.to_string(false), b.instr(id).shape.to_string(false));
    }
  }
  return text;
}

}  // namespace

ReduceAttempt reduce_for_verify(const Module& annotated, const Module& partitioned,
                                const SpmdOptions& options, double limit_bytes) {
  ReduceAttempt attempt;
  int64_t largest = 1;
  for (const Computation& c : annotated.computations())
    for (const Instruction& in : c.instructions())
      for (const Shape* leaf : in.shape.leaves())
        for (int64_t d : leaf->dims()) largest = std::max(largest, d);
  // Sharded dims keep at least one element per tile by the sharding check
  // (a size that would not stays whole); other dims may go down to 2.
  const int64_t min_dim = 2;
  const std::map<std::string, int64_t> full_counts = opcode_counts(partitioned);
  // Windowed einsum decides by bytes: the variants force it on and off.
  std::vector<SpmdOptions> variants = {options, options, options};
  variants[1].windowed_einsum_threshold_bytes = 0;
  variants[1].windowed_einsum_min_flops_per_byte = 0;
  variants[2].windowed_einsum_threshold_bytes = std::numeric_limits<int64_t>::max();
  std::optional<ReducedVerify> fallback;
  // (residue modulus, factor): exact division first; then dims k does not
  // divide shrink too, keeping their remainder modulo the tile counts.
  std::vector<std::pair<int64_t, int64_t>> tries;
  for (const int64_t modulus : {int64_t{0}, tile_count_lcm(annotated)})
    for (int64_t k = 2; k <= largest; k *= 2) tries.emplace_back(modulus, k);
  for (const auto& [modulus, k] : tries) {
    ShrinkRule rule;
    rule.factor = k;
    rule.min_dim = min_dim;
    rule.residue_modulus = modulus;
    ShrinkOutcome shrunk = shrink_keeping_shardings(annotated, rule);
    if (!shrunk.module) {
      attempt.why_not = fmt::format("dims /{}: {}", k, shrunk.why_not);
      continue;
    }
    if (shrink_example(annotated, *shrunk.module).empty()) continue;  // no dim divides by k
    {
      // The original module's own run bounds the check from below: skip the
      // partitioning while that alone is over the budget.
      const InterpreterEstimate own = estimate_interpreter(*shrunk.module, 1);
      const double at_least = kVerifyMemoryMargin * (own.parameter_bytes + own.peak_bytes);
      if (at_least > kReducedVerifyMemoryShare * limit_bytes ||
          own.element_ops > kReducedVerifyElementOps) {
        attempt.why_not = fmt::format("dims /{}: still needs at least {} and {:.3g} element-ops", k,
                                      bytes_text(at_least), own.element_ops);
        continue;
      }
    }
    std::optional<ReducedVerify> candidate;
    for (const SpmdOptions& variant : variants) {
      ReducedVerify r;
      try {
        r.partitioned = partition_spmd(*shrunk.module, variant);
        check_interpretable(r.partitioned);
      } catch (const UserError& e) {
        attempt.why_not = fmt::format("dims /{}: {}", k, e.message());
        continue;
      } catch (
          const std::exception& e) {  // an internal error at reduced shapes refuses the factor only
        attempt.why_not = fmt::format("dims /{}: {}", k, e.what());
        continue;
      }
      r.estimate = estimate_verify(*shrunk.module, r.partitioned);
      if (r.estimate.peak_bytes > kReducedVerifyMemoryShare * limit_bytes ||
          r.estimate.element_ops > kReducedVerifyElementOps) {
        attempt.why_not = fmt::format("dims /{}: still needs {} and {:.3g} element-ops", k,
                                      bytes_text(r.estimate.peak_bytes), r.estimate.element_ops);
        break;  // the variants have the same inputs: a larger factor is needed
      }
      r.factor = k;
      r.structure_difference = count_difference(full_counts, opcode_counts(r.partitioned));
      if (r.structure_difference.empty() || !candidate) {
        const bool matches = r.structure_difference.empty();
        candidate = std::move(r);
        if (matches) break;
      }
    }
    if (!candidate) continue;
    candidate->annotated = std::move(*shrunk.module);
    candidate->example = shrink_example(annotated, candidate->annotated);
    if (candidate->structure_difference.empty()) {
      attempt.reduced = std::move(candidate);
      return attempt;
    }
    if (!fallback) fallback = std::move(candidate);
  }
  attempt.reduced = std::move(fallback);
  return attempt;
}

VerifyPlan plan_verify(const Module& annotated, const Module& partitioned,
                       const SpmdOptions& options, double limit_bytes, bool full_only) {
  check_interpretable(annotated);
  check_interpretable(partitioned);
  VerifyPlan plan;
  plan.full = estimate_verify(annotated, partitioned);
  std::string why_not;
  if (!verify_estimate_fits(plan.full, limit_bytes) && !full_only) {
    ReduceAttempt attempt = reduce_for_verify(annotated, partitioned, options, limit_bytes);
    plan.reduced = std::move(attempt.reduced);
    if (!plan.reduced)
      why_not = fmt::format("; no reduced shapes fit either ({})",
                            attempt.why_not.empty() ? "no dim divides" : attempt.why_not);
  }
  plan.estimate = plan.reduced
                      ? plan.reduced->estimate
                      : check_verify_estimate(annotated, partitioned, limit_bytes, why_not);
  return plan;
}

std::string VerifyPlan::reduced_text() const {
  if (!reduced) return "";
  return fmt::format(
      " at reduced shapes (dims /{}: {}; full shapes need about {}, {:.3g} element-ops)",
      reduced->factor, reduced->example, bytes_text(full.peak_bytes), full.element_ops);
}

double parse_byte_size(const std::string& text, const std::string& option) {
  auto bad = [&]() -> UserError {
    return UserError(
        SourceLocation{option + " " + text, 0, 0}, fmt::format("'{}' is not a byte size", text),
        fmt::format("write {} as a number of bytes or with a unit: 4GiB, 512MiB, 2G, 3GB", option));
  };
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (...) {
    throw bad();
  }
  std::string unit = text.substr(used);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  for (char& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  double scale = 0;
  const std::pair<const char*, double> units[] = {
      {"", 1},       {"B", 1},        {"K", 0x1p10},   {"KIB", 0x1p10}, {"KB", 1e3},
      {"M", 0x1p20}, {"MIB", 0x1p20}, {"MB", 1e6},     {"G", 0x1p30},   {"GIB", 0x1p30},
      {"GB", 1e9},   {"T", 0x1p40},   {"TIB", 0x1p40}, {"TB", 1e12}};
  for (const auto& [name, factor] : units)
    if (unit == name) scale = factor;
  if (scale == 0 || !(value > 0) || !std::isfinite(value)) throw bad();
  return value * scale;
}

}  // namespace podsim::compiler
