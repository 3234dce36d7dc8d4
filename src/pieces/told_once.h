// Texts told once per process: the shim's own troubles (a missing CUDA function, ...) are logged the first
// time each distinct text comes, never again. Not on the launch path: callers hold the engine's report lock.
#pragma once

#include <string>
#include <vector>

namespace blockrun {

class ToldOnce {
 public:
  // Whether `text` comes for the first time (it is kept, and the next call with it answers false).
  bool first_time(const std::string& text);

 private:
  // A vector searched in order, not a set: a process has a handful of distinct troubles, and this header is
  // in engine.h, which every launch path of the shim includes.
  std::vector<std::string> told_;
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
