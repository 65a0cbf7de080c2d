// A report's flat form as `podsim run --format csv` prints it: the fixed
// columns every report has, and reading a printed table back into fields.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace podsim::reports {

// The fixed columns of every report (report_flat_fields of an empty
// Report), for sweep_csv so every shard has the same header.
std::vector<std::string> report_columns();

// Parses `podsim run --format csv` output (header line + one row) into
// fields; empty when the text is not such a table.
std::vector<std::pair<std::string, std::string>> parse_report_csv(const std::string& text);

}  // namespace podsim::reports
