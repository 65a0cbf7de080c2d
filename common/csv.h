// RFC 4180 CSV: quoting one field and reading a whole table.
#pragma once

#include <string>
#include <vector>

namespace podsim {

// The field as written, or in double quotes (inner quotes doubled) when it
// holds a comma, a quote or a line break.
std::string csv_quote(const std::string& field);

// Rows of fields; UserError naming `file_name` and the line of an unclosed
// quote or text after a closing quote.
std::vector<std::vector<std::string>> parse_csv(const std::string& text,
                                                const std::string& file_name);

}  // namespace podsim
