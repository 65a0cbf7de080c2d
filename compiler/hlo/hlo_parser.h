// XLA HLO text -> podsim IR Module, for the op set in compiler/ir/opcode.h.
//
// Accepts HLO as JAX/XLA dump it: `HloModule name, attr=...`, computations
// with or without signatures, `ENTRY`, `ROOT`, names with or without '%',
// operands with or without shape prefixes, layouts with tiling, `//` and
// `/* */` comments. Operands and called computations may be referenced
// before they are defined; each computation is topologically ordered after
// parsing. Any syntax error or unresolved name throws podsim::UserError with
// file:line:column and a message naming what was expected and what was found.
// Attributes podsim does not model are either skipped (metadata,
// frontend_attributes, precision config, statistics, schedule) or kept
// verbatim in Attributes::extra so they print back.
#pragma once

#include <string>
#include <string_view>

#include "compiler/ir/module.h"

namespace podsim::compiler {

Module parse_hlo(std::string_view text, std::string file_name = "<input>");
// Reads and parses a file; an unreadable file is a UserError naming the path.
Module parse_hlo_file(const std::string& path);

}  // namespace podsim::compiler
