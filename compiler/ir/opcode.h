// The IR's op set: the subset of XLA HLO opcodes podsim compiles, simulates
// and interprets. Names are XLA's HLO text names.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace podsim::compiler {

// X(enumerator, "hlo-text-name", category)
#define PODSIM_OPCODES(X)                                        \
  X(kParameter, "parameter", kOther)                             \
  X(kConstant, "constant", kOther)                               \
  X(kIota, "iota", kOther)                                       \
  X(kBroadcast, "broadcast", kOther)                             \
  X(kReshape, "reshape", kOther)                                 \
  X(kTranspose, "transpose", kOther)                             \
  X(kSlice, "slice", kOther)                                     \
  X(kPad, "pad", kOther)                                         \
  X(kConcatenate, "concatenate", kOther)                         \
  X(kReverse, "reverse", kOther)                                 \
  X(kDynamicSlice, "dynamic-slice", kOther)                      \
  X(kDynamicUpdateSlice, "dynamic-update-slice", kOther)         \
  X(kNegate, "negate", kUnary)                                   \
  X(kExp, "exponential", kUnary)                                 \
  X(kExpm1, "exponential-minus-one", kUnary)                     \
  X(kLog, "log", kUnary)                                         \
  X(kLog1p, "log-plus-one", kUnary)                              \
  X(kTanh, "tanh", kUnary)                                       \
  X(kSqrt, "sqrt", kUnary)                                       \
  X(kRsqrt, "rsqrt", kUnary)                                     \
  X(kAbs, "abs", kUnary)                                         \
  X(kSign, "sign", kUnary)                                       \
  X(kFloor, "floor", kUnary)                                     \
  X(kCeil, "ceil", kUnary)                                       \
  X(kCos, "cosine", kUnary)                                      \
  X(kSin, "sine", kUnary)                                        \
  X(kLogistic, "logistic", kUnary)                               \
  X(kNot, "not", kUnary)                                         \
  X(kCopy, "copy", kUnary)                                       \
  X(kConvert, "convert", kUnary)                                 \
  X(kAdd, "add", kBinary)                                        \
  X(kSubtract, "subtract", kBinary)                              \
  X(kMultiply, "multiply", kBinary)                              \
  X(kDivide, "divide", kBinary)                                  \
  X(kRemainder, "remainder", kBinary)                            \
  X(kMaximum, "maximum", kBinary)                                \
  X(kMinimum, "minimum", kBinary)                                \
  X(kPower, "power", kBinary)                                    \
  X(kAnd, "and", kBinary)                                        \
  X(kOr, "or", kBinary)                                          \
  X(kXor, "xor", kBinary)                                        \
  X(kCompare, "compare", kBinary)                                \
  X(kSelect, "select", kOther)                                   \
  X(kClamp, "clamp", kOther)                                     \
  X(kReduce, "reduce", kOther)                                   \
  X(kReduceWindow, "reduce-window", kOther)                      \
  X(kDot, "dot", kOther)                                         \
  X(kConvolution, "convolution", kOther)                         \
  X(kGather, "gather", kOther)                                   \
  X(kScatter, "scatter", kOther)                                 \
  X(kWhile, "while", kOther)                                     \
  X(kCall, "call", kOther)                                       \
  X(kTuple, "tuple", kOther)                                     \
  X(kGetTupleElement, "get-tuple-element", kOther)               \
  X(kPartitionId, "partition-id", kOther)                        \
  X(kReplicaId, "replica-id", kOther)                            \
  X(kAllReduce, "all-reduce", kCollective)                       \
  X(kAllGather, "all-gather", kCollective)                       \
  X(kReduceScatter, "reduce-scatter", kCollective)               \
  X(kAllToAll, "all-to-all", kCollective)                        \
  X(kCollectivePermute, "collective-permute", kCollective)       \
  X(kCustomCall, "custom-call", kOther)

enum class Opcode : uint8_t {
#define PODSIM_OPCODE_ENUM(e, name, cat) e,
  PODSIM_OPCODES(PODSIM_OPCODE_ENUM)
#undef PODSIM_OPCODE_ENUM
};

enum class OpCategory : uint8_t { kOther, kUnary, kBinary, kCollective };

std::string_view opcode_name(Opcode op);
std::optional<Opcode> parse_opcode(std::string_view name);
OpCategory opcode_category(Opcode op);
inline bool is_elementwise_unary(Opcode op) { return opcode_category(op) == OpCategory::kUnary; }
inline bool is_elementwise_binary(Opcode op) { return opcode_category(op) == OpCategory::kBinary; }
// Unary, binary, select and clamp: output element i depends only on input element i.
bool is_elementwise(Opcode op);
bool is_collective(Opcode op);
// Transcendentals, divide and power: the elementwise ops that take many VPU
// cycles per element (XLA's "expensive" elementwise set, with remainder).
bool is_transcendental(Opcode op);
int opcode_count();

}  // namespace podsim::compiler
