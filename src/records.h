// What the engine knows about launches and CUDA calls: plain data, no CUDA types, so that tests can
// build records without a GPU and the shim can fill them from any layer of CUDA.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "call_values.h"
#include "callsites/callsite.h"
#include "pieces/duration_histogram.h"
#include "config/policy.h"

namespace blockrun {

// The distributions of one kernel's blocked launch times, made by its first blocked launch and kept as long
// as its BlockStats. In the shim that is the process's life (KernelInfo, GraphInfo and the engine's records
// of library calls are never freed), so the summary, written by the library's destructor, reads them whatever
// the program's threads still do.
struct BlockTimes {
  DurationHistogram wall;
  // Made by the first launch with a GPU time: without --gpu-time there is none, and no 5.3 KiB spent on it.
  std::atomic<DurationHistogram*> gpu{nullptr};

  BlockTimes() = default;
  BlockTimes(const BlockTimes&) = delete;
  BlockTimes& operator=(const BlockTimes&) = delete;
  ~BlockTimes() { delete gpu.load(std::memory_order_acquire); }
};

// What blocked launches of one kernel (or library call, or graph) cost: the precise per-kernel timing
// people turn CUDA_LAUNCH_BLOCKING=1 on for. Updated only on the blocked path.
struct BlockStats {
  std::atomic<uint64_t> blocked{0};
  std::atomic<uint64_t> gpu_timed{0};  // blocked launches with a GPU time (events could be recorded)
  std::atomic<uint64_t> gpu_ns_total{0}, gpu_ns_max{0};
  std::atomic<uint64_t> wall_ns_total{0}, wall_ns_max{0};
  // The distributions of the same times, for their medians and p90s: 5.3 KiB each, where every kernel of the
  // table has a BlockStats, so made on the first blocked launch, null until then (BlockTimes).
  std::atomic<BlockTimes*> times{nullptr};

  BlockStats() = default;
  BlockStats(const BlockStats&) = delete;
  BlockStats& operator=(const BlockStats&) = delete;
  ~BlockStats() { delete times.load(std::memory_order_acquire); }
};

// One kernel, as first seen by the shim. Created once per distinct handle and never freed (the
// table that holds them is bounded), so records may point at it from anywhere.
struct KernelInfo {
  KernelName name;
  uint64_t rule_mask = 0;  // Policy::name_mask of this kernel: which rules its names satisfy
  // (The flags follow the pointers, together: with no padding between them the record fits a 208-byte
  // malloc chunk, docs/memory.md, and 65,536 of them are kept.)
  const char* collective = nullptr;  // the NCCL collective, where the name tells (nccl_collective)
  bool nccl = false;
  bool decided = false;  // `decision` holds the policy's answer for every launch of this kernel
  // The one record of a thread's kernels past the kernel table's bound, renamed at each launch: its count of
  // launches is no one kernel's, so its launches have no per-kernel number (LaunchRecord::kernel_ordinal 0).
  bool past_table = false;
  Decision decision;
  // The one host thread that launches it, or kManyThreads once another did too: then its per-kernel launch
  // number depends on how the threads interleaved, and a launch of it is pinned by its number among its own
  // thread's launches instead (PinTarget). In the padding after `decision`: no bigger a record.
  static constexpr uint32_t kManyThreads = ~uint32_t{0};
  std::atomic<uint32_t> launched_by{0};
  std::atomic<uint64_t> launches{0};
  BlockStats stats;

  // Called at each of its launches: a load and a compare, but the first time and once a second thread
  // launches it.
  void note_launching_thread(uint32_t thread) {
    uint32_t known = launched_by.load(std::memory_order_relaxed);
    if (__builtin_expect(known == thread || known == kManyThreads, 1)) return;
    if (known == 0 && launched_by.compare_exchange_strong(known, thread, std::memory_order_relaxed)) return;
    if (known != thread) launched_by.store(kManyThreads, std::memory_order_relaxed);
  }
  bool launched_by_many_threads() const {
    return launched_by.load(std::memory_order_relaxed) == kManyThreads;
  }
};

// A launch recorded into a stream capture: what the graph will run, and where the program asked for it.
struct CapturedLaunch {
  uint64_t sequence = 0;  // its launch number when captured
  const KernelInfo* kernel = nullptr;
  const char* library_api =
      nullptr;  // a library call recorded as a unit, or the one that launched the kernel
  StreamId stream;
  uintptr_t caller = 0;                            // return address into the code that called CUDA
  uint32_t python_site = 0, python_innermost = 0;  // PythonSiteTable numbers (0: none)
  std::vector<uintptr_t> frames;  // the native stack walked when it was captured, innermost first (or none)
  uint16_t branch = kNoBranch;    // with graph breadcrumbs: its CaptureRecord::branches entry
  static constexpr uint16_t kNoBranch = 0xffff;
};

// With graph breadcrumbs, one stream that took part in a capture: a parallel branch of the graph (launches
// on one capturing stream run in order; on different ones, maybe at once). After each captured launch the
// graph writes the launch's capture position (1-based) into the branch's slot, and every launch of the graph
// first writes 0 there: after a faulting replay the slot says how far the branch got.
struct GraphBranch {
  StreamId stream;
  int32_t slot = -1;  // -1: more branches than slots, no breadcrumb
};

// One stream capture: where it began and the launches it took, in capture order (a graph's kernel nodes
// made by capture). Made by Engine::begin_capture, kept for the process's life once a graph came of it.
struct CaptureRecord {
  uint64_t id = 0;                      // the driver's capture id (0: a graph built node by node)
  std::unique_ptr<CallStack> begun_at;  // the stack where the capture began (nullptr: not taken)
  uintptr_t begun_by = 0;               // return address into the code that began it
  uint32_t python_site = 0, python_innermost = 0;
  std::vector<CapturedLaunch> launches;
  uint64_t launches_dropped = 0;      // past the process's bound on captured launches kept
  std::vector<GraphBranch> branches;  // with graph breadcrumbs
  uint64_t breadcrumb_nodes = 0;      // nodes the shim added to the graph (one per captured launch)
  bool linked = false;  // an executable graph points at it: never changed again (a later node copies it)
};

// A CUDA graph as the shim learned it at instantiation. Created once per executable graph, never freed.
struct GraphInfo {
  const void* exec = nullptr;
  uint64_t nodes = 0;  // 0: not known (instantiated before the shim could count)
  std::atomic<uint64_t> launches{0};
  BlockStats stats;
  // The capture its graph came from (set at instantiation; nullptr: built node by node, or not seen).
  std::atomic<const CaptureRecord*> capture{nullptr};
};

// One launch unit: a kernel launch (kernel set; library_api set too when a library call launched it),
// a library call blocked as a whole (kernel == nullptr, library_api set) or a graph launch (graph set).
struct LaunchRecord {
  uint64_t sequence = 0;        // 1-based, process-wide, in launch order
  uint64_t kernel_ordinal = 0;  // 1-based, per kernel (NAME#N); 0: not known (a kernel past the table)
  const KernelInfo* kernel = nullptr;
  const GraphInfo* graph = nullptr;
  const char* api = nullptr;         // the entry point the program called, a static string
  const char* driver_api = nullptr;  // the driver entry point it continued into, where different
  const char* library_api = nullptr;
  LibraryCall library;
  StreamId stream;
  Dim3 grid, block;
  uint64_t shared_memory = 0;
  uint32_t thread = 0;  // host thread number, 1-based in order of first CUDA call
  // Its number among its host thread's launches, 1-based (thread#N): unlike `sequence` and
  // `kernel_ordinal`, it does not change when the threads interleave differently in another run.
  uint32_t thread_launch = 0;
  uintptr_t caller = 0;  // return address into the code that called the entry point (LaunchRequest)
  // With breadcrumbs: the launching thread's Python line (the program's own frame) and innermost frame, as
  // numbers in the engine's PythonSiteTable (0: none kept), and what the Python capture found.
  uint32_t python_site = 0;
  uint32_t python_innermost = 0;
  uint32_t graph_replay = 0;  // a graph launch: which launch of its executable graph this is, from 1
  PythonStatus python_status = PythonStatus::NotCaptured;
  bool blocked = false;
  bool has_stack = false;  // its call stack (call site) was taken
  bool in_capture =
      false;  // recorded into a stream capture (a graph node): it did not run, and is no suspect
  // The launch call returned an error that says nothing was enqueued (src/cuda/cuda_errors.def): it never
  // ran, so it is no suspect and no breadcrumb's unfinished launch.
  bool refused = false;
  // Set on the copies the ring hands out (StreamState::collect), with breadcrumbs: a breadcrumb write was
  // enqueued after it, so a slot short of it shows that it did not complete. One without (its stream had no
  // slot, the breadcrumbs were being set up, the write failed) may have completed unseen.
  bool breadcrumb = false;
};

// What the program asked for, before the engine numbers it.
struct LaunchRequest {
  LaunchFamily family = LaunchFamily::Runtime;
  const char* api = nullptr;
  const char* driver_api = nullptr;
  const KernelInfo* kernel = nullptr;  // set for kernel launches
  const GraphInfo* graph = nullptr;    // set for graph launches
  const char* library_api = nullptr;   // set for library calls, and for kernels a library call launched
  LibraryCall library;
  const void* stream = nullptr;
  bool per_thread_default_stream = false;  // the API flavour: 0 means the per-thread stream
  Dim3 grid, block;
  uint64_t shared_memory = 0;
  uintptr_t caller = 0;     // return address into the code that called the CUDA entry point (0: unknown)
  bool in_capture = false;  // its stream was capturing: it joined a graph and did not run (the shim asks)
  uint64_t capture_id = 0;  // that capture's id, where the driver gave it (0: unknown)
  uint64_t began_ns = 0;    // when the call began, where it began before begin_launch (a library unit)
  // The shim knows without looking that the Python line is NoPython (no CPython in the process yet): a C++
  // program with breadcrumbs, which keeps the line of every launch, then skips the engine's call for it.
  bool no_python = false;
};

// A launch in progress: its record, what the policy decided, and where it came from.
struct Launch {
  LaunchRecord record;
  struct StreamState* stream = nullptr;
  uint64_t ring_place = 0;  // its place in its stream's ring (StreamState::push), for breadcrumb_enqueued
  Decision decision;
  CallStack stack;  // valid when record.has_stack
  BlockTiming timing;
  // A launch into a capture with graph breadcrumbs: the slot its breadcrumb node writes and the value (its
  // capture position); -1: no breadcrumb node.
  int32_t graph_slot = -1;
  uint32_t capture_position = 0;
  // On the steady clock, where the engine reads it (--trace, --log-launches; 0 otherwise): the launch call
  // began (begin_launch), returned (end_launch, after its blocking wait), and its blocking wait began.
  uint64_t began_ns = 0, ended_ns = 0, wait_began_ns = 0;
  bool block() const { return decision.blocks(); }
  // Whether Engine::end_launch has nothing to do for it once it succeeded and was not blocked: the policy let
  // it run, and it was not timed (began_ns is set only where calls are, --trace or --log-launches, whose
  // trace slice or log line it would get). The launch path then skips the call (the common case: a launch
  // nothing selects), and asks nothing but the launch it holds.
  bool ends_quietly() const { return decision.action == Action::Run && began_ns == 0; }
  // Its call stack, where one was taken (nullptr: only record.caller is known).
  const CallStack* taken_stack() const { return record.has_stack ? &stack : nullptr; }
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
