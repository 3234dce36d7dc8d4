// The breadcrumb slots alone (src/pieces/breadcrumb_slots.h): a slot per stream, handed out once and never
// more than there are, and what reading them back says: each stream's first launch past its slot's value
// (with those after it through one with its write, where it had none), oldest first, and the streams whose
// first unfinished launch left the ring; and its switches: which kinds of breadcrumb were asked for, and
// which launches of a stream get its write (--breadcrumb-every).
#include <gtest/gtest.h>

#include <vector>

#include "pieces/breadcrumb_slots.h"
#include "pieces/launch_ledger.h"
#include "ledger_helpers.h"

namespace blockrun {
namespace {

using testing::stream;

class BreadcrumbSlotsTest : public ::testing::Test {
 protected:
  LaunchLedger ledger{StreamState::kRing, false};
  BreadcrumbSlots breadcrumbs;
  volatile uint64_t slots[2] = {0, 0};

  // A launch on `state`, with its breadcrumb write enqueued (`written`) as the shim notes once the call
  // succeeded.
  uint64_t launch(StreamState* state, bool written = true) {
    LaunchRecord record;
    record.sequence = ledger.number_launch();
    record.stream = state->id;
    uint64_t place = state->push(record, nullptr);
    if (written) state->note_breadcrumb(place, record.sequence);
    return record.sequence;
  }
};

TEST_F(BreadcrumbSlotsTest, NoSlotsBeforeTheyAreSetUp) {
  StreamState* main = ledger.stream(stream(0x1));
  EXPECT_FALSE(breadcrumbs.ready());
  EXPECT_EQ(breadcrumbs.new_slot(), -1);
  EXPECT_EQ(breadcrumbs.slot_of(*main), -1);
}

TEST_F(BreadcrumbSlotsTest, EachStreamKeepsOneSlotAndTheyRunOut) {
  breadcrumbs.set(slots, 2);
  StreamState* first = ledger.stream(stream(0x1));
  StreamState* second = ledger.stream(stream(0x2));
  StreamState* third = ledger.stream(stream(0x3));
  EXPECT_EQ(breadcrumbs.slot_of(*first), 0);
  EXPECT_EQ(breadcrumbs.slot_of(*first), 0);
  EXPECT_EQ(breadcrumbs.slot_of(*second), 1);
  EXPECT_EQ(breadcrumbs.slot_of(*third), -1);  // more streams than slots: this one goes without
  EXPECT_EQ(breadcrumbs.new_slot(), -1);
}

TEST_F(BreadcrumbSlotsTest, ReadingGivesEachStreamsFirstUnfinishedLaunchOldestFirst) {
  breadcrumbs.set(slots, 2);
  StreamState* first = ledger.stream(stream(0x1));
  StreamState* second = ledger.stream(stream(0x2));
  breadcrumbs.slot_of(*first);
  breadcrumbs.slot_of(*second);
  uint64_t done = launch(first);
  uint64_t second_head = launch(second);
  uint64_t first_head = launch(first);
  launch(second);
  slots[0] = done;  // the GPU got past the first stream's first launch
  BreadcrumbView view = breadcrumbs.read(ledger);
  ASSERT_EQ(view.heads.size(), 2u);
  EXPECT_EQ(view.heads[0].record.sequence, second_head);
  EXPECT_EQ(view.heads[1].record.sequence, first_head);
  EXPECT_TRUE(view.lost.empty());
  // Reading raised the first stream's mark: its completed launch is no suspect any more.
  for (const ReportedLaunch& suspect : ledger.suspects(nullptr, 0)) EXPECT_NE(suspect.record.sequence, done);
}

// A launch without its write may have completed with the slot short of it: the launches after it come too,
// through the first with its write (that one, or one before it, did not complete); none after that one.
TEST_F(BreadcrumbSlotsTest, ALaunchWithoutItsWriteBringsTheOnesAfterItThroughOneWithItsWrite) {
  breadcrumbs.set(slots, 1);
  StreamState* main = ledger.stream(stream(0x1));
  breadcrumbs.slot_of(*main);
  uint64_t done = launch(main);
  uint64_t unwritten = launch(main, false);
  uint64_t also_unwritten = launch(main, false);
  uint64_t written = launch(main);
  launch(main);
  slots[0] = done;
  BreadcrumbView view = breadcrumbs.read(ledger);
  ASSERT_EQ(view.heads.size(), 3u);
  EXPECT_EQ(view.heads[0].record.sequence, unwritten);
  EXPECT_FALSE(view.heads[0].record.breadcrumb);
  EXPECT_EQ(view.heads[1].record.sequence, also_unwritten);
  EXPECT_EQ(view.heads[2].record.sequence, written);
  EXPECT_TRUE(view.heads[2].record.breadcrumb);
}

// Two threads: #2 numbered first but pushed after #3. Which reached the driver first is unknown, so #2's
// write proves nothing of #3: #2 goes as a launch without its write, and both are candidates.
TEST_F(BreadcrumbSlotsTest, ALaunchPushedAfterALaterNumberedOneGoesWithoutItsWrite) {
  breadcrumbs.set(slots, 1);
  StreamState* main = ledger.stream(stream(0x1));
  breadcrumbs.slot_of(*main);
  slots[0] = launch(main);  // #1, completed
  LaunchRecord first, second;
  first.sequence = ledger.number_launch();
  second.sequence = ledger.number_launch();
  first.stream = second.stream = main->id;
  uint64_t second_place = main->push(second, nullptr);
  main->note_breadcrumb(second_place, second.sequence);
  uint64_t first_place = main->push(first, nullptr);
  EXPECT_EQ(first_place, StreamState::kNoPlace);
  main->note_breadcrumb(first_place, first.sequence);
  BreadcrumbView view = breadcrumbs.read(ledger);
  ASSERT_EQ(view.heads.size(), 2u);
  EXPECT_EQ(view.heads[0].record.sequence, first.sequence);
  EXPECT_FALSE(view.heads[0].record.breadcrumb);
  EXPECT_EQ(view.heads[1].record.sequence, second.sequence);
}

// A stream without a slot: nothing on the GPU says how far it got, so every launch past the host's view is a
// candidate.
TEST_F(BreadcrumbSlotsTest, AStreamWithoutASlotGivesAllItsUnfinishedLaunches) {
  breadcrumbs.set(slots, 1);
  StreamState* with_slot = ledger.stream(stream(0x1));
  StreamState* without = ledger.stream(stream(0x2));
  breadcrumbs.slot_of(*with_slot);
  EXPECT_EQ(breadcrumbs.slot_of(*without), -1);
  slots[0] = launch(with_slot);
  uint64_t first = launch(without, false);
  uint64_t second = launch(without, false);
  BreadcrumbView view = breadcrumbs.read(ledger);
  ASSERT_EQ(view.heads.size(), 2u);
  EXPECT_EQ(view.heads[0].record.sequence, first);
  EXPECT_EQ(view.heads[1].record.sequence, second);
}

TEST_F(BreadcrumbSlotsTest, AHeadPushedOutOfTheRingIsLost) {
  breadcrumbs.set(slots, 1);
  StreamState* main = ledger.stream(stream(0x1));
  breadcrumbs.slot_of(*main);
  for (size_t i = 0; i < StreamState::kRing + 1; ++i) launch(main);
  BreadcrumbView view = breadcrumbs.read(ledger);
  EXPECT_TRUE(view.heads.empty());
  ASSERT_EQ(view.lost.size(), 1u);
  EXPECT_EQ(view.lost[0].second, 0u);  // nothing known complete on it
}

TEST_F(BreadcrumbSlotsTest, InFlightNowListsTheOldestFirstUpToTheRoomGiven) {
  breadcrumbs.set(slots, 2);
  StreamState* first = ledger.stream(stream(0x1));
  StreamState* second = ledger.stream(stream(0x2));
  breadcrumbs.slot_of(*first);
  breadcrumbs.slot_of(*second);
  uint64_t first_head = launch(first);
  uint64_t second_head = launch(second);
  InFlight out[1];
  ASSERT_EQ(breadcrumbs.in_flight_now(ledger, out, 1), 1u);
  EXPECT_EQ(out[0].sequence, first_head);
  slots[0] = first_head;
  ASSERT_EQ(breadcrumbs.in_flight_now(ledger, out, 1), 1u);
  EXPECT_EQ(out[0].sequence, second_head);
}

// The fatal-signal record lists what read() would name: a launch without its write brings those after it
// through one with its write, and only the first with its own write is known not to have completed.
TEST_F(BreadcrumbSlotsTest, InFlightNowListsTheLaunchesAfterOneWithoutItsWrite) {
  breadcrumbs.set(slots, 1);
  StreamState* main = ledger.stream(stream(0x1));
  breadcrumbs.slot_of(*main);
  uint64_t done = launch(main);
  uint64_t unwritten = launch(main, false);
  uint64_t next = launch(main, false);
  uint64_t written = launch(main);
  launch(main);  // after one with its write: not listed
  slots[0] = done;
  InFlight out[4] = {};
  ASSERT_EQ(breadcrumbs.in_flight_now(ledger, out, 4), 3u);
  EXPECT_EQ(out[0].sequence, unwritten);
  EXPECT_EQ(out[1].sequence, next);
  EXPECT_EQ(out[2].sequence, written);
  for (size_t i = 0; i < 3; ++i) EXPECT_FALSE(out[i].unfinished) << out[i].sequence;
  // Once the GPU is past those three, the next one had its write: known not to have completed.
  slots[0] = written;
  ASSERT_EQ(breadcrumbs.in_flight_now(ledger, out, 4), 1u);
  EXPECT_EQ(out[0].sequence, written + 1);
  EXPECT_TRUE(out[0].unfinished);
  // The room given is kept to: the oldest first.
  slots[0] = done;
  ASSERT_EQ(breadcrumbs.in_flight_now(ledger, out, 2), 2u);
  EXPECT_EQ(out[0].sequence, unwritten);
  EXPECT_EQ(out[1].sequence, next);
}

// ---- the switches: which breadcrumbs the process asked for ----

// The ring places among the first `places` of a stream whose launches get the stream's write.
std::vector<uint64_t> places_taken(const BreadcrumbSlots& breadcrumbs, uint64_t places) {
  std::vector<uint64_t> taken;
  for (uint64_t place = 0; place < places; ++place)
    if (breadcrumbs.takes(place)) taken.push_back(place);
  return taken;
}

TEST(BreadcrumbSwitches, NoneUnlessAskedFor) {
  BreadcrumbSlots none(false, 1, false);
  EXPECT_FALSE(none.stream());
  EXPECT_FALSE(none.graph());
  EXPECT_FALSE(none.any());
  BreadcrumbSlots by_default;
  EXPECT_FALSE(by_default.any());
}

TEST(BreadcrumbSwitches, EitherKindIsAny) {
  BreadcrumbSlots stream_only(true, 1, false);
  EXPECT_TRUE(stream_only.stream());
  EXPECT_FALSE(stream_only.graph());
  EXPECT_TRUE(stream_only.any());
  BreadcrumbSlots graph_only(false, 1, true);
  EXPECT_FALSE(graph_only.stream());
  EXPECT_TRUE(graph_only.graph());
  EXPECT_TRUE(graph_only.any());
  BreadcrumbSlots both(true, 8, true);
  EXPECT_TRUE(both.stream());
  EXPECT_TRUE(both.graph());
  EXPECT_TRUE(both.any());
}

// --breadcrumb-every N: the N-th, 2N-th, ... launch of a stream (ring places N-1, 2N-1, ...) gets the write.
TEST(BreadcrumbSwitches, EveryNthLaunchOfAStreamTakesItsWrite) {
  EXPECT_EQ(places_taken(BreadcrumbSlots(true, 1, false), 200).size(), 200u);
  std::vector<uint64_t> every_four = places_taken(BreadcrumbSlots(true, 4, false), 200);
  ASSERT_EQ(every_four.size(), 50u);
  for (size_t i = 0; i < every_four.size(); ++i) EXPECT_EQ(every_four[i], 4 * i + 3);
  EXPECT_EQ(places_taken(BreadcrumbSlots(true, 64, false), 200), (std::vector<uint64_t>{63, 127, 191}));
}

// The configuration offers powers of two only; anything else is taken as every launch, never as none.
TEST(BreadcrumbSwitches, ANonPowerOfTwoIsTakenAsEveryLaunch) {
  for (uint64_t every : {0, 3, 6, 100})
    EXPECT_EQ(places_taken(BreadcrumbSlots(true, every, false), 130).size(), 130u) << every;
}

// Reading stream breadcrumbs needs them asked for and their slots set: graph breadcrumbs' slots alone are
// not enough, nor is asking before the slots are set (or after they were taken away).
TEST(BreadcrumbSwitches, StreamReadyNeedsStreamBreadcrumbsAndSlots) {
  volatile uint64_t slots[1] = {0};
  BreadcrumbSlots stream(true, 1, false);
  EXPECT_FALSE(stream.stream_ready());
  stream.set(slots, 1);
  EXPECT_TRUE(stream.stream_ready());
  stream.set(nullptr, 0);
  EXPECT_FALSE(stream.stream_ready());
  BreadcrumbSlots graph_only(false, 1, true);
  graph_only.set(slots, 1);
  EXPECT_TRUE(graph_only.ready());
  EXPECT_FALSE(graph_only.stream_ready());
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
