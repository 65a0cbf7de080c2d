// Digit steps up to a device relabeling: GSPMD's "all-to-all + permute"
// (docs/reference/gspmd.md#resharding rung 5) on the elementary digit grid. Plans source -> T'
// (the target with equal-size digits renamed by sigma) for every size-preserving sigma, then one
// collective-permute T' <-> T, and keeps the cheapest; sigma = identity (the plain plan) wins
// ties. The cost and why: docs/compiler.md#digit-steps-up-to-a-relabeling
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/spmd/reshard.h"

namespace podsim::compiler {
namespace {

// Above this many relabelings only the identity is tried (7! = 5040: seven
// free digits of one size, e.g. a 128-device mesh of factors 2).
constexpr int64_t kMaxRelabelings = 5040;

int64_t elements(const Sharding& sharding, std::span<const int64_t> base_dims) {
  int64_t n = 1;
  for (int64_t e : shard_shape(sharding, base_dims)) n *= e;
  return n;
}

int64_t step_count(const RelabeledDigitPlan& plan, DigitStep::Kind kind) {
  return std::count_if(plan.steps.begin(), plan.steps.end(),
                       [&](const DigitStep& step) { return step.kind == kind; });
}

// Ties on cost: fewer collectives, then fewer all-gathers (they grow the
// shard), then the earlier relabeling (the identity first).
bool better_tie(const RelabeledDigitPlan& a, const RelabeledDigitPlan& b) {
  auto collectives = [](const RelabeledDigitPlan& p) {
    return (p.permute == RelabeledDigitPlan::Permute::kNone ? 0 : 1) +
           step_count(p, DigitStep::Kind::kCoarsen) + step_count(p, DigitStep::Kind::kMove);
  };
  if (collectives(a) != collectives(b)) return collectives(a) < collectives(b);
  return step_count(a, DigitStep::Kind::kCoarsen) < step_count(b, DigitStep::Kind::kCoarsen);
}

std::vector<DigitIds> relabel(const std::vector<DigitIds>& lists,
                              const std::vector<size_t>& sigma) {
  std::vector<DigitIds> out = lists;
  for (DigitIds& list : out)
    for (size_t& digit : list) digit = sigma[digit];
  return out;
}

// The same layouts with every digit cut into prime-sized digits (a digit
// of size p q at stride s is the digit of size p at stride s q, major, and
// the one of size q at stride s: the device's value in it is unchanged).
// More digits of equal size means more relabelings: [2,4] -> [1,8] on 8
// devices has digits of sizes 2 and 4 on the common grid, and needs the
// 4 split to exchange its halves with the 2.
GridLayouts split_into_prime_digits(const GridLayouts& coarse) {
  const DigitGrid& grid = coarse.grid;
  GridLayouts fine;
  fine.grid.bounds = {1};
  std::vector<std::pair<size_t, size_t>> range(
      grid.digit_count());  // old digit -> new ids [first, last)
  for (size_t j = 0; j < grid.digit_count(); ++j) {
    const size_t first = fine.grid.bounds.size() - 1;
    int64_t rest = grid.size(j), stride = grid.bounds[j];
    for (int64_t p = 2; rest > 1; ++p)
      while (rest % p == 0) {
        rest /= p;
        stride *= p;
        fine.grid.bounds.push_back(stride);
      }
    range[j] = {first, fine.grid.bounds.size() - 1};
  }
  auto split = [&](const DigitIds& digits) {
    DigitIds out;
    for (size_t j : digits)
      for (size_t k = range[j].second; k-- > range[j].first;) out.push_back(k);  // major first
    return out;
  };
  for (const ShardingDigits& layout : coarse.layouts) {
    ShardingDigits refined;
    for (const DigitIds& digits : layout.data) refined.data.push_back(split(digits));
    refined.replicated = split(layout.replicated);
    fine.layouts.push_back(std::move(refined));
  }
  return fine;
}

// Free digits (in no common prefix), grouped by size: sigma permutes within
// each group.
std::vector<std::vector<size_t>> free_digit_classes(const GridLayouts& on_grid) {
  const DigitGrid& grid = on_grid.grid;
  const auto& from = on_grid.layouts[0].data;
  const auto& to = on_grid.layouts[1].data;
  std::vector<bool> fixed(grid.digit_count(), false);
  for (size_t d = 0; d < from.size(); ++d)
    for (size_t k = 0; k < std::min(from[d].size(), to[d].size()) && from[d][k] == to[d][k]; ++k)
      fixed[from[d][k]] = true;
  std::map<int64_t, std::vector<size_t>> by_size;
  for (size_t j = 0; j < grid.digit_count(); ++j)
    if (!fixed[j]) by_size[grid.size(j)].push_back(j);
  std::vector<std::vector<size_t>> classes;
  for (auto& [size, digits] : by_size)
    if (digits.size() > 1) classes.push_back(std::move(digits));
  return classes;
}

int64_t relabeling_count(const std::vector<std::vector<size_t>>& classes) {
  int64_t count = 1;
  for (const auto& digits : classes)
    for (size_t k = 2; k <= digits.size() && count <= kMaxRelabelings; ++k)
      count *= static_cast<int64_t>(k);
  return count;
}

// Calls visit(sigma) for every size-preserving permutation of the free
// digits, identity first (each class starts sorted; odometer over classes).
template <typename Visit>
void for_each_relabeling(size_t digit_count, std::vector<std::vector<size_t>> classes,
                         Visit visit) {
  std::vector<std::vector<size_t>> images = classes;
  for (;;) {
    std::vector<size_t> sigma(digit_count);
    for (size_t j = 0; j < digit_count; ++j) sigma[j] = j;
    for (size_t c = 0; c < classes.size(); ++c)
      for (size_t k = 0; k < classes[c].size(); ++k) sigma[classes[c][k]] = images[c][k];
    visit(sigma);
    size_t c = 0;
    while (c < images.size() && !std::next_permutation(images[c].begin(), images[c].end())) ++c;
    if (c == images.size()) return;
  }
}

}  // namespace

std::optional<RelabeledDigitPlan> plan_relabeled_digit_reshard(
    const Sharding& source, const Sharding& target, std::span<const int64_t> base_dims,
    int64_t devices, int64_t element_bytes, double collective_latency_bytes) {
  const auto rank = static_cast<int64_t>(base_dims.size());
  const Sharding pair[] = {source, target};
  const auto coarse = layouts_on_common_grid(pair, rank, devices);
  if (!coarse) return std::nullopt;
  std::optional<RelabeledDigitPlan> best;
  double best_cost = 0;
  // Candidate 0: the plain digit plan on the common grid.
  if (auto steps = plan_digit_steps(coarse->grid, coarse->layouts[0].data, coarse->layouts[1].data,
                                    base_dims, element_bytes, collective_latency_bytes)) {
    best = RelabeledDigitPlan{RelabeledDigitPlan::Permute::kNone, Sharding(), std::move(*steps)};
    best_cost = digit_steps_cost(best->steps, base_dims, element_bytes, collective_latency_bytes);
  }
  const GridLayouts on_grid = split_into_prime_digits(*coarse);
  const DigitGrid& grid = on_grid.grid;
  const std::vector<DigitIds>& from = on_grid.layouts[0].data;
  const std::vector<DigitIds>& to = on_grid.layouts[1].data;
  auto classes = free_digit_classes(on_grid);
  if (relabeling_count(classes) > kMaxRelabelings) classes.clear();

  const double source_shard = static_cast<double>(elements(source, base_dims) * element_bytes);
  const double target_shard = static_cast<double>(elements(target, base_dims) * element_bytes);
  // Every relabeled plan pays the permute, collective_latency_bytes + the
  // smaller shard, on top of digit steps that cost >= 0: a plain plan that
  // is already cheaper cannot lose, so the enumeration is skipped (exact:
  // equal cost would go to the tie rule, hence the strict <).
  const double permute_floor = collective_latency_bytes + std::min(source_shard, target_shard);
  if (best && best_cost < permute_floor) classes.clear();
  // Sigmas that only permute digits the target does not shard on (its
  // replicated ones) give the same relabeled target: plan each once.
  std::set<std::vector<DigitIds>> planned;
  std::vector<size_t> best_sigma;
  for_each_relabeling(
      grid.digit_count(), std::move(classes), [&](const std::vector<size_t>& sigma) {
        std::vector<DigitIds> relabeled = relabel(to, sigma);
        if (!planned.insert(relabeled).second) return;
        auto steps = plan_digit_steps(grid, from, relabeled, base_dims, element_bytes,
                                      collective_latency_bytes);
        if (!steps) return;
        RelabeledDigitPlan plan;
        plan.steps = std::move(*steps);
        double cost =
            digit_steps_cost(plan.steps, base_dims, element_bytes, collective_latency_bytes);
        if (relabeled != to) {
          plan.permute = source_shard < target_shard ? RelabeledDigitPlan::Permute::kFirst
                                                     : RelabeledDigitPlan::Permute::kLast;
          cost += collective_latency_bytes + std::min(source_shard, target_shard);
        }
        if (!best || cost < best_cost || (cost == best_cost && better_tie(plan, *best))) {
          best = std::move(plan);
          best_cost = cost;
          best_sigma = sigma;
        }
      });
  if (!best || best->permute != RelabeledDigitPlan::Permute::kFirst) return best;
  // Permute first: relabel the source by sigma^-1 (then it reaches the
  // target itself by the same steps, renamed).
  std::vector<size_t> inverse(best_sigma.size());
  for (size_t j = 0; j < best_sigma.size(); ++j) inverse[best_sigma[j]] = j;
  const std::vector<DigitIds> relabeled_source = relabel(from, inverse);
  best->relabeled_source = sharding_from_digits(grid, relabeled_source);
  auto steps = plan_digit_steps(grid, relabeled_source, to, base_dims, element_bytes,
                                collective_latency_bytes);
  if (!steps) return std::nullopt;  // relabeling commutes with planning: not expected
  best->steps = std::move(*steps);
  return best;
}

const std::optional<RelabeledDigitPlan>& RelabeledPlanCache::plan(
    const Sharding& source, const Sharding& target, std::span<const int64_t> base_dims,
    int64_t devices, int64_t element_bytes) {
  std::string key = fmt::format("{}|{}|{}|{}|{}", source.to_string(), target.to_string(),
                                fmt::join(base_dims, ","), devices, element_bytes);
  auto found = plans_.find(key);
  if (found == plans_.end())
    found = plans_
                .emplace(std::move(key),
                         plan_relabeled_digit_reshard(source, target, base_dims, devices,
                                                      element_bytes, collective_latency_bytes_))
                .first;
  return found->second;
}

PartitionedValue apply_relabeled_digit_reshard(SpmdContext& context, const PartitionedValue& value,
                                               const RelabeledDigitPlan& plan,
                                               const Sharding& target) {
  PartitionedValue current = value;
  if (plan.permute == RelabeledDigitPlan::Permute::kFirst)
    current = permute_devices(context, current, plan.relabeled_source);
  current = apply_digit_reshard(context, current, plan.steps);
  if (plan.permute == RelabeledDigitPlan::Permute::kLast)
    current = permute_devices(context, current, target);
  current.sharding = target;
  return current;
}

}  // namespace podsim::compiler
