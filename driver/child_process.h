// Child processes for runs that must not share this process: SystemC allows
// one kernel per process, and a child that crashes must become an error
// answer, never the caller's crash. fork/exec, private scratch folders, and
// what a child's end means in one line.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "reports/flat_report.h"

namespace podsim::driver {

// What became of one child.
struct JobOutcome {
  bool ok = false;
  std::string error;            // one line when !ok: exit status / signal + last stderr line
  reports::FlatReport metrics;  // the child's report, when ok
};

// Why a child that ended with waitpid `status` failed ("exit code 2: <its
// stderr as one line>", "crashed with signal 11 (...)"); empty when it
// exited with 0.
std::string child_failure_text(int status, const std::string& stderr_text);

// A fresh folder "<prefix>-XXXXXX" in the system's temporary directory for
// children's files, removed with its contents when the object goes (also
// when its owner's constructor throws later). UserError naming `purpose`
// when it cannot be made.
class ScratchDir {
 public:
  ScratchDir(const std::string& prefix, const std::string& purpose);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// UserError unless `binary` names a file this process may execute.
void require_executable(const std::string& binary);

// Where a child started by spawn_child sends its streams: stdin and stdout
// on `socket` when it is >= 0 (the child's end of a socket pair), else
// stdout to the file `stdout_path`; stderr always to the file `stderr_path`.
struct ChildStreams {
  int socket = -1;
  std::string stdout_path = {};
  std::string stderr_path = {};
};

// fork + execv of args[0] with `args`; a child whose redirection or exec
// fails writes "<args[0]>: cannot execute" to its stderr and exits 127.
// Returns the child's pid; UserError when fork fails.
pid_t spawn_child(std::vector<std::string> args, const ChildStreams& streams);

// The podsim executable running this process (/proc/self/exe), for the CLI.
std::string current_executable();

}  // namespace podsim::driver
