// Capturing where a launch came from, on the launch path: raw return addresses (no symbolization, no
// allocation) and the Python frames of the launching thread (shim/python_frames.h).
#pragma once

#include "callsite.h"

namespace blockrun::shim {

// Walks the calling thread's native stack into `out` (innermost first, up to kMaxNativeFrames). Uses
// the unwinder's tables (.eh_frame), so it works through code built without frame pointers, such as
// the CUDA runtime linked into a program.
void capture_native(NativeStack* out);

// Both: what a launch record keeps.
void capture_launch_site(Capture* out);

// Makes the first capture of the process cheap: the unwinder finds and caches its tables on first use.
void warm_up_capture();

}  // namespace blockrun::shim
