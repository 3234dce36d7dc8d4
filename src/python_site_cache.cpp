// The Python lines of launches from code locations seen before (python_site_cache.h).
#include "python_site_cache.h"

#include <cstdlib>
#include <type_traits>

#include "sites.h"

namespace blockrun {

namespace {

// The state of a prefix of `frames` frames finished into its hash (MurmurHash3's finalizer; the length mixed
// in, so that a prefix and a longer walk differ). Never 0: a tag of 0 means no entry.
uint64_t finish(uint64_t state, size_t frames) {
  uint64_t hash = state ^ (frames * 0x165667B19E3779F9ull);
  hash ^= hash >> 33;
  hash *= 0xFF51AFD7ED558CCDull;
  hash ^= hash >> 33;
  hash *= 0xC4CEB9FE1A85EC53ull;
  hash ^= hash >> 33;
  return hash | 1;
}

constexpr size_t kMaxWords = PythonWalkKey::kMaxFrames * PythonWalkKey::kWordsPerFrame;

// The bit of depths_ for a walk of `frames` frames; the deepest share the last (a find there only looks).
uint64_t depth_bit(size_t frames) {
  return uint64_t{1} << (frames < 63 ? frames : 63);
}

size_t round_up_to_power_of_two(size_t value) {
  size_t result = 1;
  while (result < value) result <<= 1;
  return result;
}

}  // namespace

uint64_t PythonWalkKey::hash(size_t frames) const {
  return finish(frames == 0 ? kSeed : states_[frames - 1], frames);
}

// Every field is an atomic, read and written with acquire and release (plain moves on x86-64): a reader that
// sees a word a writer wrote also sees that writer's odd version, so a torn read is always noticed. Trivial,
// so that the zeroed memory it is made in is not written until used.
struct PythonSiteCache::Entry {
  std::atomic<uint64_t> version;  // odd while being written; 0: never written
  std::atomic<uint64_t> hash;
  std::atomic<uint64_t> frames;
  std::atomic<uint64_t> numbers;  // site | innermost << 32
  std::atomic<uint64_t> words[kMaxWords];
};
static_assert(std::is_trivially_default_constructible_v<std::atomic<uint64_t>> &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "the cache's storage is zeroed memory read as atomics");

// Zeroed by calloc (fresh pages from the kernel: nothing written, nothing resident until an entry is used).
struct PythonSiteCache::Storage {
  // Each entry's hash (0: none), written with the entry's version odd: read first, a bucket's four in one
  // cache line, so that a lookup touches an entry only where its hash matches.
  std::atomic<uint64_t>* tags;
  Entry* entries;

  static Storage* create(size_t capacity) {
    void* tags = std::calloc(capacity, sizeof(std::atomic<uint64_t>));
    void* entries = std::calloc(capacity, sizeof(Entry));
    auto* storage = static_cast<Storage*>(std::calloc(1, sizeof(Storage)));
    if (!tags || !entries || !storage) {
      std::free(tags);
      std::free(entries);
      std::free(storage);
      return nullptr;
    }
    storage->tags = static_cast<std::atomic<uint64_t>*>(tags);
    storage->entries = static_cast<Entry*>(entries);
    return storage;
  }
  static void destroy(Storage* storage) {
    if (!storage) return;
    std::free(storage->tags);
    std::free(storage->entries);
    std::free(storage);
  }
};

PythonSiteCache::PythonSiteCache(PythonSiteTable& sites, size_t capacity)
    : sites_(sites), capacity_(round_up_to_power_of_two(capacity < kWays ? kWays : capacity)) {}

PythonSiteCache::~PythonSiteCache() {
  Storage::destroy(storage_.load(std::memory_order_acquire));
}

PythonSiteCache::Storage* PythonSiteCache::storage() {
  Storage* storage = storage_.load(std::memory_order_acquire);
  if (storage) return storage;
  Storage* created = Storage::create(capacity_);
  if (!created) return nullptr;
  Storage* expected = nullptr;
  if (storage_.compare_exchange_strong(expected, created, std::memory_order_acq_rel)) return created;
  Storage::destroy(created);  // another thread's won
  return expected;
}

bool PythonSiteCache::find(const PythonWalkKey& key, PythonLaunchSite* out) const {
  return find(key, key.frames(), out);
}

bool PythonSiteCache::find(const PythonWalkKey& key, size_t frames, PythonLaunchSite* out) const {
  if (frames == 0 || !(depths_.load(std::memory_order_relaxed) & depth_bit(frames))) return false;
  const Storage* storage = storage_.load(std::memory_order_acquire);
  if (!storage) return false;
  uint64_t hash = key.hash(frames);
  size_t bucket = static_cast<size_t>(hash) & (capacity_ - kWays);
  for (size_t way = 0; way < kWays; ++way) {
    if (storage->tags[bucket + way].load(std::memory_order_relaxed) != hash) continue;
    uint64_t numbers;
    if (!read_entry(storage->entries[bucket + way], key, frames, hash, &numbers)) continue;
    out->status = PythonStatus::Captured;
    out->site = static_cast<uint32_t>(numbers);
    out->innermost = static_cast<uint32_t>(numbers >> 32);
    out->cached = true;
    return true;
  }
  return false;
}

bool PythonSiteCache::read_entry(const Entry& entry, const PythonWalkKey& key, size_t frames, uint64_t hash,
                                 uint64_t* value) {
  uint64_t version = entry.version.load(std::memory_order_acquire);
  if (version == 0 || (version & 1) != 0) return false;
  if (entry.hash.load(std::memory_order_acquire) != hash ||
      entry.frames.load(std::memory_order_acquire) != frames)
    return false;
  const uint64_t* words = key.words();
  for (size_t i = 0; i < frames * PythonWalkKey::kWordsPerFrame; ++i) {
    if (entry.words[i].load(std::memory_order_acquire) != words[i]) return false;
  }
  *value = entry.numbers.load(std::memory_order_acquire);
  // The loads above are acquire: this one cannot be done before them. Unchanged: no writer began meanwhile.
  return entry.version.load(std::memory_order_relaxed) == version;
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
  remember(*key, frames, kept.site, kept.innermost);
  return kept;
}

void PythonSiteCache::remember(const PythonWalkKey& key, size_t frames, uint32_t site, uint32_t innermost) {
  Storage* storage = this->storage();
  if (!storage) return;
  uint64_t hash = key.hash(frames);
  size_t bucket = static_cast<size_t>(hash) & (capacity_ - kWays);
  // Already there (another thread remembered the same walk): nothing to do. Else a free entry, else one of
  // the bucket's in turn.
  size_t chosen = kWays;
  for (size_t way = 0; way < kWays; ++way) {
    uint64_t tag = storage->tags[bucket + way].load(std::memory_order_relaxed);
    uint64_t numbers;
    if (tag == hash && read_entry(storage->entries[bucket + way], key, frames, hash, &numbers)) return;
    if (tag == 0 && chosen == kWays) chosen = way;
  }
  if (chosen == kWays) chosen = next_victim_.fetch_add(1, std::memory_order_relaxed) % kWays;
  Entry& entry = storage->entries[bucket + chosen];
  uint64_t version = entry.version.load(std::memory_order_relaxed);
  // Another thread writes it: this walk is remembered another time.
  if ((version & 1) != 0 ||
      !entry.version.compare_exchange_strong(version, version + 1, std::memory_order_acquire))
    return;
  storage->tags[bucket + chosen].store(hash, std::memory_order_relaxed);
  entry.hash.store(hash, std::memory_order_release);
  entry.frames.store(frames, std::memory_order_release);
  entry.numbers.store(uint64_t{site} | uint64_t{innermost} << 32, std::memory_order_release);
  const uint64_t* words = key.words();
  for (size_t i = 0; i < frames * PythonWalkKey::kWordsPerFrame; ++i)
    entry.words[i].store(words[i], std::memory_order_release);
  entry.version.store(version + 2, std::memory_order_release);
  depths_.fetch_or(depth_bit(frames), std::memory_order_relaxed);
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
