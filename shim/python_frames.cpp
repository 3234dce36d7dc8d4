// The Python frames of the launching thread: the innermost, and past frames of libraries and generated code
// the program's own (see python_frames.h, and callsite.h for which are kept).
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
//   out below from the headers), 3.13 (the offsets CPython publishes for debuggers in
//   _PyRuntime.debug_offsets). Any other version, or any pointer that fails a sanity check, gives
//   Unavailable rather than a guess.
//
// A launch's line alone (read_python_site, breadcrumbs and --trace: every launch) is read in place with or
// without the GIL: a walk reading a few words of each frame, looked up in the engine's cache of walks seen
// before (src/python_site_cache.h); the texts are read only for a walk not seen before.
//
// No Python.h: the shim must build without Python headers, so what is needed is declared here as
// untyped pointers and byte offsets. All offsets are for LP64 (x86-64 and aarch64 alike: natural
// alignment, little-endian bit-fields allocated from the least significant bit), the only platforms
// the shim is built for.
#include "python_frames.h"

#include <dlfcn.h>
#include <link.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "address_set.h"
#include "loaded_objects.h"
#include "real.h"
#include "sites.h"

static_assert(sizeof(void*) == 8 && sizeof(long) == 8, "the CPython layouts below are for LP64");

namespace blockrun::shim {

namespace {

// ---- CPython's own constants (stable across the versions handled here) ----

// enum _frameowner (Include/internal/pycore_frame.h, 3.11+).
constexpr int kOwnedByGenerator = 1;  // FRAME_OWNED_BY_GENERATOR
constexpr int kOwnedByCStack = 3;     // FRAME_OWNED_BY_CSTACK (3.12+): the entry frame of a C->Python call

// PyASCIIObject.state bit-fields (Include/cpython/unicodeobject.h, 3.8-3.13): `interned:2` (bits 0-1),
// `kind:3` (bits 2-4), `compact:1` (bit 5), `ascii:1` (bit 6), then in 3.8-3.11 `ready:1` (bit 7); 3.12
// dropped `ready` (every str is ready) for `statically_allocated:1`.
constexpr uint32_t kStateKindShift = 2;
constexpr uint32_t kStateKindMask = 0x7;
constexpr uint32_t kStateCompact = 1u << 5;
constexpr uint32_t kStateAscii = 1u << 6;
constexpr uint32_t kStateReady = 1u << 7;

// Bounds that only corrupted data exceeds: a frame chain walked past this is cyclic or garbage (CPython's
// recursion limit stops real chains long before), a str longer than this is not a code object's name.
constexpr int kMaxFramesWalked = 100000;
constexpr int64_t kMaxStringLength = int64_t{1} << 30;

// How often to look for CPython again while it is not in the process, and how many of a thread's
// captures go by between two reads of the clock (a read costs about as much as the rest of such a
// capture together).
constexpr int64_t kProbeIntervalNs = 1000000000;
constexpr int kCapturesBetweenClockReads = 8;

// ---- layouts: how to find the frames, and what is in them, without the GIL ----

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

// CPython 3.8, 3.9 (Include/cpython/pystate.h, Include/cpython/frameobject.h, Include/cpython/code.h,
// Include/cpython/unicodeobject.h; checked with offsetof against 3.8.18 and 3.9.18).
constexpr Layout layout_3_8() {
  Layout layout;
  layout.walker = Walker::FrameObjects;
  layout.method = "read without the GIL (thread's own frozen frames, CPython 3.8/3.9 frame objects)";
  layout.thread_frame = 24;  // struct _ts: prev 0, next 8, interp 16, `PyFrameObject *frame` 24
  // struct _frame: PyObject_VAR_HEAD (ob_refcnt 0, ob_type 8, ob_size 16), f_back 24, f_code 32,
  // f_builtins 40, f_globals 48, f_locals 56, f_valuestack 64, f_stacktop 72, f_trace 80,
  // f_trace_lines 88, f_trace_opcodes 89, f_gen 96, `int f_lasti` 104, `int f_lineno` 108.
  layout.frame_back = 24;
  layout.frame_code = 32;
  layout.frame_trace = 80;
  layout.frame_instruction = 104;
  layout.frame_lineno = 108;
  layout.lasti_unit = 1;  // f_lasti is a byte offset before 3.10
  // PyCodeObject: PyObject_HEAD (16), co_argcount 16, co_posonlyargcount 20, co_kwonlyargcount 24,
  // co_nlocals 28, co_stacksize 32, co_flags 36, co_firstlineno 40, co_code 48, co_consts 56, co_names 64,
  // co_varnames 72, co_freevars 80, co_cellvars 88, co_cell2arg 96, co_filename 104, co_name 112.
  layout.code_filename = 104;
  layout.code_function = 112;
  layout.code_first_line = 40;
  layout.code_line_table = 120;  // co_lnotab; 3.10's co_linetable, where it is
  // PyASCIIObject: length 16, hash 24, state 32 (4 bytes, 4 padding), `wchar_t *wstr` 40: size 48.
  // PyCompactUnicodeObject: utf8_length 48, utf8 56, wstr_length 64: size 72.
  layout.unicode_ascii_size = 48;
  layout.unicode_compact_size = 72;
  layout.unicode_ready_bit = true;
  return layout;
}

// CPython 3.10: as 3.8/3.9 but PyFrameObject lost f_stacktop (checked with offsetof against 3.10.13).
constexpr Layout layout_3_10() {
  Layout layout = layout_3_8();
  layout.method = "read without the GIL (thread's own frozen frames, CPython 3.10 frame objects)";
  // struct _frame: ..., f_valuestack 64, f_trace 72, `int f_stackdepth` 80, f_trace_lines 84,
  // f_trace_opcodes 85, f_gen 88, `int f_lasti` 96, `int f_lineno` 100.
  layout.frame_trace = -1;  // 3.10's PyFrame_GetLineNumber trusts f_lineno whenever it is non-zero
  layout.frame_instruction = 96;
  layout.frame_lineno = 100;
  layout.lasti_unit = 2;  // f_lasti counts 2-byte code units from 3.10 on
  return layout;
}

// CPython 3.11 (checked with offsetof against the headers of 3.11.2 and 3.11.7).
constexpr Layout layout_3_11() {
  Layout layout;
  layout.walker = Walker::InterpreterFrames;
  layout.method = "read without the GIL (thread's own frozen frames, CPython 3.11 layout)";
  // struct _ts (Include/cpython/pystate.h): prev 0, next 8, interp 16, `int _initialized` 24,
  // `int _static` 28, recursion_remaining 32, recursion_limit 36, recursion_headroom 40, tracing 44,
  // tracing_what 48, (4 padding), `_PyCFrame *cframe` 56.
  layout.thread_cframe = 56;
  // _PyCFrame: `uint8_t use_tracing` 0, (7 padding), `_PyInterpreterFrame *current_frame` 8.
  layout.thread_frame = 8;
  // _PyInterpreterFrame (Include/internal/pycore_frame.h): f_func 0, f_globals 8, f_builtins 16,
  // f_locals 24, `PyCodeObject *f_code` 32, frame_obj 40, `previous` 48, `_Py_CODEUNIT *prev_instr` 56,
  // `int stacktop` 64, `bool is_entry` 68, `char owner` 69. No C-stack-owned frames in 3.11: entry frames
  // are ordinary frames marked is_entry.
  layout.frame_code = 32;
  layout.frame_back = 48;
  layout.frame_instruction = 56;
  layout.frame_owner = 69;
  // PyCodeObject (Include/cpython/code.h, _PyCode_DEF): PyObject_VAR_HEAD (ob_size 16), co_consts 24,
  // co_names 32, co_exceptiontable 40, `int co_flags` 48, `short co_warmup` 52,
  // `short _co_linearray_entry_size` 54, co_argcount 56, co_posonlyargcount 60, co_kwonlyargcount 64,
  // co_stacksize 68, co_firstlineno 72, co_nlocalsplus 76, co_nlocals 80, co_nplaincellvars 84,
  // co_ncellvars 88, co_nfreevars 92, co_localsplusnames 96, co_localspluskinds 104, co_filename 112,
  // co_name 120, co_qualname 128, co_linetable 136, co_weakreflist 144, _co_code 152, _co_linearray 160,
  // `int _co_firsttraceable` 168, (4 padding), co_extra 176, `char co_code_adaptive[]` 184.
  layout.code_units = 16;
  layout.code_filename = 112;
  layout.code_function = 128;
  layout.code_first_traceable = 168;
  layout.code_instructions = 184;
  layout.code_first_line = 72;
  layout.code_line_table = 136;
  // str: as 3.8-3.10 (PyASCIIObject still has `wchar_t *wstr`): sizes 48 and 72, `ready` bit present.
  layout.unicode_ascii_size = 48;
  layout.unicode_compact_size = 72;
  layout.unicode_ready_bit = true;
  return layout;
}

// CPython 3.12 (checked with offsetof against the headers of 3.12.1; the structures below did not change
// in 3.12 maintenance releases, which keep PyThreadState and PyCodeObject stable for extensions).
constexpr Layout layout_3_12() {
  Layout layout;
  layout.walker = Walker::InterpreterFrames;
  layout.method = "read without the GIL (thread's own frozen frames, CPython 3.12 layout)";
  // struct _ts (Include/cpython/pystate.h): prev 0, next 8, interp 16, `struct {unsigned int
  // initialized:1; ...; :24} _status` 24 (4 bytes), `int py_recursion_remaining` 28,
  // py_recursion_limit 32, c_recursion_remaining 36, recursion_headroom 40, tracing 44, what_event 48,
  // (4 padding), `_PyCFrame *cframe` 56.
  layout.thread_cframe = 56;
  layout.thread_interpreter = 16;
  // _PyCFrame lost use_tracing in 3.12: `_PyInterpreterFrame *current_frame` 0, previous 8.
  layout.thread_frame = 0;
  // _PyInterpreterFrame (Include/internal/pycore_frame.h) was reordered in 3.12: `PyCodeObject *f_code` 0,
  // `previous` 8, f_funcobj 16, f_globals 24, f_builtins 32, f_locals 40, frame_obj 48,
  // `_Py_CODEUNIT *prev_instr` 56, `int stacktop` 64, `uint16_t return_offset` 68, `char owner` 70.
  layout.frame_code = 0;
  layout.frame_back = 8;
  layout.frame_instruction = 56;
  layout.frame_owner = 70;
  // The entry frame of every C->Python call (owner FRAME_OWNED_BY_CSTACK) is a shim whose f_code is the
  // interpreter trampoline: skipped, as CPython's traceback code skips it.
  layout.owner_cstack = true;
  // PyCodeObject (Include/cpython/code.h, _PyCode_DEF): PyObject_VAR_HEAD (ob_size 16), co_consts 24,
  // co_names 32, co_exceptiontable 40, `int co_flags` 48, co_argcount 52, co_posonlyargcount 56,
  // co_kwonlyargcount 60, co_stacksize 64, co_firstlineno 68, co_nlocalsplus 72, co_framesize 76,
  // co_nlocals 80, co_ncellvars 84, co_nfreevars 88, `uint32_t co_version` 92, co_localsplusnames 96,
  // co_localspluskinds 104, co_filename 112, co_name 120, co_qualname 128, co_linetable 136,
  // co_weakreflist 144, _co_cached 152, `uint64_t _co_instrumentation_version` 160, _co_monitoring 168,
  // `int _co_firsttraceable` 176, (4 padding), co_extra 184, `char co_code_adaptive[]` 192.
  layout.code_units = 16;
  layout.code_filename = 112;
  layout.code_function = 128;
  layout.code_first_traceable = 176;
  layout.code_instructions = 192;
  layout.code_version = 92;
  // PyASCIIObject lost `wstr` in 3.12: length 16, hash 24, state 32 (4 bytes, 4 padding): size 40.
  // PyCompactUnicodeObject: utf8_length 40, utf8 48: size 56. No `ready` bit any more.
  layout.unicode_ascii_size = 40;
  layout.unicode_compact_size = 56;
  layout.unicode_ready_bit = false;
  return layout;
}

// _Py_DebugOffsets as CPython 3.13 defines it (Include/internal/pycore_runtime.h), the first member of
// _PyRuntime. CPython fills it with offsetof() of its own structures so that debuggers and profilers can
// read frames without the GIL; its layout is stable within 3.13 and changes between minor versions,
// hence the check of the version it carries.
struct DebugOffsets313 {
  char cookie[8];    // "xdebugpy"
  uint64_t version;  // PY_VERSION_HEX
  uint64_t free_threaded;
  struct {
    uint64_t size, finalizing, interpreters_head;
  } runtime_state;
  struct {
    uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
        gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked, gil_runtime_state_holder;
  } interpreter_state;
  struct {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk, status;
  } thread_state;
  struct {
    uint64_t size, previous, executable, instr_ptr, localsplus, owner;
  } interpreter_frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive;
  } code_object;
  struct {
    uint64_t size, ob_type;
  } pyobject;
  struct {
    uint64_t size, tp_name, tp_repr, tp_flags;
  } type_object;
  struct {
    uint64_t size, ob_item, ob_size;
  } tuple_object;
  struct {
    uint64_t size, ob_item, ob_size;
  } list_object;
  struct {
    uint64_t size, ma_keys, ma_values;
  } dict_object;
  struct {
    uint64_t size, ob_fval;
  } float_object;
  struct {
    uint64_t size, lv_tag, ob_digit;
  } long_object;
  struct {
    uint64_t size, ob_size, ob_sval;
  } bytes_object;
  struct {
    uint64_t size, state, length, asciiobject_size;
  } unicode_object;
  struct {
    uint64_t size, collecting;
  } gc;
};

// Whether `offset` is a field inside a structure of `size` bytes with room for `width` bytes.
bool field_inside(uint64_t offset, uint64_t width, uint64_t size) {
  return size <= 4096 && offset + width <= size;
}

// CPython 3.13, from its debug offsets. Returns nullptr when they fail validation (the reason).
const char* layout_3_13(const void* runtime, Layout* layout) {
  DebugOffsets313 offsets;
  std::memcpy(&offsets, runtime, sizeof offsets);
  if (std::memcmp(offsets.cookie, "xdebugpy", 8) != 0 || (offsets.version >> 16) != 0x030D) {
    return "CPython 3.13's debug offsets (_PyRuntime.debug_offsets) are missing or not 3.13's";
  }
  if (offsets.free_threaded != 0) {
    return "the launching thread had released the GIL and the frames of a free-threaded CPython build are "
           "not read without it";
  }
  const auto& thread = offsets.thread_state;
  const auto& frame = offsets.interpreter_frame;
  const auto& code = offsets.code_object;
  const auto& unicode = offsets.unicode_object;
  bool valid = field_inside(thread.current_frame, 8, thread.size) &&
               field_inside(frame.previous, 8, frame.size) && field_inside(frame.executable, 8, frame.size) &&
               field_inside(frame.instr_ptr, 8, frame.size) && field_inside(frame.owner, 1, frame.size) &&
               field_inside(code.filename, 8, code.size) && field_inside(code.qualname, 8, code.size) &&
               field_inside(code.co_code_adaptive, 1, code.size) && code.co_code_adaptive >= 24 &&
               offsets.pyobject.ob_type == 8 && field_inside(offsets.tuple_object.ob_size, 8, code.size) &&
               unicode.length == 16 && unicode.state == 32 && unicode.asciiobject_size == 40;
  if (!valid) return "CPython 3.13's debug offsets do not describe the expected (default, LP64) build";
  layout->walker = Walker::InterpreterFrames;
  layout->method = "read without the GIL (thread's own frozen frames, CPython 3.13 debug offsets)";
  layout->thread_cframe = -1;  // 3.13 dropped _PyCFrame: tstate->current_frame
  layout->thread_frame = static_cast<int>(thread.current_frame);
  layout->thread_interpreter =
      field_inside(thread.interp, 8, thread.size) ? static_cast<int>(thread.interp) : -1;
  layout->frame_code = static_cast<int>(frame.executable);  // f_executable: a code object, or None (C stack)
  layout->frame_back = static_cast<int>(frame.previous);
  layout->frame_instruction = static_cast<int>(frame.instr_ptr);
  layout->frame_owner = static_cast<int>(frame.owner);
  layout->owner_cstack = true;
  layout->code_units = static_cast<int>(offsets.tuple_object.ob_size);  // PyObject_VAR_HEAD's ob_size
  layout->code_filename = static_cast<int>(code.filename);
  layout->code_function = static_cast<int>(code.qualname);
  // Not among the debug offsets: `int _co_firsttraceable; void *co_extra; char co_code_adaptive[]` end
  // the 3.13 code object (Include/cpython/code.h), so it is 16 bytes before the instructions (184 and 200
  // in 3.13.0).
  layout->code_first_traceable = static_cast<int>(code.co_code_adaptive) - 16;
  layout->code_instructions = static_cast<int>(code.co_code_adaptive);
  // Not among the debug offsets either, laid out as in 3.12: `uint32_t co_version` 24 bytes after
  // co_firstlineno (co_nlocalsplus, co_framesize, co_nlocals, co_ncellvars and co_nfreevars between them; 68
  // and 92 in 3.13.0). Where that is not inside the code object, no line is remembered.
  layout->code_version =
      field_inside(code.firstlineno + 24, 4, code.size) ? static_cast<int>(code.firstlineno) + 24 : -1;
  layout->object_type = static_cast<int>(offsets.pyobject.ob_type);
  layout->unicode_length = static_cast<int>(unicode.length);
  layout->unicode_state = static_cast<int>(unicode.state);
  layout->unicode_ascii_size = static_cast<int>(unicode.asciiobject_size);
  // PyCompactUnicodeObject adds `Py_ssize_t utf8_length; char *utf8` to PyASCIIObject.
  layout->unicode_compact_size = static_cast<int>(unicode.asciiobject_size) + 16;
  layout->unicode_ready_bit = false;
  return nullptr;
}

// ---- CPython's functions, found once ----

using Object = void;  // PyObject*, opaque

struct Cpython {
  int minor = 0;  // 3.minor
  // Usable when `failure` is null; otherwise every capture is Unavailable with it as the reason.
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
  // alone (see "lines keyed by instruction pointers" below). Py_AddPendingCall needs neither the GIL nor a
  // thread state; the others run in the function it schedules, with the GIL.
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

Cpython g_python;                              // written once, before g_found publishes it
std::atomic<const Cpython*> g_found{nullptr};  // non-null once CPython was found (never reset)
std::atomic<int64_t> g_next_probe_ns{0};       // when to look for CPython again
std::atomic<bool> g_probing{false};            // one thread looks at a time; the others answer NoPython
thread_local bool t_capturing = false;         // a capture re-entered on its own thread
std::atomic<uint64_t> g_read_in_full{0};       // python_lines_read_in_full (slow path only)
thread_local int t_captures_until_clock = 0;   // this thread's captures before it reads the clock again

int64_t coarse_now_ns() {
  // CLOCK_MONOTONIC_COARSE is read from the vDSO without a system call: a few ns.
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

// Finds a libpython3.* loaded privately (RTLD_LOCAL, an embedding program): not in the global scope, so
// not found through RTLD_DEFAULT. Its handle, or nullptr.
void* find_libpython() {
  void* found = nullptr;
  visit_loaded_objects([&](const LoadedObject& object) {
    if (std::strncmp(object.file, "libpython3", 10) != 0) return false;
    // RTLD_NOLOAD: only a handle to what is there. RTLD_NODELETE and no dlclose: the pointers kept below
    // stay valid for the life of the process.
    void* handle = dlopen(object.path, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    if (!handle) return false;
    if (!real_dlsym(handle, "Py_IsInitialized")) {
      dlclose(handle);
      return false;
    }
    found = handle;
    return true;
  });
  return found;
}

template <typename Function>
bool resolve(void* scope, const char* name, Function* function) {
  *function = reinterpret_cast<Function>(real_dlsym(scope, name));
  return *function != nullptr;
}

// Where CPython's functions are looked up: the global scope (RTLD_DEFAULT), or a privately loaded libpython.
// Sets *scope and *initialized (its Py_IsInitialized); returns false where the process has no CPython.
bool find_cpython_scope(void** scope, void** initialized) {
  *scope = RTLD_DEFAULT;
  *initialized = real_dlsym(RTLD_DEFAULT, "Py_IsInitialized");
  if (!*initialized) {
    *scope = find_libpython();
    if (!*scope) return false;
    *initialized = real_dlsym(*scope, "Py_IsInitialized");
    return true;
  }
  // Pin a libpython found in the global scope, so that the functions kept below cannot be unloaded
  // (an embedding program's dlclose). The executable itself (a python binary exporting its symbols) is
  // not found under its name, which is fine: it is never unloaded.
  Dl_info info{};
  if (dladdr(*initialized, &info) && info.dli_fname && *info.dli_fname) {
    dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  }
  return true;
}

// The version, 3.minor: Py_Version (3.11+) is PY_VERSION_HEX; before, Py_GetVersion() starts with "3.x.y".
// -1 where it is not a 3.x.
int cpython_minor(void* scope) {
  if (auto* version = static_cast<const unsigned long*>(real_dlsym(scope, "Py_Version"))) {
    return (*version >> 24) == 3 ? static_cast<int>((*version >> 16) & 0xff) : -1;
  }
  if (auto get_version = reinterpret_cast<const char* (*)()>(real_dlsym(scope, "Py_GetVersion"))) {
    const char* text = get_version();
    return (text && text[0] == '3' && text[1] == '.') ? std::atoi(text + 2) : -1;
  }
  return -1;
}

// The functions and types the capture needs. Returns false where one is missing.
bool resolve_required(void* scope, Cpython& py) {
  bool found = resolve(scope, "PyGILState_GetThisThreadState", &py.this_thread_state) &&
               resolve(scope, "PyGILState_Check", &py.gil_state_check) &&
               resolve(scope, "PyCode_Addr2Line", &py.address_to_line) &&
               resolve(scope, "PyEval_GetFrame", &py.eval_get_frame) &&
               resolve(scope, "PyFrame_GetLineNumber", &py.frame_get_line) &&
               resolve(scope, "PyObject_GetAttrString", &py.get_attribute) &&
               resolve(scope, "PyUnicode_AsUTF8AndSize", &py.as_utf8) &&
               resolve(scope, "Py_IncRef", &py.increment) && resolve(scope, "Py_DecRef", &py.decrement) &&
               resolve(scope, "PyErr_Fetch", &py.error_fetch) &&
               resolve(scope, "PyErr_Restore", &py.error_restore);
  if (py.minor >= 9) {
    found = found && resolve(scope, "PyFrame_GetCode", &py.frame_get_code) &&
            resolve(scope, "PyFrame_GetBack", &py.frame_get_back);
  }
  py.code_type = reinterpret_cast<uintptr_t>(real_dlsym(scope, "PyCode_Type"));
  py.unicode_type = reinterpret_cast<uintptr_t>(real_dlsym(scope, "PyUnicode_Type"));
  py.frame_type = reinterpret_cast<uintptr_t>(real_dlsym(scope, "PyFrame_Type"));
  py.bytes_type = reinterpret_cast<uintptr_t>(real_dlsym(scope, "PyBytes_Type"));
  return found && py.code_type && py.unicode_type && py.frame_type && py.bytes_type;
}

// Optional: finalization (the thread states may be freed under a thread without the GIL), and the
// thread state holding the GIL (PyGILState_Check answers 1 for every thread once a subinterpreter was
// created, 3.8-3.12: the current thread state is compared instead).
void resolve_optional(void* scope, Cpython& py) {
  if (!resolve(scope, "Py_IsFinalizing", &py.is_finalizing))
    resolve(scope, "_Py_IsFinalizing", &py.is_finalizing);
  if (!resolve(scope, "PyThreadState_GetUnchecked", &py.current_thread_state)) {
    resolve(scope, "_PyThreadState_UncheckedGet", &py.current_thread_state);
  }
  if (py.minor >= 11) py.function_attribute = "co_qualname";
  if (py.minor >= 12 && !(resolve(scope, "Py_AddPendingCall", &py.add_pending_call) &&
                          resolve(scope, "PyCode_AddWatcher", &py.add_code_watcher) &&
                          resolve(scope, "PyInterpreterState_Main", &py.main_interpreter))) {
    py.add_pending_call = nullptr;  // all three or none
  }
}

// How this version's frames are read without the GIL, or why they are not.
void choose_layout(void* scope, Cpython& py) {
  switch (py.minor) {
    case 8:
    case 9:
      py.layout = layout_3_8();
      break;
    case 10:
      py.layout = layout_3_10();
      break;
    case 11:
      py.layout = layout_3_11();
      break;
    case 12:
      py.layout = layout_3_12();
      break;
    case 13:
      if (const void* runtime = real_dlsym(scope, "_PyRuntime")) {
        py.without_gil_reason = layout_3_13(runtime, &py.layout);
      } else {
        py.without_gil_reason =
            "CPython 3.13 does not export _PyRuntime, whose debug offsets locate its frames";
      }
      break;
    default:
      std::snprintf(py.reason_text, sizeof py.reason_text,
                    "the launching thread had released the GIL and Python 3.%d frames cannot be read safely "
                    "without it",
                    py.minor);
      py.without_gil_reason = py.reason_text;
      break;
  }
}

// Fills g_python from the object that has Py_IsInitialized. Returns false where there is none.
bool find_cpython() {
  void* scope = nullptr;
  void* initialized = nullptr;
  if (!find_cpython_scope(&scope, &initialized)) return false;
  Cpython& py = g_python;
  py.is_initialized = reinterpret_cast<int (*)()>(initialized);
  py.minor = cpython_minor(scope);
  if (py.minor < 8) {
    py.failure = "this CPython version is not supported (3.8 or later is)";
    return true;
  }
  if (!resolve_required(scope, py)) {
    py.failure = "CPython was found but lacks a function or type that the capture needs";
    return true;
  }
  resolve_optional(scope, py);
  choose_layout(scope, py);
  return true;
}

// The CPython of the process, or nullptr where there is none (yet). While there is none, the symbols are
// looked for again at most once per kProbeIntervalNs.
const Cpython* find_cached() {
  const Cpython* found = g_found.load(std::memory_order_acquire);
  if (found) return found;
  t_captures_until_clock = kCapturesBetweenClockReads - 1;
  int64_t now = coarse_now_ns();
  if (now < g_next_probe_ns.load(std::memory_order_relaxed)) return nullptr;
  if (g_probing.exchange(true, std::memory_order_acquire)) return nullptr;
  found = g_found.load(std::memory_order_acquire);
  if (!found) {
    if (find_cpython()) {
      found = &g_python;
      g_found.store(found, std::memory_order_release);
    } else {
      g_next_probe_ns.store(now + kProbeIntervalNs, std::memory_order_relaxed);
    }
  }
  g_probing.store(false, std::memory_order_release);
  return found;
}

// ---- text ----

// UTF-8 of one code point; a lone surrogate (a str may hold one, UTF-8 may not) or an invalid value is '?'.
size_t encode_utf8(uint32_t code_point, char* out) {
  if (code_point < 0x80) {
    out[0] = static_cast<char>(code_point);
    return 1;
  }
  if (code_point < 0x800) {
    out[0] = static_cast<char>(0xC0 | (code_point >> 6));
    out[1] = static_cast<char>(0x80 | (code_point & 0x3F));
    return 2;
  }
  if ((code_point >= 0xD800 && code_point <= 0xDFFF) || code_point > 0x10FFFF) {
    out[0] = '?';
    return 1;
  }
  if (code_point < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (code_point >> 12));
    out[1] = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (code_point & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (code_point >> 18));
  out[1] = static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (code_point & 0x3F));
  return 4;
}

bool continuation_byte(char byte) {
  return (static_cast<unsigned char>(byte) & 0xC0) == 0x80;
}

enum class Keep { Head, Tail };

// Copies UTF-8 `text` into `out` (capacity `capacity`, NUL-terminated). Too long a text keeps its head
// ("name...") or its tail ("...path/file.py"), cut between characters.
void copy_text(const char* text, size_t length, char* out, size_t capacity, Keep keep) {
  if (length < capacity) {
    std::memcpy(out, text, length);
    out[length] = '\0';
    return;
  }
  size_t kept = capacity - 4;  // room for "..." and the NUL
  if (keep == Keep::Head) {
    while (kept > 0 && continuation_byte(text[kept])) --kept;
    std::memcpy(out, text, kept);
    std::memcpy(out + kept, "...", 4);
  } else {
    size_t start = length - kept;
    while (start < length && continuation_byte(text[start])) ++start;
    std::memcpy(out, "...", 3);
    std::memcpy(out + 3, text + start, length - start);
    out[3 + length - start] = '\0';
  }
}

// Encodes the code points of a str's canonical data (kind 1, 2 or 4 bytes each) to UTF-8, enough of them
// from the head or the tail to fill `out`, then copies as copy_text does.
void copy_code_points(const unsigned char* data, int kind, int64_t length, char* out, size_t capacity,
                      Keep keep) {
  // One code point past the capacity tells whether the text is longer.
  char buffer[kPythonFileBytes + 4];
  size_t limit = capacity < sizeof buffer - 4 ? capacity : sizeof buffer - 4;
  auto code_point = [&](int64_t index) -> uint32_t {
    if (kind == 1) return data[index];
    if (kind == 2) {
      uint16_t unit;
      std::memcpy(&unit, data + 2 * index, 2);
      return unit;
    }
    uint32_t unit;
    std::memcpy(&unit, data + 4 * index, 4);
    return unit;
  };
  if (keep == Keep::Head) {
    size_t used = 0;
    for (int64_t index = 0; index < length && used < limit; ++index)
      used += encode_utf8(code_point(index), buffer + used);
    copy_text(buffer, used, out, capacity, keep);
  } else {
    // Filled backwards from the end of the buffer.
    size_t used = 0;
    for (int64_t index = length - 1; index >= 0 && used < limit; --index) {
      char encoded[4];
      size_t size = encode_utf8(code_point(index), encoded);
      used += size;
      std::memcpy(buffer + sizeof buffer - used, encoded, size);
    }
    copy_text(buffer + sizeof buffer - used, used, out, capacity, keep);
  }
}

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

template <typename T>
T load(uintptr_t address) {
  T value;
  std::memcpy(&value, reinterpret_cast<const void*>(address), sizeof value);
  return value;
}

// A pointer worth following: not null, not in the first page, in the user half of a 64-bit address
// space, aligned as every CPython object and frame is.
bool plausible(uintptr_t address) {
  return address >= 4096 && address < (uintptr_t{1} << 56) && address % alignof(void*) == 0;
}

bool is_object_of(uintptr_t object, uintptr_t type, const Layout& layout) {
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

constexpr const char* kLayoutMismatch =
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

// ---- a launch's line from the cache (python_site_cache.h) ----

// Mixes `value` into `state`: a multiply-xorshift finalizer, so that a bit changed in either moves about half
// the bits of the result.
uint64_t mix(uint64_t state, uint64_t value) {
  uint64_t x = (state ^ value) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 32;
  x *= 0xD6E8FEB86659FD93ull;
  return x ^ (x >> 32);
}

// A 64-bit hash of `size` bytes, a word at a time: each step a bijection of the state for a given word (an
// xor, an odd multiply, a rotation), so inputs that differ only in their last word never meet, and others
// meet about once in 2^64; `mix` at the end. The texts hashed here are a few dozen bytes, hashed for every
// frame of every launch's walk: this takes about a third of std::hash's instructions for them.
uint64_t hash_bytes(const unsigned char* data, size_t size, uint64_t seed) {
  uint64_t state = seed ^ size * 0xC2B2AE3D27D4EB4Full;
  size_t index = 0;
  for (; index + 8 <= size; index += 8) {
    uint64_t word;
    std::memcpy(&word, data + index, 8);
    state = (state ^ word) * 0x9E3779B97F4A7C15ull;
    state = state << 29 | state >> 35;
  }
  uint64_t last = 0;
  for (size_t shift = 0; index < size; ++index, shift += 8) last |= uint64_t{data[index]} << shift;
  return mix(state, last);
}

// The hash of a str object's text (its canonical data). False where it fails a check.
bool hash_str(const Cpython& py, uintptr_t text, uint64_t* out) {
  StrData str;
  if (!read_str(py, text, &str)) return false;
  *out = hash_bytes(str.data, static_cast<size_t>(str.length) * static_cast<size_t>(str.kind),
                    static_cast<uint64_t>(str.kind));
  return true;
}

// The longest line table hashed (bytes): a frame of a longer function is read in full each time.
constexpr int64_t kMaxHashedLineTable = int64_t{1} << 16;

// The hash of the last file text hashed in one walk, by the str object's address: the frames of a walk keep
// their code objects, and these their file names, alive until it ends, so within one walk the same address is
// the same text. Frames of one module share one file name object; their walks hash it once.
struct FileMemo {
  uintptr_t text = 0;
  uint64_t hash = 0;
};

// 3.8-3.11: what the full read's answer for a frame of the code object at `code` is made of, hashed: the
// texts of its file and function, co_firstlineno and the line table. The line is a function of these and the
// frame's offset (PyCode_Addr2Line reads nothing else), the file and the function are their texts; so a code
// object made where a freed one was hashes apart from it unless it gives the same answers anyway. 64 bits:
// two different contents meet one hash about once in 2^64 pairs. False where a pointer fails a check or the
// line table is longer than kMaxHashedLineTable.
bool content_identity(const Cpython& py, uintptr_t code, FileMemo* memo, uint64_t* out) {
  const Layout& layout = py.layout;
  uintptr_t file_text = load<uintptr_t>(code + layout.code_filename);
  if (file_text != memo->text) {
    if (!hash_str(py, file_text, &memo->hash)) return false;
    memo->text = file_text;
  }
  uint64_t function;
  if (!hash_str(py, load<uintptr_t>(code + layout.code_function), &function)) return false;
  uintptr_t table = load<uintptr_t>(code + layout.code_line_table);
  if (!is_object_of(table, py.bytes_type, layout)) return false;
  int64_t size = load<int64_t>(table + layout.bytes_size);
  if (size < 0 || size > kMaxHashedLineTable) return false;
  uint64_t lines = hash_bytes(reinterpret_cast<const unsigned char*>(table + layout.bytes_data),
                              static_cast<size_t>(size), load<uint32_t>(code + layout.code_first_line));
  *out = mix(mix(memo->hash, function), lines) | 1;  // never 0, the end marker's
  return true;
}

// A frame's two words (python_site_cache.h): what tells its code object from any other that was or will be at
// its address (a code object never changes, so the same one gives the same file, function and line for the
// same position), and where the frame is in it. 3.12+: the code object's address; and co_version, a number no
// other code object of the process has, beside the instruction's offset. 3.8-3.11, where nothing numbers
// code objects: the hash of what the answer is made of (content_identity); and the offset. False where the
// frame cannot be told apart: co_version 0 (once 2^32 were made), a pointer that fails a check, a line table
// too long, or a traced frame (3.8-3.10: its line is f_lineno, in no word); it is then read in full.
bool frame_words(const Cpython& py, const FrameAt& at, FileMemo* memo, uint64_t* code, uint64_t* detail) {
  if (at.traced) return false;
  if (py.layout.code_version >= 0) {
    uint32_t version = load<uint32_t>(at.code + py.layout.code_version);
    if (version == 0) return false;
    *code = at.code;
    *detail = uint64_t{version} << 32 | static_cast<uint32_t>(at.offset);
    return true;
  }
  if (py.layout.code_line_table < 0 || !content_identity(py, at.code, memo, code)) return false;
  *detail = static_cast<uint32_t>(at.offset);
  return true;
}

// A lookup: builds the walk's key a frame at a time and looks each prefix up, stopping at the first that the
// cache knows (python_site_cache.h: why the first is right) or where the key is full. The lookups below give
// it each frame's words.
class KeyLookup {
 public:
  KeyLookup(const PythonSiteCache& cache, PythonWalkKey* key, PythonLaunchSite* out)
      : cache_(cache), key_(key), out_(out) {}
  Step look_up(uint64_t code, uint64_t detail) {
    if (!key_->add_frame(code, detail)) return Step::Stop;
    if (!cache_.find(*key_, out_)) return Step::Next;
    found_ = true;
    return Step::Stop;
  }
  void end() { found_ = key_->add_end() && cache_.find(*key_, out_); }
  bool found() const { return found_; }

 private:
  const PythonSiteCache& cache_;
  PythonWalkKey* key_;
  PythonLaunchSite* out_;
  bool found_ = false;
};

// The lookup by frame_words, for walk_frames.
class SiteLookup : public KeyLookup {
 public:
  SiteLookup(const Cpython& py, const PythonSiteCache& cache, PythonWalkKey* key, PythonLaunchSite* out)
      : KeyLookup(cache, key, out), py_(py) {}
  Step frame(const FrameAt& at) {
    uint64_t code, detail;
    if (!frame_words(py_, at, &file_memo_, &code, &detail)) return Step::Stop;
    return look_up(code, detail);
  }
  void incomplete() {}

 private:
  const Cpython& py_;
  FileMemo file_memo_;
};

// ---- lines keyed by instruction pointers (3.12+) ----
//
// SiteLookup reads three lines of every frame's code object (its type, co_version, _co_firsttraceable): in a
// training loop they are cold at every launch, and they were most of what the line cost
// (docs/performance.md). A frame's instruction pointer alone would do, for it points into the frame's code
// object, which the frame keeps alive: no other live code object holds that address. What it cannot tell is a
// code object from one made later where a freed one was. CPython 3.12+ tells when a code object is freed
// (PyCode_AddWatcher: the watcher is called before it is), so:
// - the first time a line is read in full, the shim asks the main interpreter's main thread to register a
// code
//   watcher (Py_AddPendingCall: it runs there with the GIL at the thread's next check, a few instructions
//   later in a running program; until it has, and in any other interpreter, lines are keyed by co_version);
// - a line keyed by instruction pointers is remembered only after the code objects of its frames are in
//   g_remembered_codes, and only from a full read that passed over no incomplete frame (so its frames are
//   exactly those the lookup keyed);
// - when one of those code objects is about to be freed, the watcher advances g_code_epoch, which is a word
// of
//   every frame: no line remembered before can be found again.
// Why that is enough: a code object made where a remembered one was is made after it was freed, so after the
// epoch moved; a frame that runs it was pushed after that by its thread, holding the GIL, and the thread's
// walk comes after that, so it reads the new epoch. Under an unchanged epoch every remembered frame's code
// object is still alive, so an equal instruction pointer is in the same code object at the same place, and
// the full read would choose the same. Each epoch retires every line, so a program whose remembered code
// objects keep dying goes back to co_version keys after kMaxCodeEpochs; and a program whose remembered code
// objects do not fit in g_remembered_codes, at once. The watcher is a change to the interpreter the program
// can see only by registering eight code watchers of its own (CPython's limit): the shim's then takes the
// place of its eighth, which fails as it would have with eight registered before it.

enum class Watch : int { NotAsked, Asked, Watching, GaveUp };

constexpr int kCodeEventDestroy = 1;        // PY_CODE_EVENT_DESTROY (Include/cpython/code.h, 3.12, 3.13)
constexpr uint64_t kMaxCodeEpochs = 1024;   // epochs before going back to co_version keys
constexpr size_t kRememberedCodes = 16384;  // code objects whose lines may be remembered: 128 KiB at most

std::atomic<Watch> g_watch{Watch::NotAsked};
uintptr_t g_watched_interpreter = 0;  // the main interpreter, written before g_watch becomes Watching
std::atomic<uint64_t> g_code_epoch{0};
// Never freed: watchers and launches can come after static destructors.
AddressSet* const g_remembered_codes = new AddressSet(kRememberedCodes);

// The code watcher: CPython calls it, with the GIL, after a code object is made and before one is freed.
int on_code_event(int event, Object* code) {
  if (event == kCodeEventDestroy && g_remembered_codes->contains(reinterpret_cast<uintptr_t>(code))) {
    g_code_epoch.fetch_add(1, std::memory_order_release);
  }
  return 0;
}

// Registers on_code_event: run by the main interpreter's main thread with the GIL (Py_AddPendingCall). Never
// fails the pending call (that would raise in the program): a failed registration leaves co_version keys.
int watch_code_objects(void*) {
  const Cpython& py = g_python;
  Object* type = nullptr;
  Object* value = nullptr;
  Object* traceback = nullptr;
  py.error_fetch(&type, &value, &traceback);
  int watcher = py.add_code_watcher(on_code_event);
  Object* interpreter = py.main_interpreter();
  py.error_restore(type, value, traceback);  // drops the RuntimeError of a failed registration
  if (watcher < 0 || !interpreter) {
    g_watch.store(Watch::GaveUp, std::memory_order_release);
    return 0;
  }
  g_watched_interpreter = reinterpret_cast<uintptr_t>(interpreter);
  g_watch.store(Watch::Watching, std::memory_order_release);
  return 0;
}

// Asks for the watcher, once (from the full read: not on the path of a line found).
void ask_to_watch_code_objects(const Cpython& py) {
  if (!py.add_pending_call || py.layout.thread_interpreter < 0) return;
  Watch expected = Watch::NotAsked;
  if (!g_watch.compare_exchange_strong(expected, Watch::Asked, std::memory_order_relaxed)) return;
  if (py.add_pending_call(watch_code_objects, nullptr) != 0)
    g_watch.store(Watch::GaveUp, std::memory_order_relaxed);
}

// Whether lines are keyed by instruction pointers in the watched interpreter, and under which epoch (*epoch).
bool watching(uint64_t* epoch) {
  if (g_watch.load(std::memory_order_acquire) != Watch::Watching) return false;
  *epoch = g_code_epoch.load(std::memory_order_acquire);
  return *epoch < kMaxCodeEpochs;
}

// Whether this thread's line is keyed by instruction pointers, and under which epoch (*epoch).
bool keyed_by_instruction_pointers(const Cpython& py, uintptr_t thread, uint64_t* epoch) {
  return watching(epoch) && plausible(thread) &&
         load<uintptr_t>(thread + py.layout.thread_interpreter) == g_watched_interpreter;
}

// Whether a line keyed by instruction pointers may be remembered after the full read that gave `offered`: no
// incomplete frame passed over, and every code object in g_remembered_codes (where one does not fit, lines go
// back to co_version keys).
bool remember_codes(const OfferedCodes& offered) {
  if (offered.incomplete) return false;
  for (size_t index = 0; index < offered.count; ++index) {
    if (!g_remembered_codes->insert(offered.codes[index])) {
      g_watch.store(Watch::GaveUp, std::memory_order_relaxed);
      return false;
    }
  }
  return true;
}

// The lookup keyed by instruction pointers: a frame's words are its instruction pointer and the epoch with
// the frame's owner (a generator's frame is never incomplete, another's may be: python_site_cache.h's words
// must determine what the full read takes from the frame).
class InstructionLookup : public KeyLookup {
 public:
  InstructionLookup(const PythonSiteCache& cache, uint64_t epoch, PythonWalkKey* key, PythonLaunchSite* out)
      : KeyLookup(cache, key, out), detail_(epoch << 8) {}
  Step frame(uintptr_t instruction, int owner) {
    if (instruction == 0) return Step::Stop;  // 0 is the key's end marker
    return look_up(instruction, detail_ | static_cast<uint8_t>(owner));
  }

 private:
  uint64_t detail_;
};

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

void capture_with_gil(const Cpython& py, PythonStack* out) {
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

// Where a capture reads: CPython, found and usable; whether this thread holds the GIL; its thread state (the
// current one where it holds the GIL: 3.12+ keeps that per thread).
struct Reading {
  const Cpython* py = nullptr;
  bool held = false;
  uintptr_t thread = 0;
};

// Finds where the frames are read from. Returns false, with out->status (and reason) set, where there are
// none to read: no CPython, finalizing, no thread state, or without the GIL a version whose frames are not
// read in place.
bool begin_reading(PythonStack* out, Reading* reading) {
  const Cpython* found = find_cached();
  if (!found || !found->is_initialized()) {
    out->status = PythonStatus::NoPython;
    return false;
  }
  const Cpython& py = *found;
  if (py.failure) {
    out->status = PythonStatus::Unavailable;
    out->reason = py.failure;
    return false;
  }
  if (py.is_finalizing && py.is_finalizing()) {
    out->status = PythonStatus::Unavailable;
    out->reason = "CPython is finalizing: its thread states may be freed at any time";
    return false;
  }
  // Whether this thread holds the GIL: the current thread state is its own. 3.12+ keeps the current
  // thread state per thread (null once released), so one that is there is this thread's, and its own
  // (PyGILState's, a thread-specific lookup) is not needed; 3.8-3.11 keep one for the process (the GIL
  // holder's), hence the comparison with this thread's.
  Object* current = py.current_thread_state ? py.current_thread_state() : nullptr;
  Object* own = current && py.minor >= 12 ? current : py.this_thread_state();
  bool held;
  if (py.current_thread_state) {
    held = current && (py.minor >= 12 || current == own);
  } else {
    held = py.gil_state_check() == 1 && own;
  }
  reading->py = found;
  reading->held = held;
  reading->thread = reinterpret_cast<uintptr_t>(held && current ? current : own);
  if (held) return true;
  if (!own) {
    out->status = PythonStatus::NoThreadState;
    return false;
  }
  if (py.layout.walker == Walker::None) {
    out->status = PythonStatus::Unavailable;
    out->reason = py.without_gil_reason;
    return false;
  }
  return true;
}

// Reads the frames of reading.thread in place (the thread's own, which cannot change while it runs C code);
// the code objects of the frames offered in `offered`, where given.
void read_in_place(const Reading& reading, const char* method, PythonStack* out,
                   OfferedCodes* offered = nullptr) {
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

void capture_frames(PythonStack* out) {
  Reading reading;
  if (!begin_reading(out, &reading)) return;
  if (reading.held) {
    capture_with_gil(*reading.py, out);
  } else {
    read_in_place(reading, reading.py->layout.method, out);
  }
}

constexpr const char* kReadInPlaceWithGil =
    "read in place with the GIL held (the thread's own frames, as without it)";

// The launch's line: looked up by the words of its frames, read in full where the cache does not know them.
// With the GIL held too, where the version's layout is known: the thread's frames are as frozen as without
// it (and no other thread runs Python), and the key must come from the same walk as the full read it stands
// for. Another version (no layout) with the GIL: the public C API, nothing remembered.
void capture_site(PythonSiteCache& cache, PythonStack* scratch, PythonLaunchSite* out) {
  Reading reading;
  if (!begin_reading(scratch, &reading)) {
    out->status = scratch->status;
    return;
  }
  const Cpython& py = *reading.py;
  if (py.layout.walker == Walker::None) {
    g_read_in_full.fetch_add(1, std::memory_order_relaxed);
    capture_with_gil(py, scratch);
    *out = cache.keep(*scratch, nullptr);
    return;
  }
  // A walk that fails a check is read in full, which fails the same check: Unavailable with its reason.
  PythonWalkKey key;
  uint64_t epoch = 0;
  bool by_pointers = keyed_by_instruction_pointers(py, reading.thread, &epoch);
  if (by_pointers) {
    InstructionLookup lookup(cache, epoch, &key, out);
    if (!walk_instruction_pointers(py, reading.thread, lookup) && lookup.found()) return;
  } else {
    SiteLookup lookup(py, cache, &key, out);
    if (!walk_frames(py, reading.thread, lookup) && lookup.found()) return;
  }
  g_read_in_full.fetch_add(1, std::memory_order_relaxed);
  ask_to_watch_code_objects(py);
  OfferedCodes offered;
  read_in_place(reading, reading.held ? kReadInPlaceWithGil : py.layout.method, scratch,
                by_pointers ? &offered : nullptr);
  *out = cache.keep(*scratch, !by_pointers || remember_codes(offered) ? &key : nullptr);
}

// Sets what every capture starts from.
void reset_capture(PythonStack* out) {
  out->status = PythonStatus::NotCaptured;
  out->count = 0;
  out->gil_held = false;
  out->truncated = false;
  out->skipped = out->skipped_at = 0;
  out->method = nullptr;
  out->reason = nullptr;
}

// Whether a capture is already under way on this thread (out says so): the GIL-held path can run a garbage
// collection (it creates frame objects), whose finalizers may launch kernels.
bool capture_re_entered(PythonStack* out) {
  if (!t_capturing) return false;
  out->status = PythonStatus::Unavailable;
  out->reason = "the capture re-entered itself on this thread (a finalizer ran during a capture)";
  return true;
}

// The rest, out of line: the NoPython answer stays a few instructions.
[[gnu::noinline]] void capture(PythonStack* out) {
  t_capturing = true;
  capture_frames(out);
  t_capturing = false;
}

[[gnu::noinline]] void capture(PythonSiteCache& cache, PythonStack* scratch, PythonLaunchSite* out) {
  t_capturing = true;
  capture_site(cache, scratch, out);
  t_capturing = false;
}

}  // namespace

bool no_python_yet() {
  if (g_found.load(std::memory_order_acquire) || t_captures_until_clock <= 0) return false;
  --t_captures_until_clock;
  return true;
}

void read_python_stack(PythonStack* out) {
  reset_capture(out);
  if (no_python_yet()) {
    out->status = PythonStatus::NoPython;
    return;
  }
  if (!capture_re_entered(out)) capture(out);
}

uint64_t python_lines_read_in_full() {
  return g_read_in_full.load(std::memory_order_relaxed);
}

bool python_lines_keyed_by_instruction_pointers() {
  uint64_t epoch;
  return watching(&epoch);
}

void read_python_site(PythonSiteCache& cache, PythonStack* scratch, PythonLaunchSite* out) {
  *out = PythonLaunchSite{};
  // Before the scratch is written: a C++ program still asks here for the launches its driver wrapper did not
  // answer (LaunchRequest::no_python), e.g. with --trace.
  if (no_python_yet()) {
    out->status = PythonStatus::NoPython;
    return;
  }
  reset_capture(scratch);
  if (capture_re_entered(scratch)) {
    out->status = scratch->status;
    return;
  }
  capture(cache, scratch, out);
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
