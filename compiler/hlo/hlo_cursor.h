// Character-level cursor over HLO text: whitespace and comment skipping,
// small token readers (names, integers, numbers, raw attribute values) and
// UserError reporting with file:line:column. The HLO grammar has several
// context-dependent tokens (padding "0_1x2_3", dim labels "b01f_01io->b01f",
// iota groups "[2,4]<=[8]"), so the parser reads characters directly instead
// of going through a context-free tokenizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace podsim::compiler::hlo_detail {

class HloCursor {
 public:
  HloCursor(std::string_view text, std::string file_name);

  size_t pos() const { return pos_; }
  void set_pos(size_t p) { pos_ = p; }
  std::string_view text() const { return text_; }
  SourceLocation location(size_t pos) const;
  SourceLocation location() const { return location(pos_); }

  // Skips spaces, newlines, `// line` and `/* block */` comments.
  void skip_space();
  bool at_end();  // after skipping space
  // Next significant character ('\0' at end), after skipping space.
  char peek();
  // Character at pos_ without skipping space ('\0' at end).
  char peek_raw() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  // Consumes c (after skipping space) if it is next.
  bool consume(char c);
  // Consumes the two-character sequence s (after skipping space) if next.
  bool consume_text(std::string_view s);
  void expect(char c);
  void expect_text(std::string_view s);
  // Consumes word if the next name token equals it exactly.
  bool consume_keyword(std::string_view word);

  // A name: optional '%' then [A-Za-z0-9_.-]+ (must not start with '-').
  // Returns the name without '%'; fails naming `what` if there is none.
  std::string_view name(std::string_view what);
  // Peeks at the next name token (without '%'); empty if none.
  std::string_view peek_name();
  int64_t integer(std::string_view what);
  // A floating or integer number, or inf / -inf / nan, or true / false.
  double number(std::string_view what);
  // The verbatim text of an attribute value: a balanced {...}, a "string",
  // or a run of characters up to ',' / whitespace / a closing bracket at
  // bracket depth 0.
  std::string_view raw_value();
  // A "string" with C escapes; returns the unescaped contents.
  std::string quoted_string(std::string_view what);

  // Describes the token at the current position for error messages.
  std::string describe_next();
  [[noreturn]] void fail_at(size_t pos, const std::string& message,
                            const std::string& hint = "") const;
  // "expected <what> but found '<next>'" at the next significant position.
  [[noreturn]] void fail_expected(std::string_view what, const std::string& hint = "");

 private:
  std::string_view text_;
  std::string file_;
  size_t pos_ = 0;
  std::vector<size_t> line_starts_;
};

bool is_name_char(char c);

}  // namespace podsim::compiler::hlo_detail
