// --trace on the simulated CUDA stack: real programs under the wrapper write a timeline that
// tests/trace/check_trace.py (the same checker the GPU cases use) finds to be one JSON document whose slices
// nest per thread and whose culprit arrow starts in the slice of the launch that faulted, in every mode that
// names one; a million launches make a trace the size of the newest 65,536; a fatal signal still writes it.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "sim_programs.h"
#include "../sanitized_build.h"

namespace blockrun::testing {
namespace {

const std::string kChecker = CUDA_BLOCKRUN_SOURCE_DIR "/tests/trace/check_trace.py";
const std::string kPython = CUDA_BLOCKRUN_VALIDATOR_PYTHON;
const std::string kThreadsApp = CUDA_BLOCKRUN_THREADS_APP;
const std::string kLaunchLoop = CUDA_BLOCKRUN_SIM_LAUNCH_LOOP;
const std::string kDemo = CUDA_BLOCKRUN_DEMO;

std::string read_text(const std::string& path) {
  std::string text;
  if (FILE* file = std::fopen(path.c_str(), "r")) {
    char buffer[4096];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, got);
    std::fclose(file);
  }
  return text;
}

class Trace : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "blockrun_trace_XXXXXX";
    directory_ = mkdtemp(pattern.data());
    path_ = directory_ + "/trace.json";
  }
  void TearDown() override { run_process({"/bin/rm", "-rf", directory_}, {}); }

  // The checker's verdict on the trace, with `expect` (its options); its line goes into the test's output.
  ProcessResult check(const std::vector<std::string>& expect) {
    std::vector<std::string> argv = {kPython, kChecker, path_};
    argv.insert(argv.end(), expect.begin(), expect.end());
    ProcessResult result = run_process(argv, {});
    std::printf("%s", result.out.c_str());
    return result;
  }

  // Runs the Python `script` with the trace's path as sys.argv[1]. Python's json module reads the large
  // traces (tens of MB) that nlohmann's parser, in this file's unoptimized code (tests/CMakeLists.txt), reads
  // many times more slowly (docs/performance.md, "CI time").
  ProcessResult python_on_trace(const std::string& script) {
    return run_process({kPython, "-c", script, path_}, {});
  }

  std::string directory_, path_;
};

// The demo's fault (the 13th stencil launch is launch #38) in each mode that names a culprit, and in the one
// that names only suspects: the checker holds the culprit's arrow to the slice of stencil#13, and no slice
// but it is called exact.
TEST_F(Trace, EveryModeThatNamesTheCulpritDrawsItsArrowFromItsSlice) {
  struct Mode {
    std::vector<std::string> options;
    Env env;
    std::vector<std::string> expect;
  };
  const Env fault = {{"CUDA_SIM_FAULT", "stencil:13"}};
  const Env fault_at_sync = {{"CUDA_SIM_FAULT", "stencil:13"}, kSurfaceAtSync};
  const std::vector<Mode> modes = {
      {{"--block", "all", "--gpu-time"}, fault, {"--culprit", "stencil#13", "--exact", "--gpu-spans"}},
      {{"--breadcrumbs"}, fault_at_sync, {"--culprit", "stencil#13", "--exact"}},
      {{"--block", "stencil"}, fault_at_sync, {"--culprit", "stencil#13", "--not-exact"}},
      // The wrapper's run with no mode flag has breadcrumbs (docs/localize.md, "The default run").
      {{}, fault_at_sync, {"--culprit", "stencil#13", "--exact"}},
      {{"--breadcrumbs=0"}, fault_at_sync, {"--no-culprit", "--min-launches", "60"}},
  };
  for (const Mode& mode : modes) {
    std::vector<std::string> options = mode.options;
    options.insert(options.end(), {"--trace", path_});
    ProcessResult run = run_wrapped(options, {kApp, "steps"}, mode.env);
    EXPECT_NE(run.err.find("trace: "), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(" written to " + path_ + " (open it in ui.perfetto.dev or chrome://tracing)"),
              std::string::npos)
        << run.err;
    ProcessResult checked = check(mode.expect);
    EXPECT_EQ(checked.status, 0) << mode.options.size() << ": " << checked.out << run.err;
  }
}

// The bundled demo itself (nvcc-built; not in the sanitizer trees, which build no nvcc programs), as the
// README's users first run it: its trace parses, nests, and draws the culprit's arrow from stencil#13.
TEST_F(Trace, TheDemosTraceNamesItsCulprit) {
  if (access(kDemo.c_str(), X_OK) != 0) GTEST_SKIP() << "the demo was not built (no nvcc): " << kDemo;
  ProcessResult run = run_wrapped({"--block", "stencil", "--gpu-time", "--trace", path_}, {kDemo},
                                  {{"CUDA_SIM_FAULT", "stencil:13"}});
  EXPECT_EQ(run.status, 1) << run.err;
  ProcessResult checked =
      check({"--culprit", "stencil#13", "--not-exact", "--gpu-spans", "--min-launches", "38"});
  EXPECT_EQ(checked.status, 0) << checked.out;
}

TEST_F(Trace, EachHostThreadHasItsTrackAndItsSlicesNest) {
  ProcessResult run = run_wrapped({"--trace", path_}, {kThreadsApp, "4", "500"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  // The four launching threads, and the main thread with its device synchronize.
  EXPECT_NE(run.err.find("trace: 2001 launches and calls of 5 threads written to "), std::string::npos)
      << run.err;
  ProcessResult checked = check({"--min-launches", "2000", "--max-launches", "2000"});
  EXPECT_EQ(checked.status, 0) << checked.out;
}

// A million launches (100,000 in the sanitizer builds, where a million took 85 s under ThreadSanitizer): the
// trace keeps the newest 65,536 (--trace-events' default) and says how many it left out, so its size does not
// grow with the run.
TEST_F(Trace, ManyLaunchesMakeATraceOfTheNewest65536) {
  const long launches = kSanitizedBuild ? 100000 : 1000000;
  ProcessResult run = run_wrapped({"--trace", path_}, {kLaunchLoop, std::to_string(launches)}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  // 3,000 warm-up launches, the loop's, and the final synchronize.
  const long left_out = 3000 + launches + 1 - 65536;
  EXPECT_NE(run.err.find("trace: 65536 launches and calls of 1 thread written to " + path_ +
                         " (open it in ui.perfetto.dev or chrome://tracing); the first " +
                         std::to_string(left_out) +
                         " were left out: it keeps the newest 65536 of each thread (--trace-events)"),
            std::string::npos)
      << run.err;
  // About 330 bytes a launch: 65,536 of them are some 22 MB, whatever the number of launches.
  ProcessResult checked = check({"--dropped", "--max-launches", "65536", "--max-bytes", "32000000"});
  EXPECT_EQ(checked.status, 0) << checked.out;
}

TEST_F(Trace, AFatalSignalStillWritesTheTrace) {
  if (kSanitizedBuild) GTEST_SKIP() << "the sanitizer takes over the program's fatal signals";
  ProcessResult run = run_wrapped({"--trace", path_}, {kApp, "abort"}, {});
  EXPECT_EQ(run.status, 128 + SIGABRT) << run.err;
  EXPECT_NE(run.err.find("[cuda-blockrun] trace: 4 launches and calls of 1 thread written to " + path_),
            std::string::npos)
      << run.err;
  ProcessResult checked = check({"--no-culprit", "--min-launches", "3"});
  EXPECT_EQ(checked.status, 0) << checked.out;
  std::string text = read_text(path_);
  EXPECT_NE(text.find("\"cat\":\"signal\",\"name\":\"fatal signal SIGABRT\""), std::string::npos) << text;
}

// A graph replay is a slice of its own, named by its executable graph and which replay it was; with graph
// breadcrumbs, the first error's mark names the node that failed.
TEST_F(Trace, AFaultingGraphReplayIsTheCulpritsSliceAndItsFailedNodeIsNamed) {
  ProcessResult run =
      run_wrapped({"--breadcrumbs", "--graph-breadcrumbs", "--trace", path_}, {kApp, "capture", "3"},
                  {{"CUDA_SIM_FAULT", "stencil:2"}});  // stencil's node, in the second replay
  EXPECT_NE(run.err.find(" written to " + path_), std::string::npos) << run.err;
  EXPECT_EQ(check({"--processes", "1"}).status, 0);
  std::string text = read_text(path_);
  const std::regex replay(
      "\\{\"ph\":\"X\",[^\\n]*\"cat\":\"graph replay\",\"name\":\"graph replay\",[^\\n]*\"verdict\":\"the "
      "first error's culprit \\(exact\\)\",[^\\n]*\"graph\":\"exec 0x[0-9a-f]+, replay 2, 3 nodes\"");
  EXPECT_TRUE(std::regex_search(text, replay)) << text.substr(0, 4000);
  EXPECT_NE(text.find("\"failed_node\":\"node 2: stencil\""), std::string::npos) << text.substr(0, 4000);
}

// `cuda-blockrun report --trace`: two ranks of a job, one report file shared (as a path without %p gives),
// run with --log-launches; rank 1 faults. One timeline: a process per rank, rank 1's culprit arrow from
// stencil#13.
TEST_F(Trace, TheReportsOfAJobMakeOneTimelineWithAProcessPerRank) {
  std::string report = directory_ + "/job.jsonl";
  for (const auto& [rank, fault] : std::vector<std::pair<int, std::string>>{{0, ""}, {1, "stencil:13"}}) {
    Env env = {{"RANK", std::to_string(rank)}, {"CUDA_BLOCKRUN_RUN_ID", "job-1"}, kSurfaceAtSync};
    if (!fault.empty()) env["CUDA_SIM_FAULT"] = fault;
    ProcessResult r =
        run_wrapped({"--breadcrumbs", "--log-launches", "--report", report}, {kApp, "steps"}, env);
    EXPECT_EQ(r.status, fault.empty() ? 0 : 1) << r.err;
  }
  ProcessResult merged = run_process({kWrapper, "report", "--trace", path_, report}, {});
  EXPECT_EQ(merged.status, 1) << merged.err;  // as without --trace: a process failed
  EXPECT_NE(merged.out.find("first to fail: rank 1 (pid "), std::string::npos) << merged.out;
  EXPECT_NE(merged.err.find("cuda-blockrun: trace: 120 launches of 2 processes written to " + path_ +
                            " (open it in ui.perfetto.dev or chrome://tracing)\n"),
            std::string::npos)
      << merged.err;
  ProcessResult checked =
      check({"--processes", "2", "--culprit", "stencil#13", "--exact", "--min-launches", "120"});
  EXPECT_EQ(checked.status, 0) << checked.out;
  std::string text = read_text(path_);
  EXPECT_NE(text.find("\"args\":{\"name\":\"rank 0: cuda_app (pid "), std::string::npos)
      << text.substr(0, 2000);
  EXPECT_NE(text.find("\"args\":{\"name\":\"rank 1: cuda_app (pid "), std::string::npos)
      << text.substr(0, 2000);

  // Reports without launch records still make a trace (the first errors, where they surfaced), and say why
  // it has no launches.
  std::string bare = directory_ + "/bare.jsonl";
  run_wrapped({"--report", bare}, {kApp, "steps"}, {{"CUDA_SIM_FAULT", "stencil:13"}});
  ProcessResult without = run_process({kWrapper, "report", "--trace", path_, bare}, {});
  EXPECT_NE(without.err.find("cuda-blockrun: trace: 1 of the processes have no launch records: run them with "
                             "--log-launches for their launches to be in the trace\n"),
            std::string::npos)
      << without.err;
  EXPECT_EQ(check({"--no-culprit"}).status, 0);
  ProcessResult missing = run_process({kWrapper, "report", "--trace"}, {});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("report: --trace needs a value"), std::string::npos) << missing.err;
}

// A trace path the shim cannot use is said at once, and the program runs as without it.
TEST_F(Trace, ATracePathThatCannotBeUsedIsSaidAndTheProgramRunsOn) {
  std::string fifo = directory_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ProcessResult without = run_alone({kApp, "steps"}, {});
  ProcessResult run = run_wrapped({"--trace", fifo}, {kApp, "steps"}, {});
  EXPECT_EQ(run.status, without.status);
  EXPECT_EQ(run.out, without.out);
  EXPECT_NE(run.err.find("cannot open the trace file '" + fifo +
                         "' (it is a FIFO (named pipe) that nobody "
                         "reads, not a regular file); no trace is written"),
            std::string::npos)
      << run.err;
}

// The names in the trace's directory.
std::vector<std::string> names_in(const std::string& directory) {
  std::vector<std::string> names;
  if (DIR* listing = opendir(directory.c_str())) {
    while (dirent* entry = readdir(listing))
      if (entry->d_name[0] != '.') names.push_back(entry->d_name);
    closedir(listing);
  }
  return names;
}

// The program, traced (LD_PRELOAD, as torchrun's ranks run it), in the background of a shell that signals it
// as `when` says; the shell prints `status N`, N the program's.
ProcessResult run_signalled(const std::string& path, const std::string& when,
                            const std::vector<std::string>& command, Env env = {}) {
  std::vector<std::string> argv = {"/bin/sh", "-c",
                                   "\"$0\" \"$@\" & p=$!; " + when + "; wait $p; echo status $?"};
  argv.insert(argv.end(), command.begin(), command.end());
  env["LD_PRELOAD"] = kShim;
  env["LD_LIBRARY_PATH"] = kSimLib;
  env["CUDA_BLOCKRUN_TRACE"] = path;
  return run_process(argv, env);
}

// torchrun's SIGTERM to the other ranks arrives as a rank writes its trace at exit: the signal's handler
// writes it whole (a file beside it, renamed into place), and no cut document is left (issue 40, N5).
TEST_F(Trace, ASignalDuringTheExitsWritingLeavesAWholeTrace) {
  if (kSanitizedBuild) GTEST_SKIP() << "the sanitizer takes over the program's fatal signals";
  // As soon as the exit's writing has begun: a file in the directory is not empty any more.
  std::string when = "while kill -0 $p 2>/dev/null && [ -z \"$(find '" + directory_ +
                     "' -type f -size +0 -print -quit)\" ]; do sleep 0.002; done; kill -TERM $p";
  ProcessResult run = run_signalled(path_, when, {kThreadsApp, "4", "30000"});
  EXPECT_NE(run.out.find("status 143"), std::string::npos) << run.out << run.err;
  EXPECT_NE(run.err.find("[cuda-blockrun] trace: "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(" written to " + path_), std::string::npos) << run.err;
  ProcessResult checked = check({"--no-culprit", "--min-launches", "1000"});
  EXPECT_EQ(checked.status, 0) << checked.out;
  EXPECT_NE(read_text(path_).find("\"name\":\"fatal signal SIGTERM\""), std::string::npos);
  EXPECT_EQ(names_in(directory_), std::vector<std::string>{"trace.json"});
}

// The round's probe (term_at_exit.sh) waited for the trace's own path to be non-empty, which it is only once
// the trace was renamed into place whole: its signal came after the writing. Here the signal comes while the
// exit's writing is under way (the file beside the trace is not empty, the trace's path still is), for each
// signal torchrun and an NCCL watchdog send: the trace is whole (one JSON document, marked with the signal),
// nothing is left beside it, the report has the signal's record, and the log says where the trace went.
class TraceSignalDuringExit : public Trace, public ::testing::WithParamInterface<const char*> {};

TEST_P(TraceSignalDuringExit, LeavesAWholeTraceAndSaysSo) {
  if (kSanitizedBuild) GTEST_SKIP() << "the sanitizer takes over the program's fatal signals";
  std::string signal = GetParam();
  std::string report = directory_ + "/report.jsonl";
  // A file beside the trace has begun (TRACE.PID.N.tmp), and the trace's path is still empty.
  std::string when = "while kill -0 $p 2>/dev/null && [ -z \"$(find '" + directory_ +
                     "' -name 'trace.json.*.tmp' -size +0 -print -quit)\" ]; do sleep 0.001; done; [ -s '" +
                     path_ + "' ] && echo 'signalled late'; kill -" + signal + " $p";
  ProcessResult run =
      run_signalled(path_, when, {kThreadsApp, "8", "30000"}, {{"CUDA_BLOCKRUN_REPORT", report}});
  ASSERT_EQ(run.out.find("signalled late"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(signal == "TERM" ? "status 143" : "status 134"), std::string::npos)
      << run.out << run.err;
  // One whole JSON document; the signal's name in it.
  ProcessResult whole = python_on_trace("import json, sys; json.load(open(sys.argv[1])); print('whole')");
  EXPECT_EQ(whole.out, "whole\n") << whole.err;
  EXPECT_NE(read_text(path_).find("\"fatal signal SIG" + signal + "\""), std::string::npos);
  EXPECT_EQ(names_in(directory_).size(), 2u) << "a file left beside the trace";
  EXPECT_NE(read_text(report).find("\"type\":\"fatal_signal\""), std::string::npos) << read_text(report);
  EXPECT_NE(run.err.find("[cuda-blockrun] trace: "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(" written to " + path_), std::string::npos) << run.err;
}

INSTANTIATE_TEST_SUITE_P(TermAndAbort, TraceSignalDuringExit, ::testing::Values("TERM", "ABRT"));

// A disk that fills while the trace is written (RLIMIT_FSIZE here, as a 2 MB tmpfs would): no trace with a
// hole is left, the file is removed, and the log says so (issue 40, N7).
TEST_F(Trace, ATraceThatCannotBeWrittenWholeIsRemovedAndTheLogSaysSo) {
  ProcessResult run =
      run_wrapped({"--trace", path_},
                  {"/bin/sh", "-c", "ulimit -f 2048 && exec \"$0\" \"$@\"", kThreadsApp, "2", "20000"}, {});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("trace: could not write " + path_ +
                         " whole (file too large (RLIMIT_FSIZE)): it was removed, there is no trace"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(names_in(directory_), std::vector<std::string>{});
}

// A trace written from the signal's handler while other threads keep launching ends at the signal, and
// counts what they launched meanwhile (issue 40, N8): before, their rings wrapped under the reader, launches
// made after the signal were in it and `dropped_events` said 0.
TEST_F(Trace, ATraceWrittenAtASignalEndsThereAndCountsWhatOtherThreadsLaunchedMeanwhile) {
  if (kSanitizedBuild) GTEST_SKIP() << "the sanitizer takes over the program's fatal signals";
  // 4,096 entries a thread: the handler's writing is short, and the threads launch thousands meanwhile.
  ProcessResult run = run_signalled(path_, "sleep 0.3; kill -TERM $p", {kThreadsApp, "4", "3000000"},
                                    {{"CUDA_BLOCKRUN_TRACE_EVENTS", "4096"}});
  ASSERT_NE(run.out.find("status 143"), std::string::npos) << run.out << run.err;
  nlohmann::json trace = nlohmann::json::parse(read_text(path_));
  const nlohmann::json& other = trace["otherData"];
  auto left_out = [&](const char* cause) { return other.value(cause, uint64_t{0}); };
  EXPECT_GT(left_out("dropped_while_written"), 0u) << other.dump();
  EXPECT_EQ(left_out("dropped_events"), left_out("dropped_oldest") +
                                            left_out("dropped_threads_without_buffer") +
                                            left_out("dropped_while_written"));
  double signal_us = -1;
  for (const nlohmann::json& event : trace["traceEvents"])
    if (event.value("cat", "") == "signal") signal_us = event["ts"].get<double>();
  ASSERT_GE(signal_us, 0) << "no signal instant";
  size_t launches = 0, after = 0;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event.value("ph", "") != "X" || event.value("cat", "") != "launch") continue;
    ++launches;
    if (event["ts"].get<double>() > signal_us) ++after;
  }
  EXPECT_GT(launches, 0u);
  EXPECT_EQ(after, 0u) << "launches that began after the signal, of " << launches;
  EXPECT_NE(run.err.find(" made while it was being written were left out"), std::string::npos) << run.err;
}

// The peak resident memory (kB) of `command` run on the simulated stack with `env` (by `env`, which execs it:
// the peak is the program's own), as wait4 tells its parent.
long peak_kb(const std::vector<std::string>& command, const Env& env) {
  std::vector<std::string> argv = {kPython, "-c",
                                   "import resource, subprocess, sys\n"
                                   "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
                                   "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
                                   "env", "LD_LIBRARY_PATH=" + kSimLib};
  for (const auto& [name, value] : env) argv.push_back(name + "=" + value);
  argv.insert(argv.end(), command.begin(), command.end());
  ProcessResult run = run_process(argv, {});
  return run.status == 0 ? std::atol(run.out.c_str()) : -1;
}

// 64 threads alive at once, each launching 20,000 kernels with --trace-events 8192: their rings share one
// total of 16 x 8,192 entries (26 MB), where each kept its own before (64 x 1.6 MB: 118 MB; issue 40, N3).
// The trace keeps at most that total, and says what it left out.
TEST_F(Trace, ThreadsAliveAtOnceShareOneBoundedTotal) {
  if (kSanitizedBuild) GTEST_SKIP() << "the sanitizer's shadow memory would be measured";
  const std::vector<std::string> program = {kThreadsApp, "64", "20000"};
  Env traced = {
      {"LD_PRELOAD", kShim}, {"CUDA_BLOCKRUN_TRACE", path_}, {"CUDA_BLOCKRUN_TRACE_EVENTS", "8192"}};
  long with_trace = peak_kb(program, traced);
  long without = peak_kb(program, {{"LD_PRELOAD", kShim}});
  ASSERT_GT(with_trace, 0);
  ASSERT_GT(without, 0);
  const long total_kb = 16 * 8192 * 200 / 1024;  // 25,600 kB
  // The total, the two writings' buffers (1 MiB each and an event) and 4 MB for what varies between runs.
  EXPECT_LE(with_trace - without, total_kb + 2 * 1100 + 4096)
      << "peak " << with_trace << " kB with --trace, " << without << " kB without";
  // The launches and the final cudaDeviceSynchronize kept, and the two counts of those left out.
  ProcessResult counted = python_on_trace(
      "import json, sys\n"
      "trace = json.load(open(sys.argv[1]))\n"
      "kept = sum(1 for event in trace['traceEvents']\n"
      "           if event.get('ph') == 'X' and event.get('cat') in ('launch', 'synchronize'))\n"
      "other = trace['otherData']\n"
      "print(kept, other.get('dropped_oldest', 0), other.get('dropped_threads_without_buffer', 0))\n");
  unsigned long long kept = 0, dropped_oldest = 0, dropped_without_buffer = 0;
  ASSERT_EQ(
      std::sscanf(counted.out.c_str(), "%llu %llu %llu", &kept, &dropped_oldest, &dropped_without_buffer), 3)
      << counted.out << counted.err;
  EXPECT_LE(kept, 16u * 8192u);
  EXPECT_EQ(kept + dropped_oldest + dropped_without_buffer, 64u * 20000u + 1u) << counted.out;
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
