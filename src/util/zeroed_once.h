// Storage made on first use and shared by every thread: the first caller allocates it zeroed and publishes
// it; a thread that loses the race frees its own and takes the winner's. For tables that cost nothing in a
// process that never fills them (python_site_cache.h, address_set.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace blockrun {

// `*storage`, or `count` zeroed T aligned as T (a cache line for a cache-line-aligned T) made now and stored
// there. nullptr where the allocation fails. T must be valid as zeroed memory.
template <typename T>
T* zeroed_once(std::atomic<T*>& storage, size_t count) {
  T* existing = storage.load(std::memory_order_acquire);
  if (existing) return existing;
  constexpr size_t kAlignment = alignof(T) < sizeof(void*) ? sizeof(void*) : alignof(T);
  size_t bytes = (count * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
  void* created = std::aligned_alloc(kAlignment, bytes);
  if (!created) return nullptr;
  std::memset(created, 0, bytes);
  T* expected = nullptr;
  if (storage.compare_exchange_strong(expected, static_cast<T*>(created), std::memory_order_acq_rel))
    return static_cast<T*>(created);
  std::free(created);  // another thread's won
  return expected;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
