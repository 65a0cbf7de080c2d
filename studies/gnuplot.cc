// Running gnuplot and naming a sweep's plot (studies/gnuplot.h).
#include "studies/gnuplot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "common/error.h"
#include "common/files.h"
#include "driver/child_process.h"
#include "driver/run_workload.h"
#include "hw_models/config.h"
#include "studies/calibration.h"
#include "studies/regress.h"
#include "workloads/workload.h"

namespace podsim::studies {

bool gnuplot_installed() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

bool run_gnuplot(const std::string& script, const std::string& script_path) {
  write_file_atomically(script_path, script);
  if (std::system(fmt::format("gnuplot '{}'", script_path).c_str()) != 0) return false;
  std::filesystem::remove(script_path);
  return true;
}

namespace {

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ea, eb;
  const auto ca = std::filesystem::weakly_canonical(a, ea);
  const auto cb = std::filesystem::weakly_canonical(b, eb);
  return !ea && !eb && ca == cb;
}

// The measured point of `measured_file` for the sweep's base (see the header).
std::optional<reports::SweepPlotMeasured> measured_point(const SweepSpec& spec,
                                                         const hw::HardwareConfig& hardware,
                                                         const std::string& measured_file) {
  if (measured_file.empty() || !spec.fixed_overrides.empty()) return std::nullopt;
  reports::SweepPlotMeasured out;
  const std::string prefix = "hardware.";
  const std::vector<std::string> known = hw::hardware_keys();
  auto hardware_key = [&](const std::string& key) {
    return key.substr(std::min(key.size(), prefix.size()));
  };
  for (const SweepAxis& axis : spec.axes) {
    for (const std::string& key : axis.keys)  // a zipped axis: every key
      if (!key.starts_with(prefix) ||
          std::find(known.begin(), known.end(), hardware_key(key)) == known.end())
        return std::nullopt;
    out.base_values.push_back(hw::hardware_value_text(hardware, hardware_key(axis.keys.front())));
  }
  const MeasuredSet set = load_measured(measured_file);
  for (const MeasuredPoint& p : set.points) {
    if (!p.inconsistent.empty() || !same_file(p.workload_path, spec.base_workload)) continue;
    out.label = fmt::format("measured: {} ({:.4g} {})", p.config, p.measured,
                            p.metric == "tokens_per_second"  ? "tokens/s"
                            : p.metric == "steps_per_second" ? "steps/s"
                                                             : p.metric);
    out.metric = p.metric;
    out.value = p.measured;
    return out;
  }
  return std::nullopt;
}

}  // namespace

reports::SweepPlotAxes sweep_plot_axes(const SweepSpec& spec, const std::string& measured_file) {
  reports::SweepPlotAxes axes{spec.name, {}, std::nullopt};
  for (const SweepAxis& axis : spec.axes) axes.axis_keys.push_back(axis.keys.front());
  try {
    const workloads::Workload workload =
        workloads::load_workload(spec.base_workload, spec.fixed_overrides);
    const hw::HardwareConfig hardware = driver::workload_hardware(workload);
    axes.title = fmt::format("{}: {} on {}, {} devices", spec.name, workload.name, hardware.name,
                             workload.mesh.device_count());
    axes.measured = measured_point(spec, hardware, measured_file);
  } catch (const UserError&) {
    // The sweep's points report the base's errors; the plot keeps the sweep's name.
  }
  return axes;
}

std::string shipped_measured_file() {
  const std::string dir =
      find_baselines_dir(driver::current_executable(), std::filesystem::current_path().string());
  if (dir.empty()) return "";
  const std::filesystem::path file = std::filesystem::path(dir) / "measured.yaml";
  return std::filesystem::exists(file) ? file.string() : "";
}

}  // namespace podsim::studies
