// "Did you mean": the known word closest to a mistyped one, by edit distance, as git suggests commands.
// Used for the wrapper's flags, the CUDA_BLOCKRUN_* variables and the policy's words; never on a launch path.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace blockrun {

// Edits (insertions, deletions, substitutions, swaps of neighbours) that turn `from` into `to`, compared
// without regard to case.
size_t edit_distance(std::string_view from, std::string_view to);

// The candidate nearest to `word`, if one is near enough to be what was meant: at most a third of the
// longer word's letters apart (at least one edit, at most three). The first of equally near ones wins.
std::optional<std::string> closest_word(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" for the closest candidate, or "" where none is near: to append to an error.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
