// Kernel names as the program looked its kernels up (kernel_names.h).
#include "kernel_names.h"

#include <mutex>
#include <string>
#include <unordered_map>

#include "shim.h"

namespace blockrun::shim {

namespace {

struct Names {
  std::mutex mutex;
  std::unordered_map<const void*, std::string> by_handle;  // node-based: a name's address stays
};

// Never destroyed: launches (and their naming) may happen during exit.
Names& names() {
  static Names* kept = new Names;
  return *kept;
}

}  // namespace

bool kernel_names_needed() {
  static const bool needed = !helper<Helper::cuKernelGetName>() || !helper<Helper::cuFuncGetName>();
  return needed;
}

void remember_kernel_name(const void* handle, const char* name) {
  if (!handle || !name || !kernel_names_needed()) return;
  Names& kept = names();
  std::lock_guard<std::mutex> guard(kept.mutex);
  kept.by_handle[handle] = name;
}

const char* remembered_kernel_name(const void* handle) {
  if (!kernel_names_needed()) return nullptr;
  Names& kept = names();
  std::lock_guard<std::mutex> guard(kept.mutex);
  auto found = kept.by_handle.find(handle);
  return found == kept.by_handle.end() ? nullptr : found->second.c_str();
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
