// "Did you mean" hints: the valid name closest to a misspelt one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace podsim {

// Levenshtein distance (insertions, deletions, substitutions).
size_t edit_distance(const std::string& a, const std::string& b);

// The entry of `valid` nearest to `name`, or "" when none is within
// max(2, |name| / 3) edits (a guess further off would mislead).
std::string closest(const std::string& name, const std::vector<std::string>& valid);

}  // namespace podsim
