// dlsym at its old version (GLIBC_2.2.5; GLIBC_2.34 since glibc moved it into libc), for the binaries that
// call dlsym without defining it: the wrapper. Not the shim, which defines and exports its own
// (shim/dlsym.cpp, which finds the real one with dlvsym on its public versions): a hidden definition here
// would hide that export. See glibc_compat.c.
#define _GNU_SOURCE
#include <dlfcn.h>

#if !defined(__x86_64__)
#error "tools/glibc_compat is written for x86-64"
#endif

__asm__(".symver old_dlsym, dlsym@GLIBC_2.2.5");
extern void* old_dlsym(void*, const char*);

// glibc resolves RTLD_NEXT and RTLD_DEFAULT from the caller's return address: this forwarder is in the
// caller's own object, so the object is the same.
__attribute__((visibility("hidden"))) void* dlsym(void* restrict handle, const char* restrict name) {
  return old_dlsym(handle, name);
}
// SPDX-License-Identifier: MIT
