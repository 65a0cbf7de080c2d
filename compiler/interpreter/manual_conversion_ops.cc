// The manual-partitioning conversions of an unpartitioned module, run on
// every device at once (docs/compiler.md#interpreter-semantics). Both are a
// copy in the partitioned program, so a device's part of the operand (under
// the automatic side's sharding) is its part of the result (under the
// manual side's): SPMDFullToShardShape gives each manual group the parts of
// its devices, SPMDShardToFullShape assembles the full value from them.
#include "compiler/interpreter/manual_conversion_ops.h"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "compiler/sharding/sharding.h"
#include "compiler/sharding/sharding_util.h"

namespace podsim::compiler::interp {

namespace {

// An instruction's leaf sharding; none is {manual} when `manual_default`.
Sharding leaf_sharding_of(const Instruction& instr, const Instruction& user, bool manual_default) {
  if (!instr.sharding) {
    if (manual_default) return Sharding::manual();
    fail(user, fmt::format("needs a sharding on '{}' to convert between the full and the "
                           "per-device shape",
                           instr.name));
  }
  Sharding s = parse_sharding(*instr.sharding, instr.location);
  if (s.is_tuple()) fail(user, "a tuple sharding cannot convert an array");
  return s;
}

// The devices whose parts form one value: those of the same manual subgroup
// coordinate ({manual}: each device alone; no manual subgroup: all devices).
int64_t manual_group(const Sharding& s, int64_t device) {
  if (s.is_manual()) return device;
  if (!s.is_tiled() || !s.has_manual_subgroup()) return -1;
  const auto index = s.tile_assignment().index_of(device);
  return index ? (*index)[static_cast<size_t>(s.subgroup_manual_dim())] : -2 - device;
}

// The value of `out_shape` of device `partition_ids[l]`'s group under
// `out_sharding`: every member d writes its part of its `in` value (region
// of d under in_sharding) at its region under out_sharding. Both regions
// hold the same elements: the partitioned program only copies them.
std::vector<Literal> assemble(const Instruction& instr, const Sharding& in_sharding,
                              const Shape& in_shape, const Sharding& out_sharding,
                              const Shape& out_shape, const std::vector<Operands>& per_lane,
                              const std::vector<int64_t>& partition_ids) {
  if (shard_shape(in_sharding, in_shape.dims()) != shard_shape(out_sharding, out_shape.dims()))
    fail(instr, fmt::format("{} under {} and {} under {} do not give every device the same part",
                            in_shape.to_string(false), in_sharding.to_string(),
                            out_shape.to_string(false), out_sharding.to_string()));
  for (const Sharding* s : {&in_sharding, &out_sharding})
    if (s->is_tiled() && s->total_num_tiles() > static_cast<int64_t>(partition_ids.size()))
      fail(instr, fmt::format("needs the parts of {} devices but runs on {}: evaluate the module "
                              "on every device",
                              s->total_num_tiles(), partition_ids.size()));
  const size_t rank = out_shape.dims().size();
  const int64_t parts = Literal::values_per_element(out_shape.dtype());  // 2 for complex
  // Manual group -> its value.
  std::map<int64_t, Literal> assembled;
  for (size_t l = 0; l < partition_ids.size(); ++l) {
    const int64_t device = partition_ids[l];
    auto it = assembled.try_emplace(manual_group(out_sharding, device), out_shape).first;
    const ShardRegion from = shard_region(in_sharding, in_shape.dims(), device);
    const ShardRegion to = shard_region(out_sharding, out_shape.dims(), device);
    std::vector<int64_t> extent, source(rank), target(rank);
    for (size_t i = 0; i < rank; ++i)
      extent.push_back(std::min(from.limits[i] - from.offsets[i], to.limits[i] - to.offsets[i]));
    const Literal& value = *per_lane[l][0];
    for_each_index(extent, [&](const std::vector<int64_t>& index) {
      for (size_t i = 0; i < rank; ++i) {
        source[i] = from.offsets[i] + index[i];
        target[i] = to.offsets[i] + index[i];
      }
      const int64_t from = value.linear_index(source), to = it->second.linear_index(target);
      for (int64_t k = 0; k < parts; ++k)
        it->second.mutable_values()[static_cast<size_t>(to + k)] =
            value.values()[static_cast<size_t>(from + k)];
    });
  }
  std::vector<Literal> results;
  for (int64_t device : partition_ids)
    results.push_back(assembled.at(manual_group(out_sharding, device)));
  return results;
}

}  // namespace

bool is_manual_conversion(const Instruction& instr) {
  return instr.opcode == Opcode::kCustomCall &&
         (instr.attrs.custom_call_target == "SPMDFullToShardShape" ||
          instr.attrs.custom_call_target == "SPMDShardToFullShape");
}

std::vector<Literal> eval_manual_conversion(const Instruction& instr, const Instruction& operand,
                                            const std::vector<Operands>& per_lane,
                                            const std::vector<int64_t>& partition_ids) {
  if (instr.operands.size() != 1 || !instr.shape.is_array() || !operand.shape.is_array() ||
      instr.shape.rank() != operand.shape.rank())
    fail(instr, "a manual conversion takes one array operand of the result's rank");
  const Sharding manual_side = leaf_sharding_of(instr, instr, true);
  if (instr.attrs.custom_call_target == "SPMDShardToFullShape")
    return assemble(instr, leaf_sharding_of(operand, instr, true), operand.shape, manual_side,
                    instr.shape, per_lane, partition_ids);
  // Full-to-shard, as the partitioner enters a region: the operand's
  // partitioned value (zero past an uneven end), or, when the manual side
  // also tiles data dims, the operand laid out as that sharding's automatic
  // form (the manual index major on the dim whose size changes).
  Sharding automatic = leaf_sharding_of(operand, instr, false);
  if (manual_side.is_tiled() && manual_side.has_manual_subgroup() && manual_side.num_tiles() > 1) {
    int64_t d = -1;
    for (int64_t i = 0; i < instr.shape.rank(); ++i)
      if (instr.shape.dim(static_cast<int>(i)) != operand.shape.dim(static_cast<int>(i))) d = i;
    if (auto form = d >= 0 ? manual_to_data_dim(manual_side, d) : std::nullopt) automatic = *form;
  }
  return assemble(instr, automatic, operand.shape, manual_side, instr.shape, per_lane,
                  partition_ids);
}

}  // namespace podsim::compiler::interp
