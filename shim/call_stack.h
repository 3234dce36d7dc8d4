// Taking where a launch came from, on the launch path: raw return addresses (no symbolization, no
// allocation) and the Python frames of the launching thread (shim/python_frames.h).
#pragma once

#include "callsites/callsite.h"

namespace blockrun::shim {

// Walks the calling thread's native stack into `out` (innermost first, up to kMaxNativeFrames). Uses
// the unwinder's tables (.eh_frame), so it works through code built without frame pointers, such as
// the CUDA runtime linked into a program.
void walk_native_stack(NativeStack* out);

// Both: what a launch record keeps.
void take_call_stack(CallStack* out);

// Makes the first stack walk of the process cheap: the unwinder finds and caches its tables on first use.
void warm_up_stack_walk();

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
