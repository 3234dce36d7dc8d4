// Which layer owns a launch. One launch crosses several layers (a runtime launch continues into the driver, a
// cuBLAS call launches its kernels through the driver) and is recorded once: these are the rules for who
// records it, under which family and names, called from where, and when a library call is a launch unit of
// its own. The shim keeps a ThreadLayers per thread, sets it around its wrappers' real calls, and asks these
// functions.
#pragma once

#include <cstdint>

#include "config/policy.h"
#include "cuda/thread_layers.h"
#include "records.h"

namespace blockrun {

// Who owns a launch: what its record is filled with (LaunchRequest's family, api, driver_api, caller).
struct LaunchOwner {
  LaunchFamily family = LaunchFamily::Driver;
  const char* api = nullptr;         // the entry point the program called
  const char* driver_api = nullptr;  // the driver entry point it continued into, where different
  uintptr_t caller = 0;              // return address into the code that called CUDA
  // The enclosing runtime launch's: the driver wrapper records into ThreadLayers::runtime_launch, and the
  // runtime wrapper blocks and finishes it.
  bool into_runtime_launch = false;
  // It belongs to the enclosing library call: recorded with ThreadLayers' library_api and library (a driver
  // launch inside it is one of its kernels, counted in library_kernels).
  bool in_library_call = false;
};

// A driver launch of entry point `driver_api`, whose exported wrapper was called from `own_caller`. Inside a
// runtime launch the driver has not recorded yet, it is that runtime launch (named by the runtime's entry
// point, called from where the runtime was); inside a library call, one of its kernels (family Cublas, called
// from where the library was, unless it is a runtime launch's); otherwise the driver's own. Inline: it runs
// on every driver launch.
inline LaunchOwner driver_launch_owner(const ThreadLayers& layers, const char* driver_api,
                                       uintptr_t own_caller) {
  LaunchOwner owner;
  owner.into_runtime_launch = layers.runtime_api && layers.runtime_launch && !layers.driver_recorded;
  owner.in_library_call = layers.library_depth > 0;
  owner.family = owner.in_library_call       ? LaunchFamily::Cublas
                 : owner.into_runtime_launch ? LaunchFamily::Runtime
                                             : LaunchFamily::Driver;
  owner.api = owner.into_runtime_launch ? layers.runtime_api : driver_api;
  owner.driver_api = owner.into_runtime_launch ? driver_api : nullptr;
  owner.caller = owner.into_runtime_launch ? layers.runtime_caller
                 : owner.in_library_call   ? layers.library_caller
                                           : own_caller;
  return owner;
}

// Writes who owns the launch into `request`: its family, api, driver_api, caller and, where it belongs to a
// library call, that call's library_api and arguments from `layers`.
inline void set_owner(const LaunchOwner& owner, const ThreadLayers& layers, LaunchRequest* request) {
  request->family = owner.family;
  request->api = owner.api;
  request->driver_api = owner.driver_api;
  request->caller = owner.caller;
  if (owner.in_library_call) {
    request->library_api = layers.library_api;
    request->library = layers.library;
  }
}

// A runtime launch the driver did not record (`inside`: the layers during its real call): the runtime's own,
// called from where the runtime was. Inline: it runs on every runtime launch.
inline LaunchOwner runtime_launch_owner(const ThreadLayers& inside) {
  LaunchOwner owner;
  owner.family = LaunchFamily::Runtime;
  owner.api = inside.runtime_api;
  owner.caller = inside.runtime_caller;
  return owner;
}

// A library call recorded as a unit of its own (`inside`: the layers during its real call): family Cublas,
// named by the library's entry point, called from where the library was.
LaunchOwner library_unit_owner(const ThreadLayers& inside);

// What a library call is, once it has run (library_call_record).
enum class LibraryCallRecord : uint8_t {
  ErrorOnly,  // its kernels were recorded by the driver wrapper: only its error is observed
  Unit,       // recorded as a launch unit of its own (and blocked as a whole where the policy says)
};

// Where a rule names the call (`unit`, Engine::decide_library_unit, is not Run and named) or the driver saw
// none of its kernels (`kernels_seen`), the call is a unit of its own; otherwise only its error is observed.
LibraryCallRecord library_call_record(const Decision& unit, uint64_t kernels_seen);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
