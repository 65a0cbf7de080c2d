// Instruction / fusion group -> hw::OpQuery -> cached hw::OpTiming (see
// op_cost.h for the mapping).
#include "sim/op_cost.h"

#include "compiler/backend/fusion.h"
#include "compiler/ir/shape_inference.h"
#include "sim/custom_call_cost.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace podsim::sim {

using compiler::Computation;
using compiler::DType;
using compiler::Instruction;
using compiler::Opcode;
using compiler::Shape;

namespace {

double bytes_of(const Shape& shape) { return static_cast<double>(shape.byte_size()); }

int64_t product_of(const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
  int64_t p = 1;
  for (int64_t d : which) p *= dims[static_cast<size_t>(d)];
  return p;
}

// Product of the dims of `dims` not listed in `a` or `b`.
int64_t product_except(const std::vector<int64_t>& dims, const std::vector<int64_t>& a,
                       const std::vector<int64_t>& b) {
  int64_t p = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    const auto di = static_cast<int64_t>(d);
    if (std::find(a.begin(), a.end(), di) != a.end() ||
        std::find(b.begin(), b.end(), di) != b.end())
      continue;
    p *= dims[d];
  }
  return p;
}

int64_t ceil_log2(int64_t n) {
  int64_t bits = 0;
  while ((int64_t{1} << bits) < n && bits < 62) ++bits;
  return std::max<int64_t>(1, bits);
}

hw::MatmulInputKind input_kind(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
    case DType::kF16:
    case DType::kS8:
    case DType::kU8:
      return hw::MatmulInputKind::kBf16;
    default:
      return hw::MatmulInputKind::kF32;
  }
}

const Shape& operand_shape(const Computation& c, const Instruction& instr, int i) {
  return c.instr(instr.operand(i)).shape;
}

// A sparse dot is costed as the dense dot of its logical operands: TPU matrix
// units have no structured-sparsity mode (docs/hlo-input.md#sparse-dot).
Shape logical_dot_operand(const Computation& c, const Instruction& instr, int i) {
  const Shape& shape = operand_shape(c, instr, i);
  const std::optional<compiler::DotSparsity> sparse = compiler::dot_sparsity(instr.attrs);
  if (sparse && sparse->operand == i && instr.operand_count() == 3 && sparse->dim >= 0 &&
      sparse->dim < shape.rank())
    return sparse->logical_shape(shape);
  return shape;
}

hw::MatmulWork dot_work(const Computation& c, const Instruction& instr) {
  const Shape lhs = logical_dot_operand(c, instr, 0);
  const Shape rhs = logical_dot_operand(c, instr, 1);
  const auto& d = instr.attrs.dot;
  hw::MatmulWork w;
  w.batch = product_of(lhs.dims(), d.lhs_batch);
  w.k = product_of(lhs.dims(), d.lhs_contracting);
  w.m = product_except(lhs.dims(), d.lhs_batch, d.lhs_contracting);
  w.n = product_except(rhs.dims(), d.rhs_batch, d.rhs_contracting);
  w.input = input_kind(lhs.dtype());
  return w;
}

// im2col: every output pixel of every batch element is one row of the
// matmul; its k is the window's pixels times the input features it sees.
hw::MatmulWork convolution_work(const Computation& c, const Instruction& instr) {
  const auto& kernel = operand_shape(c, instr, 1);
  const auto& out = instr.shape;
  const auto& cd = instr.attrs.conv;
  const int64_t groups = std::max<int64_t>(1, instr.attrs.feature_group_count) *
                         std::max<int64_t>(1, instr.attrs.batch_group_count);
  int64_t window = 1;
  for (int64_t d : cd.kernel_spatial) window *= kernel.dims()[static_cast<size_t>(d)];
  int64_t out_pixels = out.dims()[static_cast<size_t>(cd.output_batch)];
  for (int64_t d : cd.output_spatial) out_pixels *= out.dims()[static_cast<size_t>(d)];
  hw::MatmulWork w;
  w.batch = groups;
  w.m = out_pixels;
  // The kernel's input-feature dim already holds input features / feature groups.
  w.k = window * kernel.dims()[static_cast<size_t>(cd.kernel_input_feature)];
  w.n = out.dims()[static_cast<size_t>(cd.output_feature)] / groups;
  w.input = input_kind(operand_shape(c, instr, 0).dtype());
  return w;
}

hw::VectorCostClass vector_class(Opcode op) {
  if (compiler::is_transcendental(op)) return hw::VectorCostClass::kTranscendental;
  if (op == Opcode::kConvert) return hw::VectorCostClass::kConvert;
  return hw::VectorCostClass::kSimple;
}

bool is_vector_elementwise(Opcode op) {
  return compiler::is_elementwise(op) && op != Opcode::kCopy;
}

double result_bytes(const Instruction& instr) { return bytes_of(instr.shape); }

// Input elements of a (possibly variadic) reduce: its first half of operands.
int64_t reduce_input_elements(const Computation& c, const Instruction& instr) {
  int64_t elements = 0;
  const int inputs = std::max(1, instr.operand_count() / 2);
  for (int i = 0; i < inputs; ++i) elements += operand_shape(c, instr, i).num_elements();
  return elements;
}

int64_t result_elements(const Instruction& instr) {
  int64_t e = 0;
  for (const Shape* leaf : instr.shape.leaves()) e += leaf->num_elements();
  return e;
}

// The MXU and VPU work of one instruction, without its HBM traffic.
void add_work(const Computation& c, const Instruction& instr, hw::OpQuery& q) {
  const Opcode op = instr.opcode;
  if (op == Opcode::kDot) {
    q.matmuls.push_back(dot_work(c, instr));
  } else if (op == Opcode::kConvolution) {
    q.matmuls.push_back(convolution_work(c, instr));
  } else if (is_vector_elementwise(op)) {
    q.vector_work.push_back({result_elements(instr), vector_class(op)});
  } else if (op == Opcode::kReduce) {
    q.vector_work.push_back({reduce_input_elements(c, instr), hw::VectorCostClass::kReduce});
  } else if (op == Opcode::kReduceWindow) {
    int64_t window = 1;
    for (const auto& w : instr.attrs.window) window *= w.size;
    q.vector_work.push_back({result_elements(instr) * window, hw::VectorCostClass::kReduce});
  } else if (op == Opcode::kTranspose) {
    q.vector_work.push_back({result_elements(instr), hw::VectorCostClass::kTranspose});
  } else if (op == Opcode::kScatter) {
    q.vector_work.push_back({operand_shape(c, instr, instr.operand_count() - 1).num_elements(),
                             hw::VectorCostClass::kSimple});
  } else if (op == Opcode::kSort || op == Opcode::kTopK) {
    // A sorting network along the sorted dim: n log2 n compare-exchanges per row, per operand.
    const Shape& keys = operand_shape(c, instr, 0);
    const int64_t dim = op == Opcode::kSort && !instr.attrs.dimensions.empty()
                            ? instr.attrs.dimensions[0]
                            : keys.rank() - 1;
    const int64_t n =
        keys.rank() > 0 && dim >= 0 && dim < keys.rank() ? keys.dim(static_cast<int>(dim)) : 1;
    const int64_t passes = ceil_log2(n);
    const int64_t sorted = op == Opcode::kSort ? instr.operand_count() : 1;
    q.vector_work.push_back({keys.num_elements() * passes * sorted, hw::VectorCostClass::kSimple});
  } else if (op == Opcode::kFft) {
    // Radix-2 FFT: 5 N log2 N real flops over the transformed length (the usual count), one VPU op
    // each.
    int64_t length = 1;
    for (int64_t l : instr.attrs.fft_length) length *= l;
    q.vector_work.push_back({5 * operand_shape(c, instr, 0).num_elements() * ceil_log2(length),
                             hw::VectorCostClass::kSimple});
  } else if (op == Opcode::kSelectAndScatter) {
    int64_t window = 1;
    for (const auto& w : instr.attrs.window) window *= w.size;
    q.vector_work.push_back(
        {operand_shape(c, instr, 0).num_elements() * window, hw::VectorCostClass::kReduce});
  } else if (op == Opcode::kCholesky || op == Opcode::kTriangularSolve) {
    // Blocked factorizations run on the MXU: cholesky n^3/3 MACs, triangular solve m^2 k / 2.
    const Shape& a = operand_shape(c, instr, 0);
    if (a.rank() >= 2) {
      hw::MatmulWork w;
      const int64_t n = a.dim(a.rank() - 1);
      w.batch = a.num_elements() / std::max<int64_t>(1, n * n);
      w.m = n;
      w.k = n;
      w.n = op == Opcode::kCholesky
                ? std::max<int64_t>(1, n / 3)
                : std::max<int64_t>(1,
                                    result_elements(instr) / std::max<int64_t>(1, w.batch * n) / 2);
      w.input = input_kind(a.dtype());
      q.matmuls.push_back(w);
    }
  } else if (op == Opcode::kBatchNormTraining || op == Opcode::kBatchNormInference ||
             op == Opcode::kBatchNormGrad) {
    // Mean, variance and the normalization: a few passes over the input.
    q.vector_work.push_back(
        {4 * operand_shape(c, instr, 0).num_elements(), hw::VectorCostClass::kSimple});
  } else if (op == Opcode::kRng || op == Opcode::kRngBitGenerator || op == Opcode::kMap ||
             op == Opcode::kStochasticConvert || op == Opcode::kBitcastConvert) {
    q.vector_work.push_back({result_elements(instr), hw::VectorCostClass::kSimple});
  } else if (op == Opcode::kCustomCall) {
    add_custom_call_work(c, instr, classify_custom_call(instr), q);
  }
}

// HBM bytes (read, written) of one unfused instruction.
std::pair<double, double> hbm_traffic(const Computation& c, const Instruction& instr) {
  if (auto flash = flash_attention_traffic(c, instr)) return *flash;
  double read = 0;
  for (int i = 0; i < instr.operand_count(); ++i) read += bytes_of(operand_shape(c, instr, i));
  const double written = result_bytes(instr);
  switch (instr.opcode) {
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:  // only the kept window is read (plus the indices)
      return {written, written};
    case Opcode::kGather:  // the gathered rows and the indices
      return {written + bytes_of(operand_shape(c, instr, 1)), written};
    case Opcode::kDynamicUpdateSlice: {  // in place: the update is read and written
      const double update = bytes_of(operand_shape(c, instr, 1));
      return {update, update};
    }
    case Opcode::kScatter: {  // in place: indices + updates read, updated rows read and written
      const double updates = bytes_of(operand_shape(c, instr, instr.operand_count() - 1));
      const double indices = bytes_of(operand_shape(c, instr, 1));
      return {indices + 2 * updates, updates};
    }
    case Opcode::kCopyStart: {  // (destination, source, context): one copy of the operand
      const double copied = bytes_of(operand_shape(c, instr, 0));
      return {copied, copied};
    }
    case Opcode::kBroadcast:
    case Opcode::kIota:
    case Opcode::kPad:
    case Opcode::kConcatenate:
    case Opcode::kReverse:
    case Opcode::kCopy:
    default:
      return {read, written};
  }
}

// Bytes a fused member reads from its operand `operand_index` when that is
// an input of the kernel: a slice, dynamic-slice or gather (operand 0) loads
// only the window it keeps, i.e. its result's bytes (the unfused mapping in
// hbm_traffic does the same); nullopt = the whole operand is read. Without
// this, a dynamic-slice of a windowed einsum's gathered operand would be
// charged the whole gathered tensor in every loop iteration. A
// dynamic-update-slice does not read the buffer it updates in place.
std::optional<double> window_read_bytes(const Instruction& member, int operand_index) {
  if (operand_index != 0) return std::nullopt;
  switch (member.opcode) {
    case Opcode::kDynamicUpdateSlice:
      return 0.0;  // the buffer updated in place is not read
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
    case Opcode::kGather:
      return result_bytes(member);
    default:
      return std::nullopt;
  }
}

// Compact binary key of a query: equal keys <=> equal queries.
std::string query_key(const hw::OpQuery& q) {
  std::string key;
  auto put = [&key](const auto& value) {
    const char* p = reinterpret_cast<const char*>(&value);
    key.append(p, sizeof(value));
  };
  put(q.matmuls.size());
  for (const auto& m : q.matmuls) {
    put(m.batch), put(m.m), put(m.k), put(m.n), put(static_cast<int>(m.input));
  }
  put(q.vector_work.size());
  for (const auto& v : q.vector_work) put(v.elements), put(static_cast<int>(v.cost_class));
  put(q.hbm_bytes_read), put(q.hbm_bytes_written);
  return key;
}

// The compute work of every instruction of a called computation (nested
// fusions and calls included), without HBM traffic: fused intermediates
// stay on chip.
void add_computation_work(const compiler::Module& module, compiler::CompId comp_id, hw::OpQuery& q,
                          int depth = 0) {
  if (comp_id == compiler::kNoId || depth > 16) return;
  const Computation& comp = module.computation(comp_id);
  for (const Instruction& member : comp.instructions()) {
    if (member.opcode == Opcode::kFusion || member.opcode == Opcode::kCall) {
      add_computation_work(module, member.to_apply(), q, depth + 1);
    } else if (classify(member) == OpClass::kCompute) {
      add_work(comp, member, q);
    }
  }
}

// The HBM bytes a fused computation reads from its parameter `p`: the
// windows its slices, dynamic-slices and gathers keep when those are its
// only readers (capped at the whole operand), nothing when its one reader
// is a dynamic-update-slice updating it in place, else all of it.
double parameter_read_bytes(const Computation& fused, compiler::InstrId p,
                            const compiler::UserLists& users, double whole) {
  double window = 0;
  for (compiler::InstrId u : users[p]) {
    const Instruction& reader = fused.instr(u);
    const bool first_operand = reader.operand_count() > 0 && reader.operand(0) == p;
    if (!first_operand) return whole;
    const std::optional<double> read = window_read_bytes(reader, 0);
    if (!read) return whole;
    window += *read;
  }
  return std::min(whole, window);
}

// A fusion (or long-form async op) instruction as one kernel: the work of
// its called computation, its operands read (windowed where the fused
// computation only slices them) and its result written (a
// dynamic-update-slice root writes only its update, in place).
hw::OpQuery fused_computation_query(const compiler::Module& module, const Computation& computation,
                                    const Instruction& instr) {
  hw::OpQuery q;
  add_computation_work(module, instr.to_apply(), q);
  const Computation& fused = module.computation(instr.to_apply());
  const compiler::UserLists users(fused);
  const std::vector<compiler::InstrId> params = fused.parameters();
  for (int i = 0; i < instr.operand_count(); ++i) {
    const double whole = bytes_of(operand_shape(computation, instr, i));
    const bool known =
        static_cast<size_t>(i) < params.size() && params[static_cast<size_t>(i)] != compiler::kNoId;
    q.hbm_bytes_read +=
        known ? parameter_read_bytes(fused, params[static_cast<size_t>(i)], users, whole) : whole;
  }
  const Instruction& root = fused.root_instr();
  q.hbm_bytes_written = root.opcode == Opcode::kDynamicUpdateSlice && root.operand_count() > 1
                            ? bytes_of(fused.instr(root.operand(1)).shape)
                            : bytes_of(instr.shape);
  return q;
}

}  // namespace

OpClass classify(const Instruction& instr) {
  switch (instr.opcode) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kReshape:
    case Opcode::kBitcast:  // a new view of the same buffer
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
    case Opcode::kOptimizationBarrier:
    case Opcode::kAfterAll:
    case Opcode::kAddDependency:
    case Opcode::kDomain:
    case Opcode::kGetDimensionSize:
    case Opcode::kSetDimensionSize:
    case Opcode::kRngGetAndUpdateState:
    // The done half of an asynchronous pair only waits: its start carries the work.
    case Opcode::kAllGatherDone:
    case Opcode::kAllReduceDone:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kCopyDone:
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone:
    // Device-to-device send/recv (outside the ICI collectives): not modelled.
    // Host transfers cost their bytes over the host link (OpCostModel).
    case Opcode::kSend:
    case Opcode::kRecv:
      return instr.attrs.is_host_transfer ? OpClass::kCompute : OpClass::kFree;
    case Opcode::kSendDone:
    case Opcode::kRecvDone:
      return OpClass::kFree;
    case Opcode::kInfeed:
    case Opcode::kOutfeed:
      return OpClass::kCompute;
    case Opcode::kCustomCall:
      return classify_custom_call(instr) == CustomCallKind::kMarker ? OpClass::kFree
                                                                    : OpClass::kCompute;
    case Opcode::kWhile:
    case Opcode::kCall:
    case Opcode::kConditional:
      return OpClass::kControl;
    case Opcode::kAllGatherStart:
    case Opcode::kAllReduceStart:
    case Opcode::kCollectivePermuteStart:
      return OpClass::kCollective;
    case Opcode::kAsyncStart:
      return instr.attrs.async_wrapped && compiler::is_collective(*instr.attrs.async_wrapped)
                 ? OpClass::kCollective
                 : OpClass::kCompute;
    default:
      return compiler::is_collective(instr.opcode) ? OpClass::kCollective : OpClass::kCompute;
  }
}

hw::OpQuery op_query(const Computation& computation, const Instruction& instr) {
  return op_query(nullptr, computation, instr);
}

hw::OpQuery op_query(const compiler::Module* module, const Computation& computation,
                     const Instruction& instr) {
  if (module && instr.opcode == Opcode::kFusion && instr.to_apply() != compiler::kNoId)
    return fused_computation_query(*module, computation, instr);
  if (instr.opcode == Opcode::kAsyncStart) {
    // A non-collective async op: the work of what it runs, the wrapped op
    // (short form) or its called computation (long form).
    if (module && !instr.attrs.async_wrapped && instr.to_apply() != compiler::kNoId)
      return fused_computation_query(*module, computation, instr);
    if (instr.attrs.async_wrapped) {
      Instruction wrapped = instr;
      wrapped.opcode = *instr.attrs.async_wrapped;
      if (instr.shape.is_tuple() && instr.shape.tuple_shapes().size() >= 2)
        wrapped.shape = instr.shape.tuple_shape(1);
      if (wrapped.opcode == Opcode::kCall && module && instr.to_apply() != compiler::kNoId)
        return fused_computation_query(*module, computation, wrapped);
      hw::OpQuery q;
      add_work(computation, wrapped, q);
      std::tie(q.hbm_bytes_read, q.hbm_bytes_written) = hbm_traffic(computation, wrapped);
      return q;
    }
  }
  hw::OpQuery q;
  add_work(computation, instr, q);
  std::tie(q.hbm_bytes_read, q.hbm_bytes_written) = hbm_traffic(computation, instr);
  return q;
}

hw::OpQuery fusion_query(const Computation& computation, const compiler::FusionGroup& group,
                         const FusionContext& context) {
  hw::OpQuery q;
  // Groups are small: sorted vectors beat node-based sets.
  std::vector<compiler::InstrId> members(group.members.begin(), group.members.end());
  std::sort(members.begin(), members.end());
  // Per external input: the bytes its window-reading uses touch, or a whole read.
  struct InputRead {
    compiler::InstrId id;
    double window_bytes = 0;
    bool whole = false;
  };
  std::vector<InputRead> reads;
  auto note_read = [&reads](compiler::InstrId id, std::optional<double> window) {
    auto it =
        std::find_if(reads.begin(), reads.end(), [id](const InputRead& r) { return r.id == id; });
    if (it == reads.end()) it = reads.insert(reads.end(), InputRead{id});
    if (window)
      it->window_bytes += *window;
    else
      it->whole = true;
  };
  for (compiler::InstrId id : group.members) {
    const Instruction& instr = computation.instr(id);
    if (classify(instr) == OpClass::kCompute) add_work(computation, instr, q);
    for (int i = 0; i < instr.operand_count(); ++i) {
      const compiler::InstrId operand = instr.operand(i);
      if (std::binary_search(members.begin(), members.end(), operand)) continue;
      note_read(operand, window_read_bytes(instr, i));
    }
  }
  // A window read never costs more than reading the whole input once.
  for (const InputRead& r : reads) {
    const double whole = bytes_of(computation.instr(r.id).shape);
    q.hbm_bytes_read += r.whole ? whole : std::min(whole, r.window_bytes);
  }
  if (!group.members.empty()) {
    // The root is written once; a dynamic-update-slice root writes only its update, in place.
    const compiler::InstrId root_id = group.members.back();
    const Instruction& root = computation.instr(root_id);
    q.hbm_bytes_written = root.opcode == Opcode::kDynamicUpdateSlice
                              ? bytes_of(operand_shape(computation, root, 1))
                              : bytes_of(root.shape);
    // Extra outputs (multi-output fusion): members read outside the group
    // that no reader recomputes.
    for (compiler::InstrId id : group.members) {
      if (id == root_id || context.duplicable[static_cast<size_t>(id)]) continue;
      const auto readers = context.users[id];
      const bool read_outside =
          std::any_of(readers.begin(), readers.end(), [&](compiler::InstrId u) {
            return !std::binary_search(members.begin(), members.end(), u);
          });
      if (read_outside) q.hbm_bytes_written += bytes_of(computation.instr(id).shape);
    }
  }
  return q;
}

FusionContext::FusionContext(const Computation& computation)
    : users(computation), duplicable(compiler::duplicable_ops(computation)) {}

hw::OpQuery fusion_query(const Computation& computation, const compiler::FusionGroup& group) {
  return fusion_query(computation, group, FusionContext(computation));
}

double seconds_with_hbm_share(const OpCost& cost, double share) {
  if (share >= 1 || cost.hbm_seconds <= 0) return cost.seconds;
  const double slowest = std::max({cost.mxu_seconds, cost.vpu_seconds, cost.hbm_seconds});
  const double overhead = std::max(0.0, cost.seconds - slowest);
  return overhead + std::max({cost.mxu_seconds, cost.vpu_seconds, cost.hbm_seconds / share});
}

OpCost OpCostModel::time(const std::string& signature, const hw::OpQuery& query) {
  auto it = cache_.find(signature);
  if (it != cache_.end()) {
    ++hits_;
    return it->second;
  }
  const hw::OpTiming t = core_.time_op(query);
  OpCost cost;
  cost.seconds = t.seconds;
  cost.unit_seconds = std::min(t.seconds, std::max({t.mxu_seconds, t.vpu_seconds, t.hbm_seconds}));
  cost.flops = t.flops;
  for (const auto& m : query.matmuls) cost.matmul_flops += hw::matmul_flops(m);
  cost.hbm_bytes = t.hbm_bytes;
  cost.bound = t.bound;
  cost.mxu_seconds = t.mxu_seconds;
  cost.vpu_seconds = t.vpu_seconds;
  cost.hbm_seconds = t.hbm_seconds;
  cache_.emplace(signature, cost);
  return cost;
}

double host_transfer_bytes(const Computation& computation, const Instruction& instr) {
  switch (instr.opcode) {
    case Opcode::kCustomCall:
      return classify_custom_call(instr) == CustomCallKind::kHostTransfer ? bytes_of(instr.shape)
                                                                          : 0.0;
    case Opcode::kInfeed:
      return bytes_of(instr.shape);  // (data, token): the token has no bytes
    case Opcode::kOutfeed:
      return instr.operand_count() > 0 ? bytes_of(computation.instr(instr.operand(0)).shape) : 0.0;
    case Opcode::kSend:
      return instr.attrs.is_host_transfer && instr.operand_count() > 0
                 ? bytes_of(computation.instr(instr.operand(0)).shape)
                 : 0.0;
    case Opcode::kRecv:
      return instr.attrs.is_host_transfer && instr.shape.is_tuple() &&
                     !instr.shape.tuple_shapes().empty()
                 ? bytes_of(instr.shape.tuple_shape(0))
                 : 0.0;
    default:
      return 0.0;
  }
}

OpCost OpCostModel::instruction(const Computation& computation, const Instruction& instr) {
  const hw::OpQuery q = op_query(module_, computation, instr);
  OpCost cost = time(query_key(q), q);
  // Host transfers (offload, infeed/outfeed, host send/recv): the bytes cross
  // the host link (PCIe), far slower than HBM; the op lasts the slower of the
  // two, as a DMA-bound copy.
  const double host_bytes = host_transfer_bytes(computation, instr);
  if (host_bytes > 0 && host_bandwidth_ > 0) {
    const double host_s = host_bytes / host_bandwidth_;
    if (host_s > cost.unit_seconds) {
      cost.seconds += host_s - cost.unit_seconds;
      cost.unit_seconds = host_s;
      cost.hbm_seconds = host_s;
      cost.bound = hw::Bound::kHbm;
    }
  }
  return cost;
}

OpCost OpCostModel::fusion(const Computation& computation, const compiler::FusionGroup& group) {
  auto [it, inserted] = contexts_.try_emplace(&computation);
  if (inserted) it->second = std::make_unique<FusionContext>(computation);
  const hw::OpQuery q = fusion_query(computation, group, *it->second);
  return time(query_key(q), q);
}

}  // namespace podsim::sim
