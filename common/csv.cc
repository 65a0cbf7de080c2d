// RFC 4180 CSV (common/csv.h).
#include "common/csv.h"

#include <fmt/format.h>

#include "common/error.h"

namespace podsim {

std::string csv_quote(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text,
                                                const std::string& file_name) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, field_started = false;
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"' && !field_started) {
      quoted = field_started = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      field_started = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      row.push_back(std::move(field));
      field.clear();
      field_started = false;
      rows.push_back(std::move(row));
      row.clear();
      ++line;
    } else {
      field += c;
      field_started = true;
    }
  }
  if (quoted)
    throw UserError(SourceLocation{file_name, line, 0}, "unterminated quoted CSV field",
                    "is the file complete?");
  if (field_started || !row.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace podsim
