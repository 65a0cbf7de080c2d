// Shared helpers of the end-to-end CLI tests: run the built podsim
// (PODSIM_BINARY) with arguments and capture its exit code and output.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/test_files.h"

namespace podsim::cli_test {

// stdout and stderr kept apart (machine output vs messages).
struct SplitRun {
  int exit_code = -1;  // a signal (abort, segfault) is -1
  std::string out;
  std::string err;
};

// stdout and stderr together, as a user sees them.
struct MergedRun {
  int exit_code = -1;  // a signal (abort, segfault) is -1
  std::string output;
};

namespace detail {
// Runs `command`, returns its stdout and sets exit_code.
inline std::string capture_stdout(const std::string& command, int& exit_code) {
  std::string out;
  exit_code = -1;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}
}  // namespace detail

inline SplitRun run_split(const std::string& args) {
  // One stderr file per process: ctest runs tests in parallel processes, and
  // a shared name let one test read another's stderr (a flaky failure).
  namespace fs = std::filesystem;
  const fs::path err_file =
      fs::temp_directory_path() / ("podsim_cli_test." + std::to_string(getpid()) + ".stderr");
  SplitRun r;
  r.out = detail::capture_stdout(
      std::string(PODSIM_BINARY) + " " + args + " 2>" + err_file.string(), r.exit_code);
  r.err = test_files::read_file(err_file);
  fs::remove(err_file);
  return r;
}

inline MergedRun run_merged(const std::string& args) {
  MergedRun r;
  r.output = detail::capture_stdout(std::string(PODSIM_BINARY) + " " + args + " 2>&1", r.exit_code);
  return r;
}

// An empty scratch directory of its own per test and process.
inline std::filesystem::path fresh_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("podsim_cli_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A file's bytes; a path in the source tree (tests/test_files.h).
using test_files::read_file;
using test_files::source_path;

}  // namespace podsim::cli_test
