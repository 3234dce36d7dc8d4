// Host thread numbers: 1, 2, ... in the order threads first ask, never reused. The log, the report and the
// trace name threads by them, and per-thread tallies are kept by them.
#pragma once

#include <atomic>
#include <cstdint>

namespace blockrun {

// The calling thread's number, cheap after the first call in a thread. Inline: every launch asks.
inline uint32_t current_thread_number() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t number = 0;
  if (number == 0) number = next.fetch_add(1, std::memory_order_relaxed);
  return number;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
