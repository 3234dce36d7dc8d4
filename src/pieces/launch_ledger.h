// The launch ledger: every stream's newest launches and how far each is known to have completed, the launch
// counter, and the order that events give streams (a stream past a wait on an event proves the launches
// before the event's record). It owns that state and answers one question, which launches are not known to
// have completed (the suspects); the engine decides what a first error means from it, and writes nothing
// here.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "util/handle_table.h"
#include "util/power_of_two.h"
#include "records.h"

namespace blockrun {

// A launch as reported: its record and, when one was taken, its capture.
struct ReportedLaunch {
  LaunchRecord record;
  std::shared_ptr<const CallStack> stack;
};

struct StreamState;

// An event's last record: the launches on `stream` through `through` were made before it (none: nullptr).
struct EventPoint {
  StreamState* stream = nullptr;
  uint64_t through = 0;
};

namespace detail {

// Holds a spinlock for a scope: the stream and event records guard a copy or a store of a few words with one.
class SpinGuard {
 public:
  explicit SpinGuard(std::atomic_flag& flag) : flag_(flag) {
    while (flag_.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~SpinGuard() { flag_.clear(std::memory_order_release); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  std::atomic_flag& flag_;
};

}  // namespace detail

// Per stream: the newest launches (the suspects when an error surfaces) and how far the stream is
// known to have completed. The ring is guarded by a spinlock held for a copy of one record: CUDA
// serializes launches into one stream anyway, so threads rarely meet here.
struct StreamState {
  static constexpr size_t kRing = 8;  // "up to 8 suspects, newest last"
  // The ring holds `wanted` rounded up to a power of two, so that a launch's place in it is a mask, not a
  // division (two a launch with breadcrumbs, each a few tens of cycles).
  StreamState(size_t wanted, bool with_stacks)
      : capacity(round_up_to_power_of_two(wanted)),
        ring(new LaunchRecord[capacity]),
        stacks(with_stacks ? new CallStack[capacity] : nullptr),
        breadcrumb_after(new std::atomic<uint64_t>[capacity]()) {}
  StreamId id;
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  // Records pushed: changed only under `lock`, read without it by note_breadcrumb.
  std::atomic<uint64_t> written{0};
  uint64_t evicted_through = 0;  // the newest launch pushed out of the ring
  const size_t capacity;         // kRing, or the breadcrumbs' larger ring (Config::ring): a power of two
  std::unique_ptr<LaunchRecord[]> ring;
  // The call sites of the ring's launches, only with CUDA_BLOCKRUN_CALLSITES=all (about 2.5 KB each).
  std::unique_ptr<CallStack[]> stacks;
  // Per place in the ring, the number of the launch there that a breadcrumb write followed (note_breadcrumb):
  // stored without the lock by the launching thread once its write is enqueued, so a reader that sees it
  // knows the write is in the stream. A number other than the record's there is an older launch's.
  std::unique_ptr<std::atomic<uint64_t>[]> breadcrumb_after;
  uint64_t newest_sequence = 0;                       // the highest launch number pushed
  static constexpr uint64_t kNoPlace = ~uint64_t{0};  // push: a place no breadcrumb write is noted for
  std::atomic<uint64_t> synced_through{0};
  std::atomic<int32_t> breadcrumb{-1};  // its slot in the breadcrumb memory, once it has one
  // Where launch `place` (records pushed before it) is in the ring.
  size_t ring_index(uint64_t place) const { return static_cast<size_t>(place) & (capacity - 1); }
  uint16_t number = 0;  // 1-based, in order of creation, for EventState's records (0: past their room)

  // Waits of this stream on events recorded on other streams (cuStreamWaitEvent; PyTorch's wait_stream):
  // once this stream is known to be past a wait (its launches through `at` or later complete), the other
  // stream's launches through `other_through` completed too. The newest kWaits are kept, under `lock`: one
  // forgotten only loses a proof.
  struct Wait {
    uint64_t at = 0;  // the first launch number after the wait returned
    StreamState* other = nullptr;
    uint64_t other_through = 0;
  };
  static constexpr size_t kWaits = 8;
  Wait waits[kWaits];
  uint64_t waits_written = 0;

  // Its place: how many records were pushed before it (note_breadcrumb's `place`); kNoPlace where a launch
  // numbered after it was pushed first: another thread's, which may have reached the driver first too, so
  // that the GPU ran them in the other order and a write after this one proves nothing of that one.
  uint64_t push(const LaunchRecord& record, const CallStack* stack) {
    detail::SpinGuard guard(lock);
    uint64_t place = written.load(std::memory_order_relaxed);
    written.store(place + 1, std::memory_order_release);  // a plain store: the lock already excludes writers
    size_t slot = ring_index(place);
    if (place >= capacity) evicted_through = ring[slot].sequence;
    ring[slot] = record;
    // The record's call stack is kept only where the ring keeps stacks (tested only for a record with one).
    if (record.has_stack) {
      ring[slot].has_stack = stacks && stack;
      if (ring[slot].has_stack) stacks[slot] = *stack;
    }
    if (record.sequence < newest_sequence) return kNoPlace;
    newest_sequence = record.sequence;
    return place;
  }
  // The launch `sequence`, pushed at `place`, has its breadcrumb write enqueued. Unless another launch took a
  // later place meanwhile: two threads launching into the stream at once reach the driver in either order,
  // and a launch that the GPU ran after a later-numbered one must not be named for that one's fault, so it
  // goes as one without a write of its own (a candidate with the launches after it, never exact).
  void note_breadcrumb(uint64_t place, uint64_t sequence) {
    if (place == kNoPlace || written.load(std::memory_order_acquire) != place + 1) return;
    breadcrumb_after[ring_index(place)].store(sequence, std::memory_order_release);
  }
  // The places the ring still holds, [oldest_kept(end), end), where `end` is `written` read under the lock.
  uint64_t oldest_kept(uint64_t end) const { return end > capacity ? end - capacity : 0; }
  // Records newer than `after`, in the order they were pushed. Returns whether launches newer than `after`
  // were pushed out of the ring before anything proved them: then not all of them are in `out`.
  bool collect(uint64_t after, uint64_t exclude, std::vector<ReportedLaunch>* out) {
    detail::SpinGuard guard(lock);
    uint64_t end = written.load(std::memory_order_relaxed);
    for (uint64_t i = oldest_kept(end); i < end; ++i) {
      const LaunchRecord& record = ring[ring_index(i)];
      if (record.sequence <= after || record.sequence == exclude || record.refused) continue;
      ReportedLaunch reported{record, nullptr};
      reported.record.breadcrumb =
          breadcrumb_after[ring_index(i)].load(std::memory_order_acquire) == record.sequence;
      if (record.has_stack) reported.stack = std::make_shared<CallStack>(stacks[ring_index(i)]);
      out->push_back(std::move(reported));
    }
    return evicted_through > after;
  }
  // The launch `sequence` returned an error that enqueued nothing: it is no longer one of the unfinished.
  void refuse(uint64_t sequence) {
    detail::SpinGuard guard(lock);
    uint64_t end = written.load(std::memory_order_relaxed);
    for (uint64_t i = end, first = oldest_kept(end); i > first; --i) {
      LaunchRecord& record = ring[ring_index(i - 1)];
      if (record.sequence == sequence) {
        record.refused = true;
        break;
      }
    }
  }
  uint64_t evicted() {
    detail::SpinGuard guard(lock);
    return evicted_through;
  }
  void add_wait(const Wait& wait) {
    detail::SpinGuard guard(lock);
    waits[waits_written++ % kWaits] = wait;
  }
  // The waits this stream is past, given that its launches through `through` completed.
  size_t waits_past(uint64_t through, Wait* out) {
    detail::SpinGuard guard(lock);
    size_t count = 0;
    for (const Wait& wait : waits)
      if (wait.other && wait.at <= through) out[count++] = wait;
    return count;
  }
};

// What an event's last record stands for: the launches on its stream numbered before the record call began,
// as one word (an event is re-recorded, and read by a wait, from any thread, without a lock): the stream's
// number (StreamState::number; 0: no record) in the top 16 bits, the launch number through which its launches
// preceded the record in the other 48.
struct EventState {
  static constexpr int kThroughBits = 48;
  static constexpr uint64_t kThroughMask = (uint64_t{1} << kThroughBits) - 1;
  std::atomic<uint64_t> record{0};
};

// Raises `target` to `value`; whether it rose.
inline bool atomic_max(std::atomic<uint64_t>& target, uint64_t value) {
  uint64_t current = target.load(std::memory_order_relaxed);
  while (current < value) {
    if (target.compare_exchange_weak(current, value, std::memory_order_acq_rel)) return true;
  }
  return false;
}

class LaunchLedger {
 public:
  // `ring_capacity` launches kept per stream; `keep_stacks`: their call sites too (--callsites all).
  LaunchLedger(size_t ring_capacity, bool keep_stacks);
  LaunchLedger(const LaunchLedger&) = delete;
  LaunchLedger& operator=(const LaunchLedger&) = delete;

  // Numbers a launch (1-based, process-wide, in launch order).
  uint64_t number_launch() { return next_sequence_.fetch_add(1, std::memory_order_acq_rel); }
  // The number the next launch will get: a synchronize's mark, read before its call (launches made
  // meanwhile by other threads stay suspects); launches() is one less.
  uint64_t mark() const { return next_sequence_.load(std::memory_order_acquire); }
  uint64_t launches() const { return mark() - 1; }
  // Numbers a launch among the calling thread's launches (1-based; thread#N in a policy). Counted per
  // thread and ledger (a forked child's new ledger starts from 1), without an atomic.
  uint32_t number_thread_launch() {
    if (__builtin_expect(t_thread_launches.ledger != serial_, 0)) t_thread_launches = {serial_, 0};
    return ++t_thread_launches.launches;
  }

  // The stream's state, created on first sight (nullptr past the table's room: that stream's launches are
  // not followed). Lock-free; a thread's last stream is found without the table.
  // Inline: every launch asks, and threads mostly launch into the stream they launched into last, whose
  // state is kept per thread (keyed by the ledger's serial number, not its address: a new ledger may reuse
  // a freed one's address); any other stream is looked up in the table.
  StreamState* stream(StreamId id) {
    uint64_t key =
        (reinterpret_cast<uint64_t>(id.handle) + 1) ^ (static_cast<uint64_t>(id.per_thread_owner) << 48);
    if (__builtin_expect(t_last_stream.ledger == serial_ && t_last_stream.key == key, 1))
      return t_last_stream.state;
    return find_stream(id, key);
  }
  template <typename Visit>
  void for_each_stream(Visit&& visit) const {
    streams_.for_each(visit);
  }

  // Proofs: the launches through `through` completed, on one stream or on all.
  void synced(StreamState* state, uint64_t through) {
    if (state) atomic_max(state->synced_through, through);
  }
  void device_synced(uint64_t through) { atomic_max(device_synced_through_, through); }
  uint64_t device_synced_through() const { return device_synced_through_.load(std::memory_order_acquire); }

  // Events (engine.h says when each is called): a record on `state` with the mark taken before it, a
  // creation or end (the handle stands for no record), the point a wait or synchronize waits for (read
  // before the call), a wait that returned, and a synchronize or query that returned success.
  void note_event_record(const void* event, StreamState* state, uint64_t mark);
  void forget_event(const void* event);
  EventPoint event_point(const void* event) const;
  void note_stream_wait(StreamState* state, const EventPoint& awaited);
  void event_completed(const EventPoint& point) {
    if (point.stream) atomic_max(point.stream->synced_through, point.through);
  }
  // Follows the waits from what is known complete (called before every view of the suspects).
  void settle_waits() const;

  // How many launches could have faulted, where the suspects are fewer: `unfinished` launches on record not
  // known to have completed, and `more` where older ones, never proved, were pushed out of their rings.
  struct SuspectCount {
    uint64_t unfinished = 0;
    bool more = false;
    std::vector<LaunchRecord> cut;  // the older ones the suspects leave out, so that a pin rule covers them
  };
  // The launches not known to have completed, oldest first, at most StreamState::kRing (the newest): on
  // `only_stream`, or on every stream (nullptr); `exclude_sequence` left out. `count`, where given, says how
  // many there were before the cut.
  std::vector<ReportedLaunch> suspects(const StreamState* only_stream, uint64_t exclude_sequence,
                                       SuspectCount* count = nullptr) const;

 private:
  struct LastStream {
    uint64_t ledger;
    uint64_t key;
    StreamState* state;
  };
  static inline thread_local LastStream t_last_stream{0, 0, nullptr};
  struct ThreadLaunches {
    uint64_t ledger;
    uint32_t launches;
  };
  static inline thread_local ThreadLaunches t_thread_launches{0, 0};
  StreamState* find_stream(StreamId id, uint64_t key);

  const size_t ring_capacity_;
  const bool keep_stacks_;
  const uint64_t serial_;  // distinguishes ledgers for the per-thread cache of the last stream (never 0)
  std::atomic<uint64_t> next_sequence_{1};
  std::atomic<uint64_t> device_synced_through_{0};
  HandleTable<StreamState> streams_;
  // Streams by StreamState::number (index 0 unused), so that an event's record is one word.
  std::unique_ptr<std::atomic<StreamState*>[]> streams_by_number_;
  std::atomic<uint32_t> next_stream_number_{0};
  HandleTable<EventState> events_;
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
