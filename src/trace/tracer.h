// --trace: the process's timeline, for ui.perfetto.dev and chrome://tracing (docs/trace.md). The engine hands
// the tracer each launch unit as it ends, each library call and synchronizing call, and the first error once
// it is decided; the tracer keeps them in its bounded per-thread rings (trace_recorder.h) and writes them,
// once, at exit or from the fatal-signal handler, as a Chrome trace (trace_writer.h): a track per host
// thread, a track per stream for the GPU spans of blocked launches (--gpu-time), the first error marked where
// it surfaced, with arrows from its culprit, or from the breadcrumbs' candidates or the suspects.
//
// Recording costs two clock reads and one ring entry per call, no lock. Writing allocates nothing: every name
// it writes lives as long as the process (kernel records, the Python line table, static API names) or was
// copied into the tracer when it was decided.
//
// A trace is written whole or not at all (issue 40, N5, N7): into a file beside it (`trace.json.PID.N.tmp`),
// renamed into place once complete, so that a reader never sees half a trace, whether a signal (torchrun's
// SIGTERM to the other ranks) ends the process during the exit's writing or the disk fills. A trace that
// could not be written whole is removed (the empty file opened at the first CUDA call with it), and the log
// says so. A fatal signal that arrives during the exit's writing writes the trace itself, in the second of
// two writings prepared up front, and its trace is the one kept. Where no file can be made beside it (a
// directory the program cannot write, the null device) the trace is written in place, as before.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "util/fixed_text.h"
#include "report/output_file.h"
#include "callsites/python_sites.h"
#include "trace/trace_recorder.h"

namespace blockrun::trace {

// The first error as the trace marks it: where it surfaced and what was decided (copied: the engine's
// Finding does not outlive its report).
struct ErrorFacts {
  uint32_t thread = 0;                     // the host thread where it surfaced
  uint64_t began_ns = 0, returned_ns = 0;  // steady clock: the call that returned it (began 0: not known)
  bool call_has_slice = false;             // that call is a launch or synchronize of the trace
  char api[64] = {};
  char error[64] = {};
  char how[256] = {};
  const char* certainty = "suspects";
  const char* method = "host";
  char culprit[256] = {};  // `stencil#13, launch #38`, "" for none
  uint64_t culprit_sequence = 0;
  uint64_t refused_sequence = 0;  // the launch the context refused, where it surfaced there
  static constexpr size_t kOthers = 8;
  uint64_t others[kOthers] = {};  // the breadcrumbs' candidates, or the suspects
  size_t other_count = 0;
  bool others_are_candidates = false;  // else suspects
  char failed_node[256] = {};          // a graph replay's failed node, where graph breadcrumbs told
};

// What writing the trace did, for the log's line.
struct TraceWritten {
  enum class Outcome : uint8_t {
    Nothing,     // no trace in this process (nothing to say)
    Written,     // in place, whole
    Busy,        // not written: another writing was under way (in place, or two already)
    Superseded,  // written whole, but a writing begun after it (at a fatal signal) put its trace in place
    Failed,      // not written whole: `error`, and what was left (`left`)
  };
  enum class Left : uint8_t {
    Removed,      // nothing at the path: the incomplete trace and the empty file were removed
    EarlierKept,  // the path keeps the trace written whole earlier (at a fatal signal, by an abort rule)
    Emptied,      // written in place: emptied (the directory could not be used to remove it)
    Device,       // a device: what reached it stays
  };
  bool written = false;  // Outcome::Written
  Outcome outcome = Outcome::Nothing;
  Left left = Left::Removed;
  int error = 0;           // the errno of the write that failed (0: not known)
  uint64_t events = 0;     // launches and calls in the trace
  uint64_t dropped = 0;    // older ones the per-thread bound let go
  uint64_t untracked = 0;  // those of threads that found no ring (kMaxThreads alive, or the total spent)
  uint64_t total = 0;      // entries all rings together may hold
  uint64_t stunted_threads = 0;  // rings that let entries go under a bound below the capacity (the total)
  uint64_t missed = 0;           // made while a trace was being written, or overwritten as they were read
  uint64_t threads = 0;
  bool again = false;  // an earlier call had written the file (the log said so then)
};

// The log's line for a written trace: where it went, what it holds, what the bound left out. Built without
// allocating: the fatal-signal handler writes it too.
using WrittenLine = Text<1024>;
void written_line(WrittenLine& line, const char* path, const TraceWritten& written, size_t events_per_thread);

class Tracer {
 public:
  // Keeps `events_per_thread` entries per host thread; writes `file`, opened at `path` (replaced when
  // written: a file beside it, renamed over it), in place where `path` is "" or its directory cannot be used.
  // `max_threads`: threads alive at once with a ring (TraceRecorder::kMaxThreads; tests use fewer).
  Tracer(size_t events_per_thread, std::unique_ptr<OutputFile> file, const std::string& path = "",
         size_t max_threads = TraceRecorder::kMaxThreads);
  ~Tracer();

  // The process as the trace names it; `rank` < 0 where no rank variable is set. Before anything is recorded:
  // the trace's time 0 is now (the engine's start), not when the tracer was made.
  void set_process(long pid, long rank, const std::string& name, const PythonSiteTable* python_sites);
  // The trace's file name, as given ("" for none); its c_str, so the fatal-signal path reads it as it is.
  const char* path() const { return path_.c_str(); }

  void record(const TraceEntry& entry, uint32_t thread) { recorder_.record(entry, thread); }
  // Names an error code for the trace's slices, once per code (`describe` is called only for a code not seen
  // yet); returns whether it is known now. Called where the error is met, never while writing.
  template <typename Describe>
  void name_error(ErrorCode code, Describe&& describe);
  // The first error, once.
  void first_error(const ErrorFacts& facts);
  // A fatal signal arrived on host thread `thread`: marked in the trace. Async-signal-safe.
  void fatal_signal(const char* signal, uint32_t thread);
  // A fatal signal arrived on host thread `thread`: the trace is cut there (what other threads launch from
  // now on is counted, not kept: issue 40, N8), marked, and written. Async-signal-safe.
  TraceWritten write_at_signal(const char* signal, uint32_t thread);

  // Writes the trace, replacing what an earlier call wrote (a program that lived on after a signal, whose
  // trace was written then, exits later with more). Two writings may run at once (a fatal signal during the
  // exit's, on its thread or another): the one begun last is kept. Async-signal-safe.
  TraceWritten write();
  // Whether the process's end has yet to write the trace: true once (a fatal signal may write it again).
  bool take_exit_write() { return !exit_written_.exchange(true); }
  const TraceRecorder& recorder() const { return recorder_; }

 private:
  struct ErrorName {
    ErrorCode code;
    char name[64];
  };
  static constexpr size_t kErrorNames = 32;
  const char* error_name(ErrorCode code) const;
  struct Writing;
  // The two writings that may run at once, each with its own buffer and file beside the trace.
  static constexpr int kSlots = 2;
  struct Slot {
    std::atomic<bool> busy{false};
    std::atomic<pid_t> writer{0};              // the kernel thread writing it
    std::unique_ptr<char[]> buffer;            // the writer's, allocated up front: writing allocates nothing
    std::unique_ptr<unsigned char[]> storage;  // a Writing's, likewise
    char temporary[256] = {};  // its file's name in the trace's directory ("": none, written in place)
  };
  void open_directory(const std::string& path);
  bool directory_usable() const;
  TraceWritten write_in(int slot);

  TraceRecorder recorder_;
  std::unique_ptr<OutputFile> file_;
  int directory_ = -1;  // the trace's directory (O_PATH), where the file beside it is made and renamed
  dev_t directory_device_ = 0;
  ino_t directory_inode_ = 0;
  char name_[256] = {};  // the trace's name in it
  std::string path_;
  std::atomic<bool> exit_written_{false};
  uint64_t origin_ns_;       // steady clock when the tracer was made, else set_process: the trace's time 0
  uint64_t origin_unix_us_;  // the wall clock then
  long pid_ = 0;
  char process_title_[320] = {};
  const PythonSiteTable* python_sites_ = nullptr;
  Slot slots_[kSlots];

  std::mutex error_names_mutex_;  // taken only where an error is met
  ErrorName error_names_[kErrorNames];
  std::atomic<size_t> error_name_count_{0};

  ErrorFacts error_;
  std::atomic<bool> has_error_{false};
  const char* signal_ = nullptr;
  uint32_t signal_thread_ = 0;
  uint64_t signal_ns_ = 0;
  std::atomic<uint64_t> tickets_{0};  // writings begun
  std::atomic<uint64_t> placed_{0};   // the ticket of the writing whose trace is in place (0: none yet)
  std::atomic<uint32_t> writes_{0};
};

template <typename Describe>
void Tracer::name_error(ErrorCode code, Describe&& describe) {
  if (code.ok() || error_name(code)) return;
  std::lock_guard<std::mutex> guard(error_names_mutex_);
  size_t count = error_name_count_.load(std::memory_order_relaxed);
  if (error_name(code) || count == kErrorNames) return;
  ErrorName& entry = error_names_[count];
  entry.code = code;
  std::string name = describe(code);
  size_t length = name.size() < sizeof(entry.name) - 1 ? name.size() : sizeof(entry.name) - 1;
  name.copy(entry.name, length);
  entry.name[length] = 0;
  error_name_count_.store(count + 1, std::memory_order_release);
}

}  // namespace blockrun::trace
// SPDX-License-Identifier: MIT
