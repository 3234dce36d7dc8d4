// The shim's dlsym. The static CUDA runtime, the math libraries, Triton and CuPy find the driver with
// dlopen("libcuda.so.1") + dlsym(handle, "cuLaunchKernel") (or "cuGetProcAddress_v2"): answering those
// lookups with the shim's wrappers is how their launches are seen.
//
// glibc resolves RTLD_DEFAULT and RTLD_NEXT relative to the *caller* of dlsym (its return address).
// A C++ wrapper would make the shim the caller and change what such lookups find, so the exported
// dlsym is a few instructions of assembly that jump (not call) to the real dlsym for those two
// pseudo-handles: the real dlsym then sees the program's return address, exactly as without the shim.
// Lookups on a real handle do not depend on the caller; they go to blockrun_dlsym_for_handle, which
// asks the real dlsym and swaps in a wrapper only when the answer is the real function of a hook.
// The real dlsym is found with dlvsym on its public glibc versions, never through a GLIBC_PRIVATE symbol.
#include <dlfcn.h>

#include <cstring>

#include "shim.h"

// The sanitizers' own start-up calls dlsym (RTLD_NEXT) before their shadow memory exists: in a sanitized
// build of the shim, the code on that path must not be instrumented.
#define CUDA_BLOCKRUN_NOT_SANITIZED __attribute__((no_sanitize("address", "undefined", "thread")))

extern "C" {
// Read by the assembly below; hidden, set once.
__attribute__((visibility("hidden"))) void* blockrun_real_dlsym = nullptr;

__attribute__((visibility("hidden"))) CUDA_BLOCKRUN_NOT_SANITIZED void* blockrun_resolve_real_dlsym() {
  if (blockrun_real_dlsym) return blockrun_real_dlsym;
  // glibc 2.34 moved dlsym into libc (GLIBC_2.34) and keeps the old version as a compatibility alias.
  static const char* const kVersions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
  for (const char* version : kVersions) {
    if (void* found = dlvsym(RTLD_NEXT, "dlsym", version)) {
      __atomic_store_n(&blockrun_real_dlsym, found, __ATOMIC_RELEASE);
      return found;
    }
  }
  return nullptr;  // cannot happen on glibc; the trampoline then returns null rather than jump to it
}

__attribute__((visibility("hidden"))) CUDA_BLOCKRUN_NOT_SANITIZED void* blockrun_dlsym_for_handle(
    void* handle, const char* name) {
  using Dlsym = void* (*)(void*, const char*);
  auto real = reinterpret_cast<Dlsym>(blockrun_resolve_real_dlsym());
  if (!real) return nullptr;
  void* address = real(handle, name);
  // Only CUDA names can be hooks: everything else goes back untouched at the cost of two compares.
  if (!address || !name || std::strncmp(name, "cu", 2) != 0) return address;
  if (blockrun::shim::ShimScope::inside()) return address;
  return blockrun::shim::substitute_wrapper(name, address, false);
}
}

#if defined(__x86_64__)
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
  .p2align 4
dlsym:
  .cfi_startproc
  testq %rdi, %rdi
  je 1f
  cmpq $-1, %rdi
  je 1f
  jmp blockrun_dlsym_for_handle
1:
  movq blockrun_real_dlsym(%rip), %rax
  testq %rax, %rax
  jz 2f
  jmp *%rax
2:
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call blockrun_resolve_real_dlsym
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  testq %rax, %rax
  jz 3f
  jmp *%rax
3:
  ret
  .cfi_endproc
  .size dlsym, .-dlsym
)");
#elif defined(__aarch64__)
asm(R"(
  .text
  .globl dlsym
  .type dlsym, %function
  .p2align 4
dlsym:
  .cfi_startproc
  cbz x0, 1f
  cmn x0, #1
  b.eq 1f
  b blockrun_dlsym_for_handle
1:
  adrp x16, blockrun_real_dlsym
  ldr x16, [x16, :lo12:blockrun_real_dlsym]
  cbz x16, 2f
  br x16
2:
  stp x29, x30, [sp, #-32]!
  .cfi_def_cfa_offset 32
  .cfi_offset 29, -32
  .cfi_offset 30, -24
  stp x0, x1, [sp, #16]
  bl blockrun_resolve_real_dlsym
  mov x16, x0
  ldp x0, x1, [sp, #16]
  ldp x29, x30, [sp], #32
  .cfi_def_cfa_offset 0
  cbz x16, 3f
  br x16
3:
  mov x0, #0
  ret
  .cfi_endproc
  .size dlsym, .-dlsym
)");
#else
#error "shim/dlsym.cpp: the dlsym trampoline is written for x86-64 and aarch64 only"
#endif

namespace blockrun::shim {

CUDA_BLOCKRUN_NOT_SANITIZED void* real_dlsym(void* handle, const char* name) {
  using Dlsym = void* (*)(void*, const char*);
  auto real = reinterpret_cast<Dlsym>(blockrun_resolve_real_dlsym());
  return real ? real(handle, name) : nullptr;
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
