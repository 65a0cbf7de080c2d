// Transformer blocks (transformer_blocks.cc): the attention hook. With
// model.attention: flash every attention is one fused call (causal for the
// decoder's self-attention, block min(flash_block, seq_len)) and no [B, N, L, T]
// scores tensor is built; standard attention builds it and no call.
#include <gtest/gtest.h>

#include "compiler/ir/flash_attention.h"
#include "workloads/model_builder.h"
#include "workloads/workload.h"

namespace podsim::workloads {
namespace {

const char* kSmall = R"(name: small
hardware: tpuv3
mesh:
  axes: {x: 2}
model:
  kind: dense_transformer
  layers: 2
  model_dim: 64
  ffn_dim: 128
  heads: 4
  head_dim: 16
  vocab: 128
  seq_len: 32
  global_batch: 4
  position: rotary
ATTENTION
sharding:
  activations: [x, null, null]
)";

compiler::Module build(const std::string& attention) {
  std::string yaml = kSmall;
  yaml.replace(yaml.find("ATTENTION\n"), 10, attention);
  return build_model(parse_workload(yaml, "w.yaml")).module;
}

int64_t flash_calls(const compiler::Module& m) {
  int64_t n = 0;
  for (const compiler::Instruction& in : m.entry().instructions()) {
    if (!compiler::is_flash_attention(in)) continue;
    ++n;
    const compiler::FlashAttentionConfig c = compiler::flash_config(in);
    EXPECT_TRUE(c.causal);  // decoder-only: causal self-attention
    EXPECT_EQ(c.block_q, 16);
    EXPECT_EQ(c.block_k, 16);
  }
  return n;
}

// A [B, N, L, T] = [4, 4, 32, 32] tensor anywhere in the entry.
bool has_scores(const compiler::Module& m) {
  for (const compiler::Instruction& in : m.entry().instructions())
    if (in.shape.is_array() && in.shape.dims() == std::vector<int64_t>{4, 4, 32, 32}) return true;
  return false;
}

TEST(TransformerBlocks, FlashAttentionIsOneFusedCallPerLayer) {
  const compiler::Module flash = build("  attention: flash\n  flash_block: 16\n");
  EXPECT_EQ(flash_calls(flash), 2);
  EXPECT_FALSE(has_scores(flash));
  const compiler::Module standard = build("");
  EXPECT_EQ(flash_calls(standard), 0);
  EXPECT_TRUE(has_scores(standard));
}

}  // namespace
}  // namespace podsim::workloads
