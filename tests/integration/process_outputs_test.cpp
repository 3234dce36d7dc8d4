// Issue 40, reliability round three: how a process's report ends, where its files may go, and two installs of
// the shim in one process (N2, N11, N12, N13, N14), on the simulated stack. Each test failed before its fix.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "report_json.h"
#include "sim_programs.h"
#include "../sanitized_build.h"

namespace {

using namespace blockrun::testing;

const std::string kProbeApp = CUDA_BLOCKRUN_PROBE_APP;

// A fresh directory of the test's own, removed with what is in it.
struct Directory {
  std::string path;
  Directory() {
    std::string pattern = ::testing::TempDir() + "blockrun_outputs_XXXXXX";
    path = mkdtemp(pattern.data());
  }
  ~Directory() { run_process({"/bin/rm", "-rf", path}, {}); }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

ProcessResult run_preloaded(const std::vector<std::string>& command, Env env,
                            const std::string& preload = kShim) {
  env["LD_LIBRARY_PATH"] = kSimLib;
  env["LD_PRELOAD"] = preload;
  return run_process(command, env);
}

// Each line's `type`, in order ("not JSON" for a line that is not a JSON object).
std::vector<std::string> record_types(const std::string& path) {
  std::vector<std::string> types;
  std::string text = read_file(path);
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    auto record = blockrun::parse_json(line);
    types.push_back(record ? blockrun::string_member(*record, "type", "not JSON") : "not JSON");
  }
  return types;
}

size_t occurrences(const std::string& text, const std::string& piece) {
  size_t count = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + piece.size()))
    ++count;
  return count;
}

// ---- N2: a process that calls CUDA but never launches ----

TEST(ProcessEnd, AProcessThatNeverLaunchesEndsItsReport) {
  Directory directory;
  // `loop 0`: a synchronize and no launch (the round's malloc_only: cudaMalloc, cudaFree, a synchronize).
  ProcessResult run = run_wrapped({"--report", directory / "r.jsonl"}, {kProbeApp, "loop", "0"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(record_types(directory / "r.jsonl"), (std::vector<std::string>{"start", "summary"}));
  ProcessResult verdict = run_process({kWrapper, "report", directory / "r.jsonl"}, {});
  EXPECT_EQ(verdict.status, 0) << verdict.out << verdict.err;
  EXPECT_FALSE(contains(verdict.out + verdict.err, "killed outright")) << verdict.out << verdict.err;
  // The log's summary line stays for processes that launched.
  EXPECT_FALSE(contains(run.err, "summary:")) << run.err;
}

// A Python process (os._exit, as multiprocessing's and DataLoader's workers end) that allocates through the
// CUDA runtime, forks a child that never uses CUDA and ends it with os._exit, then ends itself with
// os._exit(0): `_exit` runs no destructor, so before, its report had its `start` and no `summary` (report:
// "killed outright", exit 3) and no trace was written. The child writes nothing.
TEST(ProcessEnd, AProcessThatEndsWithUnderscoreExitEndsItsReportAndTrace) {
  Directory directory;
  const std::string script =
      "import ctypes, os, sys\n"
      "cudart = ctypes.CDLL('libcudart.so.13')\n"
      "pointer = ctypes.c_void_p()\n"
      "print('cudaMalloc', cudart.cudaMalloc(ctypes.byref(pointer), 16))\n"
      "child = os.fork()\n"
      "if child == 0:\n"
      "    os._exit(0)\n"
      "os.waitpid(child, 0)\n"
      "sys.stdout.flush()\n"
      "os._exit(0)\n";
  ProcessResult run = run_wrapped({"--report", directory / "r.%p.jsonl", "--trace", directory / "t.%p.json"},
                                  {CUDA_BLOCKRUN_VALIDATOR_PYTHON, "-c", script}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "cudaMalloc 0\n");
  // One report and one trace: the parent's (the child has no engine, and writes nothing).
  ProcessResult listing = run_process({"/bin/sh", "-c", "cd \"$0\" && ls", directory.path}, {});
  std::vector<std::string> names;
  for (size_t start = 0; start < listing.out.size();) {
    size_t end = listing.out.find('\n', start);
    names.push_back(listing.out.substr(start, end - start));
    start = end + 1;
  }
  ASSERT_EQ(names.size(), 2u) << listing.out;
  std::string report = directory / names[0], trace = directory / names[1];
  ASSERT_EQ(names[0].rfind("r.", 0), 0u) << listing.out;
  EXPECT_EQ(record_types(report), (std::vector<std::string>{"start", "summary"}));
  EXPECT_TRUE(blockrun::parse_json(read_file(trace))) << "the trace is not one JSON document";
  EXPECT_TRUE(contains(run.err, "[cuda-blockrun] trace: ")) << run.err;
  ProcessResult verdict = run_process({kWrapper, "report", report}, {});
  EXPECT_EQ(verdict.status, 0) << verdict.out << verdict.err;
  EXPECT_FALSE(contains(verdict.out + verdict.err, "killed outright")) << verdict.out << verdict.err;
}

// A program's own handler of a fatal signal that ends it with `_exit` (async-signal-safe, and common) may
// have interrupted code holding the allocator's lock: the end is not written there, and the program ends as
// it would without the shim, with its handler's status.
TEST(ProcessEnd, AnUnderscoreExitInASignalHandlerEndsTheProgramAsItAsks) {
  // The program's fault is a store through a null pointer, which UBSan stops before it faults.
  if (kSanitizedBuild) GTEST_SKIP() << "the test program's own sanitizer handles its faults";
  Directory directory;
  ProcessResult run = run_wrapped({"--report", directory / "r.jsonl"}, {kApp, "own-handler"}, {});
  EXPECT_EQ(run.status, 3) << run.err;
  EXPECT_TRUE(contains(run.out, "own handler: signal caught")) << run.out;
  std::vector<std::string> types = record_types(directory / "r.jsonl");
  EXPECT_EQ(std::count(types.begin(), types.end(), "summary"), 0) << read_file(directory / "r.jsonl");
}

// ---- N11: the trace's directory, checked like the log's and the report's ----

TEST(OutputPaths, ATraceIntoAMissingDirectoryIsRefusedBeforeTheProgramRuns) {
  Directory directory;
  std::string trace = directory / "missing/t.json";
  ProcessResult run = run_wrapped({"--trace", trace}, {kProbeApp, "loop", "3"}, {});
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_TRUE(contains(run.err, "CUDA_BLOCKRUN_TRACE='" + trace + "': no such directory")) << run.err;
  EXPECT_FALSE(contains(run.out, "done")) << run.out;
}

// ---- N12: the error file on the report's path ----

TEST(OutputPaths, TheErrorFileOnTheReportsPathIsRefused) {
  Directory directory;
  Env fault = {{"CUDA_SIM_FAULT", "fill:2"}};
  Env same = fault;
  same["CUDA_BLOCKRUN_ERROR_FILE"] = directory / "r.jsonl";
  ProcessResult refused = run_wrapped({"--report", directory / "r.jsonl"}, {kProbeApp, "loop", "3"}, same);
  EXPECT_EQ(refused.status, 2) << refused.err;
  EXPECT_TRUE(contains(refused.err, "CUDA_BLOCKRUN_ERROR_FILE='" + directory / "r.jsonl" +
                                        "': it is the report file's path; accepted: a path other than "
                                        "CUDA_BLOCKRUN_REPORT's, or /dev/null"))
      << refused.err;
}

// The same file by another path is refused before the program runs too (it ran before, and the clash was
// found only when the error was noted): `/./`, a relative path for an absolute one, a symbolic link to the
// directory, a hard link to a report that exists; the wrapper's run and a preloaded one (the shim, before
// main).
TEST(OutputPaths, OneFileByAnotherPathIsRefusedBeforeTheProgramRuns) {
  Directory directory;
  ASSERT_EQ(symlink(directory.path.c_str(), (directory / "linked").c_str()), 0);
  const std::string report = directory / "r.jsonl";
  for (const std::string& error_file : {directory.path + "/./r.jsonl", directory / "linked/r.jsonl"}) {
    ProcessResult refused = run_wrapped({"--report", report}, {kProbeApp, "loop", "3"},
                                        {{"CUDA_BLOCKRUN_ERROR_FILE", error_file}});
    EXPECT_EQ(refused.status, 2) << refused.err;
    EXPECT_TRUE(contains(refused.err, "CUDA_BLOCKRUN_ERROR_FILE='" + error_file +
                                          "': it is the report file by another path (CUDA_BLOCKRUN_REPORT='" +
                                          report + "')"))
        << refused.err;
    EXPECT_EQ(refused.out, "") << "the program ran";
  }
  // The trace on the log's file, relative against absolute, preloaded: the shim stops it before main.
  ProcessResult relative =
      run_process({"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", directory.path, kProbeApp, "loop", "3"},
                  {{"LD_LIBRARY_PATH", kSimLib},
                   {"LD_PRELOAD", kShim},
                   {"CUDA_BLOCKRUN_LOG", directory / "l.log"},
                   {"CUDA_BLOCKRUN_TRACE", "l.log"}});
  EXPECT_EQ(relative.status, 2) << relative.err;
  EXPECT_TRUE(contains(relative.err, "CUDA_BLOCKRUN_TRACE='l.log': it is the log file by another path"))
      << relative.err;
  // A hard link to a report made before.
  std::fclose(std::fopen(report.c_str(), "w"));
  ASSERT_EQ(link(report.c_str(), (directory / "hard.txt").c_str()), 0);
  ProcessResult hard = run_wrapped({"--report", report}, {kProbeApp, "loop", "3"},
                                   {{"CUDA_BLOCKRUN_ERROR_FILE", directory / "hard.txt"}});
  EXPECT_EQ(hard.status, 2) << hard.err;
  EXPECT_TRUE(contains(hard.err, "it is the report file by another path")) << hard.err;
}

// ---- N13: the null device for any output ----

TEST(OutputPaths, EveryOutputMayGoToTheNullDevice) {
  ProcessResult preloaded = run_preloaded(
      {kProbeApp, "loop", "3"}, {{"CUDA_BLOCKRUN_LOG", "/dev/null"}, {"CUDA_BLOCKRUN_REPORT", "/dev/null"}});
  EXPECT_EQ(preloaded.status, 0) << preloaded.err;
  EXPECT_TRUE(contains(preloaded.out, "done")) << preloaded.out;
  EXPECT_EQ(preloaded.err, "");
  ProcessResult wrapped = run_wrapped(
      {"--log", "/dev/null", "--report", "/dev/null", "--trace", "/dev/null"}, {kProbeApp, "loop", "3"},
      {{"CUDA_SIM_FAULT", "fill:2"}, {"CUDA_BLOCKRUN_ERROR_FILE", "/dev/null"}});
  EXPECT_EQ(wrapped.status, 0) << wrapped.err;
  EXPECT_TRUE(contains(wrapped.out, "done")) << wrapped.out;
  EXPECT_EQ(wrapped.err, "");
}

// ---- N14: two installs of the shim in one process ----

struct OtherInstall {
  Directory directory;
  std::string wrapper = directory / "bin/cuda-blockrun";
  std::string shim = directory / "lib/libcuda_blockrun.so";
  OtherInstall() {
    run_process({"/bin/mkdir", "-p", directory / "bin", directory / "lib"}, {});
    run_process({"/bin/cp", kWrapper, wrapper}, {});
    run_process({"/bin/cp", kShim, shim}, {});
  }
};

TEST(TwoShims, TheSecondShimStepsAsideAndItIsSaidOnce) {
  // Two instrumented copies of one library register the same globals twice, which AddressSanitizer reports as
  // a violation of the one-definition rule before the program starts.
  if (kSanitizedBuild) GTEST_SKIP() << "two copies of an instrumented shim: not in the sanitizer builds";
  OtherInstall other;
  Directory directory;
  // Preloaded by hand, the other install first: it observes; this tree's steps aside.
  ProcessResult run =
      run_preloaded({kProbeApp, "loop", "5"},
                    {{"CUDA_BLOCKRUN_BLOCK", "all"}, {"CUDA_BLOCKRUN_REPORT", directory / "r.jsonl"}},
                    other.shim + ":" + kShim);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(record_types(directory / "r.jsonl"), (std::vector<std::string>{"start", "summary"}))
      << read_file(directory / "r.jsonl");
  EXPECT_EQ(occurrences(run.err, "steps aside"), 1u) << run.err;
  EXPECT_TRUE(contains(run.err, "two cuda-blockrun shims are loaded: ")) << run.err;
  EXPECT_TRUE(contains(run.err, " observes this process, " + kShim + " steps aside")) << run.err;
  EXPECT_EQ(occurrences(run.err, "summary: 5 launches, 5 blocked"), 1u) << run.err;

  // As the repro: a wrapper of one install runs another install's wrapper.
  ProcessResult nested = run_wrapped(
      {},
      {other.wrapper, "--block", "all", "--report", directory / "nested.jsonl", "--", kProbeApp, "loop", "5"},
      {});
  EXPECT_EQ(nested.status, 0) << nested.err;
  EXPECT_EQ(record_types(directory / "nested.jsonl"), (std::vector<std::string>{"start", "summary"}))
      << read_file(directory / "nested.jsonl");
  EXPECT_EQ(occurrences(nested.err, "steps aside"), 1u) << nested.err;
  EXPECT_EQ(occurrences(nested.err, "summary: 5 launches, 5 blocked"), 1u) << nested.err;
}

// One shim alone says nothing of another.
TEST(TwoShims, OneShimAloneSaysNothingOfAnother) {
  ProcessResult run = run_preloaded({kProbeApp, "loop", "5"}, {{"CUDA_BLOCKRUN_BLOCK", "all"}});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_FALSE(contains(run.err, "steps aside")) << run.err;
  EXPECT_EQ(occurrences(run.err, "summary: 5 launches, 5 blocked"), 1u) << run.err;
}

}  // namespace
// SPDX-License-Identifier: MIT
