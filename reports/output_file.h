// Writing result files without leaving partial output (docs/design.md, command line: errors):
// the text goes to a temporary file next to the target, which is renamed
// over the target only once it is complete.
#pragma once

#include <string>

namespace podsim::reports {

// UserError (naming the path) when the file cannot be written; no file is
// left behind then. An empty path or "-" writes to stdout.
void write_file_atomically(const std::string& path, const std::string& text);

// The whole file; UserError "cannot read the <what>" naming the path.
std::string read_file_text(const std::string& path, const std::string& what = "file");

}  // namespace podsim::reports
