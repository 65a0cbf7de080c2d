// Vectorisation over a leading dim (see vectorize.h). Batched values carry
// the new dim at position 0, so every dim index of the original op moves up
// by one; an unbatched operand of an op with batched operands is broadcast
// to the batched shape first.
#include "compiler/training/vectorize.h"

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/training/ir_helpers.h"

namespace podsim::compiler {

namespace {

std::vector<int64_t> shifted(const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(d + 1);
  return out;
}

std::vector<int64_t> with_batch(int64_t batch, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out{batch};
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

}  // namespace

InstrId emit_vectorized(ComputationBuilder& b, const Computation& body,
                        const std::vector<InstrId>& batched_args, int64_t batch,
                        const std::string& scope) {
  const size_t n = static_cast<size_t>(body.size());
  std::vector<InstrId> value(n, kNoId);
  std::vector<bool> batched(n, false);
  const std::string saved_scope = b.op_name_scope();

  auto to_batched = [&](InstrId src) {
    InstrId v = value[static_cast<size_t>(src)];
    if (batched[static_cast<size_t>(src)]) return v;
    const Shape& s = body.instr(src).shape;
    std::vector<int64_t> dims(static_cast<size_t>(s.rank()));
    for (int k = 0; k < s.rank(); ++k) dims[static_cast<size_t>(k)] = k + 1;
    return b.broadcast(v, with_batch(batch, s.dims()), dims);
  };

  for (InstrId i = 0; i < body.size(); ++i) {
    const Instruction& in = body.instr(i);
    const size_t k = static_cast<size_t>(i);
    if (in.opcode == Opcode::kParameter) {
      value[k] = batched_args.at(static_cast<size_t>(in.attrs.parameter_number));
      batched[k] = true;
      continue;
    }
    std::string_view rest = training::strip_fwd_prefix(in.op_name);
    b.set_op_name_scope(scope.empty() ? in.op_name
                                      : (rest.empty() ? fmt::format("fwd/{}", scope)
                                                      : fmt::format("fwd/{}/{}", scope, rest)));
    bool any_batched = false;
    for (InstrId op : in.operands) any_batched = any_batched || batched[static_cast<size_t>(op)];
    if (!any_batched) {  // loop-invariant: emitted once, unbatched
      Instruction clone = in;
      clone.name.clear();
      clone.op_name.clear();
      for (InstrId& op : clone.operands) op = value[static_cast<size_t>(op)];
      value[k] = b.add(std::move(clone));
      continue;
    }
    if (in.shape.is_tuple())
      throw UserError(
          in.location,
          fmt::format("pipelining: tuple-shaped '{}' in a stage body is not supported", in.name),
          "");
    batched[k] = true;
    auto op = [&](int j) { return value[static_cast<size_t>(in.operand(j))]; };
    if (is_elementwise(in.opcode) || in.opcode == Opcode::kConvert) {
      Instruction clone = in;
      clone.name.clear();
      clone.op_name.clear();
      clone.sharding.reset();
      for (InstrId& o : clone.operands) o = to_batched(o);
      clone.shape.set_dims(with_batch(batch, in.shape.dims()));
      value[k] = b.add_inferred(std::move(clone));
      continue;
    }
    switch (in.opcode) {
      case Opcode::kBroadcast: {
        std::vector<int64_t> dims{0};
        for (int64_t d : in.attrs.dimensions) dims.push_back(d + 1);
        value[k] = b.broadcast(op(0), with_batch(batch, in.shape.dims()), dims);
        break;
      }
      case Opcode::kReshape:
        value[k] = b.reshape(op(0), with_batch(batch, in.shape.dims()));
        break;
      case Opcode::kTranspose: {
        std::vector<int64_t> perm{0};
        for (int64_t d : in.attrs.dimensions) perm.push_back(d + 1);
        value[k] = b.transpose(op(0), perm);
        break;
      }
      case Opcode::kSlice: {
        std::vector<SliceDim> window{{0, batch, 1}};
        window.insert(window.end(), in.attrs.slice.begin(), in.attrs.slice.end());
        value[k] = b.slice(op(0), window);
        break;
      }
      case Opcode::kPad: {
        if (batched[static_cast<size_t>(in.operand(1))])
          throw UserError(
              in.location,
              "pipelining: a pad value computed from the stage's inputs is not supported", "");
        std::vector<PadDim> padding{{0, 0, 0}};
        padding.insert(padding.end(), in.attrs.padding.begin(), in.attrs.padding.end());
        value[k] = b.pad(op(0), op(1), padding);
        break;
      }
      case Opcode::kConcatenate: {
        std::vector<InstrId> parts;
        for (InstrId o : in.operands) parts.push_back(to_batched(o));
        value[k] = b.concatenate(parts, in.attrs.dimensions.at(0) + 1);
        break;
      }
      case Opcode::kReduce: {
        for (int j = in.operand_count() / 2; j < in.operand_count(); ++j)
          if (batched[static_cast<size_t>(in.operand(j))])
            throw UserError(
                in.location,
                "pipelining: a reduce init value computed from the stage's inputs is not supported",
                "");
        std::vector<InstrId> operands, inits;
        for (int j = 0; j < in.operand_count() / 2; ++j)
          operands.push_back(to_batched(in.operand(j)));
        for (int j = in.operand_count() / 2; j < in.operand_count(); ++j) inits.push_back(op(j));
        value[k] = b.reduce(operands, inits, shifted(in.attrs.dimensions), in.to_apply());
        break;
      }
      case Opcode::kDot: {
        // Both operands batched; the new dim is a batch dim, first in the output.
        const DotDims& d = in.attrs.dot;
        DotDims nd;
        nd.lhs_batch = with_batch(0, shifted(d.lhs_batch));
        nd.rhs_batch = with_batch(0, shifted(d.rhs_batch));
        nd.lhs_contracting = shifted(d.lhs_contracting);
        nd.rhs_contracting = shifted(d.rhs_contracting);
        value[k] =
            b.dot(to_batched(in.operand(0)), to_batched(in.operand(1)), nd, in.shape.dtype());
        break;
      }
      case Opcode::kCustomCall:
        if (in.attrs.custom_call_target == "Sharding") {
          value[k] = op(0);
          break;
        }
        if (in.attrs.custom_call_target == kStopGradientTarget) {  // stays a gradient barrier
          value[k] = b.custom_call({op(0)}, kStopGradientTarget, b.shape(op(0)));
          break;
        }
        [[fallthrough]];
      default:
        throw UserError(
            in.location,
            fmt::format("pipelining: '{}' ({}) in a stage body is not supported", in.name,
                        opcode_name(in.opcode)),
            "stage bodies may use elementwise ops, broadcast, reshape, transpose, slice, pad, "
            "concatenate, reduce and dot");
    }
  }
  b.set_op_name_scope(saved_scope);
  InstrId root = body.root();
  return batched[static_cast<size_t>(root)] ? value[static_cast<size_t>(root)] : to_batched(root);
}

}  // namespace podsim::compiler
