// A report's flat form: "dotted.key" -> value text in a fixed order, as
// `podsim run --format csv` prints it (header line + one row). The one place
// that turns it into CSV or JSON and reads CSV back, and that reads a field
// as a number; sweeps, regress, calibrate and the fit all use it.
#pragma once

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace podsim::reports {

class FlatReport {
 public:
  using Field = std::pair<std::string, std::string>;

  FlatReport() = default;
  FlatReport(std::vector<Field> fields)
      : fields_(std::move(fields)) {}  // NOLINT: a list of fields is one
  FlatReport(std::initializer_list<Field> fields) : fields_(fields) {}

  // The text of the first field named `key`; nullopt when there is none.
  std::optional<std::string> text(const std::string& key) const;
  // That text read as a whole number text ("1e-3" yes; "12abc", "" and a
  // missing field no).
  std::optional<double> number(const std::string& key) const;
  std::vector<std::string> keys() const;

  // Replaces the field's text, or appends the field when there is none.
  void set(const std::string& key, std::string text);
  void remove(const std::string& key);

  const std::vector<Field>& fields() const { return fields_; }
  std::vector<Field>::const_iterator begin() const { return fields_.begin(); }
  std::vector<Field>::const_iterator end() const { return fields_.end(); }
  size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }
  bool operator==(const FlatReport&) const = default;

  // Header line + one row, RFC 4180 quoting.
  std::string csv() const;
  // csv() read back; empty when the text is not a header line + one row of
  // the same width.
  static FlatReport from_csv(const std::string& text);
  // {"key": "text", ...} in field order.
  nlohmann::ordered_json json() const;

 private:
  std::vector<Field> fields_;
};

// The fixed columns of every report (the keys of the flat form of an empty
// Report), so every sweep shard has the same header.
std::vector<std::string> report_columns();

}  // namespace podsim::reports
