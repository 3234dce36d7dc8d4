// The timeline's memory (--trace): what each host thread did, its launches, library calls and synchronizing
// calls, each kept as a fixed-size entry in a ring. The ring is bounded: it keeps its newest `capacity`
// entries (--trace-events) and counts the older ones it let go, so that the trace of a million launches is
// the size of its last ones. A ring is made at its thread's first entry, and its memory comes in chunks as it
// first fills them: a thread with ten launches costs one chunk, not the bound.
//
// A ring has one writer at a time. A thread that exited hands its ring on: the next thread that needs one
// takes it and writes on after the exited thread's entries (each entry says its thread), so that a program
// that starts thread after thread (a pool that churns) holds the rings of the threads alive at once, not of
// every thread it ever had (issue 40, N3). Whether a ring's thread exited is asked only where a thread takes
// its ring, at its first entry.
//
// The total is bounded too, not only each ring (issue 40, N3: 500 threads alive at once, each launching, held
// 500 rings of 13 MiB): all rings together hold at most `total` entries (16 rings' worth by default). A ring
// grows a chunk at a time while the total allows; where it does not, the ring stops growing and keeps its
// newest entries in the chunks it has. The last quarter of the total is kept for rings' first chunks, so that
// a thread that starts launching after others grew still gets a ring; past the total, a new thread's entries
// are counted, not kept, until a ring is handed on.
//
// Recording takes no lock (each ring has one writer, its own thread) and allocates only a new chunk, once per
// kChunkEntries entries while the ring grows to its bound. Reading (TraceRecorder::for_each_thread, at exit
// or from the fatal-signal handler) allocates nothing and takes no lock: it reads each entry and then checks
// that its thread did not overwrite it meanwhile, as a sequence lock's reader does, and counts any it did.
// While a trace is written the recorder is held (hold()): entries are counted, not kept, so that the trace
// ends where its writing began and no ring wraps under the reader (issue 40, N8).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "call_values.h"

namespace blockrun {
struct KernelInfo;
struct GraphInfo;
}  // namespace blockrun

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
  uint32_t thread = 0;       // the host thread that made it (record() sets it: rings pass between threads)
};

// What --trace-events' description and docs/trace.md say an entry costs.
static_assert(sizeof(TraceEntry) <= 200, "a trace entry grew: say so in options.def and docs/trace.md");

// One thread's entries as read, given before them.
struct ThreadEntries {
  uint32_t thread = 0;  // the host thread number (the log's `thread 2`)
  pid_t os_thread = 0;  // its kernel thread id (0: not known any more, in a ring that passed between many)
  // Older entries its ring let go, just before this thread's first kept one (0 but for the oldest thread
  // read from a ring); `inherited`: the ring was another thread's first, whose entries may be among them.
  uint64_t dropped = 0;
  bool inherited = false;
  // The entries its ring keeps: the capacity, or fewer where the total stopped the ring's growth.
  uint64_t bound = 0;
};

// What a reading left out, besides what the bound let go.
struct ReadCounts {
  uint64_t overwritten = 0;  // entries their thread overwrote while they were read
};

class TraceRecorder {
 public:
  // Entries of a ring's chunk: 1024 of about 200 bytes.
  static constexpr size_t kChunkEntries = 1024;
  // Rings at most (threads alive at once, each with a ring of its own); the entries of threads past it are
  // counted, not kept.
  static constexpr size_t kMaxThreads = 4096;
  // The default total of entries of all rings together: this many rings' bounds.
  static constexpr size_t kTotalRings = 16;
  // Threads that exited are looked for among this many rings where a thread takes its ring.
  static constexpr size_t kReuseScan = 64;
  // A thread that found no ring looks again after this many entries.
  static constexpr uint32_t kRetryEntries = 4096;

  // `capacity` entries kept per ring (at least 1); `max_threads` rings at most (1 to kMaxThreads); `total`
  // entries of all rings together (0: kTotalRings x capacity), in whole chunks (at least one).
  explicit TraceRecorder(size_t capacity, size_t max_threads = kMaxThreads, size_t total = 0);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // Keeps `entry` in the calling thread's ring (`thread` its host thread number, given at the ring's making).
  void record(const TraceEntry& entry, uint32_t thread);
  size_t capacity() const { return capacity_; }
  // Entries all rings together may hold (whole chunks).
  size_t total() const { return total_chunks_ * chunk_entries_; }
  // Entries the rings' memory holds now (chunks made x entries per chunk): what the total bounds.
  size_t entries_allocated() const { return chunks_made_.load(std::memory_order_relaxed) * chunk_entries_; }
  // Entries of threads that found no room for a ring of their own.
  uint64_t untracked() const { return untracked_.load(std::memory_order_relaxed); }
  // Entries made while the recorder was held (a trace being written), counted, not kept.
  uint64_t held_back() const { return held_back_.load(std::memory_order_relaxed); }
  // Every ring's entries, oldest first: `begin(const ThreadEntries&)` where a thread's entries start, then
  // `visit(const TraceEntry&)` for each. Async-signal-safe when both are.
  template <typename Begin, typename Visit>
  ReadCounts for_each_thread(Begin&& begin, Visit&& visit) const;
  // The entries let go by every ring's bound, and those of threads that had no ring (untracked): every entry
  // recorded and not kept, but for those held back.
  uint64_t dropped() const;
  // Rings made (each holds chunks of entries): what the recorder's memory grows with.
  size_t rings() const;
  // While held (a trace is being written; holds nest), entries are counted as held back, not kept: the
  // trace ends where its writing began, and the rings it reads do not move. Async-signal-safe.
  void hold() { holds_.fetch_add(1, std::memory_order_seq_cst); }
  void release() { holds_.fetch_sub(1, std::memory_order_seq_cst); }

 private:
  struct Ring;
  Ring* ring_of_this_thread(uint32_t thread);
  // A ring whose thread exited (or whose thread is this one: a thread that recorded into another recorder
  // meanwhile), taken for this thread; nullptr where none was found.
  Ring* reuse_ring(pid_t self, uint32_t thread);
  static pid_t os_thread_of(const Ring& ring, uint32_t thread);
  // Copies entry `index` of `ring` into `out`; false where its thread overwrote it meanwhile.
  bool read(const Ring& ring, uint64_t index, TraceEntry* out) const;
  // A chunk of the total, for a ring's first chunk or for a ring that grows; false where none is left.
  bool take_chunk(bool first);
  // Entries a ring of `slots` slots keeps (one is spare).
  uint64_t kept_by(uint64_t slots) const { return slots - 1 < capacity_ ? slots - 1 : capacity_; }

  const size_t capacity_;
  const size_t slots_;          // capacity_ + 1: one spare (read)
  const size_t chunk_entries_;  // kChunkEntries, or fewer where a ring needs fewer slots
  const size_t chunks_;
  const size_t max_threads_;
  const size_t total_chunks_;   // chunks of all rings together
  const size_t growth_chunks_;  // of which rings may grow into this many; the rest are for first chunks
  std::atomic<size_t> chunks_made_{0};
  const uint64_t serial_;
  std::atomic<int> holds_{0};  // read by every record(), written only around a trace's writing
  std::atomic<Ring*> rings_[kMaxThreads] = {};
  std::atomic<size_t> ring_count_{0};
  std::atomic<size_t> reuse_from_{0};
  std::atomic<uint64_t> untracked_{0};
  std::atomic<uint64_t> held_back_{0};
};

struct TraceRecorder::Ring {
  uint32_t first_thread = 0;    // the thread it was made for
  std::atomic<pid_t> owner{0};  // the kernel thread id of the thread that writes it now
  // The threads that took it, newest last (by `taken`, modulo kOwners): their kernel thread ids, for the
  // tracks' names. A ring that passed between more threads names the newest kOwners.
  static constexpr size_t kOwners = 32;
  struct Owner {
    std::atomic<uint32_t> thread{0};
    std::atomic<pid_t> os_thread{0};
  };
  Owner owners[kOwners];
  std::atomic<uint32_t> taken{0};
  std::atomic<uint64_t> written{0};
  // Its slots: the recorder's, or fewer where it stopped growing (the total was spent), set once by its
  // writer where it would have needed a new chunk, before it wraps: every entry until then is at the same
  // slot under either count.
  std::atomic<uint64_t> slots{0};
  std::unique_ptr<std::atomic<TraceEntry*>[]> chunks;
};

template <typename Begin, typename Visit>
ReadCounts TraceRecorder::for_each_thread(Begin&& begin, Visit&& visit) const {
  ReadCounts counts;
  size_t count = ring_count_.load(std::memory_order_acquire);
  if (count > max_threads_) count = max_threads_;
  for (size_t i = 0; i < count; ++i) {
    const Ring* ring = rings_[i].load(std::memory_order_acquire);
    if (!ring) continue;  // being made by its thread right now
    uint64_t written = ring->written.load(std::memory_order_acquire);
    uint64_t kept = kept_by(ring->slots.load(std::memory_order_acquire));
    uint64_t dropped = written > kept ? written - kept : 0;
    // A ring holds its threads one after another: a thread's entries start where the thread changes.
    bool begun = false;
    uint32_t thread = 0;
    TraceEntry entry;
    for (uint64_t index = dropped; index < written; ++index) {
      if (!read(*ring, index, &entry)) {
        ++counts.overwritten;
        continue;
      }
      if (!begun || entry.thread != thread) {
        ThreadEntries entries;
        entries.thread = thread = entry.thread;
        entries.os_thread = os_thread_of(*ring, thread);
        entries.dropped = begun ? 0 : dropped;
        entries.inherited = !begun && dropped && thread != ring->first_thread;
        entries.bound = kept;
        begun = true;
        begin(entries);
      }
      visit(entry);
    }
  }
  return counts;
}

}  // namespace blockrun::trace
// SPDX-License-Identifier: MIT
