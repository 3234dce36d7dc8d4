// The tests' stand-in for blockrun::shim::real_dlsym (the shim's own lives in shim/dlsym.cpp, with the
// dlsym interposer that the tests must not carry into Python): the probes have no interposer, so the C
// library's dlsym is the real one.
#include <dlfcn.h>

#include "real.h"

namespace blockrun::shim {

void* real_dlsym(void* handle, const char* name) {
  return dlsym(handle, name);
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
