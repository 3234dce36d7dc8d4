// libcuda_blockrun_bench.so only (CMakeLists.txt, CUDA_BLOCKRUN_BENCH_SHIM; included by shim/shim.cpp under
// CUDA_BLOCKRUN_BENCH_SWITCH), never the shim users preload: what a benchmark uses to look at the shim from
// inside one process.
//
// - The switch, cuda_blockrun_bench_switch(on): switched off, every wrapper forwards at once, as if the shim
//   were not there (but for the lookups, cuGetProcAddress, which must keep handing out the wrappers). A
//   process's speed varies more from one run to the next than the shim costs; inside one process that
//   variation cancels out (bench/harness.py, the `*_switched` configurations).
// - The call timer, cuda_blockrun_bench_time_calls(on) and cuda_blockrun_bench_calls(path, label): how many
//   calls of each hook, and how long they took, with the shim on and switched off, plus three spans of a
//   driver launch (the record, the real launch call, the breadcrumb: with the driver's write or without) and
//   the time in outermost hooked calls.
//   A benchmark's chunk time minus that is the time the program spent outside every hooked call: where a cost
//   shows there, it is not in any call the shim wraps (bench/call_times.py reads the tallies).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "blocking.h"
#include "python_frames.h"
#include "shim.h"

namespace blockrun::shim::bench {

inline std::atomic<bool> g_switched_off{false};
inline std::atomic<bool> g_timing{false};

inline bool switched_off() {
  return g_switched_off.load(std::memory_order_relaxed);
}

// A tally per hook, then the spans that are not hooks of their own.
enum Slot : size_t {
  kOutermost = static_cast<size_t>(Hook::Count),  // hooked calls not made inside another hooked call
  kRecord,                                        // a driver launch wrapper's record (engine, Python line)
  kLaunchCall,                                    // a driver launch wrapper's call of the real launch
  kBreadcrumbNoWrite,                             // its breadcrumb, where it wrote none (--breadcrumb-every)
  kBreadcrumbWrite,                               // its breadcrumb, where it wrote one
  kTimer,                                         // the timer's own cost: empty spans, when turned on
  kSlots
};

struct Tally {
  std::atomic<const char*> name{nullptr};
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> ns{0};
};
inline Tally g_tallies[2][kSlots];  // [0: switched off, 1: on][slot]

inline thread_local int t_depth = 0;  // hooked calls this thread is inside

// Times one hooked call (`hook`: its tally also counts toward kOutermost when no other encloses it) or one
// span inside a call; does nothing but a load while the timer is off.
class Span {
 public:
  Span(size_t slot, const char* name, bool hook)
      : slot_(slot),
        name_(name),
        hook_(hook),
        on_(!switched_off()),
        began_(g_timing.load(std::memory_order_relaxed) ? steady_now_ns() : 0) {
    if (began_ && hook_) t_depth++;
  }
  ~Span() {
    if (!began_) return;
    uint64_t ns = steady_now_ns() - began_;
    add(slot_, name_, ns);
    if (hook_ && --t_depth == 0) add(kOutermost, "outermost hooked calls", ns);
  }
  // The span goes to another slot when it ends (what it timed turned out to be of another kind).
  void move_to(size_t slot, const char* name) {
    slot_ = slot;
    name_ = name;
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  void add(size_t slot, const char* name, uint64_t ns) const {
    Tally& tally = g_tallies[on_][slot];
    tally.name.store(name, std::memory_order_relaxed);
    tally.calls.fetch_add(1, std::memory_order_relaxed);
    tally.ns.fetch_add(ns, std::memory_order_relaxed);
  }

  size_t slot_;
  const char* name_;
  bool hook_;
  bool on_;
  uint64_t began_;
};

// Turns the timer on or off; turned on, it first times a thousand empty spans of its own (kTimer), so that
// the spans a wrapper adds inside a call can be told from the call's cost.
inline void time_calls(bool on) {
  g_timing.store(on, std::memory_order_relaxed);
  if (!on) return;
  for (int i = 0; i < 1000; ++i) Span span(kTimer, "the timer: one empty span", false);
}

// Appends every tally since the last report to `path` as tab-separated lines (label, on|off, name, calls, ns)
// and starts them again. 0, or -1 where the file cannot be written.
inline int report(const char* path, const char* label) {
  FILE* file = std::fopen(path, "a");
  if (!file) return -1;
  for (int on = 1; on >= 0; --on) {
    for (Tally& tally : g_tallies[on]) {
      uint64_t calls = tally.calls.exchange(0, std::memory_order_relaxed);
      uint64_t ns = tally.ns.exchange(0, std::memory_order_relaxed);
      if (calls)
        std::fprintf(file, "%s\t%s\t%s\t%llu\t%llu\n", label, on ? "on" : "off", tally.name.load(),
                     static_cast<unsigned long long>(calls), static_cast<unsigned long long>(ns));
    }
  }
  // Not a span: how many launches since the last report had their Python line read in full (the cache did
  // not know the walk). Only the shim on reads lines.
  static std::atomic<uint64_t> reported{0};
  uint64_t read_in_full = python_lines_read_in_full();
  uint64_t before = reported.exchange(read_in_full, std::memory_order_relaxed);
  if (read_in_full > before)
    std::fprintf(file, "%s\ton\tpython line: read in full\t%llu\t0\n", label,
                 static_cast<unsigned long long>(read_in_full - before));
  // Nor this: 1 where lines are looked up by instruction pointers alone (python_frames.h).
  if (python_lines_keyed_by_instruction_pointers())
    std::fprintf(file, "%s\ton\tpython line: keyed by instruction pointers\t1\t0\n", label);
  return std::fclose(file) == 0 ? 0 : -1;
}

}  // namespace blockrun::shim::bench
// SPDX-License-Identifier: MIT
