// The set of addresses of address_set.h.
#include "util/address_set.h"

#include <cstdlib>
#include <type_traits>

#include "util/zeroed_once.h"

namespace blockrun {

static_assert(std::is_trivially_default_constructible_v<std::atomic<uintptr_t>> &&
                  std::atomic<uintptr_t>::is_always_lock_free,
              "the slots are zeroed memory read as atomics");

AddressSet::~AddressSet() {
  std::free(slots_.load(std::memory_order_acquire));
}

size_t AddressSet::first_slot(uintptr_t address) const {
  // Objects are 16-byte aligned: the low bits say nothing. Fibonacci hashing spreads the rest.
  return static_cast<size_t>(((address >> 4) * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
}

std::atomic<uintptr_t>* AddressSet::slots() {
  return zeroed_once(slots_, mask_ + 1);
}

bool AddressSet::insert(uintptr_t address) {
  std::atomic<uintptr_t>* slots = this->slots();
  if (!slots || address == 0) return false;
  size_t slot = first_slot(address);
  for (size_t probe = 0; probe < kProbes; ++probe, slot = (slot + 1) & mask_) {
    uintptr_t there = slots[slot].load(std::memory_order_acquire);
    if (there == 0 && slots[slot].compare_exchange_strong(there, address, std::memory_order_acq_rel))
      return true;
    if (there == address) return true;  // already in, or another thread put it there first
  }
  return false;
}

bool AddressSet::contains(uintptr_t address) const {
  const std::atomic<uintptr_t>* slots = slots_.load(std::memory_order_acquire);
  if (!slots || address == 0) return false;
  size_t slot = first_slot(address);
  for (size_t probe = 0; probe < kProbes; ++probe, slot = (slot + 1) & mask_) {
    uintptr_t there = slots[slot].load(std::memory_order_acquire);
    if (there == address) return true;
    if (there == 0) return false;  // nothing is removed: the address would have taken this slot
  }
  return false;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
