// Minimal assertion helpers for the sim's own tests: print what differed and keep going, exit code =
// failures.
#pragma once

#include <cstdio>
#include <cstring>

namespace simtest {
inline int& failures() {
  static int n = 0;
  return n;
}
inline int finish() {
  if (failures())
    std::printf("%d check(s) FAILED\n", failures());
  else
    std::printf("all checks passed\n");
  return failures() ? 1 : 0;
}
}  // namespace simtest

#define CHECK_EQ(actual, expected)                                                                          \
  do {                                                                                                      \
    const long long a_ = static_cast<long long>(actual), e_ = static_cast<long long>(expected);             \
    if (a_ != e_) {                                                                                         \
      std::printf("%s:%d: CHECK_EQ(%s, %s) failed: got %lld, expected %lld\n", __FILE__, __LINE__, #actual, \
                  #expected, a_, e_);                                                                       \
      simtest::failures()++;                                                                                \
    }                                                                                                       \
  } while (0)

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::printf("%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      simtest::failures()++;                                               \
    }                                                                      \
  } while (0)

#define CHECK_STR(actual, expected)                                                                          \
  do {                                                                                                       \
    const char* a_ = (actual);                                                                               \
    const char* e_ = (expected);                                                                             \
    if (!a_ || std::strcmp(a_, e_) != 0) {                                                                   \
      std::printf("%s:%d: CHECK_STR(%s) failed: got \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #actual, \
                  a_ ? a_ : "(null)", e_);                                                                   \
      simtest::failures()++;                                                                                 \
    }                                                                                                        \
  } while (0)
// SPDX-License-Identifier: MIT
