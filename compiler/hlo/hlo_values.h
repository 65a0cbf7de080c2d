// Readers for the structured values of HLO text: shapes, literals and the
// attribute value grammars (slice, padding, window, dim labels, replica
// groups, ...). Each reads from an HloCursor and throws UserError on bad input.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "compiler/hlo/hlo_cursor.h"
#include "compiler/ir/attributes.h"
#include "compiler/ir/literal.h"
#include "compiler/ir/shape.h"

namespace podsim::compiler::hlo_detail {

// "f32[8,16]{1,0}", "pred[]", "(f32[2], s32[])", "f32[<=8]" (a bounded
// dynamic dim, read as its bound); the layout is kept only as minor_to_major
// (tiling, memory-space and element-size suffixes after ':' are dropped).
Shape read_shape(HloCursor& c);
// True if the next token starts a shape (a known or unknown dtype name
// followed directly by '[', or a '(' tuple).
bool at_shape(HloCursor& c);

// "{1,2,3}" (also "{}").
std::vector<int64_t> read_int_list(HloCursor& c);
// "{{0,1},{2,3}}".
std::vector<std::vector<int64_t>> read_int_list_list(HloCursor& c);
// "{[0:4], [2:8:2]}".
std::vector<SliceDim> read_slice(HloCursor& c);
// "0_0x1_2_1": low_high[_interior] per dim, 'x'-separated.
std::vector<PadDim> read_padding(HloCursor& c);
// "{size=3x3 stride=2x1 pad=1_1x0_0 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}".
std::vector<WindowDim> read_window(HloCursor& c);
// "b01f_01io->b01f".
ConvDims read_dim_labels(HloCursor& c);
// "{}", "{{0,1},{2,3}}", "[2,4]<=[8]", "[2,4]<=[4,2]T(1,0)".
ReplicaGroups read_replica_groups(HloCursor& c);
// "{{0,1},{1,0}}".
std::vector<std::pair<int64_t, int64_t>> read_source_target_pairs(HloCursor& c);
// The value part of constant(...) for the given shape: "1", "-inf",
// "{ {1, 2}, {3, 4} }", "(1, {2, 3})" for tuples, "{(1, 0), (0.5, -2)}" for
// complex arrays (a plain number is (number, 0)). Values are rounded to the
// dtype; a count mismatch is a UserError.
Literal read_literal(HloCursor& c, const Shape& shape);

}  // namespace podsim::compiler::hlo_detail
