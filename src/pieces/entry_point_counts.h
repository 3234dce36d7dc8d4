// Launches by entry point (the API the program called: `__cudaLaunchKernel`, `cuLaunchKernelEx`, ...), for
// the summary's `launches_by_api`. Counted on every launch without an atomic read-modify-write (a lock prefix
// less on the launch path): each thread counts its launches through an entry point in a word of its own,
// which only it writes (a load and a store), and totals() adds them up.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "util/handle_table.h"
#include "util/instance_serial.h"
#include "util/thread_number.h"

namespace blockrun {

class EntryPointCounts {
 public:
  EntryPointCounts();

  // One launch through `api` (a constant string: counted by its address). Inline: every launch counts.
  void count(const char* api) {
    if (!api) return;
    if (__builtin_expect(t_kept_.owner == serial_, 1)) {
      for (int i = 0; i < Kept::kKept; ++i) {
        if (t_kept_.api[i] == api) {
          std::atomic<uint64_t>& launches = *t_kept_.launches[i];
          if (__builtin_expect(t_kept_.shared[i], 0)) {
            launches.fetch_add(1, std::memory_order_relaxed);
          } else {
            launches.store(launches.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
          }
          return;
        }
      }
    }
    count_first(api);
  }

  // Every entry point launched through, with its launches, sorted by name.
  std::vector<std::pair<std::string, uint64_t>> totals() const;

  // Per-thread words past which a thread's launches go to the entry point's shared count (a process of many
  // short-lived launching threads), added to atomically.
  static constexpr uint32_t kMaxTallies = 4096;

 private:
  struct Count {
    const char* api = nullptr;
    std::atomic<uint64_t> launches{0};  // past kMaxTallies
  };
  // Per thread and entry point: only its thread writes `launches`. Never freed.
  struct Tally {
    Count* count;
    uint32_t thread;
    std::atomic<uint64_t> launches;
    Tally* next;
  };
  // The calling thread's tallies of the entry points it launched through last (a thread uses one or a few),
  // for the instance numbered `owner`.
  struct Kept {
    static constexpr int kKept = 4;
    uint64_t owner;
    const char* api[kKept];
    std::atomic<uint64_t>* launches[kKept];
    bool shared[kKept];  // the entry point's shared count: added to atomically
    int next;            // the entry a new one replaces
  };
  [[gnu::cold, gnu::noinline]] void count_first(const char* api);  // a new (instance, thread, api)

  const uint64_t serial_ = next_instance_serial<EntryPointCounts>();  // for t_kept_ (instance_serial.h)
  HandleTable<Count> counts_;
  std::atomic<Tally*> tallies_{nullptr};
  std::atomic<uint32_t> tally_count_{0};
  static inline thread_local Kept t_kept_{};
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
