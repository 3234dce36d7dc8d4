// The process's first CUDA error is taken once: the first thread to take it writes its record, every later
// error is counted. While the record is being written, termination signals wait on the writing thread, and
// the fatal-signal path on another thread can wait for the record (a PyTorch NCCL watchdog that sees the same
// error aborts the process while the thread that saw it first still writes, and the record must come out
// first).
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>

namespace blockrun {

class FirstErrorLatch {
 public:
  // True for the first caller only; every later one is counted as a later error.
  bool take();
  // An error seen after the first (without taking it).
  void count_later() { later_.fetch_add(1, std::memory_order_relaxed); }
  bool taken() const { return taken_.load(std::memory_order_acquire); }
  // An error seen after the first is counted, and then true; before the first, false (nothing counted).
  bool counted_as_later() {
    if (!taken()) return false;
    count_later();
    return true;
  }
  uint64_t later() const { return later_.load(std::memory_order_relaxed); }

  // While the taker writes the record (tens of milliseconds: it symbolizes): SIGTERM, SIGINT, SIGHUP and
  // SIGQUIT are held back on the writing thread (issue 17, F4), so that in a single-threaded program the
  // fatal-signal handler does not run in the middle of it, and are delivered when it ends.
  class Writing {
   public:
    explicit Writing(FirstErrorLatch& latch);
    ~Writing();
    Writing(const Writing&) = delete;
    Writing& operator=(const Writing&) = delete;

   private:
    FirstErrorLatch& latch_;
    sigset_t saved_;
  };

  // Waits, up to `max_ms`, while another thread is still writing the record. Async-signal-safe; returns at
  // once when the caller is that thread, or when no record is being written. Returns whether none is.
  bool wait_for_record(int max_ms) const;

 private:
  std::atomic<bool> taken_{false};
  std::atomic<bool> writing_{false};  // taken, its record not yet written and flushed
  std::atomic<long> writer_{0};       // the writing thread's kernel id
  std::atomic<uint64_t> later_{0};
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
