// The engine's launches, calls and first error in the trace's terms: functions over values, so that the
// engine hands the tracer what it already knows and holds none of the trace's state but the tracer itself.
#pragma once

#include <cstdint>

#include "records.h"
#include "trace/trace_recorder.h"
#include "trace/tracer.h"

namespace blockrun {
struct Finding;
}

namespace blockrun::trace {

// A launch that ended: its slice, with what its outcome was (`launch_result` what the launch returned,
// `sync_result` its blocking synchronize's, where `outcome` is Synchronized).
TraceEntry launch_entry(const Launch& launch, ErrorCode launch_result, BlockOutcome outcome,
                        ErrorCode sync_result);
// A call that is no launch unit (a synchronize, a library call around its kernels).
TraceEntry call_entry(EntryKind kind, const char* api, CallSpan span, StreamId stream);

// Where the first error surfaced, on the steady clock: the call that returned it.
struct SurfacingCall {
  uint64_t began_ns = 0, returned_ns = 0;
  bool has_slice = false;  // the trace shows that call as a slice of its own (a launch, a synchronize)
};
// The first error as the trace marks it.
ErrorFacts error_facts(const Finding& finding, const SurfacingCall& call);

}  // namespace blockrun::trace
// SPDX-License-Identifier: MIT
