// The one steady clock of the engine, the shim and the trace: a launch's times, a call's span and the trace's
// origin compare only because all three read this clock. CLOCK_MONOTONIC is what std::chrono::steady_clock
// reads on Linux; <time.h> is used rather than <chrono> to keep engine.h, which every launch path includes,
// narrow.
#pragma once

#include <time.h>

#include <cstdint>

namespace blockrun {

// Nanoseconds on the steady clock. A vDSO call, no system call: cheap enough for the launch path.
inline uint64_t steady_now_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

// Milliseconds on the same clock (the policy's elapsed time, the driver log's age).
inline uint64_t steady_now_ms() {
  return steady_now_ns() / 1000000u;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
