// The launch path: what every launch of the process passes before its real call. It names the kernel (once
// per handle), numbers and records the launch, asks the policy, takes the call site where one is wanted, and
// puts the launch in its stream's ring; it owns the pieces a launch fills (the kernels, the ledger of
// streams, the breadcrumb slots, the graphs and captures, the entry-point counts, the call sites) and the
// configuration. Inline for the shim's wrappers, which take it without a call; only the files on that path
// include it. The engine (engine.h) holds it and decides with its pieces once a launch ended or an error
// surfaced, so that the files that call the engine only for that (the process's life, the fatal signals, the
// launch gate) do not read what the launch path needs (docs/design.md, "What a shim file sees").
#pragma once

#include <atomic>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "callsites/call_sites.h"
#include "config/config.h"
#include "pieces/breadcrumb_slots.h"
#include "pieces/entry_point_counts.h"
#include "pieces/graph_captures.h"
#include "pieces/launch_ledger.h"
#include "records.h"
#include "util/clock.h"
#include "util/handle_table.h"
#include "util/thread_number.h"

namespace blockrun {

class LaunchPath {
 public:
  explicit LaunchPath(Config config);
  ~LaunchPath();
  LaunchPath(const LaunchPath&) = delete;
  LaunchPath& operator=(const LaunchPath&) = delete;

  // Once the call sites are started (Engine::start): whether launches and calls get their times
  // (`time_calls`: --trace or --log-launches), and whether a launch outside a capture can skip the policy and
  // the stack walk (no rules, no stack wanted).
  void start(bool time_calls);

  const Config& config() const { return config_; }

  // Returns the kernel known by `handle`, naming it with `resolve_mangled_name` (which returns the
  // mangled name or nullptr) the first time the handle is seen. Lock-free and allocation-free after
  // the first time: the launch path takes the inline lookup, and only a new handle pays for more.
  template <typename Resolve>
  const KernelInfo* kernel(const void* handle, Resolve&& resolve_mangled_name) {
    if (KernelInfo* known = kernels_.find(kernel_key(handle))) return known;
    return new_kernel(handle, std::function<const char*()>(std::forward<Resolve>(resolve_mangled_name)));
  }

  // Numbers and records a launch and asks the policy; captures its call site when it needs one
  // (CallSites::wants_stack). Cheap: no lock but the stream's own, no allocation for known kernels and
  // streams. Makes *launch anew, over whatever it held: a Launch, or raw storage for one (the shim's, not
  // zeroed twice). Inline (defined below the class): every launch of the process passes here, and the shim's
  // wrapper then writes the record straight from its arguments, where a call took the request through memory.
  [[gnu::always_inline]] inline void begin_launch(const LaunchRequest& request, Launch* launch);
  Launch begin_launch(const LaunchRequest& request) {
    Launch launch;
    begin_launch(request, &launch);
    return launch;
  }
  // Captures the call site of a launch that did not get one at begin_launch (a launch that failed).
  void take_stack_now(Launch& launch);

  // The steady clock where calls are timed (--trace; --log-launches, whose records a trace is made from),
  // else 0 (no clock read): launches, and the calls the shim hands over (synchronizes, library calls, calls
  // whose error may be the first). Never 0 where calls are timed (CLOCK_MONOTONIC counts from boot), so that
  // a launch's began_ns says whether it was (Launch::ends_quietly).
  uint64_t call_clock() const { return time_calls_ ? steady_now_ns() : 0; }

  // A synchronizing call (stream, event or device synchronize, synchronous copy) is about to run:
  // returns the mark to pass to Engine::end_sync, so launches made meanwhile by other threads stay suspects.
  uint64_t begin_sync() const { return ledger_.mark(); }

  // What the policy decides for a library call as a whole (before the shim records it as a unit).
  Decision decide_library_unit(const char* api) const;

  // Device-side breadcrumbs (shim/breadcrumbs.h, docs/localize.md; Engine::set_breadcrumbs). The slot of
  // the launch's stream (given on first use), or -1: no breadcrumbs, or more streams than slots. Inline, as
  // the rest of the launch path: a stream's slot once given is one load.
  int32_t breadcrumb_slot(const Launch& launch) {
    if (!breadcrumbs_.stream() || !launch.stream) return -1;
    int32_t slot = launch.stream->breadcrumb.load(std::memory_order_acquire);
    return slot >= 0 ? slot : breadcrumbs_.slot_of(*launch.stream);
  }
  // The shim enqueued the launch's breadcrumb write (it succeeded): only then can its slot falling short of
  // the launch show that the launch did not complete.
  void breadcrumb_enqueued(const Launch& launch) {
    if (launch.stream && !launch.record.in_capture)
      launch.stream->note_breadcrumb(launch.ring_place, launch.record.sequence);
  }
  // Either kind of breadcrumb is on (the shim's launch path asks before anything else of them).
  bool wants_breadcrumbs() const { return breadcrumbs_.any(); }
  // With stream breadcrumbs, whether the launch is one that gets its stream's write
  // (CUDA_BLOCKRUN_BREADCRUMB_EVERY: every N-th launch of a stream).
  bool takes_breadcrumb(const Launch& launch) const { return breadcrumbs_.takes(launch.ring_place); }
  // With graph breadcrumbs (CUDA_BLOCKRUN_GRAPH_BREADCRUMBS): a launch into a capture gets a breadcrumb node
  // after it (Launch::graph_slot, capture_position, set by begin_launch); a graph launch first resets the
  // slots of its graph's branches, returned here (nullptr: none). The list never changes once an executable
  // graph was made from its capture.
  const std::vector<GraphBranch>* graph_branches(const LaunchRecord& record) const {
    return GraphCaptures::branches(record);
  }

  // The stream a call names, as the ledger keys it (the per-thread default stream, one per host thread).
  inline StreamId stream_id(const void* handle, bool per_thread_default_stream) const;
  // Launches kept per stream: 8 (StreamState::kRing), Config::ring with breadcrumbs.
  static size_t ring_capacity_for(const Config& config);

  // The pieces a launch fills, which the engine decides with afterwards.
  HandleTable<KernelInfo>& kernels() { return kernels_; }
  LaunchLedger& ledger() { return ledger_; }
  BreadcrumbSlots& breadcrumbs() { return breadcrumbs_; }
  GraphCaptures& graphs() { return graphs_; }
  EntryPointCounts& entry_points() { return entry_points_; }
  CallSites& call_sites() { return call_sites_; }

 private:
  static uint64_t kernel_key(const void* handle) {
    return reinterpret_cast<uint64_t>(handle) + 1;
  }  // 0: empty
  const KernelInfo* new_kernel(const void* handle, const std::function<const char*()>& resolve_mangled_name);
  // What begin_launch takes for a launch before it makes its Launch: the numbers (atomics) and the thread's.
  struct LaunchNumbers {
    uint64_t sequence = 0;
    uint64_t kernel_ordinal = 0;
    uint32_t thread = 0;
    uint32_t thread_launch = 0;
    StreamId stream;
  };
  inline void fill_record(const LaunchRequest& request, const LaunchNumbers& numbers, LaunchRecord* record);
  // The policy's decision for a record begin_launch filled, where it has rules (begin_launch asks only then).
  // From the record, not the request: the request is then never taken by address, and the shim's inlined
  // begin_launch keeps its fields in registers.
  Decision decide(const LaunchRecord& record, LaunchFamily family) const;
  // A launch into a capture: kept, with its call site, as what the capture's graph will run.
  void keep_captured_launch(Launch& launch, uint64_t capture_id);

  Config config_;
  uint64_t start_ms_ = 0;  // the steady clock when the path was made, for the policy's time terms
  HandleTable<KernelInfo> kernels_;
  LaunchLedger ledger_;
  BreadcrumbSlots breadcrumbs_;
  GraphCaptures graphs_;
  EntryPointCounts entry_points_;
  CallSites call_sites_;
  // No rules, and no stack walked for a launch outside a capture (set by start()): begin_launch then leaves
  // every such launch's decision Run and its stack not taken, without asking either.
  bool skip_policy_and_stack_ = false;
  bool time_calls_ = false;  // --trace or --log-launches: launches and calls get their times (call_clock)
};

// The launch path (begin_launch and what it calls on every launch), inline so that the shim's wrappers take
// it without a call.
inline const void* const kLegacyStream = reinterpret_cast<const void*>(0x1);     // cudaStreamLegacy
inline const void* const kPerThreadStream = reinterpret_cast<const void*>(0x2);  // cudaStreamPerThread

inline StreamId LaunchPath::stream_id(const void* handle, bool per_thread_default_stream) const {
  StreamId id;
  if (handle == kLegacyStream) handle = nullptr;
  if (handle == kPerThreadStream || (handle == nullptr && per_thread_default_stream)) {
    id.handle = kPerThreadStream;
    id.per_thread_owner = current_thread_number();
    return id;
  }
  id.handle = handle;
  return id;
}

// Fills a record begin_launch has just made, with the numbers it took before.
inline void LaunchPath::fill_record(const LaunchRequest& request, const LaunchNumbers& numbers,
                                    LaunchRecord* out) {
  LaunchRecord& record = *out;
  record.sequence = numbers.sequence;
  record.kernel_ordinal = numbers.kernel_ordinal;
  record.api = request.api;
  record.driver_api = request.driver_api;
  record.kernel = request.kernel;
  record.graph = request.graph;
  record.library_api = request.library_api;
  record.library = request.library;
  record.grid = request.grid;
  record.block = request.block;
  record.shared_memory = request.shared_memory;
  record.caller = request.caller;
  record.thread = numbers.thread;
  record.thread_launch = numbers.thread_launch;
  record.stream = numbers.stream;
  record.in_capture = request.in_capture;
}

static_assert(std::is_trivially_destructible_v<Launch>, "begin_launch makes a Launch over an old one");

inline void LaunchPath::begin_launch(const LaunchRequest& request, Launch* out) {
  uint64_t began_ns = request.began_ns ? request.began_ns : call_clock();
  LaunchNumbers numbers;
  numbers.sequence = ledger_.number_launch();
  if (request.kernel) {
    uint64_t launches = const_cast<KernelInfo*>(request.kernel)->launches.fetch_add(1) + 1;
    numbers.kernel_ordinal = request.kernel->past_table ? 0 : launches;
  }
  numbers.thread = current_thread_number();
  numbers.thread_launch = ledger_.number_thread_launch();
  if (request.kernel) const_cast<KernelInfo*>(request.kernel)->note_launching_thread(numbers.thread);
  numbers.stream = stream_id(request.stream, request.per_thread_default_stream);
  // Made here, over whatever `out` held (a Launch is trivially destructible), once the numbers above are
  // taken: with no call or atomic between the making and the filling, each field is stored once. The fields
  // the record does not take from the request keep their defaults (no stack, no Python site, not refused).
  Launch& launch = *new (out) Launch;
  LaunchRecord& record = launch.record;
  fill_record(request, numbers, &record);
  launch.began_ns = began_ns;
  // The policy and the stack walk: a launch nothing selects (the common case) needs neither, and pays one
  // test for both (skip_policy_and_stack_).
  if (!skip_policy_and_stack_ || request.in_capture) {
    // No rules: every launch runs, and the policy is not asked.
    if (!config_.block.blocks_nothing()) launch.decision = decide(record, request.family);
    record.blocked = launch.decision.blocks();
    // A launch into a capture is where the user wrote a graph node: its stack is walked (captures are rare
    // and not a hot path), since a C++ program's own frame is often below the CUDA runtime's.
    if (call_sites_.walks() && (call_sites_.wants_stack(launch.decision) || request.in_capture)) {
      call_sites_.take_stack(&launch.stack);
      record.has_stack = true;
    }
  }
  if (call_sites_.keeps_python(request.in_capture)) {
    if (request.no_python && !record.has_stack) {
      record.python_status = PythonStatus::NoPython;
    } else {
      // The call stack's frames, else a scratch.
      call_sites_.keep_python_site(record, launch.stack.python);
    }
  }
  entry_points_.count(record.api);
  if (record.graph)
    record.graph_replay = static_cast<uint32_t>(
        const_cast<GraphInfo*>(record.graph)->launches.fetch_add(1, std::memory_order_relaxed) + 1);
  if (request.in_capture && request.capture_id) keep_captured_launch(launch, request.capture_id);
  launch.stream = ledger_.stream(record.stream);
  // A launch into a capture becomes a graph node and runs only when the graph does (as that graph launch's
  // work): it is never one of its stream's unfinished launches.
  if (launch.stream && !record.in_capture) launch.ring_place = launch.stream->push(record, &launch.stack);
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
