// Where a launch came from, as captured on the launch path: raw native return addresses and the
// innermost Python frames of the launching thread. Fixed-size plain data: capturing allocates nothing,
// and records holding a capture can be copied freely. Symbolization (src/symbolize.h) happens later,
// only for records that are reported.
#pragma once

#include <cstddef>
#include <cstdint>

namespace blockrun {

// Native frames: innermost first. frames[0] is the capturing function's own caller chain start; the
// call site is chosen when the record is reported (src/symbolize.h: call_site_index).
constexpr size_t kMaxNativeFrames = 48;
struct NativeStack {
  uint32_t depth = 0;
  bool truncated = false;  // more frames than kMaxNativeFrames
  uintptr_t frames[kMaxNativeFrames];
};

// Python frames of the launching thread, innermost first, copied (the code objects they came from may
// be gone by the time the record is reported). Texts longer than their buffer keep their tail (file)
// or head (function) and are marked with "...".
constexpr size_t kMaxPythonFrames = 8;
constexpr size_t kPythonFileBytes = 192;
constexpr size_t kPythonFunctionBytes = 64;
// No initializers on purpose: a Capture lives in every Launch on the launch path, and zeroing its
// buffers there would cost more than the launch; `count` says which frames are valid (NUL-terminated).
struct PythonFrame {
  int line;
  char file[kPythonFileBytes];
  char function[kPythonFunctionBytes];
};

enum class PythonStatus : uint8_t {
  NotCaptured,    // no capture was attempted for this launch
  NoPython,       // no initialized CPython in the process
  NoThreadState,  // the launching thread has no Python thread state (a C++ worker thread)
  Captured,       // frames[0..count) hold the frames
  Unavailable,    // Python is there but the frames could not be read safely; `reason` says why
};

struct PythonStack {
  PythonStatus status = PythonStatus::NotCaptured;
  uint8_t count = 0;
  bool gil_held = false;         // whether the launching thread held the GIL at the launch
  bool truncated = false;        // more frames than kMaxPythonFrames
  const char* method = nullptr;  // static text: how the frames were read (e.g. "public API, GIL held")
  const char* reason = nullptr;  // static text, set when status is Unavailable
  PythonFrame frames[kMaxPythonFrames];
};

// Everything captured for one launch.
struct Capture {
  NativeStack native;
  PythonStack python;
};

}  // namespace blockrun
