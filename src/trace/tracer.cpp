// The process's timeline: recording, and writing it as a Chrome trace (tracer.h). Everything on the writing
// path is async-signal-safe.
#include "trace/tracer.h"

#include <time.h>

#include <chrono>
#include <cstring>
#include <new>

#include "trace/trace_writer.h"

namespace blockrun::trace {

namespace {

constexpr size_t kBufferBytes = TraceWriter::kEventBytes + (1 << 20);  // the writer's: a write(2) per MiB
constexpr size_t kStreamTracks = 64;  // streams with a track of their own; the rest share one

uint64_t wall_clock_us() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000 + static_cast<uint64_t>(now.tv_nsec) / 1000;
}

}  // namespace

// One writing of the trace: the writer and the tables it fills as it goes (stream tracks), on the tracer's
// preallocated buffer.
struct Tracer::Writing {
  const Tracer& tracer;
  TraceWriter out;
  StreamId streams[kStreamTracks];
  size_t stream_count = 0;
  bool shared_track_named = false;
  Verdicts verdicts;

  Writing(const Tracer& owner, OutputFile* file, char* buffer)
      : tracer(owner), out(file, buffer, kBufferBytes) {
    const ErrorFacts& error = tracer.error_;
    verdicts.has_error = tracer.has_error_.load(std::memory_order_acquire);
    if (!verdicts.has_error) return;
    verdicts.mark = mark();
    verdicts.culprit = error.culprit_sequence;
    verdicts.exact = std::strcmp(error.certainty, "exact") == 0;
    verdicts.refused = error.refused_sequence;
    verdicts.others = error.others;
    verdicts.other_count = error.other_count;
    verdicts.others_are_candidates = error.others_are_candidates;
  }

  uint64_t at(uint64_t steady_ns) const {
    return steady_ns > tracer.origin_ns_ ? steady_ns - tracer.origin_ns_ : 0;
  }

  // The track of a stream, named when first used.
  uint64_t stream_track(const StreamId& stream) {
    for (size_t i = 0; i < stream_count; ++i)
      if (streams[i] == stream) return kStreamTrackBase + i;
    if (stream_count == kStreamTracks) {
      if (!shared_track_named) {
        out.thread_name(tracer.pid_, kStreamTrackBase + kStreamTracks, "other streams (GPU time)",
                        static_cast<int64_t>(kStreamTrackBase + kStreamTracks));
        shared_track_named = true;
      }
      return kStreamTrackBase + kStreamTracks;
    }
    streams[stream_count] = stream;
    Text<128> name;
    name.add("stream ");
    add_stream(name, stream);
    name.add(" (GPU time of blocked launches)");
    uint64_t track = kStreamTrackBase + stream_count++;
    out.thread_name(tracer.pid_, track, name.c_str(), static_cast<int64_t>(track));
    return track;
  }

  void entry(const TraceEntry& entry, uint32_t thread) {
    CallSlice slice;
    slice.pid = tracer.pid_;
    slice.tid = thread;
    slice.began_ns = at(entry.began_ns);
    slice.ended_ns = at(entry.ended_ns);
    slice.wait_began_ns = entry.wait_began_ns ? at(entry.wait_began_ns) : 0;
    slice.api = entry.api;
    slice.driver_api = entry.driver_api;
    slice.result = entry.result.ok() ? nullptr : tracer.error_name(entry.result);
    Text<64> stream;
    if (entry.device_wide) {
      stream.add("the whole device");
    } else {
      add_stream(stream, entry.stream);
    }
    slice.stream = stream.c_str();
    SliceText library;
    if (entry.library_api) {
      library_call_text(library, entry.library_api, entry.library);
      slice.library_call = library.c_str();
    }
    if (entry.kind == EntryKind::Synchronize) {
      slice.category = "synchronize";
      slice.name = entry.api ? entry.api : "synchronize";
      if (!entry.result.ok()) slice.color = "terrible";
      out.call(slice);
      return;
    }
    if (entry.kind == EntryKind::LibraryCall) {
      slice.category = "library call";
      slice.name = entry.library_api ? entry.library_api : "library call";
      out.call(slice);
      return;
    }
    slice.seq = entry.sequence;
    slice.outcome = outcome_text(entry.outcome);
    SliceText configuration, graph, python;
    if (entry.kernel) {
      slice.name = entry.kernel->name.demangled.c_str();
      slice.kernel_base = entry.kernel->name.base.c_str();
      slice.kernel_launch = entry.kernel_ordinal;
      configuration_text(configuration, entry.grid, entry.block, entry.shared_memory, slice.stream);
      slice.configuration = configuration.c_str();
    } else if (entry.graph) {
      slice.category = "graph replay";
      slice.name = "graph replay";
      Text<32> exec;
      exec.add_hex(reinterpret_cast<uintptr_t>(entry.graph->exec));
      graph_text(graph, exec.c_str(), entry.graph_replay, entry.graph->nodes);
      slice.graph = graph.c_str();
    } else {
      slice.category = "library call";
      slice.name = entry.library_api ? entry.library_api : "library call";
    }
    if (const PythonFrame* frame =
            tracer.python_sites_ ? tracer.python_sites_->get(entry.python_site) : nullptr) {
      python_text(python, frame->file, frame->line, frame->function);
      slice.python = python.c_str();
    }
    if (entry.outcome == EntryOutcome::Blocked || entry.outcome == EntryOutcome::BlockedFailed) {
      slice.blocked = true;
      slice.gpu_ns = entry.gpu_ns;
      if (entry.gpu_ns >= 0) slice.stream_tid = stream_track(entry.stream);
    }
    out.launch(slice, verdicts);
  }

  ErrorMark mark() const {
    const ErrorFacts& error = tracer.error_;
    ErrorMark mark;
    mark.pid = tracer.pid_;
    mark.tid = error.thread;
    mark.began_ns = error.began_ns ? at(error.began_ns) : 0;
    mark.returned_ns = at(error.returned_ns);
    mark.call_has_slice = error.call_has_slice;
    mark.error = error.error;
    mark.api = error.api;
    mark.how = error.how[0] ? error.how : nullptr;
    mark.certainty = error.certainty;
    mark.method = error.method;
    mark.culprit = error.culprit[0] ? error.culprit : nullptr;
    mark.failed_node = error.failed_node[0] ? error.failed_node : nullptr;
    return mark;
  }
};

Tracer::Tracer(size_t events_per_thread, std::unique_ptr<OutputFile> file)
    : recorder_(events_per_thread),
      file_(std::move(file)),
      origin_ns_(now()),
      origin_unix_us_(wall_clock_us()),
      buffer_(new char[kBufferBytes]),
      writing_storage_(new unsigned char[sizeof(Writing)]) {}

Tracer::~Tracer() = default;

uint64_t Tracer::now() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void Tracer::set_process(long pid, long rank, const std::string& name, const PythonSiteTable* python_sites) {
  pid_ = pid;
  python_sites_ = python_sites;
  Text<sizeof(process_title_)> title;
  title.add_json(name.c_str(), 256);
  title.add(" (pid ");
  title.add(static_cast<uint64_t>(pid));
  if (rank >= 0) {
    title.add(", rank ");
    title.add(static_cast<uint64_t>(rank));
  }
  title.add(")");
  std::memcpy(process_title_, title.text, title.size);
  process_title_[title.size] = 0;
}

const char* Tracer::error_name(ErrorCode code) const {
  size_t count = error_name_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i)
    if (error_names_[i].code.layer == code.layer && error_names_[i].code.code == code.code)
      return error_names_[i].name;
  return nullptr;
}

void Tracer::first_error(const ErrorFacts& facts) {
  if (has_error_.load(std::memory_order_relaxed)) return;
  error_ = facts;
  has_error_.store(true, std::memory_order_release);
}

void Tracer::fatal_signal(const char* signal, uint32_t thread) {
  signal_thread_ = thread;
  signal_ns_ = now();
  signal_ = signal;
}

void written_line(WrittenLine& line, const char* path, const TraceWritten& written,
                  size_t events_per_thread) {
  if (!written.written) {
    line.add("trace: could not write ");
    line.add_json(path, 512);
    return;
  }
  line.add("trace: ");
  line.add(written.events);
  line.add(written.events == 1 ? " launch or call of " : " launches and calls of ");
  line.add(written.threads);
  line.add(written.threads == 1 ? " thread written to " : " threads written to ");
  line.add_json(path, 512);
  line.add(" (open it in ui.perfetto.dev or chrome://tracing)");
  if (written.dropped) {
    line.add("; the first ");
    line.add(written.dropped);
    line.add(" were left out: it keeps the newest ");
    line.add(static_cast<uint64_t>(events_per_thread));
    line.add(" of each thread (--trace-events)");
  }
}

TraceWritten Tracer::write() {
  TraceWritten done;
  // Not while another writing runs (a fatal signal during the exit's): that one writes the trace.
  if (!file_ || writing_.exchange(true)) return done;
  file_->truncate();  // a trace is one document: the last process to write a shared path wins (docs/trace.md)
  // In storage made up front, not on the stack (a signal handler's may be small).
  Writing& writing = *new (writing_storage_.get()) Writing(*this, file_.get(), buffer_.get());
  TraceWriter& out = writing.out;
  uint64_t dropped = recorder_.dropped();
  out.begin("cuda-blockrun --trace", origin_unix_us_, dropped, recorder_.capacity());
  out.process_name(static_cast<uint64_t>(pid_), process_title_, pid_);
  uint32_t thread = 0;
  uint64_t thread_dropped = 0;
  recorder_.for_each_thread(
      [&](const ThreadEntries& entries) {
        thread = entries.thread;
        thread_dropped = entries.dropped;
        Text<96> name;
        name.add("host thread ");
        name.add(static_cast<uint64_t>(entries.thread));
        name.add(" (tid ");
        name.add(static_cast<uint64_t>(entries.os_thread));
        name.add(")");
        out.thread_name(static_cast<uint64_t>(pid_), entries.thread, name.c_str(), entries.thread);
        ++done.threads;
        done.events += entries.recorded - entries.dropped;
      },
      [&](const TraceEntry& entry) {
        if (thread_dropped) {
          Text<192> note;
          note.add("the trace leaves out this thread's first ");
          note.add(thread_dropped);
          note.add(" launches and calls");
          Text<128> detail;
          detail.add("it keeps the newest ");
          detail.add(static_cast<uint64_t>(recorder_.capacity()));
          detail.add(" of each thread (--trace-events)");
          out.instant(static_cast<uint64_t>(pid_), thread, writing.at(entry.began_ns), "trace", note.c_str(),
                      detail.c_str());
          thread_dropped = 0;
        }
        writing.entry(entry, thread);
      });
  if (writing.verdicts.has_error) out.error(writing.verdicts.mark);
  if (signal_) {
    Text<64> name;
    name.add("fatal signal ");
    name.add(signal_);
    out.instant(static_cast<uint64_t>(pid_), signal_thread_, writing.at(signal_ns_), "signal", name.c_str(),
                nullptr);
  }
  done.written = out.end();
  done.dropped = dropped;
  done.again = writes_.fetch_add(1) > 0;
  writing.~Writing();
  writing_.store(false);
  return done;
}

}  // namespace blockrun::trace
// SPDX-License-Identifier: MIT
