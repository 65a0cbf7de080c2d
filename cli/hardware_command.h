// `podsim hardware show PRESET` and `podsim hardware list`.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace podsim::cli {

struct HardwareOptions {
  enum class Action { kShow, kList };
  Action action = Action::kList;  // the subcommand the user chose
  std::string preset;             // show: preset name or YAML path
};

CLI::App* add_hardware_command(CLI::App& app, HardwareOptions& options);
int run_hardware_command(const HardwareOptions& options);

}  // namespace podsim::cli
