// cuda-blockrun: runs a program with the shim preloaded and its options set, after checking them.
//
//   cuda-blockrun [options] [--] program [args...]
//
// Every option maps to a CUDA_BLOCKRUN_* variable (src/options.def), so the same configuration
// works without the wrapper (LD_PRELOAD=libcuda_blockrun.so CUDA_BLOCKRUN_BLOCK=all ./app). The
// wrapper checks the configuration with the shim's own parser before anything runs, finds the shim
// beside itself (build tree or install tree: bin/../lib), and replaces itself with the program, so
// the program's exit status is its own.
//
// The commands: this file (options, running the program, --list-hooks, --version), explain.cpp, report.cpp,
// localize.cpp; locate.cpp finds the shim and the program (cli.h).
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "config.h"
#include "hook_list.h"

#ifndef CUDA_BLOCKRUN_VERSION
#define CUDA_BLOCKRUN_VERSION "unknown"
#endif
#ifndef CUDA_BLOCKRUN_CUDA_VERSION
#define CUDA_BLOCKRUN_CUDA_VERSION "unknown"
#endif

extern char** environ;

namespace blockrun::cli {

void print_usage(FILE* out) {
  std::fprintf(
      out,
      "usage: cuda-blockrun [options] [--] program [args...]\n"
      "       cuda-blockrun report [--json] FILE...|DIR\n"
      "\n"
      "Runs program with the cuda-blockrun shim preloaded: it names every CUDA kernel launch, makes the\n"
      "launches the policy selects blocking, and pins the first CUDA error to the launch that caused it.\n"
      "\n"
      "options:\n"
      "%s"
      "  --help           this text\n"
      "  --version        the version, the CUDA version it was built against, the driver's\n"
      "  --list-hooks     the CUDA entry points the shim intercepts\n"
      "  --explain LAUNCH how the policy treats a launch, and which rule decides, without running\n"
      "                   anything: a kernel name or NAME#N (its N-th launch) and any of #N family=F\n"
      "                   library=CALL stream=0x... thread=N after=SECONDS, as in the policy\n"
      "                   (e.g. --block 'stencil#13' --explain 'stencil#13')\n"
      "  --localize       run the program with nothing blocked; if its first CUDA error is not pinned to\n"
      "                   its launch, run it again blocking only the suspected kernels, and print one\n"
      "                   verdict (kernel, launch, C++ call site, Python line, error); exit with the\n"
      "                   first run's status (docs/localize.md). Not with --block or --report.\n"
      "\n"
      "cuda-blockrun report merges the reports (--report) of every process of a job, given as files or a\n"
      "directory of *.jsonl files, into one verdict: which process failed first and its culprit, and what\n"
      "became of the others (docs/distributed.md). --json prints it as one JSON object. (A program named\n"
      "`report` is run with `cuda-blockrun -- report`.)\n"
      "\n"
      "Every option is also an environment variable, read by the shim in each process it is loaded into;\n"
      "flags given here override the environment. See docs/config.md; the policy language: docs/policy.md.\n"
      "exit status: the program's own; 2 for an invalid option or a program that cannot be found.\n",
      blockrun::configuration_help_text().c_str());
}

namespace {

void list_hooks() {
  std::printf("%-32s %-9s %-17s %-11s %s\n", "symbol", "layer", "kind", "stream 0", "reachable by");
  for (const blockrun::HookEntry& hook : blockrun::kHookList) {
    // Every hook is an exported symbol and is answered by the dlsym interposer on its library's handle;
    // driver functions are also handed out by the cuGetProcAddress wrappers.
    bool driver = std::strcmp(hook.layer, "Driver") == 0;
    std::printf("%-32s %-9s %-17s %-11s %s\n", hook.name, hook.layer, hook.kind, hook.stream,
                driver ? "symbol, dlsym, cuGetProcAddress" : "symbol, dlsym");
  }
  std::printf("\n%zu CUDA symbols, and the loader's dlsym.\n", blockrun::kHookCount);
}

// The driver this machine would give a CUDA program, asked in this process (never in the program's).
std::string driver_version() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!driver) return "no CUDA driver found (libcuda.so.1 cannot be loaded)";
  using GetVersion = int (*)(int*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(driver, "cuDriverGetVersion"));
  int version = 0;
  std::string text = "a libcuda.so.1 without cuDriverGetVersion";
  if (get_version && get_version(&version) == 0) {
    text =
        "driver supports CUDA " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  }
  dlclose(driver);
  return text;
}

// What the command line asks for: the flags' settings (variable -> value), --explain's description,
// --localize, and where the program's argv begins.
struct Invocation {
  std::map<std::string, std::string> settings;
  std::optional<std::string> explain;
  bool localize = false;
  int program = 0;
};

// A flag of src/options.def at argv[index] (its value inline, next, or 1 for a switch): its value, checked,
// into the settings; returns the index of the last argument it took.
int take_option(int argc, char** argv, int index, Invocation* invocation) {
  std::string argument = argv[index];
  std::string flag = argument.substr(0, argument.find('='));
  std::optional<std::string> inline_value;
  if (argument.find('=') != std::string::npos) inline_value = argument.substr(argument.find('=') + 1);
  const blockrun::OptionSpec* spec = nullptr;
  for (const blockrun::OptionSpec& candidate : blockrun::option_specs()) {
    if (*candidate.flag && flag == candidate.flag) spec = &candidate;
  }
  if (!spec) usage_error("unknown option '" + argument + "'");
  std::string value;
  if (inline_value) {
    value = *inline_value;
  } else if (spec->kind == blockrun::OptionKind::Switch) {
    value = "1";
  } else if (index + 1 < argc && std::strncmp(argv[index + 1], "--", 2) != 0) {
    value = argv[++index];
  } else if (index + 1 < argc) {
    // `--block -- ./app` took `--` as the policy and ran the program unblocked (issue 17, F18).
    usage_error(std::string("option ") + spec->flag + " needs a value (" + spec->accepted + "), not '" +
                argv[index + 1] + "'; for a value that starts with --, write " + spec->flag + "=VALUE");
  } else {
    usage_error(std::string("option ") + spec->flag + " needs a value (" + spec->accepted + ")");
  }
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

// Reads the options up to the program (or `--`); the informational ones (--help, --version, --list-hooks,
// --help-config-markdown) print and exit here.
Invocation parse_command_line(int argc, char** argv) {
  Invocation invocation;
  int index = 1;
  for (; index < argc; ++index) {
    std::string argument = argv[index];
    if (argument == "--") {
      ++index;
      break;
    }
    if (argument.rfind("--", 0) != 0) break;  // the program
    if (argument == "--help" || argument == "-h") {
      print_usage(stdout);
      std::exit(0);
    }
    if (argument == "--version") {
      std::printf("cuda-blockrun %s (built against CUDA %s; %s)\n", CUDA_BLOCKRUN_VERSION,
                  CUDA_BLOCKRUN_CUDA_VERSION, driver_version().c_str());
      std::exit(0);
    }
    if (argument == "--list-hooks") {
      list_hooks();
      std::exit(0);
    }
    if (argument == "--help-config-markdown") {
      std::fputs(blockrun::configuration_reference_markdown().c_str(), stdout);
      std::exit(0);
    }
    if (argument == "--explain" || argument.rfind("--explain=", 0) == 0) {
      if (argument == "--explain" && index + 1 >= argc)
        usage_error("option --explain needs a launch description");
      invocation.explain = argument == "--explain" ? argv[++index] : argument.substr(10);
    } else if (argument == "--localize") {
      invocation.localize = true;
    } else {
      index = take_option(argc, argv, index, &invocation);
    }
  }
  invocation.program = index;
  return invocation;
}

// The whole configuration (environment and flags together) as the shim will see it; its errors end the
// wrapper before the program starts.
blockrun::Config checked_configuration(const std::map<std::string, std::string>& settings) {
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
    usage_error("the program was not started");
  }
  return checked.config;
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
  const char* preload = std::getenv("LD_PRELOAD");
  std::string preload_value = *shim;
  if (preload && *preload) preload_value += std::string(":") + preload;
  setenv("LD_PRELOAD", preload_value.c_str(), 1);
}

}  // namespace

}  // namespace blockrun::cli

using namespace blockrun::cli;

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "report") == 0) return report_command(argc - 2, argv + 2);
  Invocation invocation = parse_command_line(argc, argv);
  if (invocation.explain) return explain_launch(invocation.settings, *invocation.explain);
  if (invocation.program >= argc) usage_error("no program given");
  if (invocation.localize) {
    for (const char* variable : {blockrun::variable::block, blockrun::variable::report}) {
      if (invocation.settings.count(variable) || std::getenv(variable))
        usage_error(std::string("--localize chooses what to block and writes its own reports: it cannot be "
                                "combined with ") +
                    variable + " (--block, --report)");
    }
  }
  blockrun::Config config = checked_configuration(invocation.settings);
  char** program_argv = argv + invocation.program;
  std::string program = program_argv[0];
  if (!find_program(program)) usage_error("program '" + program + "' not found or not executable");
  prepare_environment(invocation.settings);
  if (invocation.localize) {
    // Breadcrumbs unless the user set CUDA_BLOCKRUN_BREADCRUMBS (flag or environment) to off.
    // (The flags are in the environment by now.)
    return localize_culprit(program_argv,
                            !std::getenv(blockrun::variable::breadcrumbs) || config.breadcrumbs);
  }
  execvp(program.c_str(), program_argv);
  std::fprintf(stderr, "cuda-blockrun: cannot run '%s': %s\n", program.c_str(), std::strerror(errno));
  return kUsageError;
}
