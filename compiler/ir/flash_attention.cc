// The fused attention custom calls (flash_attention.h).
#include "compiler/ir/flash_attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include "common/error.h"

namespace podsim::compiler {

namespace {

// The text after `"key":` in a flat JSON object, up to the next ',' or '}'
// (nullopt when the key is absent).
std::optional<std::string_view> json_value(std::string_view text, std::string_view key) {
  const std::string quoted = fmt::format("\"{}\"", key);
  size_t at = text.find(quoted);
  if (at == std::string_view::npos) return std::nullopt;
  at = text.find(':', at + quoted.size());
  if (at == std::string_view::npos) return std::string_view{};
  size_t end = text.find_first_of(",}", at + 1);
  if (end == std::string_view::npos) end = text.size();
  std::string_view value = text.substr(at + 1, end - at - 1);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front())))
    value.remove_prefix(1);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back())))
    value.remove_suffix(1);
  return value;
}

}  // namespace

bool is_flash_attention(const Instruction& instr) {
  return instr.opcode == Opcode::kCustomCall &&
         instr.attrs.custom_call_target == kFlashAttentionTarget;
}

bool is_flash_attention_bwd(const Instruction& instr) {
  return instr.opcode == Opcode::kCustomCall &&
         instr.attrs.custom_call_target == kFlashAttentionBwdTarget;
}

std::string flash_config_text(const FlashAttentionConfig& config) {
  std::string text = fmt::format(R"({{"causal":{},"block_q":{},"block_k":{})", config.causal,
                                 config.block_q, config.block_k);
  if (config.scale != 0) text += fmt::format(R"(,"scale":{})", config.scale);
  return text + "}";
}

FlashAttentionConfig flash_config(const Instruction& instr) {
  const std::string_view text = instr.attrs.backend_config;
  auto bad = [&](const std::string& what) {
    throw UserError(instr.location,
                    fmt::format("custom-call '{}' ({}): {} in backend_config '{}'", instr.name,
                                instr.attrs.custom_call_target, what, text),
                    R"(write {"causal":true|false,"block_q":N,"block_k":N[,"scale":x]})");
  };
  FlashAttentionConfig config;
  if (auto v = json_value(text, "causal")) {
    if (*v != "true" && *v != "false") bad("'causal' is not true or false");
    config.causal = *v == "true";
  }
  auto block = [&](const char* key, int64_t& field) {
    auto v = json_value(text, key);
    if (!v) return;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), field);
    if (ec != std::errc() || end != v->data() + v->size() || field < 1)
      bad(fmt::format("'{}' is not a block size >= 1", key));
  };
  block("block_q", config.block_q);
  block("block_k", config.block_k);
  if (auto v = json_value(text, "scale")) {
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), config.scale);
    if (ec != std::errc() || end != v->data() + v->size() || !std::isfinite(config.scale))
      bad("'scale' is not a number");
  }
  return config;
}

double flash_scale(const FlashAttentionConfig& config, int64_t head_dim) {
  return config.scale != 0 ? config.scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

FlashBlocks flash_blocks(int64_t q_length, int64_t kv_length, const FlashAttentionConfig& config) {
  FlashBlocks blocks;
  blocks.q_blocks = (q_length + config.block_q - 1) / config.block_q;
  blocks.kv_blocks = (kv_length + config.block_k - 1) / config.block_k;
  if (!config.causal) {
    blocks.computed = blocks.q_blocks * blocks.kv_blocks;
    return blocks;
  }
  // q block i holds queries up to (i + 1) b_q - 1: kv blocks 0 .. that / b_k run.
  for (int64_t i = 0; i < blocks.q_blocks; ++i) {
    const int64_t last_query = std::min(q_length, (i + 1) * config.block_q) - 1;
    blocks.computed += std::min(blocks.kv_blocks, last_query / config.block_k + 1);
  }
  return blocks;
}

std::optional<FlashGeometry> flash_geometry(const Instruction& instr,
                                            const Computation& computation) {
  if ((!is_flash_attention(instr) && !is_flash_attention_bwd(instr)) || instr.operand_count() < 2)
    return std::nullopt;
  const Shape& q = computation.instr(instr.operand(0)).shape;
  const Shape& k = computation.instr(instr.operand(1)).shape;
  if (!q.is_array() || !k.is_array() || q.rank() != 4 || k.rank() != 4) return std::nullopt;
  FlashGeometry g;
  g.config = flash_config(instr);
  g.blocks = flash_blocks(q.dim(1), k.dim(1), g.config);
  g.batch_heads = q.dim(0) * q.dim(2);
  g.block_q = std::min(g.config.block_q, q.dim(1));
  g.block_k = std::min(g.config.block_k, k.dim(1));
  g.head_dim = q.dim(3);
  return g;
}

double flash_attention_flops(const Instruction& instr, const Computation& computation) {
  const std::optional<FlashGeometry> g = flash_geometry(instr, computation);
  if (!g) return 0;
  const double block_macs = static_cast<double>(g->block_q) * static_cast<double>(g->block_k) *
                            static_cast<double>(g->head_dim);
  return 2.0 * (is_flash_attention_bwd(instr) ? 5 : 2) *
         static_cast<double>(g->batch_heads * g->blocks.computed) * block_macs;
}

std::array<int64_t, 2> flash_batch_head_dims(int64_t rank) {
  return rank == 3 ? std::array<int64_t, 2>{0, 1} : std::array<int64_t, 2>{0, 2};
}

FlashAttentionOutputs flash_attention(ComputationBuilder& b, InstrId q, InstrId k, InstrId v,
                                      const FlashAttentionConfig& config) {
  const Shape& query = b.shape(q);
  const Shape lse(DType::kF32, {query.dim(0), query.dim(2), query.dim(1)});
  InstrId call = b.custom_call({q, k, v}, std::string(kFlashAttentionTarget),
                               Shape::tuple({Shape(query), lse}));
  b.mutable_instr(call).attrs.backend_config = flash_config_text(config);
  return {b.get_tuple_element(call, 0), b.get_tuple_element(call, 1)};
}

FlashAttentionGrads flash_attention_bwd(ComputationBuilder& b, InstrId q, InstrId k, InstrId v,
                                        InstrId out, InstrId lse, InstrId d_out,
                                        const FlashAttentionConfig& config) {
  InstrId call =
      b.custom_call({q, k, v, out, lse, d_out}, std::string(kFlashAttentionBwdTarget),
                    Shape::tuple({Shape(b.shape(q)), Shape(b.shape(k)), Shape(b.shape(v))}));
  b.mutable_instr(call).attrs.backend_config = flash_config_text(config);
  return {b.get_tuple_element(call, 0), b.get_tuple_element(call, 1), b.get_tuple_element(call, 2)};
}

}  // namespace podsim::compiler
