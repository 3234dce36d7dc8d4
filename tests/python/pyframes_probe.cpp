// The probe library that the Python tests load with ctypes: it calls the shim's read_python_stack from
// inside CPython, the way the shim does on a launch, and hands the result back as JSON. Loaded with
// ctypes.PyDLL the calls keep the GIL; with ctypes.CDLL they release it, as PyTorch does around its
// launches. It links no libpython: like the shim, it finds CPython at run time.
#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "probe_format.h"
#include "python_frames.h"

namespace {

int write_json(const std::string& json, char* buffer, size_t size) {
  if (json.size() + 1 > size) return -1;
  std::memcpy(buffer, json.c_str(), json.size() + 1);
  return static_cast<int>(json.size());
}

int write_result(const blockrun::PythonStack& stack, char* buffer, size_t size) {
  return write_json(blockrun::probe::to_json(stack), buffer, size);
}

// The probe's own site table and cache, as the engine has them with breadcrumbs.
struct Sites {
  blockrun::PythonSiteTable table{4096};
  blockrun::PythonSiteCache cache{table};
};

Sites& sites() {
  static Sites* sites = new Sites;  // never destroyed: threads may still use it at exit
  return *sites;
}

}  // namespace

extern "C" {

// The calling thread's frames, as JSON in `buffer`. Returns the JSON's length, or -1 if it does not fit.
__attribute__((visibility("default"))) int blockrun_probe_capture(char* buffer, size_t size) {
  blockrun::PythonStack stack;
  blockrun::shim::read_python_stack(&stack);
  return write_result(stack, buffer, size);
}

// The frames of a C++ thread that the probe starts: it has no Python thread state.
__attribute__((visibility("default"))) int blockrun_probe_capture_in_native_thread(char* buffer,
                                                                                   size_t size) {
  blockrun::PythonStack stack;
  std::thread worker([&stack] { blockrun::shim::read_python_stack(&stack); });
  worker.join();
  return write_result(stack, buffer, size);
}

// With the GIL held (ctypes.PyDLL): sets a Python RuntimeError, captures, and returns with the error
// still set, so that ctypes raises it: the capture must neither clear nor replace a pending exception.
__attribute__((visibility("default"))) int blockrun_probe_capture_with_error_pending(char* buffer,
                                                                                     size_t size) {
  using SetString = void (*)(void*, const char*);
  auto set_string = reinterpret_cast<SetString>(dlsym(RTLD_DEFAULT, "PyErr_SetString"));
  auto* runtime_error = static_cast<void**>(dlsym(RTLD_DEFAULT, "PyExc_RuntimeError"));
  if (!set_string || !runtime_error) return -1;
  set_string(*runtime_error, "set before the capture");
  return blockrun_probe_capture(buffer, size);
}

// The calling thread's Python line as breadcrumbs keep it (read_python_site: its frames, whether it came from
// the cache), then its frames read in full (read_python_stack) from the same call, as JSON in `buffer`:
// {"site": ..., "stack": ...}. Returns the JSON's length, or -1 if it does not fit.
__attribute__((visibility("default"))) int blockrun_probe_site(char* buffer, size_t size) {
  blockrun::PythonStack scratch;
  blockrun::PythonLaunchSite site;
  blockrun::shim::read_python_site(sites().cache, &scratch, &site);
  blockrun::PythonStack stack;
  blockrun::shim::read_python_stack(&stack);
  return write_json("{\"site\": " + blockrun::probe::to_json(site, sites().table) +
                        ", \"stack\": " + blockrun::probe::to_json(stack) + "}",
                    buffer, size);
}

// Whether read_python_site keys lines by instruction pointers (python_frames.h).
__attribute__((visibility("default"))) int blockrun_probe_keyed_by_instruction_pointers() {
  return blockrun::shim::python_lines_keyed_by_instruction_pointers() ? 1 : 0;
}

// Nanoseconds per read_python_site call, over `iterations` calls from the calling thread (the first remembers
// the line: the others find it).
__attribute__((visibility("default"))) double blockrun_probe_site_benchmark(int iterations) {
  blockrun::PythonStack scratch;
  blockrun::PythonLaunchSite site;
  blockrun::shim::read_python_site(sites().cache, &scratch, &site);
  auto start = std::chrono::steady_clock::now();
  for (int iteration = 0; iteration < iterations; ++iteration)
    blockrun::shim::read_python_site(sites().cache, &scratch, &site);
  std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  return iterations > 0 ? elapsed.count() / iterations : 0.0;
}

// Nanoseconds per read_python_stack call, over `iterations` calls from the calling thread.
__attribute__((visibility("default"))) double blockrun_probe_benchmark(int iterations) {
  blockrun::PythonStack stack;
  blockrun::shim::read_python_stack(&stack);  // the first call resolves CPython's symbols
  auto start = std::chrono::steady_clock::now();
  for (int iteration = 0; iteration < iterations; ++iteration) blockrun::shim::read_python_stack(&stack);
  std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  return iterations > 0 ? elapsed.count() / iterations : 0.0;
}

}  // extern "C"
// SPDX-License-Identifier: MIT
