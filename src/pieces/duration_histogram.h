// The distribution of one kernel's blocked launch times (wall or GPU), for the median and p90 of the summary:
// a log-linear histogram of nanosecond durations that records without locks or allocation and answers any
// quantile within 1/32 (3.125%) of the true value.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace blockrun {

// The buckets, as HdrHistogram lays them out: below 32 ns every duration has a bucket of its own; from there
// each power of two [2^e, 2^(e+1)) is cut into 16 equal buckets 2^(e-4) wide. A bucket is thus never wider
// than 1/16 of the values in it, and its middle is within 1/32 of each of them: the bound on every quantile
// reported. Durations of 2^45 ns (9.8 hours) and more share one bucket more, which reports the largest of
// them. 673 buckets of 8 bytes (5.3 KiB): BlockStats makes one only for a kernel that is blocked.
class DurationHistogram {
 public:
  static constexpr int kSubBucketBits = 4;  // 16 buckets per power of two
  static constexpr double kRelativeError = 1.0 / (2 << kSubBucketBits);
  static constexpr int kTrackedBits = 45;  // within the bound: durations below 2^45 ns
  static constexpr size_t kBuckets = ((kTrackedBits - kSubBucketBits + 1) << kSubBucketBits) + 1;

  // Lock-free (relaxed atomics); safe from any number of threads at once.
  void record(uint64_t ns);

  // Samples recorded (the sum of the buckets, so that it agrees with quantile()).
  uint64_t count() const;
  // The sample of rank ceil(q x count) (q from 0 to 1; the median is 0.5), as the middle of its bucket
  // brought within the smallest and largest recorded: within kRelativeError of it, exact where all samples
  // are equal. 0 when nothing was recorded.
  uint64_t quantile(double q) const;
  uint64_t min() const { return min_.load(std::memory_order_relaxed); }  // UINT64_MAX when empty
  uint64_t max() const { return max_.load(std::memory_order_relaxed); }

  static size_t bucket_of(uint64_t ns);
  // The middle of a bucket (its one value below 32 ns; the last bucket's smallest, 2^45).
  static uint64_t middle_of(size_t bucket);

 private:
  std::atomic<uint64_t> counts_[kBuckets] = {};
  std::atomic<uint64_t> min_{UINT64_MAX};
  std::atomic<uint64_t> max_{0};
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
