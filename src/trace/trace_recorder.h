// The timeline's memory (--trace): what each host thread did, its launches, library calls and synchronizing
// calls, each kept as a fixed-size entry in a ring of the thread's own. The ring is bounded: it keeps the
// thread's newest `capacity` entries (--trace-events) and counts the older ones it let go, so that the trace
// of a million launches is the size of its last ones. A ring is made at its thread's first entry, and its
// memory comes in chunks as it first fills them: a thread with ten launches costs one chunk, not the bound.
//
// Recording takes no lock (each ring has one writer, its own thread) and allocates only a new chunk, once per
// kChunkEntries entries while the ring grows to its bound. Reading (TraceRecorder::for_each_thread, at exit
// or from the fatal-signal handler) allocates nothing and takes no lock: it reads each entry and then checks
// that its thread did not overwrite it meanwhile, as a sequence lock's reader does, and leaves out any it
// did.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "records.h"

namespace blockrun::trace {

enum class EntryKind : uint8_t {
  Launch,       // a launch unit: a kernel launch, a library call blocked as a unit, a graph launch
  LibraryCall,  // a library call around the kernels it launched (not a unit of its own)
  Synchronize,  // a synchronizing call: a stream, event or device synchronize, a synchronous copy
};

// How a launch went, as its slice says.
enum class EntryOutcome : uint8_t {
  Launched,           // enqueued, not blocked
  Blocked,            // blocked, and its blocking wait succeeded
  BlockedFailed,      // blocked, and its blocking wait returned an error
  Failed,             // the launch returned its own error: nothing was enqueued
  Refused,            // the launch returned an earlier kernel's error: the context refused it, it never ran
  CaptureSkipped,     // the policy blocks it, but its stream was capturing: not blocked
  Captured,           // recorded into a stream capture: a graph node, not run now
  NotBlockedUnknown,  // the policy blocks it, but whether its stream captures could not be told
};

const char* outcome_text(EntryOutcome outcome);

// One entry: plain data; names are pointers to what lives as long as the process (kernel records, static
// API names).
struct TraceEntry {
  uint64_t began_ns = 0, ended_ns = 0;  // steady clock
  uint64_t wait_began_ns = 0;           // a blocked launch's blocking wait (0: none)
  int64_t gpu_ns = -1;                  // a blocked launch's GPU time (--gpu-time), -1: none
  uint64_t sequence = 0;                // the launch number (launch units)
  uint64_t kernel_ordinal = 0;
  const KernelInfo* kernel = nullptr;
  const GraphInfo* graph = nullptr;
  const char* api = nullptr;  // the entry point called; the synchronizing call
  const char* driver_api = nullptr;
  const char* library_api = nullptr;
  LibraryCall library;
  StreamId stream;
  Dim3 grid, block;
  uint64_t shared_memory = 0;
  uint32_t python_site = 0;  // PythonSiteTable number (0: none)
  uint32_t graph_replay = 0;
  ErrorCode result;  // the error the call returned (or its blocking wait), if any
  EntryKind kind = EntryKind::Launch;
  EntryOutcome outcome = EntryOutcome::Launched;
  bool device_wide = false;  // a device synchronize
};

// What --trace-events' description and docs/trace.md say an entry costs.
static_assert(sizeof(TraceEntry) <= 200, "a trace entry grew: say so in options.def and docs/trace.md");

// One thread's entries as read: `dropped` older ones were let go (the ring keeps `capacity`).
struct ThreadEntries {
  uint32_t thread = 0;  // the host thread number (the log's `thread 2`)
  pid_t os_thread = 0;  // its kernel thread id
  uint64_t recorded = 0;
  uint64_t dropped = 0;
};

class TraceRecorder {
 public:
  // Entries of a ring's chunk: 1024 of about 200 bytes.
  static constexpr size_t kChunkEntries = 1024;
  // Threads with a ring; the entries of threads past it are counted, not kept.
  static constexpr size_t kMaxThreads = 4096;

  // `capacity` entries kept per thread (at least 1).
  explicit TraceRecorder(size_t capacity);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // Keeps `entry` in the calling thread's ring (`thread` its host thread number, given at the ring's making).
  void record(const TraceEntry& entry, uint32_t thread);
  size_t capacity() const { return capacity_; }
  // Entries of threads that found no room for a ring of their own.
  uint64_t untracked() const { return untracked_.load(std::memory_order_relaxed); }
  // Every thread's entries, oldest first: `begin(const ThreadEntries&)` once per thread, then `visit(const
  // TraceEntry&)` for each entry kept. Async-signal-safe when both are.
  template <typename Begin, typename Visit>
  void for_each_thread(Begin&& begin, Visit&& visit) const;
  // The total of entries let go by every ring.
  uint64_t dropped() const;

 private:
  struct Ring;
  Ring* ring_of_this_thread(uint32_t thread);
  // Copies entry `index` of `ring` into `out`; false where its thread overwrote it meanwhile.
  bool read(const Ring& ring, uint64_t index, TraceEntry* out) const;
  ThreadEntries entries_of(const Ring& ring) const;

  const size_t capacity_;
  const size_t slots_;  // capacity_ + 1: one spare (read)
  const size_t chunks_;
  const uint64_t serial_;
  std::atomic<Ring*> rings_[kMaxThreads] = {};
  std::atomic<size_t> ring_count_{0};
  std::atomic<uint64_t> untracked_{0};
};

struct TraceRecorder::Ring {
  uint32_t thread = 0;
  pid_t os_thread = 0;
  std::atomic<uint64_t> written{0};
  std::unique_ptr<std::atomic<TraceEntry*>[]> chunks;
};

template <typename Begin, typename Visit>
void TraceRecorder::for_each_thread(Begin&& begin, Visit&& visit) const {
  size_t count = ring_count_.load(std::memory_order_acquire);
  if (count > kMaxThreads) count = kMaxThreads;
  for (size_t i = 0; i < count; ++i) {
    const Ring* ring = rings_[i].load(std::memory_order_acquire);
    if (!ring) continue;  // being made by its thread right now
    ThreadEntries entries = entries_of(*ring);
    begin(entries);
    TraceEntry entry;
    for (uint64_t index = entries.dropped; index < entries.recorded; ++index)
      if (read(*ring, index, &entry)) visit(entry);
  }
}

}  // namespace blockrun::trace
// SPDX-License-Identifier: MIT
