// The histogram behind the summary's medians and p90s: known distributions come back within the stated bound
// (1/32), single and equal samples exactly, extremes without overflow, and counts from several threads whole.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "pieces/duration_histogram.h"

namespace blockrun {
namespace {

// Whether `reported` is within the histogram's bound of `truth`.
::testing::AssertionResult within_bound(uint64_t reported, uint64_t truth) {
  double error = (static_cast<double>(reported) - static_cast<double>(truth)) / static_cast<double>(truth);
  if (error <= DurationHistogram::kRelativeError && -error <= DurationHistogram::kRelativeError)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << reported << " is " << error * 100 << "% off " << truth;
}

TEST(DurationHistogram, EmptyReportsZero) {
  DurationHistogram histogram;
  EXPECT_EQ(histogram.count(), 0u);
  EXPECT_EQ(histogram.quantile(0.5), 0u);
  EXPECT_EQ(histogram.quantile(1), 0u);
}

TEST(DurationHistogram, OneToAThousandNanoseconds) {
  DurationHistogram histogram;
  for (uint64_t ns = 1; ns <= 1000; ++ns) histogram.record(ns);
  EXPECT_EQ(histogram.count(), 1000u);
  // 500 is in [496, 512), whose middle is 503; 900 in [896, 928), middle 911.
  EXPECT_EQ(histogram.quantile(0.5), 503u);
  EXPECT_EQ(histogram.quantile(0.9), 911u);
  EXPECT_TRUE(within_bound(histogram.quantile(0.5), 500));
  EXPECT_TRUE(within_bound(histogram.quantile(0.9), 900));
  EXPECT_EQ(histogram.quantile(0), 1u);     // the smallest (rank 1), exact below 32 ns
  EXPECT_EQ(histogram.quantile(1), 1000u);  // [992, 1024)'s middle, 1007, brought down to the largest
  for (int percent = 1; percent <= 100; ++percent)
    EXPECT_TRUE(within_bound(histogram.quantile(percent / 100.0), 10 * percent)) << percent << "%";
}

// Every bucket below 2^45 ns (9.8 hours), at both its ends: the values it holds are within the bound of its
// middle, and the buckets follow each other without a gap.
TEST(DurationHistogram, EveryBucketsMiddleIsWithinTheBoundOfItsValues) {
  for (uint64_t ns = 0; ns < 32; ++ns) {
    EXPECT_EQ(DurationHistogram::bucket_of(ns), ns);
    EXPECT_EQ(DurationHistogram::middle_of(ns), ns);
  }
  size_t expected = 32;
  for (int power = 5; power < DurationHistogram::kTrackedBits; ++power) {
    uint64_t width = uint64_t{1} << (power - DurationHistogram::kSubBucketBits);
    for (uint64_t sub = 0; sub < 16; ++sub, ++expected) {
      uint64_t lowest = (uint64_t{1} << power) + sub * width, highest = lowest + width - 1;
      ASSERT_EQ(DurationHistogram::bucket_of(lowest), expected) << lowest;
      ASSERT_EQ(DurationHistogram::bucket_of(highest), expected) << highest;
      uint64_t middle = DurationHistogram::middle_of(expected);
      ASSERT_TRUE(within_bound(middle, lowest)) << "bucket " << expected;
      ASSERT_TRUE(within_bound(middle, highest)) << "bucket " << expected;
    }
  }
  EXPECT_EQ(expected, DurationHistogram::kBuckets - 1);  // and the last bucket holds everything from 2^45 ns
  EXPECT_EQ(DurationHistogram::bucket_of(uint64_t{1} << DurationHistogram::kTrackedBits), expected);
  // A bucket 2^20 ns wide (in [2^24, 2^25)) has its middle at 2^19 - 1 past its lowest value.
  uint64_t lowest = (uint64_t{1} << 24) + 3 * (uint64_t{1} << 20);
  EXPECT_EQ(DurationHistogram::middle_of(DurationHistogram::bucket_of(lowest)), lowest + (1 << 19) - 1);
}

TEST(DurationHistogram, OneSampleIsExact) {
  DurationHistogram histogram;
  histogram.record(123'456'789);
  EXPECT_EQ(histogram.count(), 1u);
  EXPECT_EQ(histogram.quantile(0), 123'456'789u);
  EXPECT_EQ(histogram.quantile(0.5), 123'456'789u);
  EXPECT_EQ(histogram.quantile(0.9), 123'456'789u);
}

TEST(DurationHistogram, EqualSamplesAreExact) {
  DurationHistogram histogram;
  for (int i = 0; i < 1000; ++i) histogram.record(80'123);
  EXPECT_EQ(histogram.quantile(0.5), 80'123u);
  EXPECT_EQ(histogram.quantile(0.9), 80'123u);
  EXPECT_EQ(histogram.min(), 80'123u);
  EXPECT_EQ(histogram.max(), 80'123u);
}

TEST(DurationHistogram, RanksAreNearestRankWithoutRoundingUp) {
  DurationHistogram histogram;
  for (uint64_t ns = 1; ns <= 10; ++ns) histogram.record(ns);
  EXPECT_EQ(histogram.quantile(0.5), 5u);
  EXPECT_EQ(histogram.quantile(0.7), 7u);  // 0.7 x 10 is 7.000000000000001 in doubles
  EXPECT_EQ(histogram.quantile(0.9), 9u);
  EXPECT_EQ(histogram.quantile(0.91), 10u);
}

TEST(DurationHistogram, ZeroAndHoursAndTheLargestValue) {
  DurationHistogram zeros;
  zeros.record(0);
  zeros.record(0);
  EXPECT_EQ(zeros.quantile(0.5), 0u);
  EXPECT_EQ(zeros.quantile(0.9), 0u);

  const uint64_t hour = 3'600'000'000'000;
  DurationHistogram hours;
  for (uint64_t h = 1; h <= 9; ++h) hours.record(h * hour);  // within 2^45 ns (9.77 hours): within the bound
  EXPECT_TRUE(within_bound(hours.quantile(0.5), 5 * hour));
  EXPECT_EQ(hours.quantile(1), 9 * hour);

  // From 2^45 ns on, durations share one bucket, which reports the largest.
  DurationHistogram beyond;
  beyond.record(1000);
  beyond.record(20 * hour);
  beyond.record(UINT64_MAX);
  EXPECT_EQ(DurationHistogram::bucket_of(UINT64_MAX), DurationHistogram::kBuckets - 1);
  EXPECT_EQ(DurationHistogram::bucket_of(20 * hour), DurationHistogram::kBuckets - 1);
  EXPECT_EQ(beyond.count(), 3u);
  EXPECT_TRUE(within_bound(beyond.quantile(0), 1000));
  EXPECT_EQ(beyond.quantile(0.5), UINT64_MAX);
  EXPECT_EQ(beyond.quantile(1), UINT64_MAX);
}

TEST(DurationHistogram, ThreadsRecordingAtOnceLoseNoSample) {
  DurationHistogram histogram;
  constexpr int kThreads = 8, kEach = 100'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&histogram, t] {
      // Each thread its own range, all in a few shared buckets: 1,000,000 to 1,099,999 ns.
      for (int i = 0; i < kEach; ++i)
        histogram.record(1'000'000 + static_cast<uint64_t>(t * 7 + i) % 100'000);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(histogram.count(), static_cast<uint64_t>(kThreads) * kEach);
  EXPECT_EQ(histogram.min(), 1'000'000u);
  EXPECT_EQ(histogram.max(), 1'099'999u);
  EXPECT_TRUE(within_bound(histogram.quantile(0.5), 1'050'000));
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
