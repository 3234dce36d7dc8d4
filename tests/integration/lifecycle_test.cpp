// The process life cycle under the shim, on the simulated CUDA stack: fork while another thread launches (the
// child starts clean: its own engine and files, no inherited locks), exec of a program that is not a CUDA
// one, and dlclose of the driver between rounds of launches. Each runs as it does without the shim.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "sim_programs.h"
#include "../sanitized_build.h"

namespace blockrun::testing {
namespace {

// What a forked child's CUDA call gets (CUDA is not usable after a fork of an initialized parent) is no
// kernel's fault: an environment error (src/cuda/cuda_errors.def, issue 42), told with its fix.
const std::string kForkedChildProblem =
    "CUDA was not initialized: no usable driver, the driver failed to start, CUDA used in a child forked "
    "after the parent initialized it, or (driver API) cuInit was not called first";
const std::string kForkedChildFix =
    "install or repair the NVIDIA driver (nvidia-smi must list the GPU); in a forked child, start it with "
    "spawn instead of fork, or initialize CUDA only after the fork";

const std::string kDlcloseApp = CUDA_BLOCKRUN_DLCLOSE_APP;

// In the sanitizer builds the test programs are instrumented too: their sanitizer catches the deliberate null
// store or division by zero itself (UBSan) or takes over the fatal signals (ASan, TSan), so the signal tests
// only mean something in the normal build (kSanitizedBuild false).

// A fresh directory for a run's log files, and the files it holds afterwards.
struct LogDirectory {
  std::string path;
  LogDirectory() {
    path = ::testing::TempDir() + "blockrun_lifecycle_XXXXXX";
    if (!mkdtemp(path.data())) path.clear();
  }
  ~LogDirectory() { run_process({"/bin/rm", "-rf", path}, {}); }
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    if (DIR* listing = opendir(path.c_str())) {
      while (dirent* entry = readdir(listing))
        if (entry->d_name[0] != '.') names.push_back(path + "/" + entry->d_name);
      closedir(listing);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
};

TEST(Lifecycle, ForkedChildrenStartCleanWhileAnotherThreadLaunches) {
  ProcessResult without = run_process({kApp, "fork-while-launching"}, {{"LD_LIBRARY_PATH", kSimLib}});
  ASSERT_EQ(without.status, 0) << without.err;
  LogDirectory logs;
  ProcessResult with = run_process({kWrapper, "--log-launches", "--block", "stencil", "--log",
                                    logs.path + "/log.%p", "--", kApp, "fork-while-launching"},
                                   {{"LD_LIBRARY_PATH", kSimLib}});
  EXPECT_EQ(with.status, 0) << with.err;
  EXPECT_EQ(with.out, without.out);
  EXPECT_TRUE(contains(with.out, "20 children exited 0\n")) << with.out;
  // One log per process, each named by its own pid: the parent's and the 20 children's.
  std::vector<std::string> files = logs.files();
  ASSERT_EQ(files.size(), 21u);
  int children = 0;
  for (const std::string& file : files) {
    std::string text = read_file(file);
    if (contains(text, "<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #1 (fill#1)")) {
      // The parent: its first launch, then the busy thread's, then its summary.
      EXPECT_TRUE(contains(text,
                           "launch: kernel fill(float*, int, float)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, "
                           "launch #1 (fill#1) via "))
          << text;
      EXPECT_TRUE(contains(text, "; no CUDA errors\n")) << text;
      continue;
    }
    // A child: a fresh engine (nothing of the parent's), CUDA's error in a forked child, its own summary.
    ++children;
    EXPECT_EQ(text,
              "[cuda-blockrun] first error: cudaErrorInitializationError (initialization error), returned by "
              "cudaDeviceSynchronize\n"
              "[cuda-blockrun]   not a kernel's fault: " +
                  kForkedChildProblem + "\n" + "[cuda-blockrun]   to fix it: " + kForkedChildFix + "\n" +
                  "[cuda-blockrun] summary: 0 launches, 0 blocked; first error cudaErrorInitializationError, "
                  "0 later errors\n")
        << file;
  }
  EXPECT_EQ(children, 20);
}

// The same 20 children logging to the parent's standard error: each child's lines carry its pid, and the
// parent, which was alone when it began, keeps the plain prefix.
TEST(Lifecycle, ForkedChildrenSharingTheTerminalCarryTheirPid) {
  ProcessResult with = run_process({kWrapper, "--block", "stencil", "--", kApp, "fork-while-launching"},
                                   {{"LD_LIBRARY_PATH", kSimLib}});
  EXPECT_EQ(with.status, 0) << with.err;
  std::map<std::string, std::string> by_child;  // pid: its lines, without the prefix
  std::string parent;
  std::istringstream lines(with.err);
  const std::regex child("^\\[cuda-blockrun ([0-9]+)\\] (.*)$");
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, child)) {
      by_child[match[1]] += std::string(match[2]) + "\n";
    } else {
      parent += line + "\n";
    }
  }
  ASSERT_EQ(by_child.size(), 20u) << with.err;
  for (const auto& [pid, text] : by_child) {
    EXPECT_EQ(
        text,
        "first error: cudaErrorInitializationError (initialization error), returned by "
        "cudaDeviceSynchronize\n"
        "  not a kernel's fault: " +
            kForkedChildProblem + "\n" + "  to fix it: " + kForkedChildFix + "\n" +
            "summary: 0 launches, 0 blocked; first error cudaErrorInitializationError, 0 later errors\n")
        << pid;
  }
  EXPECT_EQ(parent.rfind("[cuda-blockrun] summary: ", 0), 0u) << parent;
  EXPECT_EQ(std::count(parent.begin(), parent.end(), '\n'), 1) << parent;
}

TEST(Lifecycle, ExecOfAProgramThatIsNotCudaIsUntouched) {
  ProcessResult without = run_process({kApp, "fork-exec"}, {{"LD_LIBRARY_PATH", kSimLib}});
  LogDirectory logs;
  ProcessResult with =
      run_process({kWrapper, "--block", "all", "--log", logs.path + "/log.%p", "--", kApp, "fork-exec"},
                  {{"LD_LIBRARY_PATH", kSimLib}});
  EXPECT_EQ(with.status, without.status);
  EXPECT_EQ(with.out, without.out);
  EXPECT_EQ(with.out, "exec: not a CUDA program\nchild exited 0\ndone\n");
  // The executed shell got the preload too, made no CUDA call, and wrote nothing.
  std::vector<std::string> files = logs.files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(contains(read_file(files[0]), "summary: 1 launch, 1 blocked; no CUDA errors"))
      << read_file(files[0]);
}

TEST(Lifecycle, DlcloseOfTheDriverBetweenRoundsOfLaunches) {
  ProcessResult without = run_process({kDlcloseApp, "3"}, {{"LD_LIBRARY_PATH", kSimLib}});
  ProcessResult with =
      run_process({kWrapper, "--block", "all", "--", kDlcloseApp, "3"}, {{"LD_LIBRARY_PATH", kSimLib}});
  EXPECT_EQ(with.status, 0) << with.err;
  EXPECT_EQ(with.out, without.out);
  EXPECT_EQ(with.out, "round 1: 3 launches\nround 2: 3 launches\nround 3: 3 launches\ndone\n");
  EXPECT_TRUE(contains(with.err, "summary: 9 launches, 9 blocked; no CUDA errors")) << with.err;
}

// Fatal signals: the shim writes what it knows (log line, report record), then the program's own handler or
// the default action runs: the exit status (128 + signal where the process dies of it) is the one without the
// shim.
TEST(Lifecycle, FatalSignalsAreReportedAndHandedOn) {
  if (kSanitizedBuild) GTEST_SKIP() << "the test program's own sanitizer handles its faults";
  struct Case {
    const char* scenario;
    int status;
    const char* log;
    const char* record;
  };
  const Case cases[] = {
    {"segv", 128 + SIGSEGV,
     "[cuda-blockrun] fatal signal SIGSEGV (a fault in the program) after 3 launches, 0 blocked; no CUDA "
     "error "
     "had been seen\n",
     "\"signal\":\"SIGSEGV\",\"number\":11,\"sent\":false,\"handed_to\":\"default "
     "action\",\"launches\":3,"},
    {"abort", 128 + SIGABRT,
     "[cuda-blockrun] fatal signal SIGABRT (sent to the process) after 3 launches, 0 blocked; no CUDA "
     "error had "
     "been seen\n",
     "\"signal\":\"SIGABRT\",\"number\":6,\"sent\":true,\"handed_to\":\"default action\",\"launches\":3,"},
    {"fpe", 128 + SIGFPE,
     "[cuda-blockrun] fatal signal SIGFPE (a fault in the program) after 3 launches, 0 blocked; no CUDA "
     "error "
     "had been seen\n",
     "\"signal\":\"SIGFPE\",\"number\":8,\"sent\":false,\"handed_to\":\"default action\",\"launches\":3,"},
#if defined(__x86_64__)
    {"ill", 128 + SIGILL,
     "[cuda-blockrun] fatal signal SIGILL (a fault in the program) after 3 launches, 0 blocked; no CUDA "
     "error "
     "had been seen\n",
     "\"signal\":\"SIGILL\",\"number\":4,\"sent\":false,\"handed_to\":\"default action\",\"launches\":3,"},
#endif
    {"bus", 128 + SIGBUS,
     "[cuda-blockrun] fatal signal SIGBUS (a fault in the program) after 3 launches, 0 blocked; no CUDA "
     "error "
     "had been seen\n",
     "\"signal\":\"SIGBUS\",\"number\":7,\"sent\":false,\"handed_to\":\"default action\",\"launches\":3,"},
    {"own-handler", 3,
     "[cuda-blockrun] signal SIGSEGV (a fault in the program), handed to the program's own handler, after "
     "3 "
     "launches, 0 blocked; no CUDA error had been seen\n",
     "\"signal\":\"SIGSEGV\",\"number\":11,\"sent\":false,\"handed_to\":\"program "
     "handler\",\"launches\":3,"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    // No core files from the test (the status says how the process ended either way).
    std::vector<std::string> no_core = {"/bin/sh", "-c", "ulimit -c 0; exec \"$0\" \"$@\""};
    std::vector<std::string> plain = no_core;
    plain.insert(plain.end(), {kApp, c.scenario});
    ProcessResult without = run_process(plain, {{"LD_LIBRARY_PATH", kSimLib}});
    LogDirectory directory;
    std::string report = directory.path + "/report.jsonl";
    std::vector<std::string> shimmed = no_core;
    shimmed.insert(shimmed.end(), {kWrapper, "--report", report, "--", kApp, c.scenario});
    ProcessResult with = run_process(shimmed, {{"LD_LIBRARY_PATH", kSimLib}});
    EXPECT_EQ(without.status, c.status);
    EXPECT_EQ(with.status, without.status);
    EXPECT_EQ(with.out, without.out);
    EXPECT_EQ(with.err, c.log);
    EXPECT_TRUE(contains(read_file(report), c.record)) << read_file(report);
  }
}

// A process that dies of a fault dumps core as it does without the shim (the shim hands the fault back to the
// default action by re-executing the faulting instruction, so the core shows where it really happened).
TEST(Lifecycle, CoreDumpsAreAsWithoutTheShim) {
  if (kSanitizedBuild) GTEST_SKIP() << "the test program's own sanitizer handles its faults";
  std::string pattern = read_file("/proc/sys/kernel/core_pattern");
  if (pattern.empty() || pattern[0] == '|' || pattern.find('/') != std::string::npos)
    GTEST_SKIP() << "cores are not written to the working directory here (core_pattern: " << pattern << ")";
  for (bool shim : {false, true}) {
    SCOPED_TRACE(shim ? "with the shim" : "without the shim");
    LogDirectory directory;
    std::vector<std::string> argv = {"/bin/sh", "-c", "cd \"$0\" && ulimit -c unlimited && exec \"$@\"",
                                     directory.path};
    if (shim) argv.insert(argv.end(), {kWrapper, "--"});
    argv.insert(argv.end(), {kApp, "segv"});
    ProcessResult run = run_process(argv, {{"LD_LIBRARY_PATH", kSimLib}});
    EXPECT_EQ(run.status, 128 + SIGSEGV);
    std::vector<std::string> files = directory.files();
    EXPECT_EQ(files.size(), 1u) << "expected one core file";
  }
}

// Secure-execution mode (setgid): the shim reads no configuration, opens no file, says nothing. A secure
// process ignores LD_PRELOAD, so the probe loads the shim itself. Making a setgid program for another group
// needs root (CI runs as root); elsewhere the test is skipped.
TEST(Security, SecureExecutionModeMakesTheShimInert) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a setgid program";
  std::string probe = std::string(CUDA_BLOCKRUN_SECURE_PROBE) + "_setgid";
  ASSERT_EQ(run_process({"/bin/cp", CUDA_BLOCKRUN_SECURE_PROBE, probe}, {}).status, 0);
  ASSERT_EQ(run_process({"/bin/chgrp", "65534", probe}, {}).status, 0);
  ASSERT_EQ(run_process({"/bin/chmod", "g+s", probe}, {}).status, 0);
  LogDirectory logs;
  std::string log = logs.path + "/log";
  // An invalid policy: a normal process reads it and says so; a secure one never reads it. (The probe loads
  // the shim with dlopen, after start: the shim then reads its settings at the first CUDA call and, the
  // program well under way, stays inert rather than end it, as `import cuda_blockrun` needs; docs/python.md.)
  Env environment = {{"CUDA_BLOCKRUN_BLOCK", "#oops"}, {"CUDA_BLOCKRUN_LOG", log}};
  ProcessResult normal = run_process({CUDA_BLOCKRUN_SECURE_PROBE, CUDA_BLOCKRUN_SHIM}, environment);
  EXPECT_EQ(normal.status, 0) << normal.out << normal.err;
  EXPECT_TRUE(contains(normal.err, "invalid CUDA_BLOCKRUN_BLOCK='#oops'")) << normal.err;
  EXPECT_TRUE(contains(normal.err, "not enabled in this process")) << normal.err;
  ProcessResult secure = run_process({probe, CUDA_BLOCKRUN_SHIM}, environment);
  if (contains(secure.err, "invalid CUDA_BLOCKRUN_BLOCK"))
    FAIL() << "the setgid program was not in secure-execution mode here (a nosuid mount?): " << secure.err;
  EXPECT_EQ(secure.status, 0) << secure.err;
  // The runtime is not found (a secure process ignores LD_LIBRARY_PATH too): the wrapper only forwards.
  EXPECT_EQ(secure.out, "cudaDeviceSynchronize returned 3\ndone\n");
  EXPECT_EQ(secure.err, "");
  EXPECT_TRUE(logs.files().empty());
  unlink(probe.c_str());
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
