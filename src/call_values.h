// The values a CUDA call is told in, before any launch is recorded: the layer a hooked entry point belongs
// to, its result code, a launch's geometry and stream, a library call's arguments, when a call began and
// returned, how a blocking synchronize went and what it measured. Plain data, apart from records.h (what the
// engine keeps of launches), so that a file that only passes a call's values on (the shim's lookups, its
// thread layers, the trace's rings, the fixed-size texts) reads these and not the records, the policy and the
// call stack.
#pragma once

#include <cstdint>

namespace blockrun {

// The layer of the CUDA stack a hooked entry point belongs to (its library): where its real function is
// found, and whose numbering its result codes use. (A launch's `family`, in the policy, is how the program
// reached it.)
enum class Layer : uint8_t { Runtime, Driver, Cublas, CublasLt };

const char* layer_name(Layer layer);

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

// A result code together with the layer whose numbering it uses.
struct ErrorCode {
  Layer layer = Layer::Runtime;
  int code = 0;
  bool ok() const { return code == 0; }
};

// The main arguments of a library call that is recorded as one launch unit (cuBLAS GEMMs).
struct LibraryCall {
  char transa = 0, transb = 0;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 0;  // 0 where the call has no batch
};

// Where a launch went. The per-thread default stream gets a key of its own per host thread, since
// the same handle names a different stream in every thread.
struct StreamId {
  const void* handle = nullptr;
  uint32_t per_thread_owner = 0;  // host thread number for the per-thread default stream, else 0
  bool operator==(const StreamId& other) const {
    return handle == other.handle && per_thread_owner == other.per_thread_owner;
  }
};

// When a host call began and returned, on the steady clock (util/clock.h), for the trace and the
// report's times; 0 where not measured (the clock is read only where --trace or --log-launches wants it).
struct CallSpan {
  uint64_t began_ns = 0, returned_ns = 0;
  bool own_slice = false;  // the trace shows the call as a slice of its own (a synchronize)
};

// How long a blocked launch took, measured by the shim: GPU time from events recorded around the
// kernel (-1 where none could be recorded, e.g. on a capturing stream) and wall time from just before
// the launch to the end of the blocking synchronize.
struct BlockTiming {
  int64_t gpu_ns = -1;
  uint64_t wall_ns = 0;
  uint64_t start_ns = 0;         // steady clock at the start; 0: from the synchronize only
  bool events_recorded = false;  // the start event was recorded (the shim's)
};

// How a blocking synchronize after a launch went.
enum class BlockOutcome {
  NotBlocked,      // the policy did not ask, or the launch itself failed
  Synchronized,    // the stream was synchronized; see the result
  SkippedCapture,  // the stream was capturing: synchronizing would invalidate the capture
  SkippedUnknown,  // could not tell whether the stream captures (error or missing function)
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
