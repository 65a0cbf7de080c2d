// Rematerialization policies (see remat.h).
#include "compiler/training/remat.h"

#include <fmt/format.h>

#include <string_view>
#include <unordered_map>

#include "common/error.h"
#include "compiler/ir/flash_attention.h"
#include "compiler/training/ir_helpers.h"

namespace podsim::compiler {

using training::starts_with;

std::string RematChoice::name() const {
  switch (kind) {
    case RematKind::kNone:
      return "none";
    case RematKind::kFull:
      return "full";
    case RematKind::kSelective:
      return policy;
  }
  return "none";
}

std::vector<RematChoice> remat_choices_by_recompute() {
  // The ladder of remat "auto": minimal is a rung between save_dots and full
  // by recompute, but it is not tried, so auto's choices stay none, save_dots, full.
  return {{RematKind::kNone, ""}, {RematKind::kSelective, "save_dots"}, {RematKind::kFull, ""}};
}

std::vector<std::string> selective_remat_policies() { return {"save_dots", "minimal"}; }

double matmul_flops(const Instruction& instr, const Computation& computation) {
  if (instr.opcode == Opcode::kDot) {
    // out elements x product of contracting dims = MACs.
    const Shape& lhs = computation.instr(instr.operand(0)).shape;
    double contracted = 1;
    for (int64_t d : instr.attrs.dot.lhs_contracting)
      contracted *= static_cast<double>(lhs.dim(static_cast<int>(d)));
    return 2.0 * static_cast<double>(instr.shape.num_elements()) * contracted;
  }
  if (instr.opcode == Opcode::kConvolution) {
    // Each output element reads kernel_input_feature x window elements.
    const Shape& kernel = computation.instr(instr.operand(1)).shape;
    double per_output =
        static_cast<double>(kernel.num_elements()) /
        static_cast<double>(kernel.dim(static_cast<int>(instr.attrs.conv.kernel_output_feature)));
    return 2.0 * static_cast<double>(instr.shape.num_elements()) * per_output;
  }
  if (is_flash_attention(instr)) return flash_attention_flops(instr, computation);
  return 0.0;
}

namespace {

// Whether a selective policy saves an instruction's output. save_dots: every
// dot and convolution. minimal (jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims):
// dots without batch dimensions (the dot's own batch_dimensions, e.g. the weight
// projections; attention's score and context einsums have batch dims B, N).
bool saved_by_policy(const std::string& policy, const Instruction& in) {
  // jax checkpoint_dots_with_no_batch_dims: the fused attention kernel is no
  // dot_general, so it is recomputed like the rest of the layer.
  if (policy == "minimal") return in.opcode == Opcode::kDot && in.attrs.dot.lhs_batch.empty();
  return in.opcode == Opcode::kDot || in.opcode == Opcode::kConvolution || is_flash_attention(in);
}

// "fwd/layer_3/ffn/wi" -> "layer_3" (pipeline iterations "fwd/pipeline_iter_<t>/.."
// count as layers); "" when the op is in no layer.
std::string_view layer_scope(std::string_view op_name) {
  if (!starts_with(op_name, "fwd/")) return {};
  std::string_view rest = op_name.substr(4);
  if (!starts_with(rest, "layer") && !starts_with(rest, "pipeline_iter_")) return {};
  size_t slash = rest.find('/');
  return slash == std::string_view::npos ? rest : rest.substr(0, slash);
}

}  // namespace

ResidualProvider::ResidualProvider(const Computation& source,
                                   const std::vector<InstrId>& forward_map, RematChoice choice,
                                   ComputationBuilder& builder)
    : source_(source), forward_map_(forward_map), builder_(builder) {
  if (choice.kind == RematKind::kSelective) {
    bool known = false;
    for (const std::string& p : selective_remat_policies()) known |= (p == choice.policy);
    if (!known)
      throw UserError({}, fmt::format("unknown remat policy '{}'", choice.policy),
                      "selective policies: save_dots, minimal (or use none / full)");
  }
  const size_t n = static_cast<size_t>(source.size());
  layer_of_.assign(n, -1);
  recompute_.assign(n, false);
  recomputed_.assign(n, kNoId);
  if (choice.kind == RematKind::kNone) return;

  std::unordered_map<std::string_view, int32_t> layer_ids;
  for (InstrId i = 0; i < source.size(); ++i) {
    std::string_view scope = layer_scope(source.instr(i).op_name);
    if (scope.empty()) continue;
    auto [it, inserted] = layer_ids.emplace(scope, static_cast<int32_t>(layer_ids.size()));
    layer_of_[static_cast<size_t>(i)] = it->second;
  }
  // Checkpoints: layer values read outside their layer (or the root).
  std::vector<bool> checkpoint(n, false);
  for (InstrId i = 0; i < source.size(); ++i)
    for (InstrId op : source.instr(i).operands)
      if (layer_of_[static_cast<size_t>(op)] != layer_of_[static_cast<size_t>(i)])
        checkpoint[static_cast<size_t>(op)] = true;
  if (source.root() != kNoId) checkpoint[static_cast<size_t>(source.root())] = true;

  for (InstrId i = 0; i < source.size(); ++i) {
    const Instruction& in = source.instr(i);
    size_t k = static_cast<size_t>(i);
    if (layer_of_[k] < 0 || checkpoint[k]) continue;
    // The fused attention call is the one tuple recomputed (full, minimal); save_dots keeps it.
    if (in.opcode == Opcode::kParameter || (in.shape.is_tuple() && !is_flash_attention(in)))
      continue;
    if (choice.kind == RematKind::kSelective && saved_by_policy(choice.policy, in)) continue;
    recompute_[k] = true;
  }
}

bool ResidualProvider::recompute(InstrId id) const { return recompute_[static_cast<size_t>(id)]; }

InstrId ResidualProvider::get(InstrId id) {
  const size_t k = static_cast<size_t>(id);
  if (!recompute_[k]) return forward_map_[k];
  if (recomputed_[k] != kNoId) return recomputed_[k];
  Instruction clone = source_.instr(id);
  for (InstrId& op : clone.operands) op = get(op);
  clone.name.clear();
  clone.op_name =
      fmt::format("recompute/{}", training::strip_fwd_prefix(source_.instr(id).op_name));
  recomputed_flops_ += matmul_flops(source_.instr(id), source_);
  ++recomputed_instructions_;
  recomputed_[k] = builder_.add(std::move(clone));
  return recomputed_[k];
}

}  // namespace podsim::compiler
