// The shim in real processes on the simulated CUDA stack: exact kernel names, blocked faults returned
// and named, identical behaviour with no policy, no synchronize during capture, non-CUDA programs
// untouched, invalid configuration refused before main.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <regex>

#include "sim_programs.h"
#include "../sanitized_build.h"

namespace blockrun::testing {
namespace {

// The app on the simulated stack, optionally with the shim preloaded.
ProcessResult app(const std::string& scenario, Env env, bool shim) {
  if (shim) env["LD_PRELOAD"] = kShim;
  return run_alone({kApp, scenario}, std::move(env));
}

// The app through the wrapper, as a user runs it.
ProcessResult wrapped(const std::vector<std::string>& options, const std::string& scenario, Env env = {}) {
  return run_wrapped(options, {kApp, scenario}, std::move(env));
}

TEST(Shim, LogsExactKernelNamesOfEveryLaunchPath) {
  struct Case {
    const char* scenario;
    const char* api;
    const char* stream;
  };
  // Each runtime launch is recorded once, by the driver wrapper it continues into.
  for (Case c :
       {Case{"steps", "__cudaLaunchKernel > cuLaunchKernel", "0x0"},
        Case{"direct", "cudaLaunchKernel > cuLaunchKernel", "0x0"},
        Case{"exc", "cudaLaunchKernelExC > cuLaunchKernelEx", "0x0"},
        Case{"ptsz", "__cudaLaunchKernel_ptsz > cuLaunchKernel_ptsz", "per-thread default (thread 1)"}}) {
    ProcessResult r = app(c.scenario, {{"CUDA_BLOCKRUN_LOG_LAUNCHES", "1"}}, true);
    ASSERT_EQ(r.status, 0) << c.scenario << r.err;
    std::string stream = c.stream;
    EXPECT_TRUE(contains(
        r.err, "[cuda-blockrun] launch: kernel fill(float*, int, float)<<<(4096,1,1), (256,1,1), 0, " +
                   stream + ">>>, launch #1 (fill#1) via " + c.api + "\n"))
        << c.scenario << "\n"
        << r.err;
    EXPECT_TRUE(contains(r.err,
                         "[cuda-blockrun] launch: kernel stencil(float*, float const*, int, long long)"
                         "<<<(4096,1,1), (256,1,1), 0, " +
                             stream + ">>>, launch #2 (stencil#1) via " + c.api))
        << r.err;
    EXPECT_TRUE(contains(r.err,
                         "[cuda-blockrun] launch: kernel scale(float*, int, float)<<<(4096,1,1), "
                         "(256,1,1), 0, " +
                             stream + ">>>, launch #60 (scale#20) via "))
        << r.err;
    EXPECT_TRUE(contains(r.err, "[cuda-blockrun] summary: 60 launches, 0 blocked; no CUDA errors\n"))
        << r.err;
  }
}

TEST(Shim, RuntimeLaunchIsRecordedExactlyOnce) {
  ProcessResult r = app("steps", {{"CUDA_BLOCKRUN_LOG_LAUNCHES", "1"}}, true);
  size_t lines = 0;
  for (size_t at = r.err.find("launch: kernel"); at != std::string::npos;
       at = r.err.find("launch: kernel", at + 1))
    ++lines;
  EXPECT_EQ(lines, 60u) << r.err;
  EXPECT_TRUE(contains(r.err, "summary: 60 launches, 0 blocked; no CUDA errors")) << r.err;
}

// A program linked with the static runtime: its runtime entry points cannot be interposed, and only the
// driver (found by the runtime through dlopen, dlsym and cuGetProcAddress) sees its launches.
TEST(Shim, StaticRuntimeLaunchesAreSeenNamedAndBlockedAtTheDriver) {
  const std::string program = CUDA_BLOCKRUN_STATIC_APP;
  EXPECT_FALSE(contains(run_process({"/bin/sh", "-c", "nm -D " + program}, {}).out, "__cudaLaunchKernel"));
  for (const char* mode : {"", "ptsz"}) {
    std::vector<std::string> argv = {kWrapper, "--block", "all", "--", program};
    if (*mode) argv.push_back(mode);
    ProcessResult r = run_process(argv, {{"LD_LIBRARY_PATH", kSimLib}, {"CUDA_SIM_FAULT", "stencil:13"}});
    std::string stream = *mode ? "per-thread default (thread 1)" : "0x0";
    EXPECT_TRUE(contains(r.out, "launch 37 returned") == false && contains(r.out, "launch 38 returned 700\n"))
        << r.out;
    EXPECT_TRUE(
        contains(r.err,
                 "[cuda-blockrun] first error: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was "
                 "encountered), returned by cuStreamSynchronize (blocking synchronize after the launch)\n"
                 "[cuda-blockrun]   in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), "
                 "(256,1,1), 0, " +
                     stream + ">>>, launch #38 (stencil#13), blocked\n"))
        << mode << "\n"
        << r.err;
  }
}

// The CuPy and Triton way: no CUDA library linked, the driver found with dlopen + dlsym (or through
// cuGetProcAddress_v2 found that way), kernels from cuModuleGetFunction (real CUfunctions).
TEST(Shim, DriverLaunchesFoundThroughDlsymAreSeen) {
  for (const char* mode : {"", "ex", "proc"}) {
    std::vector<std::string> argv = {kWrapper,         "--block", "all",
                                     "--log-launches", "--",      CUDA_BLOCKRUN_DRIVER_APP};
    if (*mode) argv.push_back(mode);
    ProcessResult r = run_process(argv, {{"LD_LIBRARY_PATH", kSimLib}, {"CUDA_SIM_FAULT", "oob_kernel:3"}});
    std::string api = std::string(mode) == "ex" ? "cuLaunchKernelEx" : "cuLaunchKernel";
    EXPECT_TRUE(contains(r.out, "launch 6 (oob_kernel) returned 700\n")) << mode << "\n" << r.out;
    EXPECT_TRUE(contains(
        r.err, "[cuda-blockrun] launch: kernel add_array(float*, float*, int)<<<(4,1,1), (256,1,1), 0, "))
        << r.err;
    EXPECT_TRUE(contains(r.err, ">>>, launch #1 (add_array#1) -> blocked via " + api + "\n"))
        << mode << r.err;
    EXPECT_TRUE(contains(r.err, "[cuda-blockrun]   in kernel oob_kernel<<<(")) << mode << r.err;
    EXPECT_TRUE(contains(r.err, ">>>, launch #6 (oob_kernel#3), blocked\n")) << mode << r.err;
  }
}

// The first door: a program linked with libcuda calls cuLaunchKernel by its exported name.
TEST(Shim, DriverLaunchesByExportedSymbolAreSeen) {
  ProcessResult r = run_process({kWrapper, "--block", "all", "--", CUDA_BLOCKRUN_DRIVER_APP_LINKED, "linked"},
                                {{"LD_LIBRARY_PATH", kSimLib}, {"CUDA_SIM_FAULT", "oob_kernel:3"}});
  EXPECT_TRUE(contains(r.out, "launch 6 (oob_kernel) returned 700\n")) << r.out;
  EXPECT_TRUE(contains(r.err, "[cuda-blockrun]   in kernel oob_kernel<<<(")) << r.err;
  EXPECT_TRUE(contains(r.err, ">>>, launch #6 (oob_kernel#3), blocked\n")) << r.err;
}

// A policy that names a cuBLAS call blocks the call as a whole; its kernel is still recorded, unblocked.
TEST(Shim, LibraryCallNamedByThePolicyIsBlockedAsAWhole) {
  ProcessResult r = wrapped({"--block", "cublasSgemm*", "--log-launches"}, "cublas");
  EXPECT_TRUE(contains(r.out, "cublasSgemm returned 13\n")) << r.out;
  EXPECT_TRUE(
      contains(r.err,
               "_execute_kernel_cublas<<<(1,1,1), (128,1,1), 0, 0x0>>>, launched by cublasSgemm_v2 m=64 "
               "n=64 k=64 transa=N transb=N, launch #1 (sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x"
               "128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel_cublas#1) via "
               "cuLaunchKernelEx\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun]   in cublasSgemm_v2 m=64 n=64 k=64 transa=N transb=N, launch #2, "
                       "stream 0x0, blocked\n"))
      << r.err;
}

// A graph launch is one unit, named by the graph and the node count it was instantiated with.
TEST(Shim, GraphLaunchIsOneUnitNamedByItsNodeCount) {
  ProcessResult r = wrapped({"--log-launches"}, "capture");
  EXPECT_EQ(r.out, "graph captured\ndone\n");
  EXPECT_TRUE(contains(r.err, " (3 nodes), launch #4, stream ")) << r.err;
  EXPECT_TRUE(contains(r.err, " via cuGraphLaunch\n")) << r.err;
}

// dlsym lookups the shim does not own return exactly what they return without it: RTLD_DEFAULT and
// RTLD_NEXT (whose answer depends on the caller), handles, missing names and dlerror.
TEST(Shim, DlsymBehavesAsWithoutTheShim) {
  const std::string probe = CUDA_BLOCKRUN_DLSYM_PROBE;
  ProcessResult without = run_process({probe}, {});
  ProcessResult with = run_process({probe}, {{"LD_PRELOAD", kShim}, {"CUDA_BLOCKRUN_BLOCK", "all"}});
  EXPECT_EQ(with.out, without.out);
  EXPECT_EQ(with.status, without.status);
  EXPECT_TRUE(contains(without.out, "main: dlsym(RTLD_NEXT, probe_value) after dlopen: 2\n")) << without.out;
  EXPECT_TRUE(contains(without.out, "done\n"));
}

TEST(Shim, BlockedFaultingLaunchReturnsTheErrorAndIsNamed) {
  ProcessResult r = wrapped({"--block", "all"}, "steps", {{"CUDA_SIM_FAULT", "stencil:13"}});
  EXPECT_EQ(r.status, 1);
  // The program sees the fault at the launch itself, as with CUDA_LAUNCH_BLOCKING=1, and every later call
  // returns the sticky error.
  EXPECT_TRUE(contains(r.out, "launch 38 returned 700\nlaunch 39 returned 700\n")) << r.out;
  EXPECT_FALSE(contains(r.out, "launch 37 returned")) << r.out;
  EXPECT_TRUE(contains(
      r.err,
      "[cuda-blockrun] first error: cudaErrorIllegalAddress (an illegal memory access was "
      "encountered), returned by cudaStreamSynchronize (blocking synchronize after the launch)\n"
      "[cuda-blockrun]   in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), (256,1,1), 0, "
      "0x0>>>, launch #38 (stencil#13), blocked\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] summary: 60 launches, 38 blocked; first error "
                       "cudaErrorIllegalAddress at launch #38, "))
      << r.err;
}

TEST(Shim, UnblockedFaultNamesTheNewestUnfinishedLaunchesAsSuspects) {
  // The fault is still in flight behind 22 more launches when the final cudaMemcpy waits.
  ProcessResult r = app("steps", {{"CUDA_SIM_FAULT", "stencil:13"}, kSurfaceAtSync}, true);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.out, "cudaMemcpy returned 700\n")) << r.out;
  EXPECT_TRUE(
      contains(r.err,
               "[cuda-blockrun] first error: cudaErrorIllegalAddress (an illegal memory access was "
               "encountered), returned by cudaMemcpy\n"
               "[cuda-blockrun]   culprit unknown (no blocked launch failed); suspects: launches not known "
               "to have completed, newest last:\n"
               "[cuda-blockrun]     kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), "
               "(256,1,1), 0, 0x0>>>, launch #53 (stencil#18)\n"))
      << r.err;
  // Each suspect names where it was called from (the return address into the program, known for every
  // launch at no cost), then the rule that pins the culprit.
  EXPECT_TRUE(contains(r.err,
                       "<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #60 (scale#20)\n"
                       "[cuda-blockrun]       launched at " CUDA_BLOCKRUN_SOURCE_DIR
                       "/tests/programs/cuda_app.cpp:"))
      << r.err;
  // (The function is named with its parameters where it was not inlined, as in sanitizer builds.)
  // The hint: first the command to copy (the same program under --localize). 22 launches are in flight and
  // the host's view keeps 8 a stream: the older ones' kernels are not known, so no rule made of kernel names
  // could be shown to cover them, and only --block all is offered besides.
  EXPECT_TRUE(std::regex_search(
      r.err,
      std::regex(" in \\(anonymous namespace\\)::steps[^\n]*\n"
                 "\\[cuda-blockrun\\]   more than 8 launches since the last completed synchronize could "
                 "have faulted \\(the older ones were not kept\\); the newest 8 are shown\n"
                 "\\[cuda-blockrun\\]   to pin it: cuda-blockrun --localize -- \\S*cuda_app steps\n"
                 "\\[cuda-blockrun\\]   or run again with --block all\n")))
      << r.err;
}

TEST(Shim, BlockingOneKernelByGlobBlocksOnlyIt) {
  ProcessResult r = wrapped({"--block=stencil"}, "steps", {{"CUDA_SIM_FAULT", "stencil:13"}});
  EXPECT_TRUE(contains(r.out, "launch 38 returned 700\n")) << r.out;
  EXPECT_TRUE(
      contains(r.err,
               "[cuda-blockrun]   in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), "
               "(256,1,1), 0, 0x0>>>, launch #38 (stencil#13), blocked\n"))
      << r.err;
  // fill #37 ran before it on the same stream without a synchronize: honestly a suspect too.
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun]     kernel fill(float*, int, float)<<<(4096,1,1), (256,1,1), 0, "
                       "0x0>>>, launch #37 (fill#13)\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "summary: 60 launches, 13 blocked;")) << r.err;
}

TEST(Shim, PerThreadDefaultStreamIsSynchronizedAndNamed) {
  ProcessResult r = wrapped({"--block", "all"}, "ptsz", {{"CUDA_SIM_FAULT", "stencil:2"}});
  EXPECT_TRUE(contains(r.out, "launch 5 returned 700\n")) << r.out;
  EXPECT_TRUE(contains(
      r.err,
      "in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), (256,1,1), 0, per-thread "
      "default (thread 1)>>>, launch #5 (stencil#2), blocked\n"))
      << r.err;
}

TEST(Shim, LaunchConfigurationErrorIsNamedAtTheLaunch) {
  ProcessResult r = app("config-error", {}, true);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "launch returned 1\ncudaGetLastError returned 1\ndone\n");
  EXPECT_TRUE(contains(
      r.err,
      "[cuda-blockrun] first error: cudaErrorInvalidValue (invalid argument), returned by "
      "__cudaLaunchKernel (the launch itself failed)\n"
      // What the driver's error log said during the launch (CUDA 12.9+), then the launch.
      "[cuda-blockrun]   driver log: One or more of block dimensions of (2048,1,1) exceeds correspsonding "
      "maximum value of (1024,1024,64)\n"
      "[cuda-blockrun]   in kernel fill(float*, int, float)<<<(4096,1,1), (2048,1,1), 0, 0x0>>>, launch #1 "
      "(fill#1)\n"
      "[cuda-blockrun]   launched at "))
      << r.err;
}

TEST(Shim, CublasCallIsNamedByItsArgumentsAndBlocked) {
  ProcessResult r = wrapped({"--block", "all"}, "cublas");
  EXPECT_TRUE(contains(r.out, "cublasSgemm returned 13\n")) << r.out;  // CUBLAS_STATUS_EXECUTION_FAILED
  // The driver sees cuBLAS's own kernel launch: it is blocked and named, with the call that launched it.
  EXPECT_TRUE(contains(
      r.err,
      "[cuda-blockrun]   in kernel "
      "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
      "alignc4_execute_kernel_cublas<<<(1,1,1), (128,1,1), 0, 0x0>>>, launched by cublasSgemm_v2 m=64 "
      "n=64 k=64 transa=N transb=N, launch #1 (sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_"
      "stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel_cublas#1), blocked\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "first error: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered), "
                       "returned by cuStreamSynchronize (blocking synchronize after the launch)"))
      << r.err;
}

TEST(Shim, WithoutPolicyTheProgramSeesExactlyTheSame) {
  for (const char* scenario : {"steps", "direct", "exc", "ptsz", "streams", "config-error", "capture",
                               "capture-other-thread", "cublas", "errno", "unknown-stub"}) {
    for (const char* fault : {"", "stencil:2", "fill:1"}) {
      Env env = {{"CUDA_SIM_FAULT", fault}};
      ProcessResult without = app(scenario, env, false);
      ProcessResult with = app(scenario, env, true);
      EXPECT_EQ(with.out, without.out) << scenario << " " << fault;
      EXPECT_EQ(with.status, without.status) << scenario << " " << fault;
      EXPECT_TRUE(contains(without.out, "done\n") || std::string(scenario) == "errno")
          << scenario << without.out;
    }
  }
}

TEST(Shim, ErrnoIsKeptAcrossWrappedCalls) {
  ProcessResult r = wrapped({"--block", "all", "--log-launches"}, "errno");
  EXPECT_EQ(r.out,
            "errno after cudaMemcpy: 33\nerrno after launch: 34\nerrno after cudaDeviceSynchronize: 33\n");
}

TEST(Shim, NeverSynchronizesACapturingStream) {
  std::string stats = ::testing::TempDir() + "blockrun_capture_stats";
  ProcessResult r = wrapped({"--block", "all"}, "capture", {{"CUDA_SIM_STATS", stats}});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "graph captured\ndone\n");
  EXPECT_TRUE(
      contains(r.err, "[cuda-blockrun] blocking skipped for kernel fill(float*, int, float)<<<(4096,1,1), "))
      << r.err;
  EXPECT_TRUE(contains(r.err, ">>>, launch #1 (fill#1): the stream is capturing a CUDA graph")) << r.err;
  // The three captured launches are not blocked; the graph launch after the capture is.
  EXPECT_TRUE(
      contains(r.err, "summary: 4 launches, 1 blocked, 3 not blocked during stream capture; no CUDA errors"))
      << r.err;
  std::string counts = read_file(stats);
  EXPECT_TRUE(contains(counts, "synchronizes_during_capture=0\n")) << counts;
  EXPECT_TRUE(contains(counts, "captures_invalidated=0\n")) << counts;
}

// Until the first capture begins, a blocked launch synchronizes without asking about captures (what
// CUDA_LAUNCH_BLOCKING=1 costs, no more); from then on it asks, and switches to relaxed mode around it.
TEST(Shim, BlockingChecksForCapturesOnlyOnceOneBegan) {
  std::string stats = ::testing::TempDir() + "blockrun_blocked_then_capture_stats";
  ProcessResult r = wrapped({"--block", "all"}, "blocked-then-capture", {{"CUDA_SIM_STATS", stats}});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "done\n");
  EXPECT_TRUE(
      contains(r.err, "summary: 7 launches, 5 blocked, 2 not blocked during stream capture; no CUDA errors"))
      << r.err;
  std::string counts = read_file(stats);
  // The 3 launches before the capture: none. Then each of the 4 launches after it is asked once when it is
  // recorded (a launch into a capture is no suspect), and again before its blocking synchronize: the 2
  // captured launches (skipped), the graph launch and the last launch (each synchronized between two mode
  // exchanges).
  EXPECT_TRUE(contains(counts, "capture_state_queries=8\n")) << counts;
  EXPECT_TRUE(contains(counts, "capture_mode_exchanges=4\n")) << counts;
  EXPECT_TRUE(contains(counts, "synchronizes_during_capture=0\n")) << counts;
  EXPECT_TRUE(contains(counts, "captures_invalidated=0\n")) << counts;
  // Without the shim the program asks nothing itself: the counts are the shim's.
  ProcessResult plain = app("blocked-then-capture", {{"CUDA_SIM_STATS", stats}}, false);
  EXPECT_EQ(plain.out, "done\n");
  EXPECT_TRUE(contains(read_file(stats), "capture_state_queries=0\ncapture_mode_exchanges=0\n"))
      << read_file(stats);
}

long stat_of(const std::string& counts, const std::string& key) {
  size_t at = counts.find(key + "=");
  return at == std::string::npos ? -1 : std::strtol(counts.c_str() + at + key.size() + 1, nullptr, 10);
}

// A blocked launch waits for its stream by polling it briefly (cheaper than a synchronize for short kernels)
// and synchronizes when the stream stays busy: either way the launch is complete when it returns, and the
// program sees what it sees without the shim.
TEST(Shim, BlockedLaunchPollsItsStreamThenSynchronizes) {
  std::string stats = ::testing::TempDir() + "blockrun_poll_stats";
  for (bool busy : {false, true}) {
    Env env = {{"CUDA_SIM_STATS", stats}};
    if (busy) env["CUDA_SIM_QUERY_NOT_READY"] = "1";
    ProcessResult plain = app("streams", env, false);
    std::string base = read_file(stats);
    ProcessResult r = wrapped({"--block", "all"}, "streams", env);
    std::string counts = read_file(stats);
    EXPECT_EQ(r.status, plain.status) << r.err;
    EXPECT_EQ(r.out, plain.out);
    EXPECT_TRUE(contains(r.err, "summary: 12 launches, 12 blocked; no CUDA errors")) << r.err;
    if (busy) {  // every poll answered "not ready" until it gave up: 12 synchronizes more
      EXPECT_EQ(stat_of(counts, "synchronizes"), stat_of(base, "synchronizes") + 12) << counts;
      EXPECT_EQ(stat_of(counts, "stream_queries_done"), stat_of(base, "stream_queries_done")) << counts;
      EXPECT_GT(stat_of(counts, "stream_queries"), stat_of(base, "stream_queries") + 12) << counts;
    } else {  // each launch's first poll found its stream done: no synchronize at all
      EXPECT_EQ(stat_of(counts, "synchronizes"), stat_of(base, "synchronizes")) << counts;
      EXPECT_EQ(stat_of(counts, "stream_queries_done"), stat_of(base, "stream_queries_done") + 12) << counts;
    }
  }
}

TEST(Shim, BlockingBesideAnotherThreadsCaptureKeepsItValid) {
  std::string stats = ::testing::TempDir() + "blockrun_capture_thread_stats";
  ProcessResult r = wrapped({"--block", "all"}, "capture-other-thread", {{"CUDA_SIM_STATS", stats}});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "graph captured\ndone\n");
  // The launch on the other stream was blocked (synchronized in relaxed mode), the captured one skipped.
  EXPECT_TRUE(contains(r.err, "summary: 2 launches, 1 blocked, 1 not blocked during stream capture"))
      << r.err;
  std::string counts = read_file(stats);
  EXPECT_TRUE(contains(counts, "captures_invalidated=0\n")) << counts;
}

TEST(Shim, NonCudaProgramIsUnaffected) {
  std::vector<std::string> shell = {"/bin/sh", "-c", "echo out; echo err >&2; exit 7"};
  ProcessResult plain = run_process(shell, {});
  ProcessResult preloaded = run_process(shell, {{"LD_PRELOAD", kShim}, {"CUDA_BLOCKRUN_BLOCK", "all"}});
  std::vector<std::string> via_wrapper = {kWrapper, "--block", "all", "--log-launches", "--"};
  via_wrapper.insert(via_wrapper.end(), shell.begin(), shell.end());
  ProcessResult wrapped_run = run_process(via_wrapper, {});
  for (const ProcessResult& r : {preloaded, wrapped_run}) {
    EXPECT_EQ(r.out, plain.out);
    EXPECT_EQ(r.err, plain.err);  // not one line of the shim's: it had nothing to say
    EXPECT_EQ(r.status, 7);
  }
}

TEST(Shim, MissingRealFunctionReturnsNotInitializedAndIsReportedOnce) {
  const std::string program = CUDA_BLOCKRUN_NO_CUDA_CALLER;
  EXPECT_EQ(run_process({program}, {}).out, "cudaDeviceSynchronize absent\ncublasSgemm_v2 absent\n");
  ProcessResult r = run_process({program}, {{"LD_PRELOAD", kShim}});
  EXPECT_EQ(r.status, 0);
  // cudaErrorInitializationError (3), CUBLAS_STATUS_NOT_INITIALIZED (1)
  EXPECT_EQ(r.out, "cudaDeviceSynchronize returned 3\ncublasSgemm_v2 returned 1\n");
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] shim problem: the real "
                       "cudaDeviceSynchronize was not found in any loaded library; returning its library's "
                       "'not initialized' status\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "the real cublasSgemm_v2 was not found")) << r.err;
}

TEST(Shim, InvalidConfigurationStopsBeforeMain) {
  ProcessResult r =
      run_process({"/bin/echo", "main ran"}, {{"LD_PRELOAD", kShim}, {"CUDA_BLOCKRUN_BLOCK", "a,,b"}});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(
      r.err,
      "cuda-blockrun: invalid CUDA_BLOCKRUN_BLOCK='a,,b': at 3: empty rule; accepted: none | all | rules "
      "separated by ';' or ',' (docs/policy.md)\n"
      "cuda-blockrun: the program was not started (exit status 2); see `cuda-blockrun --help`\n");

  r = run_process({"/bin/echo", "main ran"},
                  {{"LD_PRELOAD", kShim}, {"CUDA_BLOCKRUN_LOG_LAUNCHES", "sometimes"}});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "invalid CUDA_BLOCKRUN_LOG_LAUNCHES='sometimes'; accepted: 0 or 1\n")) << r.err;

  r = run_process({"/bin/echo", "main ran"}, {{"LD_PRELOAD", kShim}, {"CUDA_BLOCKRUN_BLOK", "all"}});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(
      contains(r.err,
               "invalid CUDA_BLOCKRUN_BLOK='all': unknown variable (did you mean 'CUDA_BLOCKRUN_BLOCK'?); "
               "accepted: one of the known variables: CUDA_BLOCKRUN, "))
      << r.err;
}

TEST(Shim, DisabledShimIsInert) {
  ProcessResult r =
      app("steps", {{"CUDA_BLOCKRUN", "0"}, {"CUDA_BLOCKRUN_BLOCK", "all"}, {"CUDA_SIM_FAULT", "stencil:13"}},
          true);
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(contains(r.out, "cudaMemcpy returned 700\n"));
  EXPECT_FALSE(contains(r.out, "launch 38 returned"));
}

TEST(Shim, LogGoesToTheFileNamedWithProcessId) {
  std::string directory = ::testing::TempDir() + "blockrun_logs_" + std::to_string(getpid());
  run_process({"/bin/mkdir", "-p", directory}, {});
  ProcessResult r = wrapped({"--block", "all", "--log", directory + "/log_%p.txt"}, "steps",
                            {{"CUDA_SIM_FAULT", "stencil:13"}});
  EXPECT_EQ(r.err, "");
  // The wrapper replaces itself with the program, so the file carries the program's pid: one file.
  std::string names = run_process({"/bin/ls", directory}, {}).out;
  EXPECT_EQ(std::count(names.begin(), names.end(), '\n'), 1) << names;
  EXPECT_EQ(names.rfind("log_", 0), 0u) << names;
  std::string log = read_file(directory + "/" + names.substr(0, names.size() - 1));
  EXPECT_TRUE(contains(log,
                       "in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), (256,1,1), 0, "
                       "0x0>>>, launch #38 (stencil#13), blocked\n"))
      << log;
  run_process({"/bin/rm", "-rf", directory}, {});
}

// A forked child that exits normally does not repeat the parent's summary.
TEST(Shim, ForkedChildDoesNotRepeatTheSummary) {
  ProcessResult r = wrapped({"--block", "all"}, "fork");
  EXPECT_EQ(r.out, "child exited 0\ndone\n");
  // One summary (and its table of blocked kernels), the parent's.
  EXPECT_EQ(r.err.find("[cuda-blockrun] summary: 3 launches, 3 blocked; no CUDA errors\n"), 0u) << r.err;
  EXPECT_EQ(r.err.find("] summary:", 20), std::string::npos) << r.err;
  EXPECT_TRUE(contains(r.err, "3 of 3 launches blocked: fill(float*, int, float)\n")) << r.err;
}

// CUDA calls from atexit handlers and static destructors, and exit while another thread launches: the
// program ends as it would without the shim, and the summary is written once, last.
TEST(Shim, ExitWithCudaCallsInFlightIsClean) {
  for (int run = 0; run < 5; ++run) {
    ProcessResult r = run_process({kWrapper, "--block", "every=7", "--", CUDA_BLOCKRUN_LIFECYCLE_APP},
                                  {{"LD_LIBRARY_PATH", kSimLib}});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "main done\n");
    EXPECT_TRUE(contains(r.err, "atexit: cudaDeviceSynchronize returned 0\n")) << r.err;
    EXPECT_TRUE(contains(r.err, "static destructor: cudaDeviceSynchronize returned 0\n")) << r.err;
    size_t summary = r.err.find("[cuda-blockrun] summary: ");
    EXPECT_NE(summary, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("[cuda-blockrun] summary: ", summary + 1), std::string::npos) << r.err;
    EXPECT_GT(summary, r.err.find("static destructor: ")) << r.err;  // the shim's summary comes last
  }
  ProcessResult fast = run_process({kWrapper, "--block", "all", "--", CUDA_BLOCKRUN_LIFECYCLE_APP, "fast"},
                                   {{"LD_LIBRARY_PATH", kSimLib}});
  EXPECT_EQ(fast.status, 3);
  EXPECT_EQ(fast.out, "main done\n");
}

// ---- many threads ----

// The sanitizer builds run the same threads with fewer launches each: a race shows in the first launches that
// run it (ThreadSanitizer reports an unordered pair of accesses when it happens, not by chance over many),
// and the full counts took 44 s and 62 s under ThreadSanitizer, a quarter of that tree's test time.
constexpr size_t kLaunchesPerThread = kSanitizedBuild ? 10000 : 100000;
// Logged launches cost far more than quiet ones (each is a formatted line written to the log): 25,000 per
// thread still has 8 threads writing at once for the whole run, where a lost or doubled line would show.
constexpr size_t kLoggedPerThread = kSanitizedBuild ? 2500 : 25000;

// 8 threads x 100,000 launches over 16 streams with a per-launch policy: the counts are exact.
TEST(Threads, CountsAreExactUnderLoad) {
  const size_t total = 8 * kLaunchesPerThread;
  ProcessResult r = run_process({kWrapper, "--block", "every=1000", "--", CUDA_BLOCKRUN_THREADS_APP, "8",
                                 std::to_string(kLaunchesPerThread)},
                                {{"LD_LIBRARY_PATH", kSimLib}});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, std::to_string(total) + " launches, 0 failed, cudaDeviceSynchronize returned 0\n");
  // Launch numbers are unique and dense: exactly those divisible by 1000 were blocked.
  EXPECT_TRUE(contains(r.err, "summary: " + std::to_string(total) + " launches, " +
                                  std::to_string(total / 1000) + " blocked; no CUDA errors"))
      << r.err;
}

// With per-launch logging, every launch is logged exactly once: no record lost or duplicated.
// 8 threads x 25,000 launches over 16 streams with a policy and per-launch logging.

TEST(Threads, EveryLaunchIsLoggedOnce) {
  std::string log = ::testing::TempDir() + "blockrun_threads_" + std::to_string(getpid()) + ".log";
  const size_t total = 8 * kLoggedPerThread;
  ProcessResult r = run_process({kWrapper, "--log-launches", "--log", log, "--block", "every=97", "--",
                                 CUDA_BLOCKRUN_THREADS_APP, "8", std::to_string(kLoggedPerThread)},
                                {{"LD_LIBRARY_PATH", kSimLib}});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, std::to_string(total) + " launches, 0 failed, cudaDeviceSynchronize returned 0\n");
  std::string text = read_file(log);
  std::vector<bool> seen(total + 1, false);
  size_t lines = 0, duplicates = 0;
  for (size_t at = text.find(", launch #"); at != std::string::npos; at = text.find(", launch #", at + 1)) {
    size_t sequence = std::strtoul(text.c_str() + at + 10, nullptr, 10);
    if (text.compare(text.rfind('\n', at) + 1, 24, "[cuda-blockrun] launch: ") != 0) continue;
    ++lines;
    if (sequence < seen.size() && seen[sequence]) ++duplicates;
    if (sequence < seen.size()) seen[sequence] = true;
  }
  EXPECT_EQ(lines, total);
  EXPECT_EQ(duplicates, 0u);
  // Launches numbered 1..total without a gap; every 97th blocked.
  EXPECT_EQ(std::count(seen.begin() + 1, seen.end(), true), static_cast<long>(total));
  EXPECT_TRUE(contains(text, "summary: " + std::to_string(total) + " launches, " +
                                 std::to_string(total / 97) + " blocked; no CUDA errors"))
      << text.substr(text.size() - 300);
  std::remove(log.c_str());
}

// ---- the policy language ----

TEST(Policy, OnlyMatchingLaunchesAreBlocked) {
  ProcessResult nth = wrapped({"--block", "stencil#13"}, "steps", {{"CUDA_SIM_FAULT", "stencil:13"}});
  EXPECT_TRUE(contains(nth.out, "launch 38 returned 700\n")) << nth.out;
  EXPECT_TRUE(contains(nth.err, "summary: 60 launches, 1 blocked;")) << nth.err;
  ProcessResult excluded = wrapped({"--block", "!fill", "--block", "all"}, "steps");
  EXPECT_TRUE(contains(excluded.err, "summary: 60 launches, 40 blocked; no CUDA errors")) << excluded.err;
  ProcessResult numbered = wrapped({"--block", "#10-19"}, "steps");
  EXPECT_TRUE(contains(numbered.err, "summary: 60 launches, 10 blocked; no CUDA errors")) << numbered.err;
  ProcessResult every = wrapped({"--block", "every=20"}, "steps");
  EXPECT_TRUE(contains(every.err, "summary: 60 launches, 3 blocked; no CUDA errors")) << every.err;
  ProcessResult family = wrapped({"--block", "family=driver"}, "steps");  // runtime launches: none
  EXPECT_TRUE(contains(family.err, "summary: 60 launches, 0 blocked; no CUDA errors")) << family.err;
}

TEST(Policy, AbortLeavesACompleteReportAndAbnormalStatus) {
  ProcessResult r = run_process({"/bin/sh", "-c", "ulimit -c 0; exec \"$0\" \"$@\"", kWrapper, "--block",
                                 "stencil abort", "--", kApp, "steps"},
                                {{"LD_LIBRARY_PATH", kSimLib}, {"CUDA_SIM_FAULT", "stencil:13"}});
  EXPECT_EQ(r.status, 128 + 6) << r.err;  // SIGABRT
  EXPECT_TRUE(
      contains(r.err,
               "[cuda-blockrun]   in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), "
               "(256,1,1), 0, 0x0>>>, launch #38 (stencil#13), blocked\n"
               "[cuda-blockrun]   launched at "))
      << r.err;
  EXPECT_TRUE(
      contains(r.err,
               "[cuda-blockrun]   ending the process as rule 1 says (abort)\n"
               "[cuda-blockrun] summary: 38 launches, 13 blocked; first error cudaErrorIllegalAddress "
               "at launch #38, 0 later errors\n"))
      << r.err;
  EXPECT_FALSE(contains(r.out, "done")) << r.out;
}

TEST(Policy, ExitStatusAndBlockDeviceAndLogActions) {
  ProcessResult exited = wrapped({"--block", "stencil exit=3"}, "steps", {{"CUDA_SIM_FAULT", "stencil:13"}});
  EXPECT_EQ(exited.status, 3);
  EXPECT_TRUE(contains(exited.err, "ending the process as rule 1 says (exit 3)")) << exited.err;
  ProcessResult device =
      wrapped({"--block", "stencil block-device"}, "steps", {{"CUDA_SIM_FAULT", "stencil:13"}});
  EXPECT_TRUE(contains(device.out, "launch 38 returned 700\n")) << device.out;
  EXPECT_TRUE(
      contains(device.err, "returned by cudaDeviceSynchronize (blocking synchronize after the launch)"))
      << device.err;
  ProcessResult logged = wrapped({"--block", "stencil log"}, "steps");
  EXPECT_TRUE(contains(logged.err,
                       "[cuda-blockrun] launch: kernel stencil(float*, float const*, int, long long)"
                       "<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #2 (stencil#1) -> logged by rule 1 via "
                       "__cudaLaunchKernel > cuLaunchKernel\n"))
      << logged.err;
  EXPECT_FALSE(contains(logged.err, "launch: kernel fill")) << logged.err;
  EXPECT_TRUE(contains(logged.err, "summary: 60 launches, 0 blocked; no CUDA errors")) << logged.err;
}

TEST(Policy, RankAndProcessFiltersLeaveOtherProcessesUntouched) {
  Env env = {{"CUDA_SIM_FAULT", "stencil:13"}, {"CUDA_BLOCKRUN_BLOCK", "all"}, {"CUDA_BLOCKRUN_RANKS", "1"}};
  ProcessResult without = app("steps", {{"CUDA_SIM_FAULT", "stencil:13"}}, false);
  env["RANK"] = "0";
  ProcessResult rank0 = app("steps", env, true);
  EXPECT_EQ(rank0.out, without.out);
  EXPECT_EQ(rank0.err, "");  // inert: not a line
  env["RANK"] = "1";
  ProcessResult rank1 = app("steps", env, true);
  EXPECT_TRUE(contains(rank1.out, "launch 38 returned 700\n")) << rank1.out;

  ProcessResult other = app("steps",
                            {{"CUDA_SIM_FAULT", "stencil:13"},
                             {"CUDA_BLOCKRUN_BLOCK", "all"},
                             {"CUDA_BLOCKRUN_PROCESS", "^trainer$"}},
                            true);
  EXPECT_EQ(other.out, without.out);
  EXPECT_EQ(other.err, "");
  ProcessResult chosen = app("steps",
                             {{"CUDA_SIM_FAULT", "stencil:13"},
                              {"CUDA_BLOCKRUN_BLOCK", "all"},
                              {"CUDA_BLOCKRUN_PROCESS", "cuda_app steps"}},
                             true);
  EXPECT_TRUE(contains(chosen.out, "launch 38 returned 700\n")) << chosen.out;
}

TEST(Policy, LogPathCarriesTheRank) {
  std::string directory = ::testing::TempDir() + "blockrun_rank_logs_" + std::to_string(getpid());
  run_process({"/bin/mkdir", "-p", directory}, {});
  ProcessResult r =
      app("steps", {{"CUDA_BLOCKRUN_LOG", directory + "/rank%r.log"}, {"OMPI_COMM_WORLD_RANK", "5"}}, true);
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(contains(read_file(directory + "/rank5.log"), "summary: 60 launches")) << directory;
  run_process({"/bin/rm", "-rf", directory}, {});
}

// A rank (a launcher's variable set) writes its pid and rank on every line of a log it may share; in a file
// named by its pid (%p) no one else writes, and the lines stay as a process alone writes them.
TEST(Policy, ARanksLinesCarryItsPidAndRankUnlessItsLogIsItsOwn) {
  ProcessResult shared = app("steps", {{"OMPI_COMM_WORLD_RANK", "3"}}, true);
  EXPECT_TRUE(
      std::regex_match(shared.err, std::regex("\\[cuda-blockrun [0-9]+ rank 3\\] summary: 60 launches, 0 "
                                              "blocked; no CUDA errors\n")))
      << shared.err;
  std::string directory = ::testing::TempDir() + "blockrun_own_logs_" + std::to_string(getpid());
  run_process({"/bin/mkdir", "-p", directory}, {});
  ProcessResult own =
      app("steps", {{"CUDA_BLOCKRUN_LOG", directory + "/log.%p"}, {"OMPI_COMM_WORLD_RANK", "3"}}, true);
  std::string names = run_process({"/bin/ls", directory}, {}).out;
  EXPECT_EQ(read_file(directory + "/" + names.substr(0, names.find('\n'))),
            "[cuda-blockrun] summary: 60 launches, 0 blocked; no CUDA errors\n");
  run_process({"/bin/rm", "-rf", directory}, {});
  ProcessResult alone = app("steps", {}, true);
  EXPECT_EQ(alone.err, "[cuda-blockrun] summary: 60 launches, 0 blocked; no CUDA errors\n");
}

TEST(Wrapper, ExplainSaysWhichRuleDecides) {
  ProcessResult r = run_process(
      {kWrapper, "--block", "!fill", "--block", "stencil#13 abort", "--explain", "stencil#13 #38"}, {});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out,
            "kernel stencil, launch #38 (stencil#13), family runtime:\n"
            "  blocked (its stream is synchronized after it); on error: report, then abort\n"
            "  decided by rule 2: 'stencil#13 abort'\n");
  ProcessResult nccl =
      run_process({kWrapper, "--block", "all", "--explain", "ncclDevKernel_AllReduce_Sum_f32"}, {});
  EXPECT_TRUE(contains(nccl.out, "  not blocked\n  decided by the NCCL default")) << nccl.out;
  ProcessResult unmatched = run_process({kWrapper, "--block", "stencil", "--explain", "fill"}, {});
  EXPECT_TRUE(contains(unmatched.out, "  not blocked\n  no rule matches (policy: stencil)\n"))
      << unmatched.out;
}

// --print-limit caps the summary's table of blocked kernels and says how many rows it left out; 0 prints all.
TEST(Wrapper, PrintLimitCutsTheSummarysTableAndSaysHowManyMore) {
  ProcessResult one = wrapped({"--block", "all", "--print-limit", "1"}, "steps");
  EXPECT_EQ(one.status, 0) << one.err;
  EXPECT_TRUE(std::regex_search(
      one.err,
      std::regex(
          "\\[cuda-blockrun\\] summary: 60 launches, 60 blocked; no CUDA errors\n"
          "\\[cuda-blockrun\\] blocked launches by wall time \\(top 1; --gpu-time adds their GPU "
          "time\\):\n"
          "\\[cuda-blockrun\\] +[0-9.]+ ms wall \\(median [0-9.]+, p90 [0-9.]+, max [0-9.]+\\), no GPU "
          "time; 20 of 20 launches blocked: [a-z]+\\([^\n]*\\)\n"
          "\\[cuda-blockrun\\]   \\.\\.\\. and 2 more \\(--print-limit 0 prints all; --report's "
          "summary lists up to 1000\\)\n$")))
      << one.err;
  ProcessResult all = wrapped({"--block", "all", "--print-limit", "0"}, "steps");
  EXPECT_TRUE(contains(all.err, "blocked launches by wall time (all; --gpu-time adds their GPU time):\n"))
      << all.err;
  EXPECT_EQ(std::count(all.err.begin(), all.err.end(), '\n'), 5) << all.err;
  EXPECT_FALSE(contains(all.err, " more (")) << all.err;
  ProcessResult bad = wrapped({"--print-limit", "-1"}, "steps");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_TRUE(
      contains(bad.err, "invalid CUDA_BLOCKRUN_PRINT_LIMIT='-1'; accepted: a whole number; 0: no limit"))
      << bad.err;
}

// --explain reads a launch as the policy does: NAME#N is the kernel's N-th launch, a bare #N the process's;
// its 12th launch is not the 13th, and ordinal= is refused with the form to write instead.
// --explain reads the configuration as the shim would, through its parser (issue 41): a variable the shim
// would refuse (a misspelt CUDA_BLOCKRUN_BLOK) is refused here too, not explained past.
TEST(Wrapper, ExplainGoesThroughTheConfigurationParser) {
  ProcessResult misspelt =
      run_process({kWrapper, "--block", "stencil", "--explain", "stencil"}, {{"CUDA_BLOCKRUN_BLOK", "1"}});
  EXPECT_EQ(misspelt.status, 2);
  EXPECT_EQ(misspelt.out, "");
  EXPECT_TRUE(contains(misspelt.err,
                       "invalid CUDA_BLOCKRUN_BLOK='1': unknown variable (did you mean "
                       "'CUDA_BLOCKRUN_BLOCK'?)"))
      << misspelt.err;
  EXPECT_TRUE(contains(misspelt.err, "cuda-blockrun: nothing was explained\n")) << misspelt.err;
  ProcessResult from_environment =
      run_process({kWrapper, "--explain", "stencil#13"}, {{"CUDA_BLOCKRUN_BLOCK", "stencil#13"}});
  EXPECT_EQ(from_environment.status, 0) << from_environment.err;
  EXPECT_TRUE(contains(from_environment.out, "decided by rule 1: 'stencil#13'")) << from_environment.out;
}

TEST(Wrapper, ExplainTakesThePolicysNameAndNumber) {
  ProcessResult twelfth = run_process({kWrapper, "--block", "stencil#13", "--explain", "stencil#12"}, {});
  EXPECT_EQ(twelfth.status, 0);
  EXPECT_EQ(twelfth.out,
            "kernel stencil, launch #1 (stencil#12), family runtime:\n"
            "  not blocked\n"
            "  no rule matches (policy: stencil#13)\n");
  ProcessResult overall = run_process({kWrapper, "--block", "#38", "--explain", "stencil #38"}, {});
  EXPECT_EQ(overall.out,
            "kernel stencil, launch #38 (stencil#1), family runtime:\n"
            "  blocked (its stream is synchronized after it); on error: returned to the program\n"
            "  decided by rule 1: '#38'\n");
  ProcessResult ordinal =
      run_process({kWrapper, "--block", "stencil#13", "--explain", "stencil ordinal=13"}, {});
  EXPECT_EQ(ordinal.status, 2);
  EXPECT_EQ(ordinal.out, "");
  EXPECT_TRUE(
      contains(ordinal.err,
               "--explain: 'ordinal=13': write a kernel's N-th launch as NAME#N, as in the policy (e.g. "
               "--explain 'stencil#13')\n"))
      << ordinal.err;
}

// A library call is explained as the engine records it at a cuBLAS launch: family cublas unless family= says
// otherwise; the call itself (no kernel named) is a unit without a per-kernel number.
TEST(Wrapper, ExplainHonoursFamilyAndLibraryRules) {
  ProcessResult call =
      run_process({kWrapper, "--block", "family=cublas", "--explain", "library=cublasSgemm_v2"}, {});
  EXPECT_EQ(call.status, 0);
  EXPECT_EQ(call.out,
            "library call cublasSgemm_v2, launch #1, family cublas:\n"
            "  blocked (its stream is synchronized after it); on error: returned to the program\n"
            "  decided by rule 1: 'family=cublas'\n");
  // A kernel the call launched: family cublas too; library= matches only the call as a whole
  // (docs/policy.md).
  ProcessResult kernel = run_process(
      {kWrapper, "--block", "family=cublas", "--explain", "sm90_xmma_gemm library=cublasSgemm_v2"}, {});
  EXPECT_EQ(
      kernel.out,
      "kernel sm90_xmma_gemm, launch #1 (sm90_xmma_gemm#1), family cublas, launched by cublasSgemm_v2:\n"
      "  blocked (its stream is synchronized after it); on error: returned to the program\n"
      "  decided by rule 1: 'family=cublas'\n");
  ProcessResult unit = run_process(
      {kWrapper, "--block", "library=cublasSgemm*", "--explain", "sm90_xmma_gemm library=cublasSgemm_v2"},
      {});
  EXPECT_TRUE(contains(unit.out, "launched by cublasSgemm_v2:\n  not blocked\n  no rule matches"))
      << unit.out;
  ProcessResult driver = run_process(
      {kWrapper, "--block", "family=cublas", "--explain", "library=cublasSgemm_v2 family=driver"}, {});
  EXPECT_EQ(driver.out,
            "library call cublasSgemm_v2, launch #1, family driver:\n"
            "  not blocked\n"
            "  no rule matches (policy: family=cublas)\n");
  ProcessResult runtime = run_process({kWrapper, "--block", "family=cublas", "--explain", "stencil"}, {});
  EXPECT_TRUE(
      contains(runtime.out, "kernel stencil, launch #1 (stencil#1), family runtime:\n  not blocked\n"))
      << runtime.out;
}

// The log never follows a planted symbolic link: one clear line, then the log goes to standard error.
TEST(Shim, LogFileRefusesSymbolicLinksAndIsCreated0644) {
  std::string directory = ::testing::TempDir() + "blockrun_links_" + std::to_string(getpid());
  run_process({"/bin/mkdir", "-p", directory}, {});
  std::string target = directory + "/victim", link = directory + "/run.log";
  run_process({"/bin/sh", "-c", "echo precious > " + target + " && ln -s " + target + " " + link}, {});
  ProcessResult r = wrapped({"--log", link}, "steps");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(
      contains(r.err, "[cuda-blockrun] cannot open the log file '" + link +
                          "' (it is a symbolic link, which the shim never follows); logging to standard "
                          "error\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "summary: 60 launches")) << r.err;
  EXPECT_EQ(read_file(target), "precious\n");

  std::string fresh = directory + "/fresh.log";
  r = wrapped({"--log", fresh}, "steps");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(run_process({"/usr/bin/stat", "-c", "%a", fresh}, {{"LD_PRELOAD", "<unset>"}}).out, "644\n");
  EXPECT_TRUE(contains(read_file(fresh), "summary: 60 launches"));

  // --private-files: log and report readable by the owner only.
  std::string private_log = directory + "/private.log", private_report = directory + "/private.jsonl";
  r = wrapped({"--private-files", "--log", private_log, "--report", private_report}, "steps");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(
      run_process({"/usr/bin/stat", "-c", "%a", private_log, private_report}, {{"LD_PRELOAD", "<unset>"}})
          .out,
      "600\n600\n");

  // A directory that does not exist is refused before the program runs (issue 19: the report was silently
  // missing), by the wrapper and by the shim alone.
  const std::string nowhere = directory + "/no/such/dir/";
  r = wrapped({"--log", nowhere + "x.log"}, "steps");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "cuda-blockrun: CUDA_BLOCKRUN_LOG='" + nowhere +
                                  "x.log': no such directory: '" + nowhere +
                                  "'; make it first, or give a path in an existing directory\n"))
      << r.err;
  EXPECT_FALSE(contains(r.out, "launch")) << r.out;
  r = wrapped({}, "steps", {{"CUDA_BLOCKRUN_REPORT", nowhere + "r.jsonl"}});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(
      contains(r.err, "cuda-blockrun: CUDA_BLOCKRUN_REPORT='" + nowhere + "r.jsonl': no such directory"))
      << r.err;
  // The shim alone never stops a process for it (a shell may change its directory before it starts the
  // program): the log says where the report could not be written.
  r = app("steps", {{"CUDA_BLOCKRUN_REPORT", nowhere + "r.jsonl"}}, true);
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.err, "(No such file or directory)")) << r.err;
  // A directory named per process is known only when the file is opened: the log says so there.
  r = wrapped({"--log", directory + "/no%p/x.log"}, "steps");
  EXPECT_TRUE(contains(r.err, "(No such file or directory); logging to standard error\n")) << r.err;
  run_process({"/bin/rm", "-rf", directory}, {});
}

TEST(Wrapper, ReturnsTheProgramsStatusAndRefusesBadInput) {
  EXPECT_EQ(run_process({kWrapper, "--", "/bin/sh", "-c", "exit 42"}, {}).status, 42);
  ProcessResult missing = run_process({kWrapper, "--block", "all", "--", "/nonexistent/program"}, {});
  EXPECT_EQ(missing.status, 2);
  EXPECT_TRUE(
      contains(missing.err, "cuda-blockrun: program '/nonexistent/program' not found or not executable\n"));
  ProcessResult bad = run_process({kWrapper, "--blok", "all", "--", "/bin/true"}, {});
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(contains(bad.err, "cuda-blockrun: unknown option '--blok' (did you mean '--block'?)\n"))
      << bad.err;
  ProcessResult bad_value = run_process({kWrapper, "--block", "x[", "--", "/bin/true"}, {});
  EXPECT_EQ(bad_value.status, 2);
  EXPECT_TRUE(contains(bad_value.err, "invalid CUDA_BLOCKRUN_BLOCK='x[': at 1 ('x['): unclosed '[' in 'x['"))
      << bad_value.err;
  ProcessResult none = run_process({kWrapper}, {});
  EXPECT_EQ(none.status, 2);
  EXPECT_TRUE(contains(none.err, "cuda-blockrun: no program given\n"));
}

// Issue 19: a program that swallows its CUDA error and exits 0 (as PyTorch programs that catch the exception
// do) passes a CI job, unless --error-exitcode says otherwise, as compute-sanitizer's and valgrind's do.
TEST(Wrapper, ErrorExitcodeFailsAProgramThatSwallowedACudaError) {
  char temporary[] = "/tmp/blockrun-exitcode.XXXXXX";
  ASSERT_NE(mkdtemp(temporary), nullptr);
  // The error is met in a child of the program (a shell that ignores the app's status): it counts as well.
  const std::vector<std::string> swallowing = {"/bin/sh", "-c", kApp + " steps >/dev/null 2>&1; exit 0"};
  const Env faulty = {{"CUDA_SIM_FAULT", "stencil:13"}, {"TMPDIR", temporary}};
  ProcessResult r = run_wrapped({"--error-exitcode", "7"}, swallowing, faulty);
  EXPECT_EQ(r.status, 7);
  EXPECT_TRUE(
      std::regex_search(r.err, std::regex("\\[cuda-blockrun\\] the program exited 0, but process [0-9]+ met "
                                          "cudaErrorIllegalAddress \\(returned by [a-zA-Z_]+\\): exit "
                                          "status 7, as --error-exitcode says\n")))
      << r.err;
  // Without the flag, or without an error, the program's own status; a status of its own is kept.
  EXPECT_EQ(run_wrapped({}, swallowing, faulty).status, 0);
  EXPECT_EQ(run_wrapped({"--error-exitcode=7"}, swallowing, {{"TMPDIR", temporary}}).status, 0);
  EXPECT_EQ(run_wrapped({"--error-exitcode", "7"}, {kApp, "steps"}, faulty).status, 1);
  // A program killed by a signal ends the wrapper by the same signal.
  EXPECT_EQ(run_wrapped({"--error-exitcode", "7"}, {"/bin/sh", "-c", "kill -TERM $$"}, faulty).status,
            128 + SIGTERM);
  // The error files are removed.
  EXPECT_EQ(run_process({"/bin/sh", "-c", std::string("ls -A ") + temporary}, {}).out, "");
  rmdir(temporary);
  for (const char* bad : {"0", "256", "x", "-1"}) {
    ProcessResult refused = run_process({kWrapper, "--error-exitcode", bad, "--", "/bin/true"}, {});
    EXPECT_EQ(refused.status, 2) << bad;
    EXPECT_TRUE(contains(refused.err, std::string("cuda-blockrun: --error-exitcode: '") + bad +
                                          "' is not an exit status; accepted: a whole number 1-255\n"))
        << refused.err;
  }
  ProcessResult both = run_process({kWrapper, "--error-exitcode", "3", "--", "/bin/true"},
                                   {{"CUDA_BLOCKRUN_ERROR_FILE", "/tmp/errors"}});
  EXPECT_EQ(both.status, 2);
  EXPECT_TRUE(contains(both.err,
                       "--error-exitcode keeps its own error file: it cannot be combined with "
                       "CUDA_BLOCKRUN_ERROR_FILE\n"))
      << both.err;
}

// Without the wrapper, CUDA_BLOCKRUN_ERROR_FILE tells a job's script which processes met an error.
TEST(Shim, ErrorFileGetsOneLinePerProcessThatMetAnError) {
  char temporary[] = "/tmp/blockrun-errorfile.XXXXXX";
  ASSERT_NE(mkdtemp(temporary), nullptr);
  const std::string file = std::string(temporary) + "/errors";
  ProcessResult r =
      app("steps", {{"CUDA_SIM_FAULT", "stencil:13"}, {"CUDA_BLOCKRUN_ERROR_FILE", file}}, true);
  EXPECT_EQ(r.status, 1);
  ProcessResult clean = app("steps", {{"CUDA_BLOCKRUN_ERROR_FILE", file}}, true);
  EXPECT_EQ(clean.status, 0);
  ProcessResult lines = run_process({"/bin/cat", file}, {});
  EXPECT_TRUE(std::regex_match(lines.out, std::regex("[0-9]+ cudaErrorIllegalAddress [a-zA-Z_]+\n")))
      << lines.out;
  unlink(file.c_str());
  rmdir(temporary);
}

TEST(Wrapper, HelpVersionAndHookList) {
  ProcessResult help = run_process({kWrapper, "--help"}, {});
  EXPECT_EQ(help.status, 0);
  EXPECT_TRUE(contains(help.out, "usage: cuda-blockrun [options] [--] program [args...]"));
  EXPECT_TRUE(contains(run_process({kWrapper, "--help-all"}, {}).out, "CUDA_BLOCKRUN_BLOCK"));
  ProcessResult version = run_process({kWrapper, "--version"}, {});
  EXPECT_TRUE(contains(version.out, "(built against CUDA 13.0; no CUDA driver found")) << version.out;
  ProcessResult with_driver = run_process({kWrapper, "--version"}, {{"LD_LIBRARY_PATH", kSimLib}});
  EXPECT_TRUE(contains(with_driver.out, "(built against CUDA 13.0; driver supports CUDA 13.0)"))
      << with_driver.out;
  ProcessResult hooks = run_process({kWrapper, "--list-hooks"}, {});
  EXPECT_TRUE(contains(hooks.out, "__cudaLaunchKernel_ptsz"));
  EXPECT_TRUE(contains(hooks.out, "cublasSgemm_v2_64"));
  EXPECT_TRUE(
      contains(hooks.out,
               "cuLaunchKernelEx_ptsz            Driver    Launch            PerThread   symbol, dlsym, "
               "cuGetProcAddress\n"))
      << hooks.out;
  EXPECT_TRUE(contains(
      hooks.out, "cudaLaunchKernelExC              Runtime   Launch            Legacy      symbol, dlsym\n"))
      << hooks.out;
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
