// The model-FLOP counts published throughput tables used, by name: a
// measured "TFLOP/s per chip" means tokens/s only through the rule of its
// table (docs/reference/measurements.md#flop-rules). podsim compares on
// tokens/s; the rule turns a table's TFLOP/s into tokens/s and podsim's
// tokens/s back into that table's TFLOP/s and MFU.
#pragma once

#include <string>

#include "common/yaml_reader.h"
#include "workloads/workload.h"

namespace podsim::studies {

enum class FlopRule {
  kSixP,                 // 6 P per token (MaxText, 2023-04: TPU v4 table)
  kSixPAttention,        // 6 P + 12 N L D S (2023-10: v5e table, attention not halved)
  kSixPCausalAttention,  // 6 P + 6 N L D S (2023-12: v5p table, causal attention halved)
};

const yaml::NameTable<FlopRule>& flop_rule_names();

// Model FLOPs per token of `model` by `rule`: P is every trainable parameter
// (workloads::count_parameters: embeddings and norm scales included), N
// heads, L layers, D head dim, S sequence length.
double flops_per_token(FlopRule rule, const workloads::ModelSpec& model);

}  // namespace podsim::studies
