// Sharding propagation engine: reads annotations, runs the level schedule of
// forward and backward sweeps to a fixed point, and writes every sharding
// back to the module (docs/reference/gspmd.md#pre-processing, #which-sharding-is-better).
#include "compiler/propagation/propagation.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>

#include "compiler/propagation/op_rules.h"
#include "compiler/propagation/propagation_state.h"
#include "compiler/sharding/sharding_util.h"
#include "compiler/sharding/shardy.h"

namespace podsim::compiler {

namespace {

using propagation::PropagationState;
using propagation::ValueRef;

std::vector<int64_t> leaf_ranks(const Shape& s) {
  std::vector<int64_t> out;
  for (const Shape* leaf : s.leaves()) out.push_back(leaf->rank());
  return out;
}

// Annotations may tile over a subset of the devices ({devices=[2,2]0,1,4,5}
// on 8): XLA's propagation accepts them (ids in range, each once), so a
// leaf whose tile array is smaller than the device count is checked that
// way; everything else by Sharding::validate.
void validate_annotation_leaf(const Sharding& s, int64_t rank, int64_t num_devices,
                              const SourceLocation& where) {
  if (!s.is_tiled() || s.tile_assignment().num_elements() >= num_devices ||
      s.tiled_data_rank() != rank)
    return s.validate(rank, num_devices, where);
  std::vector<bool> seen(static_cast<size_t>(num_devices), false);
  for (int64_t device : s.tile_assignment().to_vector()) {
    if (device < 0 || device >= num_devices || seen[static_cast<size_t>(device)])
      throw UserError(
          where,
          fmt::format("{}: device {} is out of range or appears twice", s.to_string(), device),
          fmt::format("device ids must be in [0, {}), each once", num_devices));
    seen[static_cast<size_t>(device)] = true;
  }
}

void validate_annotation(const Sharding& s, const std::vector<int64_t>& ranks, int64_t num_devices,
                         const SourceLocation& where) {
  if (!s.is_tuple()) {
    if (ranks.size() == 1) return validate_annotation_leaf(s, ranks[0], num_devices, where);
    return s.validate_leaves(ranks, num_devices, where);
  }
  if (s.tuple_elements().size() != ranks.size())
    return s.validate_leaves(ranks, num_devices, where);
  for (size_t i = 0; i < ranks.size(); ++i)
    validate_annotation_leaf(s.tuple_elements()[i], ranks[i], num_devices, where);
}

// One leaf of the "better sharding" decision (docs/reference/gspmd.md#which-sharding-is-better).
// Returns the sharding to store, or nullopt to keep the current one.
std::optional<Sharding> improve_leaf(const std::optional<Sharding>& current,
                                     const Sharding& candidate, const std::vector<int64_t>& dims,
                                     bool may_combine, bool aggressive) {
  if (candidate.is_maximal() || candidate.is_unknown())
    return std::nullopt;  // placement does not spread
  if (!current) return candidate;
  if (*current == candidate || current->is_manual()) return std::nullopt;
  MergeOutcome m = merge_sharding(*current, candidate, may_combine);
  if (!m.dst_wins || m.sharding == *current) return std::nullopt;
  // No silent re-layout: a candidate that is not a merge must refine a tiled
  // current sharding (IsSubTilingOrEqualSharding), unless this value has a
  // single user so at most one reshard appears downstream.
  bool was_merge = m.sharding.num_tiles() != candidate.num_tiles();
  if (!aggressive && !was_merge && current->is_tiled() &&
      !is_subtiling_or_equal(dims, m.sharding, *current))
    return std::nullopt;
  return m.sharding;
}

// Opcodes and operand lists of one computation in flat arrays. The skip
// checks of the sweeps (below) read only these: an Instruction is ~1.4 kB,
// so reading the operand vector of every instruction of a 10^5-instruction
// computation in every sweep is mostly cache misses.
struct CompactGraph {
  std::vector<Opcode> opcode;
  std::vector<uint32_t>
      first_operand;  // operands of i: operand_ids[first_operand[i] .. first_operand[i + 1])
  std::vector<InstrId> operand_ids;

  explicit CompactGraph(const Computation& comp) {
    opcode.reserve(static_cast<size_t>(comp.size()));
    first_operand.reserve(static_cast<size_t>(comp.size()) + 1);
    for (const Instruction& in : comp.instructions()) {
      opcode.push_back(in.opcode);
      first_operand.push_back(static_cast<uint32_t>(operand_ids.size()));
      operand_ids.insert(operand_ids.end(), in.operands.begin(), in.operands.end());
    }
    first_operand.push_back(static_cast<uint32_t>(operand_ids.size()));
  }
};

// Shardy meshes: the options' text, else the module's xla.sdy.meshes.
SdyMeshes read_meshes(const Module& module, const PropagationOptions& options) {
  if (!options.sdy_meshes.empty()) return parse_sdy_meshes(options.sdy_meshes);
  if (auto text = frontend_attribute(module.frontend_attributes(), "xla.sdy.meshes"))
    return parse_sdy_meshes(*text);
  return {};
}

class Propagator {
 public:
  Propagator(Module& module, const PropagationOptions& options)
      : module_(module),
        state_(module),
        num_devices_(options.num_devices > 0 ? options.num_devices : module.num_partitions()),
        options_(options),
        meshes_(read_meshes(module, options)) {
    state_.set_is_spmd(options.is_spmd);
    graphs_.resize(static_cast<size_t>(module.computation_count()));
    for (CompId c : state_.reachable())
      graphs_[static_cast<size_t>(c)].emplace(module.computation(c));
  }

  PropagationStats run() {
    read_annotations();
    for (int level = 0; level <= 3; ++level) {
      start_level(level);
      bool changed = true;
      while (changed) {
        changed = false;
        changed |= exchange_within_groups(level);
        for (CompId c : state_.reachable()) changed |= sweep(c, level);
        ++stats_.sweeps;
      }
    }
    align_shard_as_groups();
    finish_boundary();
    write_back();
    return stats_;
  }

 private:
  // The annotation of `in`: its sharding={...}, else a Shardy or mhlo
  // sharding in its frontend attributes (open dims recorded), else for
  // Shardy's manual-region custom-calls what the region says.
  std::optional<Sharding> annotation(ValueRef r, const Instruction& in) {
    if (in.opcode == Opcode::kOutfeed)
      return std::nullopt;  // describes its operand: read_outfeed_operand
    if (in.sharding) return parse_sharding(*in.sharding, in.location);
    const std::string& fa = in.attrs.frontend_attributes;
    if (fa.empty()) return std::nullopt;
    if (in.opcode == Opcode::kCustomCall &&
        in.attrs.custom_call_target == "xla.sdy.GlobalToLocalShape")
      return in.shape.is_tuple()
                 ? Sharding::tuple(std::vector<Sharding>(static_cast<size_t>(in.shape.leaf_count()),
                                                         Sharding::manual()))
                 : Sharding::manual();
    std::optional<SdySharding> sdy;
    if (in.opcode == Opcode::kCustomCall &&
        in.attrs.custom_call_target == "xla.sdy.LocalToGlobalShape") {
      if (auto out = frontend_attribute(fa, "xla.sdy.out_shardings"))
        sdy = parse_sdy_sharding(*out, meshes_, in.location);
    } else {
      sdy = sharding_from_frontend_attributes(fa, meshes_, in.location);
    }
    if (!sdy || sdy->fully_open) return std::nullopt;
    if (!in.shape.is_tuple() && sdy->open_dims.size() == 1 && !sdy->open_dims[0].empty())
      open_dims_[r] = sdy->open_dims[0];
    if (in.shape.is_tuple() && !sdy->sharding.is_tuple())
      return Sharding::tuple(
          std::vector<Sharding>(static_cast<size_t>(in.shape.leaf_count()), sdy->sharding));
    return sdy->sharding;
  }

  // Shardy's xla.sdy.GlobalToLocalShape carries its operands' shardings
  // (xla.sdy.in_shardings, one per operand) for operands that have none.
  void read_manual_region_operands(CompId c, const Instruction& in) {
    if (in.opcode != Opcode::kCustomCall ||
        in.attrs.custom_call_target != "xla.sdy.GlobalToLocalShape")
      return;
    auto text = frontend_attribute(in.attrs.frontend_attributes, "xla.sdy.in_shardings");
    if (!text) return;
    SdySharding sdy = parse_sdy_sharding(*text, meshes_, in.location);
    std::vector<Sharding> leaves = sdy.sharding.is_tuple() ? sdy.sharding.tuple_elements()
                                                           : std::vector<Sharding>{sdy.sharding};
    for (int k = 0; k < in.operand_count() && k < static_cast<int>(leaves.size()); ++k) {
      ValueRef operand{c, in.operand(k)};
      if (!state_.sharding(operand) && state_.instr(operand).shape.is_array()) {
        leaves[static_cast<size_t>(k)].validate(state_.instr(operand).shape.rank(), num_devices_,
                                                in.location);
        state_.set(operand, leaves[static_cast<size_t>(k)]);
      }
    }
  }

  // An outfeed's sharding is that of the data it sends (XLA: the operand's
  // leaves, optionally followed by the token's); the operand takes it when it
  // has none. The outfeed's own value is a token.
  void read_outfeed_operand(CompId c, const Instruction& in) {
    if (in.opcode != Opcode::kOutfeed || !in.sharding || in.operand_count() < 1) return;
    ValueRef operand{c, in.operand(0)};
    if (state_.sharding(operand)) return;
    const Shape& data = state_.instr(operand).shape;
    Sharding s = parse_sharding(*in.sharding, in.location).without_group_and_metadata();
    const int64_t leaves = data.leaf_count();
    if (s.is_tuple()) {
      const auto& all = s.tuple_elements();
      if (static_cast<int64_t>(all.size()) < leaves) return;
      std::vector<Sharding> mine(all.begin(), all.begin() + leaves);
      s = data.is_tuple() ? Sharding::tuple(std::move(mine)) : mine[0];
    }
    validate_annotation(s, leaf_ranks(data), num_devices_, in.location);
    state_.set(operand, s);
  }

  // Per leaf of entry parameter `i` (of `count`): may propagation choose it?
  // (XLA's allow_spmd_sharding_propagation_to_parameters vector.)
  std::vector<bool> parameter_leaf_flags(size_t i, size_t count, const Shape& shape) const {
    const std::vector<bool>& f = options_.allow_to_parameters;
    const auto leaves = static_cast<size_t>(shape.leaf_count());
    if (count == 1 && shape.is_tuple() && f.size() == leaves) return f;
    if (f.size() == count) return std::vector<bool>(leaves, f[i]);
    // One value, or a count that fits nothing: XLA applies "any true" to all.
    return std::vector<bool>(leaves, std::any_of(f.begin(), f.end(), [](bool b) { return b; }));
  }

  // Per leaf of the entry result (XLA's allow_spmd_sharding_propagation_to_output).
  std::vector<bool> output_leaf_flags(const Shape& shape) const {
    const std::vector<bool>& f = options_.allow_to_output;
    const auto leaves = static_cast<size_t>(shape.leaf_count());
    if (f.size() == leaves) return f;
    return std::vector<bool>(leaves, std::any_of(f.begin(), f.end(), [](bool b) { return b; }));
  }

  // The entry boundary under XLA's vectors (PropagationOptions::allow_to_*):
  // which parameters / root are set by the vectors, their leaf flags and
  // their annotations.
  void read_boundary() {
    const CompId e = module_.entry_id();
    const Computation& entry = module_.entry();
    auto add = [&](InstrId i, std::vector<bool> flags, bool check_even) {
      const Instruction& in = entry.instr(i);
      std::optional<Sharding> given;
      if (in.sharding)
        given = parse_sharding(*in.sharding, in.location).without_group_and_metadata();
      if (given && !given->is_tuple() && in.shape.is_tuple())
        given = Sharding::tuple(
            std::vector<Sharding>(static_cast<size_t>(in.shape.leaf_count()), *given));
      boundary_.push_back({{e, i}, std::move(flags), given, check_even});
    };
    if (!options_.allow_to_parameters.empty()) {
      const std::vector<InstrId> parameters = entry.parameters();
      for (size_t k = 0; k < parameters.size(); ++k) {
        const Shape& shape = entry.instr(parameters[k]).shape;
        // XLA checks divisibility only where the vector maps one to one.
        const size_t n = options_.allow_to_parameters.size();
        add(parameters[k], parameter_leaf_flags(k, parameters.size(), shape),
            n == parameters.size() || (parameters.size() == 1 && shape.is_tuple() &&
                                       n == static_cast<size_t>(shape.leaf_count())));
      }
    }
    if (!options_.allow_to_output.empty()) {
      bool is_parameter = false;
      for (const auto& b : boundary_) is_parameter |= b.ref.instr == entry.root();
      const Shape& shape = entry.instr(entry.root()).shape;
      if (!is_parameter)
        add(entry.root(), output_leaf_flags(shape),
            !shape.is_tuple() ||
                options_.allow_to_output.size() == static_cast<size_t>(shape.leaf_count()));
    }
  }

  const std::vector<bool>* boundary_flags(ValueRef r) const {
    for (const auto& b : boundary_)
      if (b.ref == r) return &b.flags;
    return nullptr;
  }

  // After the levels: a disallowed leaf gets its annotation back (else
  // replicated); an allowed leaf whose propagated tiling does not divide its
  // dims evenly becomes replicated (XLA's evenly-partitions check, made
  // where the vector maps one flag per parameter / leaf, or the result is
  // one array).
  void finish_boundary() {
    for (const auto& b : boundary_) {
      const Shape& shape = state_.instr(b.ref).shape;
      const std::vector<const Shape*> leaves = shape.leaves();
      const std::optional<Sharding>& now = state_.sharding(b.ref);
      auto leaf_of = [&](const std::optional<Sharding>& s, size_t j) -> std::optional<Sharding> {
        if (!s) return std::nullopt;
        if (s->is_tuple())
          return j < s->tuple_elements().size() ? std::optional(s->tuple_elements()[j])
                                                : std::nullopt;
        return s;
      };
      std::vector<Sharding> out;
      for (size_t j = 0; j < leaves.size(); ++j) {
        std::optional<Sharding> given = leaf_of(b.given, j);
        std::optional<Sharding> leaf = leaf_of(now, j);
        const bool allowed = j < b.flags.size() && b.flags[j];
        if (allowed && leaf && b.check_even && !evenly_divides(*leaf, leaves[j]->dims()))
          out.push_back(Sharding::replicated());
        else
          out.push_back(allowed && leaf ? *leaf : given ? *given : Sharding::replicated());
      }
      Sharding result = shape.is_tuple() ? Sharding::tuple(std::move(out)) : out[0];
      if (!now || !(*now == result)) state_.set_provided(b.ref, result);
    }
  }

  static bool evenly_divides(const Sharding& s, const std::vector<int64_t>& dims) {
    if (!s.is_tiled()) return true;
    for (int64_t d = 0; d < s.tiled_data_rank() && d < static_cast<int64_t>(dims.size()); ++d)
      if (dims[static_cast<size_t>(d)] % s.tile_assignment().dim(d) != 0) return false;
    return true;
  }

  // XLA's own mark on a sharding it added only to keep CSE from merging
  // values (metadata op_name "_sharding_propagation_cse_prevention"): not
  // the user's; propagation starts without it.
  static bool is_cse_prevention(const Sharding& s) {
    const auto marked = [](const Sharding& leaf) {
      for (const std::string& m : leaf.metadata())
        if (m.find("_sharding_propagation_cse_prevention") != std::string::npos) return true;
      return false;
    };
    if (!s.is_tuple()) return marked(s);
    return std::any_of(s.tuple_elements().begin(), s.tuple_elements().end(), marked);
  }

  void read_annotations() {
    read_boundary();
    for (CompId c : state_.reachable()) {
      const Computation& comp = module_.computation(c);
      for (InstrId i = 0; i < comp.size(); ++i) {
        const Instruction& in = comp.instr(i);
        std::optional<Sharding> annotated = annotation({c, i}, in);
        if (!annotated || is_cse_prevention(*annotated)) continue;
        Sharding s = *annotated;
        if (s.group()) groups_[{s.group()->id, s.group()->kind}].push_back({c, i});
        ++stats_.annotated;
        if (s.is_unknown()) continue;  // "{unknown shard_as 1}": group membership only
        s = s.with_group(std::nullopt);
        std::vector<int64_t> ranks = leaf_ranks(in.shape);
        // A leaf sharding on a tuple-shaped value applies to every leaf (XLA
        // reads {replicated} on a while loop's state, or one tiling on a
        // variadic scatter, so).
        if (!s.is_tuple() && in.shape.is_tuple())
          s = Sharding::tuple(std::vector<Sharding>(ranks.size(), s));
        validate_annotation(s, ranks, num_devices_, in.location);
        const std::vector<bool>* flags = boundary_flags({c, i});
        if (flags && std::any_of(flags->begin(), flags->end(), [](bool b) { return b; }))
          state_.set({c, i}, s);  // XLA: an allowed boundary value's annotation is not final
        else
          state_.set_provided({c, i}, s);
        if (auto open = unspecified_dims(in); !open.empty()) open_dims_[{c, i}] = std::move(open);
      }
    }
    // A fully specified "Sharding" annotation on an unannotated value gives
    // that value the sharding directly (XLA does this when replacing the
    // custom call by a copy).
    for (CompId c : state_.reachable()) {
      const Computation& comp = module_.computation(c);
      for (InstrId i = 0; i < comp.size(); ++i) {
        const Instruction& in = comp.instr(i);
        read_manual_region_operands(c, in);
        read_outfeed_operand(c, in);
        if (in.opcode != Opcode::kCustomCall ||
            !is_sharding_custom_call_target(in.attrs.custom_call_target) ||
            !state_.provided({c, i}) || in.operand_count() != 1)
          continue;
        ValueRef operand{c, in.operand(0)};
        if (!state_.sharding(operand) && !open_dims_.count({c, i}) && state_.sharding({c, i}))
          state_.set(operand, *state_.sharding({c, i}));
      }
    }
    // XLA's allow_spmd_sharding_propagation_to_parameters / _to_output: the
    // options, and the module's own flags (one for all, or one each).
    auto allowed = [](const std::vector<bool>& flags, size_t i) {
      return flags.empty() || (flags.size() == 1 ? flags[0] : i < flags.size() && flags[i]);
    };
    // Under XLA's vectors a value none of whose leaves may be chosen stays
    // as annotated, else replicated.
    const Computation& entry = module_.entry();
    // A control-flow result (a while root) still shares its loop's sharding
    // while propagating, as in XLA; finish_boundary restores it.
    for (const auto& b : boundary_) {
      const Opcode op = state_.instr(b.ref).opcode;
      if (std::none_of(b.flags.begin(), b.flags.end(), [](bool f) { return f; }) &&
          !state_.sharding(b.ref) && op != Opcode::kWhile && op != Opcode::kConditional &&
          op != Opcode::kCall)
        state_.freeze(b.ref);  // no sharding, as in XLA (written as replicated)
    }
    const std::vector<InstrId> parameters = entry.parameters();
    if (options_.allow_to_parameters.empty())
      for (size_t i = 0; i < parameters.size(); ++i)
        if (!(options_.propagate_to_parameters &&
              allowed(module_.propagation_to_parameters(), i)) &&
            !state_.sharding({module_.entry_id(), parameters[i]}))
          state_.set_provided({module_.entry_id(), parameters[i]}, Sharding());
    const std::vector<bool>& output_flags = module_.propagation_to_output();
    const bool output_allowed =
        std::all_of(output_flags.begin(), output_flags.end(), [](bool b) { return b; });
    if (options_.allow_to_output.empty() && !(options_.propagate_to_output && output_allowed) &&
        !state_.sharding({module_.entry_id(), entry.root()}))
      state_.set_provided({module_.entry_id(), entry.root()}, Sharding());
    state_.sync_provided_groups();
  }

  // "Sharding" custom calls and manual conversions may leave dims open (backend_config
  // "unspecified_dims=[1,2]"); those dims can be refined by neighbours.
  static std::vector<int64_t> unspecified_dims(const Instruction& in) {
    std::vector<int64_t> dims;
    const std::string& target = in.attrs.custom_call_target;
    if (in.opcode != Opcode::kCustomCall ||
        !(is_sharding_custom_call_target(target) || target == "SPMDFullToShardShape" ||
          target == "SPMDShardToFullShape"))
      return dims;
    // The regex needs this text; most annotations have none (and building
    // the regex per annotation is costly).
    if (in.attrs.backend_config.find("unspecified_dims=[") == std::string::npos) return dims;
    const std::regex kOpen(R"(unspecified_dims=\[([0-9,\s]*)\])");
    std::smatch match;
    if (!std::regex_search(in.attrs.backend_config, match, kOpen)) return dims;
    std::string list = match[1].str();
    for (size_t pos = 0; pos < list.size();) {
      size_t end = list.find(',', pos);
      std::string item = list.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      if (item.find_first_of("0123456789") != std::string::npos) {
        int64_t d = std::stoll(item);
        if (d < 0 || d >= in.shape.rank())
          throw UserError(in.location, fmt::format("unspecified dim {} out of range for rank {}", d,
                                                   in.shape.rank()));
        dims.push_back(d);
      }
      if (end == std::string::npos) break;
      pos = end + 1;
    }
    return dims;
  }

  // Open dims of a provided annotation take a candidate's tiling on those
  // dims when it strictly refines the annotation (RefineUnspecifiedDims).
  bool refine_open_dims(ValueRef r, const Sharding& candidate) {
    auto it = open_dims_.find(r);
    if (it == open_dims_.end() || !candidate.is_tiled()) return false;
    const Sharding& current = *state_.sharding(r);
    Sharding restricted = partially_replicate_on_all_dims_except(candidate, it->second);
    auto merged = merge_if_compatible(current, restricted, current.num_tiles() + 1);
    if (!merged) return false;
    state_.set_provided(r, *merged);
    ++stats_.changes;
    return true;
  }

  // Members of a shard group exchange candidates (shard_as and shard_like).
  bool exchange_within_groups(int level) {
    bool changed = false;
    for (const auto& [key, members] : groups_)
      for (const ValueRef& to : members)
        for (const ValueRef& from : members)
          if (!(to == from) && state_.sharding(from) &&
              state_.instr(to).shape.dims() == state_.instr(from).shape.dims())
            changed |= improve(to, *state_.sharding(from), level);
    return changed;
  }

  // After the levels: every shard_as group ends with one common sharding.
  void align_shard_as_groups() {
    for (const auto& [key, members] : groups_) {
      if (key.second != ShardGroup::Kind::kAs) continue;
      std::vector<Sharding> present;
      for (const ValueRef& m : members)
        if (state_.sharding(m)) present.push_back(*state_.sharding(m));
      if (present.empty()) continue;
      Sharding common = find_common_sharding(present);
      for (const ValueRef& m : members)
        if (!state_.provided(m)) state_.set(m, common);
    }
  }

  bool improve(ValueRef r, const Sharding& candidate, int level) {
    if (state_.provided(r)) return level >= 1 && refine_open_dims(r, candidate);
    const Instruction& in = state_.instr(r);
    const bool may_combine = options_.is_spmd && level > 0;
    // Aggressive resharding is allowed when the value has one (non-root) user.
    const Computation& comp = module_.computation(r.comp);
    const bool aggressive = state_.users(r).size() == 1 && comp.root() != r.instr;
    const std::optional<Sharding>& current = state_.sharding(r);
    std::optional<Sharding> next;
    if (in.shape.is_tuple()) {
      next = improve_tuple(in.shape, current, candidate, may_combine, aggressive);
    } else {
      if (candidate.is_tuple()) return false;
      next = improve_leaf(current, candidate, in.shape.dims(), may_combine, aggressive);
    }
    if (!next) return false;
    state_.set(r, *next);
    ++stats_.changes;
    return true;
  }

  std::optional<Sharding> improve_tuple(const Shape& shape, const std::optional<Sharding>& current,
                                        const Sharding& candidate, bool may_combine,
                                        bool aggressive) {
    const std::vector<const Shape*> leaves = shape.leaves();
    auto split = [&](const Sharding& s) {
      return s.is_tuple() ? s.tuple_elements() : std::vector<Sharding>(leaves.size(), s);
    };
    std::vector<Sharding> cand = split(candidate);
    if (cand.size() != leaves.size()) return std::nullopt;
    if (!current) return Sharding::tuple(cand);
    std::vector<Sharding> cur = split(*current);
    bool any = false;
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (auto better = improve_leaf(cur[i], cand[i], leaves[i]->dims(), may_combine, aggressive)) {
        cur[i] = *better;
        any = true;
      }
    }
    if (!any) return std::nullopt;
    return Sharding::tuple(std::move(cur));
  }

  // improve(tuple, backward_candidate(gte)) without building the whole
  // candidate tuple: that candidate is the tuple's current leaves with the
  // element's leaves replaced by the get-tuple-element's sharding, and an
  // unchanged leaf never improves (improve_leaf: equal -> keep), so only the
  // element's leaves need the leaf rule. nullopt when this shortcut does not
  // apply (no tuple sharding yet, provided value): use the general path.
  std::optional<bool> improve_from_get_tuple_element(ValueRef tuple, ValueRef gte, int level) {
    const Instruction& in = state_.instr(tuple);
    const std::optional<Sharding>& current = state_.sharding(tuple);
    if (state_.provided(tuple) || !in.shape.is_tuple() || !current || !current->is_tuple())
      return std::nullopt;
    const std::vector<const Shape*> leaves = in.shape.leaves();
    if (current->tuple_elements().size() != leaves.size()) return std::nullopt;
    const std::optional<Sharding>& gte_sharding = state_.sharding(gte);
    if (!gte_sharding) return false;  // backward_candidate offers nothing
    const Instruction& user = state_.instr(gte);
    int64_t first = 0;
    for (int64_t e = 0; e < user.attrs.tuple_index; ++e)
      first += in.shape.tuple_shape(static_cast<int>(e)).leaf_count();
    const int64_t count = user.shape.leaf_count();
    const std::vector<Sharding> mine =
        gte_sharding->is_tuple() ? gte_sharding->tuple_elements()
                                 : std::vector<Sharding>(static_cast<size_t>(count), *gte_sharding);
    if (first + static_cast<int64_t>(mine.size()) > static_cast<int64_t>(leaves.size()))
      return std::nullopt;
    const Computation& comp = module_.computation(tuple.comp);
    const bool may_combine = options_.is_spmd && level > 0;
    const bool aggressive = state_.users(tuple).size() == 1 && comp.root() != tuple.instr;
    std::optional<std::vector<Sharding>> next;
    for (size_t j = 0; j < mine.size(); ++j) {
      const size_t leaf = static_cast<size_t>(first) + j;
      const Sharding& cur = next ? (*next)[leaf] : current->tuple_elements()[leaf];
      if (auto better = improve_leaf(cur, mine[j], leaves[leaf]->dims(), may_combine, aggressive)) {
        if (!next) next = current->tuple_elements();
        (*next)[leaf] = *better;
      }
    }
    if (!next) return false;
    state_.set(tuple, Sharding::tuple(std::move(*next)));
    ++stats_.changes;
    return true;
  }

  // A sweep re-runs a rule only when it may do something new: a rule is a pure function of the
  // shardings it reads (and of the level), so if its last run changed nothing and none of those
  // shardings was written since, skipping it changes no result, change count or sweep count.
  // clean_*[c][i] = the clock when that step last ran without a change, 0 = must run.
  // What each step reads and which marks survive a level change:
  // docs/compiler.md#skipping-rules-that-cannot-change-anything
  void start_level(int level) {
    if (level <= 1) {
      clean_forward_.assign(static_cast<size_t>(module_.computation_count()), {});
      clean_backward_.assign(static_cast<size_t>(module_.computation_count()), {});
      for (CompId c : state_.reachable()) {
        const auto n = static_cast<size_t>(module_.computation(c).size());
        clean_forward_[static_cast<size_t>(c)].assign(n, 0);
        clean_backward_[static_cast<size_t>(c)].assign(n, 0);
      }
      return;
    }
    for (CompId c : state_.reachable()) {
      const CompactGraph& graph = *graphs_[static_cast<size_t>(c)];
      for (size_t i = 0; i < graph.opcode.size(); ++i) {
        if (graph.opcode[i] != Opcode::kBroadcast) continue;
        const InstrId operand = graph.operand_ids[graph.first_operand[i]];
        if (level == 2) clean_backward_[static_cast<size_t>(c)][static_cast<size_t>(operand)] = 0;
        if (level == 3) clean_forward_[static_cast<size_t>(c)][i] = 0;
      }
    }
  }

  // True when neither instruction i nor any of its operands was written after
  // tick t (`ticks` = the computation's change ticks).
  bool unchanged_since(const CompactGraph& graph, const std::vector<uint64_t>& ticks, InstrId i,
                       uint64_t t) const {
    if (t == 0 || options_.rerun_every_rule || ticks[static_cast<size_t>(i)] > t) return false;
    const uint32_t end = graph.first_operand[static_cast<size_t>(i) + 1];
    for (uint32_t k = graph.first_operand[static_cast<size_t>(i)]; k < end; ++k)
      if (ticks[static_cast<size_t>(graph.operand_ids[k])] > t) return false;
    return true;
  }

  bool sweep(CompId c, int level) {
    const Computation& comp = module_.computation(c);
    const CompactGraph& graph = *graphs_[static_cast<size_t>(c)];
    const std::vector<uint64_t>& ticks = state_.change_ticks(c);
    std::vector<uint64_t>& clean_forward = clean_forward_[static_cast<size_t>(c)];
    std::vector<uint64_t>& clean_backward = clean_backward_[static_cast<size_t>(c)];
    bool changed = false;
    for (InstrId i = 0; i < comp.size(); ++i) {
      uint64_t& clean = clean_forward[static_cast<size_t>(i)];
      if (graph.opcode[static_cast<size_t>(i)] != Opcode::kParameter &&
          unchanged_since(graph, ticks, i, clean))
        continue;
      bool step_changed = false;
      for (const Sharding& cand : propagation::forward_candidates(state_, {c, i}, level))
        step_changed |= improve({c, i}, cand, level);
      clean = step_changed ? 0 : state_.clock();
      changed |= step_changed;
    }
    for (InstrId i = comp.size() - 1; i >= 0; --i) {
      uint64_t& clean = clean_backward[static_cast<size_t>(i)];
      const uint64_t clean_since = clean;
      bool step_changed = false;
      for (InstrId u : state_.users({c, i})) {
        if (graph.opcode[static_cast<size_t>(u)] != Opcode::kCall &&
            graph.opcode[static_cast<size_t>(u)] != Opcode::kConditional &&
            unchanged_since(graph, ticks, u, clean_since))
          continue;
        const Instruction& user = comp.instr(u);
        for (int k = 0; k < user.operand_count(); ++k) {
          if (user.operand(k) != i) continue;
          if (user.opcode == Opcode::kGetTupleElement) {
            if (auto fast = improve_from_get_tuple_element({c, i}, {c, u}, level)) {
              step_changed |= *fast;
              continue;
            }
          }
          if (auto cand = propagation::backward_candidate(state_, {c, u}, k, level))
            step_changed |= improve({c, i}, *cand, level);
        }
      }
      clean = step_changed ? 0 : state_.clock();
      changed |= step_changed;
    }
    return changed;
  }

  void write_back() {
    for (CompId c : state_.reachable()) {
      Computation& comp = module_.mutable_computation(c);
      for (InstrId i = 0; i < comp.size(); ++i) {
        const std::optional<Sharding>& s = state_.sharding({c, i});
        if (comp.instr(i).opcode == Opcode::kOutfeed && comp.instr(i).sharding)
          continue;  // keeps the data's
        if (s) {
          comp.mutable_instr(i).sharding = s->to_string();
        } else {
          comp.mutable_instr(i).sharding = Sharding::replicated().to_string();
          ++stats_.defaulted_replicated;
        }
      }
    }
  }

  Module& module_;
  PropagationState state_;
  int64_t num_devices_;
  PropagationOptions options_;
  SdyMeshes meshes_;
  PropagationStats stats_;
  std::map<std::pair<int64_t, ShardGroup::Kind>, std::vector<ValueRef>> groups_;
  std::map<ValueRef, std::vector<int64_t>> open_dims_;
  struct BoundaryValue {  // an entry parameter or the root under XLA's vectors
    ValueRef ref;
    std::vector<bool> flags;        // per leaf: may propagation choose it
    std::optional<Sharding> given;  // its annotation (tuple form for a tuple value)
    bool check_even = true;         // an uneven propagated tiling becomes replicated
  };
  std::vector<BoundaryValue> boundary_;
  std::vector<std::vector<uint64_t>> clean_forward_, clean_backward_;  // see sweep()
  std::vector<std::optional<CompactGraph>> graphs_;                    // per reachable computation
};

}  // namespace

PropagationStats propagate_shardings(Module& module, const PropagationOptions& options) {
  return Propagator(module, options).run();
}

}  // namespace podsim::compiler
