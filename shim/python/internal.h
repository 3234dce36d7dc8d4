// What the files of shim/python/ share: reading the Python frames of the thread that launches a CUDA kernel
// (python_frames.h holds the entry points; callsite.h what is kept). Internal to the shim: nothing here is
// exported (hidden visibility, and the shim's version script exports only its hooks).
//
// The files, one concern each:
//   layouts.cpp       how each CPython version's frames are laid out, and which layout this one uses
//   cpython.cpp       CPython's functions, found once; where a read starts (begin_reading)
//   text.cpp          copying texts, cut between characters, and a str's code points as UTF-8
//   frame_walk.cpp    which frames are kept, and the full read, without the GIL and with it
//   line_keys.cpp     a launch's line from the cache: frames' words, and lines keyed by instruction pointers
//   entry_points.cpp  read_python_stack, read_python_site and the tallies
// Below: the layouts and CPython's functions as the files see them, and the walk of a thread's frames in
// place (templates: the full read and the lookups of its key go through the same walk).
//
// Two ways to read them:
// - The thread holds the GIL: the public C API (PyEval_GetFrame, PyFrame_GetCode, PyFrame_GetBack, ...),
//   with any pending exception saved and restored around it. Works on every CPython from 3.9 on.
// - The thread released the GIL (PyTorch does around every operator, PyEval_SaveThread before the
//   launch): the public API is not allowed, but the thread's own frame chain cannot change while it runs
//   C code, because only the thread itself pushes and pops its frames, and every object reachable from it
//   (code objects, their names) is kept alive by the frames. So it is read in place, touching nothing:
//   no allocation, no reference count, no lock. That needs the layout of CPython's structures, which
//   changes with every minor version: 3.8-3.10 (frame objects), 3.11 and 3.12 (interpreter frames, laid
//   out in layouts.cpp from the headers), 3.13 (the offsets CPython publishes for debuggers in
//   _PyRuntime.debug_offsets). Any other version, or any pointer that fails a sanity check, gives
//   Unavailable rather than a guess.
//
// A launch's line alone (read_python_site, breadcrumbs and --trace: every launch) is read in place with or
// without the GIL: a walk reading a few words of each frame, looked up in the engine's cache of walks seen
// before (src/callsites/python_site_cache.h); the texts are read only for a walk not seen before.
//
// No Python.h: the shim must build without Python headers, so what is needed is declared here as
// untyped pointers and byte offsets. All offsets are for LP64 (x86-64 and aarch64 alike: natural
// alignment, little-endian bit-fields allocated from the least significant bit), the only platforms
// the shim is built for.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "callsites/callsite.h"
#include "callsites/python_site_cache.h"

static_assert(sizeof(void*) == 8 && sizeof(long) == 8, "the CPython layouts below are for LP64");

namespace blockrun::shim::python {

// ---- CPython's own constants (stable across the versions handled here) ----

// enum _frameowner (Include/internal/pycore_frame.h, 3.11+).
constexpr int kOwnedByGenerator = 1;  // FRAME_OWNED_BY_GENERATOR
constexpr int kOwnedByCStack = 3;     // FRAME_OWNED_BY_CSTACK (3.12+): the entry frame of a C->Python call

// A bound that only corrupted data exceeds: a frame chain walked past this is cyclic or garbage (CPython's
// recursion limit stops real chains long before).
constexpr int kMaxFramesWalked = 100000;

// ---- layouts: how to find the frames, and what is in them, without the GIL (layouts.cpp) ----

enum class Walker : uint8_t {
  None,               // no known layout: Unavailable without the GIL
  FrameObjects,       // 3.8-3.10: tstate->frame, a chain of PyFrameObject (f_back)
  InterpreterFrames,  // 3.11+: tstate->[cframe->]current_frame, a chain of _PyInterpreterFrame (previous)
};

struct Layout {
  Walker walker = Walker::None;
  const char* method = nullptr;

  // PyThreadState: the current frame is at `thread_frame`, either in the thread state itself or, when
  // `thread_cframe` >= 0, in the _PyCFrame the thread state points to at that offset (3.11, 3.12).
  int thread_cframe = -1;
  int thread_frame = 0;
  int thread_interpreter = -1;  // PyThreadState.interp (3.12+: lines keyed by instruction pointers)

  // The frame: its code object, the next outer frame, the instruction pointer, the owner (3.11+).
  int frame_code = 0;
  int frame_back = 0;
  int frame_instruction = 0;  // 3.11+: prev_instr / instr_ptr; 3.8-3.10: f_lasti (int)
  int frame_owner = -1;
  bool owner_cstack = false;  // frames owned by the C stack exist (3.12+): skipped
  // 3.8-3.10 frame objects: f_lineno is the line when the frame is traced (`f_trace` set, 3.8/3.9) or
  // when it is non-zero (3.10); otherwise the line comes from f_lasti, counted in bytes (3.8/3.9) or in
  // 2-byte code units (3.10).
  int frame_trace = -1;
  int frame_lineno = 0;
  int lasti_unit = 1;

  // PyCodeObject.
  int code_units = -1;            // ob_size: number of 2-byte code units (3.11+), to bound offsets
  int code_filename = 0;          // co_filename
  int code_function = 0;          // co_qualname (3.11+), co_name before
  int code_first_traceable = -1;  // _co_firsttraceable (3.11+): frames before it are incomplete
  int code_instructions = 0;      // co_code_adaptive (3.11+): the first instruction
  // co_version (3.12+): a number CPython gives each code object it makes, from a counter (0 once 2^32 were
  // made), so no other code object of the process has it. -1 before 3.12: nothing tells a code object from
  // another made at its address, so a remembered line is keyed by what the line is made of instead
  // (content_identity): the two fields below, with the file and the function.
  int code_version = -1;
  int code_first_line = -1;  // co_firstlineno (3.8-3.11)
  int code_line_table = -1;  // co_lnotab (3.8, 3.9), co_linetable (3.10, 3.11): a bytes object

  int object_type = 8;  // PyObject.ob_type, after the 8-byte ob_refcnt

  // bytes (PyBytesObject), as 3.8-3.11 have it: ob_size 16 (PyObject_VAR_HEAD), ob_shash 24, ob_sval 32.
  int bytes_size = 16;
  int bytes_data = 32;

  // str (PyASCIIObject / PyCompactUnicodeObject).
  int unicode_length = 16;         // PyASCIIObject.length (code points), after ob_refcnt and ob_type
  int unicode_state = 32;          // PyASCIIObject.state, after length and the 8-byte hash
  int unicode_ascii_size = 0;      // sizeof(PyASCIIObject): a compact ASCII str's data follows it
  int unicode_compact_size = 0;    // sizeof(PyCompactUnicodeObject): a compact non-ASCII str's data
  bool unicode_ready_bit = false;  // 3.8-3.11: state.ready must be set
};

// ---- CPython's functions, found once (cpython.cpp) ----

using Object = void;  // PyObject*, opaque

struct Cpython {
  int minor = 0;  // 3.minor
  // Usable when `failure` is null; otherwise every read is Unavailable with it as the reason.
  const char* failure = nullptr;

  // Callable without the GIL: they read globals and thread-specific data, nothing more.
  int (*is_initialized)() = nullptr;               // Py_IsInitialized
  int (*is_finalizing)() = nullptr;                // Py_IsFinalizing (3.13+), _Py_IsFinalizing before
  Object* (*this_thread_state)() = nullptr;        // PyGILState_GetThisThreadState
  Object* (*current_thread_state)() = nullptr;     // PyThreadState_GetUnchecked / _PyThreadState_UncheckedGet
  int (*gil_state_check)() = nullptr;              // PyGILState_Check, where the one above is missing
  int (*address_to_line)(Object*, int) = nullptr;  // PyCode_Addr2Line: reads co_linetable, nothing else

  // With the GIL only.
  Object* (*eval_get_frame)() = nullptr;                        // PyEval_GetFrame (borrowed)
  Object* (*frame_get_code)(Object*) = nullptr;                 // PyFrame_GetCode (3.9+, new reference)
  Object* (*frame_get_back)(Object*) = nullptr;                 // PyFrame_GetBack (3.9+, new reference)
  int (*frame_get_line)(Object*) = nullptr;                     // PyFrame_GetLineNumber
  Object* (*get_attribute)(Object*, const char*) = nullptr;     // PyObject_GetAttrString
  const char* (*as_utf8)(Object*, ptrdiff_t*) = nullptr;        // PyUnicode_AsUTF8AndSize
  void (*increment)(Object*) = nullptr;                         // Py_IncRef
  void (*decrement)(Object*) = nullptr;                         // Py_DecRef
  void (*error_fetch)(Object**, Object**, Object**) = nullptr;  // PyErr_Fetch
  void (*error_restore)(Object*, Object*, Object*) = nullptr;   // PyErr_Restore
  const char* function_attribute = "co_name";                   // co_qualname on 3.11+

  // 3.12+, optional: watching code objects die, so that a line can be looked up by instruction pointers
  // alone (line_keys.cpp, "lines keyed by instruction pointers"). Py_AddPendingCall needs neither the GIL nor
  // a thread state; the others run in the function it schedules, with the GIL.
  int (*add_pending_call)(int (*)(void*), void*) = nullptr;  // Py_AddPendingCall
  int (*add_code_watcher)(int (*)(int, Object*)) = nullptr;  // PyCode_AddWatcher
  Object* (*main_interpreter)() = nullptr;                   // PyInterpreterState_Main

  // Type objects, to check what a pointer points to.
  uintptr_t code_type = 0;     // &PyCode_Type
  uintptr_t unicode_type = 0;  // &PyUnicode_Type
  uintptr_t bytes_type = 0;    // &PyBytes_Type (a line table, 3.8-3.11)
  uintptr_t frame_type = 0;    // &PyFrame_Type

  Layout layout;                             // reading without the GIL
  const char* without_gil_reason = nullptr;  // Unavailable without the GIL when layout.walker is None
  char reason_text[160] = {};                // storage for the reasons built at resolution
};

extern Cpython g_python;  // written once, before cpython.cpp's g_found publishes it

// How this version's frames are read without the GIL, or why they are not (layouts.cpp).
void choose_layout(void* scope, Cpython& py);

// Where a read reads: CPython, found and usable; whether this thread holds the GIL; its thread state (the
// current one where it holds the GIL: 3.12+ keeps that per thread).
struct Reading {
  const Cpython* py = nullptr;
  bool held = false;
  uintptr_t thread = 0;
};

// Finds where the frames are read from. Returns false, with out->status (and reason) set, where there are
// none to read: no CPython, finalizing, no thread state, or without the GIL a version whose frames are not
// read in place.
bool begin_reading(PythonStack* out, Reading* reading);

// ---- text (text.cpp) ----

enum class Keep { Head, Tail };

// Copies UTF-8 `text` into `out` (capacity `capacity`, NUL-terminated). Too long a text keeps its head
// ("name...") or its tail ("...path/file.py"), cut between characters.
void copy_text(const char* text, size_t length, char* out, size_t capacity, Keep keep);

// Encodes the code points of a str's canonical data (kind 1, 2 or 4 bytes each) to UTF-8, enough of them
// from the head or the tail to fill `out`, then copies as copy_text does.
void copy_code_points(const unsigned char* data, int kind, int64_t length, char* out, size_t capacity,
                      Keep keep);

// ---- reading without the GIL: the walk (frame_walk.cpp reads in full, line_keys.cpp looks up) ----

template <typename T>
inline T load(uintptr_t address) {
  T value;
  std::memcpy(&value, reinterpret_cast<const void*>(address), sizeof value);
  return value;
}

// A pointer worth following: not null, not in the first page, in the user half of a 64-bit address
// space, aligned as every CPython object and frame is.
inline bool plausible(uintptr_t address) {
  return address >= 4096 && address < (uintptr_t{1} << 56) && address % alignof(void*) == 0;
}

inline bool is_object_of(uintptr_t object, uintptr_t type, const Layout& layout) {
  return plausible(object) && load<uintptr_t>(object + layout.object_type) == type;
}

// A str object's canonical data. The UTF-8 cache of a non-ASCII str is not used: a thread holding the GIL
// can be filling it right now, and it is published without a barrier; the canonical data never changes.
struct StrData {
  const unsigned char* data;
  int64_t length;  // in code points
  int kind;        // bytes per code point: 1, 2 or 4
  bool ascii;      // then `data` is the UTF-8 text itself
};

// Finds the data of the str object at `text`. Returns false where it fails a check.
bool read_str(const Cpython& py, uintptr_t text, StrData* out);

inline constexpr const char* kLayoutMismatch =
    "a pointer in the launching thread's Python frames failed a sanity check (unexpected CPython layout)";

// What a walk offers of a frame: its code object (checked to be one) and where in it the frame is.
struct FrameAt {
  uintptr_t code;
  int offset;   // the instruction's byte offset, as PyCode_Addr2Line takes it
  bool traced;  // 3.8-3.10: the frame's line is f_lineno (traced_line), not the offset's
  int traced_line;
};

// What a walk does with each frame: reads on, stops (not an error), or fails (a pointer failed a check).
enum class Step { Next, Stop, Fail };

// Offers one frame to the visitor: true to read on; false where the walk returns `*stopped` (nullptr where
// the visitor stopped, the reason where it failed).
template <typename Visitor>
bool offer_frame(Visitor& visitor, const FrameAt& at, const char** stopped) {
  Step step = visitor.frame(at);
  *stopped = step == Step::Fail ? kLayoutMismatch : nullptr;
  return step == Step::Next;
}

// The walks offer each frame that CPython's own walk shows, innermost first, to `visitor`: visitor.frame(at)
// says what next, visitor.incomplete() is told of each incomplete frame passed over (3.11+), and
// visitor.end() is called where the chain ends before the visitor stopped. They return the reason where the
// frames cannot be read. Both ways of using them (the full read, the lookup of its key) go through the same
// walk: the frames a key's words were taken from are the frames the full read chose from. (Keyed by
// instruction pointers, the lookup walks the same chain its own way: walk_instruction_pointers.)

// 3.11+: the chain of _PyInterpreterFrame from tstate->[cframe->]current_frame through `previous`, without
// the C-stack entry frames (3.12+), which CPython's own frame walk (PyFrame_GetBack, PyThreadState_GetFrame)
// skips: each(frame, owner, &stopped) for each frame, true to go on, false to stop the walk with `stopped`
// (nullptr: not an error); visitor.end() where the chain ends. Returns the reason where it cannot be read.
template <typename Visitor, typename Each>
const char* walk_frame_chain(const Layout& layout, uintptr_t thread, Visitor& visitor, Each each) {
  uintptr_t frame_address;
  if (layout.thread_cframe >= 0) {
    uintptr_t cframe = load<uintptr_t>(thread + layout.thread_cframe);
    if (cframe && !plausible(cframe)) return kLayoutMismatch;
    frame_address = cframe ? load<uintptr_t>(cframe + layout.thread_frame) : 0;
  } else {
    frame_address = load<uintptr_t>(thread + layout.thread_frame);
  }
  for (int walked = 0; frame_address; ++walked) {
    if (!plausible(frame_address) || walked > kMaxFramesWalked) return kLayoutMismatch;
    int owner = load<signed char>(frame_address + layout.frame_owner);
    uintptr_t previous = load<uintptr_t>(frame_address + layout.frame_back);
    if (!(layout.owner_cstack && owner == kOwnedByCStack)) {
      const char* stopped = nullptr;
      if (!each(frame_address, owner, &stopped)) return stopped;
    }
    frame_address = previous;
  }
  visitor.end();
  return nullptr;
}

// 3.11+: the frames of walk_frame_chain but the incomplete ones (pushed, but not yet past their first
// traceable instruction), which CPython's walk skips too.
template <typename Visitor>
const char* walk_interpreter_frames(const Cpython& py, uintptr_t thread, Visitor& visitor) {
  const Layout& layout = py.layout;
  return walk_frame_chain(layout, thread, visitor, [&](uintptr_t frame, int owner, const char** stopped) {
    *stopped = kLayoutMismatch;
    uintptr_t code = load<uintptr_t>(frame + layout.frame_code);
    if (!is_object_of(code, py.code_type, layout)) return false;
    // _PyInterpreterFrame_LASTI * sizeof(_Py_CODEUNIT): the byte offset of the instruction pointer
    // (3.11/3.12: the code unit before the next instruction; 3.13: the current instruction).
    intptr_t offset = static_cast<intptr_t>(load<uintptr_t>(frame + layout.frame_instruction) -
                                            (code + layout.code_instructions));
    if (owner != kOwnedByGenerator && offset < 2 * intptr_t{load<int>(code + layout.code_first_traceable)}) {
      visitor.incomplete();
      return true;
    }
    int64_t units = load<int64_t>(code + layout.code_units);
    if (units <= 0 || units > (int64_t{1} << 28) || offset < -2 || offset >= 2 * units) return false;
    return offer_frame(visitor, FrameAt{code, static_cast<int>(offset), false, 0}, stopped);
  });
}

// 3.8-3.10: the chain of PyFrameObject from tstate->frame through f_back; the line as
// PyFrame_GetLineNumber computes it.
template <typename Visitor>
const char* walk_frame_objects(const Cpython& py, uintptr_t thread, Visitor& visitor) {
  const Layout& layout = py.layout;
  uintptr_t frame_address = load<uintptr_t>(thread + layout.thread_frame);
  for (int walked = 0; frame_address; ++walked) {
    if (!is_object_of(frame_address, py.frame_type, layout) || walked > kMaxFramesWalked)
      return kLayoutMismatch;
    uintptr_t code = load<uintptr_t>(frame_address + layout.frame_code);
    if (!is_object_of(code, py.code_type, layout)) return kLayoutMismatch;
    int lineno = load<int>(frame_address + layout.frame_lineno);
    bool traced =
        layout.frame_trace >= 0 ? load<uintptr_t>(frame_address + layout.frame_trace) != 0 : lineno != 0;
    int offset = load<int>(frame_address + layout.frame_instruction) * layout.lasti_unit;
    const char* stopped;
    if (!offer_frame(visitor, FrameAt{code, offset, traced, lineno}, &stopped)) return stopped;
    frame_address = load<uintptr_t>(frame_address + layout.frame_back);
  }
  visitor.end();
  return nullptr;
}

// 3.12+, for a lookup keyed by instruction pointers: the frames of walk_frame_chain, reading only each
// frame's own words, no code object: visitor.frame(instruction, owner) for each, incomplete frames included
// (telling them needs the code object; a line is remembered only from a walk that had none, so a walk with
// one never matches a remembered key: see "lines keyed by instruction pointers").
template <typename Visitor>
const char* walk_instruction_pointers(const Cpython& py, uintptr_t thread, Visitor& visitor) {
  if (!plausible(thread)) return kLayoutMismatch;
  const Layout& layout = py.layout;
  return walk_frame_chain(layout, thread, visitor, [&](uintptr_t frame, int owner, const char** stopped) {
    Step step = visitor.frame(load<uintptr_t>(frame + layout.frame_instruction), owner);
    *stopped = step == Step::Fail ? kLayoutMismatch : nullptr;
    return step == Step::Next;
  });
}

template <typename Visitor>
const char* walk_frames(const Cpython& py, uintptr_t thread, Visitor& visitor) {
  if (!plausible(thread)) return kLayoutMismatch;
  return py.layout.walker == Walker::InterpreterFrames ? walk_interpreter_frames(py, thread, visitor)
                                                       : walk_frame_objects(py, thread, visitor);
}

// What a line keyed by instruction pointers depends on, from its full read: the code objects of the frames
// the walk offered, innermost first, and whether it passed over an incomplete frame.
struct OfferedCodes {
  uintptr_t codes[kMaxPythonFramesScanned];
  size_t count = 0;
  bool incomplete = false;
};

// Reads the frames of reading.thread in place (the thread's own, which cannot change while it runs C code);
// the code objects of the frames offered in `offered`, where given.
void read_in_place(const Reading& reading, const char* method, PythonStack* out,
                   OfferedCodes* offered = nullptr);

// With the GIL held: the public C API (3.9+; 3.8's frame objects are read as without the GIL).
void read_with_gil(const Cpython& py, PythonStack* out);

// ---- a launch's line from the cache (line_keys.cpp) ----

extern std::atomic<uint64_t> g_read_in_full;  // python_lines_read_in_full (slow path only)

// The launch's line: looked up by the words of its frames, read in full where the cache does not know them.
void read_site(PythonSiteCache& cache, PythonStack* scratch, PythonLaunchSite* out);

// Whether lines are keyed by instruction pointers in the watched interpreter, and under which epoch (*epoch).
bool watching(uint64_t* epoch);

}  // namespace blockrun::shim::python
// SPDX-License-Identifier: MIT
