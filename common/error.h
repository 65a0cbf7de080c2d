// User-facing errors. Every error a user can cause (bad YAML, bad HLO,
// impossible sharding, ...) is thrown as a UserError carrying where it
// happened (file:line:column when known) and a hint; the CLI prints it and
// exits with code 2. Internal invariants use assert() instead.
#pragma once

#include <stdexcept>
#include <string>

namespace podsim {

struct SourceLocation {
  std::string file;  // empty when the input has no file (a string in a test)
  int line = 0;      // 1-based; 0 = unknown
  int column = 0;    // 1-based; 0 = unknown

  bool known() const { return line > 0; }
  // "file:line:column", "file", "line:column" or "" depending on what is known.
  std::string to_string() const;
};

class UserError : public std::runtime_error {
 public:
  UserError(SourceLocation location, std::string message, std::string hint = "");
  explicit UserError(std::string message, std::string hint = "")
      : UserError(SourceLocation{}, std::move(message), std::move(hint)) {}

  const SourceLocation& location() const { return location_; }
  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }

 private:
  SourceLocation location_;
  std::string message_;
  std::string hint_;
};

// Process exit code for a UserError.
inline constexpr int kUserErrorExitCode = 2;

}  // namespace podsim
