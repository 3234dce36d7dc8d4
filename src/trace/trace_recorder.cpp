// The per-thread rings of the timeline (trace_recorder.h).
#include "trace/trace_recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "instance_serial.h"

namespace blockrun::trace {

const char* outcome_text(EntryOutcome outcome) {
  switch (outcome) {
    case EntryOutcome::Launched:
      return "launched";
    case EntryOutcome::Blocked:
      return "blocked";
    case EntryOutcome::BlockedFailed:
      return "blocked, failed";
    case EntryOutcome::Failed:
      return "failed";
    case EntryOutcome::Refused:
      return "refused: an earlier kernel's error surfaced here, it never ran";
    case EntryOutcome::CaptureSkipped:
      return "not blocked: stream capturing";
    case EntryOutcome::Captured:
      return "captured into a graph: not run now";
    case EntryOutcome::NotBlockedUnknown:
      return "not blocked: capture state unknown";
  }
  return "launched";
}

TraceRecorder::TraceRecorder(size_t capacity)
    : capacity_(capacity ? capacity : 1),
      slots_(capacity_ + 1),
      chunks_((slots_ + kChunkEntries - 1) / kChunkEntries),
      serial_(next_instance_serial<TraceRecorder>()) {}

TraceRecorder::~TraceRecorder() {
  for (std::atomic<Ring*>& slot : rings_) {
    Ring* ring = slot.load(std::memory_order_relaxed);
    if (!ring) continue;
    for (size_t i = 0; i < chunks_; ++i) delete[] ring->chunks[i].load(std::memory_order_relaxed);
    delete ring;
  }
}

TraceRecorder::Ring* TraceRecorder::ring_of_this_thread(uint32_t thread) {
  // A thread keeps its ring for the recorder it was made for (tests make several recorders in one thread).
  struct Cached {
    uint64_t serial;
    Ring* ring;
  };
  thread_local Cached cached{0, nullptr};
  if (cached.serial == serial_) return cached.ring;
  size_t index = ring_count_.fetch_add(1, std::memory_order_relaxed);
  Ring* ring = nullptr;
  if (index < kMaxThreads) {
    ring = new Ring;
    ring->thread = thread;
    ring->os_thread = static_cast<pid_t>(syscall(SYS_gettid));
    ring->chunks = std::make_unique<std::atomic<TraceEntry*>[]>(chunks_);
    rings_[index].store(ring, std::memory_order_release);
  }
  cached = Cached{serial_, ring};
  return ring;
}

void TraceRecorder::record(const TraceEntry& entry, uint32_t thread) {
  Ring* ring = ring_of_this_thread(thread);
  if (!ring) {
    untracked_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  uint64_t written = ring->written.load(std::memory_order_relaxed);
  size_t slot = static_cast<size_t>(written % slots_);
  std::atomic<TraceEntry*>& chunk_slot = ring->chunks[slot / kChunkEntries];
  TraceEntry* chunk = chunk_slot.load(std::memory_order_relaxed);
  if (!chunk) {
    chunk = new TraceEntry[kChunkEntries];
    chunk_slot.store(chunk, std::memory_order_release);
  }
  chunk[slot % kChunkEntries] = entry;
  // Published after the entry: a reader that sees the count sees the entry whole.
  ring->written.store(written + 1, std::memory_order_release);
}

ThreadEntries TraceRecorder::entries_of(const Ring& ring) const {
  ThreadEntries entries;
  entries.thread = ring.thread;
  entries.os_thread = ring.os_thread;
  entries.recorded = ring.written.load(std::memory_order_acquire);
  entries.dropped = entries.recorded > capacity_ ? entries.recorded - capacity_ : 0;
  return entries;
}

bool TraceRecorder::read(const Ring& ring, uint64_t index, TraceEntry* out) const {
  size_t slot = static_cast<size_t>(index % slots_);
  const TraceEntry* chunk = ring.chunks[slot / kChunkEntries].load(std::memory_order_acquire);
  if (!chunk) return false;
  *out = chunk[slot % kChunkEntries];
  // Entry `index` is overwritten while its thread writes entry `index + slots`: the copy is whole only if the
  // thread had not begun that write when the copy ended. (The spare slot keeps the oldest entry kept out of
  // the slot being written next, so that a ring at rest gives all `capacity` entries.)
  std::atomic_thread_fence(std::memory_order_acquire);
  return index + slots_ > ring.written.load(std::memory_order_relaxed);
}

uint64_t TraceRecorder::dropped() const {
  uint64_t total = 0;
  size_t count = ring_count_.load(std::memory_order_acquire);
  if (count > kMaxThreads) count = kMaxThreads;
  for (size_t i = 0; i < count; ++i)
    if (const Ring* ring = rings_[i].load(std::memory_order_acquire)) total += entries_of(*ring).dropped;
  return total;
}

}  // namespace blockrun::trace
// SPDX-License-Identifier: MIT
