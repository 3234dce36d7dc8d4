// cuda-blockrun: runs a program with the shim preloaded and its options set, after checking them.
//
//   cuda-blockrun [options] [--] program [args...]
//
// Every option maps to a CUDA_BLOCKRUN_* variable (src/options.def), so the same configuration
// works without the wrapper (LD_PRELOAD=libcuda_blockrun.so CUDA_BLOCKRUN_BLOCK=all ./app). The
// wrapper checks the configuration with the shim's own parser before anything runs, finds the shim
// beside itself (build tree or install tree: bin/../lib), and replaces itself with the program, so
// the program's exit status is its own.
#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "names.h"
#include "hook_list.h"

#ifndef CUDA_BLOCKRUN_VERSION
#define CUDA_BLOCKRUN_VERSION "unknown"
#endif
#ifndef CUDA_BLOCKRUN_CUDA_VERSION
#define CUDA_BLOCKRUN_CUDA_VERSION "unknown"
#endif
#ifndef CUDA_BLOCKRUN_INSTALL_LIBDIR
#define CUDA_BLOCKRUN_INSTALL_LIBDIR "lib"
#endif

extern char** environ;

namespace {

constexpr const char* kShimFile = "libcuda_blockrun.so";
constexpr int kUsageError = 2;

void print_usage(FILE* out) {
  std::fprintf(
      out,
      "usage: cuda-blockrun [options] [--] program [args...]\n"
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
      "                   anything: a kernel name and any of #N ordinal=N family=F library=CALL\n"
      "                   stream=0x... thread=N after=SECONDS\n"
      "                   (e.g. --block 'stencil#13' --explain 'stencil ordinal=13')\n"
      "\n"
      "Every option is also an environment variable, read by the shim in each process it is loaded into;\n"
      "flags given here override the environment. See docs/config.md; the policy language: docs/policy.md.\n"
      "exit status: the program's own; 2 for an invalid option or a program that cannot be found.\n",
      blockrun::configuration_help_text().c_str());
}

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

bool is_file(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
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

// The program as execvp would find it, or nullopt.
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

void list_hooks() {
  std::printf("%-32s %-9s %-17s %-11s %s\n", "symbol", "family", "kind", "stream 0", "reachable by");
  for (const blockrun::HookEntry& hook : blockrun::kHookList) {
    // Every hook is an exported symbol and is answered by the dlsym interposer on its library's handle;
    // driver functions are also handed out by the cuGetProcAddress wrappers.
    bool driver = std::strcmp(hook.family, "Driver") == 0;
    std::printf("%-32s %-9s %-17s %-11s %s\n", hook.name, hook.family, hook.kind, hook.stream,
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

// --explain: how the configured policy (flags, else CUDA_BLOCKRUN_BLOCK) treats a described launch:
// a kernel name (mangled or demangled), and any of #N, ordinal=N, family=, library=, stream=, thread=,
// after=.
int explain_launch(const std::map<std::string, std::string>& settings, const std::string& description) {
  std::string policy_text = "none";
  if (auto found = settings.find("CUDA_BLOCKRUN_BLOCK"); found != settings.end()) {
    policy_text = found->second;
  } else if (const char* variable = std::getenv("CUDA_BLOCKRUN_BLOCK")) {
    policy_text = variable;
  }
  std::string error;
  std::optional<blockrun::Policy> policy = blockrun::Policy::parse(policy_text, &error);
  if (!policy) usage_error("invalid CUDA_BLOCKRUN_BLOCK='" + policy_text + "': " + error);

  blockrun::LaunchFacts facts;
  blockrun::KernelName kernel;
  std::string library;
  bool have_kernel = false;
  facts.sequence = 1;
  facts.kernel_ordinal = 1;
  facts.thread = 1;
  for (const std::string& term : blockrun::split_top_level(description, " \t")) {
    if (term.empty()) continue;
    auto number_after = [&](size_t prefix) { return std::strtoull(term.c_str() + prefix, nullptr, 0); };
    if (term[0] == '#') {
      facts.sequence = number_after(1);
    } else if (term.rfind("ordinal=", 0) == 0) {
      facts.kernel_ordinal = number_after(8);
    } else if (term.rfind("thread=", 0) == 0) {
      facts.thread = static_cast<uint32_t>(number_after(7));
    } else if (term.rfind("stream=", 0) == 0) {
      facts.stream = reinterpret_cast<const void*>(static_cast<uintptr_t>(number_after(7)));
    } else if (term.rfind("after=", 0) == 0) {
      facts.elapsed_ms = number_after(6) * 1000;
    } else if (term.rfind("library=", 0) == 0) {
      library = term.substr(8);
    } else if (term.rfind("family=", 0) == 0) {
      std::string family = term.substr(7);
      bool known = false;
      for (int f = 0; f < 4; ++f) {
        if (family == blockrun::launch_family_name(static_cast<blockrun::LaunchFamily>(f))) {
          facts.family = static_cast<blockrun::LaunchFamily>(f);
          known = true;
        }
      }
      if (!known)
        usage_error("--explain: family must be runtime, driver, cublas or graph, not '" + family + "'");
    } else {
      kernel = blockrun::make_kernel_name(term.c_str());
      have_kernel = true;
    }
  }
  if (have_kernel) facts.kernel = &kernel;
  if (!library.empty()) {
    facts.library_api = library.c_str();
    facts.library_unit = !have_kernel;
  }
  if (!have_kernel && library.empty()) usage_error("--explain: name a kernel (or library=CALL) to explain");

  blockrun::Decision decision = policy->decide(facts);
  std::vector<std::string> rules = policy->describe_rules();
  std::string what = have_kernel ? "kernel " + kernel.demangled : "library call " + library;
  std::printf("%s, launch #%llu (its launch %llu), family %s", what.c_str(),
              static_cast<unsigned long long>(facts.sequence),
              static_cast<unsigned long long>(facts.kernel_ordinal),
              blockrun::launch_family_name(facts.family));
  if (have_kernel && !library.empty()) std::printf(", launched by %s", library.c_str());
  std::printf(":\n");
  static const char* const kActions[] = {"not blocked", "blocked (its stream is synchronized after it)",
                                         "blocked (the device is synchronized after it)",
                                         "logged, not blocked"};
  std::printf("  %s", kActions[static_cast<int>(decision.action)]);
  if (decision.blocks()) {
    if (decision.on_error == blockrun::OnError::Abort) std::printf("; on error: report, then abort");
    if (decision.on_error == blockrun::OnError::Exit)
      std::printf("; on error: report, then exit %d", decision.exit_status);
    if (decision.on_error == blockrun::OnError::Return) std::printf("; on error: returned to the program");
  }
  std::printf("\n");
  if (decision.rule >= 0) {
    std::printf("  decided by rule %d: '%s'\n", decision.rule + 1,
                rules[static_cast<size_t>(decision.rule)].c_str());
  } else if (have_kernel && blockrun::is_nccl_kernel(kernel) && !rules.empty()) {
    std::printf("  decided by the NCCL default: NCCL kernels are blocked only by a rule that names them\n");
  } else {
    std::printf("  no rule matches (policy: %s)\n", policy->describe().c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> settings;  // variable -> value, from flags
  std::optional<std::string> explain;
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
      return 0;
    }
    if (argument == "--version") {
      std::printf("cuda-blockrun %s (built against CUDA %s; %s)\n", CUDA_BLOCKRUN_VERSION,
                  CUDA_BLOCKRUN_CUDA_VERSION, driver_version().c_str());
      return 0;
    }
    if (argument == "--list-hooks") {
      list_hooks();
      return 0;
    }
    if (argument == "--explain" || argument.rfind("--explain=", 0) == 0) {
      if (argument == "--explain" && index + 1 >= argc)
        usage_error("option --explain needs a launch description");
      explain = argument == "--explain" ? argv[++index] : argument.substr(10);
      continue;
    }
    if (argument == "--help-config-markdown") {
      std::fputs(blockrun::configuration_reference_markdown().c_str(), stdout);
      return 0;
    }
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
    } else if (index + 1 < argc) {
      value = argv[++index];
    } else {
      usage_error(std::string("option ") + spec->flag + " needs a value (" + spec->accepted + ")");
    }
    if (std::optional<blockrun::ConfigError> error = blockrun::check_value(*spec, value)) {
      usage_error(std::string(spec->flag) + ": " + error->message());
    }
    // --block may be repeated: the rules are joined in the order given.
    if (spec->kind == blockrun::OptionKind::Policy && settings.count(spec->variable)) {
      settings[spec->variable] += "; " + value;
    } else {
      settings[spec->variable] = value;
    }
  }
  if (explain) return explain_launch(settings, *explain);
  if (index >= argc) usage_error("no program given");

  // Check the whole configuration (environment and flags together) as the shim will see it.
  std::vector<std::string> variables;
  for (char** entry = environ; entry && *entry; ++entry) {
    if (std::strncmp(*entry, "CUDA_BLOCKRUN", 13) != 0) continue;
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

  std::string program = argv[index];
  if (!find_program(program)) usage_error("program '" + program + "' not found or not executable");
  std::optional<std::string> shim = find_shim();
  if (!shim) {
    usage_error(std::string("cannot find ") + kShimFile + " beside " + directory_of_executable() +
                " (expected in ../lib/); is cuda-blockrun installed completely?");
  }

  for (const auto& [variable, value] : settings) setenv(variable.c_str(), value.c_str(), 1);
  const char* preload = std::getenv("LD_PRELOAD");
  std::string preload_value = *shim;
  if (preload && *preload) preload_value += std::string(":") + preload;
  setenv("LD_PRELOAD", preload_value.c_str(), 1);

  execvp(program.c_str(), argv + index);
  std::fprintf(stderr, "cuda-blockrun: cannot run '%s': %s\n", program.c_str(), std::strerror(errno));
  return kUsageError;
}
