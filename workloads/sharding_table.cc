// ShardingTable: validation of the `sharding:` names and mesh_split texts.
#include "workloads/sharding_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

namespace podsim::workloads {

const std::vector<KnownShardingName>& known_sharding_names() {
  static const std::vector<KnownShardingName> kNames = {
      {"activations", "BLM"}, {"ffn_in", "MH"},    {"ffn_out", "HM"}, {"attn_qkv", "MND"},
      {"attn_out", "NDM"},    {"embedding", "VM"}, {"qkv", "BLND"},   {"ffn_hidden", "BLH"},
      {"logits", "BLV"},      {"experts", "E"},    {"stage", "S"},    {"attn_kv", "MKD"},
  };
  return kNames;
}

ShardingTable::ShardingTable(const Workload& workload, const compiler::DeviceMesh& mesh)
    : mesh_(mesh), heads_(workload.model.heads) {
  const auto& known = known_sharding_names();
  for (size_t i = 0; i < workload.sharding.size(); ++i) {
    // Plain references, not a structured binding: clang 14 (the fuzz build)
    // cannot capture bindings in the lambda below.
    const std::string& name = workload.sharding[i].first;
    const auto& mapping = workload.sharding[i].second;
    SourceLocation where = i < workload.sharding_locations.size()
                               ? workload.sharding_locations[i]
                               : SourceLocation{workload.source_file, 0, 0};
    auto it = std::find_if(known.begin(), known.end(),
                           [&](const KnownShardingName& k) { return k.name == name; });
    if (it == known.end()) {
      std::vector<std::string> names;
      for (const auto& k : known) names.push_back(fmt::format("{} ({})", k.name, k.dims));
      throw UserError(where, fmt::format("unknown tensor name '{}' in 'sharding'", name),
                      fmt::format("known names (dims): {}", fmt::join(names, ", ")));
    }
    if (name == "experts" && workload.model.kind != ModelKind::kMoeTransformer)
      throw UserError(where,
                      fmt::format("'sharding.experts' is given but model.kind is {}",
                                  name_of(workload.model.kind)),
                      "the experts dim exists in moe_transformer models only; remove the entry");
    if (mapping.size() != it->dims.size())
      throw UserError(where,
                      fmt::format("'sharding.{}' lists {} dims but the tensor has {} ({})", name,
                                  mapping.size(), it->dims.size(), it->dims),
                      "give one mesh axis or null per tensor dim");
    if (name == "stage" && workload.training.pipeline_stages == 1)
      throw UserError(where, "'sharding.stage' is given but training.pipeline_stages is 1",
                      "the stage dim exists with pipelining only: set training.pipeline_stages or "
                      "remove the entry");
    mappings_[name] = mapping;
    texts_[name] = sharding_of(mapping);
  }
  // The pipeline axis holds the stages; a tensor also split over it would
  // need one axis for two dims of the stacked weights and state.
  const std::optional<std::string> stage = axis_of("stage", 0);
  if (!stage) return;
  for (size_t i = 0; i < workload.sharding.size(); ++i) {
    // Plain references, not a structured binding: clang 14 (the fuzz build)
    // cannot capture bindings in the lambda below.
    const std::string& name = workload.sharding[i].first;
    const auto& mapping = workload.sharding[i].second;
    if (name == "stage" || std::find(mapping.begin(), mapping.end(), stage) == mapping.end())
      continue;
    SourceLocation where = i < workload.sharding_locations.size()
                               ? workload.sharding_locations[i]
                               : SourceLocation{workload.source_file, 0, 0};
    throw UserError(
        where,
        fmt::format("'sharding.{}' uses mesh axis '{}', the pipeline stage axis", name, *stage),
        "the stage axis (sharding.stage) may shard no other tensor: use another mesh axis here");
  }
}

std::optional<std::string> ShardingTable::stacked_sharding(const std::optional<std::string>& inner,
                                                           int64_t inner_rank) const {
  const std::optional<std::string> stage = axis_of("stage", 0);
  if (!stage && !inner) return std::nullopt;
  compiler::DimsMapping mapping(static_cast<size_t>(inner_rank));
  if (inner) {
    // Every text of this table is a mesh_split over mesh_, so it inverts.
    std::optional<compiler::DimsMapping> axes =
        compiler::mesh_axes_of(compiler::parse_sharding(*inner), mesh_, inner_rank);
    assert(axes && static_cast<int64_t>(axes->size()) == inner_rank);
    mapping = *axes;
  }
  mapping.insert(mapping.begin(),
                 stage ? std::vector<std::string>{*stage} : std::vector<std::string>{});
  return compiler::mesh_split(inner_rank + 1, mesh_, mapping).to_string();
}

std::optional<std::vector<std::optional<std::string>>> ShardingTable::mapping(
    const std::string& name) const {
  auto it = mappings_.find(name);
  if (it == mappings_.end()) return std::nullopt;
  return it->second;
}

namespace {

// "data,fsdp" (a dim split over several axes, major first) -> {"data", "fsdp"}.
std::vector<std::string> split_axes(const std::string& axes) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (true) {
    const size_t comma = axes.find(',', begin);
    out.push_back(axes.substr(begin, comma - begin));
    if (comma == std::string::npos) return out;
    begin = comma + 1;
  }
}

}  // namespace

std::string ShardingTable::sharding_of(
    const std::vector<std::optional<std::string>>& mapping) const {
  compiler::DimsMapping dims;
  for (const auto& axis : mapping)
    dims.push_back(axis ? split_axes(*axis) : std::vector<std::string>{});
  return compiler::mesh_split(static_cast<int64_t>(mapping.size()), mesh_, dims).to_string();
}

std::optional<std::string> ShardingTable::sharding(const std::string& name) const {
  auto it = texts_.find(name);
  if (it == texts_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> ShardingTable::axis_of(const std::string& name, int64_t dim) const {
  auto m = mapping(name);
  if (!m || dim >= static_cast<int64_t>(m->size())) return std::nullopt;
  return (*m)[static_cast<size_t>(dim)];
}

std::optional<std::string> ShardingTable::kv_sharding(const std::string& name, size_t head_dim,
                                                      int64_t kv_heads) const {
  auto m = mapping(name);
  if (!m || kv_heads == heads_) return sharding(name);
  if (head_dim < m->size() && kv_heads % axis_size((*m)[head_dim]) != 0) (*m)[head_dim].reset();
  return sharding_of(*m);
}

std::optional<std::string> ShardingTable::kv_weight_sharding(int64_t kv_heads) const {
  if (auto given = sharding("attn_kv")) return given;
  return kv_sharding("attn_qkv", 1, kv_heads);
}

std::optional<std::string> ShardingTable::kv_activation_sharding(int64_t kv_heads) const {
  return kv_sharding("qkv", 2, kv_heads);
}

int64_t ShardingTable::axis_size(const std::optional<std::string>& axis) const {
  if (!axis) return 1;
  int64_t size = 1;
  for (const std::string& name : split_axes(*axis)) {
    auto index = mesh_.axis_index(name);
    size *= index ? mesh_.axes()[static_cast<size_t>(*index)].size : 1;
  }
  return size;
}

}  // namespace podsim::workloads
