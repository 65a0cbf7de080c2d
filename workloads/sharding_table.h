// The workload's `sharding:` section checked against the tensor names the
// model builders know, turned into mesh_split shardings (XLA text) per name.
//
// Known names and their dims (Lingvo DenseBuilder names,
// docs/reference/measurements.md#dense-transformer-2-d-sharding):
//   activations (B,L,M)  layer inputs/outputs        ffn_in   (M,H)
//   ffn_out     (H,M)                                attn_qkv (M,N,D)
//   attn_out    (N,D,M)                              embedding (V,M)
//   qkv         (B,L,N,D) Q/K/V projections          ffn_hidden (B,L,H)
//   logits      (B,L,V)                              experts  (E) the MoE expert dim
//   attn_kv     (M,K,D) wk, wv with model.kv_heads = K (default: attn_qkv's
//               mapping, the head axis dropped when it does not divide K)
//   stage       (S) the pipeline stage dim of stage-stacked weights and the
//               pipeline state (training.pipeline_stages > 1); its mesh axis
//               may shard no other tensor
// Derived (no YAML name): layer-norm scales (M) follow activations' M dim;
// the learned position table (L,M) follows activations' (L, M) dims; the K/V
// activations (B,T,K,D) follow qkv, the head axis dropped when it does not
// divide K.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/sharding/mesh.h"
#include "workloads/workload.h"

namespace podsim::workloads {

struct KnownShardingName {
  std::string name;
  std::string dims;  // one letter per tensor dim, e.g. "BLM"
};

// The names above, in documentation order.
const std::vector<KnownShardingName>& known_sharding_names();

class ShardingTable {
 public:
  // Checks every entry of workload.sharding: a known name (UserError with the
  // known names as hint otherwise) whose list has the tensor's rank.
  ShardingTable(const Workload& workload, const compiler::DeviceMesh& mesh);

  // Per-dim mesh axis of a named tensor, nullopt when the YAML leaves it out.
  std::optional<std::vector<std::optional<std::string>>> mapping(const std::string& name) const;
  // The XLA sharding text of a named tensor, nullopt when not given.
  std::optional<std::string> sharding(const std::string& name) const;
  // The XLA sharding text of an arbitrary mapping over the mesh.
  std::string sharding_of(const std::vector<std::optional<std::string>>& mapping) const;
  // The mesh axis of one dim of a named tensor (nullopt: not given/unsharded).
  std::optional<std::string> axis_of(const std::string& name, int64_t dim) const;
  // Sharding of a stage-stacked tensor [S, ...]: the stage dim over the
  // `stage` axis, the other dims as `inner` (a text this table made for the
  // unstacked rank-`inner_rank` tensor; nullopt = unsharded). nullopt when
  // neither is given.
  std::optional<std::string> stacked_sharding(const std::optional<std::string>& inner,
                                              int64_t inner_rank) const;
  // Size of a mesh axis (1 for nullopt).
  int64_t axis_size(const std::optional<std::string>& axis) const;
  // wk / wv (M, K, D) for `kv_heads` K/V heads: `attn_kv` when given, else
  // attn_qkv's; K/V activations (B, T, K, D): qkv's. With K < heads a
  // derived mapping keeps its head axis only when that axis divides K.
  std::optional<std::string> kv_weight_sharding(int64_t kv_heads) const;
  std::optional<std::string> kv_activation_sharding(int64_t kv_heads) const;

 private:
  // `name`'s sharding with dim `head_dim`'s axis dropped unless it divides
  // kv_heads (unchanged when kv_heads = heads).
  std::optional<std::string> kv_sharding(const std::string& name, size_t head_dim,
                                         int64_t kv_heads) const;

  const compiler::DeviceMesh& mesh_;
  int64_t heads_ = 0;  // model.heads
  std::map<std::string, std::vector<std::optional<std::string>>> mappings_;
  std::map<std::string, std::string> texts_;  // mesh_split text per given name, computed once
};

}  // namespace podsim::workloads
