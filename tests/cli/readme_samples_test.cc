// README.md's sample outputs are the output of the commands they name, run
// here on the built binary, so a sample cannot drift from the code: a change
// that moves a number fails this test until `make readme` regenerates the
// samples (it runs this test with PODSIM_UPDATE_README=1, which rewrites the
// blocks in place instead of comparing).
//
// Two kinds of sample, each an HTML comment (invisible on GitHub) followed
// by the generated block:
//   <!-- sample: podsim ARGS | lines A-B -->        then a ``` fenced block:
//        lines A..B of the command's stdout, each cut at 110 columns;
//   <!-- sample-table: FIELD FIELD ...             then a markdown table:
//   podsim ARGS --format csv                          one row per command,
//   ... -->                                           its --set values first;
// and a number in prose, between two comments:
//   <!-- value: podsim ARGS --format csv | FIELD -->VALUE<!-- /value -->
//        the field of the command's CSV row, as the tables show it.
// Each command runs once however many samples quote it.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "reports/flat_report.h"
#include "reports/formats.h"
#include "tests/cli/cli_test_util.h"

namespace podsim::cli_test {
namespace {

constexpr size_t kColumns = 110;

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Runs `podsim ARGS` from the repo root (the samples name repo paths), once
// per command: later samples of the same command read the first output.
std::string run_sample_command(const std::string& command) {
  static std::map<std::string, std::string> outputs;
  if (const auto it = outputs.find(command); it != outputs.end()) return it->second;
  EXPECT_EQ(command.rfind("podsim ", 0), 0u)
      << "a sample command starts with 'podsim ': " << command;
  const std::string args = command.substr(std::string("podsim ").size());
  int exit_code = -1;
  const std::string out =
      detail::capture_stdout("cd '" + std::string(PODSIM_SOURCE_DIR) + "' && " +
                                 std::string(PODSIM_BINARY) + " " + args + " 2>/dev/null",
                             exit_code);
  EXPECT_EQ(exit_code, 0) << command;
  if (exit_code == 0) outputs[command] = out;
  return out;
}

std::string excerpt(const std::string& output, size_t first, size_t last) {
  const std::vector<std::string> lines = split_lines(output);
  std::string out;
  for (size_t i = first; i <= last && i <= lines.size(); ++i) {
    std::string line = lines[i - 1];
    if (line.size() > kColumns) line.replace(kColumns - 4, std::string::npos, " ...");
    out += line + "\n";
  }
  return out;
}

// A field's value as a person reads it: seconds and bytes with units,
// utilisations in percent, other numbers with 4 significant digits.
std::string readable(const std::string& field, const std::string& value) {
  char* end = nullptr;
  const double x = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0') return value;
  // The unit is the suffix of the field or of its group ("time_breakdown_s.compute").
  const std::string unit_name = field.substr(0, field.find('.'));
  if (unit_name.ends_with("_s")) return reports::format_seconds(x);
  if (unit_name.ends_with("_bytes")) return reports::format_bytes(x);
  if (field == "mfu" || field == "hfu") return fmt::format("{:.1f} %", 100 * x);
  return fmt::format("{:.4g}", x);
}

// The row's label: the command's --set values, or "base".
std::string row_label(const std::string& command) {
  std::string label;
  static const std::regex set(R"(--set\s+(\S+))");
  for (auto it = std::sregex_iterator(command.begin(), command.end(), set);
       it != std::sregex_iterator(); ++it)
    label += (label.empty() ? "" : ", ") + (*it)[1].str();
  return label.empty() ? "base" : "`" + label + "`";
}

// A report field of a CSV row, readable; "?" (and a failure) when absent.
std::string field_value(const reports::FlatReport& row, const std::string& f,
                        const std::string& command) {
  const auto field =
      std::find_if(row.begin(), row.end(), [&](const auto& kv) { return kv.first == f; });
  EXPECT_NE(field, row.end()) << "no report field '" << f << "' in " << command;
  return field != row.end() ? readable(f, field->second) : std::string("?");
}

std::string table(const std::vector<std::string>& fields,
                  const std::vector<std::string>& commands) {
  std::string out = "| run |";
  std::string rule = "|---|";
  for (const std::string& f : fields) {
    out += fmt::format(" {} |", f);
    rule += "---|";
  }
  out += "\n" + rule + "\n";
  for (const std::string& command : commands) {
    const reports::FlatReport row = reports::FlatReport::from_csv(run_sample_command(command));
    EXPECT_FALSE(row.empty()) << command << ": no CSV row";
    if (row.empty()) continue;
    out += fmt::format("| {} |", row_label(command));
    for (const std::string& f : fields) out += fmt::format(" {} |", field_value(row, f, command));
    out += "\n";
  }
  return out;
}

// One generated block: [begin, end) is the text after its comment that the
// generator owns; `generated` what it should hold.
struct Sample {
  std::string marker;
  size_t begin = 0, end = 0;
  std::string generated;
};

std::vector<Sample> find_samples(const std::string& readme) {
  std::vector<Sample> samples;
  static const std::regex lines_marker(
      R"(<!-- sample: (podsim [^|]*?) \| lines (\d+)-(\d+) -->\n)");
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), lines_marker);
       it != std::sregex_iterator(); ++it) {
    Sample s;
    s.marker = (*it)[1].str();
    s.begin = static_cast<size_t>(it->position(0) + it->length(0));
    EXPECT_EQ(readme.compare(s.begin, 4, "```\n"), 0)
        << "a ``` block must follow the sample comment of " << s.marker;
    s.begin += 4;
    s.end = readme.find("```\n", s.begin);
    if (s.end == std::string::npos) {
      ADD_FAILURE() << "unterminated sample block for " << s.marker;
      continue;
    }
    s.generated = excerpt(run_sample_command(s.marker), std::stoul((*it)[2].str()),
                          std::stoul((*it)[3].str()));
    samples.push_back(s);
  }
  static const std::regex table_marker(R"(<!-- sample-table: ([^\n]*)\n([^]*?)-->\n)");
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), table_marker);
       it != std::sregex_iterator(); ++it) {
    Sample s;
    s.marker = "table " + (*it)[1].str();
    std::vector<std::string> fields;
    std::istringstream names((*it)[1].str());
    for (std::string f; names >> f;) fields.push_back(f);
    std::vector<std::string> commands;
    for (const std::string& line : split_lines((*it)[2].str()))
      if (!line.empty()) commands.push_back(line);
    s.begin = static_cast<size_t>(it->position(0) + it->length(0));
    s.end = s.begin;
    while (s.end < readme.size() &&
           readme[s.end] == '|') {  // the table: consecutive lines starting with '|'
      const size_t eol = readme.find('\n', s.end);
      s.end = eol == std::string::npos ? readme.size() : eol + 1;
    }
    s.generated = table(fields, commands);
    samples.push_back(s);
  }
  static const std::regex value_marker(
      R"(<!-- value: (podsim [^|]*?) \| (\S+) -->([^<\n]*)<!-- /value -->)");
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), value_marker);
       it != std::sregex_iterator(); ++it) {
    Sample s;
    const std::string command = (*it)[1].str(), field = (*it)[2].str();
    s.marker = "value " + field + " of " + command;
    s.begin = static_cast<size_t>(it->position(3));
    s.end = s.begin + static_cast<size_t>(it->length(3));
    const reports::FlatReport row = reports::FlatReport::from_csv(run_sample_command(command));
    EXPECT_FALSE(row.empty()) << command << ": no CSV row";
    s.generated = row.empty() ? "?" : field_value(row, field, command);
    samples.push_back(s);
  }
  return samples;
}

TEST(ReadmeSamples, EveryBlockIsTheOutputOfItsCommand) {
  const std::string path = test_files::source_path("README.md");
  std::string readme = test_files::read_file(path);
  std::vector<Sample> samples = find_samples(readme);
  ASSERT_GE(samples.size(), 2u) << "README.md lost its generated samples";
  if (const char* update = std::getenv("PODSIM_UPDATE_README");
      update && std::string(update) == "1") {
    std::sort(samples.begin(), samples.end(),
              [](const Sample& a, const Sample& b) { return a.begin > b.begin; });
    for (const Sample& s : samples) readme.replace(s.begin, s.end - s.begin, s.generated);
    std::ofstream(path) << readme;
    return;
  }
  for (const Sample& s : samples)
    EXPECT_EQ(readme.substr(s.begin, s.end - s.begin), s.generated)
        << "README.md's sample of '" << s.marker << "' drifted from the binary: run `make readme`";
}

}  // namespace
}  // namespace podsim::cli_test
