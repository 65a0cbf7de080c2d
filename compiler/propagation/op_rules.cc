// Per-op sharding rules. Most rules are one "dimension correspondence":
// a list of (source dim -> target dim) pairs along which tiling is carried,
// every other source dim becoming partial replication and every other target
// dim unsharded; propagate_along_dims_and_replicate_others implements it
// (docs/reference/gspmd.md#sharding-algebra). The dot rule follows #dot-rule there;
// the dot, convolution, gather and scatter dims come from compiler/ir/op_dims.h.
#include "compiler/propagation/op_rules.h"

#include <algorithm>
#include <numeric>

#include "compiler/ir/flash_attention.h"
#include "compiler/ir/op_dims.h"
#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler::propagation {

namespace {

using Dims = std::vector<int64_t>;

Dims iota_dims(int64_t n) {
  Dims d(static_cast<size_t>(n));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

std::optional<Sharding> along(const Sharding& s, const Dims& src, const Dims& tgt,
                              int64_t tgt_rank) {
  if (!s.is_tiled()) {
    if (s.is_replicated() || s.is_manual()) return s;
    return std::nullopt;  // maximal: device placement does not spread
  }
  return propagate_along_dims_and_replicate_others(s, DimCorrespondence{src, tgt, tgt_rank});
}

std::optional<Sharding> along(const Sharding& s, const DimCorrespondence& c) {
  return along(s, c.source_dims, c.target_dims, c.target_rank);
}

// ---- dot, convolution ----------------------------------------------------

// From operand k's sharding to the dot output: batch -> batch, own free
// dims -> output; contracting dims become partial replication.
std::optional<Sharding> dot_forward_from(const Instruction& dot, const Shape& lhs, const Shape& rhs,
                                         int k, const Sharding& s) {
  const std::vector<DimLabel> labels = dot_labels(dot.attrs.dot, lhs.rank(), rhs.rank());
  const LabelKind free = k == 0 ? LabelKind::kLhsFree : LabelKind::kRhsFree;
  return along(s, correspondence(labels, {LabelKind::kBatch, free},
                                 k == 0 ? EinsumSide::kLhs : EinsumSide::kRhs, EinsumSide::kOut,
                                 dot.shape.rank()));
}

// A convolution's einsum labels: its non-spatial and its spatial dims.
std::vector<DimLabel> conv_einsum(const ConvLabels& c) {
  std::vector<DimLabel> labels = c.spatial;
  labels.insert(labels.end(), c.features.begin(), c.features.end());
  return labels;
}

Dims dims_of(const std::vector<DimLabel>& labels, LabelKind kind, EinsumSide side) {
  Dims out;
  for (const DimLabel& l : labels)
    if (l.kind == kind) out.push_back(l.dim(side));
  return out;
}

// True when `s` tiles any of `dims`.
bool tiles_any(const std::optional<Sharding>& s, const Dims& dims) {
  if (!s || !s->is_tiled()) return false;
  for (int64_t d : dims)
    if (d >= 0 && d < s->tiled_data_rank() && s->tile_assignment().dim(d) > 1) return true;
  return false;
}

Dims concat(Dims a, const Dims& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Index of the first leaf of tuple element `index`.
int64_t leaf_offset(const Shape& tuple, int64_t index) {
  int64_t n = 0;
  for (int64_t i = 0; i < index; ++i) n += tuple.tuple_shape(static_cast<int>(i)).leaf_count();
  return n;
}
// The leaves of a tuple sharding (a leaf sharding applies to every leaf).
std::vector<Sharding> leaves_of(const Sharding& s, const Shape& shape) {
  if (s.is_tuple()) return s.tuple_elements();
  return std::vector<Sharding>(static_cast<size_t>(shape.leaf_count()), s);
}
// Reads only the element's leaves (no copy of the whole tuple: a big tuple
// has one get-tuple-element user per element).
Sharding sub_sharding(const Sharding& s, const Shape& tuple, int64_t index) {
  const Shape& elem = tuple.tuple_shape(static_cast<int>(index));
  if (!s.is_tuple()) {
    if (!elem.is_tuple()) return s;
    return Sharding::tuple(std::vector<Sharding>(static_cast<size_t>(elem.leaf_count()), s));
  }
  const std::vector<Sharding>& leaves = s.tuple_elements();
  const int64_t first = leaf_offset(tuple, index);
  if (!elem.is_tuple()) return leaves[static_cast<size_t>(first)];
  std::vector<Sharding> part(leaves.begin() + first, leaves.begin() + first + elem.leaf_count());
  return Sharding::tuple(std::move(part));
}

// ---- custom-calls, sort ---------------------------------------------------

bool is_target(const Instruction& in, std::string_view target) {
  return in.opcode == Opcode::kCustomCall && in.attrs.custom_call_target == target;
}

// Manual-region boundaries: the two sides have different shapes and kinds of
// sharding (automatic vs manual); nothing is inferred across them.
bool is_manual_boundary(const Instruction& in) {
  return is_target(in, "SPMDFullToShardShape") || is_target(in, "SPMDShardToFullShape") ||
         is_target(in, "xla.sdy.GlobalToLocalShape") || is_target(in, "xla.sdy.LocalToGlobalShape");
}

// A manual conversion's converted dim: the one dim whose size differs
// between the automatic and the manual side; -1 if not exactly one.
int64_t converted_dim(const Shape& automatic, const Shape& manual) {
  if (!automatic.is_array() || !manual.is_array() || automatic.rank() != manual.rank()) return -1;
  int64_t found = -1;
  for (int64_t d = 0; d < automatic.rank(); ++d)
    if (automatic.dim(static_cast<int>(d)) != manual.dim(static_cast<int>(d))) {
      if (found >= 0) return -1;
      found = d;
    }
  return found;
}

// Fused attention (compiler/ir/flash_attention.h): only the batch and head
// dims carry, from a rank-`from` operand or result to a rank-`to` one (the
// [B, L, N, D] arrays and lse [B, N, L]); L, T and D are replicated.
bool is_flash_call(const Instruction& in) {
  return is_flash_attention(in) || is_flash_attention_bwd(in);
}

std::optional<Sharding> flash_batch_heads(const Sharding& s, int64_t from, int64_t to) {
  if (s.is_tuple()) return std::nullopt;
  const auto src = flash_batch_head_dims(from);
  const auto tgt = flash_batch_head_dims(to);
  return along(s, Dims(src.begin(), src.end()), Dims(tgt.begin(), tgt.end()), to);
}

// The call's tuple sharding from one array sharding of rank `from`.
std::optional<Sharding> flash_results(const Instruction& in, const Sharding& s, int64_t from) {
  std::vector<Sharding> leaves;
  for (const Shape& leaf : in.shape.tuple_shapes()) {
    std::optional<Sharding> mapped = flash_batch_heads(s, from, leaf.rank());
    if (!mapped) return std::nullopt;
    leaves.push_back(*mapped);
  }
  return Sharding::tuple(std::move(leaves));
}

// Shard barriers: ShardBarrierFrom keeps its operand's sharding from flowing
// to its users; ShardBarrierTo keeps its users' shardings from flowing to its
// operand. The other direction passes as through a copy.
bool blocks_forward(const Instruction& in) { return is_target(in, "ShardBarrierFrom"); }
bool blocks_backward(const Instruction& in) { return is_target(in, "ShardBarrierTo"); }

// An all-reduce with a channel id combines partitions: its operand is already
// a per-partition value, so no global sharding carries across it.
bool is_cross_partition_all_reduce(const Instruction& in) {
  return in.opcode == Opcode::kAllReduce && in.attrs.channel_id.has_value();
}

// Sorted dim of a sort-like op: TopK along the last dim, sort along its
// dimensions={d}; -1 for other ops.
int64_t sorted_dim(const Instruction& in, const Shape& operand) {
  if (in.opcode == Opcode::kTopK || is_target(in, "TopK")) return operand.rank() - 1;
  if (in.opcode == Opcode::kSort) return in.attrs.dimensions.empty() ? 0 : in.attrs.dimensions[0];
  return -1;
}

// XLA's IsSortOperandShardingMovable: `s` tiles the sorted dim of a rank >= 2
// value that has another untiled dim of size > 1 (the partitioner moves the
// sorted dim's tiles there).
bool sort_tiling_is_movable(const Sharding& s, const Shape& shape, int64_t dim) {
  if (!s.is_tiled() || shape.rank() < 2 || dim >= s.tiled_data_rank() ||
      s.tile_assignment().dim(dim) == 1)
    return false;
  for (int64_t d = 0; d < shape.rank(); ++d)
    if (d != dim && s.tile_assignment().dim(d) == 1 && shape.dim(static_cast<int>(d)) > 1)
      return true;
  return false;
}

// A leaf sharding with the sorted dim replicated (sort is local along the
// other dims only); nullopt for maximal.
std::optional<Sharding> without_sorted_dim(const Sharding& s, int64_t dim) {
  if (!s.is_tiled()) return s.is_maximal() ? std::nullopt : std::optional<Sharding>(s);
  if (dim < 0 || dim >= s.tiled_data_rank()) return std::nullopt;
  const int64_t dims[] = {dim};
  return partially_replicate_on_dims(s, dims);
}

}  // namespace

// Non-SPMD: a concatenate operand whose user tiles the concatenated dim
// takes only the tiles that hold its rows, over their devices (one tile: that
// device). XLA: tile size ceil(D / n); operand rows [o, o + d) live in tiles
// [o / size, ceil((o + d) / size)).
std::optional<Sharding> concat_operand_tiles(const Computation& comp, const Instruction& concat,
                                             int k, const Sharding& s) {
  const int64_t dim = concat.attrs.dimensions.empty() ? 0 : concat.attrs.dimensions[0];
  if (!s.is_tiled() || dim >= s.tiled_data_rank() || s.tile_assignment().dim(dim) == 1 ||
      !(s.subgroup_types().empty() || s.replicate_on_last_tile_dim()))
    return s;
  int64_t offset = 0;
  for (int i = 0; i < k; ++i)
    offset += comp.instr(concat.operand(i)).shape.dim(static_cast<int>(dim));
  const int64_t rows = comp.instr(concat.operand(k)).shape.dim(static_cast<int>(dim));
  const TileAssignment& ta = s.tile_assignment();
  const int64_t size = (concat.shape.dim(static_cast<int>(dim)) + ta.dim(dim) - 1) / ta.dim(dim);
  const int64_t first = offset / size;
  const int64_t last = std::min(ta.dim(dim), (offset + rows + size - 1) / size);
  std::vector<int64_t> dims = ta.dims();
  dims[static_cast<size_t>(dim)] = last - first;
  std::vector<int64_t> all = ta.to_vector(), kept;
  int64_t inner = 1;  // stride of `dim` in the row-major device array
  for (int64_t d = dim + 1; d < ta.rank(); ++d) inner *= ta.dim(d);
  for (size_t i = 0; i < all.size(); ++i) {
    const int64_t index = (static_cast<int64_t>(i) / inner) % ta.dim(dim);
    if (index >= first && index < last) kept.push_back(all[i]);
  }
  if (kept.size() == 1) return Sharding::maximal(kept[0]);
  TileAssignment tiles = TileAssignment::from_devices(std::move(dims), std::move(kept));
  return s.replicate_on_last_tile_dim() ? Sharding::partial_tile(std::move(tiles))
                                        : Sharding::tiled(std::move(tiles));
}

bool is_pass_through(Opcode op) {
  if (is_elementwise(op)) return true;
  switch (op) {
    case Opcode::kTranspose:
    case Opcode::kReshape:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kWhile:
    case Opcode::kCall:
    case Opcode::kConditional:
    case Opcode::kDynamicSlice:
    case Opcode::kCustomCall:
    case Opcode::kParameter:
    case Opcode::kBitcast:
    case Opcode::kBitcastConvert:
    case Opcode::kStochasticConvert:
    case Opcode::kOptimizationBarrier:
    case Opcode::kAddDependency:
      return true;
    default:
      return false;
  }
}

std::vector<Sharding> forward_candidates(const PropagationState& st, ValueRef r, int level) {
  const Instruction& in = st.instr(r);
  const Computation& comp = st.module().computation(r.comp);
  auto op_sharding = [&](int i) -> const std::optional<Sharding>& {
    return st.sharding({r.comp, in.operand(i)});
  };
  auto op_shape = [&](int i) -> const Shape& { return comp.instr(in.operand(i)).shape; };
  std::vector<Sharding> out;
  auto offer = [&](const std::optional<Sharding>& s) {
    if (s) out.push_back(*s);
  };
  if (level == 0 && !is_pass_through(in.opcode)) return out;
  if (st.provided(r) && in.operand_count() == 1 && op_sharding(0)) {
    // An annotated manual conversion refines its open dims from its operand,
    // the converted dim's tiles becoming the manual subgroup or back (XLA).
    const bool to_shard = is_target(in, "SPMDFullToShardShape");
    const int64_t d = to_shard                                ? converted_dim(op_shape(0), in.shape)
                      : is_target(in, "SPMDShardToFullShape") ? converted_dim(in.shape, op_shape(0))
                                                              : -1;
    if (d >= 0) {
      offer(to_shard ? data_dim_to_manual(*op_sharding(0), d)
                     : manual_to_data_dim(*op_sharding(0), d));
      return out;
    }
  }
  if (is_manual_boundary(in) || blocks_forward(in) || is_cross_partition_all_reduce(in)) return out;
  if (in.opcode == Opcode::kCopy && in.shape.is_tuple()) {  // copy of a whole tuple
    offer(op_sharding(0));
    return out;
  }

  if (is_flash_call(in) && in.shape.is_tuple()) {
    // Each operand's batch and head tiling, to every result leaf; a tiled
    // leaf (from a user) to its siblings.
    for (int i = 0; i < in.operand_count(); ++i)
      if (op_sharding(i) && op_shape(i).is_array())
        if (auto s = flash_results(in, *op_sharding(i), op_shape(i).rank())) out.push_back(*s);
    if (const std::optional<Sharding>& own = st.sharding(r); own && own->is_tuple())
      for (size_t k = 0; k < own->tuple_elements().size(); ++k)
        if (own->tuple_elements()[k].is_tiled())
          if (auto s = flash_results(in, own->tuple_elements()[k],
                                     in.shape.tuple_shape(static_cast<int>(k)).rank()))
            out.push_back(*s);
    return out;
  }

  if (const int64_t dim = in.operand_count() > 0 ? sorted_dim(in, op_shape(0)) : -1; dim >= 0) {
    // Sort / TopK: each operand's tiling of the unsorted dims, to every leaf.
    for (int i = 0; i < in.operand_count(); ++i) {
      if (!op_sharding(i) || op_sharding(i)->is_tuple()) continue;
      // A sort keeps a tiling of its sorted dim when it can be moved (XLA).
      std::optional<Sharding> s =
          in.opcode == Opcode::kSort && sort_tiling_is_movable(*op_sharding(i), op_shape(i), dim)
              ? *op_sharding(i)
              : without_sorted_dim(*op_sharding(i), dim);
      if (!s) continue;
      if (in.shape.is_tuple())
        s = Sharding::tuple(std::vector<Sharding>(static_cast<size_t>(in.shape.leaf_count()), *s));
      out.push_back(*s);
    }
    // The results (values and indices) share one shape: a tiled leaf (from
    // a user) is offered to its siblings.
    if (const std::optional<Sharding>& own = st.sharding(r); own && own->is_tuple())
      for (const Sharding& leaf : own->tuple_elements())
        if (leaf.is_tiled())
          out.push_back(Sharding::tuple(std::vector<Sharding>(own->tuple_elements().size(), leaf)));
    return out;
  }

  if (is_elementwise(in.opcode) || in.opcode == Opcode::kAllReduce ||
      in.opcode == Opcode::kStochasticConvert || in.opcode == Opcode::kBitcastConvert ||
      (in.opcode == Opcode::kCustomCall && in.shape.is_array())) {
    // Operands of the result's dims (scalar select predicates / clamp bounds
    // carry nothing). Level 0: only the most specific; later: each, to merge.
    std::vector<Sharding> cands;
    for (int i = 0; i < in.operand_count(); ++i)
      if (op_sharding(i) && op_shape(i).is_array() && op_shape(i).dims() == in.shape.dims())
        cands.push_back(*op_sharding(i));
    if (level == 0 && cands.size() > 1) {
      size_t best = 0;
      for (size_t i = 1; i < cands.size(); ++i)
        if (is_more_specific(cands[i], cands[best])) best = i;
      return {cands[best]};
    }
    return cands;
  }

  switch (in.opcode) {
    case Opcode::kParameter: {
      // Parameters of called computations: from the caller's operand (while
      // parameters are handled by the control-flow group).
      const auto& site = st.caller(r.comp);
      if (!site) return out;
      const Instruction& call = st.module().computation(site->comp).instr(site->instr);
      if (call.opcode == Opcode::kConditional) {
        // Branch b's only parameter is the conditional's operand b + 1.
        const auto branch = std::find(call.called.begin(), call.called.end(), r.comp);
        const int operand = static_cast<int>(branch - call.called.begin()) + 1;
        if (branch != call.called.end() && operand < call.operand_count())
          offer(st.sharding({site->comp, call.operand(operand)}));
        return out;
      }
      if (call.opcode != Opcode::kCall) return out;
      offer(st.sharding({site->comp, call.operand(static_cast<int>(in.attrs.parameter_number))}));
      return out;
    }
    case Opcode::kBroadcast: {
      if (level < 3 || !op_sharding(0) || op_sharding(0)->is_replicated()) return out;
      offer(along(*op_sharding(0), iota_dims(op_shape(0).rank()), in.attrs.dimensions,
                  in.shape.rank()));
      return out;
    }
    case Opcode::kReduce: {
      const int n = in.operand_count() / 2;
      Dims kept = complement_dims(op_shape(0).rank(), in.attrs.dimensions);
      for (int i = 0; i < n; ++i) {
        if (!op_sharding(i)) continue;
        std::optional<Sharding> s =
            along(*op_sharding(i), kept, iota_dims(static_cast<int64_t>(kept.size())),
                  static_cast<int64_t>(kept.size()));
        // Non-SPMD: a reduce over a tiled dim is replicated (no partial replication).
        if (!st.is_spmd() && tiles_any(op_sharding(i), in.attrs.dimensions))
          s = Sharding::replicated();
        if (!s) continue;
        if (in.shape.is_tuple())
          s = Sharding::tuple(std::vector<Sharding>(static_cast<size_t>(n), *s));
        out.push_back(*s);
      }
      return out;
    }
    case Opcode::kTranspose:
      if (op_sharding(0))
        offer(op_sharding(0)->is_tiled() ? transpose_sharding(*op_sharding(0), in.attrs.dimensions)
                                         : *op_sharding(0));
      return out;
    case Opcode::kReshape:
    case Opcode::kBitcast: {
      if (!op_sharding(0) || !op_shape(0).is_array() || !in.shape.is_array()) return out;
      const Sharding& s = *op_sharding(0);
      if (!s.is_tiled()) return {s};
      out.push_back(propagate_through_reshape(op_shape(0).dims(), in.shape.dims(), s));
      return out;
    }
    case Opcode::kOptimizationBarrier:
    case Opcode::kAddDependency:
      offer(op_sharding(0));
      return out;
    case Opcode::kSlice:
    case Opcode::kPad:
      offer(op_sharding(0));
      return out;
    case Opcode::kReduceWindow: {
      for (const auto& w : in.attrs.window)
        if (w.base_dilation != 1 || w.window_dilation != 1) return out;
      if (!in.shape.is_tuple()) {
        offer(op_sharding(0));
        return out;
      }
      // Variadic: input i gives result leaf i (the init values follow the inputs).
      std::vector<Sharding> leaves;
      for (int i = 0; i < in.operand_count() / 2; ++i) {
        if (!op_sharding(i) || op_sharding(i)->is_tuple()) return out;
        leaves.push_back(*op_sharding(i));
      }
      if (static_cast<int64_t>(leaves.size()) == in.shape.leaf_count())
        out.push_back(Sharding::tuple(std::move(leaves)));
      return out;
    }
    case Opcode::kReverse:
      if (op_sharding(0))
        offer(op_sharding(0)->is_tiled() ? reverse_sharding(*op_sharding(0), in.attrs.dimensions)
                                         : *op_sharding(0));
      return out;
    case Opcode::kConcatenate: {
      std::vector<Sharding> cands;
      for (int i = 0; i < in.operand_count(); ++i) {
        if (!op_sharding(i)) continue;
        const Sharding& s = *op_sharding(i);
        // Level 0: not through a sharded concat dim.
        if (level == 0 && s.is_tiled() && s.tile_assignment().dim(in.attrs.dimensions[0]) > 1)
          continue;
        cands.push_back(s);
      }
      return cands;
    }
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice: {
      // Unsliced dims pass their tiling through; sliced (updated) dims
      // become replicated (the slice position is dynamic).
      auto sliced_dims = [&](const Shape& part) {
        Dims d;
        for (int64_t i = 0; i < in.shape.rank(); ++i)
          if (part.dim(static_cast<int>(i)) !=
              (in.opcode == Opcode::kDynamicSlice ? op_shape(0) : in.shape)
                  .dim(static_cast<int>(i)))
            d.push_back(i);
        return d;
      };
      if (op_sharding(0)) {
        const Sharding& s = *op_sharding(0);
        offer(s.is_tiled() && in.opcode == Opcode::kDynamicSlice
                  ? partially_replicate_on_dims(s, sliced_dims(in.shape))
                  : s);
      }
      if (in.opcode == Opcode::kDynamicUpdateSlice && op_sharding(1)) {
        const Sharding& u = *op_sharding(1);
        offer(u.is_tiled() ? partially_replicate_on_dims(u, sliced_dims(op_shape(1))) : u);
      }
      return out;
    }
    case Opcode::kDot: {
      const Shape& lhs = op_shape(0);
      const Shape& rhs = op_shape(1);
      std::optional<Sharding> from_lhs, from_rhs;
      if (op_sharding(0)) from_lhs = dot_forward_from(in, lhs, rhs, 0, *op_sharding(0));
      if (op_sharding(1)) from_rhs = dot_forward_from(in, lhs, rhs, 1, *op_sharding(1));
      // The larger operand (in bytes) is primary (EinsumChooseLargerOperand);
      // the other is then offered so compatible partial shardings merge.
      bool rhs_first = rhs.byte_size() > lhs.byte_size();
      if (rhs_first) std::swap(from_lhs, from_rhs);
      offer(from_lhs);
      offer(from_rhs);
      return out;
    }
    case Opcode::kConvolution: {
      const ConvDims& c = in.attrs.conv;
      // No windowed dim tiled (and no groups): an einsum, the dot rule with
      // the larger operand first.
      const ConvLabels cl = conv_labels(in, op_shape(0));
      const std::vector<DimLabel> e = conv_einsum(cl);
      if (cl.ungrouped &&
          !tiles_any(op_sharding(0), dims_of(e, LabelKind::kWindowed, EinsumSide::kLhs)) &&
          !tiles_any(op_sharding(1), dims_of(e, LabelKind::kWindowed, EinsumSide::kRhs))) {
        std::optional<Sharding> from_lhs, from_rhs;
        if (op_sharding(0))
          from_lhs = along(*op_sharding(0),
                           correspondence(e, {LabelKind::kBatch, LabelKind::kLhsFree},
                                          EinsumSide::kLhs, EinsumSide::kOut, in.shape.rank()));
        if (op_sharding(1))
          from_rhs = along(*op_sharding(1),
                           correspondence(e, {LabelKind::kBatch, LabelKind::kRhsFree},
                                          EinsumSide::kRhs, EinsumSide::kOut, in.shape.rank()));
        if (op_shape(1).byte_size() > op_shape(0).byte_size()) std::swap(from_lhs, from_rhs);
        offer(from_lhs);
        offer(from_rhs);
        return out;
      }
      if (op_sharding(0)) {
        const Sharding& s = *op_sharding(0);
        // LHS drives the output: batch -> batch, and spatial -> spatial only
        // if the input feature dim is not sharded (small-kernel forward conv).
        const bool spatial = !(s.is_tiled() && s.tile_assignment().dim(c.input_feature) > 1);
        offer(along(s, correspondence(cl.windowed,
                                      {LabelKind::kLhsFree,
                                       spatial ? LabelKind::kWindowed : LabelKind::kLhsFree},
                                      EinsumSide::kLhs, EinsumSide::kOut, in.shape.rank())));
      }
      // The kernel's output features are the result's (ungrouped convs).
      if (op_sharding(1) && cl.ungrouped)
        offer(along(*op_sharding(1),
                    correspondence(cl.features, {LabelKind::kRhsFree}, EinsumSide::kRhs,
                                   EinsumSide::kOut, in.shape.rank())));
      return out;
    }
    case Opcode::kGather: {
      const GatherDimMap m = gather_dim_map(in, op_shape(0), op_shape(1));
      if (op_sharding(1))
        offer(along(*op_sharding(1), m.index_batch, m.out_batch, in.shape.rank()));
      if (op_sharding(0)) {
        const IndexParallelDims par = gather_parallel_dims(comp, in, op_shape(0));
        offer(along(*op_sharding(0), concat(m.operand_passthrough, par.operand),
                    concat(m.out_passthrough,
                           map_index_batch_dims(par.indices, m.index_batch, m.out_batch)),
                    in.shape.rank()));
      }
      return out;
    }
    case Opcode::kScatter: {
      // Operands: n inputs, the indices, n updates (n > 1: variadic, a tuple
      // result whose leaves share one tiling).
      // Input i and update i give result leaf i (other leaves: replicated,
      // which never displaces a better sharding); the indices give every leaf.
      const int n = (in.operand_count() - 1) / 2;
      const int64_t rank = op_shape(0).rank();
      auto offer_leaf = [&](int leaf, const std::optional<Sharding>& cand) {
        if (!cand || cand->is_tuple()) return;
        if (n == 1) return out.push_back(*cand);
        std::vector<Sharding> leaves(static_cast<size_t>(n), Sharding::replicated());
        leaves[static_cast<size_t>(leaf)] = *cand;
        out.push_back(Sharding::tuple(std::move(leaves)));
      };
      for (int i = 0; i < n; ++i) offer_leaf(i, op_sharding(i));
      const IndexParallelDims par = scatter_parallel_dims(comp, in, op_shape(0));
      for (int j = n + 1; j < in.operand_count(); ++j) {
        if (!op_sharding(j)) continue;
        const ScatterDimMap m = scatter_dim_map(in, op_shape(0), op_shape(n), op_shape(j));
        offer_leaf(j - n - 1,
                   along(*op_sharding(j),
                         concat(m.update_passthrough,
                                map_index_batch_dims(par.indices, m.index_batch, m.update_scatter)),
                         concat(m.operand_passthrough, par.operand), rank));
      }
      // Indices tile the operand only along index-parallel dims; in a
      // variadic scatter only the leaves whose input and update are untiled.
      if (op_sharding(n) && !par.operand.empty()) {
        const std::optional<Sharding> cand = along(*op_sharding(n), par.indices, par.operand, rank);
        if (n == 1 || !cand) {
          offer(cand);
        } else {
          auto tiled = [&](int i) { return op_sharding(i) && op_sharding(i)->is_tiled(); };
          std::vector<Sharding> leaves(static_cast<size_t>(n), Sharding::replicated());
          bool any = false;
          for (int i = 0; i < n; ++i)
            if (!tiled(i) && !tiled(n + 1 + i)) {
              leaves[static_cast<size_t>(i)] = *cand;
              any = true;
            }
          if (any) out.push_back(Sharding::tuple(std::move(leaves)));
        }
      }
      return out;
    }
    case Opcode::kTuple: {
      bool any = false;
      std::vector<Sharding> leaves;
      for (int i = 0; i < in.operand_count(); ++i) {
        const Shape& s = op_shape(i);
        if (op_sharding(i)) {
          any = true;
          for (auto& l : leaves_of(*op_sharding(i), s)) leaves.push_back(l);
        } else {
          for (int64_t k = 0; k < s.leaf_count(); ++k) leaves.push_back(Sharding::replicated());
        }
      }
      if (any) out.push_back(Sharding::tuple(std::move(leaves)));
      return out;
    }
    case Opcode::kGetTupleElement:
      if (op_sharding(0))
        out.push_back(sub_sharding(*op_sharding(0), op_shape(0), in.attrs.tuple_index));
      return out;
    case Opcode::kWhile:
      offer(op_sharding(0));
      return out;
    case Opcode::kCall:
    case Opcode::kConditional:
      return out;  // result is synchronised with the callee / branch roots
    case Opcode::kCustomCall:
    case Opcode::kAsyncStart:
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone:
      // A custom-call of tuple shape with a manual operand is manual
      // (array-shaped ones are elementwise-like, above); so is an async
      // step (every leaf of its context).
      for (int i = 0; i < in.operand_count(); ++i) {
        const std::optional<Sharding>& s = op_sharding(i);
        if (s && (s->is_manual() ||
                  (s->is_tuple() && !s->tuple_elements().empty() &&
                   std::all_of(s->tuple_elements().begin(), s->tuple_elements().end(),
                               [](const Sharding& leaf) { return leaf.is_manual(); }))))
          return {Sharding::manual()};
      }
      return out;
    default:
      return out;
  }
}

namespace {
std::optional<Sharding> backward_rule(const PropagationState& st, ValueRef user_ref, int k,
                                      int level);
}  // namespace

std::optional<Sharding> backward_candidate(const PropagationState& st, ValueRef user_ref, int k,
                                           int level) {
  std::optional<Sharding> cand = backward_rule(st, user_ref, k, level);
  if (cand || level == 0) return cand;
  // In a partially manual region an operand no rule shards (an index
  // scalar, a loop counter) is replicated within each manual group: the
  // user's manual subgroup with every data dim whole (XLA does the same).
  const Instruction& user = st.instr(user_ref);
  const std::optional<Sharding>& us = st.sharding(user_ref);
  const Shape& operand = st.module().computation(user_ref.comp).instr(user.operand(k)).shape;
  if (!us || !us->is_tiled() || !us->has_manual_subgroup() || !operand.is_array() ||
      is_manual_boundary(user) || blocks_backward(user) || is_cross_partition_all_reduce(user))
    return cand;
  const Sharding whole = partially_replicate_on_all_dims_except(*us, {});
  return add_shape_dims(remove_shape_dims(whole, iota_dims(us->tiled_data_rank())),
                        iota_dims(operand.rank()));
}

namespace {
std::optional<Sharding> backward_rule(const PropagationState& st, ValueRef user_ref, int k,
                                      int level) {
  const Instruction& user = st.instr(user_ref);
  if (user.opcode == Opcode::kCall) {
    const Computation& callee = st.module().computation(user.to_apply());
    return st.sharding({user.to_apply(), callee.parameters().at(static_cast<size_t>(k))});
  }
  if (user.opcode == Opcode::kConditional) {
    // Operand k >= 1 feeds branch k - 1's parameter; the branch index /
    // predicate stays replicated (every device takes the same branch).
    if (k == 0) return Sharding::replicated();
    if (static_cast<size_t>(k - 1) >= user.called.size()) return std::nullopt;
    const CompId branch = user.called[static_cast<size_t>(k - 1)];
    const Computation& callee = st.module().computation(branch);
    if (callee.parameters().empty()) return std::nullopt;
    return st.sharding({branch, callee.parameters().at(0)});
  }
  const std::optional<Sharding>& us = st.sharding(user_ref);
  if (!us) return std::nullopt;
  const Computation& comp = st.module().computation(user_ref.comp);
  const Shape& operand = comp.instr(user.operand(k)).shape;
  if (level == 0 && !is_pass_through(user.opcode)) return std::nullopt;
  if (k == 0 && st.provided({user_ref.comp, user.operand(0)})) {
    // An annotation with open dims before a manual conversion refines them
    // from the conversion's sharding.
    if (is_target(user, "SPMDFullToShardShape"))
      if (const int64_t d = converted_dim(operand, user.shape); d >= 0)
        return manual_to_data_dim(*us, d);
    if (is_target(user, "SPMDShardToFullShape"))
      if (const int64_t d = converted_dim(user.shape, operand); d >= 0)
        return data_dim_to_manual(*us, d);
  }
  if (is_manual_boundary(user) || blocks_backward(user) || is_cross_partition_all_reduce(user))
    return std::nullopt;
  if (user.opcode == Opcode::kCopy && user.shape.is_tuple()) return *us;

  if (is_flash_call(user) && operand.is_array() && user.shape.is_tuple()) {
    // The first result leaf's batch and head tiling ([B, L, N, D] o or dq).
    const Sharding& leaf =
        us->is_tuple() && !us->tuple_elements().empty() ? us->tuple_elements().front() : *us;
    return flash_batch_heads(leaf, user.shape.tuple_shape(0).rank(), operand.rank());
  }

  if (const int64_t dim = operand.is_array() ? sorted_dim(user, operand) : -1; dim >= 0) {
    // Sort / TopK: the leaf of the same position (or the only one), sorted
    // dim replicated.
    const Sharding& s = *us;
    Sharding leaf = s;
    if (s.is_tuple()) {
      if (s.tuple_elements().empty()) return std::nullopt;
      const size_t index = user.opcode == Opcode::kSort ? static_cast<size_t>(k) : 0;
      leaf = s.tuple_elements().at(std::min(index, s.tuple_elements().size() - 1));
    }
    if (user.opcode == Opcode::kSort && sort_tiling_is_movable(leaf, operand, dim)) return leaf;
    return without_sorted_dim(leaf, dim);
  }

  if (is_elementwise(user.opcode) || user.opcode == Opcode::kAllReduce ||
      user.opcode == Opcode::kCustomCall || user.opcode == Opcode::kStochasticConvert ||
      user.opcode == Opcode::kBitcastConvert) {
    if (operand.is_array() && user.shape.is_array() && operand.dims() == user.shape.dims() &&
        !us->is_tuple())
      return *us;
    return std::nullopt;
  }
  const Sharding& s = *us;
  switch (user.opcode) {
    case Opcode::kBitcast:
      if (!s.is_tiled()) return s;
      if (!operand.is_array() || !user.shape.is_array()) return std::nullopt;
      return propagate_through_reshape(user.shape.dims(), operand.dims(), s);
    case Opcode::kOptimizationBarrier:
      return s;
    case Opcode::kAddDependency:
      return k == 0 ? std::optional<Sharding>(s) : std::nullopt;
    case Opcode::kBroadcast:
      if (level < 2) return std::nullopt;
      return along(s, user.attrs.dimensions, iota_dims(operand.rank()), operand.rank());
    case Opcode::kReduce: {
      const int n = user.operand_count() / 2;
      if (k >= n) return std::nullopt;  // init values
      Sharding leaf = s.is_tuple() ? s.tuple_elements().at(static_cast<size_t>(k)) : s;
      Dims kept = complement_dims(operand.rank(), user.attrs.dimensions);
      return along(leaf, iota_dims(static_cast<int64_t>(kept.size())), kept, operand.rank());
    }
    case Opcode::kTranspose: {
      if (!s.is_tiled()) return s;
      const Dims& perm = user.attrs.dimensions;
      Dims inverse(perm.size());
      for (size_t i = 0; i < perm.size(); ++i)
        inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
      return transpose_sharding(s, inverse);
    }
    case Opcode::kReshape: {
      if (!s.is_tiled()) return s;
      return propagate_through_reshape(user.shape.dims(), operand.dims(), s);
    }
    case Opcode::kSlice:
    case Opcode::kPad:
    case Opcode::kConcatenate:
      if (user.opcode != Opcode::kConcatenate && k != 0) return std::nullopt;
      if (user.opcode == Opcode::kConcatenate && !st.is_spmd())
        return concat_operand_tiles(comp, user, k, s);
      return s;
    case Opcode::kReduceWindow: {
      // Input k takes result leaf k; init values (the second half) nothing.
      if (k >= user.operand_count() / 2) return std::nullopt;
      if (!s.is_tuple()) return s;
      if (static_cast<size_t>(k) >= s.tuple_elements().size()) return std::nullopt;
      return s.tuple_elements()[static_cast<size_t>(k)];
    }
    case Opcode::kReverse:
      return s.is_tiled() ? reverse_sharding(s, user.attrs.dimensions) : s;
    case Opcode::kDynamicSlice:
      return k == 0 ? std::optional<Sharding>(s) : std::nullopt;
    case Opcode::kDynamicUpdateSlice:
      return k <= 1 ? std::optional<Sharding>(s) : std::nullopt;
    case Opcode::kDot: {
      const std::vector<DimLabel> labels =
          dot_labels(user.attrs.dot, comp.instr(user.operand(0)).shape.rank(),
                     comp.instr(user.operand(1)).shape.rank());
      const EinsumSide me = k == 0 ? EinsumSide::kLhs : EinsumSide::kRhs;
      const EinsumSide them = k == 0 ? EinsumSide::kRhs : EinsumSide::kLhs;
      // From the output: batch and own free dims; the other operand's free
      // output dims become replication; contracting dims unsharded.
      std::optional<Sharding> cand = along(
          s, correspondence(labels,
                            {LabelKind::kBatch, k == 0 ? LabelKind::kLhsFree : LabelKind::kRhsFree},
                            EinsumSide::kOut, me, operand.rank()));
      // BackwardDotFromContracting: the other operand's batch and
      // contracting tiling maps onto this operand's; merged in if compatible.
      const std::optional<Sharding>& other = st.sharding({user_ref.comp, user.operand(1 - k)});
      if (cand && other && other->is_tiled() && level >= 1) {
        if (auto from_other =
                along(*other, correspondence(labels, {LabelKind::kBatch, LabelKind::kContracting},
                                             them, me, operand.rank()))) {
          // Combine only when both fit together; otherwise keep the output's.
          if (auto merged = merge_if_compatible(*cand, *from_other)) cand = *merged;
        }
      }
      return cand;
    }
    case Opcode::kConvolution: {
      const ConvLabels cl = conv_labels(user, comp.instr(user.operand(0)).shape);
      const std::vector<DimLabel> e = conv_einsum(cl);
      if (cl.ungrouped && !tiles_any(s, dims_of(e, LabelKind::kWindowed, EinsumSide::kOut))) {
        // An einsum from the result's view: batch and own free dims.
        if (k == 0)
          return along(s, correspondence(e, {LabelKind::kBatch, LabelKind::kLhsFree},
                                         EinsumSide::kOut, EinsumSide::kLhs, operand.rank()));
        return along(s, correspondence(e, {LabelKind::kBatch, LabelKind::kRhsFree},
                                       EinsumSide::kOut, EinsumSide::kRhs, operand.rank()));
      }
      if (k == 0) {
        // Input takes batch (and, unless the conv is an einsum, spatial) tiling from the output.
        return along(s, correspondence(cl.windowed,
                                       {LabelKind::kLhsFree,
                                        cl.dot_like ? LabelKind::kLhsFree : LabelKind::kWindowed},
                                       EinsumSide::kOut, EinsumSide::kLhs, operand.rank()));
      }
      if (!cl.ungrouped) return std::nullopt;
      return along(s, correspondence(cl.features, {LabelKind::kRhsFree}, EinsumSide::kOut,
                                     EinsumSide::kRhs, operand.rank()));
    }
    case Opcode::kGather: {
      const GatherDimMap m = gather_dim_map(user, comp.instr(user.operand(0)).shape,
                                            comp.instr(user.operand(1)).shape);
      if (k == 1) return along(s, m.out_batch, m.index_batch, operand.rank());
      const IndexParallelDims par = gather_parallel_dims(comp, user, operand);
      return along(
          s,
          concat(m.out_passthrough, map_index_batch_dims(par.indices, m.index_batch, m.out_batch)),
          concat(m.operand_passthrough, par.operand), operand.rank());
    }
    case Opcode::kScatter: {
      // Operands: n inputs, the indices, n updates; leaf i of a variadic
      // result belongs to input i and update i.
      const int n = (user.operand_count() - 1) / 2;
      auto leaf = [&](int i) -> std::optional<Sharding> {
        if (!s.is_tuple()) return s;
        if (static_cast<size_t>(i) >= s.tuple_elements().size()) return std::nullopt;
        return s.tuple_elements()[static_cast<size_t>(i)];
      };
      if (k < n) return leaf(k);
      const Shape& target = comp.instr(user.operand(0)).shape;
      const Shape& indices = comp.instr(user.operand(n)).shape;
      const IndexParallelDims par = scatter_parallel_dims(comp, user, target);
      if (k > n) {
        const std::optional<Sharding> result = leaf(k - n - 1);
        if (!result) return std::nullopt;
        const ScatterDimMap m = scatter_dim_map(user, target, indices, operand);
        std::optional<Sharding> cand =
            along(*result, concat(m.operand_passthrough, par.operand),
                  concat(m.update_passthrough,
                         map_index_batch_dims(par.indices, m.index_batch, m.update_scatter)),
                  operand.rank());
        // Index pass-through from the indices' sharding.
        const std::optional<Sharding>& is = st.sharding({user_ref.comp, user.operand(n)});
        if (cand && is && is->is_tiled()) {
          if (auto from_idx = along(*is, m.index_batch, m.update_scatter, operand.rank())) {
            if (auto merged = merge_if_compatible(*cand, *from_idx)) cand = *merged;
          }
        }
        return cand;
      }
      // Indices from the result along index-parallel dims, merged with (or
      // else) the first updates' scatter dims (index pass-through).
      std::optional<Sharding> from_result;
      if (!par.operand.empty())
        if (const std::optional<Sharding> result = leaf(0))
          from_result = along(*result, par.operand, par.indices, operand.rank());
      std::optional<Sharding> from_updates;
      const std::optional<Sharding>& ups = st.sharding({user_ref.comp, user.operand(n + 1)});
      if (ups && !ups->is_tuple()) {
        const ScatterDimMap m =
            scatter_dim_map(user, target, indices, comp.instr(user.operand(n + 1)).shape);
        from_updates = along(*ups, m.update_scatter, m.index_batch, operand.rank());
      }
      if (!par.operand.empty() && from_result) {
        if (from_updates && from_updates->is_tiled())
          if (auto merged = merge_if_compatible(*from_result, *from_updates)) return merged;
        return from_result;
      }
      return par.operand.empty() ? from_updates : std::nullopt;
    }
    case Opcode::kTuple:
      return sub_sharding(s, user.shape, k);
    case Opcode::kGetTupleElement: {
      // The tuple with this element's sharding, others replicated or as they are.
      const std::optional<Sharding>& cur = st.sharding({user_ref.comp, user.operand(0)});
      std::vector<Sharding> leaves =
          cur ? leaves_of(*cur, operand)
              : std::vector<Sharding>(static_cast<size_t>(operand.leaf_count()),
                                      Sharding::replicated());
      int64_t first = leaf_offset(operand, user.attrs.tuple_index);
      std::vector<Sharding> mine = leaves_of(s, user.shape);
      for (size_t i = 0; i < mine.size(); ++i) leaves[static_cast<size_t>(first) + i] = mine[i];
      return Sharding::tuple(std::move(leaves));
    }
    case Opcode::kWhile:
      return s;
    default:
      return std::nullopt;
  }
}

}  // namespace

}  // namespace podsim::compiler::propagation
