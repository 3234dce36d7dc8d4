// Sizes rounded up to a power of two, for tables and rings indexed by a mask rather than a division.
#pragma once

#include <cstddef>

namespace blockrun {

// The least power of two not below `value` (1 for 0).
constexpr size_t round_up_to_power_of_two(size_t value) {
  size_t result = 1;
  while (result < value) result <<= 1;
  return result;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
