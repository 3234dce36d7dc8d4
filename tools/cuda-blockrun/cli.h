// The wrapper's commands (tools/cuda-blockrun/): what they share. main.cpp parses the options and runs the
// program; help.cpp is the wrapper's flag table (commands.def) and what is made from both tables (--help,
// --help-all, the man page, the completions) with --list-hooks and --version; explain.cpp is --explain,
// report.cpp `cuda-blockrun report`, localize.cpp --localize; locate.cpp finds the shim, the program and
// report files, and reports usage errors.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace blockrun::cli {

constexpr const char* kShimFile = "libcuda_blockrun.so";
constexpr int kUsageError = 2;  // the wrapper's own usage errors (the program's status otherwise)

// Prints `cuda-blockrun: MESSAGE` and the pointer to --help on standard error, and exits with kUsageError.
[[noreturn]] void usage_error(const std::string& message);

// The wrapper's own flags (commands.def), by their row's id.
enum class Command {
#define CUDA_BLOCKRUN_COMMAND(id, flag, short_flag, value, group, listing, accepted, summary, description) id,
#include "commands.def"
#undef CUDA_BLOCKRUN_COMMAND
};
enum class Listing { Listed, Hidden };
// One row of commands.def, as data.
struct CommandSpec {
  Command id;
  const char* flag;
  const char* short_flag;
  const char* value;
  OptionGroup group;
  Listing listing;
  const char* accepted;
  const char* summary;
  const char* description;
};
const std::vector<CommandSpec>& command_specs();
// The listed flags of both tables (options.def's and commands.def's), long forms: what "did you mean" picks
// from.
std::vector<std::string> known_flags();

// The flags of `cuda-blockrun report` (report_flags.def), by their row's id, and each row as data.
enum class ReportFlag {
#define CUDA_BLOCKRUN_REPORT_FLAG(id, flag, value, summary) id,
#include "report_flags.def"
#undef CUDA_BLOCKRUN_REPORT_FLAG
};
struct ReportFlagSpec {
  ReportFlag id;
  const char* flag;
  const char* value;  // "" for a flag without a value
  const char* summary;
};
const std::vector<ReportFlagSpec>& report_flag_specs();
// `[--json] [--trace OUT.json] [--force] [--help]`: report's flags for a usage line.
std::string report_flags_usage();

// --help (`all`: --help-all, every option's whole description), both from the two tables.
void print_usage(FILE* out, bool all);
// The man page (roff) and the bash and zsh completion scripts, from the two tables.
std::string man_page();
std::string bash_completion();
std::string zsh_completion();
// --list-hooks and --version.
void list_hooks();
void print_version();

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

// The whole configuration (the environment and the flags' settings together) as the shim will see it, through
// the configuration parser; its errors end the wrapper, each printed, then `outcome` ("the program was not
// started").
blockrun::Config checked_configuration(const std::map<std::string, std::string>& settings,
                                       const char* outcome);
// `cuda-blockrun report [--json] [--trace OUT.json] [--force] FILE...|DIR` (argv after `report`).
int report_command(int argc, char** argv);
// A log or report path in a directory that does not exist is a usage error before the program starts, not a
// report silently missing after it (a directory named with %p, %r or %h is left to the shim).
void check_output_directories(const blockrun::Config& config);
// Sets CUDA_BLOCKRUN_RUN_ID for the program where it is not set (blockrun::new_run_id), so that a report path
// used again is not merged with the run before.
void set_run_id();
// Runs the program: execvp (the wrapper becomes it), or, with an --error-exitcode, as a child whose exit
// status 0 becomes that status when any of its processes met a CUDA error (CUDA_BLOCKRUN_ERROR_FILE). Returns
// only where the program cannot be run.
int run_program(char** program_argv, std::optional<int> error_exitcode);
// A new, private error file for --error-exitcode (in a new directory under $TMPDIR), set as
// CUDA_BLOCKRUN_ERROR_FILE for the program; exits where none can be made.
std::string use_error_file();
// Replaces this process with the program (execvp); returns only where it cannot be run, having said why.
void exec_program(char** program_argv);
// Waits for the program's process `child` with Ctrl-C and Ctrl-\ ignored, as system() does (the terminal
// sends them to the program itself), and restores them after; waitpid's status.
int wait_for_program(pid_t child);
// `status` (an exit status, as a shell gives it), or `error_exitcode` where it is 0 and `error_file` tells of
// a CUDA error (said on standard error); removes the file.
int exit_status_after(int status, int error_exitcode, const std::string& error_file);
// --localize: runs `program_argv` (the shim already in LD_PRELOAD, the flags in the environment) once or
// twice and prints one verdict; returns run 1's exit status.
int localize_culprit(char** program_argv, bool breadcrumbs, int max_runs);

}  // namespace blockrun::cli
// SPDX-License-Identifier: MIT
