// Formatting of user-facing errors.
#include "common/error.h"

#include <fmt/format.h>

namespace podsim {

std::string SourceLocation::to_string() const {
  if (!known()) return file;
  if (file.empty()) return fmt::format("{}:{}", line, column);
  return fmt::format("{}:{}:{}", file, line, column);
}

static std::string compose(const SourceLocation& loc, const std::string& message,
                           const std::string& hint) {
  std::string out;
  std::string where = loc.to_string();
  if (!where.empty()) out = where + ": ";
  out += "error: " + message;
  if (!hint.empty()) out += "\n  hint: " + hint;
  return out;
}

UserError::UserError(SourceLocation location, std::string message, std::string hint)
    : std::runtime_error(compose(location, message, hint)),
      location_(std::move(location)),
      message_(std::move(message)),
      hint_(std::move(hint)) {}

}  // namespace podsim
