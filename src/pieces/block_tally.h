// What blocking cost and what it skipped, for the summary: blocked launches and their times (each kernel's,
// graph's or library call's BlockStats, and the total), captures that kept a launch from blocking, and the
// `blocked_error` records' budget. Only blocked launches and skips come here: never the quiet launch path.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "call_values.h"

namespace blockrun {

// records.h: what the engine keeps of launches; the tally only names them here.
struct LaunchRecord;
struct BlockStats;

class BlockTally {
 public:
  // `blocked_error` records written per process; later ones are counted in the summary.
  static constexpr uint64_t kMaxErrorRecords = 64;

  // A launch that was blocked (its synchronize returned, whatever it returned) and how long that took.
  void note_blocked(const LaunchRecord& record, const BlockTiming& timing);
  // A launch the policy blocked whose stream was capturing, so it was not: true for the first of the process
  // (the one the log tells).
  bool note_capture_skip() {
    capture_skips_.fetch_add(1, std::memory_order_relaxed);
    return !capture_skip_told_.exchange(true, std::memory_order_relaxed);
  }
  // Whether a blocked launch's failure still gets its own `blocked_error` record.
  bool take_error_record() {
    return error_records_.fetch_add(1, std::memory_order_relaxed) < kMaxErrorRecords;
  }

  uint64_t blocked() const { return blocked_.load(); }
  uint64_t blocking_ns() const { return blocking_ns_.load(); }
  uint64_t capture_skips() const { return capture_skips_.load(); }
  // The library calls blocked as units (a kernel's and a graph's stats are their KernelInfo's and
  // GraphInfo's), by API name.
  template <typename Visit>
  void for_each_unit(Visit&& visit) {
    std::lock_guard<std::mutex> guard(mutex_);
    for (const auto& [name, stats] : units_) visit(name, *stats);
  }

 private:
  BlockStats* stats_of(const LaunchRecord& record);

  std::atomic<uint64_t> blocked_{0};
  std::atomic<uint64_t> blocking_ns_{0};
  std::atomic<uint64_t> capture_skips_{0};
  std::atomic<bool> capture_skip_told_{false};
  std::atomic<uint64_t> error_records_{0};
  std::mutex mutex_;  // units_: taken on the blocked path only, which has just waited for the GPU anyway
  std::map<std::string, std::unique_ptr<BlockStats>> units_;
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
