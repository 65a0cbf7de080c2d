// libFuzzer target: the workload YAML loader. Any input is a valid
// Workload or raises podsim::UserError (with a position); a yaml-cpp
// exception or any other escape is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "workloads/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    podsim::workloads::parse_workload(text, "fuzz.yaml");
  } catch (const podsim::UserError&) {}
  return 0;
}
