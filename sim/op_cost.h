// Op costs for the simulator: an IR instruction (or a fusion group) described as an hw::OpQuery
// and timed by the device's hw::CoreModel. A fusion group is one OpQuery (all members' work; HBM
// = its distinct external inputs read once, sliced inputs charged the windows read, + its outputs
// written once). Timings are cached by a signature of (opcode, shapes, dims): a model's layers
// repeat the same ops. The instruction -> work mapping: docs/simulator.md#op-costs
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/backend/program.h"
#include "compiler/ir/module.h"
#include "hw_models/core/core_model.h"

namespace podsim::sim {

// The cost of one execution of an op on its device.
struct OpCost {
  double seconds = 0;
  double unit_seconds = 0;  // the bounding unit's time; seconds - unit_seconds is fixed overhead
  double flops = 0;
  double matmul_flops = 0;  // of flops: the MXU's (2 per MAC)
  double hbm_bytes = 0;
  hw::Bound bound = hw::Bound::kOverhead;
  // The three unit times the op overlaps (hw::OpTiming), at the full HBM
  // bandwidth: what seconds_with_hbm_share rescales.
  double mxu_seconds = 0, vpu_seconds = 0, hbm_seconds = 0;

  bool operator==(const OpCost&) const = default;
};

// The op's duration when its kernel gets only `share` (0 < share <= 1) of
// the device's HBM bandwidth (the rest serving collective DMAs): the fixed
// overhead plus the slowest unit, the HBM time stretched by 1 / share.
double seconds_with_hbm_share(const OpCost& cost, double share);

enum class OpClass { kFree, kCompute, kCollective, kControl };  // control: while, call

OpClass classify(const compiler::Instruction& instr);

// The OpQuery of one unfused compute instruction (exposed for tests).
hw::OpQuery op_query(const compiler::Computation& computation, const compiler::Instruction& instr);
// The same, with the module the instruction's called computations are in: a
// fusion instruction (an optimized XLA module's, run as-is) is one kernel
// doing its fused computation's work, reading its operands and writing its
// result; a non-collective async-start does what it wraps.
hw::OpQuery op_query(const compiler::Module* module, const compiler::Computation& computation,
                     const compiler::Instruction& instr);
// What a fusion group's outputs are decided from: the computation's users
// and compiler::duplicable_ops(computation).
struct FusionContext {
  compiler::UserLists users;
  std::vector<bool> duplicable;
  explicit FusionContext(const compiler::Computation& computation);
};
// The OpQuery of a fusion group of `computation`: its root and extra
// outputs are written.
hw::OpQuery fusion_query(const compiler::Computation& computation,
                         const compiler::FusionGroup& group, const FusionContext& context);
// The same, building the context (tests and one-off queries).
hw::OpQuery fusion_query(const compiler::Computation& computation,
                         const compiler::FusionGroup& group);

// Bytes an instruction moves over the host link: host-offload custom-calls,
// infeed / outfeed data, send / recv with is_host_transfer; 0 otherwise.
double host_transfer_bytes(const compiler::Computation& computation,
                           const compiler::Instruction& instr);

class OpCostModel {
 public:
  // `module`: where fusion instructions' computations are (may be null);
  // `host_bandwidth`: bytes/s one device moves to or from its host (0: host
  // transfers cost only their HBM traffic).
  explicit OpCostModel(const hw::CoreModel& core, const compiler::Module* module = nullptr,
                       double host_bandwidth = 0)
      : core_(core), module_(module), host_bandwidth_(host_bandwidth) {}

  OpCost instruction(const compiler::Computation& computation, const compiler::Instruction& instr);
  OpCost fusion(const compiler::Computation& computation, const compiler::FusionGroup& group);

  // A query built by the caller (e.g. a collective's reduction kernel), cached by `signature`.
  OpCost time(const std::string& signature, const hw::OpQuery& query);

  int64_t cache_hits() const { return hits_; }
  int64_t cache_misses() const { return static_cast<int64_t>(cache_.size()); }

 private:
  const hw::CoreModel& core_;
  const compiler::Module* module_ = nullptr;
  double host_bandwidth_ = 0;
  std::unordered_map<std::string, OpCost> cache_;
  // Per computation (its module is not changed while a program is simulated).
  std::unordered_map<const compiler::Computation*, std::unique_ptr<FusionContext>> contexts_;
  int64_t hits_ = 0;
};

}  // namespace podsim::sim
