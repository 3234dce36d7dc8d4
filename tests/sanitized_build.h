// Whether this test program was built with AddressSanitizer or ThreadSanitizer (tools/dev sanitize). In such
// a tree the programs the tests run are instrumented too: they run several times slower, and their sanitizer
// takes over the fatal signals. Tests scale their loads down, or skip, by this one constant.
#pragma once

namespace blockrun::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
