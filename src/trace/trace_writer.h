// Writing a timeline in the Chrome trace-event JSON format (its "JSON object format": a `traceEvents` array
// and `otherData`), which ui.perfetto.dev and chrome://tracing open. The shim's tracer (tracer.h) writes one
// from its records at exit, or from its fatal-signal handler, and `cuda-blockrun report --trace` writes one
// from the JSON-lines reports of a job (readers/job_trace.h): both through the functions here, so
// that both say the same things the same way (docs/trace.md).
//
// Async-signal-safe: no allocation, no lock, no stdio. Each event is built in a fixed buffer and appended to
// the caller's output buffer, which goes to the file (an OutputFile: output_file.h) whenever it fills.
//
// The tracks: per process (pid), one per host thread (tid = the host thread number the log uses), where
// launches and synchronizing calls are slices that nest (a library call around the kernels it launched, a
// blocked launch around its blocking wait); and one per stream (tid = kStreamTrackBase + an index), where a
// blocked launch timed with --gpu-time shows its GPU span.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "util/fixed_text.h"
#include "records.h"

namespace blockrun::trace {

// Stream tracks are numbered from here, after every host thread's (a process has far fewer threads).
constexpr uint64_t kStreamTrackBase = 1'000'000;
// Of a kernel's demangled name, in a slice's name and arguments (templates can run to kilobytes).
constexpr size_t kNameBytes = 1024;

// One launch unit (a kernel launch, a library call blocked as a unit, a graph launch), a library call around
// the kernels it launched, or a synchronizing call, on its host thread's track. Text fields are shown as
// arguments where not null; numbers where not 0.
struct CallSlice {
  uint64_t pid = 0, tid = 0;
  uint64_t began_ns = 0, ended_ns = 0;  // since the trace's origin
  uint64_t wait_began_ns = 0;           // a blocked launch: when its blocking wait began (0: not blocked)
  const char* category = "launch";      // launch | graph replay | library call | synchronize (launch():
                                        // `blocked launch` for a blocked kernel launch)
  const char* name = "";                // the kernel (demangled), the library call, cuGraphLaunch, the API
  const char* color = nullptr;          // a trace viewer color name (cname), or nullptr
  uint64_t seq = 0;                     // the launch number (launch units only)
  uint64_t kernel_launch = 0;           // N of NAME#N
  const char* kernel_base = nullptr;    // the NAME of NAME#N
  const char* api = nullptr;            // the entry point the program called
  const char* driver_api = nullptr;
  const char* library_call = nullptr;   // `cublasSgemm_v2 m=512 n=512 k=512 transa=N transb=N`
  const char* stream = nullptr;         // `0x0`, `per-thread default (thread 2)`
  const char* configuration = nullptr;  // `<<<(4096,1,1), (256,1,1), 0, 0x0>>>`
  const char* python = nullptr;         // `train.py:35 in forward`
  const char* outcome = nullptr;        // launched, blocked, blocked, failed, failed, refused, ...
  const char* result = nullptr;         // the error it returned, or null
  const char* graph = nullptr;          // a graph launch: `exec 0x55d1c2a0, replay 3, 21 nodes`
  const char* verdict = nullptr;        // the first error's verdict on this launch, where it has one
  bool blocked = false;                 // the policy blocked it (launch() colors it, names its category)
  int64_t gpu_ns = -1;                  // the GPU time of a blocked launch (--gpu-time), -1: none
  uint64_t stream_tid = 0;              // its stream's track, for the GPU span (0: none)
};

// The first error, where it surfaced: the call that returned it (its span) and what was decided.
struct ErrorMark {
  uint64_t pid = 0, tid = 0;
  uint64_t began_ns = 0, returned_ns = 0;  // the call that returned it (began 0: only the moment is known)
  bool call_has_slice = false;             // that call is a slice of its own (a launch, a synchronize)
  const char* error = "";                  // cudaErrorIllegalAddress
  const char* api = "";                    // the call that returned it
  const char* how = nullptr;
  const char* certainty = nullptr;    // exact | suspects
  const char* method = nullptr;       // launch | blocking | breadcrumbs | host
  const char* culprit = nullptr;      // `stencil#13, launch #38`, or null
  const char* failed_node = nullptr;  // a graph replay's node, where graph breadcrumbs told
};

// A flow arrow from a launch's slice to where the first error surfaced.
struct Flow {
  uint64_t id = 0;
  uint64_t pid = 0;
  uint64_t from_tid = 0, from_ns = 0;  // a moment inside the launch's slice (not inside its blocking wait)
  uint64_t to_tid = 0, to_ns = 0;      // a moment inside the surfacing call's slice
  const char* name = "culprit";        // culprit | candidate | suspect
};

// Where, inside a launch's slice, its flow arrow starts: before its blocking wait (a nested slice of its own,
// to which an arrow starting there would bind).
uint64_t flow_point(const CallSlice& slice);
// Where, inside the surfacing call's slice, the arrows end and the instant is put.
uint64_t error_point(const ErrorMark& mark);

// A slice's argument texts, built the same way by both writers of traces.
using SliceText = Text<512>;
// `<<<(4096,1,1), (256,1,1), 0, 0x0>>>`, as the log writes a launch.
void configuration_text(SliceText& out, const Dim3& grid, const Dim3& block, uint64_t shared_memory,
                        const char* stream);
// `cublasSgemm_v2 m=512 n=512 k=512 transa=N transb=N` (and ` batch=8`).
void library_call_text(SliceText& out, const char* api, const LibraryCall& call);
// `exec 0x55d1c2a0, replay 3, 21 nodes` (the nodes where known, not 0).
void graph_text(SliceText& out, const char* exec, uint64_t replay, uint64_t nodes);
// `train.py:35 in forward`.
void python_text(SliceText& out, const char* file, int line, const char* function);

// What the first error decided about the launches, by launch number: the slices it names say so, and have an
// arrow to where it surfaced (`mark`).
struct Verdicts {
  bool has_error = false;
  ErrorMark mark;
  uint64_t culprit = 0;  // 0: none
  bool exact = false;
  uint64_t refused = 0;              // the launch the context refused, where it surfaced there
  const uint64_t* others = nullptr;  // the breadcrumbs' candidates, or the suspects
  size_t other_count = 0;
  bool others_are_candidates = false;
};

class TraceWriter {
  // A name and a dozen texts, each cut, each byte at most 3 when escaped.
  using Event = Text<32768>;

 public:
  static constexpr size_t kEventBytes = (sizeof(Event) + 15) / 16 * 16;

  // Writes to `file` through `buffer` (`size` bytes, more than kEventBytes: the event being built takes the
  // first kEventBytes, the rest is the output buffer; a MiB keeps writes few). Nothing is written before
  // begin(). The buffer, not the stack, holds the event: the fatal-signal handler's stack may be small.
  TraceWriter(OutputFile* file, char* buffer, size_t size);
  // The same, into descriptor `fd` (a file of its own, written from its start: tracer.h's file beside the
  // trace), whose failed write's errno error() then gives.
  TraceWriter(int fd, char* buffer, size_t size);

  // The document's start: `otherData` (what made the trace, and what it left out) and the array's opening.
  // `dropped` events were left out of the bounded per-thread buffers (0: none), `events_per_thread` the
  // bound.
  void begin(const char* producer, uint64_t origin_unix_us, uint64_t dropped, uint64_t events_per_thread);
  void process_name(uint64_t pid, const char* name, int64_t sort_index);
  void thread_name(uint64_t pid, uint64_t tid, const char* name, int64_t sort_index);
  // A call's slice, its blocking wait nested in it, and its GPU span on its stream's track (with --gpu-time).
  void call(const CallSlice& slice);
  // A launch unit's slice, with what `verdicts` say of it (its `verdict` and color) and, where it is the
  // first error's culprit, a candidate or a suspect, an arrow from it to where the error surfaced.
  void launch(CallSlice slice, const Verdicts& verdicts);
  // The first error: an instant where it surfaced (and a slice for the call that returned it, where that call
  // has none of its own), its arguments saying what was decided.
  void error(const ErrorMark& mark);
  void flow(const Flow& flow);
  // An instant on a thread's track: `text` is its name, `detail` an argument (or nullptr).
  void instant(uint64_t pid, uint64_t tid, uint64_t at_ns, const char* category, const char* text,
               const char* detail);
  // Closes the document and writes what is buffered. False where any write failed.
  bool end();

  // What a process's trace left out, by cause; `otherData` says each (docs/trace.md).
  struct LeftOut {
    uint64_t oldest = 0;     // let go by the per-thread bound (--trace-events)
    uint64_t untracked = 0;  // of threads past the bound of threads with a buffer
    uint64_t missed = 0;     // made while the trace was being written, or overwritten as it was read
  };
  // A document whose `otherData` comes after its events (what was left out is known once they are read):
  // begin_events() opens it, end_with() closes it. False where any write failed.
  void begin_events();
  bool end_with(const char* producer, uint64_t origin_unix_us, uint64_t events_per_thread,
                const LeftOut& left_out);
  // The errno of the first write that failed, where the writer wrote to a descriptor (0: none, not known).
  int error() const { return error_; }

 private:
  void start_event(Event& event, char phase, uint64_t pid, uint64_t tid, uint64_t at_ns, const char* name,
                   const char* category);
  void emit(const Event& event);
  // otherData's keys every trace has, whether written first (begin) or last (end_with).
  static void add_origin(Event& event, const char* producer, uint64_t origin_unix_us,
                         uint64_t events_per_thread);
  void put(const char* data, size_t size);
  void flush();

  bool write_out(const char* data, size_t size);

  OutputFile* file_;
  int fd_ = -1;
  int error_ = 0;
  char* buffer_;
  size_t size_;
  size_t used_ = 0;
  bool failed_ = false;
  bool first_event_ = true;
  uint64_t flows_ = 0;
  Event& event_;  // the event being built, at the start of the caller's buffer
};

}  // namespace blockrun::trace
// SPDX-License-Identifier: MIT
