// The wrapper's commands (tools/cuda-blockrun/): what they share. main.cpp parses the options and runs the
// program (or --list-hooks, --version); explain.cpp is --explain, report.cpp `cuda-blockrun report`,
// localize.cpp --localize; locate.cpp finds the shim, the program and report files, and reports usage errors.
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace blockrun::cli {

constexpr const char* kShimFile = "libcuda_blockrun.so";
constexpr int kUsageError = 2;  // the wrapper's own usage errors (the program's status otherwise)

// Prints `cuda-blockrun: MESSAGE` and the pointer to --help on standard error, and exits with kUsageError.
[[noreturn]] void usage_error(const std::string& message);
// The usage text (--help), with the options' reference generated from src/options.def.
void print_usage(FILE* out);

// Where the wrapper's own executable lies.
std::string directory_of_executable();
// The shim beside the wrapper: ../lib/ (build and install trees), the install tree's library directory, or
// the same directory; its resolved path, or nullopt.
std::optional<std::string> find_shim();
// The program as execvp would find it, or nullopt.
std::optional<std::string> find_program(const std::string& name);

// A file's contents; nullopt where it cannot be read (errno says why).
std::optional<std::string> read_file(const std::filesystem::path& path);
// The regular files in `directory` whose names start with `prefix` and end with `suffix` (with something
// between), sorted by name; none where it cannot be listed.
std::vector<std::filesystem::path> files_in(const std::filesystem::path& directory, const std::string& prefix,
                                            const std::string& suffix);

// --explain DESCRIPTION with the policy of the flags (`settings`: variable -> value), else the environment's.
int explain_launch(const std::map<std::string, std::string>& settings, const std::string& description);
// `cuda-blockrun report [--json] FILE...|DIR` (argv after `report`).
int report_command(int argc, char** argv);
// --localize: runs `program_argv` (the shim already in LD_PRELOAD, the flags in the environment) once or
// twice and prints one verdict; returns run 1's exit status.
int localize_culprit(char** program_argv, bool breadcrumbs);

}  // namespace blockrun::cli
