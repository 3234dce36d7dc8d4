// Handing out and reading back the breadcrumb slots (breadcrumb_slots.h).
#include "pieces/breadcrumb_slots.h"

#include <algorithm>

namespace blockrun {

namespace {

// Keeps the oldest `max` of `out` (`count` of them), in order: insertion into a short array.
void insert_oldest(InFlight found, InFlight* out, size_t* count, size_t max) {
  size_t at = *count < max ? (*count)++ : max;
  if (at == max) {
    if (found.sequence >= out[max - 1].sequence) return;
    at = max - 1;
  }
  while (at > 0 && out[at - 1].sequence > found.sequence) {
    out[at] = out[at - 1];
    --at;
  }
  out[at] = found;
}

// Adds to `out` (`count` of them, the oldest `max` kept) the unfinished launches of `state` (sequence above
// `after`) that read() names: the lowest-numbered, and where no breadcrumb write followed it, those after it
// through the first that had one. Read without waiting and without allocating: nothing is added when another
// thread holds the ring (in the fatal-signal path: the interrupted code). A stream gives at most `max`.
void unfinished_now(StreamState& state, uint64_t after, InFlight* out, size_t* count, size_t max) {
  if (state.lock.test_and_set(std::memory_order_acquire)) return;
  uint64_t end = state.written.load(std::memory_order_relaxed);
  uint64_t above = after;  // each pass takes the lowest-numbered unfinished launch above this
  for (size_t taken = 0; taken < max; ++taken) {
    const LaunchRecord* next = nullptr;
    uint64_t next_place = 0;
    for (uint64_t i = state.oldest_kept(end); i < end; ++i) {
      const LaunchRecord& record = state.ring[state.ring_index(i)];
      if (record.sequence > above && !record.refused && (!next || record.sequence < next->sequence)) {
        next = &record;
        next_place = i;
      }
    }
    if (!next) break;
    bool had_its_write = state.breadcrumb_after[state.ring_index(next_place)].load(
                             std::memory_order_acquire) == next->sequence;
    // Known not to have completed: the first, where its own write did not land. A later one's write not
    // landing says only that it or one before it did not complete.
    bool unfinished = taken == 0 && had_its_write;
    insert_oldest(InFlight{next->sequence, next->kernel, next->stream, next->kernel_ordinal, next->grid,
                           next->block, next->shared_memory, unfinished},
                  out, count, max);
    above = next->sequence;
    if (had_its_write) break;
  }
  state.lock.clear(std::memory_order_release);
}

bool earlier(const ReportedLaunch& a, const ReportedLaunch& b) {
  return a.record.sequence < b.record.sequence;
}

}  // namespace

int32_t BreadcrumbSlots::new_slot() {
  if (!ready()) return -1;
  uint32_t next = next_.fetch_add(1, std::memory_order_relaxed);
  return next < count_ ? static_cast<int32_t>(next) : -1;  // used up: this one goes without
}

int32_t BreadcrumbSlots::slot_of(StreamState& stream) {
  int32_t slot = stream.breadcrumb.load(std::memory_order_acquire);
  if (slot >= 0) return slot;
  int32_t next = new_slot();
  if (next < 0) return -1;
  int32_t expected = -1;
  // Another thread may have given this stream a slot meanwhile: then that one stays (and `next` is unused).
  if (!stream.breadcrumb.compare_exchange_strong(expected, next)) return expected;
  return next;
}

BreadcrumbView BreadcrumbSlots::read(LaunchLedger& ledger) const {
  BreadcrumbView view;
  const volatile uint64_t* slots = this->slots();
  // Written by the GPU after each launch on the stream: every launch up to it completed.
  ledger.for_each_stream([&](StreamState& state) {
    int32_t slot = state.breadcrumb.load(std::memory_order_acquire);
    if (slot >= 0 && slots) ledger.synced(&state, slots[slot]);
  });
  ledger.settle_waits();
  uint64_t device_synced = ledger.device_synced_through();
  ledger.for_each_stream([&](StreamState& state) {
    uint64_t after = std::max(device_synced, state.synced_through.load(std::memory_order_acquire));
    // The first unfinished launch was pushed out of the ring: it exists, but who it was is lost.
    if (state.evicted() > after) {
      view.lost.emplace_back(state.id, after);
      return;
    }
    // The lowest-numbered unfinished one (threads launching into one stream at once may have pushed their
    // records out of order). Where no breadcrumb write followed it, the slot cannot show it unfinished: it
    // may have completed and a later one faulted, so the later ones are candidates too, through the first
    // that had a write (that one, or one before it, did not complete).
    std::vector<ReportedLaunch> unfinished;
    state.collect(after, 0, &unfinished);
    std::sort(unfinished.begin(), unfinished.end(), earlier);
    for (ReportedLaunch& launch : unfinished) {
      bool ends = launch.record.breadcrumb;
      view.heads.push_back(std::move(launch));
      if (ends) break;
    }
  });
  std::sort(view.heads.begin(), view.heads.end(), earlier);
  return view;
}

size_t BreadcrumbSlots::in_flight_now(const LaunchLedger& ledger, InFlight* out, size_t max) const {
  const volatile uint64_t* slots = this->slots();
  if (!slots || max == 0) return 0;
  uint64_t device_synced = ledger.device_synced_through();
  size_t count = 0;
  ledger.for_each_stream([&](StreamState& state) {
    int32_t slot = state.breadcrumb.load(std::memory_order_acquire);
    if (slot < 0) return;  // no breadcrumbs on it: how far it got is unknown
    uint64_t after =
        std::max({device_synced, state.synced_through.load(std::memory_order_acquire), slots[slot]});
    unfinished_now(state, after, out, &count, max);
  });
  return count;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
