// `podsim partition`: propagate shardings and partition a workload's forward
// model or an HLO module into one per-device program (optionally checked
// with the interpreter).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace podsim::cli {

struct PartitionOptions {
  std::string input;              // workload YAML or HLO module
  std::vector<std::string> sets;  // --set key=value
  std::string mesh;               // "x=4,y=2"
  std::string output;
  bool verify = false;
  std::string verify_limit;       // interpreter memory limit ("4GiB"; default 2 GiB)
  bool verify_full_only = false;  // refuse instead of checking at reduced shapes
  bool propagate_only = false;
  bool no_propagate_to_parameters = false;
  bool no_propagate_to_output = false;
  std::string mode;  // auto | partition | as-is
};

CLI::App* add_partition_command(CLI::App& app, PartitionOptions& options);
// Exit 0, or 1 when --verify finds a mismatch.
int run_partition_command(const PartitionOptions& options);

}  // namespace podsim::cli
