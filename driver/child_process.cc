// Child processes (driver/child_process.h): POSIX fork/exec.
#include "driver/child_process.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "common/error.h"

namespace podsim::driver {

namespace {

// The child's stderr as one line: non-empty lines joined, capped.
std::string one_line(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    if (!out.empty()) out += " | ";
    out += line;
  }
  constexpr size_t kMaxChars = 400;
  if (out.size() > kMaxChars) out = out.substr(0, kMaxChars) + "...";
  return out;
}

}  // namespace

std::string child_failure_text(int status, const std::string& stderr_text) {
  std::string err = one_line(stderr_text);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return fmt::format("crashed with signal {} ({}){}", sig, strsignal(sig),
                       err.empty() ? "" : ": " + err);
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0) return fmt::format("exit code {}{}", code, err.empty() ? "" : ": " + err);
  return "";
}

ScratchDir::ScratchDir(const std::string& prefix, const std::string& purpose) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data()))
    throw UserError(fmt::format("cannot create a temporary folder for {}", purpose));
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void require_executable(const std::string& binary) {
  if (binary.empty() || access(binary.c_str(), X_OK) != 0)
    throw UserError(fmt::format("cannot run the podsim binary '{}'", binary));
}

pid_t spawn_child(std::vector<std::string> args, const ChildStreams& streams) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string failed =
      args.front() + ": cannot execute\n";  // built before fork: the child only writes it
  pid_t pid = fork();
  if (pid < 0)
    throw UserError(fmt::format("cannot start a child process: {}", std::strerror(errno)));
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec (dup2 clears CLOEXEC on
    // the socket's copies; the original closes at exec).
    const bool redirected = streams.socket >= 0
                                ? dup2(streams.socket, 0) >= 0 && dup2(streams.socket, 1) >= 0
                                : std::freopen(streams.stdout_path.c_str(), "w", stdout) != nullptr;
    if (redirected && std::freopen(streams.stderr_path.c_str(), "w", stderr))
      execv(argv[0], argv.data());
    [[maybe_unused]] ssize_t n = write(2, failed.data(), failed.size());
    _exit(127);
  }
  return pid;
}

std::string current_executable() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

}  // namespace podsim::driver
