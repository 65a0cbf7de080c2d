// `podsim partition` arguments -> driver::partition_workload.
#include "cli/partition_command.h"

#include <fmt/format.h>

#include <cstdio>

#include "common/error.h"
#include "common/files.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/module_mode.h"
#include "compiler/spmd/verify.h"
#include "driver/partition.h"

namespace podsim::cli {

std::vector<bool> parse_bool_list(const std::string& text, const std::string& option) {
  std::vector<bool> out;
  std::string item;
  auto flush = [&](bool last) {
    if (item.empty() && last && out.empty()) return;
    if (item == "true" || item == "1")
      out.push_back(true);
    else if (item == "false" || item == "0")
      out.push_back(false);
    else
      throw UserError(fmt::format("{}: '{}' is not a bool in '{}'", option, item, text),
                      "give one bool for all, or one per parameter / result leaf: true,false");
    item.clear();
  };
  for (char ch : text) {
    if (ch == '{' || ch == '}' || ch == ' ') continue;
    if (ch == ',')
      flush(false);
    else
      item += ch;
  }
  flush(true);
  return out;
}

CLI::App* add_partition_command(CLI::App& app, PartitionOptions& o) {
  CLI::App* partition =
      app.add_subcommand("partition", "propagate shardings and partition into one SPMD program");
  partition->add_option("input", o.input, "workload YAML or XLA HLO text module")->required();
  partition->add_option("--set", o.sets, "override a key");
  partition->add_option("--mesh", o.mesh, "logical mesh, e.g. x=4,y=2");
  partition->add_option("-o,--output", o.output, "write the per-device program here");
  partition->add_flag("--verify", o.verify,
                      "check numeric equivalence with the reference interpreter");
  partition->add_option("--verify-limit", o.verify_limit,
                        "--verify's interpreter memory limit (default 2GiB)");
  partition->add_flag(
      "--verify-full-only", o.verify_full_only,
      "--verify refuses a module over its limits instead of checking it at reduced shapes");
  partition->add_flag("--propagate-only", o.propagate_only,
                      "print the module with all shardings, unpartitioned");
  partition->add_flag("--no-propagate-to-parameters", o.no_propagate_to_parameters,
                      "unannotated entry parameters stay replicated (XLA's "
                      "allow_spmd_sharding_propagation_to_parameters=false)");
  partition->add_flag("--no-propagate-to-output", o.no_propagate_to_output,
                      "an unannotated entry result stays replicated (XLA's "
                      "allow_spmd_sharding_propagation_to_output=false)");
  partition->add_option(
      "--allow-spmd-sharding-propagation-to-parameters", o.allow_to_parameters,
      "XLA's vector: one bool for all entry parameters or one each (e.g. false,true); "
      "an allowed parameter's annotation may be refined, an uneven tiling is dropped");
  partition->add_option("--allow-spmd-sharding-propagation-to-output", o.allow_to_output,
                        "XLA's vector: one bool for the whole entry result or one per "
                        "result leaf (e.g. true,false); same rules as for parameters");
  partition
      ->add_option("--is-spmd", o.is_spmd,
                   "XLA's is_spmd (default true); false: propagate for a non-SPMD program")
      ->check(CLI::IsMember({"true", "false"}));
  partition->add_flag("--no-spmd", o.no_spmd, "same as --is-spmd=false");
  partition
      ->add_option(
          "--mode", o.mode,
          "auto (refuse a module XLA already partitioned) | partition (partition it anyway)")
      ->check(CLI::IsMember({"auto", "partition", "as-is"}));
  return partition;
}

int run_partition_command(const PartitionOptions& o) {
  driver::PartitionJob job;
  job.request.verify_limit_bytes = o.verify_limit.empty()
                                       ? compiler::kDefaultVerifyLimitBytes
                                       : compiler::parse_byte_size(o.verify_limit);
  job.input = o.input;
  job.overrides = o.sets;
  job.mesh = o.mesh;
  job.mode = compiler::parse_module_mode(o.mode);
  job.request.verify = o.verify;
  job.request.verify_full_only = o.verify_full_only;
  job.request.propagate_only = o.propagate_only;
  job.request.propagate_to_parameters = !o.no_propagate_to_parameters;
  job.request.propagate_to_output = !o.no_propagate_to_output;
  job.request.allow_to_parameters =
      parse_bool_list(o.allow_to_parameters, "--allow-spmd-sharding-propagation-to-parameters");
  job.request.allow_to_output =
      parse_bool_list(o.allow_to_output, "--allow-spmd-sharding-propagation-to-output");
  job.request.is_spmd = !o.no_spmd && o.is_spmd != "false";
  const compiler::PartitionResult result = driver::partition_workload(
      job, [](const std::string& line) { fmt::print(stderr, "{}\n", line); });
  for (const std::string& line : result.verify_lines) fmt::print(stderr, "{}\n", line);
  if (!result.verify_ok) return 1;
  podsim::write_file_atomically(o.output, compiler::print_hlo(result.module));
  return 0;
}

}  // namespace podsim::cli
