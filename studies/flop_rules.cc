// Published tables' model-FLOP rules (see flop_rules.h).
#include "studies/flop_rules.h"

#include "workloads/model_info.h"

namespace podsim::studies {

const yaml::NameTable<FlopRule>& flop_rule_names() {
  static const yaml::NameTable<FlopRule> table{
      {FlopRule::kSixP, "6p"},
      {FlopRule::kSixPAttention, "6p_attention"},
      {FlopRule::kSixPCausalAttention, "6p_causal_attention"},
  };
  return table;
}

double flops_per_token(FlopRule rule, const workloads::ModelSpec& model) {
  const double p = static_cast<double>(workloads::count_parameters(model).total);
  const double attention = static_cast<double>(model.heads) * static_cast<double>(model.layers) *
                           static_cast<double>(model.head_dim) * static_cast<double>(model.seq_len);
  switch (rule) {
    case FlopRule::kSixP:
      return 6 * p;
    case FlopRule::kSixPAttention:
      return 6 * p + 12 * attention;
    case FlopRule::kSixPCausalAttention:
      return 6 * p + 6 * attention;
  }
  return 6 * p;
}

}  // namespace podsim::studies
