// Report formats: json keys and types (docs/design.md's required keys), byte-for-
// byte determinism, csv and markdown shape, table units.
#include <gtest/gtest.h>

#include <sstream>

#include "common/error.h"
#include "reports/formats.h"
#include "tests/reports/report_fixture.h"

namespace podsim::reports {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Splits one csv line, honouring double-quoted cells.
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

TEST(ReportJson, HasEveryDesignKeyWithItsType) {
  ReportFixture f;
  nlohmann::json j = nlohmann::json::parse(report_json(summarize(f.input())));
  EXPECT_TRUE(j.at("workload").is_string());
  EXPECT_TRUE(j.at("devices").is_number_integer());
  EXPECT_TRUE(j.at("parameters").is_number_integer());
  for (const char* key : {"step_time_s", "tokens_per_second", "mfu", "hfu"})
    EXPECT_TRUE(j.at(key).is_number()) << key;
  EXPECT_TRUE(j.at("peak_memory_bytes").is_number_integer());
  EXPECT_TRUE(j.at("fits_in_memory").is_boolean());
  ASSERT_TRUE(j.at("memory_breakdown_bytes").is_object());
  EXPECT_EQ(j["memory_breakdown_bytes"].size(), 7u);
  EXPECT_EQ(j["memory_breakdown_bytes"]["activations"].get<int64_t>(), 6 * kGiB);
  ASSERT_TRUE(j.at("time_breakdown_s").is_object());
  for (const char* key : {"compute", "exposed_communication", "memory_bound", "idle"})
    EXPECT_TRUE(j["time_breakdown_s"].at(key).is_number()) << key;
  ASSERT_TRUE(j.at("collectives").is_object());
  EXPECT_EQ(j["collectives"]["all-reduce"]["count"].get<int64_t>(), 3);
  EXPECT_DOUBLE_EQ(j["collectives"]["all-reduce"]["bytes"].get<double>(), 3e6);
  EXPECT_DOUBLE_EQ(j["mfu"].get<double>(), 0.5);
  EXPECT_EQ(j["top_ops"].size(), 3u);
  EXPECT_EQ(j["top_collectives"].size(), 2u);
  // The fixture's three compute ops are in layer 0 with distinct op_names:
  // three groups of one op each.
  ASSERT_EQ(j["top_op_groups"].size(), 3u);
  EXPECT_EQ(j["top_op_groups"][0]["op_name"], "fwd/layer_*/ffn/wi");
  EXPECT_EQ(j["top_op_groups"][0]["instances"].get<int64_t>(), 1);
  EXPECT_EQ(j["top_collective_groups"].size(), 2u);
  EXPECT_FALSE(j["top_ops"][0].contains("instances"));
}

TEST(ReportJson, WallTimesOnlyOnRequestSoTheSameInputGivesTheSameBytes) {
  // The fixture's wall times are 1.25 s (compile) and 0.5 s (simulate).
  ReportFixture f;
  Report r = summarize(f.input());
  nlohmann::json plain = nlohmann::json::parse(report_json(r));
  EXPECT_FALSE(plain.contains("compile_wall_s"));
  EXPECT_FALSE(plain.contains("simulate_wall_s"));
  FormatOptions timings;
  timings.wall_times = true;
  nlohmann::json timed = nlohmann::json::parse(report_json(r, timings));
  EXPECT_DOUBLE_EQ(timed.at("compile_wall_s").get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(timed.at("simulate_wall_s").get<double>(), 0.5);
  // csv: the same two columns, last, only with the option.
  std::string plain_header = report_csv(r).substr(0, report_csv(r).find('\n'));
  std::string timed_header = report_csv(r, timings).substr(0, report_csv(r, timings).find('\n'));
  EXPECT_EQ(plain_header.find("wall"), std::string::npos) << plain_header;
  EXPECT_EQ(timed_header, plain_header + ",compile_wall_s,simulate_wall_s");
}

TEST(ReportJson, SameInputGivesIdenticalBytesAndAFixedKeyOrder) {
  ReportFixture a, b;
  std::string first = report_json(summarize(a.input()));
  EXPECT_EQ(first, report_json(summarize(b.input())));
  // Keys come in the documented order, not alphabetically.
  EXPECT_LT(first.find("\"workload\""), first.find("\"devices\""));
  EXPECT_LT(first.find("\"step_time_s\""), first.find("\"mfu\""));
  EXPECT_LT(first.find("\"memory_breakdown_bytes\""), first.find("\"collectives\""));
  EXPECT_EQ(first.back(), '\n');
}

TEST(ReportCsv, HeaderAndOneRowWithTheSameColumnCount) {
  ReportFixture f;
  f.input();
  SummaryInput in = f.input();
  in.workload_name = "with, comma \"quoted\"";
  std::vector<std::string> lines = lines_of(report_csv(summarize(in)));
  ASSERT_EQ(lines.size(), 2u);
  std::vector<std::string> header = csv_cells(lines[0]);
  std::vector<std::string> row = csv_cells(lines[1]);
  ASSERT_EQ(header.size(), row.size());
  EXPECT_EQ(header[0], "workload");
  EXPECT_EQ(row[0], "with, comma \"quoted\"");
  auto column = [&](const std::string& key) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == key) return row[i];
    ADD_FAILURE() << "no column " << key;
    return std::string();
  };
  EXPECT_EQ(column("mfu"), "0.5");
  EXPECT_EQ(column("memory_breakdown_bytes.parameters"), std::to_string(4 * kGiB));
  EXPECT_EQ(column("collectives.reduce-scatter.count"), "2");
  EXPECT_EQ(column("fits_in_memory"), "true");
  for (const std::string& key : header) {
    EXPECT_EQ(key.find("top_ops"), std::string::npos) << key;
    EXPECT_EQ(key.find("top_op_groups"), std::string::npos) << key;
    EXPECT_EQ(key.find("top_collective"), std::string::npos) << key;
  }
}

TEST(ReportCsv, ColumnsDoNotDependOnWhichCollectivesRan) {
  ReportFixture with, without;
  without.timeline.collectives.clear();
  without.timeline.ops.resize(3);
  EXPECT_EQ(lines_of(report_csv(summarize(with.input())))[0],
            lines_of(report_csv(summarize(without.input())))[0]);
}

// Cells per row, and the number of tables (rows that start with '|' in a run).
int markdown_tables_with_consistent_rows(const std::string& md) {
  size_t header_bars = 0;
  int tables = 0;
  for (const std::string& line : lines_of(md)) {
    if (line.empty() || line[0] != '|') {
      header_bars = 0;
      continue;
    }
    size_t bars = static_cast<size_t>(std::count(line.begin(), line.end(), '|'));
    if (header_bars == 0) {
      header_bars = bars;
      ++tables;
    }
    EXPECT_EQ(bars, header_bars) << line;
  }
  return tables;
}

TEST(ReportMarkdown, EveryTableRowHasItsHeadersCellCount) {
  ReportFixture f;
  std::string md = report_markdown(summarize(f.input()));
  EXPECT_NE(md.find("| MFU | 50.0 % |"), std::string::npos) << md;
  // summary, memory, time, collectives, time by part, top ops, top collectives
  EXPECT_EQ(markdown_tables_with_consistent_rows(md), 7);
  // With a program whose memory plan has buffers: their table too.
  f.use_training_step();
  md = report_markdown(summarize(f.input()));
  EXPECT_EQ(markdown_tables_with_consistent_rows(md), 8) << md;
}

TEST(ReportTable, PrintsUnitsAndSaysWhenTheModelDoesNotFit) {
  ReportFixture f;
  std::string table = report_table(summarize(f.input()));
  EXPECT_NE(table.find("step time                2.00 s"), std::string::npos) << table;
  EXPECT_NE(table.find("50.0 %"), std::string::npos);  // MFU
  EXPECT_NE(table.find("50.0 TFLOP/s of 100.0 TFLOP/s"), std::string::npos);
  EXPECT_NE(table.find("10.00 GiB of 16.00 GiB (fits)"), std::string::npos);
  EXPECT_EQ(table.find("DOES NOT FIT"), std::string::npos);
  f.program.memory.peak_bytes = 18 * kGiB;
  table = report_table(summarize(f.input()));
  EXPECT_NE(table.find("DOES NOT FIT: 2.00 GiB over"), std::string::npos) << table;
}

// kTrainingStepHlo (report_fixture.h): the peak is 288 B at gw (backward),
// position 5 of 8, with w (64 B, sharded) and gw (64 B) the largest buffers.
TEST(ReportTable, SaysTheMemoryBreakdownIsAtThePeakAndWhatIsLiveThere) {
  ReportFixture f;
  f.use_training_step();
  const std::string table = report_table(summarize(f.input()));
  EXPECT_NE(table.find("memory per device at its peak: 288 B of 16.00 GiB (fits)"),
            std::string::npos)
      << table;
  EXPECT_NE(
      table.find("while gw runs (backward: bwd/gw), instruction 6 of 8 in the step's schedule"),
      std::string::npos)
      << table;
  EXPECT_NE(table.find("live at the peak, by role:"), std::string::npos) << table;
  EXPECT_NE(table.find("largest buffers live at the peak (6 of 6):"), std::string::npos) << table;
  EXPECT_NE(table.find("64 B parameters"), std::string::npos) << table;
  EXPECT_NE(table.find("w f32[4,4] {devices=[2,1]0,1} (param/w)"), std::string::npos) << table;
  EXPECT_NE(table.find("64 B gradients          backward  gw f32[4,4] - (bwd/gw)"),
            std::string::npos)
      << table;

  const std::string md = report_markdown(summarize(f.input()));
  EXPECT_NE(md.find("| memory peak | while gw runs (backward: bwd/gw)"), std::string::npos) << md;
  EXPECT_NE(
      md.find(
          "| `w` | `param/w` | `f32[4,4]` | `{devices=[2,1]0,1}` | parameters | other | 64 B |"),
      std::string::npos)
      << md;
}

TEST(ReportJson, MemoryPeakBuffersAndTimelineAreAddedKeysLeftOutOfCsv) {
  ReportFixture f;
  f.use_training_step();
  SummaryInput in = f.input();
  in.memory_timeline_points = 4;
  const Report r = summarize(in);
  const nlohmann::ordered_json j = report_to_json(r);
  EXPECT_EQ(j["memory_peak"]["instruction"], "gw");
  EXPECT_EQ(j["memory_peak"]["pass"], "backward");
  EXPECT_EQ(j["memory_peak"]["schedule_position"].get<int64_t>(), 5);
  EXPECT_EQ(j["memory_peak"]["live_buffers"].get<int64_t>(), 6);
  ASSERT_EQ(j["memory_peak_buffers"].size(), 6u);
  EXPECT_EQ(j["memory_peak_buffers"][1]["name"], "gw");
  EXPECT_EQ(j["memory_peak_buffers"][1]["role"], "gradients");
  EXPECT_EQ(j["memory_peak_buffers"][1]["bytes"].get<int64_t>(), 64);
  // 8 positions in 4 buckets of 2: maxima of 192 192 | 224 224 | 256 288 | 256 192.
  EXPECT_EQ(j["memory_timeline"]["position"], nlohmann::json::parse("[0,2,4,6]"));
  EXPECT_EQ(j["memory_timeline"]["live_bytes"], nlohmann::json::parse("[192,224,288,256]"));
  // The keys that were there stay (the breakdown, by its old name).
  EXPECT_EQ(j["memory_breakdown_bytes"]["gradients"].get<int64_t>(), 64);
  for (const auto& [key, value] : report_flat_fields(r))
    EXPECT_EQ(key.find("memory_peak"), std::string::npos) << key;
  for (const auto& [key, value] : report_flat_fields(r))
    EXPECT_EQ(key.find("memory_timeline"), std::string::npos) << key;
}

TEST(ReportTable, CollectivesColumnsSayWhatTheyCount) {
  ReportFixture f;
  const std::string table = report_table(summarize(f.input()));
  EXPECT_NE(
      table.find(
          "runs: executions in the step, a loop's once per trip; in program: instructions the "
          "partitioner emitted"),
      std::string::npos)
      << table;
  EXPECT_EQ(table.find("emitted   bytes"), std::string::npos) << table;
  // all-reduce: 3 runs, 1 in the program, 3e6 B = 2.86 MiB, 900 ms busy.
  EXPECT_NE(
      table.find("all-reduce                      3          1       2.86 MiB         900 ms"),
      std::string::npos)
      << table;
}

TEST(ReportFormats, NamesMapToFormatsAndUnknownIsAUserError) {
  EXPECT_EQ(format_from_name("json"), Format::kJson);
  EXPECT_EQ(format_from_name("markdown"), Format::kMarkdown);
  EXPECT_THROW(format_from_name("yaml"), UserError);
  ReportFixture f;
  Report r = summarize(f.input());
  EXPECT_EQ(format_report(r, Format::kCsv), report_csv(r));
}

TEST(ReportUnits, HelpersRoundAsDocumented) {
  // Three significant digits in the unit a person reads.
  EXPECT_EQ(format_seconds(46.507381), "46.5 s");  // not "46507.381 ms"
  EXPECT_EQ(format_seconds(0.0125), "12.5 ms");
  EXPECT_EQ(format_seconds(250.0), "250 s");
  EXPECT_EQ(format_seconds(1.234), "1.23 s");
  EXPECT_EQ(format_seconds(0.000999), "999 us");
  EXPECT_EQ(format_seconds(4.2e-6), "4.20 us");
  EXPECT_EQ(format_seconds(0.0), "0 s");
  EXPECT_EQ(format_bytes(1.5 * kGiB), "1.50 GiB");
  EXPECT_EQ(format_bytes(3.0 * 1048576), "3.00 MiB");  // not "0.00 GiB"
  EXPECT_EQ(format_bytes(125 * 1024.0), "125.00 KiB");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_gib(1.5 * kGiB), "1.50 GiB");
  EXPECT_EQ(format_tflops(123.4e12), "123.4 TFLOP/s");
  EXPECT_EQ(format_percent(0.1234), "12.3 %");
  EXPECT_EQ(format_count(1.100041175040e12), "1.100 T");
}

}  // namespace
}  // namespace podsim::reports
