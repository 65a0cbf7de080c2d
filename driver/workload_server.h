// One compiled workload kept alive in a child `podsim run --serve` process
// (driver/serve.h), answering hardware variants: the compile (seconds on
// the calibration configs) is paid once, each variant costs one simulation.
// `podsim calibrate --fit` keeps one server per calibration workload for the
// whole fit. A child, not a thread: the SystemC kernel is one per process,
// and a child that crashes becomes an error answer, never the caller's
// crash.
//
// The child's stdin and stdout are one end of a Unix socket pair: requests
// go out with send(MSG_NOSIGNAL), so a child that died gives an error and
// no SIGPIPE.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "driver/child_process.h"

namespace podsim::driver {

// hardware key (without "hardware.") -> value text
using HardwareVariant = std::vector<std::pair<std::string, std::string>>;

class WorkloadServer {
 public:
  // Starts `podsim_binary run workload_path --format csv --serve
  // <extra_args>` (e.g. --set model.layers=4, --fidelity full). The compile
  // runs in the child while the caller goes on.
  WorkloadServer(const std::string& podsim_binary, const std::string& workload_path,
                 const std::vector<std::string>& extra_args = {});
  ~WorkloadServer();
  WorkloadServer(const WorkloadServer&) = delete;
  WorkloadServer& operator=(const WorkloadServer&) = delete;

  // Queues one variant; answers come back in request order.
  void send(const HardwareVariant& variant);
  // The answer to the oldest unanswered request (blocks): the report's flat
  // fields, or ok = false with the child's error (a rejected variant, or the
  // child's exit status and last stderr lines when it ended).
  JobOutcome receive();

  const std::string& workload_path() const { return workload_path_; }

  // For a caller waiting on several servers: poll() this descriptor, but
  // first take an answer already read (buffered_answer()).
  int socket() const { return socket_; }
  bool buffered_answer() const { return buffer_.find('\n') != std::string::npos; }
  // Kills the child now (a caller's timeout); later receive()s say so.
  void kill_child(const std::string& why);
  // The child is known to be gone (a receive() met its end, or kill_child).
  bool ended() const { return dead_; }

 private:
  bool read_line(std::string& line);
  std::string ended_text();

  std::string workload_path_;
  ScratchDir scratch_;  // the child's stderr file
  pid_t pid_ = -1;
  int socket_ = -1;
  std::string buffer_;  // read but not yet consumed
  std::string header_;  // the last report header line the child sent
  bool dead_ = false;
  std::string death_;  // why the child is gone, once known
};

}  // namespace podsim::driver
