// The launch ledger (see launch_ledger.h).
#include "pieces/launch_ledger.h"

#include <algorithm>

#include "util/instance_serial.h"

namespace blockrun {

namespace {

constexpr size_t kStreamCapacity = 1 << 12;
// Events followed for the order they give streams (64 KiB); past it, waits on new events prove nothing.
constexpr size_t kEventCapacity = 1 << 12;

}  // namespace

LaunchLedger::LaunchLedger(size_t ring_capacity, bool keep_stacks)
    : ring_capacity_(ring_capacity),
      keep_stacks_(keep_stacks),
      serial_(next_instance_serial<LaunchLedger>()),
      streams_(kStreamCapacity),
      streams_by_number_(new std::atomic<StreamState*>[kStreamCapacity + 1]()),
      events_(kEventCapacity) {}

StreamState* LaunchLedger::find_stream(StreamId id, uint64_t key) {
  StreamState* state = streams_.find_or_insert(key, [&] {
    auto* created = new StreamState(ring_capacity_, keep_stacks_);
    created->id = id;
    uint32_t number = next_stream_number_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (number <= kStreamCapacity) {
      created->number = static_cast<uint16_t>(number);
      streams_by_number_[number].store(created, std::memory_order_release);
    }
    return created;
  });
  if (state) t_last_stream = LastStream{serial_, key, state};
  return state;
}

void LaunchLedger::note_event_record(const void* event, StreamState* state, uint64_t mark) {
  if (!event) return;
  EventState* known =
      events_.find_or_insert(reinterpret_cast<uint64_t>(event), [] { return new EventState; });
  if (!known) return;
  uint64_t through = mark - 1;
  bool fits = state && state->number && through <= EventState::kThroughMask;
  known->record.store(fits ? uint64_t{state->number} << EventState::kThroughBits | through : 0,
                      std::memory_order_release);
}

void LaunchLedger::forget_event(const void* event) {
  if (EventState* known = event ? events_.find(reinterpret_cast<uint64_t>(event)) : nullptr)
    known->record.store(0, std::memory_order_release);
}

EventPoint LaunchLedger::event_point(const void* event) const {
  EventState* known = event ? events_.find(reinterpret_cast<uint64_t>(event)) : nullptr;
  uint64_t record = known ? known->record.load(std::memory_order_acquire) : 0;
  uint64_t number = record >> EventState::kThroughBits;
  if (number == 0) return {};
  return EventPoint{streams_by_number_[number].load(std::memory_order_acquire),
                    record & EventState::kThroughMask};
}

void LaunchLedger::note_stream_wait(StreamState* state, const EventPoint& awaited) {
  if (!awaited.stream || !state || state == awaited.stream) return;
  // Read with a read-modify-write after the wait returned: a synchronize whose mark is higher began after
  // it (the counter's modification order; engine.h).
  uint64_t at = next_sequence_.fetch_add(0, std::memory_order_acq_rel);
  state->add_wait(StreamState::Wait{at, awaited.stream, awaited.through});
}

void LaunchLedger::settle_waits() const {
  // A stream past its wait proves the launches before the awaited record; those may put another stream past
  // a wait of its own: repeat while anything rose (a few passes: chains of waits are short).
  uint64_t device_synced = device_synced_through();
  for (int pass = 0; pass < 4; ++pass) {
    bool rose = false;
    streams_.for_each([&](StreamState& state) {
      StreamState::Wait past[StreamState::kWaits];
      uint64_t through = std::max(device_synced, state.synced_through.load(std::memory_order_acquire));
      size_t count = state.waits_past(through, past);
      for (size_t i = 0; i < count; ++i)
        rose = atomic_max(past[i].other->synced_through, past[i].other_through) || rose;
    });
    if (!rose) return;
  }
}

std::vector<ReportedLaunch> LaunchLedger::suspects(const StreamState* only_stream, uint64_t exclude_sequence,
                                                   SuspectCount* count) const {
  settle_waits();
  std::vector<ReportedLaunch> found;
  uint64_t device_synced = device_synced_through();
  bool more = false;
  auto visit = [&](StreamState& state) {
    uint64_t after = std::max(device_synced, state.synced_through.load(std::memory_order_acquire));
    more = state.collect(after, exclude_sequence, &found) || more;
  };
  if (only_stream) {
    visit(*const_cast<StreamState*>(only_stream));
  } else {
    streams_.for_each(visit);
  }
  std::sort(found.begin(), found.end(), [](const ReportedLaunch& a, const ReportedLaunch& b) {
    return a.record.sequence < b.record.sequence;
  });
  if (count) *count = SuspectCount{found.size(), more, {}};
  if (found.size() > StreamState::kRing) {
    if (count)
      for (auto it = found.begin(); it != found.end() - StreamState::kRing; ++it)
        count->cut.push_back(it->record);
    found.erase(found.begin(), found.end() - StreamState::kRing);
  }
  return found;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
