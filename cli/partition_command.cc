// `podsim partition` arguments -> driver::partition_workload.
#include "cli/partition_command.h"

#include <fmt/format.h>

#include <cstdio>

#include "common/files.h"
#include "compiler/hlo/hlo_printer.h"
#include "compiler/module_mode.h"
#include "compiler/spmd/verify.h"
#include "driver/partition.h"

namespace podsim::cli {

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
  const compiler::PartitionResult result = driver::partition_workload(
      job, [](const std::string& line) { fmt::print(stderr, "{}\n", line); });
  for (const std::string& line : result.verify_lines) fmt::print(stderr, "{}\n", line);
  if (!result.verify_ok) return 1;
  podsim::write_file_atomically(o.output, compiler::print_hlo(result.module));
  return 0;
}

}  // namespace podsim::cli
