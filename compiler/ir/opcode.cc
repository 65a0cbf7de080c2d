// Opcode names and categories.
#include "compiler/ir/opcode.h"

#include <array>

namespace podsim::compiler {

namespace {
struct OpInfo {
  std::string_view name;
  OpCategory category;
};
constexpr OpInfo kOps[] = {
#define PODSIM_OPCODE_INFO(e, name, cat) {name, OpCategory::cat},
    PODSIM_OPCODES(PODSIM_OPCODE_INFO)
#undef PODSIM_OPCODE_INFO
};
}  // namespace

int opcode_count() { return static_cast<int>(std::size(kOps)); }
std::string_view opcode_name(Opcode op) { return kOps[static_cast<size_t>(op)].name; }
OpCategory opcode_category(Opcode op) { return kOps[static_cast<size_t>(op)].category; }

std::optional<Opcode> parse_opcode(std::string_view name) {
  for (int i = 0; i < opcode_count(); ++i)
    if (kOps[i].name == name) return static_cast<Opcode>(i);
  return std::nullopt;
}

bool is_elementwise(Opcode op) {
  auto c = opcode_category(op);
  return c == OpCategory::kUnary || c == OpCategory::kBinary || op == Opcode::kSelect ||
         op == Opcode::kClamp;
}

bool is_collective(Opcode op) { return opcode_category(op) == OpCategory::kCollective; }

bool is_transcendental(Opcode op) {
  switch (op) {
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kTanh:
    case Opcode::kSqrt:
    case Opcode::kRsqrt:
    case Opcode::kLogistic:
    case Opcode::kSin:
    case Opcode::kCos:
    case Opcode::kPower:
    case Opcode::kDivide:
    case Opcode::kTan:
    case Opcode::kCbrt:
    case Opcode::kErf:
    case Opcode::kAtan2:
      return true;
    default:
      return false;
  }
}

bool is_async_start(Opcode op) {
  switch (op) {
    case Opcode::kAllGatherStart:
    case Opcode::kAllReduceStart:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kCopyStart:
    case Opcode::kAsyncStart:
    case Opcode::kSend:
    case Opcode::kRecv:
      return true;
    default:
      return false;
  }
}

bool is_async_done(Opcode op) {
  switch (op) {
    case Opcode::kAllGatherDone:
    case Opcode::kAllReduceDone:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kCopyDone:
    case Opcode::kAsyncDone:
    case Opcode::kSendDone:
    case Opcode::kRecvDone:
      return true;
    default:
      return false;
  }
}

std::optional<Opcode> async_wrapped_opcode(Opcode op) {
  switch (op) {
    case Opcode::kAllGatherStart:
    case Opcode::kAllGatherDone:
      return Opcode::kAllGather;
    case Opcode::kAllReduceStart:
    case Opcode::kAllReduceDone:
      return Opcode::kAllReduce;
    case Opcode::kCollectivePermuteStart:
    case Opcode::kCollectivePermuteDone:
      return Opcode::kCollectivePermute;
    case Opcode::kCopyStart:
    case Opcode::kCopyDone:
      return Opcode::kCopy;
    default:
      return std::nullopt;
  }
}

}  // namespace podsim::compiler
