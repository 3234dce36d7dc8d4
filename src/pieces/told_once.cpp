// Texts told once per process (told_once.h).
#include "pieces/told_once.h"

#include <algorithm>

namespace blockrun {

bool ToldOnce::first_time(const std::string& text) {
  if (std::find(told_.begin(), told_.end(), text) != told_.end()) return false;
  told_.push_back(text);
  return true;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
