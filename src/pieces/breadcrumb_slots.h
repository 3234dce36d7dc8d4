// The breadcrumb slots (docs/localize.md): pinned, host-mapped words the GPU writes after launches, one per
// stream (and, with graph breadcrumbs, one per branch of a captured graph). This piece hands the slots out
// and reads them back: after each launch the shim enqueues a write of the launch's number into its stream's
// slot, so when the first error surfaces each slot says how far its stream got, and the first launch after
// it on each stream is all that can have faulted. The slots themselves are the shim's (shim/breadcrumbs.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "pieces/in_flight.h"
#include "pieces/launch_ledger.h"
#include "records.h"

namespace blockrun {

// A graph branch slot before any replay began (a fresh slot holds 0, which reads as "began, nothing done").
inline constexpr uint64_t kGraphNotStarted = ~uint64_t{0};

// What the breadcrumbs say: per stream the first launch after the last one its slot shows complete, and where
// no breadcrumb write followed that one (LaunchRecord::breadcrumb), the launches after it through the first
// that had one, all oldest first; and the streams whose first such launch left the ring (who it was is lost).
struct BreadcrumbView {
  std::vector<ReportedLaunch> heads;
  std::vector<std::pair<StreamId, uint64_t>> lost;  // stream, the last launch known complete on it
};

class BreadcrumbSlots {
 public:
  // Which breadcrumbs the process asked for: after every `every`-th launch of a stream (`stream`,
  // Config::breadcrumbs and breadcrumb_every, a power of two), and nodes in captured graphs (`graph`).
  // Default: none (tests that hand slots out directly).
  BreadcrumbSlots() = default;
  BreadcrumbSlots(bool stream, uint64_t every, bool graph)
      : stream_(stream),
        every_mask_(every > 1 && (every & (every - 1)) == 0 ? every - 1 : 0),
        graph_(graph),
        any_(stream || graph) {}
  bool stream() const { return stream_; }
  bool graph() const { return graph_; }
  // Either kind: one test, asked twice on every launch.
  bool any() const { return any_; }
  // Whether the launch at `ring_place` (LaunchLedger's place of it in its stream's ring) gets its stream's
  // write: every N-th launch of a stream.
  bool takes(uint64_t ring_place) const { return ((ring_place + 1) & every_mask_) == 0; }
  // Stream breadcrumbs are asked for and their slots are set: reading them says how far each stream got.
  bool stream_ready() const { return stream_ && ready(); }

  // `slots` (count of them) must outlive this; may be called while other threads launch: their launches
  // until then go without breadcrumbs. nullptr takes them away.
  void set(volatile uint64_t* slots, uint32_t count) {
    count_ = slots ? count : 0;
    slots_.store(slots, std::memory_order_release);  // published after the count
  }
  bool ready() const { return slots_.load(std::memory_order_acquire) != nullptr; }

  // A slot of its own, or -1 where they are used up (or not set up).
  int32_t new_slot();
  // The slot of `stream` (given on first use), or -1: more streams than slots.
  int32_t slot_of(StreamState& stream);
  // A slot newly handed to a graph branch says that no replay began. No GPU write to it can be pending.
  void mark_not_started(int32_t slot) { slots_.load(std::memory_order_acquire)[slot] = kGraphNotStarted; }
  // The slots, for reading graph branches (nullptr: none).
  const volatile uint64_t* slots() const { return slots_.load(std::memory_order_acquire); }

  // Raises each stream's known-complete mark in `ledger` to its slot's value, then says what is unfinished.
  BreadcrumbView read(LaunchLedger& ledger) const;
  // The launches not known to have completed, as read() names them (each stream's first unfinished one and,
  // where no breadcrumb write followed it, those after it through one that had), oldest first, up to `max`;
  // the count written.
  // Async-signal-safe, for the fatal-signal record: no allocation, and a stream whose ring another thread
  // holds at that moment is left out rather than waited for.
  size_t in_flight_now(const LaunchLedger& ledger, InFlight* out, size_t max) const;

 private:
  bool stream_ = false;
  uint64_t every_mask_ = 0;  // N less 1: the N-th launches are those where it masks 0
  bool graph_ = false;
  bool any_ = false;
  std::atomic<volatile uint64_t*> slots_{nullptr};
  uint32_t count_ = 0;
  std::atomic<uint32_t> next_{0};
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
