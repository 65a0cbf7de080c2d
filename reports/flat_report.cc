// A report's flat form (reports/flat_report.h).
#include "reports/flat_report.h"

#include <algorithm>
#include <cstdlib>

#include "common/csv.h"
#include "common/error.h"
#include "reports/formats.h"
#include "reports/report.h"

namespace podsim::reports {

std::optional<std::string> FlatReport::text(const std::string& key) const {
  for (const auto& [k, value] : fields_)
    if (k == key) return value;
  return std::nullopt;
}

std::optional<double> FlatReport::number(const std::string& key) const {
  const std::optional<std::string> t = text(key);
  if (!t || t->empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t->c_str(), &end);
  if (end != t->c_str() + t->size()) return std::nullopt;
  return v;
}

std::vector<std::string> FlatReport::keys() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : fields_) out.push_back(key);
  return out;
}

void FlatReport::set(const std::string& key, std::string text) {
  for (auto& [k, value] : fields_)
    if (k == key) {
      value = std::move(text);
      return;
    }
  fields_.emplace_back(key, std::move(text));
}

void FlatReport::remove(const std::string& key) {
  std::erase_if(fields_, [&key](const Field& f) { return f.first == key; });
}

std::string FlatReport::csv() const {
  std::string header, row;
  for (const auto& [key, value] : fields_) {
    if (!header.empty()) {
      header += ',';
      row += ',';
    }
    header += csv_quote(key);
    row += csv_quote(value);
  }
  return header + "\n" + row + "\n";
}

FlatReport FlatReport::from_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  try {
    rows = parse_csv(text, "<podsim run output>");
  } catch (const UserError&) {
    return {};
  }
  if (rows.size() != 2 || rows[0].size() != rows[1].size() || rows[0].empty()) return {};
  FlatReport report;
  for (size_t i = 0; i < rows[0].size(); ++i) report.fields_.emplace_back(rows[0][i], rows[1][i]);
  return report;
}

nlohmann::ordered_json FlatReport::json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [key, value] : fields_) j[key] = value;
  return j;
}

std::vector<std::string> report_columns() {
  // Every collective kind and memory role, as summarize() lists them (the
  // role order is report.cc's), so the flat keys are those of a real run.
  Report shape;
  for (const std::string& kind : collective_kinds())
    shape.collectives.push_back(CollectiveStats{kind});
  for (compiler::ValueRole role :
       {compiler::ValueRole::kParameter, compiler::ValueRole::kOptimizerState,
        compiler::ValueRole::kGradient, compiler::ValueRole::kActivation,
        compiler::ValueRole::kInput, compiler::ValueRole::kTemporary,
        compiler::ValueRole::kCollectiveBuffer})
    shape.memory_breakdown.push_back(MemoryPart{memory_role_key(role), 0});
  shape.parts = summarize_parts({}, 0);  // every pass and component key
  return report_flat_fields(shape).keys();
}

}  // namespace podsim::reports
