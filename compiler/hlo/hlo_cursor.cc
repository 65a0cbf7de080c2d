// HloCursor: character-level reading of HLO text with precise error positions.
#include "compiler/hlo/hlo_cursor.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace podsim::compiler::hlo_detail {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

HloCursor::HloCursor(std::string_view text, std::string file_name)
    : text_(text), file_(std::move(file_name)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

SourceLocation HloCursor::location(size_t pos) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
  size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
  return SourceLocation{file_, static_cast<int>(line_index + 1),
                        static_cast<int>(pos - line_starts_[line_index] + 1)};
}

void HloCursor::skip_space() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
      size_t end = text_.find("*/", pos_ + 2);
      if (end == std::string_view::npos) fail_at(pos_, "unterminated '/*' comment");
      pos_ = end + 2;
    } else {
      return;
    }
  }
}

bool HloCursor::at_end() {
  skip_space();
  return pos_ >= text_.size();
}

char HloCursor::peek() {
  skip_space();
  return peek_raw();
}

bool HloCursor::consume(char c) {
  if (peek() != c) return false;
  ++pos_;
  return true;
}

bool HloCursor::consume_text(std::string_view s) {
  skip_space();
  if (text_.substr(pos_, s.size()) != s) return false;
  pos_ += s.size();
  return true;
}

void HloCursor::expect(char c) {
  if (!consume(c)) fail_expected(fmt::format("'{}'", c));
}

void HloCursor::expect_text(std::string_view s) {
  if (!consume_text(s)) fail_expected(fmt::format("'{}'", s));
}

std::string_view HloCursor::peek_name() {
  skip_space();
  size_t p = pos_;
  if (p < text_.size() && text_[p] == '%') ++p;
  if (p >= text_.size() || !is_name_char(text_[p]) || text_[p] == '-') return {};
  size_t start = p;
  while (p < text_.size() && is_name_char(text_[p])) ++p;
  return text_.substr(start, p - start);
}

bool HloCursor::consume_keyword(std::string_view word) {
  skip_space();
  if (peek_raw() == '%') return false;
  std::string_view n = peek_name();
  if (n != word) return false;
  pos_ += n.size();
  return true;
}

std::string_view HloCursor::name(std::string_view what) {
  std::string_view n = peek_name();
  if (n.empty()) fail_expected(what);
  if (peek_raw() == '%') ++pos_;
  pos_ += n.size();
  return n;
}

int64_t HloCursor::integer(std::string_view what) {
  skip_space();
  size_t start = pos_;
  size_t p = pos_;
  if (p < text_.size() && (text_[p] == '-' || text_[p] == '+')) ++p;
  size_t digits = p;
  while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) ++p;
  if (p == digits) fail_expected(what);
  int64_t value = 0;
  const char* first = text_.data() + start + (text_[start] == '+' ? 1 : 0);
  auto [ptr, ec] = std::from_chars(first, text_.data() + p, value);
  if (ec != std::errc())
    fail_at(start, fmt::format("integer '{}' is out of range", text_.substr(start, p - start)));
  pos_ = p;
  return value;
}

double HloCursor::number(std::string_view what) {
  skip_space();
  size_t start = pos_;
  size_t p = pos_;
  bool negative = false;
  if (p < text_.size() && (text_[p] == '-' || text_[p] == '+')) negative = text_[p++] == '-';
  auto word_at = [&](std::string_view w) {
    return text_.substr(p, w.size()) == w &&
           (p + w.size() >= text_.size() || !is_name_char(text_[p + w.size()]));
  };
  if (word_at("inf")) {
    pos_ = p + 3;
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (word_at("nan")) {
    pos_ = p + 3;
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (p == start && word_at("true")) {
    pos_ = p + 4;
    return 1.0;
  }
  if (p == start && word_at("false")) {
    pos_ = p + 5;
    return 0.0;
  }
  size_t digits_start = p;
  while (p < text_.size()) {
    char c = text_[p];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      ++p;
    } else if ((c == 'e' || c == 'E') && p > digits_start) {
      ++p;
      if (p < text_.size() && (text_[p] == '-' || text_[p] == '+')) ++p;
    } else {
      break;
    }
  }
  if (p == digits_start) fail_expected(what);
  std::string token(text_.substr(start, p - start));
  char* end = nullptr;
  double value = std::strtod(token.c_str(), &end);
  if (end != token.c_str() + token.size())
    fail_at(start, fmt::format("malformed number '{}'", token));
  pos_ = p;
  return value;
}

std::string HloCursor::quoted_string(std::string_view what) {
  if (peek() != '"') fail_expected(what);
  size_t start = pos_++;
  std::string out;
  while (pos_ < text_.size() && text_[pos_] != '"') {
    char c = text_[pos_++];
    if (c == '\\' && pos_ < text_.size()) {
      char e = text_[pos_++];
      out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
    } else {
      out += c;
    }
  }
  if (pos_ >= text_.size()) fail_at(start, "unterminated string");
  ++pos_;
  return out;
}

std::string_view HloCursor::raw_value() {
  skip_space();
  size_t start = pos_;
  int depth = 0;
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '"') {
      size_t open = pos_++;
      while (pos_ < text_.size() && text_[pos_] != '"') pos_ += text_[pos_] == '\\' ? 2 : 1;
      if (pos_ >= text_.size()) fail_at(open, "unterminated string");
      ++pos_;
      if (depth == 0 && text_[start] == '"') break;
      continue;
    }
    if (c == '{' || c == '[' || c == '(') {
      ++depth;
    } else if (c == '}' || c == ']' || c == ')') {
      if (depth == 0) break;
      --depth;
      if (depth == 0 && c == '}' && text_[start] == '{') {
        ++pos_;
        break;
      }
    } else if (depth == 0 && (c == ',' || std::isspace(static_cast<unsigned char>(c)))) {
      break;
    }
    ++pos_;
  }
  if (depth > 0) fail_at(start, "unbalanced brackets in attribute value");
  if (pos_ == start) fail_expected("an attribute value");
  return text_.substr(start, pos_ - start);
}

std::string HloCursor::describe_next() {
  skip_space();
  if (pos_ >= text_.size()) return "end of input";
  size_t p = pos_;
  if (text_[p] == '%') ++p;
  size_t end = p;
  while (end < text_.size() && is_name_char(text_[end])) ++end;
  if (end == p) end = pos_ + 1;
  return fmt::format("'{}'", text_.substr(pos_, std::min<size_t>(end - pos_, 40)));
}

void HloCursor::fail_at(size_t pos, const std::string& message, const std::string& hint) const {
  throw UserError(location(pos), message, hint);
}

void HloCursor::fail_expected(std::string_view what, const std::string& hint) {
  std::string found = describe_next();
  fail_at(pos_, fmt::format("expected {} but found {}", what, found), hint);
}

}  // namespace podsim::compiler::hlo_detail
