// How an op's operand dims correspond to its result dims, once per op family
// (dot, convolution, gather, scatter): sharding propagation
// (propagation/op_rules.cc) and the partitioner (spmd/dot_strategies.cc,
// spmd/gather_scatter_handlers.cc) both read these maps. Derivations:
// docs/reference/gspmd.md#operand-and-result-dims.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler {

// The role of one joint dim ("label") of a dot-like op. kWindowed: a
// convolution spatial dim whose window is real (neither einsum role).
enum class LabelKind : uint8_t { kBatch, kContracting, kLhsFree, kRhsFree, kWindowed };
enum class EinsumSide : uint8_t { kLhs, kRhs, kOut };

// One label: its dim in lhs, rhs and result (-1 when the tensor lacks it).
struct DimLabel {
  LabelKind kind = LabelKind::kBatch;
  int64_t lhs = -1, rhs = -1, out = -1;
  int64_t dim(EinsumSide side) const {
    return side == EinsumSide::kLhs ? lhs : side == EinsumSide::kRhs ? rhs : out;
  }
  bool operator==(const DimLabel&) const = default;
};

// The labels of `kinds` present on both sides, as a correspondence from
// `from`'s dims to `to`'s (a tensor of rank `to_rank`), in label order.
DimCorrespondence correspondence(const std::vector<DimLabel>& labels,
                                 std::initializer_list<LabelKind> kinds, EinsumSide from,
                                 EinsumSide to, int64_t to_rank);

// Dot (XLA DotGeneral): batch labels, contracting labels, lhs free, rhs free
// (each in dim order); result dims are [batch..., lhs free..., rhs free...].
// Ranks only: a sparse dot's stored operand has its logical operand's rank.
std::vector<DimLabel> dot_labels(const DotDims& dot, int64_t lhs_rank, int64_t rhs_rank);

// Convolution (lhs = input, rhs = kernel), three views:
//  * features: the non-spatial dims with spatial dims whole. Ungrouped:
//    input feature / kernel input feature contracting, input batch lhs-free,
//    kernel output feature / output feature rhs-free. Feature-grouped: one
//    batch-like group label over input feature, kernel output feature and
//    output feature, then input batch lhs-free.
//  * spatial: spatial dims read as einsum labels by their window (batch,
//    lhs-free, rhs-free, else windowed; a size-1 output dim only when it is
//    one of the first three), in spatial order.
//  * windowed: the output tiled like the input: the batch dim (lhs-free,
//    absent with batch groups), then spatial dims of output size > 1
//    (windowed, with their kernel dim).
struct ConvLabels {
  std::vector<DimLabel> features, spatial, windowed;
  bool ungrouped = true;  // feature_group_count == batch_group_count == 1
  bool dot_like =
      false;  // ungrouped and every window trivial (size 1, no stride/pad/dilation/reversal)
};
ConvLabels conv_labels(const Instruction& conv, const Shape& lhs);

// Gather: operand dims taken whole (not collapsed or batching, slice size =
// dim size) <-> their output offset dims; indices batch dims (all but
// index_vector_dim) <-> output batch dims (those not offset), in order.
struct GatherDimMap {
  std::vector<int64_t> operand_passthrough, out_passthrough;
  std::vector<int64_t> index_batch, out_batch;
};
GatherDimMap gather_dim_map(const Instruction& gather, const Shape& operand, const Shape& indices);

// Scatter: operand dims whole in the update window (not inserted or batching,
// update extent = dim size) <-> their update window dims; indices batch dims
// <-> update scatter dims (those not window), in order; `unit_window`: the
// scattered-into operand dims whose window extent is 1.
struct ScatterDimMap {
  std::vector<int64_t> operand_passthrough, update_passthrough;
  std::vector<int64_t> index_batch, update_scatter;
  std::vector<int64_t> unit_window;
};
ScatterDimMap scatter_dim_map(const Instruction& scatter, const Shape& operand,
                              const Shape& indices, const Shape& updates);

// Index-parallel dims of a gather / scatter in `comp`: operand dims that an
// indices batch dim walks in step (pairwise): the explicit batching dims,
// then index components that are an iota along an indices batch dim over a
// collapsed / inserted operand dim of the same size.
struct IndexParallelDims {
  std::vector<int64_t> operand, indices;
};
IndexParallelDims gather_parallel_dims(const Computation& comp, const Instruction& gather,
                                       const Shape& operand);
IndexParallelDims scatter_parallel_dims(const Computation& comp, const Instruction& scatter,
                                        const Shape& operand);

// Indices batch dims `dims` -> the output (gather) or update (scatter) dims
// at the same positions: `to_order` is out_batch or update_scatter,
// `from_order` index_batch.
std::vector<int64_t> map_index_batch_dims(const std::vector<int64_t>& dims,
                                          const std::vector<int64_t>& from_order,
                                          const std::vector<int64_t>& to_order);

// Dims of [0, rank) not in `used`, ascending.
std::vector<int64_t> complement_dims(int64_t rank, const std::vector<int64_t>& used);

}  // namespace podsim::compiler
