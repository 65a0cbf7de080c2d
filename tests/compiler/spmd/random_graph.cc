// Random module generator for the partitioner property test (see random_graph.h).
#include "tests/compiler/spmd/random_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <functional>
#include <numeric>
#include <optional>

#include "compiler/ir/builder.h"
#include "compiler/sharding/tile_assignment.h"

namespace podsim::compiler::spmd_test {
namespace {

using Dims = std::vector<int64_t>;

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {  // inclusive
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
bool chance(std::mt19937_64& rng, double p) { return std::bernoulli_distribution(p)(rng); }
template <typename T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& items) {
  return items[static_cast<size_t>(uniform(rng, 0, static_cast<int64_t>(items.size()) - 1))];
}
int64_t elements(const Dims& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

std::vector<int64_t> prime_factors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 2; n > 1; ++p)
    while (n % p == 0) out.push_back(p), n /= p;
  return out;
}

// Dim sizes: mostly 2..8 (many of them not multiples of the tile counts), sometimes 1.
int64_t random_dim(std::mt19937_64& rng) { return chance(rng, 0.1) ? 1 : uniform(rng, 2, 8); }

class GraphBuilder {
 public:
  GraphBuilder(uint64_t seed, const RandomGraphOptions& options)
      : rng_(seed), options_(options), module_("random_" + std::to_string(seed)) {
    add_ = module_.add_computation(scalar_binary_computation("add", Opcode::kAdd, DType::kF32));
    max_ = module_.add_computation(scalar_binary_computation("max", Opcode::kMaximum, DType::kF32));
    builder_.emplace("entry", &module_);
  }

  RandomCase build() {
    RandomCase out;
    out.devices = pick(rng_, options_.device_counts);
    const int64_t rank = uniform(rng_, 1, 3);
    Dims dims;
    for (int64_t d = 0; d < rank; ++d) dims.push_back(random_dim(rng_));
    pool_.push_back(parameter(dims));
    const int64_t ops = uniform(rng_, options_.min_ops, options_.max_ops);
    InstrId last = pool_.back();
    for (int64_t made = 0, attempts = 0; made < ops && attempts < 20 * ops; ++attempts) {
      const OpFamily family = pick(rng_, options_.families);
      std::optional<InstrId> id = emit(family);
      if (!id) continue;
      pool_.push_back(*id);
      out.ops.push_back(family);
      last = *id;
      ++made;
    }
    Computation entry = std::move(*builder_).build(last);
    annotate(entry, out.devices);
    module_.set_entry(module_.add_computation(std::move(entry)));
    module_.set_num_partitions(out.devices);
    out.module = std::move(module_);
    return out;
  }

 private:
  const Dims& dims_of(InstrId id) const { return builder_->shape(id).dims(); }
  bool fits(const Dims& dims) const { return elements(dims) <= options_.max_elements; }

  InstrId parameter(const Dims& dims) {
    const int64_t number = next_parameter_++;
    return builder_->parameter(number, Shape(DType::kF32, dims), fmt::format("p{}", number));
  }
  InstrId pick_value() { return pick(rng_, pool_); }
  // A pool value of the given dims other than `except` (or a new parameter).
  InstrId partner(const Dims& dims, InstrId except) {
    std::vector<InstrId> same;
    for (InstrId id : pool_)
      if (id != except && dims_of(id) == dims) same.push_back(id);
    if (!same.empty() && chance(rng_, 0.6)) return pick(rng_, same);
    if (chance(rng_, 0.2)) {  // a broadcast scalar constant (multiple of 1/8: exact)
      InstrId c =
          builder_->scalar_constant(DType::kF32, static_cast<double>(uniform(rng_, -8, 8)) / 8.0);
      return builder_->broadcast(c, dims, {});
    }
    return parameter(dims);
  }

  std::optional<InstrId> emit(OpFamily family) {
    const InstrId v = pick_value();
    const Dims dims = dims_of(v);
    const int64_t rank = static_cast<int64_t>(dims.size());
    switch (family) {
      case OpFamily::kUnary:
        return builder_->unary(
            pick(rng_, std::vector<Opcode>{Opcode::kNegate, Opcode::kAbs, Opcode::kTanh}), v);
      case OpFamily::kBinary: {
        const Opcode op =
            pick(rng_, std::vector<Opcode>{Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply,
                                           Opcode::kMaximum, Opcode::kMinimum});
        const InstrId other = partner(dims, v);
        return chance(rng_, 0.5) ? builder_->binary(op, v, other) : builder_->binary(op, other, v);
      }
      case OpFamily::kBroadcast: {
        if (rank >= 4) return std::nullopt;
        const int64_t position = uniform(rng_, 0, rank);
        Dims out = dims;
        out.insert(out.begin() + position, random_dim(rng_));
        if (!fits(out)) return std::nullopt;
        Dims mapped;
        for (int64_t d = 0; d < rank; ++d) mapped.push_back(d < position ? d : d + 1);
        return builder_->broadcast(v, out, mapped);
      }
      case OpFamily::kTranspose: {
        if (rank < 2) return std::nullopt;
        Dims perm(static_cast<size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng_);
        return builder_->transpose(v, perm);
      }
      case OpFamily::kReshape:
        return reshape(v, dims);
      case OpFamily::kReduce: {
        if (rank < 1) return std::nullopt;
        Dims reduced;
        for (int64_t d = 0; d < rank; ++d)
          if (chance(rng_, 0.5)) reduced.push_back(d);
        if (reduced.empty()) reduced.push_back(uniform(rng_, 0, rank - 1));
        const bool sum = chance(rng_, 0.6);
        InstrId init = builder_->scalar_constant(
            DType::kF32, sum ? 0.0 : -std::numeric_limits<double>::infinity());
        return builder_->reduce({v}, {init}, reduced, sum ? add_ : max_);
      }
      case OpFamily::kDot:
        return dot(v, dims);
      case OpFamily::kSlice: {
        if (rank < 1) return std::nullopt;
        const int64_t d = uniform(rng_, 0, rank - 1);
        std::vector<SliceDim> slice;
        for (int64_t i = 0; i < rank; ++i)
          slice.push_back(SliceDim{0, dims[static_cast<size_t>(i)], 1});
        const int64_t size = dims[static_cast<size_t>(d)];
        const int64_t start = uniform(rng_, 0, size - 1);
        slice[static_cast<size_t>(d)] =
            SliceDim{start, uniform(rng_, start + 1, size), uniform(rng_, 1, 2)};
        return builder_->slice(v, std::move(slice));
      }
      case OpFamily::kPad: {
        if (rank < 1) return std::nullopt;
        const int64_t d = uniform(rng_, 0, rank - 1);
        std::vector<PadDim> padding(static_cast<size_t>(rank));
        padding[static_cast<size_t>(d)] =
            PadDim{uniform(rng_, 0, 2), uniform(rng_, 0, 2), chance(rng_, 0.3) ? 1 : 0};
        Dims out = dims;
        const PadDim& p = padding[static_cast<size_t>(d)];
        out[static_cast<size_t>(d)] +=
            p.low + p.high + p.interior * std::max<int64_t>(0, dims[static_cast<size_t>(d)] - 1);
        if (!fits(out)) return std::nullopt;
        InstrId value =
            builder_->scalar_constant(DType::kF32, static_cast<double>(uniform(rng_, -4, 4)) / 4.0);
        return builder_->pad(v, value, std::move(padding));
      }
      case OpFamily::kConcatenate: {
        if (rank < 1) return std::nullopt;
        const int64_t d = uniform(rng_, 0, rank - 1);
        Dims other_dims = dims;
        other_dims[static_cast<size_t>(d)] = random_dim(rng_);
        Dims out = dims;
        out[static_cast<size_t>(d)] += other_dims[static_cast<size_t>(d)];
        if (!fits(out)) return std::nullopt;
        const InstrId other = chance(rng_, 0.3) ? v : partner(other_dims, v);
        return chance(rng_, 0.5) ? builder_->concatenate({v, other}, d)
                                 : builder_->concatenate({other, v}, d);
      }
      case OpFamily::kReverse: {
        if (rank < 1) return std::nullopt;
        Dims reversed;
        for (int64_t d = 0; d < rank; ++d)
          if (chance(rng_, 0.5)) reversed.push_back(d);
        if (reversed.empty()) reversed.push_back(uniform(rng_, 0, rank - 1));
        return builder_->reverse(v, reversed);
      }
      case OpFamily::kDynamicSlice: {
        if (rank < 1) return std::nullopt;
        std::vector<InstrId> starts;
        Dims sizes;
        for (int64_t d = 0; d < rank; ++d) {
          const int64_t size = dims[static_cast<size_t>(d)];
          const bool sliced = chance(rng_, 0.5);
          sizes.push_back(sliced ? uniform(rng_, 1, size) : size);
          // Starts past the end are clamped by dynamic-slice semantics.
          starts.push_back(builder_->scalar_constant(
              DType::kS32, static_cast<double>(sliced ? uniform(rng_, 0, size) : 0)));
        }
        return builder_->dynamic_slice(v, std::move(starts), std::move(sizes));
      }
      case OpFamily::kGather: {
        // operand dim k is looked up at B indices (random s32 values in
        // [-8, 8], clamped into range by gather semantics); the output is
        // [B, other operand dims...].
        if (rank < 1 || rank > 3) return std::nullopt;
        const int64_t k = uniform(rng_, 0, rank - 1);
        const int64_t lookups = random_dim(rng_);
        Dims out = {lookups};
        GatherDims gd;
        gd.collapsed_slice_dims = {k};
        gd.start_index_map = {k};
        gd.index_vector_dim = 1;
        Dims slice_sizes = dims;
        slice_sizes[static_cast<size_t>(k)] = 1;
        for (int64_t d = 0; d < rank; ++d) {
          if (d == k) continue;
          gd.offset_dims.push_back(static_cast<int64_t>(out.size()));
          out.push_back(dims[static_cast<size_t>(d)]);
        }
        if (!fits(out)) return std::nullopt;
        const int64_t number = next_parameter_++;
        const InstrId indices =
            builder_->parameter(number, Shape(DType::kS32, {lookups}), fmt::format("p{}", number));
        return builder_->gather(v, indices, std::move(gd), std::move(slice_sizes));
      }
      case OpFamily::kCopy: {
        if (rank < 1) return std::nullopt;
        const InstrId id = builder_->unary(Opcode::kCopy, v);
        if (chance(rng_, 0.5)) forced_annotations_.push_back(id);
        return id;
      }
    }
    return std::nullopt;
  }

  std::optional<InstrId> reshape(InstrId v, const Dims& dims) {
    const int64_t rank = static_cast<int64_t>(dims.size());
    Dims out = dims;
    switch (uniform(rng_, 0, 3)) {
      case 0: {  // merge two adjacent dims
        if (rank < 2) return std::nullopt;
        const size_t d = static_cast<size_t>(uniform(rng_, 0, rank - 2));
        out[d] *= out[d + 1];
        out.erase(out.begin() + static_cast<int64_t>(d) + 1);
        break;
      }
      case 1: {  // split a composite dim into two factors
        std::vector<std::pair<size_t, int64_t>> splits;
        for (size_t d = 0; d < dims.size(); ++d)
          for (int64_t f = 2; f < dims[d]; ++f)
            if (dims[d] % f == 0) splits.emplace_back(d, f);
        if (splits.empty() || rank >= 4) return std::nullopt;
        auto [d, f] = pick(rng_, splits);
        out[d] = dims[d] / f;
        out.insert(out.begin() + static_cast<int64_t>(d) + 1, f);
        break;
      }
      case 2:  // flatten
        if (rank < 2) return std::nullopt;
        out = {elements(dims)};
        break;
      default:  // insert a size-1 dim
        if (rank >= 4) return std::nullopt;
        out.insert(out.begin() + uniform(rng_, 0, rank), 1);
        break;
    }
    return builder_->reshape(v, out);
  }

  // lhs = v; contracting dim c of v, optionally one batch dim; the rhs holds
  // [batch?, K, N?] in a random dim order.
  std::optional<InstrId> dot(InstrId v, const Dims& dims) {
    const int64_t rank = static_cast<int64_t>(dims.size());
    if (rank < 1 || rank > 3) return std::nullopt;
    DotDims dd;
    const int64_t c = uniform(rng_, 0, rank - 1);
    std::optional<int64_t> batch;
    if (rank >= 2 && chance(rng_, 0.35)) {
      do batch = uniform(rng_, 0, rank - 1);
      while (*batch == c);
    }
    // rhs logical order: batch, contracting, non-contracting; then permuted.
    Dims logical;
    if (batch) logical.push_back(dims[static_cast<size_t>(*batch)]);
    logical.push_back(dims[static_cast<size_t>(c)]);
    const bool has_free = chance(rng_, 0.85);
    if (has_free) logical.push_back(random_dim(rng_));
    Dims order(logical.size());  // order[i] = rhs dim of logical dim i
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng_);
    Dims rhs_dims(logical.size());
    for (size_t i = 0; i < logical.size(); ++i)
      rhs_dims[static_cast<size_t>(order[i])] = logical[i];
    size_t next = 0;
    if (batch) {
      dd.lhs_batch = {*batch};
      dd.rhs_batch = {order[next++]};
    }
    dd.lhs_contracting = {c};
    dd.rhs_contracting = {order[next++]};
    Dims out;
    if (batch) out.push_back(dims[static_cast<size_t>(*batch)]);
    for (int64_t d = 0; d < rank; ++d)
      if (d != c && d != batch) out.push_back(dims[static_cast<size_t>(d)]);
    if (has_free) out.push_back(logical.back());
    if (!fits(out)) return std::nullopt;
    const InstrId rhs = partner(rhs_dims, v);
    return builder_->dot(v, rhs, dd);
  }

  // 1..max_annotations instructions with a rank >= 1 array shape get a random sharding.
  void annotate(Computation& entry, int64_t devices) {
    std::vector<InstrId> candidates;
    for (InstrId id = 0; id < entry.size(); ++id) {
      const Instruction& instr = entry.instr(id);
      if (instr.shape.is_array() && instr.shape.rank() >= 1 && instr.opcode != Opcode::kConstant)
        candidates.push_back(id);
    }
    std::shuffle(candidates.begin(), candidates.end(), rng_);
    const int64_t count = std::min<int64_t>(uniform(rng_, 1, options_.max_annotations),
                                            static_cast<int64_t>(candidates.size()));
    std::vector<InstrId> chosen(candidates.begin(), candidates.begin() + count);
    chosen.insert(chosen.end(), forced_annotations_.begin(), forced_annotations_.end());
    for (InstrId id : chosen) {
      Instruction& instr = entry.mutable_instr(id);
      instr.sharding = random_sharding(rng_, instr.shape.dims(), devices).to_string();
    }
  }

  std::mt19937_64 rng_;
  RandomGraphOptions options_;
  Module module_;
  CompId add_ = kNoId, max_ = kNoId;
  std::optional<ComputationBuilder> builder_;
  std::vector<InstrId> pool_;
  std::vector<InstrId> forced_annotations_;  // copies that must get a sharding
  int64_t next_parameter_ = 0;
};

}  // namespace

std::string_view to_string(OpFamily family) {
  switch (family) {
    case OpFamily::kUnary:
      return "unary";
    case OpFamily::kBinary:
      return "binary";
    case OpFamily::kBroadcast:
      return "broadcast";
    case OpFamily::kTranspose:
      return "transpose";
    case OpFamily::kReshape:
      return "reshape";
    case OpFamily::kReduce:
      return "reduce";
    case OpFamily::kDot:
      return "dot";
    case OpFamily::kSlice:
      return "slice";
    case OpFamily::kPad:
      return "pad";
    case OpFamily::kConcatenate:
      return "concatenate";
    case OpFamily::kReverse:
      return "reverse";
    case OpFamily::kDynamicSlice:
      return "dynamic-slice";
    case OpFamily::kCopy:
      return "copy";
    case OpFamily::kGather:
      return "gather";
  }
  return "?";
}

Sharding random_sharding(std::mt19937_64& rng, std::span<const int64_t> dims, int64_t devices) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  Dims tile(static_cast<size_t>(rank) + 1, 1);  // data dims + replication dim
  for (int64_t factor : prime_factors(devices)) {
    // Replication with probability 1/(rank+2); otherwise a random data dim.
    const int64_t slot = uniform(rng, 0, rank + 1);
    tile[static_cast<size_t>(slot < rank ? slot : rank)] *= factor;
  }
  TileAssignment tiles;
  switch (uniform(rng, 0, 2)) {
    case 0:
      tiles = TileAssignment::iota(tile);
      break;
    case 1: {  // a mesh transposed: iota over permuted dims, transposed back
      Dims perm(tile.size());
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      Dims permuted;
      for (int64_t p : perm) permuted.push_back(tile[static_cast<size_t>(p)]);
      Dims inverse(perm.size());
      for (size_t i = 0; i < perm.size(); ++i)
        inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
      tiles = TileAssignment::iota(permuted).transpose(inverse);
      break;
    }
    default: {
      Dims ids(static_cast<size_t>(devices));
      std::iota(ids.begin(), ids.end(), 0);
      std::shuffle(ids.begin(), ids.end(), rng);
      tiles = TileAssignment::from_devices(tile, ids);
      break;
    }
  }
  if (tile.back() == 1) {
    Dims data(tile.begin(), tile.end() - 1);
    return Sharding::tiled(tiles.reshape(data));
  }
  return Sharding::partial_tile(tiles);
}

RandomCase generate_random_case(uint64_t seed, const RandomGraphOptions& options) {
  return GraphBuilder(seed, options).build();
}

}  // namespace podsim::compiler::spmd_test
