// Interned Python call sites (python_sites.h).
#include "callsites/python_sites.h"

#include <cstring>
#include <new>

#include "callsites/sites.h"

namespace blockrun {

namespace {

enum : uint32_t { kEmpty = 0, kWriting = 1, kReady = 2 };

// Probes before giving up: the table is meant to stay far from full, so a long probe means it is not.
constexpr size_t kMaxProbes = 64;
// Spins while another thread writes an entry this thread must compare with (a copy of 260 bytes).
constexpr int kMaxSpins = 1 << 16;

uint32_t hash_of(const PythonFrame& frame) {
  // FNV-1a over the line and both NUL-terminated texts.
  uint32_t hash = 2166136261u;
  auto mix = [&](const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 16777619u;
  };
  mix(&frame.line, sizeof frame.line);
  mix(frame.file, strnlen(frame.file, kPythonFileBytes));
  mix(frame.function, strnlen(frame.function, kPythonFunctionBytes));
  return hash;
}

bool same(const PythonFrame& a, const PythonFrame& b) {
  return a.line == b.line && std::strncmp(a.file, b.file, kPythonFileBytes) == 0 &&
         std::strncmp(a.function, b.function, kPythonFunctionBytes) == 0;
}

}  // namespace

struct PythonSiteTable::Entry {
  std::atomic<uint32_t> state{kEmpty};
  uint32_t hash = 0;
  PythonFrame frame;
};

PythonSiteTable::PythonSiteTable(size_t capacity) : capacity_(capacity) {}

PythonSiteTable::~PythonSiteTable() {
  delete[] entries_.load(std::memory_order_acquire);
}

PythonSiteTable::Entry* PythonSiteTable::entries() {
  Entry* table = entries_.load(std::memory_order_acquire);
  if (table) return table;
  Entry* created = new (std::nothrow) Entry[capacity_];
  if (!created) return nullptr;
  Entry* expected = nullptr;
  if (entries_.compare_exchange_strong(expected, created, std::memory_order_acq_rel)) return created;
  delete[] created;  // another thread's table won
  return expected;
}

uint32_t PythonSiteTable::intern(const PythonFrame& frame) {
  Entry* table = entries();
  if (!table || capacity_ == 0) return 0;
  uint32_t hash = hash_of(frame);
  size_t start = hash % capacity_;
  for (size_t probe = 0; probe < kMaxProbes && probe < capacity_; ++probe) {
    size_t index = (start + probe) % capacity_;
    Entry& entry = table[index];
    uint32_t state = entry.state.load(std::memory_order_acquire);
    if (state == kEmpty) {
      if (entry.state.compare_exchange_strong(state, kWriting, std::memory_order_acq_rel)) {
        entry.hash = hash;
        std::memcpy(&entry.frame, &frame, sizeof frame);
        entry.state.store(kReady, std::memory_order_release);
        return static_cast<uint32_t>(index + 1);
      }
      // Taken meanwhile: `state` now holds what the other thread wrote; compare with it below.
    }
    for (int spin = 0; state == kWriting && spin < kMaxSpins; ++spin)
      state = entry.state.load(std::memory_order_acquire);
    if (state != kReady) continue;  // still being written after the spins: look further
    if (entry.hash == hash && same(entry.frame, frame)) return static_cast<uint32_t>(index + 1);
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

const PythonFrame* PythonSiteTable::get(uint32_t id) const {
  Entry* table = entries_.load(std::memory_order_acquire);
  if (!table || id == 0 || id > capacity_) return nullptr;
  const Entry& entry = table[id - 1];
  if (entry.state.load(std::memory_order_acquire) != kReady) return nullptr;
  return &entry.frame;
}

bool intern_python_call_site(PythonSiteTable& sites, const PythonStack& python, uint32_t* site,
                             uint32_t* innermost, PythonChoiceExtent* extent) {
  int user = python_call_site(python, extent);
  if (user >= 0) *site = sites.intern(python.frames[user]);
  if (user > 0) *innermost = sites.intern(python.frames[0]);
  return (user < 0 || *site != 0) && (user <= 0 || *innermost != 0);
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
