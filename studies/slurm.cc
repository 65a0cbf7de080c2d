// A sweep as one Slurm array job (studies/slurm.h): the checks before
// sbatch, the job script, the wait on squeue/sacct, and the merge with error
// rows for the tasks that left no shard table.
#include "studies/slurm.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include "common/csv.h"
#include "common/error.h"
#include "common/files.h"
#include "common/progress.h"
#include "driver/child_process.h"
#include "reports/flat_report.h"
#include "studies/sweep.h"
#include "studies/sweep_spec.h"

namespace podsim::studies {

namespace fs = std::filesystem;

namespace {

// The folder of PATH holding an executable `program`, or "".
std::string find_on_path(const std::string& program) {
  if (program.find('/') != std::string::npos)
    return access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = std::getenv("PATH");
  std::stringstream folders(path ? path : "");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    const fs::path candidate = fs::path(folder.empty() ? "." : folder) / program;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
  }
  return "";
}

class SystemCommandRunner : public CommandRunner {
 public:
  CommandResult run(const std::vector<std::string>& argv) override {
    CommandResult result;
    std::vector<std::string> args = argv;
    args.front() = find_on_path(argv.front());
    if (args.front().empty()) {
      result.exit_code = 127;
      result.err = argv.front() + ": not found on PATH";
      return result;
    }
    const driver::ScratchDir scratch("podsim-slurm", "Slurm's command output");
    const fs::path out = scratch.path() / "out";
    const fs::path err = scratch.path() / "err";
    const pid_t pid = driver::spawn_child(
        args, driver::ChildStreams{.stdout_path = out.string(), .stderr_path = err.string()});
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = read_text_file(out);
    result.err = read_text_file(err);
    return result;
  }
  bool on_path(const std::string& program) const override { return !find_on_path(program).empty(); }
  void sleep(double seconds) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
};

// 'text' for bash, single-quoted.
std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::string absolute(const std::string& path) { return fs::absolute(path).lexically_normal(); }

std::string shard_file(const std::string& dir, int task) {
  return (fs::path(dir) / fmt::format("shard-{}.csv", task)).string();
}
std::string log_file(const std::string& dir, int task) {
  return (fs::path(dir) / fmt::format("task-{}.log", task)).string();
}
std::string record_file(const std::string& dir) {
  return (fs::path(dir) / "slurm-job.txt").string();
}
std::string script_file(const std::string& dir) { return (fs::path(dir) / "job.sh").string(); }

// A task's end as Slurm tells it (sacct's and squeue's state names).
bool ended_state(const std::string& state) {
  static const std::set<std::string> kEnded = {
      "COMPLETED", "FAILED",   "CANCELLED", "TIMEOUT", "NODE_FAIL",
      "BOOT_FAIL", "DEADLINE", "PREEMPTED", "REVOKED", "OUT_OF_MEMORY"};
  return kEnded.count(state) > 0;
}

// What the results folder records of its job: the sweep, the task count and
// which Slurm job each task last ran in ("sweep PATH", "tasks N", then
// "job ID RANGES" lines; a later line wins for its tasks).
struct JobRecord {
  std::string sweep_file;
  int tasks = 0;
  std::map<int, std::string> job_of_task;
};

std::vector<int> parse_ranges(const std::string& text) {
  std::vector<int> out;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const size_t percent = part.find('%');  // "1-8%2": at most 2 at once
    if (percent != std::string::npos) part.resize(percent);
    if (part.empty()) continue;
    const size_t dash = part.find('-');
    try {
      const int first = std::stoi(part.substr(0, dash));
      const int last = dash == std::string::npos ? first : std::stoi(part.substr(dash + 1));
      for (int t = first; t <= last; ++t) out.push_back(t);
    } catch (const std::exception&) {
      return {};
    }
  }
  return out;
}

JobRecord read_record(const std::string& dir) {
  const std::string path = record_file(dir);
  const std::string text = read_file_text(path, "Slurm job record of the results folder");
  JobRecord record;
  std::stringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::stringstream words(line);
    std::string key, a, b;
    words >> key >> a >> b;
    if (key == "sweep") record.sweep_file = line.substr(6);
    if (key == "tasks") record.tasks = std::atoi(a.c_str());
    if (key == "job")
      for (int t : parse_ranges(b)) record.job_of_task[t] = a;
  }
  if (record.sweep_file.empty() || record.tasks < 1)
    throw UserError(SourceLocation{path, 1, 1},
                    "not a job record written by 'podsim sweep --slurm'",
                    "merge the folder 'podsim sweep S.yaml --slurm -o out.csv' made (out.slurm)");
  return record;
}

void append_record(const std::string& dir, const std::string& text) {
  const std::string path = record_file(dir);
  write_file_atomically(path, read_text_file(path) + text);
}

// Slurm's state of each task of the record now ("" = not listed).
std::map<int, std::string> current_states(const JobRecord& record, CommandRunner& runner) {
  std::map<std::string, std::vector<int>> tasks_of_job;
  for (const auto& [task, job] : record.job_of_task) tasks_of_job[job].push_back(task);
  std::map<int, std::string> states;
  for (const auto& [job, tasks] : tasks_of_job) {
    const CommandResult r =
        runner.run({"squeue", "-h", "-r", "-j", job, "--states=all", "-o", "%K|%T"});
    if (r.exit_code != 0 && r.err.find("Invalid job id") == std::string::npos)
      throw UserError(fmt::format("squeue failed: {}", one_line(r.err + r.out)),
                      "is the cluster reachable (SLURM_CONF)? the job keeps its state; finish "
                      "later with: podsim sweep merge <results folder> -o out.csv");
    const std::map<int, std::string> listed =
        r.exit_code == 0 ? parse_squeue_states(r.out) : std::map<int, std::string>{};
    for (int t : tasks) {
      auto it = listed.find(t);
      states[t] = it == listed.end() ? "" : it->second;
    }
  }
  return states;
}

// Slurm's word on the tasks squeue no longer lists: sacct's state when the
// cluster keeps accounting, else what was last seen.
std::map<int, std::string> final_states(const JobRecord& record,
                                        const std::map<int, std::string>& listed,
                                        const std::map<int, std::string>& last_seen,
                                        CommandRunner& runner) {
  std::map<int, std::string> out = listed;
  std::map<std::string, std::map<int, std::string>> sacct;
  for (auto& [task, state] : out) {
    if (!state.empty()) continue;
    const std::string& job = record.job_of_task.at(task);
    if (!sacct.count(job)) {
      const CommandResult r =
          runner.on_path("sacct")
              ? runner.run({"sacct", "-n", "-P", "-X", "-j", job, "-o", "JobID,State"})
              : CommandResult{127, "", ""};
      sacct[job] = r.exit_code == 0 ? parse_sacct_states(r.out, job) : std::map<int, std::string>{};
    }
    auto it = sacct[job].find(task);
    if (it != sacct[job].end()) {
      state = it->second;
    } else {
      auto seen = last_seen.find(task);
      state = seen == last_seen.end() || seen->second.empty()
                  ? std::string("no longer listed by squeue")
                  : fmt::format("no longer listed by squeue (last seen {})", seen->second);
    }
  }
  return out;
}

// Polls until no task of the record is pending or running; the tasks'
// states at the end.
std::map<int, std::string> wait_for_job(const JobRecord& record, const std::string& dir,
                                        CommandRunner& runner, double poll_seconds) {
  ProgressLine progress(stderr, 0, progress_style_of(stderr));
  std::map<int, std::string> last_seen;
  std::map<int, std::string> states;
  std::set<std::string> jobs;
  for (const auto& [task, job] : record.job_of_task) jobs.insert(job);
  const std::string job_names = fmt::format("{}", fmt::join(jobs, ","));
  std::string last_label;
  int last_done = -1;
  while (true) {
    states = current_states(record, runner);
    int active = 0, running = 0, done = 0, failed = 0;
    for (const auto& [task, state] : states) {
      if (!state.empty()) last_seen[task] = state;
      if (!state.empty() && !ended_state(state)) {
        ++active;
        running += state == "RUNNING" ? 1 : 0;
      } else {
        ++done;
        failed += fs::exists(shard_file(dir, task)) ? 0 : 1;
      }
    }
    const std::string label = fmt::format("slurm job {}: {} running, {} waiting, {} failed",
                                          job_names, running, active - running, failed);
    if (label != last_label || done != last_done)
      progress.update(label, done, static_cast<int>(states.size()));
    last_label = label;
    last_done = done;
    if (active == 0) break;
    runner.sleep(poll_seconds);
  }
  progress.finish();
  return final_states(record, states, last_seen, runner);
}

// The shard tables joined, each task without one as error rows; the exit
// code (0 every row ok, 1 some error row).
int merge_results(const JobRecord& record, const std::string& dir, const std::string& output,
                  const std::map<int, std::string>& states) {
  const SweepSpec spec = load_sweep(record.sweep_file);
  const std::vector<SweepPoint> points = expand_sweep(spec);
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> metric_columns;
  std::vector<PointResult> missing;
  std::vector<int> failed_tasks;
  std::vector<std::string> failed_notes;
  for (int task = 1; task <= record.tasks; ++task) {
    const std::string shard = shard_file(dir, task);
    if (fs::exists(shard)) {
      files.emplace_back(shard, read_file_text(shard, "shard table"));
      if (metric_columns.empty()) {
        std::vector<std::vector<std::string>> table = parse_csv(files.back().second, shard);
        const size_t first_metric = spec.swept_keys().size() + 3;  // point, keys, status, error
        if (!table.empty() && table[0].size() > first_metric)
          metric_columns.assign(table[0].begin() + static_cast<long>(first_metric), table[0].end());
      }
      continue;
    }
    auto it = states.find(task);
    std::string state = it == states.end() ? "state unknown (squeue not on PATH)" : it->second;
    if (state == "COMPLETED")
      state +=
          " without writing its shard table (is the results folder on a filesystem the "
          "nodes share?)";
    auto job = record.job_of_task.find(task);
    // Slurm names an array task <job>_<index>.
    const std::string who =
        job == record.job_of_task.end()
            ? fmt::format("shard {}/{}", task, record.tasks)
            : fmt::format("Slurm job {}_{} (shard {}/{})", job->second, task, task, record.tasks);
    const std::string error =
        fmt::format("{}: {}; no shard table (log: {})", who, state, log_file(dir, task));
    for (const SweepPoint& p : select_shard(points, ShardSpec{task, record.tasks})) {
      PointResult r;
      r.point = p;
      r.error = error;
      missing.push_back(std::move(r));
    }
    failed_tasks.push_back(task);
    failed_notes.push_back(fmt::format("{} ({})", task, state));
  }
  if (metric_columns.empty()) metric_columns = reports::report_columns();
  if (!missing.empty())
    files.emplace_back(dir + " (tasks without a table)", sweep_csv(spec, missing, metric_columns));
  const std::string merged = merge_sweep_csvs(files);
  write_file_atomically(output, merged);
  const std::vector<std::vector<std::string>> table = parse_csv(merged, output);
  const size_t status_column = spec.swept_keys().size() + 1;
  int error_rows = 0;
  for (size_t r = 1; r < table.size(); ++r) error_rows += table[r][status_column] == "ok" ? 0 : 1;
  fmt::print(stderr, "sweep {} on Slurm: {} point(s) in {} task(s), {} error row(s) -> {}\n",
             spec.name, table.size() - 1, record.tasks, error_rows, output);
  if (!failed_tasks.empty())
    fmt::print(stderr,
               "{} task(s) left no shard table: {}\nresubmit only them: podsim sweep {} --slurm "
               "--resume -o {}\n",
               failed_tasks.size(), fmt::join(failed_notes, ", "), record.sweep_file, output);
  return error_rows == 0 ? 0 : 1;
}

// UserError unless the folder can be made and written.
void check_writable(const std::string& dir, const std::string& output) {
  const SourceLocation where{"-o " + output, 0, 0};
  const std::string hint =
      "choose -o in a folder you can write, on a filesystem the cluster's nodes share; nothing "
      "was submitted";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw UserError(where,
                    fmt::format("cannot make the results folder {}: {}", dir,
                                ec ? ec.message() : "a file has that name"),
                    hint);
  const fs::path probe = fs::path(dir) / ".podsim-write-test";
  FILE* f = std::fopen(probe.c_str(), "w");
  if (!f || std::fputs("x", f) < 0 || std::fclose(f) != 0)
    throw UserError(where, fmt::format("cannot write in the results folder {}", dir), hint);
  fs::remove(probe, ec);
}

void check_partition(const std::string& partition, CommandRunner& runner) {
  if (partition.empty()) return;
  const SourceLocation where{"--partition " + partition, 0, 0};
  const CommandResult r = runner.run({"sinfo", "-h", "-o", "%R"});
  if (r.exit_code != 0)
    throw UserError(where, fmt::format("sinfo failed: {}", one_line(r.err + r.out)),
                    "is the cluster reachable (SLURM_CONF, scripts/slurm-local.sh status)? "
                    "nothing was submitted");
  std::vector<std::string> names;
  std::stringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line))
    if (!one_line(line).empty()) names.push_back(one_line(line));
  if (std::find(names.begin(), names.end(), partition) == names.end())
    throw UserError(where, fmt::format("this cluster has no partition '{}'", partition),
                    fmt::format("its partitions: {} (sinfo); nothing was submitted",
                                names.empty() ? std::string("none")
                                              : fmt::format("{}", fmt::join(names, ", "))));
}

}  // namespace

std::unique_ptr<CommandRunner> system_command_runner() {
  return std::make_unique<SystemCommandRunner>();
}

std::string slurm_results_dir(const std::string& output) {
  fs::path p(output);
  if (p.extension() == ".csv") p.replace_extension();
  return p.string() + ".slurm";
}

std::string array_ranges(const std::vector<int>& tasks) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < tasks.size();) {
    size_t j = i;
    while (j + 1 < tasks.size() && tasks[j + 1] == tasks[j] + 1) ++j;
    parts.push_back(j == i ? std::to_string(tasks[i]) : fmt::format("{}-{}", tasks[i], tasks[j]));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

std::map<int, std::string> parse_squeue_states(const std::string& text) {
  std::map<int, std::string> out;
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t bar = line.find('|');
    if (bar == std::string::npos) continue;
    const std::string state = one_line(line.substr(bar + 1));
    for (int t : parse_ranges(line.substr(0, bar))) out[t] = state;
  }
  return out;
}

std::map<int, std::string> parse_sacct_states(const std::string& text, const std::string& job_id) {
  std::map<int, std::string> out;
  std::stringstream lines(text);
  std::string line;
  const std::string prefix = job_id + "_";
  while (std::getline(lines, line)) {
    const size_t bar = line.find('|');
    if (bar == std::string::npos || !line.starts_with(prefix)) continue;
    std::string tasks = line.substr(prefix.size(), bar - prefix.size());
    if (tasks.starts_with("[") && tasks.ends_with("]")) tasks = tasks.substr(1, tasks.size() - 2);
    std::string state = one_line(line.substr(bar + 1));
    state = state.substr(0, state.find(' '));  // "CANCELLED by 0"
    for (int t : parse_ranges(tasks)) out[t] = state;
  }
  return out;
}

std::string slurm_array_script(const SlurmScript& s) {
  std::string out = "#!/bin/bash\n";
  out += fmt::format(
      "# podsim sweep on Slurm, written by `podsim sweep --slurm`: array task i of {0}\n"
      "# runs shard i/{0} of the grid into shard-i.csv of this folder.\n"
      "# Rerun only the tasks that left no table: podsim sweep ... --slurm --resume\n",
      s.tasks);
  out += fmt::format("#SBATCH --job-name={}\n", s.job_name);
  out += fmt::format("#SBATCH --array=1-{}\n", s.tasks);
  out += fmt::format("#SBATCH --output={}\n", (fs::path(s.results_dir) / "task-%a.log").string());
  if (!s.partition.empty()) out += fmt::format("#SBATCH --partition={}\n", s.partition);
  if (!s.time_limit.empty()) out += fmt::format("#SBATCH --time={}\n", s.time_limit);
  if (s.jobs > 1) out += fmt::format("#SBATCH --cpus-per-task={}\n", s.jobs);
  for (const std::string& a : s.sbatch_args) out += fmt::format("#SBATCH {}\n", a);
  const std::string shard = shell_quote(s.results_dir + "/shard-") + "\"$i\".csv";
  out += "i=\"${SLURM_ARRAY_TASK_ID:?submit this script with sbatch}\"\n";
  out += fmt::format("{} sweep {} --shard \"$i/{}\" -j {}", shell_quote(s.podsim_binary),
                     shell_quote(s.sweep_file), s.tasks, s.jobs);
  if (s.timeout_seconds > 0) out += fmt::format(" --timeout {:g}", s.timeout_seconds);
  out += fmt::format(" -o {}\n", shard);
  out += "status=$?\n";
  out += "# 1: some point failed, its row says why; the shard table is complete.\n";
  out += fmt::format("if [ \"$status\" -eq 1 ] && [ -f {} ]; then exit 0; fi\n", shard);
  out += "exit \"$status\"\n";
  return out;
}

int run_sweep_on_slurm(const SlurmSweepRequest& r, CommandRunner& runner) {
  if (r.output.empty() || r.output == "-")
    throw UserError("--slurm merges the tasks' tables into a file",
                    "add -o results.csv (the tasks write next to it, in results.slurm/)");
  const std::string output = absolute(r.output);
  const std::string dir = slurm_results_dir(output);
  const std::string sweep_file = absolute(r.sweep_file);
  const SweepSpec spec = load_sweep(sweep_file);
  const std::vector<SweepPoint> points = expand_sweep(spec);
  if (points.empty())
    throw UserError(SourceLocation{r.sweep_file, 0, 0}, "the sweep has no points");
  check_sweep_keys(spec, points);
  if (r.jobs < 1) throw UserError(fmt::format("-j must be at least 1, not {}", r.jobs));
  if (r.tasks < 0) throw UserError(fmt::format("--tasks must be at least 1, not {}", r.tasks));
  int tasks = r.tasks > 0 ? r.tasks : static_cast<int>(std::min<size_t>(points.size(), 16));
  if (r.resume && r.tasks == 0 && fs::exists(record_file(dir)))
    tasks = read_record(dir).tasks;  // --resume alone keeps the job's task count
  if (static_cast<size_t>(tasks) > points.size()) {
    fmt::print(stderr, "--tasks {}: the sweep has {} point(s), so {} task(s)\n", tasks,
               points.size(), points.size());
    tasks = static_cast<int>(points.size());
  }
  for (const std::string& a : r.sbatch_args)
    if (a.find('\n') != std::string::npos || !a.starts_with("-"))
      throw UserError(SourceLocation{"--sbatch-arg " + a, 0, 0},
                      "an sbatch argument is one option on one line",
                      "e.g. --sbatch-arg=--account=myproject");
  for (const char* program : {"sbatch", "squeue"})
    if (!runner.on_path(program))
      throw UserError(
          fmt::format("--slurm needs {}, which is not on PATH; nothing was submitted", program),
          "run on the cluster's login node (or `module load slurm`); to try it "
          "here: scripts/slurm-local.sh start, then export SLURM_CONF as it says");
  check_partition(r.partition, runner);
  check_writable(dir, r.output);

  // An earlier job of this folder must be over: its tasks would write the same tables.
  std::vector<int> to_submit;
  if (fs::exists(record_file(dir))) {
    const JobRecord old = read_record(dir);
    for (const auto& [task, state] : current_states(old, runner))
      if (!state.empty() && !ended_state(state))
        throw UserError(fmt::format("{}: task {} of Slurm job {} is still {}", dir, task,
                                    old.job_of_task.at(task), state),
                        fmt::format("wait for it (podsim sweep merge {} -o {}) or scancel {}; "
                                    "nothing was submitted",
                                    dir, r.output, old.job_of_task.at(task)));
    if (r.resume) {
      if (old.sweep_file != sweep_file || old.tasks != tasks)
        throw UserError(fmt::format("--resume: {} holds {} in {} task(s), not {} in {}", dir,
                                    old.sweep_file, old.tasks, sweep_file, tasks),
                        fmt::format("resume with the same sweep and --tasks {}", old.tasks));
      for (int t = 1; t <= tasks; ++t)
        if (!fs::exists(shard_file(dir, t))) to_submit.push_back(t);
    }
  } else if (r.resume) {
    throw UserError(fmt::format("--resume: no earlier Slurm job in {}", dir),
                    "drop --resume to submit the whole sweep");
  }
  JobRecord record;
  if (r.resume) {
    record = read_record(dir);
    if (to_submit.empty()) {
      fmt::print(stderr, "every task of {} has its shard table: nothing to resubmit\n", dir);
      return merge_results(record, dir, output, {});
    }
  } else {
    for (int t = 1; t <= tasks; ++t) to_submit.push_back(t);
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if ((name.starts_with("shard-") && name.ends_with(".csv")) ||
          (name.starts_with("task-") && name.ends_with(".log")))
        fs::remove(entry.path());
    }
    write_file_atomically(record_file(dir),
                          fmt::format("# podsim sweep --slurm: the sweep, its task count and "
                                      "the Slurm job of each task\nsweep {}\ntasks {}\n",
                                      sweep_file, tasks));
    record = read_record(dir);
  }
  SlurmScript script;
  script.job_name = "podsim-" + spec.name;
  std::replace_if(
      script.job_name.begin(), script.job_name.end(),
      [](char c) { return !std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_'; },
      '_');
  script.podsim_binary =
      r.podsim_binary.empty() ? driver::current_executable() : absolute(r.podsim_binary);
  script.sweep_file = sweep_file;
  script.results_dir = dir;
  script.tasks = tasks;
  script.jobs = r.jobs;
  script.timeout_seconds = r.timeout_seconds;
  script.partition = r.partition;
  script.time_limit = r.time_limit;
  script.sbatch_args = r.sbatch_args;
  write_file_atomically(script_file(dir), slurm_array_script(script));
  const std::string ranges = array_ranges(to_submit);
  const CommandResult submitted =
      runner.run({"sbatch", "--parsable", "--array=" + ranges, script_file(dir)});
  std::string job_id = one_line(submitted.out);
  job_id = job_id.substr(0, job_id.find(';'));  // "123;cluster"
  if (submitted.exit_code != 0 || job_id.empty() ||
      job_id.find_first_not_of("0123456789") != std::string::npos)
    throw UserError(
        SourceLocation{script_file(dir), 0, 0},
        fmt::format("sbatch refused the job: {}", one_line(submitted.err + submitted.out)),
        "fix what it names (--partition, --time-limit, --sbatch-arg); nothing was "
        "submitted");
  append_record(dir, fmt::format("job {} {}\n", job_id, ranges));
  for (int t : to_submit) record.job_of_task[t] = job_id;
  fmt::print(stderr, "submitted Slurm job {} (tasks {} of {}): {}\n", job_id, ranges, tasks,
             script_file(dir));
  if (r.wait)
    fmt::print(stderr,
               "(an interrupt leaves it running; podsim sweep merge {} -o {} finishes it)\n", dir,
               r.output);
  if (!r.wait) {
    fmt::print("{}\n", job_id);
    fmt::print(stderr, "when it is done: podsim sweep merge {} -o {}\n", dir, r.output);
    return 0;
  }
  return merge_results(record, dir, output, wait_for_job(record, dir, runner, r.poll_seconds));
}

int finish_slurm_sweep(const std::string& results_dir, const std::string& output,
                       CommandRunner& runner, double poll_seconds) {
  if (output.empty() || output == "-")
    throw UserError("merging a Slurm results folder writes a file", "add -o results.csv");
  const JobRecord record = read_record(results_dir);
  const std::map<int, std::string> states =
      runner.on_path("squeue") ? wait_for_job(record, results_dir, runner, poll_seconds)
                               : std::map<int, std::string>{};
  return merge_results(record, results_dir, output, states);
}

}  // namespace podsim::studies
