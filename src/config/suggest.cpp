// Edit distance and the "did you mean" suggestion (suggest.h).
#include "config/suggest.h"

#include <algorithm>
#include <cctype>

namespace blockrun {

namespace {

bool same_letter(char a, char b) {
  return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
}

}  // namespace

// The optimal-string-alignment distance: Levenshtein's, with a swap of two neighbours counted as one edit
// (`abrot` is one edit from `abort`). Three rows of the table are kept.
size_t edit_distance(std::string_view from, std::string_view to) {
  std::vector<size_t> before(to.size() + 1), previous(to.size() + 1), current(to.size() + 1);
  for (size_t j = 0; j <= to.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= from.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= to.size(); ++j) {
      size_t substitution = previous[j - 1] + (same_letter(from[i - 1], to[j - 1]) ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
      if (i > 1 && j > 1 && same_letter(from[i - 1], to[j - 2]) && same_letter(from[i - 2], to[j - 1]))
        current[j] = std::min(current[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[to.size()];
}

std::optional<std::string> closest_word(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (const std::string& candidate : candidates) {
    size_t distance = edit_distance(word, candidate);
    size_t allowed = std::clamp<size_t>(std::max(word.size(), candidate.size()) / 3, 1, 3);
    if (distance == 0 || distance > allowed) continue;
    if (!best || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best = closest_word(word, candidates);
  return best ? " (did you mean '" + *best + "'?)" : "";
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
