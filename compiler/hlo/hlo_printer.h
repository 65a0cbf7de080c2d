// podsim IR Module -> canonical XLA-style HLO text.
//
// Output: `HloModule name[, replica_count=N][, num_partitions=N]
// [, is_scheduled=true]`, then every computation with its signature, called
// computations before their callers and the entry last (marked ENTRY); names
// with '%', layouts when present, `ROOT` on the root, attributes in XLA's
// spelling in a fixed order per opcode (called computations as to_apply=,
// calls=, condition=/body=, true_computation=/false_computation= or
// branch_computations=, select=/scatter=), async ops with async_wrapped in
// XLA's short form ("all-to-all-start"), Attributes::extra, the sharding and
// frontend_attributes verbatim. parse_hlo(print_hlo(m)) prints identically.
// Linear in module size (one output string, appends only).
#pragma once

#include <string>

#include "compiler/ir/module.h"

namespace podsim::compiler {

std::string print_hlo(const Module& module);
// One instruction without the "ROOT " prefix, e.g.
// "%add.3 = f32[8]{0} add(%x, %y), sharding={replicated}".
std::string print_instruction(const Module& module, const Computation& computation, InstrId id);

}  // namespace podsim::compiler
