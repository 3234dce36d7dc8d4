// CPython's functions, found once: the process's CPython, looked for again at most once a second while there
// is none (no_python_yet, the launch path's answer before any is found); and where a read of a thread's
// frames starts (begin_reading: CPython usable, whether the thread holds the GIL, its thread state).
#include <dlfcn.h>
#include <link.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "internal.h"
#include "callsites/loaded_objects.h"
#include "python_frames.h"
#include "real.h"

namespace blockrun::shim::python {

Cpython g_python;

namespace {

// How often to look for CPython again while it is not in the process, and how many of a thread's
// reads go by between two reads of the clock (a clock read costs about as much as the rest of such a
// read together).
constexpr int64_t kProbeIntervalNs = 1000000000;
constexpr int kReadsBetweenClockReads = 8;

std::atomic<const Cpython*> g_found{nullptr};  // non-null once CPython was found (never reset)
std::atomic<int64_t> g_next_probe_ns{0};       // when to look for CPython again
std::atomic<bool> g_probing{false};            // one thread looks at a time; the others answer NoPython
thread_local int t_reads_until_clock = 0;      // this thread's reads before it reads the clock again

int64_t coarse_now_ns() {
  // CLOCK_MONOTONIC_COARSE is read from the vDSO without a system call: a few ns.
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

// Finds a libpython3.* loaded privately (RTLD_LOCAL, an embedding program): not in the global scope, so
// not found through RTLD_DEFAULT. Its handle, or nullptr.
void* find_libpython() {
  // Opened once the loader's walk is over (loaded_object_paths; never inside it: a deadlock with a dlopen
  // elsewhere).
  for (const std::string& path : loaded_object_paths("libpython3")) {
    // RTLD_NOLOAD: only a handle to what is there. RTLD_NODELETE and no dlclose: the pointers kept below
    // stay valid for the life of the process.
    void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    if (!handle) continue;
    if (real_dlsym(handle, "Py_IsInitialized")) return handle;
    dlclose(handle);
  }
  return nullptr;
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

// The functions and types the reads need. Returns false where one is missing.
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
  t_reads_until_clock = kReadsBetweenClockReads - 1;
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

}  // namespace

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

}  // namespace blockrun::shim::python

namespace blockrun::shim {

using namespace python;

bool no_python_yet() {
  if (g_found.load(std::memory_order_acquire) || t_reads_until_clock <= 0) return false;
  --t_reads_until_clock;
  return true;
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
