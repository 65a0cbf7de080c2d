// Custom-call costs by target (sim/custom_call_cost.h).
#include "sim/custom_call_cost.h"

#include <gtest/gtest.h>

#include "compiler/hlo/hlo_parser.h"
#include "sim/op_cost.h"
#include "tests/sim/sim_test_util.h"

namespace podsim::sim {
namespace {

TEST(CustomCallCost, TargetsByKind) {
  EXPECT_EQ(classify_custom_call("Sharding"), CustomCallKind::kMarker);
  EXPECT_EQ(classify_custom_call("SPMDFullToShardShape"), CustomCallKind::kMarker);
  EXPECT_EQ(classify_custom_call("annotate_device_placement"), CustomCallKind::kMarker);
  EXPECT_EQ(classify_custom_call("xla.sdy.FuncResultSharding"), CustomCallKind::kMarker);
  EXPECT_EQ(classify_custom_call("MoveToHost"), CustomCallKind::kHostTransfer);
  EXPECT_EQ(classify_custom_call("te_fused_attn_forward_ffi"), CustomCallKind::kAttentionForward);
  EXPECT_EQ(classify_custom_call("te_fused_attn_backward_ffi"), CustomCallKind::kAttentionBackward);
  EXPECT_EQ(classify_custom_call("__cudnn$fmhaSoftmax"), CustomCallKind::kAttentionForward);
  EXPECT_EQ(classify_custom_call("__cublas$gemm"), CustomCallKind::kGemm);
  EXPECT_EQ(classify_custom_call("TopK"), CustomCallKind::kTopK);
  EXPECT_EQ(classify_custom_call("my_kernel"), CustomCallKind::kUnknown);
}

constexpr const char* kCalls = R"(HloModule calls
ENTRY %main (q: bf16[2,128,4,64], k: bf16[2,256,4,64], v: bf16[2,256,4,64], a: f32[32,64], b: f32[64,16], x: f32[8,1024]) -> f32[8,1024] {
  %q = bf16[2,128,4,64]{3,2,1,0} parameter(0)
  %k = bf16[2,256,4,64]{3,2,1,0} parameter(1)
  %v = bf16[2,256,4,64]{3,2,1,0} parameter(2)
  %a = f32[32,64]{1,0} parameter(3)
  %b = f32[64,16]{1,0} parameter(4)
  %x = f32[8,1024]{1,0} parameter(5)
  %fwd = bf16[2,128,4,64]{3,2,1,0} custom-call(%q, %k, %v), custom_call_target="te_fused_attn_forward_ffi"
  %bwd = bf16[2,128,4,64]{3,2,1,0} custom-call(%q, %k, %v), custom_call_target="te_fused_attn_backward_ffi"
  %g = f32[32,16]{1,0} custom-call(%a, %b), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}}
  %t = f32[8,1024]{1,0} custom-call(%x), custom_call_target="TopK"
  ROOT %u = f32[8,1024]{1,0} custom-call(%x), custom_call_target="my_kernel"
})";

const compiler::Instruction& find(const compiler::Module& m, const std::string& name) {
  return m.entry().instr(m.entry().find(name));
}

// q [B=2, S=128, H=4, D=64], k [B, T=256, H, D]: QK^T and PV are each a
// batch of B*H = 8 matmuls of m=S, k=D, n=T; the backward does five.
TEST(CustomCallCost, FusedAttentionIsItsMatmuls) {
  const compiler::Module m = compiler::parse_hlo(kCalls);
  const hw::OpQuery fwd = op_query(m.entry(), find(m, "fwd"));
  ASSERT_EQ(fwd.matmuls.size(), 2u);
  EXPECT_EQ(fwd.matmuls[0].batch, 8);
  EXPECT_EQ(fwd.matmuls[0].m, 128);
  EXPECT_EQ(fwd.matmuls[0].k, 64);
  EXPECT_EQ(fwd.matmuls[0].n, 256);
  EXPECT_EQ(fwd.matmuls[0].input, hw::MatmulInputKind::kBf16);
  // 2 matmuls x 2 x 8 x 128 x 64 x 256 = 67,108,864 FLOPs.
  EXPECT_DOUBLE_EQ(hw::matmul_flops(fwd.matmuls[0]) * 2, 67108864.0);
  EXPECT_EQ(op_query(m.entry(), find(m, "bwd")).matmuls.size(), 5u);
}

TEST(CustomCallCost, GemmDimsFromBackendConfig) {
  const compiler::Module m = compiler::parse_hlo(kCalls);
  const hw::OpQuery q = op_query(m.entry(), find(m, "g"));
  ASSERT_EQ(q.matmuls.size(), 1u);
  EXPECT_EQ(q.matmuls[0].m, 32);
  EXPECT_EQ(q.matmuls[0].k, 64);
  EXPECT_EQ(q.matmuls[0].n, 16);
  EXPECT_EQ(q.matmuls[0].input, hw::MatmulInputKind::kF32);
}

// A backend_config whose dimension lists hold words or objects (a user's
// file can say anything): those entries are ignored, never thrown on; the
// remaining lists still give the 32 x 64 x 16 GEMM.
TEST(CustomCallCost, GemmIgnoresDimensionEntriesThatAreNotNumbers) {
  const compiler::Module m = compiler::parse_hlo(R"(HloModule odd
ENTRY %main (a: f32[32,64], b: f32[64,16]) -> f32[32,16] {
  %a = f32[32,64]{1,0} parameter(0)
  %b = f32[64,16]{1,0} parameter(1)
  ROOT %g = f32[32,16]{1,0} custom-call(%a, %b), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":["x"],"rhs_batch_dimensions":[{}]}}}
})");
  hw::OpQuery q;
  ASSERT_NO_THROW(q = op_query(m.entry(), find(m, "g")));
  ASSERT_EQ(q.matmuls.size(), 1u);
  EXPECT_EQ(q.matmuls[0].batch, 1);
  EXPECT_EQ(q.matmuls[0].m, 32);
  EXPECT_EQ(q.matmuls[0].k, 64);
  EXPECT_EQ(q.matmuls[0].n, 16);
}

// TopK over rows of 1024: log2(1024) = 10 compare-exchange passes per element.
TEST(CustomCallCost, TopKIsASortOfTheLastDim) {
  const compiler::Module m = compiler::parse_hlo(kCalls);
  const hw::OpQuery q = op_query(m.entry(), find(m, "t"));
  ASSERT_EQ(q.vector_work.size(), 1u);
  EXPECT_EQ(q.vector_work[0].elements, 8 * 1024 * 10);
}

// An unknown target: no work, its operand read and its result written.
TEST(CustomCallCost, UnknownTargetCostsItsBytes) {
  const compiler::Module m = compiler::parse_hlo(kCalls);
  const compiler::Instruction& u = find(m, "u");
  EXPECT_EQ(classify(u), OpClass::kCompute);
  const hw::OpQuery q = op_query(m.entry(), u);
  EXPECT_TRUE(q.matmuls.empty());
  EXPECT_TRUE(q.vector_work.empty());
  EXPECT_DOUBLE_EQ(q.hbm_bytes_read, 8 * 1024 * 4);
  EXPECT_DOUBLE_EQ(q.hbm_bytes_written, 8 * 1024 * 4);
  EXPECT_EQ(classify(find(m, "q")), OpClass::kFree);
}

// MoveToHost of 4 MiB over a 1e9 B/s host link: 4194304 / 1e9 s, far
// longer than its HBM copy; without a host link only the HBM copy counts.
TEST(CustomCallCost, HostTransferCrossesTheHostLink) {
  const compiler::Module m = compiler::parse_hlo(R"(HloModule offload
ENTRY %main (x: f32[1024,1024]) -> f32[1024,1024] {
  %x = f32[1024,1024]{1,0} parameter(0)
  ROOT %h = f32[1024,1024]{1,0} custom-call(%x), custom_call_target="MoveToHost"
})");
  const hw::System system = testing::make_system({1});
  OpCostModel with_host(system.core(), &m, 1e9);
  const OpCost cost = with_host.instruction(m.entry(), find(m, "h"));
  EXPECT_GE(cost.seconds, 4194304.0 / 1e9);
  EXPECT_LT(cost.seconds, 4194304.0 / 1e9 + 1e-5);  // plus at most the op's fixed costs
  EXPECT_EQ(cost.bound, hw::Bound::kHbm);
  OpCostModel without(system.core(), &m);
  EXPECT_LT(without.instruction(m.entry(), find(m, "h")).seconds, 1e-3);
}

TEST(CustomCallCost, JaxPlacementAnnotationsAreHostTransfers) {
  // jax's host offload writes annotate_device_placement with a placement;
  // XLA turns "pinned_host" into MoveToHost and "device" into MoveToDevice.
  // Without a placement the call is a marker.
  const compiler::Module m = compiler::parse_hlo(R"(HloModule placement
ENTRY %main (x: f32[256]) -> f32[256] {
  %x = f32[256]{0} parameter(0)
  %out = f32[256]{0} custom-call(%x), custom_call_target="annotate_device_placement", frontend_attributes={_xla_buffer_placement="pinned_host"}
  %back = f32[256]{0} custom-call(%out), custom_call_target="annotate_device_placement", frontend_attributes={_xla_buffer_placement="device"}
  %plain = f32[256]{0} custom-call(%back), custom_call_target="annotate_device_placement"
  ROOT %m = f32[256]{0} custom-call(%plain), custom_call_target="MoveToHost"
})");
  EXPECT_EQ(classify_custom_call(find(m, "out")), CustomCallKind::kHostTransfer);
  EXPECT_EQ(classify_custom_call(find(m, "back")), CustomCallKind::kHostTransfer);
  EXPECT_EQ(classify_custom_call(find(m, "plain")), CustomCallKind::kMarker);
  EXPECT_EQ(classify_custom_call(find(m, "m")), CustomCallKind::kHostTransfer);
  EXPECT_TRUE(moves_to_host(find(m, "out")));
  EXPECT_FALSE(moves_to_host(find(m, "back")));
  EXPECT_FALSE(moves_to_host(find(m, "plain")));
  EXPECT_TRUE(moves_to_host(find(m, "m")));
  EXPECT_FALSE(moves_to_host(find(m, "x")));
  // 1 KiB at 1e6 B/s: 1.024 ms, far above the op's fixed costs.
  const hw::System system = testing::make_system({1});
  OpCostModel costs(system.core(), &m, 1e6);
  EXPECT_GE(costs.instruction(m.entry(), find(m, "out")).seconds, 1024.0 / 1e6);
  EXPECT_LT(costs.instruction(m.entry(), find(m, "plain")).seconds, 1024.0 / 1e6);
}

// podsim's flash attention at L = T = 4096, b = 512, B = 1, N = 2, D = 128,
// bf16: causal runs 8 * 9 / 2 = 36 of the 8 x 8 blocks per (batch, head).
constexpr const char* kFlash = R"(HloModule flash
ENTRY %main (q: bf16[1,4096,2,128], k: bf16[1,4096,2,128], v: bf16[1,4096,2,128], l: f32[1,2,4096]) -> (bf16[1,4096,2,128], bf16[1,4096,2,128], bf16[1,4096,2,128]) {
  %q = bf16[1,4096,2,128]{3,2,1,0} parameter(0)
  %k = bf16[1,4096,2,128]{3,2,1,0} parameter(1)
  %v = bf16[1,4096,2,128]{3,2,1,0} parameter(2)
  %l = f32[1,2,4096]{2,1,0} parameter(3)
  %fwd = (bf16[1,4096,2,128]{3,2,1,0}, f32[1,2,4096]{2,1,0}) custom-call(%q, %k, %v), custom_call_target="podsim.flash_attention", backend_config={"causal":true,"block_q":512,"block_k":512}
  %full = (bf16[1,4096,2,128]{3,2,1,0}, f32[1,2,4096]{2,1,0}) custom-call(%q, %k, %v), custom_call_target="podsim.flash_attention", backend_config={"causal":false,"block_q":512,"block_k":512}
  ROOT %bwd = (bf16[1,4096,2,128]{3,2,1,0}, bf16[1,4096,2,128]{3,2,1,0}, bf16[1,4096,2,128]{3,2,1,0}) custom-call(%q, %k, %v, %q, %l, %q), custom_call_target="podsim.flash_attention_bwd", backend_config={"causal":true,"block_q":512,"block_k":512}
})";

double flops_of(const hw::OpQuery& q) {
  double f = 0;
  for (const auto& m : q.matmuls) f += hw::matmul_flops(m);
  return f;
}

TEST(CustomCallCost, FlashAttentionRunsOnlyTheCausalBlocks) {
  const compiler::Module m = compiler::parse_hlo(kFlash);
  EXPECT_EQ(classify_custom_call("podsim.flash_attention"), CustomCallKind::kAttentionForward);
  EXPECT_EQ(classify_custom_call("podsim.flash_attention_bwd"), CustomCallKind::kAttentionBackward);
  const hw::OpQuery fwd = op_query(m.entry(), find(m, "fwd"));
  ASSERT_EQ(fwd.matmuls.size(), 2u);
  // Per block 512 x 128 x 512 MACs, batch = B N 36 = 72 blocks.
  EXPECT_EQ(fwd.matmuls[0].batch, 72);
  EXPECT_EQ(fwd.matmuls[0].m, 512);
  EXPECT_EQ(fwd.matmuls[0].k, 128);
  EXPECT_EQ(fwd.matmuls[0].n, 512);
  // 2 matmuls x 2 x 72 x 512 x 512 x 128 = 9,663,676,416 FLOPs (36/64 of the dense 2 x 2 x 2 x
  // 4096^2 x 128 = 17,179,869,184).
  EXPECT_DOUBLE_EQ(flops_of(fwd), 9663676416.0);
  EXPECT_DOUBLE_EQ(flops_of(op_query(m.entry(), find(m, "full"))), 17179869184.0);
  // Backward: the dk/dv kernel's 4 block matmuls and the dq kernel's 3, 7/2 of
  // the forward.
  const hw::OpQuery bwd = op_query(m.entry(), find(m, "bwd"));
  EXPECT_EQ(bwd.matmuls.size(), 7u);
  EXPECT_DOUBLE_EQ(flops_of(bwd), 9663676416.0 * 7 / 2);
  // One exp per computed score: 72 x 512 x 512.
  ASSERT_FALSE(fwd.vector_work.empty());
  EXPECT_EQ(fwd.vector_work[0].elements, 72 * 512 * 512);
}

int64_t vector_elements(const hw::OpQuery& q, hw::VectorCostClass cost_class) {
  int64_t n = 0;
  for (const auto& v : q.vector_work)
    if (v.cost_class == cost_class) n += v.elements;
  return n;
}

TEST(CustomCallCost, FlashAttentionCountsTheKernelsVectorOps) {
  // 72 computed blocks of 512 x 512 scores, D = 128 (S = 72 x 512^2 scores).
  const compiler::Module m = compiler::parse_hlo(kFlash);
  const int64_t s = 72 * 512 * 512, rows = 72 * 512 * 128;
  const hw::OpQuery fwd = op_query(m.entry(), find(m, "fwd"));
  // Forward per score: exp, row max and sum, s - m, p to bf16; per accumulator
  // element (512 query rows x D per block): acc * alpha + p v, 3 ops.
  EXPECT_EQ(vector_elements(fwd, hw::VectorCostClass::kTranscendental), s);
  EXPECT_EQ(vector_elements(fwd, hw::VectorCostClass::kReduce), 2 * s);
  EXPECT_EQ(vector_elements(fwd, hw::VectorCostClass::kSimple), s + 3 * rows);
  EXPECT_EQ(vector_elements(fwd, hw::VectorCostClass::kConvert), s);
  const hw::OpQuery bwd = op_query(m.entry(), find(m, "bwd"));
  // Backward, each of 2 kernels per score: exp(s - m) / l and p (dp - di): an
  // exp and 4 simple; ds to bf16 twice, p once; dk, dv, dq accumulate once
  // per block: 3 x 512 rows x D.
  EXPECT_EQ(vector_elements(bwd, hw::VectorCostClass::kTranscendental), 2 * s);
  EXPECT_EQ(vector_elements(bwd, hw::VectorCostClass::kSimple), 8 * s + 3 * rows);
  EXPECT_EQ(vector_elements(bwd, hw::VectorCostClass::kConvert), 3 * s);
}

TEST(CustomCallCost, FlashAttentionRereadsKeysAndValuesPerQueryBlock) {
  // Each tensor [1,4096,2,128] bf16 = 2 MiB, lse 32 KiB. Forward causal: q
  // once + k, v 36/8 = 4.5 times each; writes o + lse.
  const compiler::Module m = compiler::parse_hlo(kFlash);
  const double t = 2.0 * 1024 * 1024, lse = 1 * 2 * 4096 * 4;
  const hw::OpQuery fwd = op_query(m.entry(), find(m, "fwd"));
  EXPECT_DOUBLE_EQ(fwd.hbm_bytes_read, t + 2 * 4.5 * t);
  EXPECT_DOUBLE_EQ(fwd.hbm_bytes_written, t + lse);
  // Non-causal: k and v 8 times (once per q block).
  EXPECT_DOUBLE_EQ(op_query(m.entry(), find(m, "full")).hbm_bytes_read, t + 2 * 8 * t);
  // Backward (the call's operands q, k, v, o = q, lse, do = q): o and do once
  // for di; dk/dv kernel: k, v once, q, lse, do once per computed block (36/8
  // = 4.5 times); dq kernel: q, lse, do once, k, v 4.5 times. Writes dq, dk, dv.
  const hw::OpQuery bwd = op_query(m.entry(), find(m, "bwd"));
  EXPECT_DOUBLE_EQ(bwd.hbm_bytes_read, 2 * t + 2 * t + 5.5 * (2 * t + lse) + 2 * 4.5 * t);
  EXPECT_DOUBLE_EQ(bwd.hbm_bytes_written, 3 * t);
}

}  // namespace
}  // namespace podsim::sim
