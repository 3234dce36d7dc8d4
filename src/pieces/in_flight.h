// The fatal-signal record's launches (BreadcrumbSlots::in_flight_now, Engine::in_flight_now): plain values,
// apart from the breadcrumb slots, for the signal handler's files.
#pragma once

#include <cstdint>

#include "call_values.h"

namespace blockrun {

struct KernelInfo;

// A launch not known to have completed, as the fatal-signal record lists it.
struct InFlight {
  uint64_t sequence;
  const KernelInfo* kernel;  // nullptr for a library call or graph recorded as a unit
  StreamId stream;
  uint64_t kernel_ordinal;  // and its configuration, for the log's line (launch_configuration's form)
  Dim3 grid, block;
  uint64_t shared_memory;
  bool unfinished;  // known not to have completed; else only not known to have completed
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
