// Shared parts of the core models: the convenience queries that turn one op
// into an OpQuery, the factory choosing an implementation by name, and the
// combination of unit times into an OpTiming.
#include "hw_models/core/core_model.h"

#include <algorithm>
#include <cassert>

#include "hw_models/core/core_impl.h"

namespace podsim::hw {

const char* bound_name(Bound bound) {
  switch (bound) {
    case Bound::kMxu:
      return "MXU";
    case Bound::kVpu:
      return "VPU";
    case Bound::kHbm:
      return "HBM";
    case Bound::kOverhead:
      return "overhead";
  }
  return "?";
}

double matmul_hbm_bytes(const MatmulQuery& q) {
  const auto& w = q.work;
  const double b = static_cast<double>(w.batch);
  const double m = static_cast<double>(w.m), k = static_cast<double>(w.k),
               n = static_cast<double>(w.n);
  const double output = b * m * n * q.output_bytes_per_element;
  if (!q.operands_in_hbm) return output;
  return b * (m * k + k * n) * q.input_bytes_per_element + output;
}

OpTiming CoreModel::time_matmul(const MatmulQuery& query) const {
  OpQuery op;
  op.matmuls.push_back(query.work);
  const double output = static_cast<double>(query.work.batch * query.work.m * query.work.n) *
                        query.output_bytes_per_element;
  op.hbm_bytes_written = output;
  op.hbm_bytes_read = matmul_hbm_bytes(query) - output;
  return time_op(op);
}

OpTiming CoreModel::time_vector_op(const VectorQuery& query) const {
  OpQuery op;
  op.vector_work.push_back(query.work);
  op.hbm_bytes_read = query.bytes_read;
  op.hbm_bytes_written = query.bytes_written;
  return time_op(op);
}

OpTiming CoreModel::time_memory_op(const MemoryQuery& query) const {
  // Slices, pads, concatenates and dynamic-update-slices are DMA work: the
  // bytes pass through HBM once each way; no VPU or MXU time.
  OpQuery op;
  op.hbm_bytes_read = query.bytes_read;
  op.hbm_bytes_written = query.bytes_written;
  return time_op(op);
}

const std::vector<CoreModelEntry>& core_models() {
  static const std::vector<CoreModelEntry> table = {kSystolicCore, kRooflineCore};
  return table;
}

std::unique_ptr<CoreModel> make_core_model(const HardwareConfig& config) {
  for (const CoreModelEntry& entry : core_models())
    if (entry.kind == config.core.model) return entry.make(config);
  assert(false && "every CoreModelKind has a registry entry");
  return nullptr;
}

double matmul_flops(const MatmulWork& w) {
  return 2.0 * static_cast<double>(w.batch) * static_cast<double>(w.m) * static_cast<double>(w.k) *
         static_cast<double>(w.n);
}

double vpu_cycles_per_vreg(const CoreConfig& core, VectorCostClass cost_class) {
  switch (cost_class) {
    case VectorCostClass::kSimple:
      return core.vpu_cycles.simple;
    case VectorCostClass::kTranscendental:
      return core.vpu_cycles.transcendental;
    case VectorCostClass::kReduce:
      return core.vpu_cycles.reduce;
    case VectorCostClass::kTranspose:
      return core.vpu_cycles.transpose;
    case VectorCostClass::kConvert:
      return core.vpu_cycles.convert;
  }
  return 1;
}

OpTiming combine_unit_times(const UnitTimes& units, const OpQuery& query,
                            const HardwareConfig& config, bool add_fixed_costs) {
  OpTiming t;
  t.mxu_seconds = units.mxu_s;
  t.vpu_seconds = units.vpu_s;
  t.hbm_bytes = query.hbm_bytes_read + query.hbm_bytes_written;
  t.hbm_seconds = t.hbm_bytes / config.hbm.bandwidth;
  double matmul_total = 0;
  for (const auto& m : query.matmuls) matmul_total += matmul_flops(m);
  double vector_total = 0;
  for (const auto& v : query.vector_work) vector_total += static_cast<double>(v.elements);
  t.flops = matmul_total + vector_total;
  // MXU, VPU and HBM DMA overlap (VLIW bundles drive MXU and VPU together;
  // operands are double-buffered through vector memory), so the op takes as
  // long as its slowest unit. Not hidden: the first HBM access and the op's
  // fixed issue cost.
  const double busiest = std::max({t.mxu_seconds, t.vpu_seconds, t.hbm_seconds});
  t.seconds = busiest;
  if (add_fixed_costs) {
    if (t.hbm_bytes > 0) t.seconds += config.hbm.latency_s;
    t.seconds += config.core.op_overhead_s;
  }
  if (busiest <= 0)
    t.bound = Bound::kOverhead;
  else if (busiest == t.mxu_seconds)
    t.bound = Bound::kMxu;
  else if (busiest == t.vpu_seconds)
    t.bound = Bound::kVpu;
  else
    t.bound = Bound::kHbm;
  if (t.seconds > 0)
    t.mxu_utilization = matmul_total / (peak_matmul_flops_per_device(config.core) * t.seconds);
  return t;
}

}  // namespace podsim::hw
