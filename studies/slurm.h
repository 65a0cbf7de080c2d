// `podsim sweep S.yaml --slurm`: a sweep as one Slurm array job. Task i of N
// runs `podsim sweep S.yaml --shard i/N` into shard-i.csv of a results folder
// next to the output (out.csv -> out.slurm/); podsim submits the job with
// sbatch, waits for it (squeue, sacct when the cluster keeps accounting) and
// merges the shard tables as `sweep merge` does. A task that left no table
// (failed, cancelled, timed out) gives its points error rows naming the task
// (Slurm's <job>_<index>) and Slurm's state; `--resume` resubmits only those tasks. Slurm's commands
// go through a CommandRunner, so tests can fake the cluster.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace podsim::studies {

// What one external command did.
struct CommandResult {
  int exit_code = 0;  // 127: could not be started
  std::string out;
  std::string err;
};

// Slurm's client commands, as this unit uses them.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv (argv[0] looked up on PATH) to its end.
  virtual CommandResult run(const std::vector<std::string>& argv) = 0;
  // Whether `program` is an executable file in a folder of PATH.
  virtual bool on_path(const std::string& program) const = 0;
  virtual void sleep(double seconds) = 0;
};

// The real commands: fork/exec, output through files in a scratch folder.
std::unique_ptr<CommandRunner> system_command_runner();

// What `podsim sweep S.yaml --slurm ...` was asked.
struct SlurmSweepRequest {
  std::string sweep_file;
  std::string output;                    // merged CSV (a file, not stdout)
  int tasks = 0;                         // array tasks; 0 = min(points, 16)
  std::string partition;                 // empty = the cluster's default
  std::string time_limit;                // sbatch --time, per task; empty = partition's
  std::vector<std::string> sbatch_args;  // extra #SBATCH lines, e.g. --account=X
  int jobs = 1;                          // -j per task (and --cpus-per-task)
  double timeout_seconds = 0;            // each task's --timeout
  bool wait = true;                      // false: print the job id and return
  bool resume = false;                   // resubmit only the tasks without a shard table
  std::string podsim_binary;             // empty = this executable
  double poll_seconds = 2;               // squeue every so often
};

// out.csv -> out.slurm (the folder of the job script, the shard tables, the
// task logs and the job's record).
std::string slurm_results_dir(const std::string& output);

// The array job's script.
struct SlurmScript {
  std::string job_name;
  std::string podsim_binary;  // absolute paths: the tasks run elsewhere
  std::string sweep_file;
  std::string results_dir;
  int tasks = 1;
  int jobs = 1;
  double timeout_seconds = 0;
  std::string partition;
  std::string time_limit;
  std::vector<std::string> sbatch_args;
};
std::string slurm_array_script(const SlurmScript& script);

// "1-3,5,7-8" for sbatch --array; `tasks` sorted ascending.
std::string array_ranges(const std::vector<int>& tasks);

// `squeue -h -r -o %K|%T` lines -> array task -> state; a pending task range
// ("3-5" or "3-5%2") stands for each of its tasks.
std::map<int, std::string> parse_squeue_states(const std::string& text);
// `sacct -n -P -X -o JobID,State` lines of job `job_id` ("12_3|FAILED",
// "12_[4-5]|PENDING") -> array task -> state ("CANCELLED by 0" -> CANCELLED).
std::map<int, std::string> parse_sacct_states(const std::string& text, const std::string& job_id);

// Submits (after checking sbatch, the partition and the results folder:
// UserError and nothing submitted when one is wrong), waits and merges.
// Exit 0 when every point has a result, 1 when some row is an error.
int run_sweep_on_slurm(const SlurmSweepRequest& request, CommandRunner& runner);

// `podsim sweep merge out.slurm -o out.csv`: waits for the job recorded in
// the results folder, then merges as run_sweep_on_slurm does.
int finish_slurm_sweep(const std::string& results_dir, const std::string& output,
                       CommandRunner& runner, double poll_seconds = 2);

}  // namespace podsim::studies
