// The hooked symbols of shim/hooks.def as plain data (names, family, kind), without any CUDA type:
// the wrapper's `--list-hooks` and the tests read the table through this header.
#pragma once

#include <cstddef>

namespace blockrun {

struct HookEntry {
  const char* name;
  const char* layer;   // Runtime, Driver, Cublas, CublasLt
  const char* kind;    // launch, sync, query, call, library
  const char* stream;  // what stream 0 means: legacy or per-thread
};

inline constexpr HookEntry kHookList[] = {
#define CUDA_BLOCKRUN_HOOK(layer, kind, stream, return_type, name, parameters, arguments) \
  {#name, #layer, #kind, #stream},
#include "hooks.def"
};

inline constexpr size_t kHookCount = sizeof(kHookList) / sizeof(kHookList[0]);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
