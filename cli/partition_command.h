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
  // XLA's option names: "true,false" lists (braces allowed), is_spmd.
  std::string allow_to_parameters;
  std::string allow_to_output;
  std::string is_spmd;  // "true" | "false"; empty: true
  bool no_spmd = false;
  std::string mode;  // auto | partition | as-is
};

// "true,false" / "{true, false}" / "1,0" -> flags; UserError naming `option`
// otherwise. Empty text -> empty vector.
std::vector<bool> parse_bool_list(const std::string& text, const std::string& option);

CLI::App* add_partition_command(CLI::App& app, PartitionOptions& options);
// Exit 0, or 1 when --verify finds a mismatch.
int run_partition_command(const PartitionOptions& options);

}  // namespace podsim::cli
