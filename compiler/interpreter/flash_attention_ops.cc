// The fused attention custom calls, evaluated exactly (compiler/ir/flash_attention.h):
// forward o = softmax(scale q k^T, masked) v with lse the rows' log-sum-exp;
// backward the analytic gradient from the recomputed probabilities
// p = exp(s - lse): dv = p^T do, dp = do v^T, ds = p (dp - rowsum(do o)),
// dq = scale ds k, dk = scale ds^T q (docs/compiler.md#flash-attention).
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "compiler/interpreter/local_ops.h"
#include "compiler/ir/flash_attention.h"

namespace podsim::compiler::interp {

namespace {

// The dims of one call: q [B, L, N, D], k and v [B, T, N, D].
struct AttentionDims {
  int64_t batch, length, keys, heads, depth;
  int64_t q(int64_t b, int64_t i, int64_t n) const { return ((b * length + i) * heads + n) * depth; }
  int64_t k(int64_t b, int64_t j, int64_t n) const { return ((b * keys + j) * heads + n) * depth; }
  int64_t lse(int64_t b, int64_t n, int64_t i) const { return (b * heads + n) * length + i; }
};

AttentionDims check_operands(const Instruction& instr, const Operands& operands, size_t count) {
  if (operands.size() != count)
    fail(instr, fmt::format("has {} operands, expected {}", operands.size(), count));
  for (const Literal* op : operands)
    if (op->is_tuple()) fail(instr, "operands must be arrays");
  const Shape& q = operands[0]->shape();
  const Shape& k = operands[1]->shape();
  const Shape& v = operands[2]->shape();
  if (q.rank() != 4 || k.rank() != 4 || v.dims() != k.dims() || q.dim(0) != k.dim(0) ||
      q.dim(2) != k.dim(2) || q.dim(3) != k.dim(3))
    fail(instr, fmt::format("q {} and k, v {} {} must be [B, L, N, D] and [B, T, N, D]",
                            q.to_string(false), k.to_string(false), v.to_string(false)));
  return {q.dim(0), q.dim(1), k.dim(1), q.dim(2), q.dim(3)};
}

void round_all(Literal& literal) {
  for (double& x : literal.mutable_values()) x = round_to_dtype(literal.shape().dtype(), x);
}

// Scaled scores of query row (b, i, n) over every key; masked keys -inf.
void scores_row(const AttentionDims& a, const Literal& q, const Literal& k, bool causal,
                double scale, int64_t b, int64_t i, int64_t n, std::vector<double>& s) {
  s.assign(static_cast<size_t>(a.keys), -std::numeric_limits<double>::infinity());
  const double* qi = q.values().data() + a.q(b, i, n);
  for (int64_t j = 0; j < a.keys && (!causal || j <= i); ++j) {
    const double* kj = k.values().data() + a.k(b, j, n);
    double dot = 0;
    for (int64_t d = 0; d < a.depth; ++d) dot += qi[d] * kj[d];
    s[static_cast<size_t>(j)] = scale * dot;
  }
}

}  // namespace

Literal eval_flash_attention(const Instruction& instr, const Operands& operands) {
  const AttentionDims a = check_operands(instr, operands, 3);
  if (!instr.shape.is_tuple() || instr.shape.tuple_shapes().size() != 2)
    fail(instr, "result must be (o, lse)");
  const FlashAttentionConfig config = flash_config(instr);
  const double scale = flash_scale(config, a.depth);
  const Literal& q = *operands[0];
  const Literal& k = *operands[1];
  const Literal& v = *operands[2];
  Literal out(instr.shape.tuple_shape(0)), lse(instr.shape.tuple_shape(1));
  if (out.shape().dims() != q.shape().dims() ||
      lse.shape().dims() != std::vector<int64_t>{a.batch, a.heads, a.length})
    fail(instr, "results must be o [B, L, N, D] and lse [B, N, L]");
  std::vector<double> s;
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t n = 0; n < a.heads; ++n)
      for (int64_t i = 0; i < a.length; ++i) {
        scores_row(a, q, k, config.causal, scale, b, i, n, s);
        double max = -std::numeric_limits<double>::infinity();
        for (double x : s) max = std::max(max, x);
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - max));
        double* o = out.mutable_values().data() + a.q(b, i, n);
        for (int64_t j = 0; j < a.keys; ++j) {
          const double p = s[static_cast<size_t>(j)] / sum;
          if (p == 0) continue;
          const double* vj = v.values().data() + a.k(b, j, n);
          for (int64_t d = 0; d < a.depth; ++d) o[d] += p * vj[d];
        }
        lse.mutable_values()[static_cast<size_t>(a.lse(b, n, i))] = max + std::log(sum);
      }
  round_all(out);
  round_all(lse);
  return Literal::tuple({std::move(out), std::move(lse)});
}

Literal eval_flash_attention_bwd(const Instruction& instr, const Operands& operands) {
  const AttentionDims a = check_operands(instr, operands, 6);
  if (!instr.shape.is_tuple() || instr.shape.tuple_shapes().size() != 3)
    fail(instr, "result must be (dq, dk, dv)");
  const FlashAttentionConfig config = flash_config(instr);
  const double scale = flash_scale(config, a.depth);
  const Literal& q = *operands[0];
  const Literal& k = *operands[1];
  const Literal& v = *operands[2];
  const Literal& o = *operands[3];
  const Literal& lse = *operands[4];
  const Literal& d_o = *operands[5];
  if (o.shape().dims() != q.shape().dims() || d_o.shape().dims() != q.shape().dims() ||
      lse.shape().dims() != std::vector<int64_t>{a.batch, a.heads, a.length})
    fail(instr, "o and do must be [B, L, N, D], lse [B, N, L]");
  Literal dq(instr.shape.tuple_shape(0)), dk(instr.shape.tuple_shape(1)),
      dv(instr.shape.tuple_shape(2));
  std::vector<double> s;
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t n = 0; n < a.heads; ++n)
      for (int64_t i = 0; i < a.length; ++i) {
        scores_row(a, q, k, config.causal, scale, b, i, n, s);
        const double row_lse = lse.values()[static_cast<size_t>(a.lse(b, n, i))];
        const double* qi = q.values().data() + a.q(b, i, n);
        const double* doi = d_o.values().data() + a.q(b, i, n);
        const double* oi = o.values().data() + a.q(b, i, n);
        double delta = 0;  // rowsum(do o)
        for (int64_t d = 0; d < a.depth; ++d) delta += doi[d] * oi[d];
        double* dqi = dq.mutable_values().data() + a.q(b, i, n);
        for (int64_t j = 0; j < a.keys; ++j) {
          const double p = std::exp(s[static_cast<size_t>(j)] - row_lse);
          if (p == 0) continue;
          const double* kj = k.values().data() + a.k(b, j, n);
          const double* vj = v.values().data() + a.k(b, j, n);
          double* dkj = dk.mutable_values().data() + a.k(b, j, n);
          double* dvj = dv.mutable_values().data() + a.k(b, j, n);
          double dp = 0;
          for (int64_t d = 0; d < a.depth; ++d) dp += doi[d] * vj[d];
          const double ds = p * (dp - delta);
          for (int64_t d = 0; d < a.depth; ++d) {
            dvj[d] += p * doi[d];
            dqi[d] += scale * ds * kj[d];
            dkj[d] += scale * ds * qi[d];
          }
        }
      }
  round_all(dq);
  round_all(dk);
  round_all(dv);
  return Literal::tuple({std::move(dq), std::move(dk), std::move(dv)});
}

}  // namespace podsim::compiler::interp
