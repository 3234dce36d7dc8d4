// The full read of a thread's Python frames: which frames are kept (FrameFilter, both ways of reading), read
// in place without the GIL (or with it, where the layout is known: read_in_place), or through the public C
// API with the GIL (read_with_gil); their files, functions and lines copied into a PythonStack.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "internal.h"
#include "callsites/sites.h"

namespace blockrun::shim::python {

namespace {

// PyASCIIObject.state bit-fields (Include/cpython/unicodeobject.h, 3.8-3.13): `interned:2` (bits 0-1),
// `kind:3` (bits 2-4), `compact:1` (bit 5), `ascii:1` (bit 6), then in 3.8-3.11 `ready:1` (bit 7); 3.12
// dropped `ready` (every str is ready) for `statically_allocated:1`.
constexpr uint32_t kStateKindShift = 2;
constexpr uint32_t kStateKindMask = 0x7;
constexpr uint32_t kStateCompact = 1u << 5;
constexpr uint32_t kStateAscii = 1u << 6;
constexpr uint32_t kStateReady = 1u << 7;

// A bound that only corrupted data exceeds: a str longer than this is not a code object's name.
constexpr int64_t kMaxStringLength = int64_t{1} << 30;

// ---- which frames are kept (both ways of reading) ----

// The bounded walk of callsite.h: the innermost kPythonInnermostKept frames, then only a frame of the
// program's own (the frames before it are counted as the gap), then that frame's callers. Each way of reading
// offers every frame that CPython's own walk shows, innermost first: room() before reading it, wanted() with
// its file, keep() once file, function and line are in slot(). The file is classified as it is copied (its
// tail where it is too long), the text python_call_site classifies later: both choose the same frame. Costs
// one classification (one search and one pass over the path, no allocation) per frame up to the program's
// first, none after it. No cache per code object here: without the GIL nothing keeps a code object alive
// between two launches, and its address can be reused by another code object with another file (the cache of
// whole walks, python_site_cache.h, tells them apart: frame_words).
class FrameFilter {
 public:
  explicit FrameFilter(PythonStack* out) : out_(out) {}

  // Whether the next frame may be read: false (and `truncated` set) once the stack is full or
  // kMaxPythonFramesScanned frames were read.
  bool room() {
    if (out_->count == kMaxPythonFrames || scanned_ == kMaxPythonFramesScanned) {
      out_->truncated = true;
      return false;
    }
    ++scanned_;
    return true;
  }
  PythonFrame& slot() { return out_->frames[out_->count]; }
  // Whether the frame whose file is `file` (as it is copied into slot().file if kept) is kept; if not, it is
  // counted in the gap.
  bool wanted(std::string_view file) {
    if (program_seen_) return true;
    if (classify_python_file(file) == PythonFileKind::Program) {
      program_seen_ = true;
      return true;
    }
    if (out_->count < kPythonInnermostKept) return true;
    if (out_->skipped++ == 0) out_->skipped_at = out_->count;
    return false;
  }
  void keep() { ++out_->count; }

 private:
  PythonStack* out_;
  size_t scanned_ = 0;
  bool program_seen_ = false;
};

// ---- reading without the GIL ----

void copy_str_data(const StrData& str, char* out, size_t capacity, Keep keep) {
  if (str.ascii) {
    copy_text(reinterpret_cast<const char*>(str.data), static_cast<size_t>(str.length), out, capacity, keep);
  } else {
    copy_code_points(str.data, str.kind, str.length, out, capacity, keep);
  }
}

// Copies a code object's function name into `frame`. Returns false where a pointer fails a check.
bool copy_function(const Cpython& py, uintptr_t code, PythonFrame* frame) {
  StrData str;
  if (!read_str(py, load<uintptr_t>(code + py.layout.code_function), &str)) return false;
  copy_str_data(str, frame->function, kPythonFunctionBytes, Keep::Head);
  return true;
}

// Offers the frame of `code`, its file, to `filter`; copies the file into `frame` when it is kept. The text
// the filter classifies is the one kept: an ASCII file name that fits is classified in place and copied only
// if kept (most file names, and no copy for the frames passed over); another is copied first (encoded to
// UTF-8, or its tail kept) and classified as copied. Returns false where a pointer fails a check.
bool offer_file(const Cpython& py, uintptr_t code, PythonFrame* frame, FrameFilter* filter, bool* wanted) {
  StrData str;
  if (!read_str(py, load<uintptr_t>(code + py.layout.code_filename), &str)) return false;
  if (str.ascii && str.length < static_cast<int64_t>(kPythonFileBytes)) {
    std::string_view file(reinterpret_cast<const char*>(str.data), static_cast<size_t>(str.length));
    *wanted = filter->wanted(file);
    if (*wanted) copy_text(file.data(), file.size(), frame->file, kPythonFileBytes, Keep::Tail);
  } else {
    copy_str_data(str, frame->file, kPythonFileBytes, Keep::Tail);
    *wanted = filter->wanted(frame->file);
  }
  return true;
}

// The full read: the frames FrameFilter keeps, their texts copied and lines computed; the code objects of the
// frames offered in `offered`, where given.
class FrameReader {
 public:
  FrameReader(const Cpython& py, PythonStack* out, OfferedCodes* offered)
      : py_(py), filter_(out), offered_(offered) {}
  Step frame(const FrameAt& at) {
    if (!filter_.room()) return Step::Stop;
    // room() allows at most kMaxPythonFramesScanned frames.
    if (offered_) offered_->codes[offered_->count++] = at.code;
    PythonFrame& frame = filter_.slot();
    bool wanted = false;
    if (!offer_file(py_, at.code, &frame, &filter_, &wanted)) return Step::Fail;
    if (wanted) {
      if (!copy_function(py_, at.code, &frame)) return Step::Fail;
      frame.line =
          at.traced ? at.traced_line : py_.address_to_line(reinterpret_cast<Object*>(at.code), at.offset);
      filter_.keep();
    }
    return Step::Next;
  }
  void incomplete() {
    if (offered_) offered_->incomplete = true;
  }
  void end() {}

 private:
  const Cpython& py_;
  FrameFilter filter_;
  OfferedCodes* offered_;
};

// Reads the frames of `thread` (a PyThreadState*) in place. Returns the reason when they cannot be read.
const char* read_frames(const Cpython& py, uintptr_t thread, PythonStack* out,
                        OfferedCodes* offered = nullptr) {
  FrameReader reader(py, out, offered);
  const char* failure = walk_frames(py, thread, reader);
  for (uint8_t index = 0; index < out->count; ++index) {
    if (out->frames[index].line < 0) out->frames[index].line = 0;  // PyCode_Addr2Line's "unknown"
  }
  return failure;
}

// ---- with the GIL ----

// Copies attribute `name` of `code` (a str) as UTF-8; "?" where that fails (the error it raised is
// dropped when the caller restores the pending exception).
void copy_attribute(const Cpython& py, Object* code, const char* name, char* out, size_t capacity,
                    Keep keep) {
  Object* value = py.get_attribute(code, name);
  ptrdiff_t size = 0;
  const char* text = value ? py.as_utf8(value, &size) : nullptr;
  if (text && size >= 0) {
    copy_text(text, static_cast<size_t>(size), out, capacity, keep);
  } else {
    std::memcpy(out, "?", 2);
  }
  if (value) py.decrement(value);
}

}  // namespace

// Finds the data of the str object at `text`. Returns false where it fails a check.
bool read_str(const Cpython& py, uintptr_t text, StrData* out) {
  const Layout& layout = py.layout;
  if (!is_object_of(text, py.unicode_type, layout)) return false;
  uint32_t state = load<uint32_t>(text + layout.unicode_state);
  int64_t length = load<int64_t>(text + layout.unicode_length);
  int kind = static_cast<int>((state >> kStateKindShift) & kStateKindMask);
  if (!(state & kStateCompact) || (layout.unicode_ready_bit && !(state & kStateReady))) return false;
  if (length < 0 || length > kMaxStringLength || (kind != 1 && kind != 2 && kind != 4)) return false;
  bool ascii = (state & kStateAscii) != 0;
  if (ascii && kind != 1) return false;
  out->data = reinterpret_cast<const unsigned char*>(
      text + (ascii ? layout.unicode_ascii_size : layout.unicode_compact_size));
  out->length = length;
  out->kind = kind;
  out->ascii = ascii;
  return true;
}

void read_with_gil(const Cpython& py, PythonStack* out) {
  out->gil_held = true;
  out->status = PythonStatus::Captured;
  if (py.minor == 8) {
    // 3.8 has no PyFrame_GetCode/PyFrame_GetBack: its frame objects are read as without the GIL (the
    // current thread state is this thread's own).
    out->method = "frame objects read with the GIL held (CPython 3.8 has no PyFrame_GetCode)";
    if (const char* failure = read_frames(py, reinterpret_cast<uintptr_t>(py.this_thread_state()), out)) {
      out->status = PythonStatus::Unavailable;
      out->reason = failure;
      out->count = 0;
      out->truncated = false;
      out->skipped = out->skipped_at = 0;
    }
    return;
  }
  out->method = "public C API, GIL held";
  Object* type = nullptr;
  Object* value = nullptr;
  Object* traceback = nullptr;
  py.error_fetch(&type, &value, &traceback);
  Object* frame = py.eval_get_frame();
  if (frame) py.increment(frame);
  FrameFilter filter(out);
  while (frame) {
    if (!filter.room()) break;
    PythonFrame& entry = filter.slot();
    Object* code = py.frame_get_code(frame);
    // The file classified as it is kept, as offer_file does without the GIL.
    Object* file_object = py.get_attribute(code, "co_filename");
    ptrdiff_t size = 0;
    const char* text = file_object ? py.as_utf8(file_object, &size) : nullptr;
    bool wanted;
    if (text && size >= 0 && static_cast<size_t>(size) < kPythonFileBytes) {
      wanted = filter.wanted(std::string_view(text, static_cast<size_t>(size)));
      if (wanted) copy_text(text, static_cast<size_t>(size), entry.file, kPythonFileBytes, Keep::Tail);
    } else {
      if (text && size >= 0) {
        copy_text(text, static_cast<size_t>(size), entry.file, kPythonFileBytes, Keep::Tail);
      } else {
        std::memcpy(entry.file, "?", 2);
      }
      wanted = filter.wanted(entry.file);
    }
    if (file_object) py.decrement(file_object);
    if (wanted) {
      entry.line = py.frame_get_line(frame);
      if (entry.line < 0) entry.line = 0;
      copy_attribute(py, code, py.function_attribute, entry.function, kPythonFunctionBytes, Keep::Head);
      filter.keep();
    }
    py.decrement(code);
    Object* back = py.frame_get_back(frame);
    py.decrement(frame);
    frame = back;
  }
  if (frame) py.decrement(frame);
  py.error_restore(type, value, traceback);
}

// Reads the frames of reading.thread in place (the thread's own, which cannot change while it runs C code);
// the code objects of the frames offered in `offered`, where given.
void read_in_place(const Reading& reading, const char* method, PythonStack* out, OfferedCodes* offered) {
  out->gil_held = reading.held;
  out->method = method;
  out->status = PythonStatus::Captured;
  if (const char* failure = read_frames(*reading.py, reading.thread, out, offered)) {
    out->status = PythonStatus::Unavailable;
    out->reason = failure;
    out->count = 0;
    out->truncated = false;
    out->skipped = out->skipped_at = 0;
  }
}

}  // namespace blockrun::shim::python
// SPDX-License-Identifier: MIT
