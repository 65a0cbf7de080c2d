// The 2-D sharded Transformer layer of docs/reference/measurements.md: with only the weights and
// the layer input annotated, every forward activation gets the GSPMD 2-D
// sharding (mesh [x=2, y=4], device = 4x + y):
//   activations (B,L,M) = [x,-,y]   -> {devices=[2,1,4]<=[8]}
//   Q/K/V (B,L,N,D)     = [x,-,y,-] -> {devices=[2,1,4,1]<=[8]}
//   FFN hidden (B,L,H)  = [x,-,y]   -> {devices=[2,1,4]<=[8]}
//   scores/probs (B,N,L,T) and context (B,N,L,D): heads on y -> [x,y,-,-]

#include "tests/compiler/propagation/test_util.h"
#include "tests/test_files.h"

namespace podsim::compiler::testing {
namespace {

TEST(TransformerLayer2D, EveryForwardActivationGetsTheGspmd2DSharding) {
  Module m =
      propagate_text(test_files::read_source_file("workloads/examples/transformer_layer_2d.hlo"));
  const std::string act = canon("{devices=[2,1,4]<=[8]}");
  for (const char* name : {"h", "ln1_centered", "ln1_normed", "attn_out", "residual_1", "h2",
                           "ln2_normed", "ffn_out", "residual_2"})
    EXPECT_EQ(sharding_of(m, name), act) << name;
  const std::string qkv = canon("{devices=[2,1,4,1]<=[8]}");
  for (const char* name : {"q", "k", "v"}) EXPECT_EQ(sharding_of(m, name), qkv) << name;
  const std::string hidden = canon("{devices=[2,1,4]<=[8]}");
  for (const char* name : {"gate_pre", "linear", "gelu", "gated"})
    EXPECT_EQ(sharding_of(m, name), hidden) << name;
  const std::string heads = canon("{devices=[2,4,1,1]<=[8]}");
  for (const char* name : {"scores_raw", "scores", "probs", "context"})
    EXPECT_EQ(sharding_of(m, name), heads) << name;
  // Layer-norm statistics (B,L): batch on x, replicated over y.
  EXPECT_EQ(sharding_of(m, "ln1_mean"), canon("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"));
}

}  // namespace
}  // namespace podsim::compiler::testing
