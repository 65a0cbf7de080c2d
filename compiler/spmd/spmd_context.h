// State shared by the partitioner's reshard planner and op handlers: the
// builder of the new entry computation, the partition-id instruction, the
// device count, caches (partition offsets, reshards, reduction bodies) and the
// statistics. Also the small emitters every handler needs: per-dim partition
// offsets and tile coordinates (digit arithmetic on partition-id, no
// per-device tables for iota arrays), iota device groups along tile dims,
// and masking of uneven padding.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/module.h"
#include "compiler/ir/reducer_cache.h"
#include "compiler/sharding/sharding.h"
#include "compiler/sharding/tile_coordinates.h"
#include "compiler/spmd/partitioner.h"
#include "compiler/spmd/reshard_plan.h"

namespace podsim::compiler {

// One value of the original program as this device holds it: `id` in the new
// computation has the (padded) shard shape of `base_shape` under `sharding`.
struct PartitionedValue {
  InstrId id = kNoId;
  Shape base_shape;
  Sharding sharding;
};

class SpmdContext {
 public:
  SpmdContext(Module* module, int64_t num_devices);

  ComputationBuilder& builder() { return builder_; }
  Module& module() { return *module_; }
  int64_t num_devices() const { return num_devices_; }
  SpmdStats& stats() { return stats_; }
  const Shape& local_shape(InstrId id) const { return builder_.shape(id); }

  // s32 scalar: offset of this device's tile along `dim` (tile index times
  // the padded shard extent); a constant 0 when the dim is not sharded.
  InstrId partition_offset(const Sharding& sharding, std::span<const int64_t> base_dims,
                           int64_t dim);
  // s32 scalar: this device's tile coordinate along data dim `dim` of a
  // tiled sharding (digit arithmetic on partition-id for iota arrays, a
  // table indexed by partition-id otherwise).
  InstrId tile_coordinate(const Sharding& sharding, int64_t dim);
  // s32 scalar: coordinate(partition-id) of a digit function, as a few scalar
  // divide/remainder/multiply/add ops (cached per function).
  InstrId emit_digit_coordinate(const DigitPieces& pieces);
  // partition-id converted to s32 (cached).
  InstrId partition_id_s32();
  // See the free function groups_along_tile_dims.
  ReplicaGroups groups_along_tile_dims(const Sharding& sharding,
                                       std::span<const int64_t> tile_dims) const;
  // Replaces the padding of `dims` (positions >= the logical extent) of the
  // local value by `fill` (a scalar instruction). Even dims are skipped.
  InstrId mask_padding(const PartitionedValue& value, std::span<const int64_t> dims, InstrId fill);
  InstrId zero(DType dtype);
  // Scalar `op` computation over dtype in the new module (cached).
  CompId scalar_reducer(Opcode op, DType dtype);

  // Reshard cache: (new instruction, target sharding text) -> value.
  std::map<std::pair<InstrId, std::string>, PartitionedValue>& reshard_cache() {
    return reshard_cache_;
  }

  // Targets the value `id` (new instruction) was already resharded to.
  std::vector<Sharding> reshards_built(InstrId id) const;

  // Dots and convolutions of the computation being partitioned that read
  // each of its instructions (by source id; dot strategies spread a shared
  // operand reshard over them, dot_strategies.h DotShardings).
  void set_einsum_readers(std::vector<int64_t> readers) { einsum_readers_ = std::move(readers); }
  int64_t einsum_readers(InstrId source) const {
    return source >= 0 && static_cast<size_t>(source) < einsum_readers_.size()
               ? einsum_readers_[static_cast<size_t>(source)]
               : 1;
  }

  // Shared by the contexts of one partition_spmd run (the entry's and those
  // of while/call callees): the module being partitioned, read-only, and the
  // callees already replaced in module() by their partitioned form.
  struct Session {
    const Module* source = nullptr;
    std::set<CompId> partitioned_callees;
    SpmdOptions options;
    RelabeledPlanCache relabeled_plans;
  };
  void share_session_with(const SpmdContext& parent) { session_ = parent.session_; }
  void set_source_module(const Module* source) { session_->source = source; }
  const Module& source_module() const { return *session_->source; }
  std::set<CompId>& partitioned_callees() { return session_->partitioned_callees; }
  // The reshard plans cost collectives with the options' latency, so new
  // options start a new plan cache.
  void set_options(const SpmdOptions& options) {
    session_->options = options;
    session_->relabeled_plans = RelabeledPlanCache(options.collective_latency_bytes);
  }
  const SpmdOptions& options() const { return session_->options; }
  RelabeledPlanCache& relabeled_plans() { return session_->relabeled_plans; }

 private:
  Module* module_;
  int64_t num_devices_;
  ComputationBuilder builder_;
  InstrId partition_id_ = kNoId;
  InstrId partition_id_s32_ = kNoId;
  std::map<std::vector<std::pair<int64_t, int64_t>>, InstrId> coordinate_cache_;
  SpmdStats stats_;
  std::map<std::pair<InstrId, int64_t>, InstrId> offset_cache_;  // (coordinate, extent)
  std::map<std::pair<std::string, int64_t>, InstrId> coordinate_table_cache_;  // explicit arrays
  std::map<DType, InstrId> zero_cache_;
  ScalarReducerCache reducers_;
  std::map<std::pair<InstrId, std::string>, PartitionedValue> reshard_cache_;
  std::vector<int64_t> einsum_readers_;
  std::shared_ptr<Session> session_ = std::make_shared<Session>();
};

// Devices that share every tile coordinate except those of `tile_dims`,
// each group ordered by its (row-major) position along those dims: the
// groups of a collective over those tile dims. Iota form when one exists.
ReplicaGroups groups_along_tile_dims(const Sharding& sharding, std::span<const int64_t> tile_dims);

// Digit functions (tile_coordinates.h) of replica groups: .first gives a
// device's group, .second its position within the group. nullopt for
// explicit groups without an iota form.
std::optional<std::pair<DigitPieces, DigitPieces>> group_digit_pieces(const ReplicaGroups& groups,
                                                                      int64_t num_devices);

// Tile count of data dim `dim` (1 unless tiled).
int64_t tile_count(const Sharding& sharding, int64_t dim);
// Data dims with tile count > 1.
std::vector<int64_t> sharded_dims(const Sharding& sharding);

}  // namespace podsim::compiler
