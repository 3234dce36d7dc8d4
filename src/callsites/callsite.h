// Where a launch came from, its call stack as taken on the launch path: raw native return addresses and the
// innermost Python frames of the launching thread. Fixed-size plain data: taking one allocates nothing,
// and records holding one can be copied freely. Symbolization (src/callsites/symbolize.h) happens later,
// only for records that are reported.
#pragma once

#include <cstddef>
#include <cstdint>

namespace blockrun {

// Native frames: innermost first. frames[0] is the walking function's own caller chain start; the
// call site is chosen when the record is reported (src/callsites/symbolize.h: call_site_index).
constexpr size_t kMaxNativeFrames = 48;
struct NativeStack {
  uint32_t depth = 0;
  bool truncated = false;  // more frames than kMaxNativeFrames
  uintptr_t frames[kMaxNativeFrames];
};

// Python frames of the launching thread, innermost first, copied (the code objects they came from may
// be gone by the time the record is reported). Texts longer than their buffer keep their tail (file)
// or head (function) and are marked with "...".
//
// Not simply the innermost kMaxPythonFrames: the walk is bounded (kMaxPythonFramesScanned) and keeps
// - the innermost kPythonInnermostKept frames, whatever they are;
// - then, until a frame of the program's own is met (classify_python_file: Program, the frame
//   python_call_site would choose), only such a frame: frames of libraries and generated code
//   (torch.compile's launcher, Inductor's module, AOTAutograd's and Dynamo's wrappers) are passed over
//   and counted in `skipped`;
// - from the program's first frame on, every frame (its callers), as long as there is room.
// So there is at most one gap, between frames[skipped_at - 1] and frames[skipped_at]; where no frame of the
// program's own is met, the gap is after the innermost frames and nothing follows it.
constexpr size_t kMaxPythonFrames = 8;
constexpr size_t kPythonInnermostKept = 4;
constexpr size_t kMaxPythonFramesScanned = 64;
constexpr size_t kPythonFileBytes = 192;
constexpr size_t kPythonFunctionBytes = 64;
// No initializers on purpose: a CallStack lives in every Launch on the launch path, and zeroing its
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
  bool truncated = false;        // frames left unread: no room for more, or kMaxPythonFramesScanned read
  uint8_t skipped = 0;           // frames of libraries and generated code passed over (the gap), 0 for none
  uint8_t skipped_at = 0;        // where the gap is: before frames[skipped_at] (== count: after the last)
  const char* method = nullptr;  // static text: how the frames were read (e.g. "public API, GIL held")
  const char* reason = nullptr;  // static text, set when status is Unavailable
  PythonFrame frames[kMaxPythonFrames];
};
static_assert(kPythonInnermostKept <= kMaxPythonFrames &&
                  kMaxPythonFramesScanned - kPythonInnermostKept <= 255,
              "PythonStack.skipped counts the frames passed over in a uint8_t");

// Everything taken for one launch: its call stack. ("Capture" in this project means CUDA stream capture.)
struct CallStack {
  NativeStack native;
  PythonStack python;
};

class PythonSiteCache;
struct PythonLaunchSite;

// How call sites are taken (set by Engine::start, for CallSites), here beside what they fill so that the
// engine's header names them without CallSites.
// Takes a CallStack of the calling thread (the shim's stack walk and Python frames; tests pass their own).
using StackFunction = void (*)(CallStack* out);
// Takes the calling thread's Python frames alone (the shim's read_python_stack).
using PythonStackFunction = void (*)(PythonStack* out);
// Takes the calling thread's Python line as numbers, from `cache` where it knows the frames, else from a full
// read into `scratch` (the shim's read_python_site).
using PythonSiteFunction = void (*)(PythonSiteCache& cache, PythonStack* scratch, PythonLaunchSite* out);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
