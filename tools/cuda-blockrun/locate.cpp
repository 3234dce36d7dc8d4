// Finding the shim, the program and report files, and the wrapper's usage errors (cli.h).
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include "cli.h"

#ifndef CUDA_BLOCKRUN_INSTALL_LIBDIR
#define CUDA_BLOCKRUN_INSTALL_LIBDIR "lib"
#endif

namespace blockrun::cli {

namespace {

// A regular file, following links (as stat does), by the same check files_in makes.
bool is_file(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

}  // namespace

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "cuda-blockrun: %s\n", message.c_str());
  std::fprintf(stderr, "cuda-blockrun: see `cuda-blockrun --help`\n");
  std::exit(kUsageError);
}

std::string directory_of_executable() {
  char path[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0) return ".";
  path[length] = '\0';
  std::string text(path);
  return text.substr(0, text.rfind('/'));
}

std::optional<std::string> find_shim() {
  std::string bin = directory_of_executable();
  for (const std::string& candidate :
       {bin + "/../lib/" + kShimFile, bin + "/../" CUDA_BLOCKRUN_INSTALL_LIBDIR "/" + kShimFile,
        bin + "/" + kShimFile}) {
    if (is_file(candidate)) {
      char resolved[PATH_MAX];
      if (realpath(candidate.c_str(), resolved)) return std::string(resolved);
    }
  }
  return std::nullopt;
}

std::optional<std::string> find_program(const std::string& name) {
  auto runnable = [](const std::string& path) { return is_file(path) && access(path.c_str(), X_OK) == 0; };
  if (name.find('/') != std::string::npos)
    return runnable(name) ? std::optional<std::string>(name) : std::nullopt;
  const char* path_variable = std::getenv("PATH");
  std::string search = path_variable ? path_variable : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= search.size()) {
    size_t end = search.find(':', start);
    if (end == std::string::npos) end = search.size();
    std::string directory = search.substr(start, end - start);
    std::string candidate = (directory.empty() ? "." : directory) + "/" + name;
    if (runnable(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::stringstream contents;
  contents << file.rdbuf();
  if (file.bad()) return std::nullopt;
  return contents.str();
}

std::vector<std::filesystem::path> files_in(const std::filesystem::path& directory, const std::string& prefix,
                                            const std::string& suffix) {
  std::vector<std::filesystem::path> found;
  std::error_code error;
  for (const std::filesystem::directory_entry& entry :
       std::filesystem::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    bool named = name.size() > prefix.size() + suffix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
                 name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    std::error_code not_regular;
    if (named && entry.is_regular_file(not_regular)) found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace blockrun::cli
// SPDX-License-Identifier: MIT
