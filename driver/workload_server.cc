// A compiled workload in a child process answering hardware variants
// (driver/workload_server.h).
#include "driver/workload_server.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/csv.h"
#include "common/error.h"
#include "common/files.h"
#include "reports/flat_report.h"

namespace podsim::driver {

WorkloadServer::WorkloadServer(const std::string& podsim_binary, const std::string& workload_path,
                               const std::vector<std::string>& extra_args)
    : workload_path_(workload_path), scratch_("podsim-serve", "a workload server") {
  require_executable(podsim_binary);
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    throw UserError(fmt::format("cannot create a socket pair: {}", std::strerror(errno)));
  try {
    std::vector<std::string> args = {podsim_binary, "run", workload_path,
                                     "--format",    "csv", "--serve"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    pid_ = spawn_child(
        std::move(args),
        ChildStreams{.socket = pair[1], .stderr_path = (scratch_.path() / "stderr").string()});
  } catch (const UserError&) {
    close(pair[0]);
    close(pair[1]);
    throw;
  }
  close(pair[1]);
  socket_ = pair[0];
}

WorkloadServer::~WorkloadServer() {
  if (socket_ >= 0) {
    shutdown(socket_, SHUT_WR);  // the child's stdin ends: it exits
    close(socket_);
  }
  if (pid_ > 0 && !dead_) {
    // An idle child exits at once; one still compiling (the caller gave up
    // early) is killed after a grace period.
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // scratch_ (the child's stderr file) goes after the child is reaped.
}

void WorkloadServer::send(const HardwareVariant& variant) {
  std::string line;
  for (const auto& [key, value] : variant)
    line += fmt::format("{}hardware.{}={}", line.empty() ? "" : " ", key, value);
  line += '\n';
  size_t sent = 0;
  while (sent < line.size() && !dead_) {
    ssize_t n = ::send(socket_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child is gone; receive() says why
    sent += static_cast<size_t>(n);
  }
}

void WorkloadServer::kill_child(const std::string& why) {
  if (dead_ || pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  dead_ = true;
  death_ = why;
}

bool WorkloadServer::read_line(std::string& line) {
  for (;;) {
    size_t end = buffer_.find('\n');
    if (end != std::string::npos) {
      line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      return true;
    }
    if (dead_) return false;
    char chunk[65536];
    ssize_t n = read(socket_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

std::string WorkloadServer::ended_text() {
  if (!dead_) {
    dead_ = true;
    int status = 0;
    waitpid(pid_, &status, 0);
    death_ = child_failure_text(status, read_text_file(scratch_.path() / "stderr"));
    if (death_.empty()) death_ = "the workload server ended before answering";
  }
  return death_;
}

// A report header line: its third column is named "fidelity" (in a data
// row that column holds fast or full).
static bool is_report_header(const std::string& line) {
  const std::vector<std::vector<std::string>> rows =
      parse_csv(line + "\n", "the workload server's answer");
  return !rows.empty() && rows[0].size() > 2 && rows[0][2] == "fidelity";
}

JobOutcome WorkloadServer::receive() {
  JobOutcome outcome;
  std::string line;
  if (!read_line(line)) {
    outcome.error = ended_text();
    return outcome;
  }
  constexpr std::string_view kError = "error: ";
  if (line.starts_with(kError)) {
    outcome.error = line.substr(kError.size());
    return outcome;
  }
  // The server sends the header before its first row and when the columns change.
  if (is_report_header(line)) {
    header_ = line;
    if (!read_line(line)) {
      outcome.error = ended_text();
      return outcome;
    }
  }
  if (header_.empty()) {
    outcome.error = "the workload server answered with a row before any header";
    return outcome;
  }
  outcome.metrics = reports::FlatReport::from_csv(header_ + "\n" + line + "\n");
  if (outcome.metrics.empty()) {
    outcome.error = "the workload server answered with no report table";
    return outcome;
  }
  outcome.ok = true;
  return outcome;
}

}  // namespace podsim::driver
