// Handing out and reading back the breadcrumb slots (breadcrumb_slots.h).
#include "breadcrumb_slots.h"

#include <algorithm>

namespace blockrun {

namespace {

// The first unfinished launch of `state` (its sequence above `after`), read without waiting: false when there
// is none, or when another thread holds the ring (in the fatal-signal path: the interrupted code).
bool first_unfinished_now(StreamState& state, uint64_t after, InFlight* found) {
  if (state.lock.test_and_set(std::memory_order_acquire)) return false;
  const LaunchRecord* first = nullptr;
  uint64_t end = state.written.load(std::memory_order_relaxed);
  for (uint64_t i = state.oldest_kept(end); i < end; ++i) {
    const LaunchRecord& record = state.ring[i % state.capacity];
    if (record.sequence > after && !record.refused && (!first || record.sequence < first->sequence))
      first = &record;
  }
  if (first)
    *found = InFlight{first->sequence, first->kernel, first->stream,       first->kernel_ordinal,
                      first->grid,     first->block,  first->shared_memory};
  state.lock.clear(std::memory_order_release);
  return first != nullptr;
}

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
    InFlight found{};
    if (first_unfinished_now(state, after, &found)) insert_oldest(found, out, &count, max);
  });
  return count;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
