// cuda-blockrun: runs a program with the shim preloaded and its options set, after checking them.
//
//   cuda-blockrun [options] [--] program [args...]
//
// Every option maps to a CUDA_BLOCKRUN_* variable (src/options.def), so the same configuration
// works without the wrapper (LD_PRELOAD=libcuda_blockrun.so CUDA_BLOCKRUN_BLOCK=all ./app). The
// wrapper checks the configuration with the shim's own parser before anything runs, finds the shim
// beside itself (build tree or install tree: bin/../lib), and replaces itself with the program, so
// the program's exit status is its own.
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "config.h"
#include "hook_list.h"
#include "job_report.h"
#include "localize.h"
#include "names.h"

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
      "                   anything: a kernel name and any of #N ordinal=N family=F library=CALL\n"
      "                   stream=0x... thread=N after=SECONDS\n"
      "                   (e.g. --block 'stencil#13' --explain 'stencil ordinal=13')\n"
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
  if (auto found = settings.find(blockrun::variable::block); found != settings.end()) {
    policy_text = found->second;
  } else if (const char* variable = std::getenv(blockrun::variable::block)) {
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
    // A whole number, decimal or 0x hexadecimal, nothing else (issue 17, F18: '#zzz' and 'ordinal=-1' were
    // read as 0 and 2^64-1).
    auto number_after = [&](size_t prefix) -> uint64_t {
      const std::string digits = term.substr(prefix);
      bool hex = digits.rfind("0x", 0) == 0 || digits.rfind("0X", 0) == 0;
      const std::string body = hex ? digits.substr(2) : digits;
      errno = 0;
      char* end = nullptr;
      unsigned long long value = std::strtoull(body.c_str(), &end, hex ? 16 : 10);
      if (body.empty() || !std::isxdigit(static_cast<unsigned char>(body[0])) || *end || errno == ERANGE)
        usage_error("--explain: '" + term + "' needs a whole number after '" + term.substr(0, prefix) + "'");
      return value;
    };
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

// ---- report ----

// `cuda-blockrun report [--json] FILE...|DIR`: exit status 0 with a verdict, 2 when nothing could be read.
int report_command(int argc, char** argv) {
  bool as_json = false;
  std::vector<std::string> paths;
  for (int index = 0; index < argc; ++index) {
    std::string argument = argv[index];
    if (argument == "--json") {
      as_json = true;
    } else if (argument == "--help" || argument == "-h") {
      print_usage(stdout);
      return 0;
    } else if (argument.rfind("--", 0) == 0 && argument != "--") {
      usage_error("report: unknown option '" + argument + "' (accepted: --json)");
    } else if (argument != "--") {
      paths.push_back(argument);
    }
  }
  if (paths.empty()) usage_error("report: give the report files, or a directory of them (*.jsonl)");
  std::vector<std::pair<std::string, std::string>> reports;
  auto read = [&](const std::string& path) {
    std::ifstream file(path);
    if (!file) usage_error("report: cannot read '" + path + "': " + std::strerror(errno));
    std::stringstream contents;
    contents << file.rdbuf();
    reports.emplace_back(path, contents.str());
  };
  for (const std::string& path : paths) {
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) usage_error("report: no such file or directory: '" + path + "'");
    if (!S_ISDIR(info.st_mode)) {
      read(path);
      continue;
    }
    std::vector<std::string> found;
    if (DIR* listing = opendir(path.c_str())) {
      while (dirent* entry = readdir(listing)) {
        std::string name = entry->d_name;
        std::string full = path + "/" + name;
        if (name.size() > 6 && name.compare(name.size() - 6, 6, ".jsonl") == 0 && is_file(full))
          found.push_back(full);
      }
      closedir(listing);
    }
    if (found.empty()) usage_error("report: no *.jsonl report files in '" + path + "'");
    std::sort(found.begin(), found.end());
    for (const std::string& file : found) read(file);
  }
  std::vector<blockrun::ProcessOutcome> processes = blockrun::read_job(reports);
  if (as_json) {
    std::printf("%s\n", blockrun::job_json(processes).c_str());
  } else {
    for (const std::string& line : blockrun::describe_job(processes)) std::printf("%s\n", line.c_str());
  }
  return 0;
}

// ---- --localize ----

void say(const std::string& line) {
  std::fprintf(stderr, "[cuda-blockrun] %s\n", line.c_str());
}

// Runs the program with `block` as its policy and its reports written under `directory` (one per
// process: %p), waits for it, and returns its status as a shell gives it (128 + N for signal N).
// `graph_breadcrumbs`: the debug mode for graphs, unless the user set it.
int run_once(char** program_argv, const std::string& block, const std::string& report_pattern,
             bool graph_breadcrumbs = false) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "cuda-blockrun: cannot start the program: %s\n", std::strerror(errno));
    return kUsageError;
  }
  if (child == 0) {
    setenv(blockrun::variable::block, block.c_str(), 1);
    setenv(blockrun::variable::report, report_pattern.c_str(), 1);
    // Breadcrumbs unless the user turned them off (--breadcrumbs=0): in run 1 they name the culprit exactly;
    // in run 2 they show that the launches before the blocked one completed, so its failure is exact.
    setenv(blockrun::variable::breadcrumbs, "1", 0);
    if (graph_breadcrumbs) setenv(blockrun::variable::graph_breadcrumbs, "1", 0);
    execvp(program_argv[0], program_argv);
    std::fprintf(stderr, "cuda-blockrun: cannot run '%s': %s\n", program_argv[0], std::strerror(errno));
    _exit(127);
  }
  // The program's Ctrl-C is its own: the wrapper waits for it to end rather than dying first.
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The report files of one run: `directory`/`prefix`*.jsonl, with their contents.
std::vector<std::pair<std::string, std::string>> read_reports(const std::string& directory,
                                                              const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> reports;
  if (DIR* listing = opendir(directory.c_str())) {
    while (dirent* entry = readdir(listing)) {
      std::string name = entry->d_name;
      if (name.rfind(prefix, 0) != 0) continue;
      std::ifstream file(directory + "/" + name);
      std::stringstream contents;
      contents << file.rdbuf();
      reports.emplace_back(directory + "/" + name, contents.str());
    }
    closedir(listing);
  }
  std::sort(reports.begin(), reports.end());
  return reports;
}

void say_culprit(const blockrun::JsonValue& first_error) {
  bool first = true;
  for (const std::string& line : blockrun::describe_culprit(first_error)) {
    say((first ? "localize: culprit: " : "  ") + line);
    first = false;
  }
}

void say_suspects(const blockrun::JsonValue& first_error) {
  say("localize: the culprit is among the launches not known to have completed, oldest first:");
  for (const std::string& line : blockrun::describe_suspects(first_error)) say("    " + line);
}

// Run 1's finding, where run 2 could not improve on it: its culprit (found by breadcrumbs) or its suspects.
void say_first_finding(const blockrun::JsonValue& first_error) {
  if (blockrun::is_exact(first_error)) {
    say_culprit(first_error);
    say("  found in run 1 by breadcrumbs (its call site is the caller of the CUDA entry point only)");
  } else {
    say_suspects(first_error);
  }
}

// Runs the program once with nothing blocked and, when its first CUDA error is not pinned to a launch, once
// more blocking only the suspected kernels; prints one verdict. Returns the first run's status.
// `breadcrumbs`: whether the runs have them (on unless the user turned them off).
int localize_culprit(char** program_argv, bool breadcrumbs) {
  const char* temporary = std::getenv("TMPDIR");
  std::string directory =
      std::string(temporary && *temporary ? temporary : "/tmp") + "/cuda-blockrun-localize.XXXXXX";
  if (!mkdtemp(directory.data())) {
    std::fprintf(stderr, "cuda-blockrun: cannot create a directory for the reports (%s): %s\n",
                 directory.c_str(), std::strerror(errno));
    return kUsageError;
  }
  say(std::string("localize: run 1: nothing blocked, breadcrumbs ") + (breadcrumbs ? "on" : "off") +
      " (reports in " + directory + ")");
  int status = run_once(program_argv, "none", directory + "/run1.%p.jsonl");
  blockrun::RunFinding first = blockrun::find_first_error(read_reports(directory, "run1."));
  if (first.reports == 0) {
    say("localize: run 1 (exit status " + std::to_string(status) +
        ") wrote no report: no process used CUDA with the shim active (the program used no CUDA, or "
        "CUDA_BLOCKRUN=0, --process or --ranks left its processes out)");
    return status;
  }
  if (!first.found) {
    say("localize: no CUDA error in run 1 (exit status " + std::to_string(status) + "): nothing to localize");
    return status;
  }
  bool exact = blockrun::is_exact(first.first_error);
  if (!blockrun::needs_second_run(first.first_error)) {
    say_culprit(first.first_error);
    if (first.first_error.text("method") == "breadcrumbs") {
      say("  found in run 1 by breadcrumbs, nothing blocked: the first launch on its stream that did not "
          "complete; its call site is the caller of the CUDA entry point" +
          std::string(blockrun::has_python_line(first.first_error)
                          ? " and the Python line kept for the launch"
                          : "") +
          ". No second run needed.");
    } else {
      say("  found in run 1: " + first.first_error.text("how"));
    }
    return status;
  }
  std::string policy = blockrun::second_run_policy(first.first_error);
  bool graphs = blockrun::second_run_wants_graph_breadcrumbs(first.first_error);
  say("localize: run 1: " + first.first_error.text("error") + " surfaced at " +
      first.first_error.text("surfaced_api") +
      (exact ? graphs ? ", in a graph replay found by breadcrumbs, its node not known"
                      : ", its launch found by breadcrumbs but not where it was launched"
             : ", not pinned to a launch") +
      "; run 2: --block '" + policy + "'" +
      (graphs ? " --graph-breadcrumbs (breadcrumbs inside graphs)" : ""));
  int second_status = run_once(program_argv, policy, directory + "/run2.%p.jsonl", graphs);
  blockrun::RunFinding second = blockrun::find_first_error(read_reports(directory, "run2."));
  switch (blockrun::compare_runs(first.first_error, second)) {
    case blockrun::SecondRun::Pinned:
      say_culprit(second.first_error);
      say(exact ? "  found in run 1 by breadcrumbs; run 2, which blocked '" + policy +
                      "', confirmed it and took its call site"
                : "  found in run 2, which blocked '" + policy + "'; run 1 gave the same error unpinned");
      break;
    case blockrun::SecondRun::NotPinned:
      say("localize: run 2 (--block '" + policy + "') failed with " + second.first_error.text("error") +
          " but not at a blocked launch either; keeping run 1's finding. Try --block all.");
      say_first_finding(first.first_error);
      break;
    case blockrun::SecondRun::NoFault:
      say("localize: run 2 (--block '" + policy + "') ran without a CUDA error (exit status " +
          std::to_string(second_status) +
          "): the fault did not recur, so blocking changed what happened; keeping "
          "run 1's finding.");
      say_first_finding(first.first_error);
      break;
    case blockrun::SecondRun::Diverged:
      say("localize: run 2 diverged: it failed in another kernel or with another error than run 1; keeping "
          "run 1's finding. Run 2 found:");
      for (const std::string& line : blockrun::describe_culprit(second.first_error)) say("    " + line);
      say_first_finding(first.first_error);
      break;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> settings;  // variable -> value, from flags
  std::optional<std::string> explain;
  bool localize = false;
  if (argc > 1 && std::strcmp(argv[1], "report") == 0) return report_command(argc - 2, argv + 2);
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
    if (argument == "--localize") {
      localize = true;
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
    if (spec->kind == blockrun::OptionKind::Policy && settings.count(spec->variable)) {
      settings[spec->variable] += "; " + value;
    } else {
      settings[spec->variable] = value;
    }
  }
  if (explain) return explain_launch(settings, *explain);
  if (index >= argc) usage_error("no program given");
  if (localize) {
    for (const char* variable : {blockrun::variable::block, blockrun::variable::report}) {
      if (settings.count(variable) || std::getenv(variable))
        usage_error(std::string("--localize chooses what to block and writes its own reports: it cannot be "
                                "combined with ") +
                    variable + " (--block, --report)");
    }
  }

  // Check the whole configuration (environment and flags together) as the shim will see it.
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

  std::string program = argv[index];
  if (!find_program(program)) usage_error("program '" + program + "' not found or not executable");
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
  if (localize) {
    // Breadcrumbs unless the user set CUDA_BLOCKRUN_BREADCRUMBS (flag or environment) to off.
    // (The flags are in the environment by now.)
    return localize_culprit(argv + index,
                            !std::getenv(blockrun::variable::breadcrumbs) || checked.config.breadcrumbs);
  }

  execvp(program.c_str(), argv + index);
  std::fprintf(stderr, "cuda-blockrun: cannot run '%s': %s\n", program.c_str(), std::strerror(errno));
  return kUsageError;
}
