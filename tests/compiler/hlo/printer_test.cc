// Printer: exact canonical text for hand-built modules (the expected text is
// written out by hand from the printing rules in hlo_printer.h), literal
// formatting, and linear handling of very large modules.
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_printer.h"

namespace podsim::compiler {
namespace {

Instruction make(std::string name, Opcode op, Shape shape, std::vector<InstrId> operands = {}) {
  Instruction in;
  in.name = std::move(name);
  in.opcode = op;
  in.shape = std::move(shape);
  in.operands = std::move(operands);
  return in;
}

// A module as a builder would make it: no layouts, a reduce body added after
// the entry (the printer must still print the body first).
Module small_module() {
  Module m("built");
  Computation entry("main");
  Instruction p = make("x", Opcode::kParameter, Shape(DType::kF32, {4, 8}));
  p.attrs.parameter_number = 0;
  p.sharding = "{devices=[2,1]<=[2]}";
  entry.append(p);
  Instruction zero = make("zero", Opcode::kConstant, Shape::scalar(DType::kF32));
  zero.attrs.literal = Literal::scalar(DType::kF32, 0);
  entry.append(zero);
  Instruction r = make("sum", Opcode::kReduce, Shape(DType::kF32, {4}), {0, 1});
  r.attrs.dimensions = {1};
  r.called = {1};
  entry.append(r);
  entry.set_root(2);
  m.set_entry(m.add_computation(std::move(entry)));
  Computation add("add");
  Instruction a = make("a", Opcode::kParameter, Shape::scalar(DType::kF32));
  Instruction b = make("b", Opcode::kParameter, Shape::scalar(DType::kF32));
  b.attrs.parameter_number = 1;
  add.append(a);
  add.append(b);
  add.append(make("s", Opcode::kAdd, Shape::scalar(DType::kF32), {0, 1}));
  add.set_root(2);
  m.add_computation(std::move(add));
  m.set_num_partitions(2);
  return m;
}

TEST(Printer, CanonicalModuleText) {
  const std::string expected =
      "HloModule built, num_partitions=2\n"
      "\n"
      "%add (a: f32[], b: f32[]) -> f32[] {\n"
      "  %a = f32[] parameter(0)\n"
      "  %b = f32[] parameter(1)\n"
      "  ROOT %s = f32[] add(%a, %b)\n"
      "}\n"
      "\n"
      "ENTRY %main (x: f32[4,8]) -> f32[4] {\n"
      "  %x = f32[4,8] parameter(0), sharding={devices=[2,1]<=[2]}\n"
      "  %zero = f32[] constant(0)\n"
      "  ROOT %sum = f32[4] reduce(%x, %zero), dimensions={1}, to_apply=%add\n"
      "}\n";
  Module m = small_module();
  EXPECT_EQ(print_hlo(m), expected);
  EXPECT_EQ(print_hlo(parse_hlo(expected)), expected);
}

TEST(Printer, PrintInstructionHasNoRootPrefix) {
  Module m = small_module();
  EXPECT_EQ(print_instruction(m, m.entry(), 2),
            "%sum = f32[4] reduce(%x, %zero), dimensions={1}, to_apply=%add");
}

TEST(Printer, AttributeOrderForDotAndCollectives) {
  const std::string text =
      "HloModule t, num_partitions=8\n\n"
      "%sum (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
      "  ROOT %s = f32[] add(%a, %b)\n}\n\n"
      "ENTRY %e (l: f32[2,3,4], r: f32[2,4,5]) -> f32[2,3,5] {\n"
      "  %l = f32[2,3,4] parameter(0)\n"
      "  %r = f32[2,4,5] parameter(1)\n"
      // Attributes out of canonical order, and 'extra' ones, in the input.
      "  %d = f32[2,3,5] dot(%l, %r), rhs_contracting_dims={1}, foo=bar, rhs_batch_dims={0}, "
      "lhs_batch_dims={0}, "
      "lhs_contracting_dims={2}, sharding={replicated}\n"
      "  ROOT %ar = f32[2,3,5] all-reduce(%d), to_apply=%sum, use_global_device_ids=true, "
      "replica_groups=[4,2]<=[2,4]T(1,0), channel_id=3\n"
      "}\n";
  Module m = parse_hlo(text);
  const Computation& e = m.entry();
  EXPECT_EQ(print_instruction(m, e, 2),
            "%d = f32[2,3,5] dot(%l, %r), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
            "rhs_batch_dims={0}, "
            "rhs_contracting_dims={1}, sharding={replicated}, foo=bar");
  EXPECT_EQ(print_instruction(m, e, 3),
            "%ar = f32[2,3,5] all-reduce(%d), channel_id=3, replica_groups=[4,2]<=[2,4]T(1,0), "
            "use_global_device_ids=true, to_apply=%sum");
}

TEST(Printer, LiteralFormats) {
  const std::string text =
      "HloModule lits\n\nENTRY %e () -> f32[2,2] {\n"
      "  %m = f32[2,2] constant({ {0.1, -2}, {inf, nan} })\n"
      "  %p = pred[3] constant({true, false, true})\n"
      "  %i = s32[] constant(-7)\n"
      "  %d = f64[1] constant({0.1})\n"
      "  %z = f32[0] constant({})\n"
      "  %t = (s32[], f32[2]) constant((3, {1.5, 2}))\n"
      "  ROOT %r = f32[2,2] copy(%m)\n}\n";
  Module m = parse_hlo(text);
  const Computation& e = m.entry();
  // f32 values print as the shortest text that reads back as the same f32.
  EXPECT_EQ(print_instruction(m, e, e.find("m")),
            "%m = f32[2,2] constant({ {0.1, -2}, {inf, nan} })");
  EXPECT_EQ(print_instruction(m, e, e.find("p")), "%p = pred[3] constant({true, false, true})");
  EXPECT_EQ(print_instruction(m, e, e.find("i")), "%i = s32[] constant(-7)");
  // f64 0.1 is the double nearest 0.1 and prints as such.
  EXPECT_EQ(print_instruction(m, e, e.find("d")), "%d = f64[1] constant({0.1})");
  EXPECT_EQ(print_instruction(m, e, e.find("z")), "%z = f32[0] constant({})");
  EXPECT_EQ(print_instruction(m, e, e.find("t")), "%t = (s32[], f32[2]) constant((3, {1.5, 2}))");
  EXPECT_EQ(print_hlo(parse_hlo(print_hlo(m))), print_hlo(m));
}

TEST(Printer, WindowPaddingSliceAndDimLabels) {
  const std::string text =
      "HloModule w\n\nENTRY %e (x: f32[1,9,9,2], k: f32[2,3,3,4]) -> f32[1,5,5,4] {\n"
      "  %x = f32[1,9,9,2] parameter(0)\n"
      "  %k = f32[2,3,3,4] parameter(1)\n"
      "  %c = f32[1,5,5,4] convolution(%x, %k), window={size=3x3 stride=2x2 pad=1_1x1_1 "
      "rhs_dilate=1x1}, "
      "dim_labels=b01f_i01o->b01f\n"
      "  %zero = f32[] constant(0)\n"
      "  %p = f32[1,5,12,4] pad(%c, %zero), padding=0_0x0_0x1_1_2x0_0\n"
      "  ROOT %s = f32[1,5,5,4] slice(%p), slice={[0:1], [0:5], [0:10:2], [0:4]}\n}\n";
  Module m = parse_hlo(text);
  const Computation& e = m.entry();
  // rhs_dilate of all ones is the default and is not printed.
  EXPECT_EQ(print_instruction(m, e, e.find("c")),
            "%c = f32[1,5,5,4] convolution(%x, %k), window={size=3x3 stride=2x2 pad=1_1x1_1}, "
            "dim_labels=b01f_i01o->b01f");
  // Some interior padding: every dim prints low_high_interior.
  EXPECT_EQ(print_instruction(m, e, e.find("p")),
            "%p = f32[1,5,12,4] pad(%c, %zero), padding=0_0_0x0_0_0x1_1_2x0_0_0");
  EXPECT_EQ(print_instruction(m, e, e.find("s")),
            "%s = f32[1,5,5,4] slice(%p), slice={[0:1], [0:5], [0:10:2], [0:4]}");
}

TEST(Printer, CustomCallTargetEscapesQuotes) {
  Module m("cc");
  Computation e("e");
  Instruction c = make("c", Opcode::kCustomCall, Shape(DType::kF32, {2}));
  c.attrs.custom_call_target = "say \"hi\"";
  e.append(c);
  e.set_root(0);
  m.set_entry(m.add_computation(std::move(e)));
  std::string printed = print_hlo(m);
  EXPECT_NE(printed.find(R"(custom_call_target="say \"hi\"")"), std::string::npos) << printed;
  EXPECT_EQ(parse_hlo(printed).entry().instr(0).attrs.custom_call_target, "say \"hi\"");
}

// 100k instructions written in reverse dependency order (each uses the next
// line's result): parsing must order them (iteratively: a recursive search
// would overflow the stack on a chain this deep) and printing must be linear.
TEST(Printer, HundredThousandInstructionChain) {
  const int n = 100000;
  std::string text = "HloModule big\n\nENTRY %e (p: f32[8]) -> f32[8] {\n";
  text.reserve(static_cast<size_t>(n) * 48);
  text += fmt::format("  ROOT %n{} = f32[8]{{0}} negate(%n{})\n", n, n - 1);
  for (int i = n - 1; i >= 1; --i)
    text += fmt::format("  %n{} = f32[8]{{0}} negate(%n{})\n", i, i - 1);
  text += "  %n0 = f32[8]{0} parameter(0)\n}\n";
  Module m = parse_hlo(text);
  const Computation& e = m.entry();
  ASSERT_EQ(e.size(), n + 1);
  EXPECT_EQ(e.instr(0).name, "n0");
  EXPECT_EQ(e.instr(n).name, fmt::format("n{}", n));
  EXPECT_EQ(e.root(), n);
  std::string printed = print_hlo(m);
  EXPECT_EQ(print_hlo(parse_hlo(printed)), printed);
}

}  // namespace
}  // namespace podsim::compiler
