// A fixed-capacity, lock-free map from a handle (kernel, stream) to a value created once and never
// freed. The launch path finds known handles without locks or allocation; a new handle costs one
// allocation, once. When full, find_or_insert returns nullptr and the caller degrades (documented
// bound) instead of growing without limit.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace blockrun {

template <typename Value>
class HandleTable {
 public:
  explicit HandleTable(size_t capacity_power_of_two)
      : capacity_(capacity_power_of_two), slots_(new Slot[capacity_power_of_two]) {}

  // A key is looked for in at most this many slots from its hash: a lookup stays cheap even when the table is
  // (nearly) full, where an unbounded probe would scan all of it; a key whose run of slots is taken is
  // treated as past the bound (find_or_insert returns nullptr), as when the table is full.
  static constexpr size_t kMaxProbe = 64;

  // Key 0 is reserved for "empty"; callers map their handles to non-zero keys.
  Value* find(uint64_t key) const {
    for (size_t probe = 0, i = hash(key); probe < probes(); ++probe, i = (i + 1) & (capacity_ - 1)) {
      uint64_t stored = slots_[i].key.load(std::memory_order_acquire);
      if (stored == key) return wait_for_value(slots_[i]);
      if (stored == 0) return nullptr;
    }
    return nullptr;
  }

  // Returns the value for key, creating it with make() if absent. If two threads race on a new key,
  // exactly one calls make(); the other waits for its result.
  template <typename Make>
  Value* find_or_insert(uint64_t key, Make&& make) {
    for (size_t probe = 0, i = hash(key); probe < probes(); ++probe, i = (i + 1) & (capacity_ - 1)) {
      Slot& slot = slots_[i];
      uint64_t stored = slot.key.load(std::memory_order_acquire);
      if (stored == 0) {
        uint64_t expected = 0;
        if (slot.key.compare_exchange_strong(expected, key, std::memory_order_acq_rel)) {
          Value* value = make();
          slot.value.store(value, std::memory_order_release);
          size_.fetch_add(1, std::memory_order_relaxed);
          return value;
        }
        stored = expected;
      }
      if (stored == key) return wait_for_value(slot);
    }
    return nullptr;
  }

  // Visits every value (used only when reporting; concurrent inserts may or may not be seen).
  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (size_t i = 0; i < capacity_; ++i) {
      if (slots_[i].key.load(std::memory_order_acquire) == 0) continue;
      if (Value* value = slots_[i].value.load(std::memory_order_acquire)) visit(*value);
    }
  }

  size_t size() const { return size_.load(std::memory_order_relaxed); }
  size_t capacity() const { return capacity_; }

 private:
  struct Slot {
    std::atomic<uint64_t> key{0};
    std::atomic<Value*> value{nullptr};
  };

  size_t probes() const { return capacity_ < kMaxProbe ? capacity_ : kMaxProbe; }

  size_t hash(uint64_t key) const {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return static_cast<size_t>(key) & (capacity_ - 1);
  }

  static Value* wait_for_value(const Slot& slot) {
    // The inserting thread is between claiming the key and publishing the value: a short wait.
    Value* value;
    while ((value = slot.value.load(std::memory_order_acquire)) == nullptr) {
    }
    return value;
  }

  size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<size_t> size_{0};
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
