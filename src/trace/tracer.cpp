// The process's timeline: recording, and writing it as a Chrome trace (tracer.h). Everything on the writing
// path is async-signal-safe.
#include "trace/tracer.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "trace/trace_writer.h"
#include "util/clock.h"

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
    decide();
  }
  Writing(const Tracer& owner, int fd, char* buffer) : tracer(owner), out(fd, buffer, kBufferBytes) {
    decide();
  }

  void decide() {
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

Tracer::Tracer(size_t events_per_thread, std::unique_ptr<OutputFile> file, const std::string& path,
               size_t max_threads)
    : recorder_(events_per_thread, max_threads),
      file_(std::move(file)),
      path_(path),
      origin_ns_(steady_now_ns()),
      origin_unix_us_(wall_clock_us()) {
  // Both writings' memory now: a buffer is touched only where a writing uses it.
  for (Slot& slot : slots_) {
    slot.buffer.reset(new char[kBufferBytes]);
    slot.storage.reset(new unsigned char[sizeof(Writing)]);
  }
  if (file_ && !path.empty()) open_directory(path);
}

Tracer::~Tracer() {
  if (directory_ >= 0) close(directory_);
}

void Tracer::open_directory(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name.size() >= sizeof(name_)) return;
  // Kept open (at a high number, as the shim's files are): the program may change its directory before it
  // exits, and a relative path would then name another file.
  int fd = open_refusing_symlinks(directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, false);
  if (fd < 0) return;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, high_descriptor_floor());
  if (high >= 0) {
    close(fd);
    fd = high;
  }
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    close(fd);
    return;
  }
  directory_ = fd;
  directory_device_ = info.st_dev;
  directory_inode_ = info.st_ino;
  std::memcpy(name_, name.c_str(), name.size() + 1);
  for (int i = 0; i < kSlots; ++i) {
    Text<sizeof(Slot::temporary)> temporary;
    temporary.add(name_);
    temporary.add(".");
    temporary.add(static_cast<uint64_t>(getpid()));
    temporary.add(".");
    temporary.add(static_cast<uint64_t>(i));
    temporary.add(".tmp");
    // A name too long for the directory (NAME_MAX): none, the trace is written in place.
    if (temporary.full() || temporary.size > NAME_MAX) continue;
    std::memcpy(slots_[i].temporary, temporary.text, temporary.size);
    slots_[i].temporary[temporary.size] = 0;
  }
}

// Whether the trace is replaced through a file beside it: a regular file (a device is written in place), in
// the directory it was opened in (a program that closed every descriptor may have another file at ours).
bool Tracer::directory_usable() const {
  if (directory_ < 0) return false;
  struct stat info {};
  if (fstat(file_->descriptor(), &info) != 0 || !S_ISREG(info.st_mode)) return false;
  return fstat(directory_, &info) == 0 && S_ISDIR(info.st_mode) && info.st_dev == directory_device_ &&
         info.st_ino == directory_inode_;
}

void Tracer::set_process(long pid, long rank, const std::string& name, const PythonSiteTable* python_sites) {
  origin_ns_ = steady_now_ns();
  origin_unix_us_ = wall_clock_us();
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
  signal_ns_ = steady_now_ns();
  signal_ = signal;
}

TraceWritten Tracer::write_at_signal(const char* signal, uint32_t thread) {
  // Held before the signal's moment is taken: no entry kept in the trace began after it.
  recorder_.hold();
  fatal_signal(signal, thread);
  TraceWritten written = write();
  recorder_.release();
  return written;
}

namespace {

// A write's errno in words, without strerror (not async-signal-safe).
const char* error_words(int error) {
  switch (error) {
    case ENOSPC:
      return "no space left on the device";
    case EDQUOT:
      return "disk quota exceeded";
    case EFBIG:
      return "file too large (RLIMIT_FSIZE)";
    case EIO:
      return "input/output error";
    case EROFS:
      return "read-only file system";
    case EACCES:
    case EPERM:
      return "permission denied";
    default:
      return nullptr;
  }
}

template <size_t kBytes>
void add_left_out(Text<kBytes>& line, const TraceWritten& written, size_t events_per_thread) {
  if (written.dropped) {
    line.add("; the first ");
    line.add(written.dropped);
    line.add(" were left out: it keeps the newest ");
    line.add(static_cast<uint64_t>(events_per_thread));
    line.add(" of each thread (--trace-events)");
  }
  if (written.untracked) {
    line.add("; ");
    line.add(written.untracked);
    line.add(" of threads that found no buffer were left out (at most ");
    line.add(static_cast<uint64_t>(TraceRecorder::kMaxThreads));
    line.add(" threads alive at once have one, and all buffers together keep at most ");
    line.add(written.total);
    line.add(")");
  }
  if (written.stunted_threads) {
    line.add("; ");
    line.add(written.stunted_threads);
    line.add(written.stunted_threads == 1 ? " thread keeps fewer" : " threads keep fewer");
    line.add(" than ");
    line.add(static_cast<uint64_t>(events_per_thread));
    line.add(": all threads together keep at most ");
    line.add(written.total);
  }
  if (written.missed) {
    line.add("; ");
    line.add(written.missed);
    line.add(" made while it was being written were left out");
  }
}

}  // namespace

void written_line(WrittenLine& line, const char* path, const TraceWritten& written,
                  size_t events_per_thread) {
  using Outcome = TraceWritten::Outcome;
  using Left = TraceWritten::Left;
  switch (written.outcome) {
    case Outcome::Nothing:
    case Outcome::Written:
      break;
    case Outcome::Busy:
      line.add("trace: not written to ");
      line.add_json(path, 512);
      line.add(" now: another writing of it was under way");
      return;
    case Outcome::Superseded:
      line.add("trace: ");
      line.add_json(path, 512);
      line.add(" keeps the trace written at the fatal signal, which began after this one");
      return;
    case Outcome::Failed:
      line.add("trace: could not write ");
      line.add_json(path, 512);
      line.add(" whole (");
      if (const char* words = error_words(written.error)) {
        line.add(words);
      } else if (written.error) {
        line.add("errno ");
        line.add(static_cast<uint64_t>(written.error));
      } else {
        line.add("a write failed");
      }
      line.add(")");
      switch (written.left) {
        case Left::Removed:
          line.add(": it was removed, there is no trace");
          break;
        case Left::EarlierKept:
          line.add(": it keeps the trace written whole before");
          break;
        case Left::Emptied:
          line.add(": it was left empty, there is no trace");
          break;
        case Left::Device:
          line.add(": what reached it is not a whole trace");
          break;
      }
      return;
  }
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
  add_left_out(line, written, events_per_thread);
}

TraceWritten Tracer::write() {
  if (!file_) return {};
  // A writing already under way in the first slot (a fatal signal during the exit's): the second.
  for (int slot = 0; slot < kSlots; ++slot)
    if (!slots_[slot].busy.exchange(true, std::memory_order_acq_rel)) return write_in(slot);
  TraceWritten busy;
  busy.outcome = TraceWritten::Outcome::Busy;
  return busy;
}

TraceWritten Tracer::write_in(int index) {
  using Outcome = TraceWritten::Outcome;
  using Left = TraceWritten::Left;
  Slot& slot = slots_[index];
  int saved_errno = errno;
  pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  slot.writer.store(self, std::memory_order_release);
  uint64_t ticket = tickets_.fetch_add(1, std::memory_order_acq_rel) + 1;
  // A writing this one interrupted, on this thread (a fatal signal during the exit's), never finishes if the
  // signal ends the process: its file beside the trace goes now. (Where the program handles the signal and
  // that writing resumes, its rename then fails: this one, begun later, is the trace.)
  for (int other = 0; other < kSlots; ++other) {
    if (other == index || !slots_[other].busy.load(std::memory_order_acquire)) continue;
    if (slots_[other].writer.load(std::memory_order_acquire) == self && slots_[other].temporary[0] &&
        directory_ >= 0)
      unlinkat(directory_, slots_[other].temporary, 0);
  }
  // Entries made from now on are counted, not kept: the trace ends here, and no ring moves under the reader.
  recorder_.hold();

  bool beside = slot.temporary[0] && directory_usable();
  int fd = -1;
  struct stat placeholder {};
  if (beside) {
    beside = fstat(file_->descriptor(), &placeholder) == 0;
    mode_t mode = placeholder.st_mode & 07777;
    unlinkat(directory_, slot.temporary, 0);  // a stale one (a process of this pid killed while writing)
    if (beside)
      fd = openat(directory_, slot.temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    beside = fd >= 0;
    if (beside) {
      int ignored = fchmod(fd, mode);  // as the file opened at the first CUDA call is (--private-files)
      (void)ignored;
    }
  }
  if (!beside && index != 0) {
    // In place, two writings would mix their documents: the one under way writes it.
    recorder_.release();
    slot.writer.store(0, std::memory_order_release);
    slot.busy.store(false, std::memory_order_release);
    errno = saved_errno;
    TraceWritten busy;
    busy.outcome = Outcome::Busy;
    return busy;
  }
  if (!beside) file_->truncate();  // in place: a trace is one document, the last process to write wins

  // In storage made up front, not on the stack (a signal handler's may be small).
  Writing& writing = beside ? *new (slot.storage.get()) Writing(*this, fd, slot.buffer.get())
                            : *new (slot.storage.get()) Writing(*this, file_.get(), slot.buffer.get());
  TraceWriter& out = writing.out;
  TraceWritten done;
  out.begin_events();
  out.process_name(static_cast<uint64_t>(pid_), process_title_, pid_);
  uint32_t thread = 0;
  uint64_t thread_dropped = 0;
  uint64_t bound = 0;
  bool inherited = false;
  ReadCounts read = recorder_.for_each_thread(
      [&](const ThreadEntries& entries) {
        thread = entries.thread;
        thread_dropped = entries.dropped;
        inherited = entries.inherited;
        bound = entries.bound;
        if (entries.dropped && bound < recorder_.capacity()) ++done.stunted_threads;
        Text<96> name;
        name.add("host thread ");
        name.add(static_cast<uint64_t>(entries.thread));
        if (entries.os_thread) {
          name.add(" (tid ");
          name.add(static_cast<uint64_t>(entries.os_thread));
          name.add(")");
        }
        out.thread_name(static_cast<uint64_t>(pid_), entries.thread, name.c_str(), entries.thread);
        ++done.threads;
      },
      [&](const TraceEntry& entry) {
        if (thread_dropped) {
          Text<192> note;
          note.add(inherited ? "the trace leaves out the " : "the trace leaves out this thread's first ");
          note.add(thread_dropped);
          note.add(inherited ? " launches and calls before these, of this thread and of threads that exited "
                               "before it (their buffer passed to it)"
                             : " launches and calls");
          Text<192> detail;
          detail.add("it keeps the newest ");
          if (bound < recorder_.capacity()) {
            detail.add(bound);
            detail.add(" of this thread: all threads together keep at most ");
            detail.add(static_cast<uint64_t>(recorder_.total()));
            detail.add(" (");
            detail.add(static_cast<uint64_t>(TraceRecorder::kTotalRings));
            detail.add(" x --trace-events)");
          } else {
            detail.add(static_cast<uint64_t>(recorder_.capacity()));
            detail.add(" of each thread (--trace-events)");
          }
          out.instant(static_cast<uint64_t>(pid_), thread, writing.at(entry.began_ns), "trace", note.c_str(),
                      detail.c_str());
          thread_dropped = 0;
        }
        writing.entry(entry, thread);
        ++done.events;
      });
  if (writing.verdicts.has_error) out.error(writing.verdicts.mark);
  if (signal_) {
    Text<64> name;
    name.add("fatal signal ");
    name.add(signal_);
    out.instant(static_cast<uint64_t>(pid_), signal_thread_, writing.at(signal_ns_), "signal", name.c_str(),
                nullptr);
  }
  uint64_t untracked = recorder_.untracked();
  done.dropped = recorder_.dropped() - untracked;
  done.untracked = untracked;
  done.total = recorder_.total();
  done.missed = recorder_.held_back() + read.overwritten;
  TraceWriter::LeftOut left_out;
  left_out.oldest = done.dropped;
  left_out.untracked = done.untracked;
  left_out.missed = done.missed;
  bool whole = out.end_with("cuda-blockrun --trace", origin_unix_us_, recorder_.capacity(), left_out);
  done.error = out.error();
  writing.~Writing();
  recorder_.release();

  if (beside) {
    close(fd);
    uint64_t placed = placed_.load(std::memory_order_acquire);
    if (whole && placed > ticket) {
      // A writing begun after this one (at a fatal signal, with more) put its trace in place already.
      unlinkat(directory_, slot.temporary, 0);
      done.outcome = Outcome::Superseded;
    } else if (whole && renameat(directory_, slot.temporary, directory_, name_) == 0) {
      while (placed < ticket && !placed_.compare_exchange_weak(placed, ticket, std::memory_order_acq_rel)) {
      }
      done.written = true;
      done.outcome = Outcome::Written;
    } else if (whole) {
      // Its file beside the trace was removed by a writing that interrupted this one (renameat: ENOENT).
      unlinkat(directory_, slot.temporary, 0);
      done.outcome = Outcome::Superseded;
    } else {
      unlinkat(directory_, slot.temporary, 0);
      done.outcome = Outcome::Failed;
      done.left = Left::EarlierKept;
      // Nothing whole was put in place: the empty file made at the first CUDA call goes too, where the path
      // still names it.
      struct stat now {};
      if (placed_.load(std::memory_order_acquire) == 0 &&
          fstatat(directory_, name_, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == placeholder.st_dev &&
          now.st_ino == placeholder.st_ino && now.st_size == 0) {
        unlinkat(directory_, name_, 0);
        done.left = Left::Removed;
      }
    }
  } else if (whole) {
    done.written = true;
    done.outcome = Outcome::Written;
  } else {
    done.outcome = Outcome::Failed;
    struct stat info {};
    bool device = fstat(file_->descriptor(), &info) == 0 && !S_ISREG(info.st_mode);
    done.left = device ? Left::Device : Left::Emptied;
    if (!device) file_->truncate();  // an incomplete document is no trace
  }
  if (done.written) done.again = writes_.fetch_add(1) > 0;
  slot.writer.store(0, std::memory_order_release);
  slot.busy.store(false, std::memory_order_release);
  errno = saved_errno;
  return done;
}

}  // namespace blockrun::trace
// SPDX-License-Identifier: MIT
