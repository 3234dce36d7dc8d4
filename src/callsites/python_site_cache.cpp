// The Python lines of launches from code locations seen before (python_site_cache.h).
#include "callsites/python_site_cache.h"

#include <cstdlib>
#include <type_traits>

#include "util/power_of_two.h"
#include "callsites/sites.h"
#include "util/zeroed_once.h"

namespace blockrun {

// One cache line: a lookup reads nothing else. Every field is an atomic, read and written with acquire and
// release (plain moves on x86-64): a reader that sees a word a writer wrote also sees that writer's odd
// version, so a torn read is always noticed. Trivial: zeroed memory is a bucket with no entries.
struct alignas(64) PythonSiteCache::Bucket {
  std::atomic<uint64_t> version;         // odd while being written
  std::atomic<uint64_t> hashes[kWays];   // 0: no entry
  std::atomic<uint64_t> numbers[kWays];  // site | innermost << 32
  std::atomic<uint64_t> victim;  // which entry a new walk replaces when all are taken (with the version odd)
};
static_assert(std::is_trivially_default_constructible_v<std::atomic<uint64_t>> &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "the cache's storage is zeroed memory read as atomics");

PythonSiteCache::PythonSiteCache(PythonSiteTable& sites, size_t capacity)
    : sites_(sites), buckets_(round_up_to_power_of_two((capacity + kWays - 1) / kWays)) {
  static_assert(sizeof(Bucket) == 64, "a bucket is one cache line");
}

PythonSiteCache::~PythonSiteCache() {
  std::free(storage_.load(std::memory_order_acquire));
}

PythonSiteCache::Bucket* PythonSiteCache::storage() {
  // Aligned to a cache line, so that a bucket is one; zeroed (64 KiB for the default capacity).
  return zeroed_once(storage_, buckets_);
}

bool PythonSiteCache::probe(uint64_t hash, PythonLaunchSite* out) const {
  const Bucket* storage = storage_.load(std::memory_order_acquire);
  if (!storage) return false;
  const Bucket& bucket = storage[hash & (buckets_ - 1)];
  uint64_t version = bucket.version.load(std::memory_order_acquire);
  if ((version & 1) != 0) return false;
  for (size_t way = 0; way < kWays; ++way) {
    if (bucket.hashes[way].load(std::memory_order_acquire) != hash) continue;
    uint64_t numbers = bucket.numbers[way].load(std::memory_order_acquire);
    // The loads above are acquire: this one cannot be done before them. Unchanged: no writer began meanwhile.
    if (bucket.version.load(std::memory_order_relaxed) != version) return false;
    out->status = PythonStatus::Captured;
    out->site = static_cast<uint32_t>(numbers);
    out->innermost = static_cast<uint32_t>(numbers >> 32);
    out->cached = true;
    return true;
  }
  return false;
}

PythonLaunchSite PythonSiteCache::keep(const PythonStack& python, const PythonWalkKey* key) {
  PythonLaunchSite kept;
  kept.status = python.status;
  PythonChoiceExtent extent;
  bool interned = intern_python_call_site(sites_, python, &kept.site, &kept.innermost, &extent);
  if (!key || python.status != PythonStatus::Captured || !interned) return kept;
  // The key must hold the frames the choice looked at, then the end marker where the end mattered, and no end
  // before (it would not be the same walk).
  size_t frames = extent.frames + (extent.to_end ? 1 : 0);
  if (frames == 0 || frames > key->frames()) return kept;
  for (size_t i = 0; i < extent.frames; ++i) {
    if (key->end_at(i)) return kept;
  }
  if (extent.to_end && !key->end_at(extent.frames)) return kept;
  remember(key->hash(frames), frames, kept.site, kept.innermost);
  return kept;
}

void PythonSiteCache::remember(uint64_t hash, size_t frames, uint32_t site, uint32_t innermost) {
  Bucket* storage = this->storage();
  if (!storage) return;
  Bucket& bucket = storage[hash & (buckets_ - 1)];
  uint64_t version = bucket.version.load(std::memory_order_relaxed);
  // Another thread writes it: this walk is remembered another time.
  if ((version & 1) != 0 ||
      !bucket.version.compare_exchange_strong(version, version + 1, std::memory_order_acquire))
    return;
  // Already there (another thread remembered the same walk): its entry, written again with the same numbers.
  // Else a free entry, else the bucket's entries in turn.
  size_t chosen = kWays;
  for (size_t way = 0; way < kWays && chosen == kWays; ++way) {
    if (bucket.hashes[way].load(std::memory_order_relaxed) == hash) chosen = way;
  }
  for (size_t way = 0; way < kWays && chosen == kWays; ++way) {
    if (bucket.hashes[way].load(std::memory_order_relaxed) == 0) chosen = way;
  }
  if (chosen == kWays) {
    uint64_t victim = bucket.victim.load(std::memory_order_relaxed);
    bucket.victim.store(victim + 1, std::memory_order_relaxed);
    chosen = victim % kWays;
  }
  bucket.hashes[chosen].store(hash, std::memory_order_release);
  bucket.numbers[chosen].store(uint64_t{site} | uint64_t{innermost} << 32, std::memory_order_release);
  bucket.version.store(version + 2, std::memory_order_release);
  depths_.fetch_or(depth_bit(frames), std::memory_order_relaxed);
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
