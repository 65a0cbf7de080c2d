// Parse errors: each bad input throws UserError at the right line:column with
// a message naming what was found and what was expected. Positions are
// counted by hand from the test strings (1-based lines and columns).
#include <string>

#include <gtest/gtest.h>

#include "compiler/hlo/hlo_parser.h"

namespace podsim::compiler {
namespace {

struct Expected {
  int line;
  int column;
  std::string message_part;
};

void expect_error(const std::string& text, const Expected& want) {
  try {
    parse_hlo(text, "bad.hlo");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "bad.hlo");
    EXPECT_EQ(e.location().line, want.line) << e.what();
    EXPECT_EQ(e.location().column, want.column) << e.what();
    EXPECT_NE(e.message().find(want.message_part), std::string::npos) << e.what();
  }
}

TEST(ParseErrors, UnknownOpcode) {
  //                               col: 3 5 7    12 13
  expect_error("HloModule m\nENTRY e {\n  a = f32[] foo(b)\n}\n", {3, 13, "unknown opcode 'foo'"});
}

TEST(ParseErrors, MisspeltOpcodeNamesTheNearestOne) {
  try {
    parse_hlo("HloModule m\nENTRY e {\n  a = f32[] maximun(b, b)\n}\n", "bad.hlo");
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.hint().rfind("did you mean 'maximum'? ", 0), 0u) << e.hint();
  }
}

TEST(ParseErrors, UnknownDtype) {
  expect_error("HloModule m\nENTRY e {\n  a = f31[2] parameter(0)\n}\n",
               {3, 7, "unknown element type 'f31'"});
  // Inside a tuple shape and a signature too: "(p: (f32[], q8[]))" -> 'q8' at column 21.
  expect_error("HloModule m\nENTRY e (p: (f32[], q8[])) -> f32[] {\n}\n",
               {2, 21, "unknown element type 'q8'"});
}

TEST(ParseErrors, MissingCloseParen) {
  expect_error("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] add(a, a\n}\n",
               {5, 1, "expected ')' but found '}'"});
}

TEST(ParseErrors, BadAttributeValues) {
  const std::string head = "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n";
  // "  ROOT c = pred[2] compare(a, a), direction=XX": value at column 45.
  expect_error(head + "  ROOT c = pred[2] compare(a, a), direction=XX\n}\n",
               {4, 45, "unknown comparison direction 'XX'"});
  // "  t = (f32[2]) tuple(a)" then "  ROOT g = f32[2] get-tuple-element(t), index=abc": value at
  // column 47.
  expect_error(
      head + "  t = (f32[2]) tuple(a)\n  ROOT g = f32[2] get-tuple-element(t), index=abc\n}\n",
      {5, 47, "expected an integer tuple index but found 'abc'"});
  // The window's stride has 1 entry but size has 2: reported at the stride value: "stride" starts
  // at column 57, its value at 64.
  expect_error(head + "  ROOT r = f32[2] reduce-window(a, a), window={size=3x3 stride=2}\n}\n",
               {4, 64, "window 'stride' has 1 dims but 'size' has 2"});
  expect_error(head + "  ROOT r = f32[2] all-reduce(a), replica_groups=[2,4]<=[6]\n}\n",
               // "[2,4]" starts at column 49.
               {4, 49, "need 8 devices but the reshape dims hold 6"});
  expect_error(head + "  ROOT r = f32[2] add(a, a), use_global_device_ids=yes\n}\n",
               {4, 52, "expected 'true' or 'false' but found 'yes'"});
}

TEST(ParseErrors, UndefinedOperand) {
  expect_error(
      "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] add(a, %c)\n}\n",
      {4, 26, "undefined operand 'c'"});
}

TEST(ParseErrors, UndefinedComputation) {
  expect_error(
      "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT r = f32[] call(a), "
      "to_apply=%nope\n}\n",
      {4, 36, "undefined computation 'nope'"});
}

TEST(ParseErrors, DuplicateInstructionName) {
  expect_error("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  %a = f32[] negate(a)\n}\n",
               {4, 3, "duplicate instruction name 'a'"});
}

TEST(ParseErrors, CyclicGraph) {
  // a -> b -> a: the search starts at 'a' (first in source) and finds it again.
  expect_error("HloModule m\nENTRY e {\n  a = f32[] add(b, b)\n  ROOT b = f32[] negate(a)\n}\n",
               {3, 3, "cyclic graph: instruction 'a'"});
  // A self-loop.
  expect_error("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT s = f32[] add(p, s)\n}\n",
               {4, 8, "cyclic graph: instruction 's'"});
}

TEST(ParseErrors, LiteralCountMismatch) {
  expect_error("HloModule m\nENTRY e {\n  ROOT c = f32[2] constant({1, 2, 3})\n}\n",
               {3, 28, "constant has 3 values but shape f32[2] needs 2"});
  expect_error("HloModule m\nENTRY e {\n  ROOT c = s32[2,2] constant({ {1, 2}, {3} })\n}\n",
               {3, 30, "constant has 3 values but shape s32[2,2] needs 4"});
}

TEST(ParseErrors, ElidedConstantValues) {
  expect_error("HloModule m\nENTRY e {\n  ROOT c = f32[1000] constant({...})\n}\n",
               {3, 31, "constant values are elided"});
}

TEST(ParseErrors, GarbageAfterModule) {
  expect_error("HloModule m\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n}\n",
               {5, 1, "expected a computation ('ENTRY' or a name) but found '}'"});
  expect_error("HloModule m\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\nstray words\n",
               {5, 7, "expected '{' but found 'words'"});
}

TEST(ParseErrors, EmptyAndCommentOnlyInput) {
  expect_error("", {1, 1, "expected 'HloModule' but found end of input"});
  // Reported at the end of the input: line 3 (after the last newline), column 1.
  expect_error("// nothing\n/* here */\n", {3, 1, "expected 'HloModule' but found end of input"});
  expect_error("HloModule m\n", {2, 1, "expected a computation but found end of input"});
}

TEST(ParseErrors, HeaderAndStructure) {
  expect_error("ENTRY e {\n}\n", {1, 1, "expected 'HloModule' but found 'ENTRY'"});
  expect_error("HloModule m, num_partitions=0\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n",
               {1, 29, "num_partitions must be at least 1"});
  expect_error("HloModule m\n/* never closed\nENTRY e {\n", {2, 1, "unterminated '/*' comment"});
  expect_error("HloModule m\nENTRY e {\n  ROOT c = f32[] constant(1)\n",
               {4, 1, "expected '}' closing computation 'e'"});
  expect_error(
      "HloModule m\nENTRY e {\n  ROOT w = f32[] while(x), condition=c\n  x = f32[] "
      "constant(1)\n}\n",
      {3, 8, "needs both condition= and body="});
  expect_error("HloModule m\nENTRY e {\n  ROOT c = f32[2]{1,0} constant({1, 2})\n}\n",
               {3, 22, "layout has 2 entries but the shape has rank 1"});
}

TEST(ParseErrors, SignatureMustMatchParameterCountAndRoot) {
  expect_error(
      "HloModule m\nENTRY e (p: f32[2], q: f32[2]) -> f32[2] {\n  p = f32[2] parameter(0)\n  ROOT "
      "n = f32[2] negate(p)\n}\n",
      {2, 9, "declares 2 parameters but has 1"});
  expect_error(
      "HloModule m\nENTRY e (p: f32[2]) -> s32[2] {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] "
      "negate(p)\n}\n",
      {2, 9, "declares result s32[2] but its root 'n' is f32[2]"});
}

// XLA's parser takes the parameter instruction's shape over the declared one
// (XLA's own tests declare "(arg_tuple.1: ())" over an array parameter).
TEST(ParseErrors, DeclaredParameterShapeMayDifferAsInXla) {
  Module m = parse_hlo(
      "HloModule m\nENTRY e (p: ()) -> f32[2] {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] "
      "negate(p)\n}\n");
  EXPECT_EQ(m.entry().instr(m.entry().parameters()[0]).shape, Shape(DType::kF32, {2}));
}

TEST(ParseErrors, UnreadableFileNamesThePath) {
  try {
    parse_hlo_file("/nonexistent/dir/model.hlo");
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "/nonexistent/dir/model.hlo");
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.hlo"), std::string::npos);
  }
}

TEST(ParseErrors, WhatIncludesFileLineColumnAndHint) {
  try {
    parse_hlo("HloModule m\nENTRY e {\n  a = f32[] foo(b)\n}\n", "model.hlo");
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind("model.hlo:3:13: error: unknown opcode 'foo'", 0), 0u) << what;
    EXPECT_FALSE(e.hint().empty());
  }
}

// Found by the HLO parser fuzzer (tests/fuzz): without a signature the
// parameter numbers were not checked, so {0, 2} parsed but its printed form
// (which has a signature) did not. The error points at the parameter.
TEST(ParseErrors, ParameterNumbersMustBeDense) {
  expect_error(
      "HloModule m\nr {\n  a = f32[] parameter(0)\n  b = f32[] parameter(2)\n  ROOT c = f32[] "
      "add(a, b)\n}\n"
      "ENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n",
      {4, 3, "has parameter(2) but no parameter(1)"});
  expect_error(
      "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] parameter(0)\n}\n",
      {4, 8, "has parameter(0) twice"});
}

}  // namespace
}  // namespace podsim::compiler
