// The driver's own explanations of errors (its error log, cuLogsRegisterCallback, CUDA 12.9+): the newest few
// messages, from any thread, and those that came from one thread shortly before, which a first error raised
// on that thread then carries (the driver writes them during the failing call, on the calling thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace blockrun {

class DriverLog {
 public:
  static constexpr size_t kKept = 16;           // newest messages kept
  static constexpr uint64_t kWindowMs = 10000;  // attached to an error this soon after, same thread

  // A message (at most 4 KiB kept, trailing newlines and NULs dropped) from host thread `thread` at `now_ms`.
  void note(const char* message, size_t length, uint32_t thread, uint64_t now_ms);
  // The messages `thread` wrote within kWindowMs before `now_ms`, oldest first.
  std::vector<std::string> recent(uint32_t thread, uint64_t now_ms) const;

 private:
  struct Entry {
    uint32_t thread = 0;
    uint64_t time_ms = 0;
    std::string text;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;  // the newest kKept, oldest first
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
