// Running the program: replaced by it (the usual case: its pid, its signals and its exit status are its own),
// or, with --error-exitcode, as a child that the wrapper waits for, so that a CUDA error the program
// swallowed can still fail the job; what --localize's runs share with it (exec_program, wait_for_program);
// and what the program's environment gets first (the run id, the output directories' check).
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "cli.h"
#include "config/config.h"

namespace blockrun::cli {

namespace {

pid_t g_child = 0;

// A signal meant for the job (a scheduler's SIGTERM, a hang-up) is passed on to the program, which decides
// what to do with it; the wrapper ends when the program does.
void pass_on(int signal_number) {
  if (g_child > 0) kill(g_child, signal_number);
}

// The signals meant for the job, passed on to the program; Ctrl-C and Ctrl-\ reach it from the terminal
// itself (wait_for_program ignores them).
void forward_signals_to(pid_t child) {
  g_child = child;
  struct sigaction forward {};
  forward.sa_handler = pass_on;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  for (int signal_number : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM})
    sigaction(signal_number, &forward, nullptr);
}

// Ends the wrapper as the program ended by `status` (waitpid's): by the same signal (without a second core
// dump), so that a shell or a launcher sees what it would have seen without the wrapper.
[[noreturn]] void end_as(int status) {
  if (WIFSIGNALED(status)) {
    struct rlimit no_core {
      0, 0
    };
    setrlimit(RLIMIT_CORE, &no_core);
    signal(WTERMSIG(status), SIG_DFL);
    sigset_t all;
    sigemptyset(&all);
    sigaddset(&all, WTERMSIG(status));
    sigprocmask(SIG_UNBLOCK, &all, nullptr);
    raise(WTERMSIG(status));
    _exit(128 + WTERMSIG(status));
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

// The first line the shim wrote into the error file (`PID ERROR CALL`), or "" where none was written; the
// file and its directory are removed.
std::string take_noted_error(const std::string& error_file) {
  std::optional<std::string> contents = read_file(error_file);
  unlink(error_file.c_str());
  rmdir(error_file.substr(0, error_file.rfind('/')).c_str());
  if (!contents || contents->empty()) return "";
  return contents->substr(0, contents->find('\n'));
}

}  // namespace

std::string use_error_file() {
  const char* temporary = std::getenv("TMPDIR");
  std::string pattern = std::string(temporary && *temporary ? temporary : "/tmp") + "/cuda-blockrun.XXXXXX";
  if (!mkdtemp(pattern.data()))
    usage_error("--error-exitcode: cannot make a directory for the error file (" + pattern +
                "): " + std::strerror(errno));
  std::string error_file = pattern + "/errors";
  setenv(blockrun::variable::error_file, error_file.c_str(), 1);
  return error_file;
}

int exit_status_after(int status, int error_exitcode, const std::string& error_file) {
  std::string noted = take_noted_error(error_file);
  if (status != 0 || noted.empty()) return status;
  // The line is `PID ERROR CALL` (Engine::note_in_error_file).
  size_t first_space = noted.find(' '), second_space = noted.find(' ', first_space + 1);
  std::string pid = noted.substr(0, first_space);
  std::string error = noted.substr(first_space + 1, second_space - first_space - 1);
  std::string call = second_space == std::string::npos ? "?" : noted.substr(second_space + 1);
  std::fprintf(
      stderr,
      "[cuda-blockrun] the program exited 0, but process %s met %s (returned by %s): exit status %d, "
      "as --error-exitcode says\n",
      pid.c_str(), error.c_str(), call.c_str(), error_exitcode);
  return error_exitcode;
}

// Only the wrapper checks: a preloaded process (a shell that changes its directory before it starts the
// program) is never stopped for it; the shim says so in the log when it cannot open the file.
void check_output_directories(const blockrun::Config& config) {
  // Every file the shim writes: a trace into a missing directory was lost after the whole run (issue 40,
  // N11).
  const std::pair<const char*, const std::string*> outputs[] = {
      {blockrun::variable::log, &config.log},
      {blockrun::variable::report, &config.report},
      {blockrun::variable::trace, &config.trace},
      {blockrun::variable::error_file, &config.error_file}};
  for (const auto& [variable, path] : outputs) {
    size_t slash = path->rfind('/');
    if (slash == std::string::npos) continue;
    std::string directory = path->substr(0, slash + 1);
    struct stat info {};
    if (directory.find('%') != std::string::npos) continue;  // known per process only
    if (stat(directory.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
      usage_error(std::string(variable) + "='" + *path + "': no such directory: '" + directory +
                  "'; make it first, or give a path in an existing directory");
  }
}

void set_run_id() {
  if (std::getenv(blockrun::variable::run_id)) return;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string run = blockrun::new_run_id(
      [](const std::string& variable) -> std::optional<std::string> {
        const char* value = std::getenv(variable.c_str());
        return value ? std::optional<std::string>(value) : std::nullopt;
      },
      host, static_cast<long>(getpid()), static_cast<long>(getppid()), static_cast<long>(std::time(nullptr)));
  setenv(blockrun::variable::run_id, run.c_str(), 1);
}

void exec_program(char** program_argv) {
  execvp(program_argv[0], program_argv);
  std::fprintf(stderr, "cuda-blockrun: cannot run '%s': %s\n", program_argv[0], std::strerror(errno));
}

int wait_for_program(pid_t child) {
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
  return status;
}

namespace {

// The program's process id for its shim (CUDA_BLOCKRUN_PROGRAM_PID): that process says at its end when it
// wrote no report because it never called CUDA (issue 42); exec keeps the pid, a child of the program has
// another.
void name_program_process() {
  setenv(blockrun::variable::program_pid, std::to_string(getpid()).c_str(), 1);
}

}  // namespace

int run_program(char** program_argv, std::optional<int> error_exitcode) {
  if (!error_exitcode) {
    name_program_process();
    exec_program(program_argv);
    return kUsageError;
  }
  std::string error_file = use_error_file();
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) usage_error(std::string("cannot start the program: ") + std::strerror(errno));
  if (child == 0) {
    name_program_process();
    exec_program(program_argv);
    _exit(127);
  }
  forward_signals_to(child);
  int status = wait_for_program(child);
  if (WIFEXITED(status)) _exit(exit_status_after(WEXITSTATUS(status), *error_exitcode, error_file));
  take_noted_error(error_file);  // the program ended by a signal: the wrapper ends by it too, below
  end_as(status);
}

}  // namespace blockrun::cli
// SPDX-License-Identifier: MIT
