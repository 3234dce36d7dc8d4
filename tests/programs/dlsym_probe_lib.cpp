// The shared library of dlsym_probe (dlopen'ed by it with RTLD_GLOBAL). It defines probe_value()
// (returning 2, where the program's returns 1) and looks symbols up from inside a library, so that
// RTLD_NEXT / RTLD_DEFAULT are resolved relative to this library, not to the program.
#include <dlfcn.h>

extern "C" {

__attribute__((visibility("default"))) int probe_value() {
  return 2;
}

// dlsym(handle, name) called from this library. Not a tail call (CMakeLists.txt builds this file with
// -fno-optimize-sibling-calls, and the result is used after the call): a `jmp dlsym` would make the
// program the caller that dlsym sees.
__attribute__((visibility("default"))) void* probe_lib_dlsym(void* handle, const char* name) {
  void* volatile result = dlsym(handle, name);
  return result;
}

}  // extern "C"
// SPDX-License-Identifier: MIT
