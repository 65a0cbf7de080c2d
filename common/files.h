// Whole-file reads, and writing result files without leaving partial
// output: the text goes to a temporary file next to the target, renamed over
// the target only once complete.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

namespace podsim {

// A file's bytes ("" when it cannot be read).
std::string read_text_file(const std::filesystem::path& path);

// The whole file; UserError "cannot read the <what>" naming the path.
std::string read_file_text(const std::string& path, const std::string& what = "file");

// UserError (naming the path) when the file cannot be written; no file is
// left behind then. An empty path or "-" writes to stdout.
void write_file_atomically(const std::string& path, const std::string& text);

// The same to a file only, with `write` filling the stream; `before_rename`
// (may be empty) runs once the text is complete and may throw a UserError to
// leave no file behind (e.g. a size limit). `what` names the file in the
// errors ("cannot write the <what>").
void write_stream_atomically(const std::string& path,
                             const std::function<void(std::ostream&)>& write,
                             const std::string& what = "output file",
                             const std::function<void()>& before_rename = {});

}  // namespace podsim
