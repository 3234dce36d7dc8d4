// Making a launch blocking: synchronize the launch's stream, never a capturing one.
#pragma once

#include "shim.h"

namespace blockrun::shim {

struct BlockResult {
  BlockOutcome outcome = BlockOutcome::NotBlocked;
  ErrorCode result;
  const char* api = nullptr;  // the call whose result `result` is
};

// Synchronizes `stream` (stream 0 with per_thread means the calling thread's per-thread default
// stream) through the runtime (family Runtime) or the driver (otherwise, falling back to the
// runtime where the driver cannot be found). Checks first that the stream is not capturing, and
// switches the calling thread's capture mode to relaxed around the synchronize, so that a capture
// running in another thread is not invalidated.
// With whole_device, the device is synchronized instead of the stream (after the same capture check of
// the launch's stream): the `block-device` action.
BlockResult block_stream(Family family, cudaStream_t stream, bool per_thread, bool whole_device = false);

}  // namespace blockrun::shim
