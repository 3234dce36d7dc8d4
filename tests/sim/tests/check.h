// Minimal assertion helpers for the sim's own tests: print what differed and keep going, exit code =
// failures.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

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
// Runs `scenario` in a forked child, after `prepare` set the child's environment (the sim reads its variables
// once a process, and a fault stays the process's sticky error); the child prints `[label] ` and its checks'
// outcome. Returns the child's status: 0 when its checks passed, 1 when one failed or it died.
template <typename Prepare>
int run_in_child(void (*scenario)(), const std::string& label, Prepare&& prepare) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    prepare();
    scenario();
    std::printf("[%s] ", label.c_str());
    std::exit(finish());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
// A counter of the driver's CUDA_SIM_STATS file (key=value lines), once the test had the driver write it
// (sim::write_stats()); -1 where ctest gave no file.
inline long stat_in_file(const char* key) {
  const char* path = std::getenv("CUDA_SIM_STATS");  // set by ctest
  if (!path) return -1;
  std::map<std::string, long> counters;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) counters[line.substr(0, eq)] = std::stol(line.substr(eq + 1));
  }
  return counters[key];
}
// Sets `variable` to `value`, or unsets it where `value` is null.
inline void set_or_unset(const char* variable, const char* value) {
  if (value)
    setenv(variable, value, 1);
  else
    unsetenv(variable);
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
