// A stand-in for launch code in the CUDA Toolkit's headers (thrust's triple_chevron, CUB's dispatch), for
// sites_test.cpp: the #line below makes the debug information say that these functions' code is in a toolkit
// header, as it says for thrust's templates compiled into a program. Included once, by sites_test.cpp, after
// it defines sites_test::own_return_address.
#pragma once
#line 100 "/usr/local/cuda/targets/x86_64-linux/include/cccl/thrust/system/cuda/detail/core/triple_chevron_launch.h"

namespace sites_test {

// A toolkit function of its own (not inlined): the launch inside it, and its caller's call.
__attribute__((noinline)) void toolkit_launch(blockrun::NativeStack* stack) {
  stack->frames[0] = reinterpret_cast<uintptr_t>(own_return_address());
  stack->frames[1] = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  stack->depth = 2;
  asm volatile("" : : "r"(stack) : "memory");
}

// Toolkit code inlined into the user's function: the return address lies in the user's function, inside the
// inlined toolkit code.
static inline __attribute__((always_inline)) uintptr_t toolkit_inlined() {
  void* address = own_return_address();
  asm volatile("" : : "r"(address) : "memory");
  return reinterpret_cast<uintptr_t>(address);
}

}  // namespace sites_test
// SPDX-License-Identifier: MIT
