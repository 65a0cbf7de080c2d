// A report's flat form (reports/flat_fields.h).
#include "reports/flat_fields.h"

#include "common/csv.h"
#include "common/error.h"
#include "reports/formats.h"
#include "reports/report.h"

namespace podsim::reports {

std::vector<std::pair<std::string, std::string>> parse_report_csv(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<std::vector<std::string>> rows;
  try {
    rows = parse_csv(text, "<podsim run output>");
  } catch (const UserError&) {
    return fields;
  }
  if (rows.size() != 2 || rows[0].size() != rows[1].size() || rows[0].empty()) return fields;
  for (size_t i = 0; i < rows[0].size(); ++i) fields.emplace_back(rows[0][i], rows[1][i]);
  return fields;
}

std::vector<std::string> report_columns() {
  // Every collective kind and memory role, as summarize() lists them (the
  // role order is report.cc's), so the flat keys are those of a real run.
  Report shape;
  for (const std::string& kind : collective_kinds()) shape.collectives.push_back(CollectiveStats{kind});
  for (compiler::ValueRole role :
       {compiler::ValueRole::kParameter, compiler::ValueRole::kOptimizerState, compiler::ValueRole::kGradient,
        compiler::ValueRole::kActivation, compiler::ValueRole::kInput, compiler::ValueRole::kTemporary,
        compiler::ValueRole::kCollectiveBuffer})
    shape.memory_breakdown.push_back(MemoryPart{memory_role_key(role), 0});
  shape.parts = summarize_parts({}, 0);  // every pass and component key
  std::vector<std::string> columns;
  for (const auto& [key, value] : report_flat_fields(shape)) columns.push_back(key);
  return columns;
}

}  // namespace podsim::reports
