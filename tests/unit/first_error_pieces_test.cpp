// The first error's two small pieces alone: the latch that lets one thread take it
// (src/pieces/first_error_latch.h) and the driver's log it carries (src/cuda/driver_log.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/driver_log.h"
#include "pieces/first_error_latch.h"

namespace blockrun {
namespace {

TEST(FirstErrorLatch, OnlyTheFirstTakesItAndTheRestAreCounted) {
  FirstErrorLatch latch;
  EXPECT_FALSE(latch.taken());
  EXPECT_TRUE(latch.wait_for_record(0));  // nothing taken: nothing to wait for
  EXPECT_TRUE(latch.take());
  EXPECT_FALSE(latch.take());
  latch.count_later();
  EXPECT_TRUE(latch.taken());
  EXPECT_EQ(latch.later(), 2u);
}

TEST(FirstErrorLatch, TheWritingThreadDoesNotWaitForItself) {
  FirstErrorLatch latch;
  ASSERT_TRUE(latch.take());
  {
    FirstErrorLatch::Writing writing(latch);
    EXPECT_FALSE(latch.wait_for_record(1000));  // its own record: not written yet, and no wait
  }
  EXPECT_TRUE(latch.wait_for_record(0));
}

TEST(DriverLog, AnErrorCarriesWhatItsOwnThreadWroteJustBefore) {
  DriverLog log;
  log.note("too old", 7, 1, 0);
  const std::string mine = "Returning 700 from cuStreamSynchronize\n";
  const uint64_t now = 2 * DriverLog::kWindowMs;
  log.note(mine.data(), mine.size(), 1, now - 5);
  log.note("other thread", 12, 2, now - 5);
  EXPECT_EQ(log.recent(1, now), (std::vector<std::string>{"Returning 700 from cuStreamSynchronize"}));
  EXPECT_EQ(log.recent(2, now), (std::vector<std::string>{"other thread"}));
}

TEST(DriverLog, KeepsOnlyTheNewest) {
  DriverLog log;
  for (size_t i = 0; i < DriverLog::kKept + 4; ++i) {
    std::string text = "message " + std::to_string(i);
    log.note(text.data(), text.size(), 1, 0);
  }
  std::vector<std::string> kept = log.recent(1, 0);
  ASSERT_EQ(kept.size(), DriverLog::kKept);
  EXPECT_EQ(kept.front(), "message 4");
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
