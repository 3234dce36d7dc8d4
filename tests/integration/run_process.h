// Runs a program the way a user would (environment, arguments) and captures what it printed and how
// it ended, for tests that compare runs with and without the shim.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace blockrun::testing {

struct ProcessResult {
  std::string out;
  std::string err;
  int status = -1;  // exit status, or 128 + signal
};

inline bool contains(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

inline std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The line of `source` that carries the comment `// marker`, 1-based (-1: none); tests never hard-code lines.
inline int marker_line(const std::string& source, const std::string& marker) {
  std::string text = read_file(source);
  size_t at = text.find("// " + marker);
  if (at == std::string::npos) return -1;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
}

// The test's environment without anything of the shim's (so that a developer's own settings cannot
// change a test), with `extra` added; a value of "<unset>" removes a variable.
inline std::vector<std::string> make_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) {
    std::string text = *entry;
    std::string name = text.substr(0, text.find('='));
    if (name.rfind("CUDA_BLOCKRUN", 0) == 0 || name == "LD_PRELOAD" || name.rfind("CUDA_SIM", 0) == 0)
      continue;
    if (extra.count(name)) continue;
    environment.push_back(text);
  }
  for (const auto& [name, value] : extra) {
    if (value != "<unset>") environment.push_back(name + "=" + value);
  }
  return environment;
}

inline ProcessResult run_process(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& extra) {
  static int counter = 0;
  std::string base =
      ::testing::TempDir() + "blockrun_run_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  std::string out_path = base + ".out", err_path = base + ".err";

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);

  std::vector<std::string> environment = make_environment(extra);
  std::vector<char*> env_pointers, arg_pointers;
  for (std::string& entry : environment) env_pointers.push_back(entry.data());
  env_pointers.push_back(nullptr);
  std::vector<std::string> arguments = argv;
  for (std::string& entry : arguments) arg_pointers.push_back(entry.data());
  arg_pointers.push_back(nullptr);

  ProcessResult result;
  pid_t pid = 0;
  if (posix_spawn(&pid, arg_pointers[0], &actions, nullptr, arg_pointers.data(), env_pointers.data()) != 0) {
    result.err = "spawn failed: " + argv[0];
    return result;
  }
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  waitpid(pid, &status, 0);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return result;
}

}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
