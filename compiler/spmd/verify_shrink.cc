// Reduced-shape copies of a module for --verify (see verify_shrink.h).
#include "compiler/spmd/verify_shrink.h"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/ir/shape_inference.h"
#include "compiler/ir/verifier.h"
#include "compiler/sharding/sharding.h"

namespace podsim::compiler {

int64_t ShrinkRule::dim(int64_t d) const {
  const int64_t least = std::max<int64_t>(1, min_dim);
  if (factor <= 1 || pinned.count(d)) return d;
  if (d % factor == 0) return d / factor >= least ? d / factor : d;
  if (residue_modulus <= 0) return d;
  const int64_t q = d / factor;
  const int64_t shrunk = q - q % residue_modulus + d % residue_modulus;
  const int64_t fitted = shrunk > q ? shrunk - residue_modulus : shrunk;
  return fitted >= least && fitted < d ? fitted : d;
}

namespace {

struct Rule {
  const ShrinkRule& shrink;
  int64_t dim(int64_t d) const { return shrink.dim(d); }
  // An offset (slice start, pad amount) scaled with its dim: divided when k
  // divides it, else kept.
  int64_t offset(int64_t x) const { return x % shrink.factor == 0 ? x / shrink.factor : x; }
};

Shape shrink_shape(const Shape& shape, const Rule& rule) {
  Shape out = shape;
  if (shape.is_tuple()) {
    for (Shape& element : out.mutable_tuple_shapes()) element = shrink_shape(element, rule);
    return out;
  }
  std::vector<int64_t> dims = shape.dims();
  for (int64_t& d : dims) d = rule.dim(d);
  out.set_dims(std::move(dims));
  return out;
}

struct Refusal {
  std::string what;
};

// Reshape `old_out` of `old_in` as a shape of the new operand `new_in`: dims
// grouped where the old shapes' prefix products meet (a split, a merge or a
// one-to-one dim); each group's result dims give up the factor its operand
// dims lost: as the rule shrinks them when that gives the group's product,
// else the largest unpinned dims first.
std::vector<int64_t> reshape_dims(const std::vector<int64_t>& old_in,
                                  const std::vector<int64_t>& old_out,
                                  const std::vector<int64_t>& new_in, const Rule& rule) {
  std::vector<int64_t> out = old_out;
  size_t i = 0, j = 0;
  while (i < old_in.size() || j < old_out.size()) {
    const size_t i0 = i, j0 = j;
    int64_t pa = 1, pb = 1;
    if (i < old_in.size()) pa *= old_in[i++];
    if (j < old_out.size()) pb *= old_out[j++];
    while (pa != pb) {
      if (pa < pb && i < old_in.size()) {
        pa *= old_in[i++];
      } else if (pb < pa && j < old_out.size()) {
        pb *= old_out[j++];
      } else {
        throw Refusal{"a reshape's dims do not group"};
      }
    }
    int64_t new_product = 1;
    for (size_t a = i0; a < i; ++a) new_product *= new_in[a];
    if (new_product == 0 || pa % new_product != 0) throw Refusal{"a reshape group does not divide"};
    int64_t left = pa / new_product;
    int64_t ruled = 1;
    for (size_t b = j0; b < j; ++b) ruled *= rule.dim(old_out[b]);
    if (ruled == new_product) {
      for (size_t b = j0; b < j; ++b) out[b] = rule.dim(old_out[b]);
      continue;
    }
    std::vector<size_t> order;  // pinned sizes keep theirs
    for (size_t b = j0; b < j; ++b)
      if (!rule.shrink.pinned.count(old_out[b])) order.push_back(b);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return old_out[x] > old_out[y]; });
    for (size_t b : order) {
      const int64_t g = std::gcd(out[b], left);
      out[b] /= g;
      left /= g;
    }
    if (left != 1) throw Refusal{"a reshape's result cannot take the factor"};
  }
  return out;
}

bool is_splat(const Literal& literal) {
  if (literal.is_tuple()) return false;
  const std::vector<double>& v = literal.values();
  const auto per = static_cast<size_t>(Literal::values_per_element(literal.shape().dtype()));
  for (size_t i = per; i < v.size(); ++i)
    if (v[i] != v[i % per]) return false;
  return true;
}

Literal splat_like(const Literal& literal, const Shape& shape) {
  const auto per = static_cast<size_t>(Literal::values_per_element(shape.dtype()));
  std::vector<double> values(static_cast<size_t>(shape.num_elements()) * per);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = literal.values().empty() ? 0.0 : literal.values()[i % per];
  return Literal(shape, std::move(values));
}

// Called computations before their callers (shape inference of a call,
// while or conditional reads the callee's new signature).
void post_order(const Module& module, CompId id, std::vector<bool>& seen,
                std::vector<CompId>& order) {
  if (seen[static_cast<size_t>(id)]) return;
  seen[static_cast<size_t>(id)] = true;
  for (const Instruction& in : module.computation(id).instructions())
    for (CompId c : in.called)
      if (c >= 0 && c < module.computation_count()) post_order(module, c, seen, order);
  order.push_back(id);
}

// The window dims of a reduce-window / select-and-scatter that span their
// whole (old) operand dim follow the dim; the others keep their size.
void shrink_windows(std::vector<WindowDim>& window, const Shape& old_operand,
                    const Shape& new_operand) {
  if (!old_operand.is_array() || static_cast<int>(window.size()) != old_operand.rank()) return;
  for (size_t i = 0; i < window.size(); ++i) {
    const int64_t d = old_operand.dim(static_cast<int>(i)),
                  d2 = new_operand.dim(static_cast<int>(i));
    if (d == d2) continue;
    if (window[i].size == d) window[i].size = d2;
    if (window[i].stride == d) window[i].stride = d2;
  }
}

void shrink_instruction(Instruction& in, const Instruction& old, const Computation& old_comp,
                        const std::vector<const Shape*>& operands, const Rule& rule,
                        const ShapeInferenceContext& ctx) {
  auto old_operand = [&](int i) -> const Shape& { return old_comp.instr(old.operand(i)).shape; };
  in.shape = shrink_shape(old.shape, rule);
  // Per-dim slice sizes (dynamic-slice, gather) follow their operand's shrunk dims.
  auto shrink_slice_sizes = [&](std::vector<int64_t>& sizes) {
    if (operands.empty() || !operands[0]->is_array() || sizes.size() != operands[0]->dims().size())
      return;
    for (size_t i = 0; i < sizes.size(); ++i)
      if (old_operand(0).dim(static_cast<int>(i)) != operands[0]->dim(static_cast<int>(i)))
        sizes[i] = std::min(rule.dim(sizes[i]), operands[0]->dim(static_cast<int>(i)));
  };
  switch (in.opcode) {
    case Opcode::kConstant:
      if (!(in.shape == old.shape)) {
        if (!in.attrs.literal || !is_splat(*in.attrs.literal))
          throw Refusal{fmt::format("constant '{}' of shape {} would have to shrink", in.name,
                                    old.shape.to_string(false))};
        in.attrs.literal = splat_like(*in.attrs.literal, in.shape);
      }
      break;
    case Opcode::kReshape:
      if (operands.size() == 1 && operands[0]->is_array() && in.shape.is_array() &&
          in.shape.num_elements() != operands[0]->num_elements())
        in.shape.set_dims(
            reshape_dims(old_operand(0).dims(), old.shape.dims(), operands[0]->dims(), rule));
      break;
    case Opcode::kSlice:
      if (operands.size() == 1 && operands[0]->is_array() &&
          in.attrs.slice.size() == operands[0]->dims().size()) {
        for (size_t i = 0; i < in.attrs.slice.size(); ++i) {
          const int64_t d = old_operand(0).dim(static_cast<int>(i)),
                        d2 = operands[0]->dim(static_cast<int>(i));
          if (d == d2) continue;
          SliceDim& s = in.attrs.slice[i];
          const int64_t r2 = rule.dim(old.shape.dim(static_cast<int>(i)));
          const int64_t span = r2 == 0 ? 0 : (r2 - 1) * s.stride + 1;
          int64_t start =
              r2 == old.shape.dim(static_cast<int>(i)) ? s.start * d2 / d : rule.offset(s.start);
          if (start + span > d2) start = d2 - span;
          if (start < 0)
            throw Refusal{fmt::format("slice '{}' does not fit its shrunk operand", in.name)};
          s.start = start;
          s.limit = start + span;
        }
      }
      break;
    case Opcode::kPad:
      if (!operands.empty() && operands[0]->is_array() &&
          in.attrs.padding.size() == operands[0]->dims().size())
        for (size_t i = 0; i < in.attrs.padding.size(); ++i)
          if (old_operand(0).dim(static_cast<int>(i)) != operands[0]->dim(static_cast<int>(i))) {
            in.attrs.padding[i].low = rule.offset(in.attrs.padding[i].low);
            in.attrs.padding[i].high = rule.offset(in.attrs.padding[i].high);
          }
      break;
    case Opcode::kDynamicSlice:
      shrink_slice_sizes(in.attrs.dynamic_slice_sizes);
      break;
    case Opcode::kGather:
      shrink_slice_sizes(in.attrs.gather_slice_sizes);
      break;
    case Opcode::kReduceWindow:
    case Opcode::kSelectAndScatter:
      if (!operands.empty()) shrink_windows(in.attrs.window, old_operand(0), *operands[0]);
      break;
    case Opcode::kConvolution:
      // The window is the kernel's spatial extent; its padding and dilation
      // follow the input's spatial dim where that shrank (when k divides them).
      if (operands.size() == 2 && operands[0]->is_array() && operands[1]->is_array() &&
          in.attrs.window.size() == in.attrs.conv.kernel_spatial.size() &&
          in.attrs.window.size() == in.attrs.conv.input_spatial.size()) {
        for (size_t i = 0; i < in.attrs.window.size(); ++i) {
          WindowDim& w = in.attrs.window[i];
          const int kd = static_cast<int>(in.attrs.conv.kernel_spatial[i]);
          const int id = static_cast<int>(in.attrs.conv.input_spatial[i]);
          if (old_operand(1).dim(kd) == w.size) w.size = operands[1]->dim(kd);
          if (old_operand(0).dim(id) != operands[0]->dim(id)) {
            w.pad_low = rule.offset(w.pad_low);
            w.pad_high = rule.offset(w.pad_high);
            w.window_dilation = rule.offset(w.window_dilation);
          }
        }
        // Group counts equal to the dim they split (depthwise, one group per
        // batch element) follow it.
        const ConvDims& cd = in.attrs.conv;
        const int feature = static_cast<int>(cd.input_feature),
                  batch = static_cast<int>(cd.input_batch);
        if (in.attrs.feature_group_count > 1 &&
            in.attrs.feature_group_count == old_operand(0).dim(feature))
          in.attrs.feature_group_count = operands[0]->dim(feature);
        if (in.attrs.batch_group_count > 1 &&
            in.attrs.batch_group_count == old_operand(0).dim(batch))
          in.attrs.batch_group_count = operands[0]->dim(batch);
      }
      break;
    case Opcode::kTopK:
      if (!operands.empty() && operands[0]->is_array() && operands[0]->rank() > 0 &&
          in.attrs.k > operands[0]->dims().back())
        in.attrs.k = rule.dim(in.attrs.k);
      break;
    default:
      break;
  }
  in.shape = infer_shape(in, operands, ctx);
}

}  // namespace

ShrinkOutcome shrink_module(const Module& module, const ShrinkRule& shrink_rule) {
  const Rule rule{shrink_rule};
  Module out = module;
  std::vector<bool> seen(static_cast<size_t>(module.computation_count()), false);
  std::vector<CompId> order;
  if (module.entry_id() >= 0) post_order(module, module.entry_id(), seen, order);
  for (CompId c = 0; c < module.computation_count(); ++c) post_order(module, c, seen, order);
  const ShapeInferenceContext ctx{&out, module.num_partitions()};
  ShrinkOutcome result;
  try {
    for (CompId c : order) {
      const Computation& old_comp = module.computation(c);
      Computation& comp = out.mutable_computation(c);
      for (InstrId id = 0; id < comp.size(); ++id) {
        std::vector<const Shape*> operands;
        for (InstrId op : comp.instr(id).operands) operands.push_back(&comp.instr(op).shape);
        shrink_instruction(comp.mutable_instr(id), old_comp.instr(id), old_comp, operands, rule,
                           ctx);
      }
    }
    verify_module(out);
  } catch (const Refusal& r) {
    result.why_not = r.what;
    return result;
  } catch (const UserError& e) {
    result.why_not = e.message();
    return result;
  }
  result.module = std::move(out);
  return result;
}

namespace {

std::vector<Sharding> leaves_of(const Instruction& in) {
  const Sharding s = parse_sharding(*in.sharding, in.location);
  const int64_t n = in.shape.leaf_count();
  if (s.is_tuple() && static_cast<int64_t>(s.tuple_elements().size()) == n)
    return s.tuple_elements();
  return std::vector<Sharding>(static_cast<size_t>(n), s);
}

}  // namespace

ShardingCheck check_shrunk_shardings(const Module& original, const Module& shrunk) {
  for (CompId c = 0; c < original.computation_count(); ++c) {
    const Computation& a = original.computation(c);
    const Computation& b = shrunk.computation(c);
    for (InstrId id = 0; id < a.size(); ++id) {
      const Instruction& in = a.instr(id);
      if (!in.sharding) continue;
      const std::vector<const Shape*> old_leaves = in.shape.leaves();
      const std::vector<const Shape*> new_leaves = b.instr(id).shape.leaves();
      const std::vector<Sharding> shardings = leaves_of(in);
      for (size_t leaf = 0; leaf < old_leaves.size() && leaf < shardings.size(); ++leaf) {
        if (!shardings[leaf].is_tiled()) continue;
        const std::vector<int64_t> tiles = shardings[leaf].data_tile_dims();
        for (size_t i = 0; i < tiles.size() && static_cast<int>(i) < old_leaves[leaf]->rank();
             ++i) {
          const int64_t t = tiles[i], d = old_leaves[leaf]->dim(static_cast<int>(i)),
                        d2 = new_leaves[leaf]->dim(static_cast<int>(i));
          if (t <= 1 || d == d2) continue;
          if ((d % t == 0) != (d2 % t == 0) || (d >= t) != (d2 >= t))
            return {fmt::format("'{}' dim {} ({} -> {}) over {} tiles", in.name, i, d, d2, t), d};
        }
      }
    }
  }
  return {};
}

ShrinkOutcome shrink_keeping_shardings(const Module& module, ShrinkRule rule) {
  while (true) {
    ShrinkOutcome out = shrink_module(module, rule);
    if (!out.module) return out;
    const ShardingCheck check = check_shrunk_shardings(module, *out.module);
    if (check.problem.empty()) return out;
    if (!rule.pinned.insert(check.size).second) {  // cannot happen: a pinned size keeps its dims
      out.module.reset();
      out.why_not = check.problem + " would change its padding";
      return out;
    }
  }
}

int64_t tile_count_lcm(const Module& module) {
  int64_t l = 1;
  for (const Computation& c : module.computations())
    for (const Instruction& in : c.instructions()) {
      if (!in.sharding) continue;
      for (const Sharding& s : leaves_of(in))
        if (s.is_tiled())
          for (int64_t t : s.data_tile_dims()) l = std::lcm(l, std::max<int64_t>(1, t));
    }
  return l;
}

}  // namespace podsim::compiler
