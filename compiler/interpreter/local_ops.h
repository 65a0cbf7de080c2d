// Per-device ("local") ops of the interpreter: every op whose result on a
// device depends only on that device's operand values. Grouped by family in
// data_movement_ops.cc, elementwise_ops.cc, reduction_ops.cc,
// dot_conv_ops.cc and gather_scatter_ops.cc; evaluate_local_op dispatches.
// Collectives, while, call, fusion, conditional, the async pairs and
// parameters are handled by the Evaluator.
// Internal to the interpreter.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/interpreter/scalar_function.h"
#include "compiler/ir/module.h"

namespace podsim::compiler::interp {

struct OpContext {
  const Module& module;
  int64_t partition_id = 0;
  // The combiner for a called scalar computation (cached by the evaluator).
  std::function<const ScalarFunction&(CompId)> combiner;
};

using Operands = std::vector<const Literal*>;

Literal evaluate_local_op(const Instruction& instr, const Operands& operands,
                          const OpContext& context);

// A UserError naming the instruction, at its source location.
[[noreturn]] void fail(const Instruction& instr, const std::string& message);

// Row-major strides of dims (stride of the last dim is 1).
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims);

// Checks that `body` takes 2 * num_values scalars and returns num_values of them.
void check_combiner(const Instruction& instr, const Module& module, CompId body, int num_values);

// Families (one file each).
Literal eval_iota(const Instruction& instr);
Literal eval_broadcast(const Instruction& instr, const Literal& operand);
Literal eval_reshape(const Instruction& instr, const Literal& operand);
Literal eval_transpose(const Instruction& instr, const Literal& operand);
Literal eval_slice(const Instruction& instr, const Literal& operand);
Literal eval_pad(const Instruction& instr, const Literal& operand, const Literal& padding_value);
Literal eval_concatenate(const Instruction& instr, const Operands& operands);
Literal eval_reverse(const Instruction& instr, const Literal& operand);
Literal eval_dynamic_slice(const Instruction& instr, const Operands& operands);
Literal eval_dynamic_update_slice(const Instruction& instr, const Operands& operands);

Literal eval_unary(const Instruction& instr, const Literal& operand);
Literal eval_binary(const Instruction& instr, const Literal& lhs, const Literal& rhs);
Literal eval_select(const Instruction& instr, const Literal& pred, const Literal& on_true,
                    const Literal& on_false);
Literal eval_clamp(const Instruction& instr, const Literal& min, const Literal& operand,
                   const Literal& max);

Literal eval_reduce(const Instruction& instr, const Operands& operands, const OpContext& context);
Literal eval_reduce_window(const Instruction& instr, const Operands& operands,
                           const OpContext& context);

Literal eval_dot(const Instruction& instr, const Literal& lhs, const Literal& rhs);
Literal eval_sparse_dot(const Instruction& instr, const Literal& lhs, const Literal& rhs,
                        const Literal& meta);
Literal eval_convolution(const Instruction& instr, const Literal& lhs, const Literal& rhs);

Literal eval_gather(const Instruction& instr, const Literal& operand, const Literal& indices);
Literal eval_scatter(const Instruction& instr, const Operands& operands, const OpContext& context);

// extra_ops.cc: XLA's less common ops.
Literal eval_bitcast(const Instruction& instr, const Literal& operand);
Literal eval_bitcast_convert(const Instruction& instr, const Literal& operand);
// One element of a same-width bitcast-convert (f32 <-> s32/u32, ...).
double bitcast_convert_scalar(const Instruction& instr, DType from, DType to, double value);
Literal eval_sort(const Instruction& instr, const Operands& operands, const OpContext& context);
Literal eval_topk(const Instruction& instr, const Literal& operand, const OpContext& context);
Literal eval_fft(const Instruction& instr, const Literal& operand);

// flash_attention_ops.cc: the fused attention custom calls (compiler/ir/flash_attention.h).
Literal eval_flash_attention(const Instruction& instr, const Operands& operands);
Literal eval_flash_attention_bwd(const Instruction& instr, const Operands& operands);
Literal eval_map(const Instruction& instr, const Operands& operands, const OpContext& context);
Literal eval_select_and_scatter(const Instruction& instr, const Operands& operands,
                                const OpContext& context);
Literal eval_cholesky(const Instruction& instr, const Literal& a);
Literal eval_triangular_solve(const Instruction& instr, const Literal& a, const Literal& b);
Literal eval_batch_norm(const Instruction& instr, const Operands& operands);

}  // namespace podsim::compiler::interp
