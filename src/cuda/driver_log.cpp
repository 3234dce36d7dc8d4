// The driver's error log, as kept for the first error (driver_log.h).
#include "cuda/driver_log.h"

#include <algorithm>

namespace blockrun {

void DriverLog::note(const char* message, size_t length, uint32_t thread, uint64_t now_ms) {
  if (!message) return;
  Entry entry;
  entry.thread = thread;
  entry.time_ms = now_ms;
  entry.text.assign(message, std::min<size_t>(length, 4096));
  while (!entry.text.empty() && (entry.text.back() == '\n' || entry.text.back() == '\0'))
    entry.text.pop_back();
  std::lock_guard<std::mutex> guard(mutex_);
  if (entries_.size() == kKept) entries_.erase(entries_.begin());
  entries_.push_back(std::move(entry));
}

std::vector<std::string> DriverLog::recent(uint32_t thread, uint64_t now_ms) const {
  std::vector<std::string> found;
  std::lock_guard<std::mutex> guard(mutex_);
  for (const Entry& entry : entries_) {
    if (entry.thread == thread && now_ms - entry.time_ms <= kWindowMs) found.push_back(entry.text);
  }
  return found;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
