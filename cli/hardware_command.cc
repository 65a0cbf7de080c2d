// `podsim hardware` arguments -> hw_models/describe.h.
#include "cli/hardware_command.h"

#include <fmt/format.h>

#include "hw_models/config.h"
#include "hw_models/describe.h"

namespace podsim::cli {

CLI::App* add_hardware_command(CLI::App& app, HardwareOptions& o) {
  CLI::App* hardware = app.add_subcommand("hardware", "inspect hardware presets");
  hardware->require_subcommand(1);
  CLI::App* show = hardware->add_subcommand("show", "print a preset with derived figures");
  show->add_option("preset", o.preset, "preset name (see: podsim hardware list) or YAML path")
      ->required();
  show->parse_complete_callback([&o] { o.action = HardwareOptions::Action::kShow; });
  CLI::App* list = hardware->add_subcommand("list", "list the shipped hardware presets");
  list->parse_complete_callback([&o] { o.action = HardwareOptions::Action::kList; });
  return hardware;
}

int run_hardware_command(const HardwareOptions& o) {
  switch (o.action) {
    case HardwareOptions::Action::kShow:
      fmt::print("{}", hw::describe_hardware(hw::load_hardware(o.preset)));
      break;
    case HardwareOptions::Action::kList:
      fmt::print("{}", hw::describe_presets());
      break;
  }
  return 0;
}

}  // namespace podsim::cli
