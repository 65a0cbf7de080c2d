// Gather and scatter with full XLA semantics: index_vector_dim (implicit when
// equal to the indices rank), collapsed / inserted window dims, operand and
// indices batching dims. Gather clamps each slice start into range; scatter
// skips an update element whose whole window would leave the operand.
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "compiler/interpreter/local_ops.h"

namespace podsim::compiler::interp {

namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

int64_t position_of(const std::vector<int64_t>& v, int64_t x) {
  return static_cast<int64_t>(std::find(v.begin(), v.end(), x) - v.begin());
}

// Reads index vectors out of the start/scatter indices array. The indices'
// "batch" dims are all dims except index_vector_dim, in order.
class IndexVectors {
 public:
  IndexVectors(const Instruction& instr, const Literal& indices, int64_t index_vector_dim)
      : indices_(indices), index_vector_dim_(index_vector_dim) {
    const int rank = indices.shape().rank();
    if (indices.is_tuple() || index_vector_dim < 0 || index_vector_dim > rank)
      fail(instr, "index_vector_dim out of range");
    for (int64_t d = 0; d < rank; ++d)
      if (d != index_vector_dim) batch_dims_.push_back(d);
    vector_size_ =
        index_vector_dim == rank ? 1 : indices.shape().dim(static_cast<int>(index_vector_dim));
    strides_ = row_major_strides(indices.shape().dims());
  }
  const std::vector<int64_t>& batch_dims() const { return batch_dims_; }
  int64_t vector_size() const { return vector_size_; }
  int64_t batch_dim_size(size_t i) const {
    return indices_.shape().dim(static_cast<int>(batch_dims_[i]));
  }
  // Component k of the index vector at batch coordinates `batch`.
  int64_t component(const std::vector<int64_t>& batch, int64_t k) const {
    int64_t offset = 0;
    for (size_t i = 0; i < batch_dims_.size(); ++i)
      offset += batch[i] * strides_[static_cast<size_t>(batch_dims_[i])];
    if (index_vector_dim_ < indices_.shape().rank())
      offset += k * strides_[static_cast<size_t>(index_vector_dim_)];
    return static_cast<int64_t>(indices_.values()[static_cast<size_t>(offset)]);
  }

 private:
  const Literal& indices_;
  int64_t index_vector_dim_;
  std::vector<int64_t> batch_dims_;
  int64_t vector_size_ = 1;
  std::vector<int64_t> strides_;
};

// Operand dims that are neither collapsed/inserted nor batching, in order.
std::vector<int64_t> window_operand_dims(int rank, const std::vector<int64_t>& removed,
                                         const std::vector<int64_t>& batching) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (!contains(removed, d) && !contains(batching, d)) dims.push_back(d);
  return dims;
}

// Start of the window in the operand for the index vector at `batch`:
// index-mapped dims from the vector, batching dims from the batch coordinates.
struct StartMapping {
  const std::vector<int64_t>& index_to_operand;  // start_index_map / scatter_dims_to_operand_dims
  const std::vector<int64_t>& operand_batching;  // operand_batching_dims / input_batching_dims
  const std::vector<int64_t>&
      indices_batching;  // start_indices_batching_dims / scatter_indices_batching_dims
};

void window_start(const StartMapping& m, const IndexVectors& vectors,
                  const std::vector<int64_t>& batch, std::vector<int64_t>& start) {
  std::fill(start.begin(), start.end(), 0);
  for (size_t k = 0; k < m.index_to_operand.size(); ++k)
    start[static_cast<size_t>(m.index_to_operand[k])] =
        vectors.component(batch, static_cast<int64_t>(k));
  for (size_t i = 0; i < m.operand_batching.size(); ++i) {
    const int64_t pos = position_of(vectors.batch_dims(), m.indices_batching[i]);
    start[static_cast<size_t>(m.operand_batching[i])] = batch[static_cast<size_t>(pos)];
  }
}

void check_mapping(const Instruction& instr, const StartMapping& m, const IndexVectors& vectors,
                   const Shape& operand, const Shape& indices) {
  const int operand_rank = operand.rank();
  const int indices_rank = indices.rank();
  if (static_cast<int64_t>(m.index_to_operand.size()) != vectors.vector_size())
    fail(instr, "index vector size differs from the number of mapped operand dims");
  for (int64_t d : m.index_to_operand)
    if (d < 0 || d >= operand_rank) fail(instr, "mapped operand dim out of range");
  if (m.operand_batching.size() != m.indices_batching.size())
    fail(instr, "batching dims do not pair up");
  for (size_t i = 0; i < m.operand_batching.size(); ++i) {
    if (m.operand_batching[i] < 0 || m.operand_batching[i] >= operand_rank ||
        !contains(vectors.batch_dims(), m.indices_batching[i]) ||
        m.indices_batching[i] >= indices_rank)
      fail(instr, "batching dim out of range");
    if (operand.dim(static_cast<int>(m.operand_batching[i])) !=
        indices.dim(static_cast<int>(m.indices_batching[i])))
      fail(instr, "batching dim sizes differ between operand and indices");
  }
}

}  // namespace

Literal eval_gather(const Instruction& instr, const Literal& operand, const Literal& indices) {
  const GatherDims& g = instr.attrs.gather;
  const auto& slice_sizes = instr.attrs.gather_slice_sizes;
  const Shape& os = operand.shape();
  const int rank = os.rank();
  IndexVectors vectors(instr, indices, g.index_vector_dim);
  const StartMapping mapping{g.start_index_map, g.operand_batching_dims,
                             g.start_indices_batching_dims};
  check_mapping(instr, mapping, vectors, os, indices.shape());
  if (operand.is_tuple() || static_cast<int>(slice_sizes.size()) != rank)
    fail(instr, "slice_sizes rank differs");
  for (int d = 0; d < rank; ++d)
    if (slice_sizes[static_cast<size_t>(d)] < 0 || slice_sizes[static_cast<size_t>(d)] > os.dim(d))
      fail(instr, "slice size exceeds the operand");

  const auto window_dims =
      window_operand_dims(rank, g.collapsed_slice_dims, g.operand_batching_dims);
  const Shape& out = instr.shape;
  if (out.is_tuple() || window_dims.size() != g.offset_dims.size() ||
      out.rank() != static_cast<int>(g.offset_dims.size() + vectors.batch_dims().size()))
    fail(instr, "result rank does not match offset_dims and the indices");
  // Output dims that are not offset dims are the indices' batch dims, in order.
  std::vector<int64_t> out_batch_dims;
  for (int64_t d = 0; d < out.rank(); ++d)
    if (!contains(g.offset_dims, d)) out_batch_dims.push_back(d);
  for (size_t i = 0; i < out_batch_dims.size(); ++i)
    if (out.dim(static_cast<int>(out_batch_dims[i])) != vectors.batch_dim_size(i))
      fail(instr, "batch dim size mismatch");
  for (size_t j = 0; j < g.offset_dims.size(); ++j)
    if (g.offset_dims[j] < 0 || g.offset_dims[j] >= out.rank() ||
        out.dim(static_cast<int>(g.offset_dims[j])) !=
            slice_sizes[static_cast<size_t>(window_dims[j])])
      fail(instr, "offset dim size differs from the slice size");

  const auto op_strides = row_major_strides(os.dims());
  Literal result(out);
  std::vector<int64_t> batch(out_batch_dims.size()), start(static_cast<size_t>(rank));
  size_t k = 0;
  for_each_index(out.dims(), [&](const std::vector<int64_t>& idx) {
    for (size_t i = 0; i < out_batch_dims.size(); ++i)
      batch[i] = idx[static_cast<size_t>(out_batch_dims[i])];
    window_start(mapping, vectors, batch, start);
    for (int64_t d : g.start_index_map) {
      const auto ud = static_cast<size_t>(d);
      start[ud] = std::clamp<int64_t>(start[ud], 0, os.dim(static_cast<int>(d)) - slice_sizes[ud]);
    }
    int64_t offset = 0;
    for (size_t d = 0; d < start.size(); ++d) offset += start[d] * op_strides[d];
    for (size_t j = 0; j < window_dims.size(); ++j)
      offset += idx[static_cast<size_t>(g.offset_dims[j])] *
                op_strides[static_cast<size_t>(window_dims[j])];
    result.mutable_values()[k++] = operand.values()[static_cast<size_t>(offset)];
  });
  return result;
}

// Operands: N inputs, the scatter indices, N updates. Update element U has
// scatter coordinates U[update_scatter_dims] (the indices' batch dims) and
// window coordinates U[update_window_dims] (the operand's window dims).
Literal eval_scatter(const Instruction& instr, const Operands& operands, const OpContext& context) {
  if (operands.size() < 3 || operands.size() % 2 == 0)
    fail(instr, "needs N inputs, indices and N updates");
  const int n = static_cast<int>((operands.size() - 1) / 2);
  for (const Literal* op : operands)
    if (op->is_tuple()) fail(instr, "operands must be arrays");
  check_combiner(instr, context.module, instr.to_apply(), n);
  const ScalarFunction& combine = context.combiner(instr.to_apply());
  const ScatterDims& s = instr.attrs.scatter;
  const Literal& indices = *operands[static_cast<size_t>(n)];
  const Shape& os = operands[0]->shape();
  const Shape& us = operands[static_cast<size_t>(n + 1)]->shape();
  const int rank = os.rank();
  for (int r = 0; r < n; ++r) {
    if (operands[static_cast<size_t>(r)]->shape().dims() != os.dims() ||
        operands[static_cast<size_t>(n + 1 + r)]->shape().dims() != us.dims())
      fail(instr, "inputs or updates differ in shape");
  }
  IndexVectors vectors(instr, indices, s.index_vector_dim);
  const StartMapping mapping{s.scatter_dims_to_operand_dims, s.input_batching_dims,
                             s.scatter_indices_batching_dims};
  check_mapping(instr, mapping, vectors, os, indices.shape());
  const auto window_dims = window_operand_dims(rank, s.inserted_window_dims, s.input_batching_dims);
  if (window_dims.size() != s.update_window_dims.size() ||
      us.rank() != static_cast<int>(s.update_window_dims.size() + vectors.batch_dims().size()))
    fail(instr, "update rank does not match update_window_dims and the indices");
  std::vector<int64_t> update_scatter_dims;
  for (int64_t d = 0; d < us.rank(); ++d)
    if (!contains(s.update_window_dims, d)) update_scatter_dims.push_back(d);
  for (size_t i = 0; i < update_scatter_dims.size(); ++i)
    if (us.dim(static_cast<int>(update_scatter_dims[i])) != vectors.batch_dim_size(i))
      fail(instr, "update scatter dim size differs from the indices");
  std::vector<int64_t> window_size(static_cast<size_t>(rank), 1);
  for (size_t j = 0; j < window_dims.size(); ++j) {
    if (s.update_window_dims[j] < 0 || s.update_window_dims[j] >= us.rank())
      fail(instr, "update_window_dims out of range");
    window_size[static_cast<size_t>(window_dims[j])] =
        us.dim(static_cast<int>(s.update_window_dims[j]));
    if (window_size[static_cast<size_t>(window_dims[j])] > os.dim(static_cast<int>(window_dims[j])))
      fail(instr, "update window larger than the operand");
  }

  std::vector<Literal> results;
  for (int r = 0; r < n; ++r) results.push_back(*operands[static_cast<size_t>(r)]);
  const auto op_strides = row_major_strides(os.dims());
  std::vector<int64_t> batch(update_scatter_dims.size()), start(static_cast<size_t>(rank));
  std::vector<double> args(static_cast<size_t>(2 * n)), combined(static_cast<size_t>(n));
  size_t k = 0;
  for_each_index(us.dims(), [&](const std::vector<int64_t>& idx) {
    const size_t update_pos = k++;
    for (size_t i = 0; i < update_scatter_dims.size(); ++i)
      batch[i] = idx[static_cast<size_t>(update_scatter_dims[i])];
    window_start(mapping, vectors, batch, start);
    int64_t offset = 0;
    for (size_t d = 0; d < start.size(); ++d) {
      if (start[d] < 0 || start[d] + window_size[d] > os.dim(static_cast<int>(d)))
        return;  // window out of bounds
      offset += start[d] * op_strides[d];
    }
    for (size_t j = 0; j < window_dims.size(); ++j)
      offset += idx[static_cast<size_t>(s.update_window_dims[j])] *
                op_strides[static_cast<size_t>(window_dims[j])];
    const auto pos = static_cast<size_t>(offset);
    for (int r = 0; r < n; ++r) {
      args[static_cast<size_t>(r)] = results[static_cast<size_t>(r)].values()[pos];
      args[static_cast<size_t>(n + r)] =
          operands[static_cast<size_t>(n + 1 + r)]->values()[update_pos];
    }
    combine.apply(args.data(), combined.data());
    for (int r = 0; r < n; ++r)
      results[static_cast<size_t>(r)].mutable_values()[pos] = combined[static_cast<size_t>(r)];
  });
  if (!instr.shape.is_tuple()) return std::move(results[0]);
  return Literal::tuple(std::move(results));
}

}  // namespace podsim::compiler::interp
