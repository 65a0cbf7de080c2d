// Shared helpers of the workload-reader tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "workloads/workload.h"

namespace podsim::workloads {

// Runs parse_workload on `yaml` (named w.yaml) expecting a UserError; returns it.
inline UserError expect_parse_error(const std::string& yaml,
                                    const std::vector<std::string>& overrides = {}) {
  try {
    parse_workload(yaml, "w.yaml", overrides);
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a UserError";
  return UserError("none");
}

}  // namespace podsim::workloads
