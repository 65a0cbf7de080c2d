// `_podsim`: the C++ half of the Python package `podsim` (python/podsim/__init__.py
// holds the Python half: sources, Report, running a sweep's compile groups).
// In-process calls into driver/ and studies/ (a sweep's expansion and
// grouping too), the GIL released while compiling or simulating.
// The SystemC kernel is one per process and not thread-safe: every compile
// and simulation holds one process-wide lock, so Python threads take turns
// (docs/python.md).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/files.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/ir/opcode.h"
#include "compiler/module_mode.h"
#include "compiler/spmd/verify.h"
#include "driver/child_process.h"
#include "driver/partition.h"
#include "driver/run_report.h"
#include "driver/run_workload.h"
#include "driver/serve.h"
#include "driver/trace_request.h"
#include "hw_models/config.h"
#include "hw_models/describe.h"
#include "reports/formats.h"
#include "studies/calibrate.h"
#include "studies/sweep.h"
#include "studies/sweep_spec.h"

namespace py = pybind11;

namespace podsim::python {

namespace {

// The one SystemC kernel of this process (sim/simulator.h: not thread-safe).
std::mutex& kernel_mutex() {
  static std::mutex mutex;
  return mutex;
}

// `--set hardware.a=1` words for a compiled workload's variant, read as a
// `run --serve` line reads them (same messages).
std::vector<std::pair<std::string, std::string>> hardware_variant(
    const std::vector<std::string>& sets) {
  std::string line;
  for (const std::string& set : sets) {
    if (set.find_first_of(" \t\n") != std::string::npos)
      throw UserError(SourceLocation{set, 0, 0}, "a hardware value holds no blanks",
                      "e.g. {'hardware.ici.link_bandwidth': 2e11}");
    line += set + " ";
  }
  return driver::parse_serve_line(line);
}

// One finished run: its report in every format, and how to run it again
// with a trace (the compiled workload and the variant).
class Result {
 public:
  Result(driver::RunResult run) : run_(std::move(run)) {}
  std::string format(const std::string& name, bool wall_times) const {
    reports::FormatOptions options;
    options.wall_times = wall_times;
    return reports::format_report(run_.report, reports::format_from_name(name), options);
  }
  const driver::RunResult& run() const { return run_; }

 private:
  driver::RunResult run_;
};

// compile() once, simulate() many hardware variants (what `run --serve`
// does in a child process, here in this one).
class Compiled {
 public:
  explicit Compiled(driver::RunRequest request) : request_(std::move(request)) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(kernel_mutex());
    compiled_ = std::make_unique<driver::CompiledWorkload>(driver::compile_workload(request_));
  }

  // every_iteration and symmetry: `run --every-iteration` / `--no-symmetry` (the references of
  // full fidelity's shortcuts; docs/simulator.md).
  Result simulate(const std::vector<std::string>& hardware_sets, const std::string& fidelity,
                  bool every_iteration, bool symmetry) {
    driver::RunRequest request = request_;
    request.fidelity = driver::fidelity_from_name(fidelity);
    request.steady_state_loops = !every_iteration;
    request.symmetry = symmetry;
    const auto variant = hardware_variant(hardware_sets);
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(kernel_mutex());
    return Result(driver::simulate_compiled(*compiled_, request, variant));
  }

  // Simulates again recording the trace `flags` ask for and writes it (as
  // `run --trace`); the report goes to a scratch file.
  void write_trace(const std::vector<std::string>& hardware_sets, const std::string& fidelity,
                   const driver::TraceFlags& flags) {
    driver::RunRequest request = request_;
    request.fidelity = driver::fidelity_from_name(fidelity);
    const auto variant = hardware_variant(hardware_sets);
    driver::RunOutputs outputs;
    outputs.format = reports::Format::kJson;
    outputs.trace = driver::parse_trace_flags(flags);
    if (!outputs.trace)
      throw UserError(SourceLocation{"write_trace", 0, 0}, "write_trace needs a file path",
                      "e.g. report.write_trace('step.trace.json')");
    request.record_trace = true;
    request.trace = outputs.trace->selection;
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(kernel_mutex());
    const driver::RunResult run = driver::simulate_compiled(*compiled_, request, variant);
    driver::ScratchDir scratch("podsim-trace", "the report written beside a trace");
    outputs.output = (scratch.path() / "report.json").string();
    driver::write_run_outputs(run, request.fidelity, outputs);
  }

  double compile_wall_s() const { return compiled_->compile_wall_s; }
  std::string workload_name() const { return compiled_->workload.name; }

 private:
  driver::RunRequest request_;
  std::unique_ptr<driver::CompiledWorkload> compiled_;
};

driver::RunRequest run_request(const std::string& path, const std::vector<std::string>& sets,
                               const std::string& fidelity, const std::string& hardware,
                               const std::string& mesh, int64_t tokens, const std::string& mode) {
  driver::RunRequest request;
  request.workload_path = path;
  request.overrides = sets;
  request.fidelity = driver::fidelity_from_name(fidelity);
  if (!hardware.empty()) request.hlo.hardware = hardware;
  request.hlo.mesh = mesh;
  if (tokens < 0)
    throw UserError(SourceLocation{"tokens", 0, 0}, "tokens is negative",
                    "tokens per step, for tokens/s; 0 = unknown");
  request.hlo.tokens = tokens;
  request.hlo.mode = compiler::parse_module_mode(mode);
  return request;
}

// `podsim partition`: the per-device program's text, the shardings of the
// entry's instructions, the collectives by kind, and --verify's lines.
py::dict partition(const std::string& path, const std::vector<std::string>& sets,
                   const std::string& mesh, bool propagate_only, bool verify,
                   const std::string& mode) {
  driver::PartitionJob job;
  job.input = path;
  job.overrides = sets;
  job.mesh = mesh;
  job.mode = compiler::parse_module_mode(mode);
  job.request.verify = verify;
  job.request.verify_limit_bytes = compiler::kDefaultVerifyLimitBytes;
  job.request.propagate_only = propagate_only;
  std::vector<std::string> notes;
  std::string text;
  std::map<std::string, std::string> shardings;
  std::map<std::string, int64_t> collectives;
  compiler::PartitionResult result;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(kernel_mutex());
    result =
        driver::partition_workload(job, [&](const std::string& line) { notes.push_back(line); });
    text = compiler::print_hlo(result.module);
    for (const compiler::Instruction& instr : result.module.entry().instructions())
      if (instr.sharding) shardings[instr.name] = *instr.sharding;
    for (const compiler::Computation& c : result.module.computations())
      for (const compiler::Instruction& instr : c.instructions())
        if (compiler::is_collective(instr.opcode))
          ++collectives[std::string(compiler::opcode_name(instr.opcode))];
  }
  py::dict out;
  out["hlo"] = text;
  out["shardings"] = shardings;
  out["collectives"] = collectives;
  out["notes"] = notes;
  out["verified"] = result.verified;
  out["verify_ok"] = result.verify_ok;
  out["verify_lines"] = result.verify_lines;
  return out;
}

// `podsim calibrate` into `output` (markdown).
void calibrate(const std::string& measured, const std::string& output, int jobs,
               const std::string& podsim_binary, bool fit, int max_evaluations) {
  studies::CalibrateRequest request;
  request.measured_file = measured;
  request.output = output;
  request.jobs = jobs;
  request.podsim_binary = podsim_binary;
  request.fit = fit;
  request.max_evaluations = max_evaluations;
  driver::require_executable(podsim_binary);
  py::gil_scoped_release release;
  studies::calibrate(request);
}

// A sweep given as podsim.sweep's arguments (written by the Python half as
// sweep-spec text, JSON being YAML): parsed, expanded and grouped by compile
// by studies/ as `podsim sweep` does. A parse error keeps its message and
// hint; its line:column would point into text the caller never saw, so it
// names `name` only. Returns
//   rows:   per point, in point order, per swept key (the spec's order): the
//           position of the point's value in that key's list (to hand back
//           the caller's own value objects), read by expanding a copy of the
//           spec whose values are their row numbers;
//   groups: [(compile --set words, [point positions], [per point: the
//           hardware.* words of its variant])], first-seen order.
py::dict sweep_plan(const std::string& text, const std::string& name) {
  std::vector<std::vector<int64_t>> rows;
  std::vector<studies::CompileGroup> groups;
  {
    py::gil_scoped_release release;  // no simulation kernel: no lock
    studies::SweepSpec spec;
    try {
      spec = studies::parse_sweep(text, name);
    } catch (const UserError& e) {
      throw UserError(SourceLocation{name, 0, 0}, e.message(), e.hint());
    }
    groups = studies::group_by_compile(spec, studies::expand_sweep(spec));
    studies::SweepSpec rows_spec = spec;
    for (studies::SweepAxis& axis : rows_spec.axes)
      for (size_t row = 0; row < axis.values.size(); ++row)
        for (std::string& value : axis.values[row]) value = std::to_string(row);
    for (const studies::SweepPoint& point : studies::expand_sweep(rows_spec)) {
      rows.emplace_back();
      for (const auto& [key, row] : point.values) rows.back().push_back(std::stoll(row));
    }
  }
  py::list group_list;
  for (const studies::CompileGroup& group : groups) {
    std::vector<std::vector<std::string>> variants;
    for (const auto& variant : group.variants) {
      std::vector<std::string> words;
      for (const auto& [key, value] : variant) words.push_back("hardware." + key + "=" + value);
      variants.push_back(std::move(words));
    }
    group_list.append(py::make_tuple(group.compile_overrides, group.points, variants));
  }
  py::dict out;
  out["rows"] = rows;
  out["groups"] = group_list;
  return out;
}

}  // namespace

}  // namespace podsim::python

PYBIND11_MODULE(_podsim, m) {
  using namespace podsim::python;
  namespace driver = podsim::driver;
  m.doc() = "podsim's C++ core (use the `podsim` package)";
  // str(error) is the CLI's message: file:line:column, message, hint.
  py::register_exception<podsim::UserError>(m, "UserError");

  py::class_<Result>(m, "Result")
      .def("format", &Result::format, py::arg("format"), py::arg("wall_times") = false)
      .def_property_readonly("step_time_s",
                             [](const Result& r) { return r.run().report.step_time_s; });

  py::class_<Compiled>(m, "Compiled")
      .def(py::init([](const std::string& path, const std::vector<std::string>& sets,
                       const std::string& fidelity, const std::string& hardware,
                       const std::string& mesh, int64_t tokens, const std::string& mode) {
             return std::make_unique<Compiled>(
                 run_request(path, sets, fidelity, hardware, mesh, tokens, mode));
           }),
           py::arg("path"), py::arg("sets"), py::arg("fidelity"), py::arg("hardware"),
           py::arg("mesh"), py::arg("tokens"), py::arg("mode"))
      .def("simulate", &Compiled::simulate, py::arg("hardware_sets"), py::arg("fidelity"),
           py::arg("every_iteration") = false, py::arg("symmetry") = true)
      .def(
          "write_trace",
          [](Compiled& c, const std::vector<std::string>& sets, const std::string& fidelity,
             const std::string& path, const std::string& devices, const std::string& window,
             const std::string& limit) {
            c.write_trace(sets, fidelity, driver::TraceFlags{path, devices, window, limit});
          },
          py::arg("hardware_sets"), py::arg("fidelity"), py::arg("path"), py::arg("devices"),
          py::arg("window"), py::arg("limit"))
      .def_property_readonly("compile_wall_s", &Compiled::compile_wall_s)
      .def_property_readonly("workload_name", &Compiled::workload_name);

  m.def("partition", &partition, py::arg("path"), py::arg("sets"), py::arg("mesh"),
        py::arg("propagate_only"), py::arg("verify"), py::arg("mode"));
  m.def("calibrate", &calibrate, py::arg("measured"), py::arg("output"), py::arg("jobs"),
        py::arg("podsim_binary"), py::arg("fit"), py::arg("max_evaluations"));
  m.def("sweep_plan", &sweep_plan, py::arg("text"), py::arg("name"));
  m.def("preset_names", &podsim::hw::preset_names);
  m.def("describe_hardware", [](const std::string& name) {
    return podsim::hw::describe_hardware(podsim::hw::load_hardware(name));
  });
  m.def("describe_presets", &podsim::hw::describe_presets);
  m.def("is_hlo_module_path", &driver::is_hlo_module_path);
#ifdef PODSIM_BINARY
  m.attr("built_cli") = PODSIM_BINARY;
#else
  m.attr("built_cli") = "";
#endif
}
