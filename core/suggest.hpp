// "Did you mean": the known name closest to a mistyped one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kgate {

/// Edit distance (insertions, deletions, substitutions).
std::size_t edit_distance(const std::string& a, const std::string& b);
/// The known name closest to `word`, when it is close enough to be a likely typo (within
/// max(2, |word| / 3) edits); "" otherwise.
std::string closest(const std::string& word, const std::vector<std::string>& known);

}  // namespace kgate
