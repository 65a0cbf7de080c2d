// XLA HLO text -> podsim IR Module, for every opcode in compiler/ir/opcode.h. Accepts HLO as
// JAX/XLA dump it (details: docs/hlo-input.md#what-the-parser-accepts); operands and called
// computations may be referenced before they are defined; each computation is topologically
// ordered after parsing. Any syntax error or unresolved name throws podsim::UserError with
// file:line:column and a message naming what was expected and what was found. Attributes
// podsim does not model are skipped or kept verbatim in Attributes::extra so they print back.
#pragma once

#include <string>
#include <string_view>

#include "compiler/ir/module.h"

namespace podsim::compiler {

Module parse_hlo(std::string_view text, std::string file_name = "<input>");
// Reads and parses a file; an unreadable file is a UserError naming the path.
Module parse_hlo_file(const std::string& path);

}  // namespace podsim::compiler
