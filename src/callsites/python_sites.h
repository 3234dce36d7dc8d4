// Python call sites interned for the launch ring. With breadcrumbs, every launch keeps the Python line it
// came from, so that a culprit found long after it ran can be named with its line without a second run.
// A full capture (src/callsites/callsite.h: 8 frames, about 2 KB) in every ring entry would cost megabytes a
// stream and a copy per launch; instead each distinct (file, line, function) is stored once here and a launch
// keeps its 4-byte number. A training loop has a few hundred distinct launch lines, so the table stays
// small; when it is full, launches from new lines keep none (the report says so), never a wrong one.
//
// Lock-free: threads insert with a compare-and-swap on an entry's state; a reader of a number only ever
// sees a complete entry (published with release after it is written). Entries are never removed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "callsites/callsite.h"

namespace blockrun {

struct PythonChoiceExtent;  // sites.h

class PythonSiteTable {
 public:
  // `capacity` entries of about 270 bytes, allocated at the first intern (a process without Python pays
  // nothing).
  explicit PythonSiteTable(size_t capacity);
  ~PythonSiteTable();
  PythonSiteTable(const PythonSiteTable&) = delete;
  PythonSiteTable& operator=(const PythonSiteTable&) = delete;

  // The number of `frame` (1-based), inserting it if new; 0 when the table is full.
  uint32_t intern(const PythonFrame& frame);
  // The frame numbered `id` (from intern), or nullptr for 0 or a number never given.
  const PythonFrame* get(uint32_t id) const;
  // How many intern calls found the table full (a diagnostic for the summary).
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Entry;
  Entry* entries();
  const size_t capacity_;
  std::atomic<Entry*> entries_{nullptr};
  std::atomic<uint64_t> dropped_{0};
};

// The numbers of the frames python_call_site (sites.h) chooses in `python`: `*site` the program's line and,
// where that is another frame, `*innermost` (each left as it is where there is no such frame, 0 where the
// table was full). Returns false where a chosen frame found the table full. `extent`: as python_call_site's.
bool intern_python_call_site(PythonSiteTable& sites, const PythonStack& python, uint32_t* site,
                             uint32_t* innermost, PythonChoiceExtent* extent = nullptr);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
