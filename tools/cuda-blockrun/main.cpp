// cuda-blockrun: runs a program with the shim preloaded and its options set, after checking them.
//
//   cuda-blockrun [options] [--] program [args...]
//
// Every option maps to a CUDA_BLOCKRUN_* variable (src/config/options.def), so the same configuration
// works without the wrapper (LD_PRELOAD=libcuda_blockrun.so CUDA_BLOCKRUN_BLOCK=all ./app). The
// wrapper checks the configuration with the shim's own parser before anything runs, finds the shim
// beside itself (build tree or install tree: bin/../lib), and replaces itself with the program, so
// the program's exit status is its own.
//
// The commands: this file (parsing the command line, running the program), help.cpp (the wrapper's own flags,
// commands.def, and what is made from both tables: --help, the man page, the completions; --list-hooks,
// --version), explain.cpp, report.cpp, localize.cpp; locate.cpp finds the shim and the program (cli.h).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "config/config.h"
#include "config/suggest.h"

extern char** environ;

namespace blockrun::cli {

namespace {

// What the command line asks for: the flags' settings (variable -> value), --explain's description,
// --localize, --error-exitcode, and where the program's argv begins.
struct Invocation {
  std::map<std::string, std::string> settings;
  std::optional<std::string> explain;
  bool localize = false;
  std::optional<int> max_runs;
  std::optional<int> error_exitcode;
  bool print_environment = false;
  std::optional<std::string> python;  // --python: the interpreter that runs the script or module
  int program = 0;
};

// An argument `--flag=value` as the flag and its inline value; `--flag` as the flag alone.
std::pair<std::string, std::optional<std::string>> split_flag(const std::string& argument) {
  size_t equals = argument.find('=');
  if (equals == std::string::npos) return {argument, std::nullopt};
  return {argument.substr(0, equals), argument.substr(equals + 1)};
}

// The value of `flag` at argv[*index]: inline, else the next argument, which is never `--` or another option
// (`--block -- ./app` took `--` as the policy and ran the program unblocked: issue 17, F18).
std::string take_value(const std::string& flag, const std::string& accepted,
                       const std::optional<std::string>& inline_value, int argc, char** argv, int* index) {
  if (inline_value) return *inline_value;
  if (*index + 1 < argc && std::strncmp(argv[*index + 1], "--", 2) != 0) return argv[++*index];
  if (*index + 1 < argc) {
    usage_error("option " + flag + " needs a value (" + accepted + "), not '" + argv[*index + 1] +
                "'; for a value that starts with --, write " + flag + "=VALUE");
  }
  usage_error("option " + flag + " needs a value (" + accepted + ")");
}

// --error-exitcode's N: a whole number from 1 to 255 (0 would hide the error, and a status is one byte).
int exit_code(const CommandSpec& spec, const std::string& value) {
  bool digits =
      !value.empty() && value.size() <= 3 && value.find_first_not_of("0123456789") == std::string::npos;
  int code = digits ? std::stoi(value) : 0;
  if (code < 1 || code > 255)
    usage_error(std::string(spec.flag) + ": '" + value +
                "' is not an exit status; accepted: " + spec.accepted);
  return code;
}

[[noreturn]] void print_and_exit(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::exit(0);
}

// A flag of commands.def at argv[index]: the informational ones print and exit here, the others go into
// `invocation`; returns the index of the last argument it took.
int take_command(const CommandSpec& spec, const std::optional<std::string>& inline_value, int argc,
                 char** argv, int index, Invocation* invocation) {
  if (inline_value && !*spec.value)
    usage_error("option " + std::string(spec.flag) + " takes no value, not '" + argv[index] + "'");
  switch (spec.id) {
    case Command::help:
      print_usage(stdout, false);
      std::exit(0);
    case Command::help_all:
      print_usage(stdout, true);
      std::exit(0);
    case Command::version:
      print_version();
      std::exit(0);
    case Command::list_hooks:
      list_hooks();
      std::exit(0);
    case Command::help_config_markdown:
      print_and_exit(blockrun::configuration_reference_markdown());
    case Command::help_man:
      print_and_exit(man_page());
    case Command::help_bash_completion:
      print_and_exit(bash_completion());
    case Command::help_zsh_completion:
      print_and_exit(zsh_completion());
    case Command::localize:
      invocation->localize = true;
      break;
    case Command::max_runs: {
      std::string value = take_value(spec.flag, spec.accepted, inline_value, argc, argv, &index);
      if (value != "1" && value != "2" && value != "3")
        usage_error(std::string(spec.flag) + ": '" + value +
                    "' is not a number of runs; accepted: " + spec.accepted);
      invocation->max_runs = value[0] - '0';
      break;
    }
    case Command::explain:
      invocation->explain = take_value(spec.flag, spec.accepted, inline_value, argc, argv, &index);
      break;
    case Command::print_environment:
      invocation->print_environment = true;
      break;
    case Command::python:
      invocation->python = take_value(spec.flag, spec.accepted, inline_value, argc, argv, &index);
      break;
    case Command::error_exitcode:
      invocation->error_exitcode =
          exit_code(spec, take_value(spec.flag, spec.accepted, inline_value, argc, argv, &index));
      break;
  }
  return index;
}

// A flag of src/config/options.def at argv[index] (its value inline, next, or 1 for a switch): its value,
// checked, into the settings; returns the index of the last argument it took.
int take_option(int argc, char** argv, int index, Invocation* invocation) {
  std::string argument = argv[index];
  auto [flag, inline_value] = split_flag(argument);
  const blockrun::OptionSpec* spec = nullptr;
  for (const blockrun::OptionSpec& candidate : blockrun::option_specs()) {
    if (*candidate.flag && flag == candidate.flag) spec = &candidate;
  }
  if (!spec) usage_error("unknown option '" + argument + "'" + blockrun::did_you_mean(flag, known_flags()));
  std::string value = spec->kind == blockrun::OptionKind::Switch && !inline_value
                          ? "1"
                          : take_value(spec->flag, spec->accepted, inline_value, argc, argv, &index);
  if (std::optional<blockrun::ConfigError> error = blockrun::check_value(*spec, value)) {
    usage_error(std::string(spec->flag) + ": " + error->message());
  }
  // --block may be repeated: the rules are joined in the order given.
  std::map<std::string, std::string>& settings = invocation->settings;
  if (spec->kind == blockrun::OptionKind::Policy && settings.count(spec->variable)) {
    settings[spec->variable] += "; " + value;
  } else {
    settings[spec->variable] = value;
  }
  return index;
}

// Reads the options up to the program (or `--`): every argument before it that starts with '-' is a flag of
// one of the two tables, or an unknown option (`-b all` is not a program named -b).
Invocation parse_command_line(int argc, char** argv) {
  Invocation invocation;
  int index = 1;
  for (; index < argc; ++index) {
    std::string argument = argv[index];
    if (argument == "--") {
      ++index;
      break;
    }
    if (argument.empty() || argument[0] != '-') break;  // the program
    // A Python program starts at `-m module` or `-c code` as well as at a script.
    if (invocation.python && (argument == "-m" || argument == "-c")) break;
    auto [flag, inline_value] = split_flag(argument);
    const CommandSpec* command = nullptr;
    for (const CommandSpec& candidate : command_specs()) {
      if (flag == candidate.flag || (*candidate.short_flag && argument == candidate.short_flag))
        command = &candidate;
    }
    if (command) {
      index = take_command(*command, inline_value, argc, argv, index, &invocation);
    } else {
      index = take_option(argc, argv, index, &invocation);
    }
  }
  invocation.program = index;
  return invocation;
}

// Sets the flags' variables and LD_PRELOAD (the shim first) in this process's environment, for the program.
void prepare_environment(const std::map<std::string, std::string>& settings) {
  std::optional<std::string> shim = find_shim();
  if (!shim) {
    usage_error(std::string("cannot find ") + kShimFile + " beside " + directory_of_executable() +
                " (expected in ../lib/); is cuda-blockrun installed completely?");
  }
  // The loader splits LD_PRELOAD at spaces and colons: a shim under such a path would be "ignored" and the
  // program run unobserved (issue 17, F9).
  if (shim->find_first_of(" :") != std::string::npos) {
    usage_error(
        "the shim's path '" + *shim +
        "' holds a space or a colon, where the loader splits LD_PRELOAD: the program would run without "
        "it; install cuda-blockrun under a path without them");
  }
  for (const auto& [variable, value] : settings) setenv(variable.c_str(), value.c_str(), 1);
  set_run_id();
  const char* preload = std::getenv("LD_PRELOAD");
  std::string preload_value = *shim;
  if (preload && *preload) preload_value += std::string(":") + preload;
  setenv("LD_PRELOAD", preload_value.c_str(), 1);
}

// --print-environment: what prepare_environment would set for the program (the flags' variables, the run id),
// as JSON, with the shim it would preload; the Python package (python/cuda_blockrun) sets them in its own
// process and loads that shim.
int print_environment(std::map<std::string, std::string> settings) {
  std::optional<std::string> shim = find_shim();
  if (!shim)
    usage_error(std::string("cannot find ") + kShimFile + " beside " + directory_of_executable() +
                " (expected in ../lib/); is cuda-blockrun installed completely?");
  set_run_id();
  settings[blockrun::variable::run_id] = std::getenv(blockrun::variable::run_id);
  nlohmann::json environment = nlohmann::json::object();
  for (const auto& [variable, value] : settings) environment[variable] = value;
  nlohmann::json answer = {{"environment", environment}, {"shim", *shim}};
  std::puts(answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

}  // namespace

blockrun::Config checked_configuration(const std::map<std::string, std::string>& settings,
                                       const char* outcome) {
  std::vector<std::string> variables;
  for (char** entry = environ; entry && *entry; ++entry) {
    if (std::strncmp(*entry, blockrun::variable::enabled, std::strlen(blockrun::variable::enabled)) != 0)
      continue;
    const char* equals = std::strchr(*entry, '=');
    if (equals) variables.emplace_back(*entry, equals - *entry);
  }
  for (const auto& [variable, value] : settings) variables.push_back(variable);
  blockrun::ConfigResult checked = blockrun::parse_config(
      [&](const std::string& variable) -> std::optional<std::string> {
        auto found = settings.find(variable);
        if (found != settings.end()) return found->second;
        const char* value = std::getenv(variable.c_str());
        return value ? std::optional<std::string>(value) : std::nullopt;
      },
      variables);
  if (!checked.errors.empty()) {
    for (const blockrun::ConfigError& error : checked.errors)
      std::fprintf(stderr, "cuda-blockrun: %s\n", error.message().c_str());
    usage_error(outcome);
  }
  return checked.config;
}

}  // namespace blockrun::cli

using namespace blockrun::cli;

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "report") == 0) return report_command(argc - 2, argv + 2);
  Invocation invocation = parse_command_line(argc, argv);
  if (invocation.explain) return explain_launch(invocation.settings, *invocation.explain);
  if (invocation.program >= argc && !invocation.print_environment)
    usage_error(invocation.python ? "no Python script, -m module or -c code given" : "no program given");
  if (invocation.print_environment && invocation.program < argc)
    usage_error("--print-environment runs nothing: no program goes with it");
  if (invocation.print_environment && invocation.localize)
    usage_error("--localize runs the program: it cannot be combined with --print-environment");
  if (invocation.localize) {
    for (const char* variable : {blockrun::variable::block, blockrun::variable::report}) {
      if (invocation.settings.count(variable) || std::getenv(variable))
        usage_error(std::string("--localize chooses what to block and writes its own reports: it cannot be "
                                "combined with ") +
                    variable + " (--block, --report)");
    }
  }
  if (invocation.max_runs && !invocation.localize) usage_error("--max-runs is for --localize");
  // The first try is the right one: with no mode chosen (no policy, breadcrumbs neither on nor off), the run
  // has breadcrumbs, which name the culprit exactly wherever they can, blocking nothing (docs/localize.md,
  // "The default run"). A bare LD_PRELOAD keeps the variable's own default, off (docs/config.md).
  bool mode_chosen = false;
  for (const char* variable : {blockrun::variable::block, blockrun::variable::breadcrumbs})
    mode_chosen = mode_chosen || invocation.settings.count(variable) || std::getenv(variable);
  if (!invocation.localize && !mode_chosen) invocation.settings[blockrun::variable::breadcrumbs] = "1";
  blockrun::Config config = checked_configuration(invocation.settings, "the program was not started");
  check_output_directories(config);
  if (invocation.print_environment) return print_environment(invocation.settings);
  // --python: INTERPRETER -m cuda_blockrun._run PROGRAM..., which adds the verdict to a CUDA error's
  // traceback and runs the script, module or code as the interpreter would have
  // (python/cuda_blockrun/_run.py).
  std::vector<char*> python_argv;
  if (invocation.python) {
    static char dash_m[] = "-m", runner[] = "cuda_blockrun._run";
    python_argv = {invocation.python->data(), dash_m, runner};
    python_argv.insert(python_argv.end(), argv + invocation.program, argv + argc);
    python_argv.push_back(nullptr);
  }
  char** program_argv = invocation.python ? python_argv.data() : argv + invocation.program;
  std::string program = program_argv[0];
  if (!find_program(program)) usage_error("program '" + program + "' not found or not executable");
  prepare_environment(invocation.settings);
  // (CUDA_BLOCKRUN_ERROR_FILE has no flag: only the environment can have set it.)
  if (invocation.error_exitcode && std::getenv(blockrun::variable::error_file))
    usage_error(std::string("--error-exitcode keeps its own error file: it cannot be combined with ") +
                blockrun::variable::error_file);
  if (invocation.localize) {
    std::string error_file = invocation.error_exitcode ? use_error_file() : std::string();
    // Breadcrumbs unless the user set CUDA_BLOCKRUN_BREADCRUMBS (flag or environment) to off.
    // (The flags are in the environment by now.)
    int status =
        localize_culprit(program_argv, !std::getenv(blockrun::variable::breadcrumbs) || config.breadcrumbs,
                         invocation.max_runs.value_or(3));
    return invocation.error_exitcode ? exit_status_after(status, *invocation.error_exitcode, error_file)
                                     : status;
  }
  return run_program(program_argv, invocation.error_exitcode);
}
// SPDX-License-Identifier: MIT
