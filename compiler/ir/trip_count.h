// Trip count of a counted while loop (compiler/ir/trip_count.cc says which
// loop forms are recognised); nullopt when it cannot be derived.
#pragma once

#include <cstdint>
#include <optional>

#include "compiler/ir/module.h"

namespace podsim::compiler {

std::optional<int64_t> known_trip_count(const Module& module, const Instruction& while_instr);
// The same when the caller knows the computation holding the while.
std::optional<int64_t> known_trip_count(const Module& module, const Computation& caller,
                                        const Instruction& while_instr);

}  // namespace podsim::compiler
