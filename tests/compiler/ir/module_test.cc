// Module/Computation containers: UserLists equals compute_users, append
// keeps ids and contents through growth, copy_emptying empties only the
// named computation.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/ir/builder.h"
#include "compiler/ir/module.h"

namespace podsim::compiler {
namespace {

// x, y parameters; a = x + x (one user listed once); b = a * y; c = b + a;
// root tuple(c, a, x).
Module small_module() {
  Module m("m");
  ComputationBuilder b("main", &m);
  InstrId x = b.parameter(0, Shape(DType::kF32, {4}), "x");
  InstrId y = b.parameter(1, Shape(DType::kF32, {4}), "y");
  InstrId a = b.binary(Opcode::kAdd, x, x);
  InstrId p = b.binary(Opcode::kMultiply, a, y);
  InstrId c = b.binary(Opcode::kAdd, p, a);
  m.set_entry(m.add_computation(std::move(b).build(b.tuple({c, a, x}))));
  return m;
}

TEST(UserLists, SameListsAsComputeUsers) {
  const Module m = small_module();
  const Computation& comp = m.entry();
  const std::vector<std::vector<InstrId>> expected = comp.compute_users();
  const UserLists users(comp);
  for (InstrId i = 0; i < comp.size(); ++i) {
    std::span<const InstrId> got = users[i];
    EXPECT_EQ(std::vector<InstrId>(got.begin(), got.end()), expected[static_cast<size_t>(i)]) << i;
  }
  // Hand-derived: x (0) is used by a (2, once though read twice) and the
  // tuple (5); a (2) by the multiply (3), c (4) and the tuple (5).
  EXPECT_EQ(std::vector<InstrId>(users[0].begin(), users[0].end()), (std::vector<InstrId>{2, 5}));
  EXPECT_EQ(std::vector<InstrId>(users[2].begin(), users[2].end()),
            (std::vector<InstrId>{3, 4, 5}));
  EXPECT_TRUE(users[5].empty());
}

TEST(Computation, AppendKeepsIdsAndContentsThroughGrowth) {
  Computation comp("c");
  for (int i = 0; i < 1000; ++i) {
    Instruction in;
    in.name = fmt::format("i{}", i);
    in.opcode = Opcode::kParameter;
    in.attrs.parameter_number = i;
    EXPECT_EQ(comp.append(std::move(in)), i);
  }
  for (InstrId i = 0; i < comp.size(); ++i) {
    EXPECT_EQ(comp.instr(i).name, fmt::format("i{}", i));
    EXPECT_EQ(comp.instr(i).attrs.parameter_number, i);
  }
}

TEST(Module, CopyEmptyingKeepsEverythingButOneComputationsInstructions) {
  Module m = small_module();
  const CompId add = m.add_computation(scalar_binary_computation("add", Opcode::kAdd, DType::kF32));
  m.set_num_partitions(8);
  const Module copy = m.copy_emptying(m.entry_id());
  EXPECT_EQ(copy.name(), "m");
  EXPECT_EQ(copy.entry_id(), m.entry_id());
  EXPECT_EQ(copy.num_partitions(), 8);
  ASSERT_EQ(copy.computation_count(), 2);
  EXPECT_EQ(copy.entry().name(), "main");
  EXPECT_EQ(copy.entry().size(), 0);
  EXPECT_EQ(copy.computation(add).size(), 3);  // x, y, add
  EXPECT_EQ(copy.computation(add).root(), m.computation(add).root());
}

}  // namespace
}  // namespace podsim::compiler
