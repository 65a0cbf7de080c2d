// Shardy (sdy dialect) shardings as XLA exports them into HLO text (xla.sdy.meshes,
// xla.sdy.sharding, xla.sdy.sharding_per_value), read as HloSharding-semantics Shardings by
// Shardy's sdy-to-HLO export rule: the mesh is iota(devices) over the axes, transposed to
// (dim axes..., unused axes) with the unused axes replicated.
// The syntax accepted: docs/compiler.md#shardy-shardings
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "compiler/sharding/sharding.h"

namespace podsim::compiler {

struct SdyMesh {
  std::vector<std::pair<std::string, int64_t>> axes;  // major to minor
  std::vector<int64_t> device_ids;                    // empty: iota
};
using SdyMeshes = std::map<std::string, SdyMesh, std::less<>>;

// "#sdy.mesh<[\"x\"=2, \"y\"=4]>" (also without the "#sdy." prefix).
SdyMesh parse_sdy_mesh(std::string_view text, const SourceLocation& where = {});
// The value of xla.sdy.meshes: "{mesh = #sdy.mesh<...>, other = #sdy.mesh<...>}".
SdyMeshes parse_sdy_meshes(std::string_view text, const SourceLocation& where = {});

struct SdySharding {
  Sharding sharding;
  // Open dims of each result leaf (the dims written "{...?}"), leaf order.
  std::vector<std::vector<int64_t>> open_dims;
  // Every dim of every leaf open and unsharded: no annotation at all.
  bool fully_open = false;
};
// "#sdy.sharding<...>" or "#sdy.sharding_per_value<[...]>".
SdySharding parse_sdy_sharding(std::string_view text, const SdyMeshes& meshes,
                               const SourceLocation& where = {});

// The value of `key` in a verbatim frontend_attributes={...} text, in
// either form XLA prints: quoted and C-escaped (quotes removed, escapes
// undone), or unquoted when the value is itself a brace dictionary
// ({mesh = #sdy.mesh<["x"=4]>}, kept whole). nullopt when absent.
std::optional<std::string> frontend_attribute(std::string_view attributes, std::string_view key);

// The sharding an instruction's frontend attributes give (xla.sdy.sharding,
// else mhlo.sharding); nullopt when none.
std::optional<SdySharding> sharding_from_frontend_attributes(std::string_view attributes,
                                                             const SdyMeshes& meshes,
                                                             const SourceLocation& where = {});

// Custom-call targets that are sharding annotations of their operand:
// "Sharding" and Shardy's xla.sdy.ShardingConstraint / xla.sdy.FuncResultSharding.
bool is_sharding_custom_call_target(std::string_view target);

}  // namespace podsim::compiler
