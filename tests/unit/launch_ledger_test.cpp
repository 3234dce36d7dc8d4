// The launch ledger alone (src/pieces/launch_ledger.h): which launches are suspects, and what proves them
// complete: a synchronize of their stream or of the device, and the order events give streams (a record, a
// wait on it by another stream, then a proof on the waiting stream past the wait).
#include <gtest/gtest.h>

#include <vector>

#include "pieces/launch_ledger.h"
#include "ledger_helpers.h"

namespace blockrun {
namespace {

using testing::stream;

const void* const kEvent = reinterpret_cast<const void*>(0xe000);

class LedgerTest : public ::testing::Test {
 protected:
  LaunchLedger ledger{StreamState::kRing, false};

  uint64_t launch(StreamState* state) { return testing::record_launch(ledger, state); }

  std::vector<uint64_t> suspects() const {
    std::vector<uint64_t> numbers;
    for (const ReportedLaunch& launch : ledger.suspects(nullptr, 0))
      numbers.push_back(launch.record.sequence);
    return numbers;
  }
};

TEST_F(LedgerTest, AStreamSynchronizeProvesOnlyThatStreamsLaunchesBeforeItsMark) {
  StreamState* side = ledger.stream(stream(0x1));
  StreamState* main = ledger.stream(stream(0x2));
  uint64_t fill = launch(side);
  launch(main);
  ledger.synced(main, ledger.mark() - 1);
  uint64_t second = launch(main);
  EXPECT_EQ(suspects(), (std::vector<uint64_t>{fill, second}));
  ledger.device_synced(ledger.mark() - 1);
  EXPECT_TRUE(suspects().empty());
}

TEST_F(LedgerTest, AStreamPastAWaitProvesTheLaunchesBeforeTheAwaitedRecord) {
  StreamState* side = ledger.stream(stream(0x1));
  StreamState* main = ledger.stream(stream(0x2));
  uint64_t fill = launch(side);
  ledger.note_event_record(kEvent, side, ledger.mark());
  uint64_t late_fill = launch(side);  // after the record: not covered by it
  ledger.note_stream_wait(main, ledger.event_point(kEvent));
  uint64_t before_proof = launch(main);
  EXPECT_EQ(suspects(), (std::vector<uint64_t>{fill, late_fill, before_proof}));
  // The main stream's launch after the wait completed (a breadcrumb, a blocked launch's synchronize).
  ledger.synced(main, before_proof);
  EXPECT_EQ(suspects(), (std::vector<uint64_t>{late_fill}));
}

TEST_F(LedgerTest, AWaitThatTheProofDoesNotPassProvesNothing) {
  StreamState* side = ledger.stream(stream(0x1));
  StreamState* main = ledger.stream(stream(0x2));
  uint64_t fill = launch(side);
  uint64_t early = launch(main);
  ledger.note_event_record(kEvent, side, ledger.mark());
  ledger.synced(main, early);  // proved through a launch made before the wait
  ledger.note_stream_wait(main, ledger.event_point(kEvent));
  EXPECT_EQ(suspects(), (std::vector<uint64_t>{fill}));
}

TEST_F(LedgerTest, AnEventsSynchronizeProvesItsRecordAndAForgottenEventNothing) {
  StreamState* side = ledger.stream(stream(0x1));
  launch(side);
  ledger.note_event_record(kEvent, side, ledger.mark());
  uint64_t after = launch(side);
  EventPoint point = ledger.event_point(kEvent);
  ledger.event_completed(point);
  EXPECT_EQ(suspects(), (std::vector<uint64_t>{after}));
  // Destroyed (or created again with the same handle): no record to stand for.
  ledger.forget_event(kEvent);
  EXPECT_EQ(ledger.event_point(kEvent).stream, nullptr);
}

TEST_F(LedgerTest, ProofsFollowAChainOfWaits) {
  StreamState* a = ledger.stream(stream(0x1));
  StreamState* b = ledger.stream(stream(0x2));
  StreamState* c = ledger.stream(stream(0x3));
  const void* on_a = reinterpret_cast<const void*>(0xe001);
  const void* on_b = reinterpret_cast<const void*>(0xe002);
  launch(a);
  ledger.note_event_record(on_a, a, ledger.mark());
  ledger.note_stream_wait(b, ledger.event_point(on_a));
  launch(b);
  ledger.note_event_record(on_b, b, ledger.mark());
  ledger.note_stream_wait(c, ledger.event_point(on_b));
  uint64_t last = launch(c);
  ledger.synced(c, last);
  EXPECT_TRUE(suspects().empty());
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
