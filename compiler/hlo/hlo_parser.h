// XLA HLO text -> podsim IR Module, for every opcode in compiler/ir/opcode.h.
//
// Accepts HLO as JAX/XLA dump it: `HloModule name, attr=...` (is_scheduled,
// num_partitions and replica_count are kept; other header attributes are
// read and dropped), computations with or without signatures and with
// `, execution_thread=...` after them, `ENTRY`, `ROOT`, names with or
// without '%', operands with or without shape prefixes, layouts with tiling
// (only minor_to_major is kept), bounded dims "<=8" (read as the bound),
// complex literals "(re, im)", `//` and `/* */` comments. XLA's short async
// form ("all-to-all-start", "call-done") becomes async-start/update/done
// with Attributes::async_wrapped. An instruction may leave out its result
// shape where XLA infers it ("ROOT t = tuple(a, b)"); it is inferred once
// names are resolved. Operands and called computations may be referenced
// before they are defined; each computation is topologically ordered after
// parsing. Any syntax error or unresolved name throws podsim::UserError with
// file:line:column and a message naming what was expected and what was found.
// Attributes podsim does not model are either skipped (operand precision,
// statistics, schedule, result accuracy, metadata other than op_name) or
// kept verbatim in Attributes::extra so they print back.
#pragma once

#include <string>
#include <string_view>

#include "compiler/ir/module.h"

namespace podsim::compiler {

Module parse_hlo(std::string_view text, std::string file_name = "<input>");
// Reads and parses a file; an unreadable file is a UserError naming the path.
Module parse_hlo_file(const std::string& path);

}  // namespace podsim::compiler
