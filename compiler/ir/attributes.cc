// Attribute helpers: comparison names and replica-group expansion.
#include "compiler/ir/attributes.h"

#include <array>
#include <cassert>
#include <numeric>

namespace podsim::compiler {

namespace {
constexpr std::array<const char*, 6> kDirNames = {"EQ", "NE", "LT", "LE", "GT", "GE"};
}

const char* comparison_direction_name(ComparisonDirection d) {
  return kDirNames[static_cast<size_t>(d)];
}

std::optional<ComparisonDirection> parse_comparison_direction(const std::string& s) {
  for (size_t i = 0; i < kDirNames.size(); ++i)
    if (s == kDirNames[i]) return static_cast<ComparisonDirection>(i);
  return std::nullopt;
}

// Iota form: devices = iota(prod reshape_dims) reshaped to reshape_dims,
// transposed by perm, then read row-major as [num_groups, group_size].
std::vector<std::vector<int64_t>> ReplicaGroups::expand(int64_t num_devices) const {
  if (!explicit_groups.empty()) return explicit_groups;
  std::vector<std::vector<int64_t>> groups;
  if (!iota) {
    std::vector<int64_t> all(static_cast<size_t>(num_devices));
    std::iota(all.begin(), all.end(), 0);
    groups.push_back(std::move(all));
    return groups;
  }
  const auto& dims = iota->reshape_dims;
  const size_t rank = dims.size();
  std::vector<int64_t> perm = iota->transpose_perm;
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.begin(), perm.end(), 0);
  }
  // Strides of the source (untransposed) array.
  std::vector<int64_t> src_stride(rank, 1);
  for (int i = static_cast<int>(rank) - 2; i >= 0; --i)
    src_stride[static_cast<size_t>(i)] =
        src_stride[static_cast<size_t>(i) + 1] * dims[static_cast<size_t>(i) + 1];
  std::vector<int64_t> out_dims(rank);
  for (size_t i = 0; i < rank; ++i) out_dims[i] = dims[static_cast<size_t>(perm[i])];
  std::vector<int64_t> flat;
  flat.reserve(static_cast<size_t>(iota->num_groups * iota->group_size));
  for_each_index(out_dims, [&](const std::vector<int64_t>& idx) {
    int64_t v = 0;
    for (size_t i = 0; i < rank; ++i) v += idx[i] * src_stride[static_cast<size_t>(perm[i])];
    flat.push_back(v);
  });
  assert(static_cast<int64_t>(flat.size()) == iota->num_groups * iota->group_size);
  for (int64_t g = 0; g < iota->num_groups; ++g)
    groups.emplace_back(flat.begin() + g * iota->group_size,
                        flat.begin() + (g + 1) * iota->group_size);
  return groups;
}

int64_t ReplicaGroups::group_size(int64_t num_devices) const {
  if (!explicit_groups.empty()) return static_cast<int64_t>(explicit_groups.front().size());
  if (iota) return iota->group_size;
  return num_devices;
}

}  // namespace podsim::compiler
