// What blocking cost: a blocked launch's times into its stats (block_tally.h).
#include "pieces/block_tally.h"

#include "pieces/launch_ledger.h"

namespace blockrun {

namespace {

// What `slot` points at, made by the first blocked launch that needs it: once per kernel, on the blocked
// path, which has just waited for the GPU anyway. Of two threads that race, one's is kept and the other
// deletes its own.
template <typename T>
T& made_once(std::atomic<T*>& slot) {
  T* made = slot.load(std::memory_order_acquire);
  if (made) return *made;
  auto* fresh = new T;
  if (slot.compare_exchange_strong(made, fresh, std::memory_order_acq_rel, std::memory_order_acquire))
    return *fresh;
  delete fresh;
  return *made;
}

}  // namespace

BlockStats* BlockTally::stats_of(const LaunchRecord& record) {
  if (record.kernel) return &const_cast<KernelInfo*>(record.kernel)->stats;
  if (record.graph) return &const_cast<GraphInfo*>(record.graph)->stats;
  if (!record.library_api) return nullptr;
  std::lock_guard<std::mutex> guard(mutex_);
  std::unique_ptr<BlockStats>& slot = units_[record.library_api];
  if (!slot) slot = std::make_unique<BlockStats>();
  return slot.get();
}

void BlockTally::note_blocked(const LaunchRecord& record, const BlockTiming& timing) {
  blocked_.fetch_add(1, std::memory_order_relaxed);
  BlockStats* stats = stats_of(record);
  blocking_ns_.fetch_add(timing.wall_ns, std::memory_order_relaxed);
  if (!stats) return;
  stats->blocked.fetch_add(1, std::memory_order_relaxed);
  stats->wall_ns_total.fetch_add(timing.wall_ns, std::memory_order_relaxed);
  atomic_max(stats->wall_ns_max, timing.wall_ns);
  BlockTimes& times = made_once(stats->times);
  times.wall.record(timing.wall_ns);
  if (timing.gpu_ns >= 0) {
    uint64_t gpu = static_cast<uint64_t>(timing.gpu_ns);
    stats->gpu_timed.fetch_add(1, std::memory_order_relaxed);
    stats->gpu_ns_total.fetch_add(gpu, std::memory_order_relaxed);
    atomic_max(stats->gpu_ns_max, gpu);
    made_once(times.gpu).record(gpu);
  }
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
