// Taking where a launch came from (see call_stack.h).
#include "call_stack.h"

#include <unwind.h>

#include "python_frames.h"

namespace blockrun::shim {

namespace {

struct Walk {
  NativeStack* out;
};

_Unwind_Reason_Code record_frame(struct _Unwind_Context* context, void* data) {
  auto* walk = static_cast<Walk*>(data);
  uintptr_t address = _Unwind_GetIP(context);
  if (address == 0) return _URC_END_OF_STACK;
  NativeStack& stack = *walk->out;
  if (stack.depth >= kMaxNativeFrames) {
    stack.truncated = true;
    return _URC_END_OF_STACK;
  }
  stack.frames[stack.depth++] = address;
  return _URC_NO_REASON;
}

}  // namespace

void walk_native_stack(NativeStack* out) {
  // libgcc's unwinder: with glibc 2.35+ it finds each frame's tables through _dl_find_object, without
  // the loader lock and without allocating. The shim's own frames are dropped when the record is
  // reported (by module), not here, so that inlining cannot make this skip the wrong frames.
  out->depth = 0;
  out->truncated = false;
  Walk walk{out};
  _Unwind_Backtrace(record_frame, &walk);
}

void take_call_stack(CallStack* out) {
  walk_native_stack(&out->native);
  read_python_stack(&out->python);
}

void warm_up_stack_walk() {
  NativeStack stack;
  walk_native_stack(&stack);
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
