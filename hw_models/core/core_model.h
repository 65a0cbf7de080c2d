// Op cost queries against one device's TensorCore(s) and HBM. Graph-free:
// the simulator describes an op (or a fused group of ops) by its work and its
// HBM traffic, and gets back a time and which unit bounds it.
//
// Implementations are chosen by name from the preset (core.model):
//   "systolic" — MXU tile loop (weight loads, streaming, fill/drain, padding of
//                ragged dims, tiles split over MXUs), VPU by cost class, HBM
//                streaming overlapped with compute (systolic_core.cc);
//   "roofline" — max(FLOPs / peak, bytes / HBM bandwidth), no tiling losses
//                (roofline_core.cc). A reference point, not a prediction.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hw_models/config.h"

namespace podsim::hw {

enum class MatmulInputKind { kBf16, kF32 };  // f32 costs core.f32_matmul_passes MXU passes

// out[b, m, n] = sum_k lhs[b, m, k] * rhs[b, k, n]; a convolution is passed as
// its im2col-equivalent matmul (m = output pixels x batch, k = window x input
// features, n = output features).
struct MatmulWork {
  int64_t batch = 1;
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  MatmulInputKind input = MatmulInputKind::kBf16;
};
// 2 x batch x m x k x n: one multiply and one add per MAC.
double matmul_flops(const MatmulWork& work);

enum class VectorCostClass { kSimple, kTranscendental, kReduce, kTranspose, kConvert };

struct VectorWork {
  int64_t elements = 0;  // elements processed (for a reduce: input elements)
  VectorCostClass cost_class = VectorCostClass::kSimple;
};

// One (possibly fused) op: all its MXU and VPU work plus the HBM bytes it
// reads and writes once (a fused op reads its inputs and writes its outputs
// once; intermediates stay in vector memory).
struct OpQuery {
  std::vector<MatmulWork> matmuls;
  std::vector<VectorWork> vector_work;
  double hbm_bytes_read = 0;
  double hbm_bytes_written = 0;
};

enum class Bound { kMxu, kVpu, kHbm, kOverhead };
const char* bound_name(Bound bound);

struct OpTiming {
  double seconds = 0;
  double flops = 0;      // useful FLOPs (2 per MAC, 1 per vector element op)
  double hbm_bytes = 0;  // read + written
  Bound bound = Bound::kOverhead;
  double mxu_utilization = 0;  // useful matmul FLOPs / (peak matmul FLOP/s x seconds)
  double mxu_seconds = 0;      // the three unit times the op overlaps
  double vpu_seconds = 0;
  double hbm_seconds = 0;
};

// Convenience queries for single ops.
struct MatmulQuery {
  MatmulWork work;
  double input_bytes_per_element = 2;   // lhs and rhs element size in HBM
  double output_bytes_per_element = 4;  // result element size in HBM
  bool operands_in_hbm = true;          // false: operands already in vector memory
};

struct VectorQuery {
  VectorWork work;
  double bytes_read = 0;
  double bytes_written = 0;
};

enum class MemoryOpKind { kCopy, kSlice, kPad, kConcatenate, kDynamicSlice, kDynamicUpdateSlice };

// Pure data movement: time is HBM traffic only.
struct MemoryQuery {
  MemoryOpKind kind = MemoryOpKind::kCopy;
  double bytes_read = 0;
  double bytes_written = 0;
};

class CoreModel {
 public:
  virtual ~CoreModel() = default;
  virtual std::string name() const = 0;
  virtual OpTiming time_op(const OpQuery& query) const = 0;

  OpTiming time_matmul(const MatmulQuery& query) const;
  OpTiming time_vector_op(const VectorQuery& query) const;
  OpTiming time_memory_op(const MemoryQuery& query) const;
};

// The registry of core models by name; each implementation file exports its
// entry (core_impl.h).
struct CoreModelEntry {
  CoreModelKind kind;
  std::string_view name;
  std::unique_ptr<CoreModel> (*make)(const HardwareConfig& config);
};
const std::vector<CoreModelEntry>& core_models();

// The implementation named by config.core.model.
std::unique_ptr<CoreModel> make_core_model(const HardwareConfig& config);

// MXU cycles of one matmul on one device under the systolic tile loop (exposed
// for tests and reports). See systolic_core.cc for the derivation.
double systolic_matmul_cycles(const CoreConfig& core, const MatmulWork& work);

// Bytes a matmul moves through HBM when its operands stream from HBM.
double matmul_hbm_bytes(const MatmulQuery& query);

}  // namespace podsim::hw
