// A bounded set of addresses that only grows, safe to use from any number of threads without a lock: which
// CPython code objects the Python line cache holds answers for (shim/python/line_keys.cpp), so that the death
// of one of them, and only of one of them, retires those answers. Inserts come from launching threads,
// lookups from the interpreter's code-object watcher.
//
// Open addressing, linear probing over at most kProbes slots; an insert that finds no room there fails (the
// caller then does not rely on the address being in the set). Nothing is ever removed, so a lookup may stop
// at the first empty slot. The slots are allocated zeroed at the first insert: a process that never inserts
// pays nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "util/power_of_two.h"

namespace blockrun {

class AddressSet {
 public:
  static constexpr size_t kProbes = 16;

  // Room for `slots` addresses, rounded up to a power of two (at least kProbes).
  constexpr explicit AddressSet(size_t slots)
      : mask_(round_up_to_power_of_two(slots < kProbes ? kProbes : slots) - 1) {}
  ~AddressSet();
  AddressSet(const AddressSet&) = delete;
  AddressSet& operator=(const AddressSet&) = delete;

  // Adds `address` (not 0). True where it is in the set afterwards; false where no slot was left for it among
  // its probes, or the slots could not be allocated.
  bool insert(uintptr_t address);
  // Whether `address` was inserted. Exact: an address whose insert returned true is found, any other is not.
  bool contains(uintptr_t address) const;

 private:
  size_t first_slot(uintptr_t address) const;
  std::atomic<uintptr_t>* slots();

  const size_t mask_;
  std::atomic<std::atomic<uintptr_t>*> slots_{nullptr};
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
