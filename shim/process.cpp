// The shim's life in the host process: reading the configuration when the library is loaded
// (stopping the program with status 2 if it is invalid), staying inert where it must, creating the
// engine and its log on the first CUDA call, naming kernels, describing errors, and the summary at exit.
#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <vector>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "blocking.h"
#include "config/config.h"
#include "engine.h"
#include "call_stack.h"
#include "python_frames.h"
#include "facts.h"
#include "kernel_names.h"
#include "launch_gate.h"
#include "report/report_file.h"
#include "callsites/loaded_objects.h"
#include "report/log_file.h"
#include "cuda/names.h"
#include "shim.h"
#include "signals.h"

namespace blockrun::shim {

namespace {

enum class State { Unset, Inert, Active };

std::atomic<State> g_state{State::Unset};
std::once_flag g_configure_once;
std::atomic<bool> g_loaded_after_start{false};  // dlopen after start, not LD_PRELOAD (on_load)
Config* g_config = nullptr;                     // never freed: CUDA calls can come after static destructors
OutputFile* g_standard_error = nullptr;  // the log's default, standard error as it was at load; never freed
// Serializes creating the engine. A pointer, so that a forked child gets a fresh one: another thread of the
// parent may have held it at the fork, and that thread does not exist in the child.
std::mutex* g_engine_creation = new std::mutex;
std::atomic<bool> g_fork_handler{false};
// Set in a forked child (until an exec loads the shim afresh): its log lines carry its pid (log_prefix).
std::atomic<bool> g_forked_child{false};
timespec g_configured_at{};  // when the configuration was read: the process's start, near enough

// In a forked child (a DataLoader worker, a subprocess before exec): the parent's engine is left alone,
// never used or destroyed here (its locks may be held by parent threads that do not exist in the child, its
// counts and files are the parent's). The child starts clean: its own engine, log and report files (%p is
// its own pid), if and when it makes a CUDA call; a child that never does writes nothing.
void start_clean_after_fork() {
  g_engine_creation = new std::mutex;  // the parent's may be locked forever here
  g_engine.store(nullptr, std::memory_order_release);
  g_forked_child.store(true, std::memory_order_relaxed);
  forget_fatal_signal_reports_after_fork();
  reset_blocking_after_fork();
  reset_launch_gate_after_fork();
}

// Two installs of the shim in one process (issue 40, N14: `cuda-blockrun -- /other/bin/cuda-blockrun -- app`
// preloads both): the program's calls reach the one first in the loader's list, which observes the process.
// It skips the other when it looks for the real functions (find_real), so that the other's wrappers never see
// its calls. The other steps aside: it reads no configuration and passes every call through, yet still hands
// out its wrappers for cuGetProcAddress and dlsym, so that a first copy of an older version, whose "real"
// functions are these wrappers, still recognizes what the driver hands out. It is said once: by the first
// copy in its log, else (an older first copy) by this one at the first CUDA call that reaches it, on standard
// error as it was at load (never freed).
const std::string* g_other_shim = nullptr;  // set where this copy stepped aside
std::atomic<bool> g_to_say_stepped_aside{false};
OutputFile* g_stepped_aside_error = nullptr;

// The path of another copy of the shim before this one in the loader's list (`earlier`) or after it; "" where
// there is none.
std::string other_shim_copy(bool earlier) {
  Dl_info own{};
  if (!dladdr(reinterpret_cast<const void*>(&other_shim_copy), &own)) return "";
  std::string found;
  bool after_own = false;
  visit_loaded_objects([&](const LoadedObject& object) {
    if (object.info.dlpi_addr == reinterpret_cast<ElfW(Addr)>(own.dli_fbase)) {
      after_own = true;
      return earlier;  // nothing before this one: no earlier copy
    }
    if (after_own == earlier || !is_shim_copy(object)) return false;
    found = object.path;
    return true;
  });
  return found;
}

std::string shim_module_path();

std::string two_shims_line(const std::string& observing, const std::string& stepping_aside) {
  return "two cuda-blockrun shims are loaded: " + observing + " observes this process, " + stepping_aside +
         " steps aside (each launch is seen once)";
}

void say_stepped_aside() {
  if (!g_stepped_aside_error || !g_other_shim) return;
  std::string line = "[cuda-blockrun] " + two_shims_line(*g_other_shim, shim_module_path()) + "\n";
  g_stepped_aside_error->write_record(line.data(), line.size());
}

EnvLookup process_environment() {
  return [](const std::string& variable) -> std::optional<std::string> {
    const char* value = std::getenv(variable.c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

std::string read_file_text(const char* path) {
  std::string text;
  if (FILE* file = std::fopen(path, "re")) {
    char buffer[4096];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, got);
    std::fclose(file);
  }
  return text;
}

// The process's name (/proc/self/comm) and its arguments (/proc/self/cmdline), as the kernel has them.
std::string process_name() {
  std::string name = read_file_text("/proc/self/comm");
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

std::vector<std::string> process_arguments() {
  std::string command_line = read_file_text("/proc/self/cmdline");
  std::vector<std::string> arguments;
  for (size_t start = 0; start < command_line.size();) {
    size_t end = command_line.find('\0', start);
    if (end == std::string::npos) end = command_line.size();
    arguments.push_back(command_line.substr(start, end - start));
    start = end + 1;
  }
  return arguments;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

// CUDA_BLOCKRUN_PROCESS and CUDA_BLOCKRUN_RANKS: the shim acts in the chosen processes of a job only.
bool selects_this_process(const Config& config) {
  if (config.process.empty() && config.ranks.all) return true;
  std::string command_line;
  for (const std::string& argument : process_arguments()) command_line += argument + ' ';
  while (!command_line.empty() && command_line.back() == ' ') command_line.pop_back();
  return selects_process(config, process_name(), command_line, rank_from_environment(process_environment()));
}

void configure() {
  // A setuid or setgid program must not read paths or policies from an untrusted environment.
  if (getauxval(AT_SECURE)) {
    g_state.store(State::Inert);
    return;
  }
  if (switched_off(process_environment())) {
    g_state.store(State::Inert);
    return;
  }
  // Before the configuration is read: the copy that observes the process reads it (and stops the program on
  // a bad one); this one must not stop it for a variable only its own version does not know.
  std::string other_shim = other_shim_copy(true);
  if (!other_shim.empty()) {
    g_other_shim = new std::string(std::move(other_shim));
    g_stepped_aside_error = OutputFile::standard_error().release();
    g_to_say_stepped_aside.store(true, std::memory_order_relaxed);
    g_state.store(State::Inert);
    return;
  }
  ConfigResult parsed = parse_config_from_environment();
  if (!parsed.errors.empty()) {
    for (const ConfigError& error : parsed.errors)
      std::fprintf(stderr, "cuda-blockrun: %s\n", error.message().c_str());
    if (g_loaded_after_start.load(std::memory_order_relaxed)) {
      // The program is well under way (a notebook's kernel): it goes on, unobserved, rather than end here.
      std::fprintf(stderr, "cuda-blockrun: not enabled in this process; see `cuda-blockrun --help`\n");
      g_state.store(State::Inert);
      return;
    }
    std::fprintf(stderr,
                 "cuda-blockrun: the program was not started (exit status 2); see `cuda-blockrun --help`\n");
    std::fflush(stderr);
    _exit(2);
  }
  if (!parsed.config.enabled || !selects_this_process(parsed.config)) {
    g_state.store(State::Inert);
    return;
  }
  g_config = new Config(std::move(parsed.config));
  clock_gettime(CLOCK_REALTIME, &g_configured_at);
  // Standard error as it is now, before main(): the program may close it and open a file of its own there
  // before its first CUDA call, when the engine and its log are made (issue 17, F6).
  g_standard_error = OutputFile::standard_error().release();
  if (!g_fork_handler.exchange(true)) pthread_atfork(nullptr, nullptr, start_clean_after_fork);
  g_state.store(State::Active);
}

// What starts this process's log lines (log_prefix): decided once, when its engine is made.
std::string this_log_prefix(const Config& config) {
  LogAuthor author;
  author.pid = static_cast<long>(getpid());
  author.rank = rank_variable(process_environment());
  author.forked_child = g_forked_child.load(std::memory_order_relaxed);
  author.own_file = !config.log.empty() && path_names_process(config.log);
  return log_prefix(author);
}

std::shared_ptr<spdlog::logger> make_logger(const Config& config, const std::string& prefix,
                                            OutputFile** log_file) {
  std::shared_ptr<spdlog::sinks::sink> sink;
  std::string problem;
  *log_file = nullptr;
  if (!config.log.empty()) {
    std::string path = expand_path(config.log, static_cast<long>(getpid()),
                                   rank_from_environment(process_environment()), host_name());
    auto file = open_log_file(path, config.private_files, &problem);
    if (file) *log_file = file->file();
    sink = file;
  }
  if (!sink) {
    // Standard error as it was when the shim was loaded: a program that closes its stderr and opens a file of
    // its own there never gets the shim's lines in it (issue 17, F6).
    if (g_standard_error) {
      auto file =
          std::make_shared<LogFileSink>(std::shared_ptr<OutputFile>(g_standard_error, [](OutputFile*) {}));
      *log_file = file->file();
      sink = file;
    } else {
      sink = std::make_shared<spdlog::sinks::null_sink_mt>();  // standard error is closed: the log is silent
    }
  }
  // Not registered with spdlog's registry: the registry is a static that dies at exit, and CUDA
  // calls (and so log lines) can come later than that.
  auto logger = std::make_shared<spdlog::logger>("cuda-blockrun", std::move(sink));
  logger->set_pattern(prefix + " %v");
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::warn);
  logger->set_error_handler([](const std::string&) {});  // the shim's logging must never disturb the program
  if (!problem.empty()) logger->warn("{}", problem);
  return logger;
}

ErrorText describe_error(ErrorCode error) {
  const char* name = nullptr;
  const char* text = nullptr;
  switch (error.layer) {
    case Layer::Runtime:
      if (auto get_name = helper<Helper::cudaGetErrorName>())
        name = get_name(static_cast<cudaError_t>(error.code));
      if (auto get_text = helper<Helper::cudaGetErrorString>())
        text = get_text(static_cast<cudaError_t>(error.code));
      break;
    case Layer::Driver:
      if (auto get_name = helper<Helper::cuGetErrorName>())
        get_name(static_cast<CUresult>(error.code), &name);
      if (auto get_text = helper<Helper::cuGetErrorString>())
        get_text(static_cast<CUresult>(error.code), &text);
      break;
    case Layer::Cublas:
    case Layer::CublasLt:
      if (auto get_name = helper<Helper::cublasGetStatusName>())
        name = get_name(static_cast<cublasStatus_t>(error.code));
      if (auto get_text = helper<Helper::cublasGetStatusString>())
        text = get_text(static_cast<cublasStatus_t>(error.code));
      break;
  }
  ErrorText out;
  out.name = name ? name : std::string(layer_name(error.layer)) + " error " + std::to_string(error.code);
  out.text = text ? text : "no description available";
  return out;
}

// "libcudart.so.13.0.96" (the real path of a loaded libcudart.so.13) -> 13000; 0 where none is loaded.
int loaded_runtime_version() {
  int version = 0;
  visit_loaded_objects([&](const LoadedObject& object) {
    if (!std::strstr(object.path, "libcudart.so")) return false;
    char resolved[PATH_MAX];
    const char* name = realpath(object.path, resolved) ? std::strrchr(resolved, '/') : nullptr;
    int major = 0, minor = 0;
    if (!name || std::sscanf(name, "/libcudart.so.%d.%d", &major, &minor) < 1) return false;
    version = major * 1000 + minor * 10;
    return true;
  });
  return version;
}

std::string shim_module_path() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&shim_module_path), &info) || !info.dli_fname) return "";
  // The symbolizer names modules by their real path: a preload through a symbolic link must match too.
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved)) return resolved;
  return info.dli_fname;
}

// The loaded driver's version and which of the shim's newer entry points it has
// (src/cuda/driver_features.def); version 0 where no driver is loaded yet.
DriverSupport driver_support() {
  int version = 0;
  if (auto get_version = helper<Helper::cuDriverGetVersion>()) {
    if (get_version(&version) != CUDA_SUCCESS) version = 0;
  }
  return check_driver(version, [](const char* name) { return find_real(name, Layer::Driver) != nullptr; });
}

ProcessInfo process_info() {
  ProcessInfo info;
  info.pid = static_cast<long>(getpid());
  info.rank = rank_from_environment(process_environment());
  info.has_rank = rank_variable(process_environment()).has_value();
  if (const char* run = std::getenv(variable::run_id)) info.run = run;
  info.host = host_name();
  info.name = process_name();
  info.argv = process_arguments();
  info.shim_version = CUDA_BLOCKRUN_VERSION;
  info.driver = driver_support();
  info.driver_version = info.driver.version;
  // Not cudaRuntimeGetVersion: the engine is often created inside the runtime's own initialization (its
  // first cuGetProcAddress), and a runtime call from there waits forever on the runtime's init lock. The
  // shared runtime's file name says its version; a static runtime's is not known.
  info.runtime_version = loaded_runtime_version();
  info.shim_module = shim_module_path();
  for (const OptionSpec& spec : option_specs()) {
    const char* value = std::getenv(spec.variable);
    info.configuration.emplace_back(spec.variable, value ? value : spec.default_value);
  }
  return info;
}

// Set while the shim asks the driver something that may fail by design (naming a handle of the other kind):
// the driver logs those failures, and they must not be attached to the program's first error.
thread_local bool t_probing = false;

struct Probing {
  Probing() { t_probing = true; }
  ~Probing() { t_probing = false; }
};

void on_driver_log(void* data, CUlogLevel, char* message, size_t length) {
  if (t_probing) return;
  if (Engine* engine = g_engine.load(std::memory_order_acquire))
    shim_work([&] { engine->note_driver_log(message, message ? strnlen(message, length) : 0); });
}

// At exit, before the runtime's own exit handlers (registered earlier, so run later) release the context: a
// kernel that faulted after the program's last CUDA call left a sticky error that nobody saw. One
// non-blocking query of the legacy stream returns it (and "not ready" or success otherwise); the engine
// takes it as the first error only if none was seen, and only in the process that made the engine (a forked
// child inherits this handler but must not call CUDA).
void check_context_at_exit() {
  Engine* engine = g_engine.load(std::memory_order_acquire);
  if (!engine || engine->has_first_error() || !engine->in_owner_process()) return;
  if (!engine->has_unfinished_launches()) return;  // everything was waited for: no extra CUDA call
  auto query = helper<Helper::cuStreamQuery>();
  if (!query) return;
  shim_work([&] {
    CUresult result = query(CU_STREAM_LEGACY);
    engine->check_at_exit("cuStreamQuery", ErrorCode{Layer::Driver, static_cast<int>(result)});
  });
}

// --trace: its file, opened now (a path that cannot be used is said at once, not at exit), written at exit.
void open_trace(Engine& engine, const ProcessInfo& info, const OutputFile* log_file,
                const ReportFile* report) {
  std::string path = expand_path(g_config->trace, info.pid, info.rank, info.host);
  std::string problem;
  std::unique_ptr<OutputFile> file = OutputFile::open(path, g_config->private_files, &problem);
  if (file &&
      ((log_file && file->clashes_with(*log_file)) || (report && file->clashes_with(*report->file())))) {
    file.reset();
    problem = "it is the log or the report file";
  }
  if (!file) {
    engine.report_shim_problem(cannot_open("trace", path, problem, "no trace is written"));
    return;
  }
  engine.set_trace_file(std::move(file), path);
}

// Called in active_engine_slow's ShimScope, which keeps errno.
void create_engine() {
  try {
    OutputFile* log_file = nullptr;
    std::string prefix = this_log_prefix(*g_config);
    std::shared_ptr<spdlog::logger> logger = make_logger(*g_config, prefix, &log_file);
    std::string other_shim = other_shim_copy(false);
    if (!other_shim.empty()) logger->info("{}", two_shims_line(shim_module_path(), other_shim));
    auto engine = std::make_unique<Engine>(*g_config, std::move(logger), describe_error);
    std::unique_ptr<ReportFile> report;
    ProcessInfo info = process_info();
    if (!g_config->report.empty()) {
      std::string path = expand_path(g_config->report, info.pid, info.rank, info.host);
      std::string problem;
      report = ReportFile::open(path, g_config->private_files, &problem);
      if (report && log_file && report->file()->clashes_with(*log_file)) {
        // Log lines in the report would make it invalid JSON lines (issue 17, F16).
        report.reset();
        problem = cannot_open("report", path, "it is the log file", "no report is written");
      }
      if (!report) engine->report_shim_problem(problem);
    }
    if (!g_config->trace.empty()) open_trace(*engine, info, log_file, report.get());
    if (g_config->callsites != Callsites::None) warm_up_stack_walk();
    engine->start(std::move(info), std::move(report), take_call_stack, read_python_stack, read_python_site);
    // Before the engine is published: no launch passes the gate half-enabled.
    if (g_config->block.blocks_alone()) enable_launch_gate();
    Engine* created = engine.release();
    g_engine.store(created, std::memory_order_release);
    install_fatal_signal_reports(created, log_file, created->report_file(), prefix.c_str());
    // The driver's error log listener is registered from the first driver launch, not here: the engine is
    // often created inside the runtime's initialization, where the shim makes no CUDA call it can avoid.
  } catch (...) {
    // Without an engine the shim stays a pass-through; the program is not affected.
    g_state.store(State::Inert);
  }
}

// Whether the shim came into the process after it started (dlopen: `import cuda_blockrun`) rather than by
// LD_PRELOAD, whose objects precede the C library in the loader's list.
bool loaded_after_start() {
  Dl_info own{};
  if (!dladdr(reinterpret_cast<const void*>(&loaded_after_start), &own)) return false;
  bool after_libc = false;
  visit_loaded_objects([&](const LoadedObject& object) {
    if (object.info.dlpi_addr == reinterpret_cast<ElfW(Addr)>(own.dli_fbase)) return true;
    after_libc = std::strncmp(object.file, "libc.so", 7) == 0;
    return after_libc;
  });
  return after_libc;
}

// Preloaded, the shim reads its settings before main() (a bad one ends the program before it starts). Loaded
// after start (the Python package), it reads them at the first CUDA call, so that cuda_blockrun.enable() can
// still set them after the import (docs/python.md).
__attribute__((constructor)) void on_load() {
  if (loaded_after_start()) {
    g_loaded_after_start.store(true, std::memory_order_relaxed);
    // Not over another copy of the shim (configure steps aside then): libcuda's symbols stay its.
    if (!getauxval(AT_SECURE) && !switched_off(process_environment()) && other_shim_copy(true).empty())
      claim_driver_library();
    return;
  }
  std::call_once(g_configure_once, configure);
}

// Whether a file that `pattern` (a --report path: %p, %r and %h stand for any text) names was modified since
// `since`: a report of the run, written by this process's children where it made none itself.
bool written_since(const std::string& pattern, const timespec& since) {
  std::string wildcard;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '%' && i + 1 < pattern.size()) {
      char next = pattern[++i];
      wildcard += next == '%' ? std::string("%") : std::string("*");
    } else {
      if (c == '*' || c == '?' || c == '[' || c == '\\') wildcard += '\\';
      wildcard += c;
    }
  }
  glob_t found{};
  bool written = false;
  if (glob(wildcard.c_str(), GLOB_NOSORT, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc && !written; ++i) {
      struct stat status {};
      written = stat(found.gl_pathv[i], &status) == 0 &&
                (status.st_mtim.tv_sec > since.tv_sec ||
                 (status.st_mtim.tv_sec == since.tv_sec && status.st_mtim.tv_nsec >= since.tv_nsec));
    }
  }
  globfree(&found);
  return written;
}

// `cuda-blockrun --report r.jsonl -- python3 -c 'print(1)'` wrote no report and said nothing (issue 42): a
// report is begun at a process's first CUDA call. The program the wrapper started (CUDA_BLOCKRUN_PROGRAM_PID)
// says so at its end where it never called CUDA and no report of the path was written since it started (a
// child of its may have written one); other processes, its children and a shell's commands, say nothing.
void say_when_no_report_was_written() {
  const Config* config = g_config;
  if (g_state.load(std::memory_order_acquire) != State::Active || !config || !g_standard_error ||
      config->report.empty() || config->program_pid != std::to_string(getpid()) ||
      written_since(config->report, g_configured_at))
    return;
  // Standard error as it was at load, where it still is (a program that closed it gets nothing).
  std::string line = "[cuda-blockrun] no report was written to '" + printable(config->report) +
                     "': the program never called CUDA (a report is begun at a process's first CUDA call)\n";
  g_standard_error->write_record(line.data(), line.size());
}

__attribute__((destructor)) void on_unload() {
  if (Engine* engine = g_engine.load(std::memory_order_acquire))
    shim_work([engine] { engine->finish(); });
  else
    shim_work([] { say_when_no_report_was_written(); });
}

// Whether this thread may be in a signal handler: a signal is blocked in it, as the kernel blocks the one
// being handled. `_exit` is async-signal-safe and programs call it from their handlers (a SIGTERM handler's
// `_exit(1)`), where the code interrupted may hold the allocator's lock or the engine's: writing the end
// there could hang the process at its end. A thread that blocks signals for its own reasons (a sigwait
// design) is taken as one too: its process ends without its end written, as before.
bool maybe_in_signal_handler() {
  sigset_t blocked;
  if (pthread_sigmask(SIG_BLOCK, nullptr, &blocked) != 0) return true;
  for (int signal = 1; signal < SIGRTMIN; ++signal)
    if (sigismember(&blocked, signal) == 1) return true;
  return false;
}

// `_exit` and `_Exit` end the process without its exit handlers and destructors, so without the shim's end
// (the report's summary, the trace): a process that ends so (os._exit in multiprocessing and DataLoader
// workers) read as killed outright (issue 40, N2). The end is written here first, as at exit (the sticky
// error check, then the engine's finish), in the process that made the engine only: a forked child that never
// used CUDA has none, and a vfork child (the parent's memory, its own pid) is not its owner.
void end_before_exit_without_handlers() {
  Engine* engine = g_engine.load(std::memory_order_acquire);
  if (!engine || !engine->in_owner_process() || ShimScope::inside() || maybe_in_signal_handler()) return;
  static std::atomic<bool> ended{false};
  if (ended.exchange(true)) return;
  ShimScope scope;  // over the check's lookup of cuStreamQuery too, made before the check's own scope
  if (g_first_launch_seen.load(std::memory_order_acquire)) check_context_at_exit();
  on_unload();
}

// The C library's `name` (`_exit`, `_Exit`): the next definition after the shim's, else the first one that is
// not the shim's (a shim loaded after start comes after the C library).
using ExitFunction = void (*)(int);
ExitFunction real_exit_function(const char* name, ExitFunction own) {
  for (void* handle : {RTLD_NEXT, RTLD_DEFAULT}) {
    auto found = reinterpret_cast<ExitFunction>(dlsym(handle, name));
    if (found && found != own) return found;
  }
  return nullptr;
}

}  // namespace

void at_first_launch_slow() {
  // Once: a function missing from the loaded driver (before CUDA 12.9) stays missing.
  if (g_first_launch_seen.exchange(true)) return;
  std::atexit(check_context_at_exit);
  // A driver launch: the driver is loaded now, if it was not when the engine was made (a program whose first
  // CUDA call was a runtime launch, before the runtime loaded it).
  if (Engine* engine = g_engine.load(std::memory_order_acquire))
    shim_work([engine] { engine->note_driver(driver_support()); });
  auto register_callback = helper<Helper::cuLogsRegisterCallback>();
  if (!register_callback) return;
  ShimScope scope;  // nothing here throws: a call into the driver
  CUlogsCallbackHandle handle = nullptr;
  register_callback(on_driver_log, nullptr, &handle);
}

bool shim_active() {
  State state = g_state.load(std::memory_order_acquire);
  if (state == State::Unset) {
    std::call_once(g_configure_once, configure);
    state = g_state.load(std::memory_order_acquire);
  }
  return state == State::Active;
}

bool hands_out_wrappers() {
  return shim_active() || g_other_shim;
}

Engine* active_engine_slow() {
  State state = g_state.load(std::memory_order_acquire);
  if (state == State::Unset) {
    std::call_once(g_configure_once, configure);
    state = g_state.load(std::memory_order_acquire);
  }
  if (state != State::Active) {
    // Only on the inert path: an active shim's calls never come here once its engine exists.
    if (g_to_say_stepped_aside.load(std::memory_order_relaxed) && g_to_say_stepped_aside.exchange(false))
      say_stepped_aside();
    return nullptr;
  }
  Engine* engine = g_engine.load(std::memory_order_acquire);
  if (engine) return engine;
  ShimScope scope;  // create_engine catches what it throws: a shim without an engine is inert
  std::lock_guard<std::mutex> creating(*g_engine_creation);
  if (!g_engine.load(std::memory_order_acquire)) create_engine();
  return g_engine.load(std::memory_order_acquire);
}

const char* name_of_host_stub(const void* stub) {
  auto get_name = helper<Helper::cudaFuncGetName>();
  if (!get_name) return nullptr;
  const char* name = nullptr;
  // A failing runtime call sets the thread's last error, which the program would then read as its own.
  // Name only when no error is pending, and clear the one a failed lookup leaves: the program's view
  // stays exactly as it was.
  RuntimeErrorScope scope;
  if (!scope.clean()) return nullptr;
  if (get_name(&name, stub) != cudaSuccess) {
    scope.clear_own_error();
    return nullptr;
  }
  return name;
}

const char* name_of_function(const void* function) {
  const char* name = nullptr;
  // A CUkernel cast to CUfunction (CUDA 13 runtime launches) or a real CUfunction (Triton, CuPy): each
  // query answers "invalid handle" for the other kind (and logs "kernel is of wrong type"), so ask both.
  Probing probing;
  if (auto get_name = helper<Helper::cuKernelGetName>()) {
    if (get_name(&name, static_cast<CUkernel>(const_cast<void*>(function))) == CUDA_SUCCESS && name)
      return name;
  }
  if (auto get_name = helper<Helper::cuFuncGetName>()) {
    if (get_name(&name, static_cast<CUfunction>(const_cast<void*>(function))) == CUDA_SUCCESS && name)
      return name;
  }
  return remembered_kernel_name(function);  // a driver before CUDA 12.3: the name it was looked up by
}

const char* name_of_kernel_handle(const void* kernel) {
  const char* name = nullptr;
  if (auto get_name = helper<Helper::cuKernelGetName>()) {
    Probing probing;
    if (get_name(&name, static_cast<CUkernel>(const_cast<void*>(kernel))) == CUDA_SUCCESS && name)
      return name;
  }
  if (const char* remembered = remembered_kernel_name(kernel)) return remembered;
  return name_of_host_stub(kernel);
}

}  // namespace blockrun::shim

extern "C" {

__attribute__((visibility("default"))) void _exit(int status) {
  blockrun::shim::end_before_exit_without_handlers();
  if (auto real = blockrun::shim::real_exit_function("_exit", &_exit)) real(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

__attribute__((visibility("default"))) void _Exit(int status) {
  blockrun::shim::end_before_exit_without_handlers();
  if (auto real = blockrun::shim::real_exit_function("_Exit", &_Exit)) real(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

}  // extern "C"
// SPDX-License-Identifier: MIT
