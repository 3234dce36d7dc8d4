// What layers of CUDA a thread is inside of: the state the shim keeps per thread (ThreadContext) and the
// rules of cuda/launch_layers.h read. Apart from those rules, so that every file of the shim, which holds a
// thread's context, reads only these values, not the records the rules fill.
#pragma once

#include <cstdint>

#include "call_values.h"

namespace blockrun {

struct Launch;

// What layers the calling thread is inside of (set by the shim around a runtime or library wrapper's real
// call).
struct ThreadLayers {
  // A runtime launch: its entry point, the record the driver wrapper fills for it, whether the driver wrapper
  // has recorded it, and the return address into the code that called the runtime.
  const char* runtime_api = nullptr;
  Launch* runtime_launch = nullptr;
  bool driver_recorded = false;
  uintptr_t runtime_caller = 0;
  // A library call (the outermost one): its entry point, its arguments, how deep the thread is inside library
  // entry points, the kernels the driver saw during it, and the return address into the code that called it.
  const char* library_api = nullptr;
  LibraryCall library;
  int library_depth = 0;
  uint64_t library_kernels = 0;
  uintptr_t library_caller = 0;
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
