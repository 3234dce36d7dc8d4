// Serial numbers that tell the instances of one class apart over the whole life of the process (never 0,
// never reused). A per-thread cache keeps its owner's serial beside what it caches: an owner destroyed and
// another made at its address (a test's second engine, a ledger made again) is then not taken for it, as an
// address would be.
#pragma once

#include <atomic>
#include <cstdint>

namespace blockrun {

// The next serial of `Owner`'s instances: 1, 2, ...; each class counts on its own.
template <typename Owner>
uint64_t next_instance_serial() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
