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
  X(kCustomCall, "custom-call", kOther)                          \
  X(kReducePrecision, "reduce-precision", kUnary)                \
  X(kIsFinite, "is-finite", kUnary)                              \
  X(kReal, "real", kUnary)                                       \
  X(kImag, "imag", kUnary)                                       \
  X(kPopcnt, "popcnt", kUnary)                                   \
  X(kClz, "clz", kUnary)                                         \
  X(kRoundNearestAfz, "round-nearest-afz", kUnary)               \
  X(kRoundNearestEven, "round-nearest-even", kUnary)             \
  X(kCbrt, "cbrt", kUnary)                                       \
  X(kTan, "tan", kUnary)                                         \
  X(kErf, "erf", kUnary)                                         \
  X(kShiftLeft, "shift-left", kBinary)                           \
  X(kShiftRightLogical, "shift-right-logical", kBinary)          \
  X(kShiftRightArithmetic, "shift-right-arithmetic", kBinary)    \
  X(kAtan2, "atan2", kBinary)                                    \
  X(kComplex, "complex", kBinary)                                \
  X(kBitcast, "bitcast", kOther)                                 \
  X(kBitcastConvert, "bitcast-convert", kOther)                  \
  X(kStochasticConvert, "stochastic-convert", kOther)            \
  X(kOptimizationBarrier, "opt-barrier", kOther)                 \
  X(kSort, "sort", kOther)                                       \
  X(kTopK, "topk", kOther)                                       \
  X(kFft, "fft", kOther)                                         \
  X(kRng, "rng", kOther)                                         \
  X(kRngBitGenerator, "rng-bit-generator", kOther)               \
  X(kRngGetAndUpdateState, "rng-get-and-update-state", kOther)   \
  X(kConditional, "conditional", kOther)                         \
  X(kSelectAndScatter, "select-and-scatter", kOther)             \
  X(kMap, "map", kOther)                                         \
  X(kFusion, "fusion", kOther)                                   \
  X(kAfterAll, "after-all", kOther)                              \
  X(kAddDependency, "add-dependency", kOther)                    \
  X(kDomain, "domain", kOther)                                   \
  X(kGetDimensionSize, "get-dimension-size", kOther)             \
  X(kSetDimensionSize, "set-dimension-size", kOther)             \
  X(kDynamicReshape, "dynamic-reshape", kOther)                  \
  X(kCholesky, "cholesky", kOther)                               \
  X(kTriangularSolve, "triangular-solve", kOther)                \
  X(kBatchNormTraining, "batch-norm-training", kOther)           \
  X(kBatchNormInference, "batch-norm-inference", kOther)         \
  X(kBatchNormGrad, "batch-norm-grad", kOther)                   \
  X(kInfeed, "infeed", kOther)                                   \
  X(kOutfeed, "outfeed", kOther)                                 \
  X(kSend, "send", kOther)                                       \
  X(kSendDone, "send-done", kOther)                              \
  X(kRecv, "recv", kOther)                                       \
  X(kRecvDone, "recv-done", kOther)                              \
  X(kCopyStart, "copy-start", kOther)                            \
  X(kCopyDone, "copy-done", kOther)                              \
  X(kAllGatherStart, "all-gather-start", kOther)                 \
  X(kAllGatherDone, "all-gather-done", kOther)                   \
  X(kAllReduceStart, "all-reduce-start", kOther)                 \
  X(kAllReduceDone, "all-reduce-done", kOther)                   \
  X(kCollectivePermuteStart, "collective-permute-start", kOther) \
  X(kCollectivePermuteDone, "collective-permute-done", kOther)   \
  X(kAsyncStart, "async-start", kOther)                          \
  X(kAsyncUpdate, "async-update", kOther)                        \
  X(kAsyncDone, "async-done", kOther)                            \
  X(kRaggedAllToAll, "ragged-all-to-all", kCollective)           \
  X(kCollectiveBroadcast, "collective-broadcast", kCollective)

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

// XLA's asynchronous pairs: a *-start issues work that runs beside the
// compute stream; its *-done waits for it. async-start/update/done wrap any
// op (Attributes::async_wrapped names it, or a called computation holds it).
bool is_async_start(Opcode op);
bool is_async_done(Opcode op);
// The synchronous op a start/done pair performs (kAllGatherStart ->
// kAllGather, kCopyStart -> kCopy, ...); nullopt for other opcodes and for
// async-start/update/done (their wrapped op is an attribute).
std::optional<Opcode> async_wrapped_opcode(Opcode op);

}  // namespace podsim::compiler
