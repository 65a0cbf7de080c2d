// The workload YAML contract (docs/design.md, "Workload YAML"): a typed Workload
// read from a file with strict validation. Every key is checked: unknown keys,
// wrong types and invalid values are UserErrors with file:line:column and a
// hint (podsim never ignores a key silently).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/yaml_reader.h"
#include "compiler/backend/program.h"
#include "compiler/ir/dtype.h"
#include "compiler/training/training_step.h"
#include "hw_models/ici/placement.h"

namespace podsim::workloads {

// The typed choices of a workload. The YAML words of each are in one name
// table (below); past the reader only the enums travel.
enum class ModelKind { kDenseTransformer, kMoeTransformer, kHlo };
enum class FfnKind { kGatedGelu, kGelu, kRelu };
enum class PositionKind { kRelative, kLearned, kRotary, kNone };
// model.attention: scores, softmax and context as ops (standard) or the fused
// kernel (flash: compiler/ir/flash_attention.h, no [L, T] tensor in HBM).
enum class AttentionKind { kStandard, kFlash };
enum class NormKind { kRms, kLayer };
enum class LayerLoop { kUnrolled, kScan };
enum class ModelStructure { kDecoderOnly, kEncoderDecoder };
enum class BlockKind { kSequential, kParallel };
enum class EmbeddingLookup { kOneHot, kGather };
// training.remat: none | full | auto | <policy name> (kSelective with the
// policy, one of compiler::selective_remat_policies()).
enum class RematMode { kNone, kFull, kAuto, kSelective };

const yaml::NameTable<ModelKind>& model_kind_names();
const yaml::NameTable<FfnKind>& ffn_names();
const yaml::NameTable<PositionKind>& position_names();
const yaml::NameTable<AttentionKind>& attention_names();
const yaml::NameTable<NormKind>& norm_names();
const yaml::NameTable<LayerLoop>& layer_loop_names();
const yaml::NameTable<ModelStructure>& structure_names();
const yaml::NameTable<BlockKind>& block_names();
const yaml::NameTable<EmbeddingLookup>& embedding_lookup_names();
// The dtypes a workload may name (f32, bf16).
const yaml::NameTable<compiler::DType>& workload_dtype_names();
// The optimizers of the registry (compiler/training/optimizers.h).
yaml::NameTable<compiler::OptimizerKind> optimizer_names();

// The YAML word of a choice (messages; the report prints the same words).
std::string name_of(ModelKind kind);
std::string name_of(hw::PlacementOrder order);

struct MeshSpec {
  // Logical mesh axes in order (major to minor), e.g. {{"x",32},{"y",64}}.
  std::vector<std::pair<std::string, int64_t>> axes;
  // Chip grid and cores per chip the mesh is laid onto; empty = default slice.
  std::vector<int64_t> physical;
  // Placement of the logical devices on the physical cores: exactly the names
  // hw::placement_order_from_name accepts: row_major | column_major |
  // ring_preserving | explicit (device list in `mesh.devices`, or a list
  // given directly as `mesh.order`).
  hw::PlacementOrder order = hw::PlacementOrder::kRowMajor;
  std::vector<int64_t> explicit_devices;  // when order is explicit
  // Where mesh.axes and mesh.physical were given (empty when absent or for
  // a MeshSpec built in code): errors of laying the mesh onto the hardware
  // (hw::System) or onto an HLO module's partitions point here.
  SourceLocation axes_location, physical_location;
  // Axes spanning slices over the data-centre network (`mesh.dcn`, as MaxText's
  // dcn_*_parallelism), e.g. {{"data",4}}: the slices are their product, each holding `axes`.
  std::vector<std::pair<std::string, int64_t>> dcn;
  SourceLocation dcn_location;
  int64_t device_count() const;        // every slice's devices
  int64_t slice_device_count() const;  // one slice's: the product of `axes`
  int64_t num_slices() const;          // the product of `dcn`
  // The compiler's mesh: DCN axes of size > 1 first, then `axes`, so a device id is slice x
  // devices per slice + id in slice (JAX's hybrid mesh). A DCN axis of size 1 is no axis.
  std::vector<std::pair<std::string, int64_t>> logical_axes() const;
  // A size-1 DCN axis: sharding tables may name it; it splits nothing.
  bool is_unit_dcn_axis(const std::string& name) const;
};

struct DTypes {
  compiler::DType params = compiler::DType::kF32;
  compiler::DType activations = compiler::DType::kBF16;
  // Attention scores, softmax and their gradients: f32 by default, as
  // Lingvo's builders set for bf16 activations (gshard_builder.py
  // SetFPropDtype: attention_logits_dtype = f32 "for better training
  // stability"; the Lingvo calibration configs set it explicitly).
  compiler::DType attention_logits = compiler::DType::kF32;
};

struct ModelSpec {
  ModelKind kind = ModelKind::kDenseTransformer;
  int64_t layers = 0;
  int64_t model_dim = 0;
  int64_t ffn_dim = 0;
  int64_t heads = 0;
  int64_t head_dim = 0;
  int64_t vocab = 0;
  FfnKind ffn = FfnKind::kGatedGelu;
  PositionKind position = PositionKind::kRelative;
  AttentionKind attention = AttentionKind::kStandard;
  // Flash attention's q and kv block (model.flash_block; divides seq_len).
  // Default 512, or seq_len when shorter (a block never exceeds the sequence).
  int64_t flash_block = 512;
  // rms: x / sqrt(mean(x^2) + eps) * scale, Lingvo's bias-less norm
  // (gshard_builder.py _LNInternal, T5); layer: (x - mean) / std * scale.
  NormKind norm = NormKind::kRms;
  // true: the softmax reuses the token embedding (Lingvo's shared table);
  // false: a separate [V, M] output table (MaxText logits_via_embedding: false).
  bool tied_embedding = true;
  // How repeated layers are built (docs/loops.md): unrolled (one copy of the
  // layer per index) or scan (one counted while loop over layer-stacked
  // weights [layers, ...], the layer as its body, as jax.lax.scan).
  LayerLoop layer_loop = LayerLoop::kUnrolled;
  // sequential: x + attn(norm(x)), then + ffn(norm(.)), two norms per layer;
  // parallel: x + attn(h) + ffn(h) with one h = norm(x) (GPT-J, PaLM,
  // MaxText's early decoder). Dense decoder-only models.
  BlockKind block = BlockKind::kSequential;
  // A norm (the model's norm kind) over the head dim of queries and keys
  // after their projections, a learned [D] scale each per attention
  // (MaxText's query_norm / key_norm).
  bool qk_norm = false;
  // Grouped-query attention: K key/value heads, each shared by heads / K
  // query heads (wk, wv [M, K, D]). 0 = heads (multi-head attention).
  // Decoder self-attention masked to earlier positions (true) or over the
  // whole sequence (false: MaxText's 2023-10 flash runs passed causal=False).
  // An encoder-decoder's decoder is always causal, its encoder never.
  bool causal = true;
  int64_t kv_heads = 0;
  int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  // one_hot: tokens one-hot [B, L, V] . table [V, M] (MaxText use_iota_embed);
  // gather: rows of the table gathered (jnp.take; backward a scatter-add).
  EmbeddingLookup embedding_lookup = EmbeddingLookup::kOneHot;
  int64_t seq_len = 0;
  int64_t global_batch = 0;
  DTypes dtypes;
  // moe_transformer
  int64_t experts = 0;
  int64_t moe_every = 2;
  int64_t top_k = 2;
  double capacity_factor = 1.0;
  int64_t group_size = 0;
  ModelStructure structure = ModelStructure::kDecoderOnly;
  // hlo
  std::string file;
  // Where the keys the model builders check were given, by dotted name
  // ("model.group_size", "model.global_batch", "model.layers",
  // "training.microbatches", "sharding.experts" = its first axis): a
  // builder's UserError points there. Filled by the reader; empty for a
  // ModelSpec built in code.
  std::map<std::string, SourceLocation> key_locations;
};

struct TrainingSpec {
  bool enabled = true;  // false: forward (inference) step only
  compiler::OptimizerKind optimizer = compiler::OptimizerKind::kAdafactor;
  bool weight_update_sharding = true;
  RematMode remat = RematMode::kNone;
  std::string remat_policy;  // kSelective: the policy name
  int64_t microbatches = 1;
  int64_t pipeline_stages = 1;
};

// `compiler:` section: the SPMD partitioner's windowed einsum (collective
// matmul, docs/reference/gspmd.md#windowed-einsum), named after XLA's SpmdPartitionerOptions
// (threshold_for_windowed_einsum_mib, bidirectional_windowed_einsum, the
// p <= 32 ring limit), plus podsim's overlap test. Defaults are XLA's.
struct WindowedEinsumSpec {
  // An operand to all-gather (or, reduce-scatter form, a result) of at least
  // this many MiB, counted unsharded, is windowed; 0 = every eligible dot.
  double threshold_mib = 256;
  int64_t max_devices = 32;  // longer rings keep the collective
  bool bidirectional = false;
  // Use the loop only where a step's dot, at the device's peak, lasts at
  // least as long as its permute at the ICI link rate (derived from the
  // hardware, compiler/spmd/partitioner.h); false = XLA's default rule, the
  // size threshold alone.
  bool overlap_test = true;
};

// `compiler.loops`: XLA's collective pipeliner on counted while loops
// (model.layer_loop = scan, or a loop in an HLO module podsim compiles;
// compiler/backend/program.h LoopOptimizations, docs/loops.md), named after
// XLA's xla_*_enable_pipelined_{all_gather,reduce_scatter}.
struct LoopsSpec {
  bool pipelined_all_gather = true;
  bool pipelined_reduce_scatter = true;
};

// `compiler.async_collectives`: the collective kinds that run asynchronously, beside compute
// (XLA's --xla_enable_async_all_gather, ..._all_reduce, ...); the others are synchronous
// (compiler/backend/program.h CollectiveExecution). Words: all-gather, reduce-scatter,
// all-reduce, all-to-all, collective-permute.
const yaml::NameTable<compiler::Opcode>& collective_kind_names();

struct CompilerSpec {
  WindowedEinsumSpec windowed_einsum;
  LoopsSpec loops;
  std::set<compiler::Opcode> async_collectives = compiler::CollectiveExecution{}.async;
  // `compiler.collective_fusion`: XLA TPU's async collective fusion (reductions inside the
  // collective); false runs them as TensorCore kernels (CollectiveExecution::fusion).
  bool collective_fusion = true;
};

struct Workload {
  std::string name;
  std::string source_file;         // the YAML path it was read from
  std::string hardware = "tpuv3";  // preset name or path (resolved by hw_models)
  // `--set hardware.k=v` overrides, with the "hardware." prefix removed.
  std::vector<std::pair<std::string, std::string>> hardware_overrides;
  MeshSpec mesh;
  ModelSpec model;
  // Named tensor -> per-dim mesh axis (nullopt = unsharded), in YAML order.
  std::vector<std::pair<std::string, std::vector<std::optional<std::string>>>> sharding;
  // Where each sharding entry's name is in the YAML (parallel to `sharding`),
  // so the model builders can point errors at it.
  std::vector<SourceLocation> sharding_locations;
  TrainingSpec training;
  CompilerSpec compiler;
};

// Reads and validates a workload file. `overrides` are "key=value" strings
// from --set (dotted paths, e.g. "model.layers=64", "mesh.axes.x=16").
Workload load_workload(const std::string& path, const std::vector<std::string>& overrides = {});
// Same from YAML text (file_name is used in error positions only).
Workload parse_workload(const std::string& yaml_text, const std::string& file_name,
                        const std::vector<std::string>& overrides = {});

}  // namespace podsim::workloads
