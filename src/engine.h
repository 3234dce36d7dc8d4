// The engine: follows what completed, ends launches (blocked, failed, logged, traced) and pins the first CUDA
// error to a launch. It knows nothing of CUDA's ABI: the shim (shim/) translates each intercepted call into
// these calls. Tests drive it directly. It holds the launch path (launch_path.h: what every launch passes
// before its real call, and the pieces a launch fills: the ledger of streams and suspects, breadcrumbs,
// graphs, entry-point counts, the call sites) and decides with those pieces afterwards; its own state lives
// in pieces too (src/pieces/: blocked launches, the first error; the tracer, src/trace/; docs/design.md has
// the table). What it decides it hands as values (report/views.h) to the writers under report/, which turn
// them into JSON records and log text.
//
// The rule: a feature's state lives in a piece of its own (src/pieces/, src/callsites/call_sites.h,
// src/trace/), never as new members of Engine; the engine holds the pieces and decides with them. A piece a
// launch fills belongs to the launch path.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "call_values.h"
#include "callsites/callsite.h"
#include "cuda/cuda_errors.h"
#include "cuda/driver_log.h"
#include "pieces/block_tally.h"
#include "pieces/first_error_latch.h"
#include "pieces/told_once.h"
#include "report/process_info.h"

// engine.h is what every file of the shim that calls the engine includes: what the engine holds by pointer or
// only names in a declaration is declared here, not included (the launch path and its pieces, the records,
// the configuration, the writers' views, the report and trace files), so that a file that calls the engine
// reads little more than its declarations; the launch path's own files include launch_path.h too
// (docs/design.md, "What a shim file sees").
namespace spdlog {
class logger;
}

namespace blockrun {

class LaunchPath;
class LaunchLedger;
class BreadcrumbSlots;
class GraphCaptures;
class CallSites;
struct Config;
struct Launch;
struct LaunchRecord;
struct KernelInfo;
struct GraphInfo;
struct EventPoint;
struct InFlight;
struct ReportedLaunch;
struct Decision;
enum class OnError : uint8_t;
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
  // The launch path (launch_path.h), which the shim's launch wrappers take before the real call; the engine
  // holds it and decides with its pieces afterwards.
  LaunchPath& launch_path() { return *path_; }

  // The driver, where it was loaded only after start() (the first CUDA call was a runtime launch, before the
  // runtime loaded it): its version and what it lacks of the shim's newer entry points, told once now in the
  // log; the summary record carries it.
  void note_driver(const DriverSupport& driver);

  // --trace (trace/tracer.h): the file the timeline goes to, opened by the shim; before start().
  void set_trace_file(std::unique_ptr<OutputFile> file, const std::string& path);
  // LaunchPath::call_clock, for a file that calls the engine and does not include the launch path (the launch
  // gate).
  uint64_t call_clock() const;
  // A library call that launched kernels and is not a unit of its own: a slice around them in the trace.
  void note_library_call(const char* api, const LibraryCall& call, const void* stream, CallSpan span);
  // A fatal signal: the trace is marked and written (async-signal-safe); what was written, for its log line.
  trace::TraceWritten trace_at_fatal_signal(const char* signal);
  // The trace's file name (expanded), "" without --trace.
  const char* trace_path() const;

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

  // After the real launch (and the blocking synchronize, when there was one). `launch_result` is what
  // the launch entry point returned, `sync_result` what the synchronize returned (when Synchronized).
  void end_launch(Launch& launch, ErrorCode launch_result, BlockOutcome outcome, ErrorCode sync_result,
                  const char* sync_api);
  // A synchronizing call (stream, event or device synchronize, synchronous copy) ended, begun with `mark`
  // (LaunchPath::begin_sync). `stream` null with device_wide true: the whole device was synchronized.
  // `span`: the call, where timed (call_clock): with own_slice, a synchronize of the trace.
  void end_sync(const char* api, bool device_wide, const void* stream, bool per_thread_default_stream,
                uint64_t mark, ErrorCode result, CallSpan span = {});

  // Events order streams (PyTorch's wait_stream, a warm-up on a side stream before a graph capture): an
  // event's record stands for the launches on its stream numbered before the record call began (`mark`,
  // LaunchPath::begin_sync() taken before it). A stream known to be past a wait on it, or the event's own
  // synchronize or query, proves those complete too, so that they are no suspects. Cheap (a table lookup and
  // a store; an event past the table's room is not followed, which only loses a proof). Called only for calls
  // that succeeded outside a stream capture (inside one, a record is a graph node: forget_event).
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
  // The shim's own trouble (a missing CUDA function, ...): logged once per distinct text.
  void report_shim_problem(const std::string& text);

  // A message of the driver's error log (cuLogsRegisterCallback), from any thread: kept (the newest
  // few) and attached to the first error when it comes from the same thread shortly after.
  void note_driver_log(const char* message, size_t length);

  // Writes the summary line (when enabled and CUDA was used) and flushes. Safe to call repeatedly;
  // later calls log only what changed.
  void finish();

  // Counters, for the summary and tests.
  uint64_t launches() const;
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
  // Sets `accused`'s suspects and their count.
  void may_have_faulted_instead(const Launch& launch, Accused* accused);
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
  Summary summary(bool with_units);

  std::unique_ptr<LaunchPath> path_;
  // The launch path's pieces the engine decides with, held by the path (references, so that engine.h need
  // not include them).
  const Config& config_;
  LaunchLedger& ledger_;
  BreadcrumbSlots& breadcrumbs_;
  GraphCaptures& graphs_;
  CallSites& call_sites_;

  std::shared_ptr<spdlog::logger> logger_;
  ErrorDescriber describe_error_;
  Terminate terminate_;
  const long owner_pid_;  // the process that created the engine
  BlockTally blocking_;

  ProcessInfo process_;
  std::unique_ptr<ReportFile> report_;

  DriverLog driver_log_;

  std::unique_ptr<trace::Tracer> tracer_;  // --trace
  uint64_t start_steady_ns_ = 0;           // the steady clock when the start record was written

  FirstErrorLatch first_error_;
  std::atomic<bool> finished_{false};

  std::mutex report_mutex_;  // serializes multi-line reports; never taken on the launch path
  ToldOnce reported_problems_;
  std::string first_error_summary_;
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
