// Running `podsim run` as child processes: SystemC allows one
// kernel per process, and a point that crashes (signal, abort, nonzero exit)
// must become an error row, never take the sweep, regression run or
// calibration down. Each child writes `--format csv` to a temporary file;
// its header + row become the point's flat report fields. A sweep's points
// that share a compile (all but hardware.* keys equal) go to one
// `run --serve` child instead (workload_server.h).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "reports/sweep.h"

namespace podsim::reports {

// One `podsim run` invocation.
struct RunJob {
  std::string workload_path;
  std::vector<std::string> overrides;  // --set key=value
  std::string fidelity = "fast";
};

// What became of one child.
struct JobOutcome {
  bool ok = false;
  std::string error;  // one line when !ok: exit status / signal + last stderr line
  std::vector<std::pair<std::string, std::string>> metrics;  // flat report fields
};

struct ChildRunOptions {
  std::string podsim_binary;  // path of the podsim executable
  int jobs = 1;               // children at once (>= 1)
  double timeout_seconds = 0;  // > 0: a child running longer is killed (error row)
  // Called after each child ends with (done, total); may be empty.
  std::function<void(int done, int total)> on_progress;
};

// Runs every job (at most `jobs` at once); the outcomes are in job order.
std::vector<JobOutcome> run_jobs(const std::vector<RunJob>& jobs, const ChildRunOptions& options);

// Points that share one compile: the same overrides apart from hardware.*
// keys (`compile_overrides`, for --set), each point's hardware.* overrides
// (`variants`, for a `run --serve` line), in first-seen order.
struct CompileGroup {
  std::vector<std::string> compile_overrides;       // "key=value"
  std::vector<size_t> points;                       // indices into the points
  std::vector<std::vector<std::pair<std::string, std::string>>> variants;  // per point: key without "hardware."
};
std::vector<CompileGroup> group_by_compile(const SweepSpec& spec, const std::vector<SweepPoint>& points);

// What run_sweep_points started: `podsim run --serve` children (one compile
// each, for a group of two or more points) and one-point `podsim run`
// children (a single-point group, or a point a server failed or could not
// answer, rerun alone so its error row reads as before).
struct SweepRunStats {
  int serve_children = 0;
  int point_children = 0;
};

// A sweep's results (sweep.h PointResult), in point order: each compile
// group of two or more points is one `run --serve` child fed its points'
// hardware overrides (up to options.jobs groups at once; with fewer groups
// than jobs, the largest are cut into contiguous parts, one child each);
// timeout_seconds bounds each answer (the first includes the compile). A
// point a server rejects, or could not answer, runs alone as before.
std::vector<PointResult> run_sweep_points(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                                          const ChildRunOptions& options, SweepRunStats* stats = nullptr);

// The fixed columns of every report (report_flat_fields of an empty
// Report), for sweep_csv so every shard has the same header.
std::vector<std::string> report_columns();

// Parses `podsim run --format csv` output (header line + one row) into
// fields; empty when the text is not such a table.
std::vector<std::pair<std::string, std::string>> parse_report_csv(const std::string& text);

// Why a child that ended with waitpid `status` failed ("exit code 2: <its
// stderr as one line>", "crashed with signal 11 (...)"); empty when it
// exited with 0.
std::string child_failure_text(int status, const std::string& stderr_text);

// A file's bytes ("" when it cannot be read).
std::string read_text_file(const std::filesystem::path& path);

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

// "[#####.....] 12/40  30%  elapsed 1m05s  ETA 2m31s": the ETA assumes the
// remaining points take the mean time of the finished ones.
std::string progress_bar_text(int done, int total, double elapsed_seconds, int width = 30);

// The podsim executable running this process (/proc/self/exe), for the CLI.
std::string current_executable();

}  // namespace podsim::reports
