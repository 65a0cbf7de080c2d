// Compile-time benchmark of sharding propagation + SPMD partitioning :
// the same stack of dense Transformer decoder layers (the layer of
// workloads/examples/transformer_layer_2d.hlo, repeated) annotated for 2-D
// sharding on meshes [2,4], [8,16] and [32,64] (8, 128, 2048 devices).
// GSPMD's promise is that compile time does not grow with the device count
// (one SPMD program, iota replica groups), so the 2048/8 time ratio should be
// close to 1; counters report the instruction counts in and out.
//
//   partition_bench --benchmark_filter=PropagateAndPartition
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <string>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/propagation/propagation.h"
#include "compiler/spmd/partitioner.h"

namespace podsim::compiler {
namespace {

// Shapes large enough that every dim divides by both mesh axes of [32,64]:
// batch B, sequence L (= keys T), model M, heads N, head dim D, ffn H.
struct LayerDims {
  int64_t batch = 64, seq = 128, model = 1024, heads = 64, head_dim = 64, ffn = 4096;
};

// Shardings on a mesh [x, y] with device id = y_size * x + y (see the
// example file's header for the dims mappings, from docs/reference/measurements.md):
// activations (B,L,M) = [x,-,y]; Wq/Wk/Wv (M,N,D) = [x,y,-]; Wo (N,D,M) =
// [y,-,x]; wi (M,H) = [x,y]; wo (H,M) = [y,x]; layer-norm scales (M) = [y].
struct MeshShardings {
  std::string activation, qkv_weight, attn_out_weight, ffn_in, ffn_out, scale;
};

MeshShardings mesh_shardings(int64_t x, int64_t y) {
  const int64_t n = x * y;
  return MeshShardings{
      fmt::format("{{devices=[{},1,{}]<=[{}]}}", x, y, n),
      fmt::format("{{devices=[{},{},1]<=[{}]}}", x, y, n),
      fmt::format("{{devices=[{},1,{}]<=[{},{}]T(1,0)}}", y, x, x, y),
      fmt::format("{{devices=[{},{}]<=[{}]}}", x, y, n),
      fmt::format("{{devices=[{},{}]<=[{},{}]T(1,0)}}", y, x, x, y),
      fmt::format("{{devices=[{},{}]<=[{},{}]T(1,0) last_tile_dim_replicate}}", y, x, x, y),
  };
}

// One decoder layer (pre-layer-norm attention + gated-GELU FFN), the ops of
// transformer_layer_2d.hlo with every name suffixed by the layer index and
// its weights as parameters first_param.. first_param+8. `in` is the layer
// input; the layer's output is named "out{l}".
std::string layer_hlo(int l, const std::string& in, int first_param, const LayerDims& d,
                      const MeshShardings& s) {
  const std::string blm = fmt::format("f32[{},{},{}]", d.batch, d.seq, d.model);
  const std::string bl = fmt::format("f32[{},{}]", d.batch, d.seq);
  const std::string blnd = fmt::format("f32[{},{},{},{}]", d.batch, d.seq, d.heads, d.head_dim);
  const std::string bnlt = fmt::format("f32[{},{},{},{}]", d.batch, d.heads, d.seq, d.seq);
  const std::string bnl = fmt::format("f32[{},{},{}]", d.batch, d.heads, d.seq);
  const std::string bnld = fmt::format("f32[{},{},{},{}]", d.batch, d.heads, d.seq, d.head_dim);
  const std::string blh = fmt::format("f32[{},{},{}]", d.batch, d.seq, d.ffn);
  const std::string mnd = fmt::format("f32[{},{},{}]", d.model, d.heads, d.head_dim);
  const std::string ndm = fmt::format("f32[{},{},{}]", d.heads, d.head_dim, d.model);
  const std::string mh = fmt::format("f32[{},{}]", d.model, d.ffn);
  const std::string hm = fmt::format("f32[{},{}]", d.ffn, d.model);
  const std::string m = fmt::format("f32[{}]", d.model);
  std::string t;
  auto line = [&](const std::string& text) { t += "  " + text + "\n"; };
  int p = first_param;
  line(fmt::format("ln1_scale{0} = {1} parameter({2}), sharding={3}", l, m, p++, s.scale));
  line(fmt::format("wq{0} = {1} parameter({2}), sharding={3}", l, mnd, p++, s.qkv_weight));
  line(fmt::format("wk{0} = {1} parameter({2}), sharding={3}", l, mnd, p++, s.qkv_weight));
  line(fmt::format("wv{0} = {1} parameter({2}), sharding={3}", l, mnd, p++, s.qkv_weight));
  line(
      fmt::format("wo_attn{0} = {1} parameter({2}), sharding={3}", l, ndm, p++, s.attn_out_weight));
  line(fmt::format("ln2_scale{0} = {1} parameter({2}), sharding={3}", l, m, p++, s.scale));
  line(fmt::format("wi_0_{0} = {1} parameter({2}), sharding={3}", l, mh, p++, s.ffn_in));
  line(fmt::format("wi_1_{0} = {1} parameter({2}), sharding={3}", l, mh, p++, s.ffn_in));
  line(fmt::format("wo_ffn{0} = {1} parameter({2}), sharding={3}", l, hm, p++, s.ffn_out));
  // Layer norm: (x - mean) * rsqrt(var + eps) * scale, over M.
  auto layer_norm = [&](const std::string& tag, const std::string& x, const std::string& scale,
                        const std::string& result) {
    const std::string n = tag + std::to_string(l);
    line(fmt::format("{0}_sum = {1} reduce({2}, zero), dimensions={{2}}, to_apply=add", n, bl, x));
    line(fmt::format("{0}_mean = {1} multiply({0}_sum, inv_model_bl)", n, bl));
    line(fmt::format("{0}_mean_b = {1} broadcast({0}_mean), dimensions={{0,1}}", n, blm));
    line(fmt::format("{0}_centered = {1} subtract({2}, {0}_mean_b)", n, blm, x));
    line(fmt::format("{0}_sq = {1} multiply({0}_centered, {0}_centered)", n, blm));
    line(fmt::format("{0}_sq_sum = {1} reduce({0}_sq, zero), dimensions={{2}}, to_apply=add", n,
                     bl));
    line(fmt::format("{0}_var = {1} multiply({0}_sq_sum, inv_model_bl)", n, bl));
    line(fmt::format("{0}_var_eps = {1} add({0}_var, epsilon_bl)", n, bl));
    line(fmt::format("{0}_inv_std = {1} rsqrt({0}_var_eps)", n, bl));
    line(fmt::format("{0}_inv_std_b = {1} broadcast({0}_inv_std), dimensions={{0,1}}", n, blm));
    line(fmt::format("{0}_normed = {1} multiply({0}_centered, {0}_inv_std_b)", n, blm));
    line(fmt::format("{0}_scale_b = {1} broadcast({2}), dimensions={{2}}", n, blm, scale));
    line(fmt::format("{0} = {1} multiply({2}_normed, {2}_scale_b)", result, blm, n));
  };
  const std::string L = std::to_string(l);
  layer_norm("ln1_", in, "ln1_scale" + L, "h" + L);
  for (const char* w : {"q", "k", "v"})
    line(fmt::format(
        "{0}{1} = {2} dot(h{1}, w{0}{1}), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}",
        w, L, blnd));
  line(fmt::format(
      "scores_raw{0} = {1} dot(q{0}, k{0}), lhs_batch_dims={{0,2}}, lhs_contracting_dims={{3}}, "
      "rhs_batch_dims={{0,2}}, rhs_contracting_dims={{3}}",
      L, bnlt));
  line(fmt::format("scale_b{0} = {1} broadcast(inv_sqrt_head_dim), dimensions={{}}", L, bnlt));
  line(fmt::format("scores{0} = {1} multiply(scores_raw{0}, scale_b{0})", L, bnlt));
  line(fmt::format("scores_max{0} = {1} reduce(scores{0}, neg_inf), dimensions={{3}}, to_apply=max",
                   L, bnl));
  line(
      fmt::format("scores_max_b{0} = {1} broadcast(scores_max{0}), dimensions={{0,1,2}}", L, bnlt));
  line(fmt::format("shifted{0} = {1} subtract(scores{0}, scores_max_b{0})", L, bnlt));
  line(fmt::format("exp{0} = {1} exponential(shifted{0})", L, bnlt));
  line(
      fmt::format("exp_sum{0} = {1} reduce(exp{0}, zero), dimensions={{3}}, to_apply=add", L, bnl));
  line(fmt::format("exp_sum_b{0} = {1} broadcast(exp_sum{0}), dimensions={{0,1,2}}", L, bnlt));
  line(fmt::format("probs{0} = {1} divide(exp{0}, exp_sum_b{0})", L, bnlt));
  line(fmt::format(
      "context{0} = {1} dot(probs{0}, v{0}), lhs_batch_dims={{0,1}}, lhs_contracting_dims={{3}}, "
      "rhs_batch_dims={{0,2}}, rhs_contracting_dims={{1}}",
      L, bnld));
  line(
      fmt::format("attn_out{0} = {1} dot(context{0}, wo_attn{0}), lhs_contracting_dims={{1,3}}, "
                  "rhs_contracting_dims={{0,1}}",
                  L, blm));
  line(fmt::format("residual_1_{0} = {1} add({2}, attn_out{0})", L, blm, in));
  layer_norm("ln2_", "residual_1_" + L, "ln2_scale" + L, "h2_" + L);
  line(
      fmt::format("gate_pre{0} = {1} dot(h2_{0}, wi_0_{0}), lhs_contracting_dims={{2}}, "
                  "rhs_contracting_dims={{0}}",
                  L, blh));
  line(
      fmt::format("linear{0} = {1} dot(h2_{0}, wi_1_{0}), lhs_contracting_dims={{2}}, "
                  "rhs_contracting_dims={{0}}",
                  L, blh));
  // GELU, tanh form: 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))).
  line(fmt::format("cube{0} = {1} multiply(gate_pre{0}, gate_pre{0})", L, blh));
  line(fmt::format("cube1_{0} = {1} multiply(cube{0}, gate_pre{0})", L, blh));
  line(fmt::format("gelu_c_b{0} = {1} broadcast(gelu_c), dimensions={{}}", L, blh));
  line(fmt::format("cube_scaled{0} = {1} multiply(cube1_{0}, gelu_c_b{0})", L, blh));
  line(fmt::format("inner{0} = {1} add(gate_pre{0}, cube_scaled{0})", L, blh));
  line(fmt::format("s2pi_b{0} = {1} broadcast(sqrt_2_over_pi), dimensions={{}}", L, blh));
  line(fmt::format("arg{0} = {1} multiply(inner{0}, s2pi_b{0})", L, blh));
  line(fmt::format("tanh{0} = {1} tanh(arg{0})", L, blh));
  line(fmt::format("one_b{0} = {1} broadcast(one), dimensions={{}}", L, blh));
  line(fmt::format("one_plus{0} = {1} add(tanh{0}, one_b{0})", L, blh));
  line(fmt::format("half_b{0} = {1} broadcast(half), dimensions={{}}", L, blh));
  line(fmt::format("half_a{0} = {1} multiply(gate_pre{0}, half_b{0})", L, blh));
  line(fmt::format("gelu{0} = {1} multiply(half_a{0}, one_plus{0})", L, blh));
  line(fmt::format("gated{0} = {1} multiply(gelu{0}, linear{0})", L, blh));
  line(
      fmt::format("ffn_out{0} = {1} dot(gated{0}, wo_ffn{0}), lhs_contracting_dims={{2}}, "
                  "rhs_contracting_dims={{0}}",
                  L, blm));
  line(fmt::format("out{0} = {1} add(residual_1_{0}, ffn_out{0})", L, blm));
  return t;
}

// `layers` decoder layers on a mesh [x, y]; only the first input and the
// weights are annotated, propagation fills in the rest.
std::string transformer_stack_hlo(int layers, int64_t x, int64_t y) {
  const LayerDims d;
  const MeshShardings s = mesh_shardings(x, y);
  std::string t = fmt::format("HloModule transformer_stack, num_partitions={}\n\n", x * y);
  t += "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, "
       "b)\n}\n\n";
  t += "max {\n  c = f32[] parameter(0)\n  e = f32[] parameter(1)\n  ROOT m = f32[] maximum(c, "
       "e)\n}\n\n";
  t += "ENTRY stack {\n";
  t += fmt::format("  x = f32[{},{},{}] parameter(0), sharding={}\n", d.batch, d.seq, d.model,
                   s.activation);
  t += "  zero = f32[] constant(0)\n  neg_inf = f32[] constant(-inf)\n  inv_model = f32[] "
       "constant(0.0009765625)\n";
  t += "  epsilon = f32[] constant(1e-06)\n  inv_sqrt_head_dim = f32[] constant(0.125)\n";
  t += "  gelu_c = f32[] constant(0.044715)\n  sqrt_2_over_pi = f32[] constant(0.7978846)\n";
  t += "  one = f32[] constant(1)\n  half = f32[] constant(0.5)\n";
  t += fmt::format("  inv_model_bl = f32[{},{}] broadcast(inv_model), dimensions={{}}\n", d.batch,
                   d.seq);
  t += fmt::format("  epsilon_bl = f32[{},{}] broadcast(epsilon), dimensions={{}}\n", d.batch,
                   d.seq);
  std::string in = "x";
  for (int l = 0; l < layers; ++l) {
    t += layer_hlo(l, in, 1 + 9 * l, d, s);
    in = "out" + std::to_string(l);
  }
  t += fmt::format("  ROOT result = f32[{},{},{}] copy({})\n}}\n", d.batch, d.seq, d.model, in);
  return t;
}

constexpr int kLayers = 4;

// Arg 0: mesh x size, arg 1: mesh y size. Times propagation + partitioning
// of a fresh copy of the parsed module (parsing is outside the loop).
void BM_PropagateAndPartition(benchmark::State& state) {
  const int64_t x = state.range(0), y = state.range(1);
  const Module parsed = parse_hlo(transformer_stack_hlo(kLayers, x, y));
  SpmdStats stats;
  int64_t out_instructions = 0;
  for (auto _ : state) {
    Module module = parsed;
    propagate_shardings(module);
    SpmdResult result = partition_spmd_with_stats(module, SpmdOptions{x * y});
    out_instructions = result.module.entry().size();
    stats = result.stats;
    benchmark::DoNotOptimize(result);
  }
  state.counters["devices"] = static_cast<double>(x * y);
  state.counters["instr_in"] = static_cast<double>(parsed.entry().size());
  state.counters["instr_out"] = static_cast<double>(out_instructions);
  state.counters["collectives"] =
      static_cast<double>(stats.all_reduces + stats.all_gathers + stats.all_to_alls +
                          stats.collective_permutes + stats.reduce_scatters);
  state.counters["full_repl"] = static_cast<double>(stats.full_replications);
  state.counters["fallbacks"] = static_cast<double>(stats.default_fallbacks);
}
BENCHMARK(BM_PropagateAndPartition)
    ->Args({2, 4})
    ->Args({8, 16})
    ->Args({32, 64})
    ->Unit(benchmark::kMillisecond);

// The two phases separately, to see which one (if any) grows with devices.
void BM_Propagate(benchmark::State& state) {
  const int64_t x = state.range(0), y = state.range(1);
  const Module parsed = parse_hlo(transformer_stack_hlo(kLayers, x, y));
  for (auto _ : state) {
    Module module = parsed;
    benchmark::DoNotOptimize(propagate_shardings(module));
  }
  state.counters["devices"] = static_cast<double>(x * y);
}
BENCHMARK(BM_Propagate)->Args({2, 4})->Args({8, 16})->Args({32, 64})->Unit(benchmark::kMillisecond);

void BM_Partition(benchmark::State& state) {
  const int64_t x = state.range(0), y = state.range(1);
  Module propagated = parse_hlo(transformer_stack_hlo(kLayers, x, y));
  propagate_shardings(propagated);
  for (auto _ : state)
    benchmark::DoNotOptimize(partition_spmd_with_stats(propagated, SpmdOptions{x * y}));
  state.counters["devices"] = static_cast<double>(x * y);
}
BENCHMARK(BM_Partition)->Args({2, 4})->Args({8, 16})->Args({32, 64})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace podsim::compiler
