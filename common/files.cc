// Whole-file reads and atomic writes (common/files.h).
#include "common/files.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace podsim {

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file_atomically(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    fmt::print("{}", text);
    std::fflush(stdout);
    return;
  }
  write_stream_atomically(path, [&](std::ostream& out) { out << text; });
}

void write_stream_atomically(const std::string& path,
                             const std::function<void(std::ostream&)>& write,
                             const std::string& what, const std::function<void()>& before_rename) {
  // Same directory as the target so the rename never crosses file systems;
  // the pid keeps two concurrent runs from sharing a temp file.
  const std::string tmp = fmt::format("{}.tmp-{}", path, static_cast<long>(getpid()));
  std::error_code ignored;
  bool written = false;
  try {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (out) {
      write(out);
      out.flush();
      written = static_cast<bool>(out);
    }
  } catch (...) {
    std::filesystem::remove(tmp, ignored);
    throw;
  }
  if (!written) {
    std::filesystem::remove(tmp, ignored);
    throw UserError(SourceLocation{path, 0, 0}, fmt::format("cannot write the {}", what),
                    "check that the folder exists and is writable");
  }
  if (before_rename) {
    try {
      before_rename();
    } catch (...) {
      std::filesystem::remove(tmp, ignored);
      throw;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::filesystem::remove(tmp, ignored);
    throw UserError(SourceLocation{path, 0, 0}, fmt::format("cannot move the {} into place", what));
  }
}

std::string read_file_text(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UserError(SourceLocation{path, 0, 0}, fmt::format("cannot read the {}", what),
                    "check the path");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace podsim
