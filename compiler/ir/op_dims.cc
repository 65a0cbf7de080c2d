// Operand <-> result dim maps per op family (see op_dims.h).
#include "compiler/ir/op_dims.h"

#include <algorithm>

namespace podsim::compiler {
namespace {

using Dims = std::vector<int64_t>;

bool contains(const Dims& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Indices dims other than index_vector_dim, in order.
Dims index_batch_dims(const Shape& indices, int64_t index_vector_dim) {
  Dims out;
  for (int64_t i = 0; i < indices.rank(); ++i)
    if (i != index_vector_dim) out.push_back(i);
  return out;
}

bool trivial_window(const WindowDim& w) {
  return w.size == 1 && w.stride == 1 && w.pad_low == 0 && w.pad_high == 0 &&
         w.base_dilation == 1 && w.window_dilation == 1 && !w.reversal;
}

// The role of convolution spatial dim i (output size > 1) by its window:
// batch when lhs dilation = window = input size with stride or window
// dilation one less; lhs-free when window 1 and output = input; rhs-free when
// the input has size 1 and the window (full padding, reversed) = output.
LabelKind spatial_kind(const WindowDim& w, int64_t in_size, int64_t out_size) {
  const bool unpadded = w.pad_low == 0 && w.pad_high == 0;
  const int64_t step = std::max<int64_t>(1, in_size - 1);
  if (in_size == w.size && w.base_dilation == in_size && unpadded && !w.reversal &&
      ((w.stride == step && w.window_dilation == 1) ||
       (w.window_dilation == step && w.stride == 1)))
    return LabelKind::kBatch;
  if (w.size == 1 && in_size == out_size && w.stride == 1 && unpadded && w.base_dilation == 1 &&
      w.window_dilation == 1 && !w.reversal)
    return LabelKind::kLhsFree;
  if (in_size == 1 && w.size == out_size && w.stride == 1 && w.pad_low == w.size - 1 &&
      w.pad_high == w.size - 1 && w.reversal && w.base_dilation == 1 && w.window_dilation == 1)
    return LabelKind::kRhsFree;
  return LabelKind::kWindowed;
}

// Index-parallel dims: explicit batching dims, then iota index components
// (the indices are an iota, or a concatenate of iotas along the index vector
// dim) over a collapsed / inserted operand dim of the same size.
IndexParallelDims index_parallel_dims(const Computation& comp, InstrId indices_id,
                                      int64_t index_vector_dim, const Dims& index_map,
                                      const Dims& unit_operand_dims, const Shape& operand,
                                      const Dims& operand_batching, const Dims& indices_batching) {
  IndexParallelDims p{operand_batching, indices_batching};
  const Instruction& indices = comp.instr(indices_id);
  const int64_t rank = indices.shape.rank();
  // The iota dimension of each index component, -1 when not an iota.
  Dims component_iota;
  auto add_part = [&](const Instruction& part) {
    const int64_t n =
        index_vector_dim < rank ? part.shape.dim(static_cast<int>(index_vector_dim)) : 1;
    const bool iota =
        part.opcode == Opcode::kIota && (n == 1) && part.attrs.iota_dimension != index_vector_dim;
    for (int64_t c = 0; c < n; ++c) component_iota.push_back(iota ? part.attrs.iota_dimension : -1);
  };
  if (indices.opcode == Opcode::kConcatenate && index_vector_dim < rank &&
      indices.attrs.dimensions.size() == 1 && indices.attrs.dimensions[0] == index_vector_dim) {
    for (InstrId part : indices.operands) add_part(comp.instr(part));
  } else {
    add_part(indices);
  }
  if (component_iota.size() != index_map.size()) return p;
  for (size_t c = 0; c < index_map.size(); ++c) {
    const int64_t d = component_iota[c], od = index_map[c];
    if (d < 0 || !contains(unit_operand_dims, od) || contains(p.operand, od) ||
        contains(p.indices, d))
      continue;
    if (operand.dim(static_cast<int>(od)) != indices.shape.dim(static_cast<int>(d))) continue;
    p.operand.push_back(od);
    p.indices.push_back(d);
  }
  return p;
}

}  // namespace

std::vector<int64_t> complement_dims(int64_t rank, const std::vector<int64_t>& used) {
  Dims out;
  for (int64_t i = 0; i < rank; ++i)
    if (!contains(used, i)) out.push_back(i);
  return out;
}

DimCorrespondence correspondence(const std::vector<DimLabel>& labels,
                                 std::initializer_list<LabelKind> kinds, EinsumSide from,
                                 EinsumSide to, int64_t to_rank) {
  DimCorrespondence c;
  c.target_rank = to_rank;
  for (const DimLabel& label : labels) {
    if (std::find(kinds.begin(), kinds.end(), label.kind) == kinds.end()) continue;
    if (label.dim(from) < 0 || label.dim(to) < 0) continue;
    c.source_dims.push_back(label.dim(from));
    c.target_dims.push_back(label.dim(to));
  }
  return c;
}

std::vector<DimLabel> dot_labels(const DotDims& d, int64_t lhs_rank, int64_t rhs_rank) {
  std::vector<DimLabel> labels;
  int64_t out = 0;
  for (size_t i = 0; i < d.lhs_batch.size() && i < d.rhs_batch.size(); ++i)
    labels.push_back({LabelKind::kBatch, d.lhs_batch[i], d.rhs_batch[i], out++});
  for (size_t i = 0; i < d.lhs_contracting.size() && i < d.rhs_contracting.size(); ++i)
    labels.push_back({LabelKind::kContracting, d.lhs_contracting[i], d.rhs_contracting[i], -1});
  Dims lhs_used = d.lhs_batch, rhs_used = d.rhs_batch;
  lhs_used.insert(lhs_used.end(), d.lhs_contracting.begin(), d.lhs_contracting.end());
  rhs_used.insert(rhs_used.end(), d.rhs_contracting.begin(), d.rhs_contracting.end());
  for (int64_t l : complement_dims(lhs_rank, lhs_used))
    labels.push_back({LabelKind::kLhsFree, l, -1, out++});
  for (int64_t r : complement_dims(rhs_rank, rhs_used))
    labels.push_back({LabelKind::kRhsFree, -1, r, out++});
  return labels;
}

ConvLabels conv_labels(const Instruction& conv, const Shape& lhs) {
  const ConvDims& c = conv.attrs.conv;
  ConvLabels l;
  l.ungrouped = conv.attrs.feature_group_count == 1 && conv.attrs.batch_group_count == 1;
  l.dot_like = l.ungrouped &&
               std::all_of(conv.attrs.window.begin(), conv.attrs.window.end(), trivial_window);
  const DimLabel batch{LabelKind::kLhsFree, c.input_batch, -1, c.output_batch};
  if (conv.attrs.feature_group_count > 1)
    l.features = {
        DimLabel{LabelKind::kBatch, c.input_feature, c.kernel_output_feature, c.output_feature},
        batch};
  else
    l.features = {DimLabel{LabelKind::kContracting, c.input_feature, c.kernel_input_feature, -1},
                  batch,
                  DimLabel{LabelKind::kRhsFree, -1, c.kernel_output_feature, c.output_feature}};
  if (conv.attrs.batch_group_count == 1) l.windowed.push_back(batch);
  for (size_t i = 0; i < c.input_spatial.size(); ++i) {
    const int64_t out_size = conv.shape.dim(static_cast<int>(c.output_spatial[i]));
    const int64_t kernel = i < c.kernel_spatial.size() ? c.kernel_spatial[i] : -1;
    const int64_t in_size = lhs.dim(static_cast<int>(c.input_spatial[i]));
    const bool has_window = i < conv.attrs.window.size();
    const LabelKind kind =
        has_window ? spatial_kind(conv.attrs.window[i], in_size, out_size) : LabelKind::kWindowed;
    // Output size 1: a window over the whole input (a contraction) carries
    // nothing; a size-1 dim read as an einsum label (XLA reads it so) is one.
    if (out_size == 1 && kind == LabelKind::kWindowed) continue;
    if (out_size > 1)
      l.windowed.push_back({LabelKind::kWindowed, c.input_spatial[i], kernel, c.output_spatial[i]});
    if (!has_window) continue;
    switch (kind) {
      case LabelKind::kBatch:
        l.spatial.push_back({LabelKind::kBatch, c.input_spatial[i], kernel, c.output_spatial[i]});
        break;
      case LabelKind::kLhsFree:
        l.spatial.push_back({LabelKind::kLhsFree, c.input_spatial[i], -1, c.output_spatial[i]});
        break;
      case LabelKind::kRhsFree:
        l.spatial.push_back({LabelKind::kRhsFree, -1, kernel, c.output_spatial[i]});
        break;
      default:
        l.spatial.push_back(
            {LabelKind::kWindowed, c.input_spatial[i], kernel, c.output_spatial[i]});
        break;
    }
  }
  return l;
}

GatherDimMap gather_dim_map(const Instruction& g, const Shape& operand, const Shape& indices) {
  const GatherDims& gd = g.attrs.gather;
  GatherDimMap m;
  size_t offset_index = 0;
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (contains(gd.collapsed_slice_dims, i) || contains(gd.operand_batching_dims, i)) continue;
    if (offset_index >= gd.offset_dims.size()) break;
    const int64_t out_dim = gd.offset_dims[offset_index++];
    if (g.attrs.gather_slice_sizes[static_cast<size_t>(i)] == operand.dim(static_cast<int>(i))) {
      m.operand_passthrough.push_back(i);
      m.out_passthrough.push_back(out_dim);
    }
  }
  m.index_batch = index_batch_dims(indices, gd.index_vector_dim);
  m.out_batch = complement_dims(g.shape.rank(), gd.offset_dims);
  return m;
}

ScatterDimMap scatter_dim_map(const Instruction& s, const Shape& operand, const Shape& indices,
                              const Shape& updates) {
  const ScatterDims& sd = s.attrs.scatter;
  ScatterDimMap m;
  Dims window;  // operand dims of the update window, in update_window_dims order
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (contains(sd.inserted_window_dims, i) || contains(sd.input_batching_dims, i)) continue;
    if (window.size() >= sd.update_window_dims.size()) break;
    const int64_t ud = sd.update_window_dims[window.size()];
    window.push_back(i);
    if (updates.dim(static_cast<int>(ud)) == operand.dim(static_cast<int>(i))) {
      m.operand_passthrough.push_back(i);
      m.update_passthrough.push_back(ud);
    }
  }
  m.index_batch = index_batch_dims(indices, sd.index_vector_dim);
  m.update_scatter = complement_dims(updates.rank(), sd.update_window_dims);
  for (int64_t d : sd.scatter_dims_to_operand_dims) {
    const auto it = std::find(window.begin(), window.end(), d);
    const int64_t extent =
        it == window.end() ? 1
                           : updates.dim(static_cast<int>(
                                 sd.update_window_dims[static_cast<size_t>(it - window.begin())]));
    if (extent == 1) m.unit_window.push_back(d);
  }
  return m;
}

IndexParallelDims gather_parallel_dims(const Computation& comp, const Instruction& g,
                                       const Shape& operand) {
  const GatherDims& gd = g.attrs.gather;
  return index_parallel_dims(comp, g.operand(1), gd.index_vector_dim, gd.start_index_map,
                             gd.collapsed_slice_dims, operand, gd.operand_batching_dims,
                             gd.start_indices_batching_dims);
}

IndexParallelDims scatter_parallel_dims(const Computation& comp, const Instruction& s,
                                        const Shape& operand) {
  const ScatterDims& sd = s.attrs.scatter;
  return index_parallel_dims(comp, s.operand((s.operand_count() - 1) / 2), sd.index_vector_dim,
                             sd.scatter_dims_to_operand_dims, sd.inserted_window_dims, operand,
                             sd.input_batching_dims, sd.scatter_indices_batching_dims);
}

std::vector<int64_t> map_index_batch_dims(const std::vector<int64_t>& dims,
                                          const std::vector<int64_t>& from_order,
                                          const std::vector<int64_t>& to_order) {
  Dims out;
  for (int64_t d : dims) {
    const auto it = std::find(from_order.begin(), from_order.end(), d);
    out.push_back(to_order[static_cast<size_t>(it - from_order.begin())]);
  }
  return out;
}

}  // namespace podsim::compiler
