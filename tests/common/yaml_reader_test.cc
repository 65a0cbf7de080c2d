// The YAML reader: positions (1-based line:column of the offending node),
// typed scalars and their ranges, name tables, unread keys with a guess,
// and --set overrides located at the flag.
#include "common/yaml_reader.h"

#include <gtest/gtest.h>

#include <functional>

namespace podsim::yaml {
namespace {

UserError error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << "no UserError";
  return UserError("none");
}

enum class Color { kRed, kGreen };
const NameTable<Color>& colors() {
  static const NameTable<Color> table{{Color::kRed, "red"}, {Color::kGreen, "green"}};
  return table;
}

TEST(YamlReader, MalformedYamlIsAtItsPosition) {
  // Line 2 opens a flow sequence that line 3 never closes.
  const UserError e = error_of([] { Document::parse("a: 1\nb: [1, 2\nc: 3\n", "f.yaml"); });
  EXPECT_EQ(e.location().file, "f.yaml");
  EXPECT_GE(e.location().line, 2);
  EXPECT_EQ(e.message().rfind("malformed YAML: ", 0), 0u) << e.message();
}

TEST(YamlReader, UnreadKeyIsAtItsPositionWithAGuess) {
  const Document doc = Document::parse("model:\n  layers: 2\n  headz: 4\n", "w.yaml");
  MapReader top(doc, doc.root(), "workload");
  MapReader model(doc, top.get("model"), "model");
  EXPECT_EQ(model.int64("layers"), 2);
  model.get("heads");
  const UserError e = error_of([&] { model.finish(); });
  // "headz" starts line 3, column 3.
  EXPECT_EQ(e.location().to_string(), "w.yaml:3:3");
  EXPECT_EQ(e.message(), "unknown key 'headz' in 'model'");
  EXPECT_EQ(e.hint(), "did you mean 'heads'? valid keys: layers, heads");
  EXPECT_NO_THROW(top.finish());
}

TEST(YamlReader, UnknownKeyFarFromAnyListsTheValidKeys) {
  const Document doc = Document::parse("name: x\nzzzzzz: 1\n", "s.yaml");
  MapReader r(doc, doc.root(), "", "sweep key");
  r.allow({"name", "base"});
  const UserError e = error_of([&] { r.finish(); });
  EXPECT_EQ(e.location().to_string(), "s.yaml:2:1");
  EXPECT_EQ(e.message(), "unknown sweep key 'zzzzzz'");
  EXPECT_EQ(e.hint(), "valid keys: name, base");
}

TEST(YamlReader, MissingRequiredKeyReportsItsTypo) {
  const Document doc = Document::parse("nmae: x\n", "w.yaml");
  MapReader r(doc, doc.root(), "workload");
  const UserError e = error_of([&] { r.require("name"); });
  EXPECT_EQ(e.location().to_string(), "w.yaml:1:1");
  EXPECT_EQ(e.message(), "unknown key 'nmae' in 'workload'");
  EXPECT_EQ(e.hint(), "did you mean 'name'?");
  const Document empty = Document::parse("other: 1\n", "w.yaml");
  MapReader r2(empty, empty.root(), "workload");
  EXPECT_EQ(error_of([&] { r2.require("name"); }).message(),
            "'workload' is missing the required key 'name'");
}

TEST(YamlReader, TypedScalarsAndRanges) {
  const Document doc =
      Document::parse("a: 12\nb: 1e3\nc: 0.5\nd: yes\ne: nan\nf: 0\ng: [1]\n", "t.yaml");
  MapReader r(doc, doc.root(), "t");
  EXPECT_EQ(r.int64("a"), 12);
  EXPECT_EQ(r.number("b"), 1000.0);
  EXPECT_EQ(r.number("c", 0, 1), 0.5);
  EXPECT_EQ(r.boolean("d"), true);
  EXPECT_EQ(r.int64("missing"), std::nullopt);
  UserError e = error_of([&] { r.int64("b"); });
  EXPECT_EQ(e.location().to_string(), "t.yaml:2:4");
  EXPECT_EQ(e.message(), "'t.b' must be an integer, got '1e3'");
  e = error_of([&] { r.int64("f"); });  // default minimum 1
  EXPECT_EQ(e.message(), "'t.f' must be >= 1, got 0");
  e = error_of([&] { r.int64("a", 1, 10); });
  EXPECT_EQ(e.message(), "'t.a' must be <= 10, got 12");
  e = error_of([&] { r.number("e"); });
  EXPECT_EQ(e.location().to_string(), "t.yaml:5:4");
  EXPECT_NE(e.message().find("must be a finite number"), std::string::npos) << e.message();
  e = error_of([&] { r.boolean("a"); });
  EXPECT_EQ(e.message(), "'t.a' must be true or false, got '12'");
  e = error_of([&] { r.string("g"); });
  EXPECT_EQ(e.location().to_string(), "t.yaml:7:4");
  EXPECT_EQ(e.message(), "'t.g' must be a string");
}

TEST(YamlReader, ChoiceFromANameTable) {
  const Document doc = Document::parse("c: green\nd: gren\n", "c.yaml");
  MapReader r(doc, doc.root(), "");
  EXPECT_EQ(r.choice("c", colors()), Color::kGreen);
  const UserError e = error_of([&] { r.choice("d", colors()); });
  EXPECT_EQ(e.location().to_string(), "c.yaml:2:4");
  EXPECT_EQ(e.message(), "'d' must be one of red | green, got 'gren'");
  EXPECT_EQ(e.hint(), "did you mean 'green'?");
  EXPECT_EQ(colors().name(Color::kRed), "red");
  EXPECT_EQ(colors().find("blue"), std::nullopt);
}

TEST(YamlReader, SetOverridesAreLocatedAtTheFlag) {
  Document doc = Document::parse("model:\n  layers: 2\n", "w.yaml");
  doc.set("model.layers=0");
  doc.set("model.extra={a: 1}");
  MapReader model(doc, doc.root()["model"], "model");
  UserError e = error_of([&] { model.int64("layers"); });
  EXPECT_EQ(e.location().to_string(), "--set model.layers=0");
  EXPECT_EQ(e.message(), "'model.layers' must be >= 1, got 0");
  e = error_of([&] { model.finish(); });
  EXPECT_EQ(e.location().to_string(), "--set model.extra={a: 1}");
  EXPECT_EQ(e.message(), "unknown key 'extra' in 'model'");
  EXPECT_EQ(error_of([&] { doc.set("model"); }).message(), "an override must look like key=value");
  EXPECT_EQ(error_of([&] { doc.set("model.layers.x=1"); }).message(),
            "'layers' is not a mapping, cannot set 'model.layers.x' inside it");
}

TEST(YamlReader, NonScalarKeysAreUserErrors) {
  const Document doc = Document::parse("? [a]\n: 1\n", "k.yaml");
  const UserError e = error_of([&] { MapReader r(doc, doc.root(), ""); });
  EXPECT_EQ(e.location().to_string(), "k.yaml:1:3");
  EXPECT_NE(e.message().find("not a plain word"), std::string::npos);
}

TEST(YamlReader, GuardedTurnsConversionErrorsIntoPositions) {
  const Document doc = Document::parse("a: [1, 2]\n", "g.yaml");
  const UserError e =
      error_of([&] { guarded("g.yaml", "hint", [&] { return doc.root()["a"].as<int>(); }); });
  EXPECT_EQ(e.location().file, "g.yaml");
  EXPECT_EQ(e.message().rfind("unexpected YAML structure: ", 0), 0u);
  EXPECT_EQ(e.hint(), "hint");
}

TEST(YamlReader, ScalarSyntax) {
  EXPECT_EQ(parse_int64("-3"), -3);
  EXPECT_EQ(parse_int64("3x"), std::nullopt);
  EXPECT_EQ(parse_int64(""), std::nullopt);
  EXPECT_EQ(parse_double("2e11"), 2e11);
  EXPECT_EQ(parse_double("2e11 "), std::nullopt);
  EXPECT_EQ(parse_bool("False"), false);
  EXPECT_EQ(parse_bool("0"), std::nullopt);
}

}  // namespace
}  // namespace podsim::yaml
