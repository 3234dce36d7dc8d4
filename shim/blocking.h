// Making a launch blocking: synchronize the launch's stream, never a capturing one.
#pragma once

#include "shim.h"
#include "util/clock.h"

namespace blockrun::shim {

struct BlockResult {
  BlockOutcome outcome = BlockOutcome::NotBlocked;
  ErrorCode result;
  const char* api = nullptr;  // the call whose result `result` is
};

// Synchronizes `stream` (stream 0 with per_thread means the calling thread's per-thread default
// stream) through the runtime (layer Runtime) or the driver (otherwise, falling back to the
// runtime where the driver cannot be found). Once any stream capture has begun in the process, checks
// first that the stream is not capturing, and switches the calling thread's capture mode to relaxed
// around the synchronize, so that a capture running in another thread is not invalidated; before the
// first capture neither is needed (see note_capture_begins).
// With whole_device, the device is synchronized instead of the stream (after the same capture check of
// the launch's stream): the `block-device` action.
BlockResult block_stream(Layer layer, cudaStream_t stream, bool per_thread, bool whole_device = false);

// A stream capture is about to begin (any thread): blocked launches check for captures from now on.
// Waits until synchronizes that began without that check have finished.
void note_capture_begins();
// Set by the first stream capture of the process (note_capture_begins; blocking.cpp says how it is ordered
// against synchronizes that began without the check).
inline std::atomic<bool> g_capture_began{false};
// Whether any stream capture has begun in the process (from then on, stream operations check for captures).
// Inline: every launch asks.
inline bool capture_has_begun() {
  return g_capture_began.load();
}
// The driver's handle of a launch's stream (stream 0 of a per-thread entry point: CU_STREAM_PER_THREAD).
inline CUstream driver_stream(const void* stream, bool per_thread) {
  if (per_thread && stream == nullptr) return CU_STREAM_PER_THREAD;
  return static_cast<CUstream>(const_cast<void*>(stream));
}
// Whether work enqueued on `stream` now could join a graph: it is capturing, or the driver cannot tell.
// Before the process's first capture nothing is capturing, and the driver is not asked.
bool may_be_capturing(CUstream stream);
// Whether `stream` is capturing for certain (the driver says so): work enqueued now joins a graph and does
// not run. Before the process's first capture nothing is, and the driver is not asked.
bool is_capturing(CUstream stream);
// The id of the capture `stream` takes part in (cuStreamGetCaptureInfo), or 0: not capturing, or unknown.
uint64_t capture_id(CUstream stream);
// In a forked child: forgets the parent's synchronizes in flight.
void reset_blocking_after_fork();

// Timing a blocked launch: start_block_timing just before the launch (wall clock, and an event on the
// launch's stream unless it is capturing: an event recorded there would join the graph), end_block_timing
// just after it (the second event), finish_block_timing after the blocking synchronize (GPU time from
// the two events when the synchronize succeeded). The events are the calling thread's own, created once
// per thread and context.
void start_block_timing(BlockTiming* timing, const void* stream, bool per_thread);
void end_block_timing(const BlockTiming& timing, const void* stream, bool per_thread);
void finish_block_timing(BlockTiming* timing, bool synchronized_ok);

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
