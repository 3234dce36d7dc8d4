// A program without Python, as most CUDA programs are: read_python_stack must answer NoPython in a few ns.
// Given a libpython and its home, it then embeds CPython late, privately (dlopen RTLD_LOCAL, so not in
// the global symbol scope) and checks that the capture finds it within its once-a-second re-check, reads
// the frames of Python code calling into C with and without the GIL, and answers NoPython again once
// the interpreter is finalized.
//   pyframes_embed                       the NoPython checks only
//   pyframes_embed LIBPYTHON PYTHONHOME  and the embedded interpreter
// Prints what it checks; exits 1 on the first failure.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "probe_format.h"
#include "python_frames.h"

namespace {

using blockrun::PythonStack;
using blockrun::PythonStatus;
using blockrun::shim::read_python_stack;

int passes = 0;
int failures = 0;

void check(bool condition, const char* what, const PythonStack* stack = nullptr) {
  std::printf("%s: %s\n", condition ? "ok" : "FAILED", what);
  if (!condition && stack) std::printf("  got %s\n", blockrun::probe::to_json(*stack).c_str());
  if (!condition) ++failures;
  if (condition) ++passes;
}

bool frame_is(const PythonStack& stack, size_t index, const char* file, int line, const char* function) {
  if (index >= stack.count) return false;
  const auto& frame = stack.frames[index];
  return std::strcmp(frame.file, file) == 0 && frame.line == line &&
         std::strcmp(frame.function, function) == 0;
}

// CPython's API, as the embedding needs it (no Python.h).
struct Embedded {
  void (*initialize)(int);
  int (*finalize)();
  void* (*add_module)(const char*);
  void* (*module_dict)(void*);
  int (*set_item)(void*, const char*, void*);
  void* (*new_function)(void*, void*, void*);
  int (*run)(const char*);
  void* (*save_thread)();
  void (*restore_thread)(void*);
  void (*increment)(void*);
  void* none;
};
Embedded python;

// What the Python code's call into C captured.
PythonStack held_capture;
PythonStack released_capture;

// A METH_NOARGS function, called from Python: captures with the GIL, then with it released, as a
// PyTorch operator does.
void* probe_function(void*, void*) {
  read_python_stack(&held_capture);
  void* thread_state = python.save_thread();
  read_python_stack(&released_capture);
  python.restore_thread(thread_state);
  python.increment(python.none);
  return python.none;
}

struct MethodDefinition {  // PyMethodDef
  const char* name;
  void* (*function)(void*, void*);
  int flags;
  const char* doc;
};
MethodDefinition probe_definition{"probe", probe_function, 0x0004 /* METH_NOARGS */, nullptr};

template <typename Function>
bool find(void* library, const char* name, Function* function) {
  *function = reinterpret_cast<Function>(dlsym(library, name));
  if (!*function) std::printf("FAILED: %s not found in the libpython given\n", name);
  return *function != nullptr;
}

void check_without_python() {
  PythonStack stack;
  read_python_stack(&stack);  // the first call looks for CPython
  check(stack.status == PythonStatus::NoPython, "no CPython in the process: NoPython", &stack);
  constexpr int kCalls = 1000000;
  bool all = true;
  auto start = std::chrono::steady_clock::now();
  for (int call = 0; call < kCalls; ++call) {
    read_python_stack(&stack);
    all = all && stack.status == PythonStatus::NoPython;
  }
  std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  double per_call = elapsed.count() / kCalls;
  std::printf("no CPython: %.1f ns per capture (%d captures)\n", per_call, kCalls);
  check(all, "every capture without CPython: NoPython");
  // A few ns; the bound only catches a look-up per call (a dlsym miss costs microseconds), with room for
  // a loaded CI machine.
  check(per_call < 1000, "a capture without CPython costs well under a microsecond");
}

void check_embedded(const char* library_path, const char* home) {
  void* library = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    std::printf("FAILED: cannot load %s: %s\n", library_path, dlerror());
    ++failures;
    return;
  }
  void** none = nullptr;
  if (!find(library, "Py_InitializeEx", &python.initialize) ||
      !find(library, "Py_FinalizeEx", &python.finalize) ||
      !find(library, "PyImport_AddModule", &python.add_module) ||
      !find(library, "PyModule_GetDict", &python.module_dict) ||
      !find(library, "PyDict_SetItemString", &python.set_item) ||
      !find(library, "PyCFunction_NewEx", &python.new_function) ||
      !find(library, "PyRun_SimpleString", &python.run) ||
      !find(library, "PyEval_SaveThread", &python.save_thread) ||
      !find(library, "PyEval_RestoreThread", &python.restore_thread) ||
      !find(library, "Py_IncRef", &python.increment) || !find(library, "_Py_NoneStruct", &none)) {
    ++failures;
    return;
  }
  python.none = none;
  setenv("PYTHONHOME", home, 1);
  python.initialize(0);

  // Found by the next re-check, at most about a second after the last look.
  auto loaded = std::chrono::steady_clock::now();
  PythonStack stack;
  read_python_stack(&stack);
  while (stack.status == PythonStatus::NoPython &&
         std::chrono::steady_clock::now() - loaded < std::chrono::seconds(3)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    read_python_stack(&stack);
  }
  std::chrono::duration<double> waited = std::chrono::steady_clock::now() - loaded;
  std::printf("CPython loaded late (RTLD_LOCAL) found after %.2f s\n", waited.count());
  check(stack.status == PythonStatus::Captured && stack.count == 0 && stack.gil_held,
        "CPython loaded late and privately is found; the main thread holds the GIL, no Python frames",
        &stack);

  PythonStack worker_stack;
  std::thread worker([&worker_stack] { read_python_stack(&worker_stack); });
  worker.join();
  check(worker_stack.status == PythonStatus::NoThreadState, "a C++ thread: NoThreadState", &worker_stack);

  void* main_dict = python.module_dict(python.add_module("__main__"));
  void* function = python.new_function(&probe_definition, nullptr, nullptr);
  check(function && python.set_item(main_dict, "probe", function) == 0, "probe() defined in __main__");
  check(python.run("def outer():\n"
                   "    probe()\n"
                   "outer()\n") == 0,
        "the Python code ran");
  check(held_capture.status == PythonStatus::Captured && held_capture.gil_held && held_capture.count == 2 &&
            frame_is(held_capture, 0, "<string>", 2, "outer") &&
            frame_is(held_capture, 1, "<string>", 3, "<module>"),
        "GIL held: <string>:2 in outer, <string>:3 in <module>", &held_capture);
  check(released_capture.status == PythonStatus::Captured && !released_capture.gil_held &&
            released_capture.count == 2 && frame_is(released_capture, 0, "<string>", 2, "outer") &&
            frame_is(released_capture, 1, "<string>", 3, "<module>"),
        "GIL released: <string>:2 in outer, <string>:3 in <module>", &released_capture);
  std::printf("embedded: %s\n", blockrun::probe::to_json(released_capture).c_str());

  check(python.finalize() == 0, "the interpreter finalized");
  read_python_stack(&stack);
  check(stack.status == PythonStatus::NoPython, "after Py_FinalizeEx: NoPython", &stack);
}

}  // namespace

int main(int argc, char** argv) {
  check_without_python();
  if (argc == 3) check_embedded(argv[1], argv[2]);
  std::printf("%d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
// SPDX-License-Identifier: MIT
