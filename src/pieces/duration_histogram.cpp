// Recording durations into the log-linear buckets and reading quantiles back (duration_histogram.h).
#include "pieces/duration_histogram.h"

#include <cmath>

namespace blockrun {

namespace {

constexpr uint64_t kSubBuckets = uint64_t{1} << DurationHistogram::kSubBucketBits;
constexpr size_t kOverflowBucket = DurationHistogram::kBuckets - 1;

}  // namespace

size_t DurationHistogram::bucket_of(uint64_t ns) {
  if (ns >> kTrackedBits) return kOverflowBucket;
  if (ns < kSubBuckets) return static_cast<size_t>(ns);
  int power = 63 - __builtin_clzll(ns);  // ns is in [2^power, 2^(power+1)), power >= kSubBucketBits
  uint64_t sub = (ns >> (power - kSubBucketBits)) & (kSubBuckets - 1);
  return (static_cast<size_t>(power - kSubBucketBits + 1) << kSubBucketBits) + sub;
}

uint64_t DurationHistogram::middle_of(size_t bucket) {
  if (bucket >= kOverflowBucket) return uint64_t{1} << kTrackedBits;
  // The first two powers of two (below 2^(kSubBucketBits+1)) have buckets one nanosecond wide.
  if (bucket < 2 * kSubBuckets) return bucket;
  int power = static_cast<int>(bucket >> kSubBucketBits) + kSubBucketBits - 1;
  uint64_t width = uint64_t{1} << (power - kSubBucketBits);
  uint64_t lowest = (uint64_t{1} << power) + (bucket & (kSubBuckets - 1)) * width;
  return lowest + (width - 1) / 2;
}

void DurationHistogram::record(uint64_t ns) {
  counts_[bucket_of(ns)].fetch_add(1, std::memory_order_relaxed);
  uint64_t seen = min_.load(std::memory_order_relaxed);
  while (ns < seen && !min_.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
  }
  seen = max_.load(std::memory_order_relaxed);
  while (ns > seen && !max_.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
  }
}

uint64_t DurationHistogram::count() const {
  uint64_t total = 0;
  for (const std::atomic<uint64_t>& bucket : counts_) total += bucket.load(std::memory_order_relaxed);
  return total;
}

uint64_t DurationHistogram::quantile(double q) const {
  uint64_t counts[kBuckets];
  uint64_t total = 0;
  for (size_t i = 0; i < kBuckets; ++i) total += counts[i] = counts_[i].load(std::memory_order_relaxed);
  if (total == 0) return 0;
  q = q < 0 ? 0 : q > 1 ? 1 : q;
  // Nearest rank. The product is shrunk by a hair: where rounding put it just above a whole number
  // (0.7 x 10 is 7.000000000000001 in doubles), the rank is that number, not the next.
  double exact = q * static_cast<double>(total) * (1 - 1e-12);
  uint64_t rank = static_cast<uint64_t>(std::ceil(exact));
  if (rank < 1) rank = 1;
  if (rank > total) rank = total;
  size_t bucket = 0;
  for (uint64_t below = 0; bucket < kOverflowBucket; ++bucket) {
    below += counts[bucket];
    if (below >= rank) break;
  }
  uint64_t smallest = min(), largest = max();
  if (bucket == kOverflowBucket) return largest;
  uint64_t value = middle_of(bucket);
  // While another thread records, the bounds may lag the counts: they bring a value in only once they agree.
  if (smallest <= largest) value = value < smallest ? smallest : value > largest ? largest : value;
  return value;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
