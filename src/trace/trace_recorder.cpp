// The per-thread rings of the timeline (trace_recorder.h).
#include "trace/trace_recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "util/instance_serial.h"

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

namespace {

size_t chunks_for(size_t entries, size_t chunk_entries) {
  size_t chunks = (entries + chunk_entries - 1) / chunk_entries;
  return chunks ? chunks : 1;
}

}  // namespace

TraceRecorder::TraceRecorder(size_t capacity, size_t max_threads, size_t total)
    : capacity_(capacity ? capacity : 1),
      slots_(capacity_ + 1),
      chunk_entries_(slots_ < kChunkEntries ? slots_ : kChunkEntries),
      chunks_(chunks_for(slots_, chunk_entries_)),
      max_threads_(max_threads == 0            ? 1
                   : max_threads > kMaxThreads ? kMaxThreads
                                               : max_threads),
      // Whole chunks within the total (at least one): the rings together never hold more than it says.
      total_chunks_(std::max<size_t>((total ? total : capacity_ * kTotalRings) / chunk_entries_, 1)),
      growth_chunks_(total_chunks_ - total_chunks_ / 4),
      serial_(next_instance_serial<TraceRecorder>()) {}

TraceRecorder::~TraceRecorder() {
  for (std::atomic<Ring*>& slot : rings_) {
    Ring* ring = slot.load(std::memory_order_relaxed);
    if (!ring) continue;
    for (size_t i = 0; i < chunks_; ++i) delete[] ring->chunks[i].load(std::memory_order_relaxed);
    delete ring;
  }
}

namespace {

// Whether kernel thread `os_thread` of this process is gone. A thread id the kernel gave again to a live
// thread reads as alive (a ring is then not taken: never wrong, only less memory saved).
bool exited(pid_t process, pid_t os_thread) {
  return syscall(SYS_tgkill, process, os_thread, 0) != 0 && errno == ESRCH;
}

}  // namespace

TraceRecorder::Ring* TraceRecorder::reuse_ring(pid_t self, uint32_t thread) {
  size_t count = ring_count_.load(std::memory_order_acquire);
  if (count > max_threads_) count = max_threads_;
  if (!count) return nullptr;
  int saved_errno = errno;
  pid_t process = getpid();
  // A few rings from where the last look ended, not all: a process with thousands of live threads must not
  // pay a system call for each of them at every new thread's first entry.
  size_t from = reuse_from_.fetch_add(kReuseScan, std::memory_order_relaxed);
  size_t looks = count < kReuseScan ? count : kReuseScan;
  Ring* found = nullptr;
  for (size_t i = 0; i < looks && !found; ++i) {
    Ring* ring = rings_[(from + i) % count].load(std::memory_order_acquire);
    if (!ring) continue;
    pid_t owner = ring->owner.load(std::memory_order_acquire);
    // Its thread is this one (its id cannot be another live thread's), or exited: taken, by one thread only.
    if ((owner == self || exited(process, owner)) &&
        ring->owner.compare_exchange_strong(owner, self, std::memory_order_acq_rel))
      found = ring;
  }
  errno = saved_errno;
  if (!found) return nullptr;
  uint32_t taken = found->taken.fetch_add(1, std::memory_order_relaxed);
  Ring::Owner& owner = found->owners[taken % Ring::kOwners];
  owner.thread.store(thread, std::memory_order_relaxed);
  owner.os_thread.store(self, std::memory_order_relaxed);
  return found;
}

pid_t TraceRecorder::os_thread_of(const Ring& ring, uint32_t thread) {
  for (const Ring::Owner& owner : ring.owners)
    if (owner.thread.load(std::memory_order_relaxed) == thread)
      return owner.os_thread.load(std::memory_order_relaxed);
  return 0;
}

TraceRecorder::Ring* TraceRecorder::ring_of_this_thread(uint32_t thread) {
  // A thread keeps its ring for the recorder it was made for (tests make several recorders in one thread).
  struct Cached {
    uint64_t serial;
    Ring* ring;
    uint32_t until_retry;  // without a ring: entries until this thread looks for one again
  };
  thread_local Cached cached{0, nullptr, 0};
  if (cached.serial == serial_ && (cached.ring || --cached.until_retry)) return cached.ring;
  // A thread's first entry (in this recorder): a ring of a thread that exited, else a new one.
  pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  Ring* ring = reuse_ring(self, thread);
  // Else a new ring, where there is room for one and its first chunk is within the total.
  if (!ring && ring_count_.load(std::memory_order_relaxed) < max_threads_ && take_chunk(true)) {
    size_t index = ring_count_.fetch_add(1, std::memory_order_relaxed);
    if (index < max_threads_) {
      ring = new Ring;
      ring->first_thread = thread;
      ring->owner.store(self, std::memory_order_relaxed);
      ring->owners[0].thread.store(thread, std::memory_order_relaxed);
      ring->owners[0].os_thread.store(self, std::memory_order_relaxed);
      ring->taken.store(1, std::memory_order_relaxed);
      ring->slots.store(slots_, std::memory_order_relaxed);
      ring->chunks = std::make_unique<std::atomic<TraceEntry*>[]>(chunks_);
      ring->chunks[0].store(new TraceEntry[chunk_entries_], std::memory_order_relaxed);
      rings_[index].store(ring, std::memory_order_release);
    } else {
      chunks_made_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  // No ring (more threads live at once than there are rings, or the total spent): this thread's entries are
  // counted, not kept, and it looks again for a ring a thread left after kRetryEntries of them, so that the
  // look's system calls are not paid at every launch.
  cached = Cached{serial_, ring, ring ? 0 : kRetryEntries};
  return ring;
}

void TraceRecorder::record(const TraceEntry& entry, uint32_t thread) {
  // A trace being written (at most a few times in a process): counted, not kept.
  if (holds_.load(std::memory_order_relaxed) > 0) {
    held_back_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Ring* ring = ring_of_this_thread(thread);
  if (!ring) {
    untracked_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  uint64_t written = ring->written.load(std::memory_order_relaxed);
  uint64_t slots = ring->slots.load(std::memory_order_relaxed);  // its writer's own: only it changes it
  size_t slot = static_cast<size_t>(written % slots);
  std::atomic<TraceEntry*>& chunk_slot = ring->chunks[slot / chunk_entries_];
  TraceEntry* chunk = chunk_slot.load(std::memory_order_relaxed);
  if (!chunk && take_chunk(false)) {
    chunk = new TraceEntry[chunk_entries_];
    chunk_slot.store(chunk, std::memory_order_release);
  } else if (!chunk) {
    // The total is spent: the ring stops growing here and wraps over the chunks it has. It has not wrapped
    // yet (a chunk is missing), so `written` is this entry's slot, a chunk's first, and every entry before
    // it stays at its slot under the new count. Published before the first entry it overwrites: a reader
    // that copied any of that entry sees the new count, and so that its copy was overwritten.
    ring->slots.store(written, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    slot = 0;
    chunk = ring->chunks[0].load(std::memory_order_relaxed);
  }
  TraceEntry& kept = chunk[slot % chunk_entries_];
  kept = entry;
  kept.thread = thread;
  // Published after the entry: a reader that sees the count sees the entry whole.
  ring->written.store(written + 1, std::memory_order_release);
}

bool TraceRecorder::read(const Ring& ring, uint64_t index, TraceEntry* out) const {
  uint64_t slots = ring.slots.load(std::memory_order_acquire);
  size_t slot = static_cast<size_t>(index % slots);
  const TraceEntry* chunk = ring.chunks[slot / chunk_entries_].load(std::memory_order_acquire);
  if (!chunk) return false;
  *out = chunk[slot % chunk_entries_];
  // Entry `index` is overwritten while its thread writes entry `index + slots`: the copy is whole only if the
  // thread had not begun that write when the copy ended. (The spare slot keeps the oldest entry kept out of
  // the slot being written next, so that a ring at rest gives all its entries.) The count of slots is read
  // again: a ring that stopped growing during the copy wraps sooner.
  std::atomic_thread_fence(std::memory_order_acquire);
  slots = ring.slots.load(std::memory_order_relaxed);
  return index + slots > ring.written.load(std::memory_order_relaxed);
}

bool TraceRecorder::take_chunk(bool first) {
  // Counted before it is made, given back where it is over: two threads near the end may both be refused
  // one that only one of them would have exceeded, never both given one.
  size_t limit = first ? total_chunks_ : growth_chunks_;
  if (chunks_made_.fetch_add(1, std::memory_order_relaxed) < limit) return true;
  chunks_made_.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

uint64_t TraceRecorder::dropped() const {
  uint64_t total = untracked();
  size_t count = ring_count_.load(std::memory_order_acquire);
  if (count > max_threads_) count = max_threads_;
  for (size_t i = 0; i < count; ++i) {
    if (const Ring* ring = rings_[i].load(std::memory_order_acquire)) {
      uint64_t written = ring->written.load(std::memory_order_acquire);
      uint64_t kept = kept_by(ring->slots.load(std::memory_order_acquire));
      total += written > kept ? written - kept : 0;
    }
  }
  return total;
}

size_t TraceRecorder::rings() const {
  size_t count = ring_count_.load(std::memory_order_acquire);
  return count < max_threads_ ? count : max_threads_;
}

}  // namespace blockrun::trace
// SPDX-License-Identifier: MIT
