// Op-specific attributes of IR instructions (XLA HLO semantics). Each struct
// is a plain value; an Instruction carries one Attributes bundle and only the
// fields its opcode uses are meaningful.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/literal.h"
#include "compiler/ir/opcode.h"

namespace podsim::compiler {

// custom-call target of an identity whose result autodiff treats as constant
// (tf.stop_gradient / jax.lax.stop_gradient): the value passes through, no
// adjoint flows back (compiler/training/autodiff.h). compile() removes it
// after differentiation (pipeline/cleanup.h remove_stop_gradients).
inline constexpr char kStopGradientTarget[] = "StopGradient";

struct SliceDim {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
  bool operator==(const SliceDim&) const = default;
};

// pad: low/high may be negative (cropping), interior >= 0 (XLA "lo_hi_interior").
struct PadDim {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
  bool operator==(const PadDim&) const = default;
};

// One spatial dim of a window (reduce-window, convolution), XLA Window.
struct WindowDim {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t pad_low = 0;
  int64_t pad_high = 0;
  int64_t base_dilation = 1;    // "lhs_dilate"
  int64_t window_dilation = 1;  // "rhs_dilate"
  bool reversal = false;        // "rhs_reversal"
  bool operator==(const WindowDim&) const = default;
};

struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch;
  std::vector<int64_t> lhs_contracting, rhs_contracting;
  bool operator==(const DotDims&) const = default;
};

// Convolution dimension numbers, XLA dim_labels "b01f_01io->b01f".
struct ConvDims {
  int64_t input_batch = 0, input_feature = 1;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 0, kernel_output_feature = 1;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0, output_feature = 1;
  std::vector<int64_t> output_spatial;
  bool operator==(const ConvDims&) const = default;
};

struct GatherDims {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const GatherDims&) const = default;
};

struct ScatterDims {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const ScatterDims&) const = default;
};

enum class ComparisonDirection : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
const char* comparison_direction_name(ComparisonDirection d);  // "EQ", "LT", ...
std::optional<ComparisonDirection> parse_comparison_direction(const std::string& s);

// Device groups of a collective. Either explicit ({{0,1},{2,3}}) or XLA's
// compact iota form [num_groups,group_size]<=[reshape_dims]T(perm), which is
// what the partitioner emits so program size never grows with device count.
// Empty (no explicit groups, no iota) means one group of all devices.
struct IotaGroups {
  int64_t num_groups = 1;
  int64_t group_size = 1;
  std::vector<int64_t> reshape_dims;    // product == num_groups * group_size
  std::vector<int64_t> transpose_perm;  // empty = identity
  bool operator==(const IotaGroups&) const = default;
};

struct ReplicaGroups {
  std::vector<std::vector<int64_t>> explicit_groups;
  std::optional<IotaGroups> iota;

  bool is_all_devices() const { return explicit_groups.empty() && !iota; }
  // Materialised groups; num_devices is used when the groups are "all devices".
  std::vector<std::vector<int64_t>> expand(int64_t num_devices) const;
  // Size of each group (all groups of a collective have equal size).
  int64_t group_size(int64_t num_devices) const;
  bool operator==(const ReplicaGroups&) const = default;
};

struct Attributes {
  int64_t parameter_number = 0;              // parameter
  std::optional<Literal> literal;            // constant
  std::vector<int64_t> dimensions;           // broadcast, transpose, reduce, reverse,
                                             // concatenate, all-gather, all-to-all,
                                             // reduce-scatter ("dimensions={..}")
  int64_t iota_dimension = 0;                // iota
  std::vector<SliceDim> slice;               // slice
  std::vector<PadDim> padding;               // pad
  std::vector<int64_t> dynamic_slice_sizes;  // dynamic-slice
  ComparisonDirection comparison = ComparisonDirection::kEq;  // compare
  std::string comparison_type;              // compare "type=" (optional, kept verbatim)
  DotDims dot;                              // dot
  std::vector<WindowDim> window;            // reduce-window, convolution
  ConvDims conv;                            // convolution
  int64_t feature_group_count = 1;          // convolution
  int64_t batch_group_count = 1;            // convolution
  GatherDims gather;                        // gather
  std::vector<int64_t> gather_slice_sizes;  // gather
  ScatterDims scatter;                      // scatter
  bool indices_are_sorted = false;          // gather, scatter
  bool unique_indices = false;              // scatter
  int64_t tuple_index = 0;                  // get-tuple-element
  ReplicaGroups replica_groups;             // all-reduce, all-gather, reduce-scatter, all-to-all
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;  // collective-permute
  std::optional<int64_t> channel_id;                             // collectives
  bool use_global_device_ids = false;                            // collectives
  std::string custom_call_target;   // custom-call (kStopGradientTarget, "Sharding", ...)
  std::string backend_config;       // custom-call, fusion, async ops (verbatim)
  bool is_stable = false;           // sort
  std::string fft_type;             // fft: FFT | IFFT | RFFT | IRFFT
  std::vector<int64_t> fft_length;  // fft
  std::string rng_distribution;     // rng: rng_uniform | rng_normal
  std::string rng_algorithm;        // rng-bit-generator: rng_default | rng_three_fry | rng_philox
  int64_t exponent_bits = 0;        // reduce-precision
  int64_t mantissa_bits = 0;        // reduce-precision
  int64_t k = 0;                    // topk
  bool largest = true;              // topk
  std::string fusion_kind;          // fusion: kLoop | kInput | kOutput | kCustom
  // async-start / async-update / async-done written in XLA's short form
  // ("all-to-all-start", "call-done"): the op they run, whose attributes
  // are the instruction's own. Unset for the long form (calls= a computation).
  std::optional<Opcode> async_wrapped;
  bool left_side = false;         // triangular-solve
  bool lower = false;             // triangular-solve, cholesky
  bool unit_diagonal = false;     // triangular-solve
  std::string transpose_a;        // triangular-solve: NO_TRANSPOSE | TRANSPOSE | ADJOINT
  double epsilon = 0;             // batch-norm-*
  int64_t feature_index = 0;      // batch-norm-*
  bool is_host_transfer = false;  // send, recv, send-done, recv-done
  // frontend_attributes={...} verbatim (Shardy's xla.sdy.sharding lives here).
  std::string frontend_attributes;
  // Attributes podsim does not interpret but keeps for printing, as
  // (key, verbatim value text) in source order.
  std::vector<std::pair<std::string, std::string>> extra;
};

}  // namespace podsim::compiler
