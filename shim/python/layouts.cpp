// The layouts of CPython's structures, version by version: where a thread's frames are, and what is in them,
// read without the GIL (3.8-3.12 from the headers, 3.13 from the offsets CPython publishes for debuggers),
// and which one this process's CPython uses (choose_layout).
#include <cstdio>
#include <cstring>

#include "internal.h"
#include "real.h"

namespace blockrun::shim::python {

namespace {

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

}  // namespace

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

}  // namespace blockrun::shim::python
// SPDX-License-Identifier: MIT
