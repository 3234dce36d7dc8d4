// The engine: numbers and records launches, asks the policy whether to block, and pins the first CUDA error
// to a launch. It knows nothing of CUDA's ABI: the shim (shim/) translates each intercepted call into these
// calls. Tests drive it directly. Its state lives in pieces that each own theirs (src/pieces/: the ledger of
// streams and suspects, breadcrumbs, graphs, blocked launches, entry-point counts, the first error; the call
// sites, src/callsites/call_sites.h; the tracer, src/trace/; docs/design.md has the table); what it decides
// it hands as values (report/views.h) to the writers under report/, which turn them into JSON records and log
// text.
// The rule: a feature's state lives in a piece of its own (src/pieces/, src/callsites/call_sites.h,
// src/trace/), never as new members of Engine; the engine holds the pieces and decides with them.
#pragma once

#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "callsites/call_sites.h"
#include "callsites/callsite.h"
#include "config/config.h"
#include "cuda/cuda_errors.h"
#include "cuda/driver_log.h"
#include "pieces/block_tally.h"
#include "pieces/breadcrumb_slots.h"
#include "pieces/entry_point_counts.h"
#include "pieces/first_error_latch.h"
#include "pieces/graph_captures.h"
#include "pieces/launch_ledger.h"
#include "pieces/told_once.h"
#include "records.h"
#include "report/process_info.h"
#include "util/clock.h"
#include "util/handle_table.h"
#include "util/thread_number.h"

// engine.h is what every file of the shim that calls the engine includes, the launch path among them: what
// the engine holds by pointer or only names in a declaration is declared here, not included (the writers'
// views, the report and trace files), so that a shim file sees only what the launch path needs
// (docs/design.md, "What a shim file sees").
namespace spdlog {
class logger;
}

namespace blockrun {

class ReportFile;
class OutputFile;
struct Summary;
struct LaunchView;
struct GraphCaptureView;
struct Finding;
struct SuspectTally;
namespace trace {
class Tracer;
struct TraceWritten;
struct TraceEntry;
struct SurfacingCall;
}  // namespace trace

using ErrorDescriber = std::function<ErrorText(ErrorCode)>;

// Ends the process after a blocked launch failed under an `abort` or `exit=N` rule, once the report is
// written and flushed. Tests replace it.
using Terminate = std::function<void(OnError, int exit_status)>;

// Where an error that is not the call's own surfaced, when not at an ordinary call: at a launch the context
// refused (it never ran), or at the shim's own check at exit.
struct Surfacing {
  const Launch* refused_launch = nullptr;
  bool at_exit = false;
  CallSpan call;  // the call that returned it, where measured (--trace)
};

class Engine {
 public:
  Engine(Config config, std::shared_ptr<spdlog::logger> logger, ErrorDescriber describe,
         Terminate terminate = nullptr);
  ~Engine();

  // Before the engine is used: the process facts and, when configured, the report file (the `start`
  // record is written now), and how to take call sites: `stack` the whole stack, `python` the Python
  // frames alone (kept for every launch with breadcrumbs, as an interned site: python_sites.h), and
  // `python_site` that line alone, read in full only the first time (python_site_cache.h).
  void start(ProcessInfo info, std::unique_ptr<ReportFile> report, StackFunction stack,
             PythonStackFunction python = nullptr, PythonSiteFunction python_site = nullptr);

  const Config& config() const { return config_; }

  // The driver, where it was loaded only after start() (the first CUDA call was a runtime launch, before the
  // runtime loaded it): its version and what it lacks of the shim's newer entry points, told once now in the
  // log; the summary record carries it.
  void note_driver(const DriverSupport& driver);

  // --trace (trace/tracer.h): the file the timeline goes to, opened by the shim; before start().
  void set_trace_file(std::unique_ptr<OutputFile> file, const std::string& path);
  // The steady clock where calls are timed (--trace; --log-launches, whose records a trace is made from),
  // else 0 (no clock read): launches, and the calls the shim hands over (synchronizes, library calls, calls
  // whose error may be the first).
  uint64_t call_clock() const { return time_calls_ ? steady_now_ns() : 0; }
  // A library call that launched kernels and is not a unit of its own: a slice around them in the trace.
  void note_library_call(const char* api, const LibraryCall& call, const void* stream, CallSpan span);
  // A fatal signal: the trace is marked and written (async-signal-safe); what was written, for its log line.
  trace::TraceWritten trace_at_fatal_signal(const char* signal);
  // The trace's file name (expanded), "" without --trace.
  const char* trace_path() const;

  // Returns the kernel known by `handle`, naming it with `resolve_mangled_name` (which returns the
  // mangled name or nullptr) the first time the handle is seen. Lock-free and allocation-free after
  // the first time: the launch path takes the inline lookup, and only a new handle pays for more.
  template <typename Resolve>
  const KernelInfo* kernel(const void* handle, Resolve&& resolve_mangled_name) {
    if (KernelInfo* known = kernels_.find(kernel_key(handle))) return known;
    return new_kernel(handle, std::function<const char*()>(std::forward<Resolve>(resolve_mangled_name)));
  }

  // What the policy decides for a library call as a whole (before the shim records it as a unit).
  Decision decide_library_unit(const char* api) const;

  // The executable graph `exec`, as instantiated (note_graph) or first launched.
  const GraphInfo* graph(const void* exec);
  // At instantiation: `exec` made from `graph` (a CUgraph; its capture, if the shim saw one, is linked).
  const GraphInfo* note_graph(const void* exec, uint64_t nodes, const void* graph = nullptr);

  // Stream captures: a capture `id` began (after cuStreamBeginCapture succeeded; `caller` is the return
  // address into the code that called it), and ended making `graph` (nullptr: it failed). Launches recorded
  // with LaunchRequest::capture_id between the two are kept, in order, as what the graph runs, with their
  // call sites: a fault in one of the graph's replays is then told with where its kernels were captured.
  void begin_capture(uint64_t id, uintptr_t caller);
  void end_capture(uint64_t id, const void* graph);
  // A graph built node by node (`graph`, a CUgraph) got a node running `kernel`, added by the code that
  // `caller` returns into: kept like a captured launch, in the order added.
  void note_graph_kernel_node(const void* graph, const KernelInfo* kernel, uintptr_t caller);

  // Numbers and records a launch and asks the policy; captures its call site when it needs one
  // (CallSites::wants_stack). Cheap: no lock but the stream's own, no allocation for known kernels and
  // streams. Makes *launch anew, over whatever it held: a Launch, or raw storage for one (the shim's, not
  // zeroed twice). Inline (defined below the class): every launch of the process passes here, and the shim's
  // wrapper then writes the record straight from its arguments, where a call took the request through memory.
  [[gnu::always_inline]] inline void begin_launch(const LaunchRequest& request, Launch* launch);

  // Captures the call site of a launch that did not get one at begin_launch (a launch that failed).
  void take_stack_now(Launch& launch);
  Launch begin_launch(const LaunchRequest& request) {
    Launch launch;
    begin_launch(request, &launch);
    return launch;
  }

  // After the real launch (and the blocking synchronize, when there was one). `launch_result` is what
  // the launch entry point returned, `sync_result` what the synchronize returned (when Synchronized).
  void end_launch(Launch& launch, ErrorCode launch_result, BlockOutcome outcome, ErrorCode sync_result,
                  const char* sync_api);
  // Whether end_launch has nothing to do for a launch that succeeded and was not blocked: no log line, no
  // trace slice. The launch path then skips it (the common case: a launch nothing selects).
  bool ends_quietly(const Launch& launch) const {
    return launch.decision.action == Action::Run && !time_calls_;
  }

  // A synchronizing call (stream, event or device synchronize, synchronous copy) is about to run:
  // returns the mark to pass to end_sync, so launches made meanwhile by other threads stay suspects.
  uint64_t begin_sync() const { return ledger_.mark(); }
  // `stream` null with device_wide true: the whole device was synchronized. `span`: the call, where timed
  // (call_clock): with own_slice, a synchronize of the trace.
  void end_sync(const char* api, bool device_wide, const void* stream, bool per_thread_default_stream,
                uint64_t mark, ErrorCode result, CallSpan span = {});

  // Events order streams (PyTorch's wait_stream, a warm-up on a side stream before a graph capture): an
  // event's record stands for the launches on its stream numbered before the record call began (`mark`,
  // begin_sync() taken before it). A stream known to be past a wait on it, or the event's own synchronize
  // or query, proves those complete too, so that they are no suspects. Cheap (a table lookup and a store;
  // an event past the table's room is not followed, which only loses a proof). Called only for calls that
  // succeeded outside a stream capture (inside one, a record is a graph node: forget_event).
  void note_event_record(const void* event, const void* stream, bool per_thread_default_stream,
                         uint64_t mark);
  // The event was created or destroyed (or recorded into a capture): its handle stands for no record.
  void forget_event(const void* event);
  // What the event's last record stands for, read before a wait on it, a synchronize or a query (a record
  // made meanwhile by another thread can then only make the call wait for more than the engine assumes).
  EventPoint event_point(const void* event);
  // `stream` waited for `awaited` (event_point before cuStreamWaitEvent, which succeeded). The launches
  // numbered from the counter's value after the wait returned come after it on `stream`; a synchronize of
  // `stream` whose mark is higher began after it (the value is read with a read-modify-write, so the two are
  // ordered).
  void note_stream_wait(const void* stream, bool per_thread_default_stream, const EventPoint& awaited);
  // After a synchronize or query of an event returned success: what `point` stands for completed.
  void event_completed(const EventPoint& point);

  // Any other call that returned an error (cudaGetLastError, an async copy, a library call's status).
  // `span`: the call, where timed (call_clock), so that the trace can show where the first error surfaced.
  void observe_error(const char* api, ErrorCode result, const void* stream, bool per_thread_default_stream,
                     CallSpan span = {});
  // A call that touches the device (an allocation, an event, a module load, ...) returned `result`: only an
  // error that may be an earlier kernel's, surfacing there (src/cuda/cuda_errors.def), is observed; the
  // call's own (out of memory, an invalid value) is the program's business.
  void watch_error(const char* api, ErrorCode result, const void* stream, bool per_thread_default_stream,
                   CallSpan span = {});
  // At exit, the shim's own non-blocking check of the context (`api`, what it called) returned `result`: a
  // sticky error no call of the program saw is still the process's first error ("surfaced only at exit").
  // Nothing when a first error was seen, when `result` is the call's own, or in a forked child.
  void check_at_exit(const char* api, ErrorCode result);
  // Whether any launch is not known to have completed (the check at exit is made only then: a program that
  // synchronized its work sees no extra CUDA call).
  bool has_unfinished_launches() const;

  // Device-side breadcrumbs (shim/breadcrumbs.h, docs/localize.md): after each launch the shim
  // enqueues, on the launch's stream, a write of the launch's number into that stream's slot of pinned,
  // host-mapped memory. When the first error surfaces, each slot says how far its stream got, so the
  // first launch after it on each stream is all that can have faulted: one stream with such a launch
  // names the culprit exactly, several give the candidates, oldest first. `slots` (count of them) must
  // outlive the engine; `ring` launches are kept per stream from then on (enough to hold every launch in
  // flight; Config::ring, fixed when the engine is made, so that threads launching while another sets
  // breadcrumbs up all see one size). May be called while other threads launch: their launches until then go
  // without breadcrumbs.
  void set_breadcrumbs(volatile uint64_t* slots, uint32_t count);
  // The slot of the launch's stream (given on first use), or -1: no breadcrumbs, or more streams than slots.
  // Inline, as the rest of the launch path: a stream's slot once given is one load.
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
  // With graph breadcrumbs (CUDA_BLOCKRUN_GRAPH_BREADCRUMBS): a launch into a capture gets a breadcrumb node
  // after it (Launch::graph_slot, capture_position, set by begin_launch); a graph launch first resets the
  // slots of its graph's branches, returned here (nullptr: none). The list never changes once an executable
  // graph was made from its capture.
  bool graph_breadcrumbs() const { return breadcrumbs_.graph(); }
  // Either kind of breadcrumb is on (the shim's launch path asks before anything else of them).
  bool wants_breadcrumbs() const { return breadcrumbs_.any(); }
  // With stream breadcrumbs, whether the launch is one that gets its stream's write
  // (CUDA_BLOCKRUN_BREADCRUMB_EVERY: every N-th launch of a stream).
  bool takes_breadcrumb(const Launch& launch) const { return breadcrumbs_.takes(launch.ring_place); }
  const std::vector<GraphBranch>* graph_branches(const LaunchRecord& record) const;

  // The shim's own trouble (a missing CUDA function, ...): logged once per distinct text.
  void report_shim_problem(const std::string& text);

  // A message of the driver's error log (cuLogsRegisterCallback), from any thread: kept (the newest
  // few) and attached to the first error when it comes from the same thread shortly after.
  void note_driver_log(const char* message, size_t length);

  // Writes the summary line (when enabled and CUDA was used) and flushes. Safe to call repeatedly;
  // later calls log only what changed.
  void finish();

  // Counters, for the summary and tests.
  uint64_t launches() const { return ledger_.launches(); }
  uint64_t blocked_launches() const { return blocking_.blocked(); }
  uint64_t later_errors() const { return first_error_.later(); }
  bool has_first_error() const { return first_error_.taken(); }
  // Whether this is the process that made the engine (not a forked child, which must not call CUDA).
  bool in_owner_process() const { return static_cast<long>(getpid()) == owner_pid_; }
  // Waits, up to `max_ms`, while another thread is still writing the first error's record (naming its
  // suspects can take a while: their symbols are read then). For the fatal-signal path: a PyTorch NCCL
  // watchdog that sees the same error aborts the process while the thread that saw it first still writes, and
  // the record must come out first. Async-signal-safe; returns at once when the caller is that thread, or
  // when no record is being written. Returns whether none is (any more).
  bool wait_for_first_error_record(int max_ms) const;
  // With breadcrumbs: each stream's first launch that has not completed (the breadcrumbs say how far each
  // stream got), oldest first, up to `max`; the count written. Async-signal-safe, for the fatal-signal
  // record: no allocation, and a stream whose ring another thread holds at that moment is left out rather
  // than waited for. A rank stuck in an NCCL collective shows that collective here when its watchdog aborts
  // it.
  using InFlight = blockrun::InFlight;
  size_t in_flight_now(InFlight* out, size_t max) const;
  // The report's file descriptor, or -1: the fatal-signal path writes its last record with write(2) alone.
  OutputFile* report_file() const;

  // A short text for a record (`kernel stencil(float*, int), launch #51, stream 0x0, grid ...`).
  std::string describe(const LaunchRecord& record) const;

 private:
  static uint64_t kernel_key(const void* handle) {
    return reinterpret_cast<uint64_t>(handle) + 1;
  }  // 0: empty
  const KernelInfo* new_kernel(const void* handle, const std::function<const char*()>& resolve_mangled_name);
  StreamState* stream_state(StreamId id) { return ledger_.stream(id); }
  inline StreamId stream_id(const void* handle, bool per_thread_default_stream) const;
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
  // end_launch's three ways: the launch itself failed, it was blocked, the block was skipped (capture).
  void launch_failed(Launch& launch, ErrorCode launch_result);
  void launch_blocked(Launch& launch, ErrorCode sync_result, const char* sync_api);
  void blocking_skipped(Launch& launch, ErrorCode launch_result);
  // After a blocked launch failed under an `abort` or `exit=N` rule: ends the process, report written.
  void end_process_as_rule_says(const Decision& decision);
  // The first error: `culprit` (nullptr: unknown) and `suspects`; `how` the launch's own account ("": it
  // surfaced elsewhere, `where`).
  struct Accused;  // engine.cpp
  void first_error(const char* api, const ClassifiedError& error, const char* how, Accused accused,
                   Surfacing where = {});
  // What the first error record and log say, resolved (symbolized) once for both (but the error's text and
  // the driver's log, which the caller adds). With report_mutex_ held.
  Finding find(const char* api, const ClassifiedError& error, const char* how, const Accused& accused,
               Surfacing where);
  void pin(const Accused& accused, Finding* finding) const;
  static SuspectTally tally(const Accused& accused);
  // An error surfaced at a call that did not cause it (or whose cause is not known): the culprit comes from
  // the breadcrumbs, else the suspects: what had not completed (on any stream, for a sticky error).
  void surfaced(const char* api, const ClassifiedError& error, StreamId stream, Surfacing where);
  // An error a call returned (`span`, where timed), counted when a first error was already taken.
  void surfaced_at_call(const char* api, const ClassifiedError& error, StreamId stream, CallSpan span);
  bool surfaced_by_breadcrumbs(const char* api, const ClassifiedError& error, Surfacing where);  // true: told
  // A launch that returned an error enqueued nothing: it leaves its stream's unfinished launches.
  void refuse(Launch& launch);
  // When a blocked launch's synchronize failed: the other launches that had not completed, on any stream
  // (breadcrumbs narrow it to each stream's first unfinished one), any of which may have faulted instead.
  std::vector<ReportedLaunch> may_have_faulted_instead(const Launch& launch,
                                                       std::optional<LaunchLedger::SuspectCount>* count);
  void log_launch(const Launch& launch, const char* what, ErrorCode result);
  // An entry of the trace, its error named now (describing it may call CUDA; the trace is written where
  // nothing may be).
  void trace(const trace::TraceEntry& entry, uint32_t thread);
  // The call where the first error surfaced, on the steady clock (0 where not timed): the launch that
  // returned it (its own error, its blocking wait's, or one the context refused), else the call the shim
  // timed.
  trace::SurfacingCall surfacing_call(const Accused& accused, const Surfacing& where) const;
  // A steady-clock time as the report gives it: nanoseconds since the start record (0 for 0).
  uint64_t since_start(uint64_t steady_ns) const {
    return steady_ns > start_steady_ns_ ? steady_ns - start_steady_ns_ : 0;
  }
  // A launch as the writers tell it: its call site symbolized (`whole_stack` or up to the program's frame),
  // and a graph launch's capture with the sites of its first `told` launches. With report_mutex_ held (the
  // symbolizer is not shared).
  LaunchView view_of(const LaunchRecord& record, const CallStack* stack, bool whole_stack, bool failed,
                     size_t told);
  LaunchView view_of(const ReportedLaunch& launch, bool whole_stack, bool failed, size_t told);
  std::unique_ptr<GraphCaptureView> graph_view(const LaunchRecord& record, bool failed, size_t told);
  // Once per process, right after the log told a call site without file:line (`told_without_line`) where
  // libdw could not be loaded (never with --libdw off): why, and how to get file:line. With report_mutex_
  // held.
  void note_missing_libdw(bool told_without_line);
  void keep_captured_launch(Launch& launch, uint64_t capture_id);
  Summary summary(bool with_units);

  Config config_;
  std::shared_ptr<spdlog::logger> logger_;
  ErrorDescriber describe_error_;
  Terminate terminate_;
  uint64_t start_ms_ = 0;
  const long owner_pid_;  // the process that created the engine

  HandleTable<KernelInfo> kernels_;
  LaunchLedger ledger_;
  BreadcrumbSlots breadcrumbs_;
  GraphCaptures graphs_;

  EntryPointCounts entry_points_;
  BlockTally blocking_;

  static size_t ring_capacity_for(const Config& config);  // launches kept per stream

  CallSites call_sites_;
  // No rules, and no stack walked for a launch outside a capture (set by start()): begin_launch then leaves
  // every such launch's decision Run and its stack not taken, without asking either.
  bool skip_policy_and_stack_ = false;

  ProcessInfo process_;
  std::unique_ptr<ReportFile> report_;

  DriverLog driver_log_;

  std::unique_ptr<trace::Tracer> tracer_;  // --trace
  bool time_calls_ = false;  // --trace or --log-launches: launches and calls get their times (call_clock)
  uint64_t start_steady_ns_ = 0;  // the steady clock when the start record was written

  FirstErrorLatch first_error_;
  std::atomic<bool> finished_{false};

  std::mutex report_mutex_;  // serializes multi-line reports; never taken on the launch path
  ToldOnce reported_problems_;
  std::string first_error_summary_;
};

// The launch path (begin_launch and what it calls on every launch), inline so that the shim's wrappers take
// it without a call.
inline const void* const kLegacyStream = reinterpret_cast<const void*>(0x1);     // cudaStreamLegacy
inline const void* const kPerThreadStream = reinterpret_cast<const void*>(0x2);  // cudaStreamPerThread

inline StreamId Engine::stream_id(const void* handle, bool per_thread_default_stream) const {
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
inline void Engine::fill_record(const LaunchRequest& request, const LaunchNumbers& numbers,
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

inline void Engine::begin_launch(const LaunchRequest& request, Launch* out) {
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
  launch.stream = stream_state(record.stream);
  // A launch into a capture becomes a graph node and runs only when the graph does (as that graph launch's
  // work): it is never one of its stream's unfinished launches.
  if (launch.stream && !record.in_capture) launch.ring_place = launch.stream->push(record, &launch.stack);
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
