// Reading of one `key=value` instruction attribute into an instruction being
// parsed. Names of called computations are recorded unresolved (they may be
// defined later in the file) and resolved by the parser afterwards.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/hlo_cursor.h"
#include "compiler/ir/module.h"

namespace podsim::compiler::hlo_detail {

// A name used before resolution, with where it appeared.
struct NameRef {
  std::string name;
  size_t pos = 0;
};

struct PendingInstruction {
  Instruction instr;
  std::vector<NameRef> operand_names;
  size_t name_pos = 0;
  bool is_root = false;
  std::optional<NameRef> to_apply;   // to_apply= / calls=
  std::optional<NameRef> condition;  // while condition=
  std::optional<NameRef> body;       // while body=
  // conditional: true_computation=/false_computation= (pred form) or
  // branch_computations={...} (index form), in branch order.
  std::optional<NameRef> true_computation, false_computation;
  std::vector<NameRef> branch_computations;
  std::optional<NameRef> select, scatter;  // select-and-scatter
  // False when the text gives no result shape ("ROOT t = tuple(a, b)"): the
  // parser infers it once operands and called computations are resolved.
  bool has_shape = true;
};

// Reads the value of attribute `key` (the cursor is just after '=').
void read_attribute(HloCursor& c, PendingInstruction& pending, std::string_view key);

}  // namespace podsim::compiler::hlo_detail
