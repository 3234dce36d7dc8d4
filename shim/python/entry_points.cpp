// The entry points of python_frames.h (no_python_yet is cpython.cpp's, beside the state it reads): each
// starts a read from a clean PythonStack, refuses one that re-entered itself on its thread, and does the rest
// out of line (a full read of the stack, or a launch's line from the cache).
#include <atomic>
#include <cstdint>

#include "internal.h"
#include "python_frames.h"

namespace blockrun::shim::python {

namespace {

thread_local bool t_reading = false;  // a read re-entered on its own thread

void read_stack(PythonStack* out) {
  Reading reading;
  if (!begin_reading(out, &reading)) return;
  if (reading.held) {
    read_with_gil(*reading.py, out);
  } else {
    read_in_place(reading, reading.py->layout.method, out);
  }
}

// Sets what every read starts from.
void reset_stack(PythonStack* out) {
  out->status = PythonStatus::NotCaptured;
  out->count = 0;
  out->gil_held = false;
  out->truncated = false;
  out->skipped = out->skipped_at = 0;
  out->method = nullptr;
  out->reason = nullptr;
}

// Whether a read is already under way on this thread (out says so): the GIL-held path can run a garbage
// collection (it creates frame objects), whose finalizers may launch kernels.
bool read_re_entered(PythonStack* out) {
  if (!t_reading) return false;
  out->status = PythonStatus::Unavailable;
  out->reason = "the capture re-entered itself on this thread (a finalizer ran during a capture)";
  return true;
}

// The rest, out of line: the NoPython answer stays a few instructions.
[[gnu::noinline]] void read_out_of_line(PythonStack* out) {
  t_reading = true;
  read_stack(out);
  t_reading = false;
}

[[gnu::noinline]] void read_out_of_line(PythonSiteCache& cache, PythonStack* scratch, PythonLaunchSite* out) {
  t_reading = true;
  read_site(cache, scratch, out);
  t_reading = false;
}

}  // namespace
}  // namespace blockrun::shim::python

namespace blockrun::shim {

using namespace python;

void read_python_stack(PythonStack* out) {
  reset_stack(out);
  if (no_python_yet()) {
    out->status = PythonStatus::NoPython;
    return;
  }
  if (!read_re_entered(out)) read_out_of_line(out);
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
  reset_stack(scratch);
  if (read_re_entered(scratch)) {
    out->status = scratch->status;
    return;
  }
  read_out_of_line(cache, scratch, out);
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
