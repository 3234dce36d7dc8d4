// The Chrome trace-event JSON writer (trace_writer.h). Async-signal-safe throughout.
#include "trace/trace_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "report/output_file.h"

namespace blockrun::trace {

namespace {

// Text arguments longer than this are cut (a Python file path, a library call's arguments).
constexpr size_t kArgumentBytes = 512;

template <size_t kBytes>
void add_text_argument(Text<kBytes>& event, bool& first, const char* key, const char* value,
                       size_t limit = kArgumentBytes) {
  if (!value) return;
  event.key(key, first);
  first = false;
  event.add_string(value, limit);
}

template <size_t kBytes>
void add_number_argument(Text<kBytes>& event, bool& first, const char* key, uint64_t value) {
  if (!value) return;
  event.key(key, first);
  first = false;
  event.add(value);
}

}  // namespace

void configuration_text(SliceText& out, const Dim3& grid, const Dim3& block, uint64_t shared_memory,
                        const char* stream) {
  out.add("<<<");
  add_dim3(out, grid);
  out.add(", ");
  add_dim3(out, block);
  out.add(", ");
  out.add(shared_memory);
  out.add(", ");
  out.add_json(stream, 64);
  out.add(">>>");
}

void library_call_text(SliceText& out, const char* api, const LibraryCall& call) {
  out.add_json(api, 128);
  if (call.m || call.n || call.k) {
    out.add(" m=");
    out.add_signed(call.m);
    out.add(" n=");
    out.add_signed(call.n);
    out.add(" k=");
    out.add_signed(call.k);
  }
  if (call.transa) {
    char flags[] = " transa=? transb=?";
    flags[8] = call.transa;
    flags[17] = call.transb ? call.transb : '?';
    out.add(flags);
  }
  if (call.batch) {
    out.add(" batch=");
    out.add_signed(call.batch);
  }
}

void graph_text(SliceText& out, const char* exec, uint64_t replay, uint64_t nodes) {
  out.add("exec ");
  out.add_json(exec, 32);
  out.add(", replay ");
  out.add(replay);
  if (nodes) {
    out.add(", ");
    out.add(nodes);
    out.add(" nodes");
  }
}

void python_text(SliceText& out, const char* file, int line, const char* function) {
  out.add_json(file, 256);
  out.add(":");
  out.add(static_cast<uint64_t>(line > 0 ? line : 0));
  out.add(" in ");
  out.add_json(function, 128);
}

uint64_t flow_point(const CallSlice& slice) {
  uint64_t end = slice.wait_began_ns > slice.began_ns ? slice.wait_began_ns : slice.ended_ns;
  return slice.began_ns + (end - slice.began_ns) / 2;
}

uint64_t error_point(const ErrorMark& mark) {
  if (mark.began_ns == 0 || mark.began_ns > mark.returned_ns) return mark.returned_ns;
  return mark.began_ns + (mark.returned_ns - mark.began_ns) / 2;
}

TraceWriter::TraceWriter(OutputFile* file, char* buffer, size_t size)
    : file_(file), buffer_(buffer + kEventBytes), size_(size - kEventBytes), event_(*new (buffer) Event) {}

TraceWriter::TraceWriter(int fd, char* buffer, size_t size)
    : file_(nullptr),
      fd_(fd),
      buffer_(buffer + kEventBytes),
      size_(size - kEventBytes),
      event_(*new (buffer) Event) {}

bool TraceWriter::write_out(const char* data, size_t size) {
  if (file_) return file_->write_record(data, size);
  if (failed_) return false;  // a document with a hole is no document: nothing after the first failure
  int saved_errno = errno;
  bool whole = true;
  {
    FileSizeSignalHeld held;  // past RLIMIT_FSIZE the write fails (EFBIG) rather than end the program
    while (size > 0) {
      ssize_t written = write(fd_, data, size);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) {
        error_ = written < 0 ? errno : ENOSPC;
        whole = false;
        break;
      }
      data += written;
      size -= static_cast<size_t>(written);
    }
  }
  errno = saved_errno;
  return whole;
}

void TraceWriter::put(const char* data, size_t size) {
  if (used_ + size > size_) flush();
  if (size > size_) {
    failed_ |= !write_out(data, size);
    return;
  }
  std::memcpy(buffer_ + used_, data, size);
  used_ += size;
}

void TraceWriter::flush() {
  if (used_ == 0) return;
  failed_ |= !write_out(buffer_, used_);
  used_ = 0;
}

void TraceWriter::emit(const Event& event) {
  // An event that did not fit is left out whole rather than written cut (the trace must stay JSON); with the
  // limits on each text it never happens.
  if (event.full()) return;
  if (!first_event_) put(",\n", 2);
  first_event_ = false;
  put(event.text, event.size);
}

void TraceWriter::begin(const char* producer, uint64_t origin_unix_us, uint64_t dropped,
                        uint64_t events_per_thread) {
  Event& head = event_;
  head.size = 0;
  head.add("{\"displayTimeUnit\":\"ns\",\"otherData\":{");
  add_origin(head, producer, origin_unix_us, events_per_thread);
  head.key("dropped_events");
  head.add(dropped);
  head.add("},\"traceEvents\":[\n");
  put(head.text, head.size);
}

void TraceWriter::add_origin(Event& event, const char* producer, uint64_t origin_unix_us,
                             uint64_t events_per_thread) {
  event.key("producer", true);
  event.add_string(producer, kArgumentBytes);
  event.key("origin_unix_us");
  event.add(origin_unix_us);
  event.key("events_per_thread");
  event.add(events_per_thread);
}

void TraceWriter::process_name(uint64_t pid, const char* name, int64_t sort_index) {
  Event& event = event_;
  event.size = 0;
  event.add("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
  event.add(pid);
  event.add(",\"tid\":0,\"args\":{\"name\":");
  event.add_string(name, kArgumentBytes);
  event.add("}}");
  emit(event);
  event.size = 0;
  event.add("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
  event.add(pid);
  event.add(",\"tid\":0,\"args\":{\"sort_index\":");
  event.add_signed(sort_index);
  event.add("}}");
  emit(event);
}

void TraceWriter::thread_name(uint64_t pid, uint64_t tid, const char* name, int64_t sort_index) {
  Event& event = event_;
  auto start = [&](const char* what) {
    event.size = 0;
    event.add("{\"ph\":\"M\",\"name\":\"");
    event.add(what);
    event.add("\",\"pid\":");
    event.add(pid);
    event.add(",\"tid\":");
    event.add(tid);
    event.add(",\"args\":{");
  };
  start("thread_name");
  event.key("name", true);
  event.add_string(name, kArgumentBytes);
  event.add("}}");
  emit(event);
  start("thread_sort_index");
  event.key("sort_index", true);
  event.add_signed(sort_index);
  event.add("}}");
  emit(event);
}

void TraceWriter::start_event(Event& event, char phase, uint64_t pid, uint64_t tid, uint64_t at_ns,
                              const char* name, const char* category) {
  event.size = 0;
  event.add("{\"ph\":\"");
  char phase_text[2] = {phase, 0};
  event.add(phase_text);
  event.add("\",\"pid\":");
  event.add(pid);
  event.add(",\"tid\":");
  event.add(tid);
  event.add(",\"ts\":");
  event.add_microseconds(at_ns);
  event.key("cat");
  event.add_string(category, kArgumentBytes);
  event.key("name");
  event.add_string(name, kNameBytes);
}

void TraceWriter::call(const CallSlice& slice) {
  Event& event = event_;
  uint64_t ended = slice.ended_ns > slice.began_ns ? slice.ended_ns : slice.began_ns;
  start_event(event, 'X', slice.pid, slice.tid, slice.began_ns, slice.name, slice.category);
  event.key("dur");
  event.add_microseconds(ended - slice.began_ns);
  if (slice.color) {
    event.key("cname");
    event.add_string(slice.color, kArgumentBytes);
  }
  event.add(",\"args\":{");
  bool first = true;
  add_number_argument(event, first, "launch", slice.seq);
  if (slice.kernel_base && slice.kernel_launch) {
    event.key("kernel_launch", first);
    first = false;
    event.add("\"");
    event.add_json(slice.kernel_base, kNameBytes);
    event.add("#");
    event.add(slice.kernel_launch);
    event.add("\"");
  }
  add_text_argument(event, first, "verdict", slice.verdict);
  add_text_argument(event, first, "outcome", slice.outcome);
  add_text_argument(event, first, "result", slice.result);
  add_text_argument(event, first, "configuration", slice.configuration);
  add_text_argument(event, first, "stream", slice.stream);
  add_text_argument(event, first, "python", slice.python);
  add_text_argument(event, first, "library_call", slice.library_call);
  add_text_argument(event, first, "graph", slice.graph);
  add_text_argument(event, first, "api", slice.api);
  add_text_argument(event, first, "driver_api", slice.driver_api);
  if (slice.gpu_ns >= 0) {
    event.key("gpu_us", first);
    first = false;
    event.add_microseconds(static_cast<uint64_t>(slice.gpu_ns));
  }
  event.add("}}");
  emit(event);

  if (slice.wait_began_ns > slice.began_ns && slice.wait_began_ns <= ended) {
    start_event(event, 'X', slice.pid, slice.tid, slice.wait_began_ns, "blocking wait", "blocking wait");
    event.key("dur");
    event.add_microseconds(ended - slice.wait_began_ns);
    event.add(",\"args\":{");
    bool first_argument = true;
    add_number_argument(event, first_argument, "launch", slice.seq);
    event.add("}}");
    emit(event);
  }

  // The GPU span: its length is what the events around the kernel measured; it is put where it must have
  // ended, when the blocking wait saw the stream complete (it began after the launch call began).
  if (slice.gpu_ns >= 0 && slice.stream_tid) {
    uint64_t gpu = static_cast<uint64_t>(slice.gpu_ns);
    uint64_t span = ended - slice.began_ns;
    if (gpu > span) gpu = span;
    start_event(event, 'X', slice.pid, slice.stream_tid, ended - gpu, slice.name, "gpu");
    event.key("dur");
    event.add_microseconds(gpu);
    event.add(",\"args\":{");
    bool first_argument = true;
    add_number_argument(event, first_argument, "launch", slice.seq);
    event.key("gpu_us", first_argument);
    event.add_microseconds(static_cast<uint64_t>(slice.gpu_ns));
    event.key("placed");
    event.add("\"ending when the blocking wait saw the stream complete; its length from CUDA events\"");
    event.add("}}");
    emit(event);
  }
}

void TraceWriter::launch(CallSlice slice, const Verdicts& verdicts) {
  if (slice.category && std::strcmp(slice.category, "graph replay") == 0) slice.color = "olive";
  if (slice.blocked) {
    if (slice.category && std::strcmp(slice.category, "launch") == 0) slice.category = "blocked launch";
    slice.color = "bad";
  }
  if (slice.result) slice.color = "terrible";  // it returned an error, or its blocking wait did
  const char* arrow = nullptr;
  if (verdicts.has_error && slice.seq) {
    if (slice.seq == verdicts.culprit) {
      arrow = "culprit";
      slice.verdict = verdicts.exact
                          ? "the first error's culprit (exact)"
                          : "the first error's culprit (not exact: other launches may have faulted instead)";
      slice.color = "terrible";
    } else if (slice.seq == verdicts.refused) {
      slice.verdict = "refused: an earlier kernel's error surfaced here (the first error), it never ran";
    } else {
      for (size_t i = 0; i < verdicts.other_count; ++i) {
        if (verdicts.others[i] != slice.seq) continue;
        arrow = verdicts.others_are_candidates ? "candidate" : "suspect";
        slice.verdict =
            verdicts.others_are_candidates
                ? "a candidate for the first error: the breadcrumbs say its stream stopped short of it"
                : "a suspect of the first error: not known to have completed when it surfaced";
      }
    }
  }
  call(slice);
  if (!arrow) return;
  Flow line;
  line.id = ++flows_;
  line.pid = slice.pid;
  line.from_tid = slice.tid;
  line.from_ns = flow_point(slice);
  line.to_tid = verdicts.mark.tid;
  line.to_ns = error_point(verdicts.mark);
  line.name = arrow;
  flow(line);
}

void TraceWriter::error(const ErrorMark& mark) {
  Event& event = event_;
  uint64_t at = error_point(mark);
  Text<256> title;
  title.add("first error: ");
  title.add(mark.error);
  title.add(" at ");
  title.add(mark.api);
  if (!mark.call_has_slice && mark.began_ns && mark.began_ns <= mark.returned_ns) {
    // The call that returned it has no slice of its own (an allocation, an event query): one for it, so that
    // the arrows from the culprit have a slice to end in.
    start_event(event, 'X', mark.pid, mark.tid, mark.began_ns, mark.api, "error");
    event.key("dur");
    event.add_microseconds(mark.returned_ns - mark.began_ns);
    event.key("cname");
    event.add("\"terrible\"");
    event.add(",\"args\":{");
    bool first = true;
    add_text_argument(event, first, "result", mark.error);
    event.add("}}");
    emit(event);
  }
  title.text[title.size] = 0;
  start_event(event, 'i', mark.pid, mark.tid, at, title.text, "error");
  event.add(",\"s\":\"t\",\"cname\":\"terrible\",\"args\":{");
  bool first = true;
  add_text_argument(event, first, "error", mark.error);
  add_text_argument(event, first, "surfaced_api", mark.api);
  add_text_argument(event, first, "how", mark.how);
  add_text_argument(event, first, "certainty", mark.certainty);
  add_text_argument(event, first, "method", mark.method);
  add_text_argument(event, first, "culprit", mark.culprit);
  add_text_argument(event, first, "failed_node", mark.failed_node);
  event.add("}}");
  emit(event);
}

void TraceWriter::flow(const Flow& flow) {
  Event& event = event_;
  // Chrome's flow events: "s" binds to the slice enclosing it, "f" with binding point "e" likewise.
  start_event(event, 's', flow.pid, flow.from_tid, flow.from_ns, flow.name, "error");
  event.add(",\"id\":");
  event.add(flow.id);
  event.add("}");
  emit(event);
  start_event(event, 'f', flow.pid, flow.to_tid, flow.to_ns, flow.name, "error");
  event.add(",\"bp\":\"e\",\"id\":");
  event.add(flow.id);
  event.add("}");
  emit(event);
}

void TraceWriter::instant(uint64_t pid, uint64_t tid, uint64_t at_ns, const char* category, const char* text,
                          const char* detail) {
  Event& event = event_;
  start_event(event, 'i', pid, tid, at_ns, text, category);
  event.add(",\"s\":\"t\",\"args\":{");
  bool first = true;
  add_text_argument(event, first, "detail", detail);
  event.add("}}");
  emit(event);
}

bool TraceWriter::end() {
  put("\n]}\n", 4);
  flush();
  return !failed_;
}

void TraceWriter::begin_events() {
  const char head[] = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  put(head, sizeof head - 1);
}

bool TraceWriter::end_with(const char* producer, uint64_t origin_unix_us, uint64_t events_per_thread,
                           const LeftOut& left_out) {
  Event& tail = event_;
  tail.size = 0;
  tail.add("\n],\"otherData\":{");
  add_origin(tail, producer, origin_unix_us, events_per_thread);
  tail.key("dropped_events");  // every launch and call recorded and not in the trace, whatever the cause
  tail.add(left_out.oldest + left_out.untracked + left_out.missed);
  tail.key("dropped_oldest");
  tail.add(left_out.oldest);
  tail.key("dropped_threads_without_buffer");
  tail.add(left_out.untracked);
  tail.key("dropped_while_written");
  tail.add(left_out.missed);
  tail.add("}}\n");
  put(tail.text, tail.size);
  flush();
  return !failed_;
}

}  // namespace blockrun::trace
// SPDX-License-Identifier: MIT
