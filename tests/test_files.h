// Reading files in tests: a file's bytes, and files of the source tree
// (fixtures, shipped workloads) by their path relative to the repo root.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace podsim::test_files {

// A file's bytes ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A path in the source tree (PODSIM_SOURCE_DIR is the repo root).
inline std::string source_path(const std::string& relative) {
  return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

// The bytes of a source-tree file.
inline std::string read_source_file(const std::string& relative) {
  return read_file(source_path(relative));
}

}  // namespace podsim::test_files
