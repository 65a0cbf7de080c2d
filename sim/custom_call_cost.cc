// Custom-call costs by target (custom_call_cost.h).
#include "sim/custom_call_cost.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "compiler/ir/flash_attention.h"
#include "compiler/sharding/shardy.h"

namespace podsim::sim {

using compiler::Computation;
using compiler::Instruction;
using compiler::Shape;

namespace {

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

hw::MatmulInputKind input_of(compiler::DType t) {
  return compiler::dtype_bytes(t) <= 2 ? hw::MatmulInputKind::kBf16 : hw::MatmulInputKind::kF32;
}

const Shape& operand(const Computation& c, const Instruction& call, int i) {
  return c.instr(call.operand(i)).shape;
}

// Fused attention over q [B, S, H, D] and k [B, T, Hkv, D] (Transformer
// Engine's and cuDNN's BSHD layout): logits QK^T are B*H x S x T x D MACs,
// the weighted values PV the same; the backward pass recomputes the logits
// and takes dP, dV, dQ and dK: five such matmuls to the forward's two.
void add_attention(const Computation& c, const Instruction& call, bool backward, hw::OpQuery& q) {
  if (call.operand_count() < 2) return;
  const Shape& query = operand(c, call, 0);
  const Shape& key = operand(c, call, 1);
  if (!query.is_array() || !key.is_array() || query.rank() != 4 || key.rank() != 4) return;
  hw::MatmulWork w;
  w.batch = query.dim(0) * query.dim(2);
  w.m = query.dim(1);
  w.k = query.dim(3);
  w.n = key.dim(1);
  w.input = input_of(query.dtype());
  const int matmuls = backward ? 5 : 2;
  for (int i = 0; i < matmuls; ++i) q.matmuls.push_back(w);
  // Softmax: exp per logit, plus the max and sum reductions.
  const int64_t logits = w.batch * w.m * w.n;
  q.vector_work.push_back({logits, hw::VectorCostClass::kTranscendental});
  q.vector_work.push_back({2 * logits, hw::VectorCostClass::kReduce});
}

// podsim's flash attention calls (compiler/ir/flash_attention.h), block by
// block as the Pallas TPU kernel runs them (docs/simulator.md#flash-attention-cost):
// per (batch, head) and computed block, forward q k^T and p v; backward two
// kernels, dk/dv (q k^T, do v^T, p^T do, ds^T q) and dq (q k^T, do v^T, ds k),
// each recomputing p; the VPU ops the kernels apply per score and per
// accumulator element.
void add_flash_attention(const Computation& c, const Instruction& call, bool backward,
                         hw::OpQuery& q) {
  if (call.operand_count() < 3) return;
  const std::optional<compiler::FlashGeometry> g = compiler::flash_geometry(call, c);
  if (!g) return;
  const int64_t bq = g->block_q, bk = g->block_k, d = g->head_dim;
  const int64_t batch = g->batch_heads * g->blocks.computed;
  const compiler::DType dtype = operand(c, call, 0).dtype();
  auto matmul = [&](int64_t m, int64_t k, int64_t n) {
    q.matmuls.push_back({.batch = batch, .m = m, .k = k, .n = n, .input = input_of(dtype)});
  };
  const int64_t scores = batch * bq * bk;
  auto vpu = [&](int64_t elements, hw::VectorCostClass cost_class) {
    q.vector_work.push_back({elements, cost_class});
  };
  if (backward) {
    for (int kernel = 0; kernel < 2; ++kernel) {
      matmul(bq, d, bk);  // s = q k^T
      matmul(bq, d, bk);  // dp = do v^T
    }
    matmul(bk, bq, d);  // dv += p^T do
    matmul(bk, bq, d);  // dk += ds^T q
    matmul(bq, bk, d);  // dq += ds k
    // Per kernel and score: p = exp(s - m) / l, ds = p (dp - di): exp, 4
    // simple, ds to bf16; dk/dv also p to bf16. Accumulators (f32): dk, dv
    // per key row and dq per query row, one add per block.
    vpu(2 * scores, hw::VectorCostClass::kTranscendental);
    vpu(8 * scores, hw::VectorCostClass::kSimple);
    vpu(3 * scores, hw::VectorCostClass::kConvert);
    vpu(batch * (2 * bk + bq) * d, hw::VectorCostClass::kSimple);
  } else {
    matmul(bq, d, bk);  // s = q k^T
    matmul(bq, bk, d);  // o += p v
    // Per score: row max and sum, s - m, exp, p to bf16. Accumulator per
    // query row: acc = acc * alpha + p v (3 ops per element per block).
    vpu(scores, hw::VectorCostClass::kTranscendental);
    vpu(2 * scores, hw::VectorCostClass::kReduce);
    vpu(scores, hw::VectorCostClass::kSimple);
    vpu(scores, hw::VectorCostClass::kConvert);
    vpu(3 * batch * bq * d, hw::VectorCostClass::kSimple);
  }
}

// A GEMM's dims from its backend_config's dot_dimension_numbers (cuBLAS
// targets print them as JSON); without them, the last dims of lhs [.., M, K]
// and rhs [.., K, N].
void add_gemm(const Computation& c, const Instruction& call, hw::OpQuery& q) {
  if (call.operand_count() < 2) return;
  const Shape& lhs = operand(c, call, 0);
  const Shape& rhs = operand(c, call, 1);
  if (!lhs.is_array() || !rhs.is_array() || lhs.rank() < 2 || rhs.rank() < 2) return;
  std::vector<int64_t> lhs_contracting{lhs.rank() - 1}, lhs_batch, rhs_contracting{rhs.rank() - 2},
      rhs_batch;
  const nlohmann::json config =
      nlohmann::json::parse(call.attrs.backend_config, nullptr, /*allow_exceptions=*/false);
  auto dims = [](const nlohmann::json& j, const char* key, std::vector<int64_t>& out) {
    if (!j.contains(key) || !j[key].is_array()) return;
    out.clear();
    for (const auto& v : j[key]) {
      int64_t d = -1;  // anything but a number or a numeric string is ignored
      if (v.is_number_integer())
        d = v.get<int64_t>();
      else if (v.is_string()) {
        const std::string& text = v.get_ref<const std::string&>();
        std::from_chars(text.data(), text.data() + text.size(), d);
      }
      out.push_back(d);
    }
  };
  if (config.is_object()) {
    const nlohmann::json& gemm =
        config.contains("gemm_backend_config") ? config["gemm_backend_config"] : config;
    if (gemm.contains("dot_dimension_numbers")) {
      const nlohmann::json& d = gemm["dot_dimension_numbers"];
      dims(d, "lhs_contracting_dimensions", lhs_contracting);
      dims(d, "rhs_contracting_dimensions", rhs_contracting);
      dims(d, "lhs_batch_dimensions", lhs_batch);
      dims(d, "rhs_batch_dimensions", rhs_batch);
    }
  }
  auto product = [](const Shape& s, const std::vector<int64_t>& which) {
    int64_t p = 1;
    for (int64_t d : which)
      if (d >= 0 && d < s.rank()) p *= s.dim(static_cast<int>(d));
    return p;
  };
  hw::MatmulWork w;
  w.batch = product(lhs, lhs_batch);
  w.k = product(lhs, lhs_contracting);
  w.m = lhs.num_elements() / std::max<int64_t>(1, w.batch * w.k);
  w.n = rhs.num_elements() /
        std::max<int64_t>(1, product(rhs, rhs_batch) * product(rhs, rhs_contracting));
  w.input = input_of(lhs.dtype());
  q.matmuls.push_back(w);
}

}  // namespace

namespace {
std::optional<std::string> buffer_placement(const compiler::Instruction& call) {
  if (call.attrs.custom_call_target != "annotate_device_placement") return std::nullopt;
  return compiler::frontend_attribute(call.attrs.frontend_attributes, "_xla_buffer_placement");
}
}  // namespace

CustomCallKind classify_custom_call(const compiler::Instruction& call) {
  if (auto placement = buffer_placement(call);
      placement && (*placement == "pinned_host" || *placement == "device"))
    return CustomCallKind::kHostTransfer;
  return classify_custom_call(call.attrs.custom_call_target);
}

bool moves_to_host(const compiler::Instruction& call) {
  if (call.opcode != compiler::Opcode::kCustomCall) return false;
  if (call.attrs.custom_call_target == "MoveToHost") return true;
  auto placement = buffer_placement(call);
  return placement && *placement == "pinned_host";
}

CustomCallKind classify_custom_call(std::string_view target) {
  if (target == "Sharding" || target == "SPMDFullToShardShape" ||
      target == "SPMDShardToFullShape" || target == compiler::kStopGradientTarget ||
      target == "annotate_device_placement" || target == "LayoutConstraint" ||
      target.starts_with("xla.sdy.") || target == "ShardBarrierFrom" ||
      target == "ShardBarrierTo" || target == "X64Combine" || target == "X64SplitLow" ||
      target == "X64SplitHigh")
    return CustomCallKind::kMarker;
  if (target == "MoveToHost" || target == "MoveToDevice") return CustomCallKind::kHostTransfer;
  if (contains(target, "fused_attn") || contains(target, "fmha") ||
      contains(target, "flash_attention")) {
    return contains(target, "backward") || contains(target, "Backward") || contains(target, "bwd")
               ? CustomCallKind::kAttentionBackward
               : CustomCallKind::kAttentionForward;
  }
  if (target == "__cublas$gemm" || target == "__cublas$lt$matmul" ||
      target.starts_with("__cublas$lt$matmul$"))
    return CustomCallKind::kGemm;
  if (target == "TopK") return CustomCallKind::kTopK;
  return CustomCallKind::kUnknown;
}

void add_custom_call_work(const Computation& computation, const Instruction& call,
                          CustomCallKind kind, hw::OpQuery& query) {
  switch (kind) {
    case CustomCallKind::kAttentionForward:
    case CustomCallKind::kAttentionBackward: {
      const bool backward = kind == CustomCallKind::kAttentionBackward;
      if (compiler::is_flash_attention(call) || compiler::is_flash_attention_bwd(call))
        add_flash_attention(computation, call, backward, query);
      else
        add_attention(computation, call, backward, query);
      break;
    }
    case CustomCallKind::kGemm:
      add_gemm(computation, call, query);
      break;
    case CustomCallKind::kTopK: {
      // A sorting network over the last dim: n log2 n compare-exchanges per row.
      if (call.operand_count() < 1 || !computation.instr(call.operand(0)).shape.is_array()) break;
      const Shape& in = computation.instr(call.operand(0)).shape;
      const int64_t n = in.rank() > 0 ? in.dim(in.rank() - 1) : 1;
      const auto log_n =
          static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(std::max<int64_t>(2, n)))));
      query.vector_work.push_back({in.num_elements() * log_n, hw::VectorCostClass::kSimple});
      break;
    }
    default:
      break;
  }
}

std::optional<std::pair<double, double>> flash_attention_traffic(const Computation& computation,
                                                                 const Instruction& call) {
  const bool backward = compiler::is_flash_attention_bwd(call);
  if (call.operand_count() < 3) return std::nullopt;
  const std::optional<compiler::FlashGeometry> geometry =
      compiler::flash_geometry(call, computation);
  if (!geometry) return std::nullopt;
  const compiler::FlashBlocks& blocks = geometry->blocks;
  const auto bytes = [&](int i) {
    return static_cast<double>(operand(computation, call, i).byte_size());
  };
  const double computed = static_cast<double>(blocks.computed);
  // Forward: k and v once per computed block (computed / kv_blocks times
  // over), the rest once.
  const double kv_reads = computed / static_cast<double>(std::max<int64_t>(1, blocks.kv_blocks));
  double read = kv_reads * (bytes(1) + bytes(2));
  if (!backward || call.operand_count() < 6) {
    for (int i = 0; i < call.operand_count(); ++i)
      if (i != 1 && i != 2) read += bytes(i);
    return std::pair{read, static_cast<double>(call.shape.byte_size())};
  }
  // Backward (q, k, v, o, lse, do): o and do once for di = rowsum(o do); the
  // dk/dv kernel reads k, v once and q, do, lse once per computed block; the
  // dq kernel q, do, lse once and k, v once per computed block.
  const double q_reads = computed / static_cast<double>(std::max<int64_t>(1, blocks.q_blocks));
  read += bytes(1) + bytes(2) + bytes(3) + bytes(5);
  read += (1 + q_reads) * (bytes(0) + bytes(4) + bytes(5));
  return std::pair{read, static_cast<double>(call.shape.byte_size())};
}

}  // namespace podsim::sim
