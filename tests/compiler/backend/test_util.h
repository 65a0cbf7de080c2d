// Helpers shared by the pipeline tests: parse a module and name instructions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/backend/program.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/ir/module.h"

namespace podsim::compiler::pipeline_test {

inline InstrId id_of(const Computation& comp, std::string_view name) {
  InstrId id = comp.find(name);
  EXPECT_NE(id, kNoId) << "no instruction " << name;
  return id;
}

// Names of a group's members in member order.
inline std::vector<std::string> member_names(const Computation& comp, const FusionGroup& group) {
  std::vector<std::string> names;
  for (InstrId m : group.members) names.push_back(comp.instr(m).name);
  return names;
}

inline std::vector<std::string> names_in(const Computation& comp, const std::vector<InstrId>& ids) {
  std::vector<std::string> names;
  for (InstrId id : ids) names.push_back(comp.instr(id).name);
  return names;
}

// Every instruction exactly once, every operand before its user.
inline void expect_topological_permutation(const Computation& comp,
                                           const std::vector<InstrId>& order) {
  ASSERT_EQ(order.size(), static_cast<size_t>(comp.size()));
  std::vector<int64_t> place(order.size(), -1);
  for (size_t p = 0; p < order.size(); ++p) {
    ASSERT_EQ(place[static_cast<size_t>(order[p])], -1)
        << "scheduled twice: " << comp.instr(order[p]).name;
    place[static_cast<size_t>(order[p])] = static_cast<int64_t>(p);
  }
  for (InstrId id = 0; id < comp.size(); ++id)
    for (InstrId op : comp.instr(id).operands)
      EXPECT_LT(place[static_cast<size_t>(op)], place[static_cast<size_t>(id)])
          << comp.instr(op).name << " after its user " << comp.instr(id).name;
}

}  // namespace podsim::compiler::pipeline_test
