// `cuda-blockrun --localize` on the simulated stack: run 1 with nothing blocked, run 2 blocking the
// suspects when run 1 could not pin the error, one verdict, the first run's exit status; a second run that
// does not fault or fails differently is said so, and run 1's finding kept.
#include <gtest/gtest.h>

#include <cstdio>

#include "sim_programs.h"

namespace blockrun::testing {
namespace {

// The same steps with the runtime linked in: the caller of the driver is the runtime's own code, so a culprit
// found by breadcrumbs has no call site of the program's.
const std::string kStaticApp = CUDA_BLOCKRUN_STATIC_APP;

size_t count(const std::string& text, const std::string& piece) {
  size_t found = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++found;
  return found;
}

// `options`: e.g. --breadcrumbs=0, for the host's view alone.
ProcessResult localize(const std::vector<std::string>& command, Env env,
                       std::vector<std::string> options = {}) {
  env["TMPDIR"] = ::testing::TempDir();
  options.insert(options.begin(), "--localize");
  return run_wrapped(options, command, std::move(env));
}

ProcessResult plain(const std::string& scenario, Env env, const std::string& app = kApp) {
  std::vector<std::string> argv = {app};
  if (!scenario.empty()) argv.push_back(scenario);
  return run_alone(argv, std::move(env));
}

// A command whose first run has CUDA_SIM_FAULT=`first` and whose later runs have `later` (empty: none).
std::vector<std::string> changing_fault(const std::string& marker, const std::string& first,
                                        const std::string& later, const std::string& app = kApp) {
  std::remove(marker.c_str());
  std::string command = "'" + app + "'" + (app == kApp ? " steps" : "");
  std::string script = "if [ -e '" + marker + "' ]; then CUDA_SIM_FAULT='" + later + "' exec " + command +
                       "; else : > '" + marker + "'; CUDA_SIM_FAULT='" + first + "' exec " + command + "; fi";
  return {"/bin/sh", "-c", script};
}

// With breadcrumbs (the default): run 1 names the launch and keeps its caller, the program's own line: no
// second run.
TEST(Localize, BreadcrumbsNameTheLaunchAndItsCallerInOneRun) {
  Env fault = {{"CUDA_SIM_FAULT", "stencil:13"}, kSurfaceAtSync};  // first seen by the final cudaMemcpy
  ProcessResult alone = plain("steps", fault);
  ProcessResult r = localize({kApp, "steps"}, fault);
  EXPECT_EQ(r.status, alone.status);
  EXPECT_EQ(r.out, alone.out) << "the program ran once";
  EXPECT_TRUE(
      contains(r.err, "[cuda-blockrun] localize: run 1: nothing blocked, breadcrumbs on (reports in "))
      << r.err;
  const std::string source = CUDA_BLOCKRUN_SOURCE_DIR "/tests/programs/cuda_app.cpp";
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] localize: culprit: kernel stencil(float*, float const*, int, long "
                       "long)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #38 (stencil#13)\n"
                       "[cuda-blockrun]   error: cudaErrorIllegalAddress (an illegal memory access was "
                       "encountered), returned by cudaMemcpy\n"
                       "[cuda-blockrun]   launched at " +
                           source + ":" + std::to_string(marker_line(source, "LAUNCH_DEFAULT")) +
                           " in (anonymous namespace)::steps"))
      << r.err;
  EXPECT_TRUE(
      contains(r.err,
               "\n[cuda-blockrun]   found in run 1 by breadcrumbs, nothing blocked: the first launch on "
               "its stream that did not complete; its call site is the caller of the CUDA entry point. "
               "No second run needed.\n"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "run 2")) << r.err;
}

// The static runtime calls the driver from its own code: run 1 names the launch but has no call site of the
// program's, so run 2 blocks just that launch for its whole stack.
TEST(Localize, BreadcrumbsWithoutTheProgramsCallerRunAgainBlockingOnlyTheLaunch) {
  Env fault = {{"CUDA_SIM_FAULT", "stencil:13"}, kSurfaceAtSync};  // first seen by the final copy
  ProcessResult alone = plain("", fault, kStaticApp);
  ProcessResult r = localize({kStaticApp}, fault);
  EXPECT_EQ(r.status, alone.status);
  ASSERT_EQ(r.out.substr(0, alone.out.size()), alone.out);
  EXPECT_EQ(r.out.substr(alone.out.size(), 23), "launch 38 returned 700\n") << r.out;
  EXPECT_TRUE(
      contains(r.err,
               "[cuda-blockrun] localize: run 1: CUDA_ERROR_ILLEGAL_ADDRESS surfaced at cuMemcpyDtoH_v2, "
               "its launch found by breadcrumbs but not where it was launched; run 2: --block "
               "'stencil#13 block-alone'\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] localize: culprit: kernel stencil(float*, float const*, int, long "
                       "long)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #38 (stencil#13)\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "/tests/programs/static_app.cpp:")) << "run 2's call site: " << r.err;
  EXPECT_TRUE(contains(
      r.err, "  found in run 1 by breadcrumbs; run 2, which blocked 'stencil#13 block-alone', confirmed it"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "summary: 60 launches, 1 blocked;"))
      << "run 2 blocked one launch only: " << r.err;
}

// A fault in a graph replay: run 1's breadcrumbs name the replay (the graph launch) but not its node; run 2
// blocks the graph's replays with breadcrumbs inside the graph (the debug mode for graphs), and the verdict
// names the node and where it was captured.
TEST(Localize, AGraphReplaysFailedNodeIsFoundInASecondRunWithBreadcrumbsInsideTheGraph) {
  Env fault = {{"CUDA_SIM_FAULT", "stencil:2"}};  // the graph's second node, in its second replay
  ProcessResult alone = plain("capture", fault);
  ProcessResult r = localize({kApp, "capture", "3"}, fault);
  EXPECT_EQ(r.status, run_alone({kApp, "capture", "3"}, fault).status);
  EXPECT_TRUE(contains(
      r.err,
      "surfaced at cudaStreamSynchronize, in a graph replay found by breadcrumbs, its node not "
      "known; run 2: --block 'cuGraphLaunch block-alone' --graph-breadcrumbs (breadcrumbs inside graphs)\n"))
      << r.err;
  const std::string source = CUDA_BLOCKRUN_SOURCE_DIR "/tests/programs/cuda_app.cpp";
  std::string begin = source + ":" + std::to_string(marker_line(source, "CAPTURE_BEGIN"));
  std::string launch = source + ":" + std::to_string(marker_line(source, "CAPTURE_LAUNCH"));
  EXPECT_TRUE(
      contains(r.err, "[cuda-blockrun] localize: culprit: graph launch cuGraphLaunch, launch #5, stream 0x"))
      << r.err;
  // The function is named with its parameters where the build's debug information gives them (capture(int)).
  EXPECT_TRUE(contains(r.err, "\n[cuda-blockrun]   graph: replay 2 of the graph captured at " + begin +
                                  " in (anonymous namespace)::capture"))
      << r.err;
  EXPECT_TRUE(
      contains(r.err,
               "\n[cuda-blockrun]   node 2 of 3: kernel stencil(float*, float const*, int, long long), "
               "captured at " +
                   launch + " in (anonymous namespace)::capture"))
      << r.err;
  EXPECT_TRUE(contains(
      r.err, "found in run 1 by breadcrumbs; run 2, which blocked 'cuGraphLaunch block-alone', confirmed it"))
      << r.err;
}

// Without breadcrumbs run 1 has only the host's view: run 2 blocks the suspected kernels by name.
TEST(Localize, PinsAnUnpinnedErrorInASecondRun) {
  Env fault = {{"CUDA_SIM_FAULT", "stencil:13"}, kSurfaceAtSync};  // first seen by the final cudaMemcpy
  ProcessResult alone = plain("steps", fault);
  ProcessResult r = localize({kApp, "steps"}, fault, {"--breadcrumbs=0"});
  EXPECT_EQ(r.status, alone.status);
  EXPECT_NE(r.status, 0);
  // The program runs twice: as alone, then with the suspects blocked, where the culprit's launch itself
  // returns the error (as with CUDA_LAUNCH_BLOCKING=1).
  ASSERT_EQ(r.out.substr(0, alone.out.size()), alone.out);
  EXPECT_EQ(r.out.substr(alone.out.size(), 23), "launch 38 returned 700\n") << r.out;
  EXPECT_TRUE(
      contains(r.err, "[cuda-blockrun] localize: run 1: nothing blocked, breadcrumbs off (reports in "))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] localize: run 1: cudaErrorIllegalAddress surfaced at cudaMemcpy, "
                       "not pinned to a launch; run 2: --block '"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] localize: culprit: kernel stencil(float*, float const*, int, long "
                       "long)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #38 (stencil#13)\n"
                       "[cuda-blockrun]   error: cudaErrorIllegalAddress (an illegal memory access was "
                       "encountered), returned by cudaStreamSynchronize\n"
                       "[cuda-blockrun]   launched at "))
      << r.err;
  EXPECT_TRUE(contains(r.err, "found in run 2, which blocked '")) << r.err;
}

// With one breadcrumb write per 4 launches, run 1 leaves 4 candidates and run 2 blocks just those.
TEST(Localize, OneWritePerFourLaunchesIsPinnedInASecondRunBlockingTheFour) {
  Env fault = {{"CUDA_SIM_FAULT", "stencil:13"}, kSurfaceAtSync};
  ProcessResult alone = plain("steps", fault);
  ProcessResult r = localize({kApp, "steps"}, fault, {"--breadcrumb-every", "4"});
  EXPECT_EQ(r.status, alone.status);
  ASSERT_EQ(r.out.substr(0, alone.out.size()), alone.out);
  EXPECT_TRUE(contains(
      r.err,
      "run 2: --block 'fill#13 block-alone,stencil#13 block-alone,scale#13 block-alone,fill#14 block-alone'"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] localize: culprit: kernel stencil(float*, float const*, int, long "
                       "long)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #38 (stencil#13)\n"))
      << r.err;
  EXPECT_TRUE(
      contains(r.err, "summary: 60 launches, 2 blocked; first error cudaErrorIllegalAddress at launch #38"))
      << "run 2 blocked #37 and #38 only: " << r.err;
  EXPECT_TRUE(contains(r.err,
                       "found in run 2, which blocked 'fill#13 block-alone,stencil#13 block-alone,scale#13 "
                       "block-alone,fill#14 block-alone'"))
      << r.err;
}

TEST(Localize, NoErrorMeansOneRun) {
  ProcessResult alone = plain("steps", {});
  ProcessResult r = localize({kApp, "steps"}, {});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, alone.out);
  EXPECT_TRUE(contains(r.err, "localize: no CUDA error in run 1 (exit status 0): nothing to localize"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "run 2")) << r.err;
}

TEST(Localize, ARunWithoutAnActiveShimIsNotCalledClean) {
  ProcessResult r = localize({kApp, "steps"}, {{"CUDA_BLOCKRUN", "0"}, {"CUDA_SIM_FAULT", "stencil:13"}});
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(contains(r.err, "wrote no report: no process used CUDA with the shim active")) << r.err;
  EXPECT_FALSE(contains(r.err, "run 2")) << r.err;
}

TEST(Localize, AnErrorPinnedInTheFirstRunNeedsNoSecond) {
  ProcessResult alone = plain("config-error", {});
  ProcessResult r = localize({kApp, "config-error"}, {});
  EXPECT_EQ(r.status, alone.status);
  EXPECT_EQ(r.out, alone.out);
  EXPECT_TRUE(contains(r.err,
                       "localize: culprit: kernel fill(float*, int, float)<<<(4096,1,1), (2048,1,1), 0, "
                       "0x0>>>, launch #1 (fill#1)\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "found in run 1: the launch itself failed")) << r.err;
  EXPECT_FALSE(contains(r.err, "run 2")) << r.err;
}

TEST(Localize, ASecondRunWithoutTheFaultIsSaidAndTheFirstKept) {
  ProcessResult alone = plain("steps", {{"CUDA_SIM_FAULT", "stencil:13"}});
  ProcessResult r = localize(changing_fault(::testing::TempDir() + "localize_no_fault", "stencil:13", ""), {},
                             {"--breadcrumbs=0"});
  EXPECT_EQ(r.status, alone.status) << "the first run's status";
  EXPECT_TRUE(contains(r.err, "ran without a CUDA error (exit status 0): the fault did not recur")) << r.err;
  EXPECT_TRUE(contains(r.err, "keeping run 1's finding")) << r.err;
  EXPECT_TRUE(contains(r.err, "localize: the culprit is among the launches not known to have completed"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "localize: culprit:")) << r.err;
}

TEST(Localize, WithBreadcrumbsRunOnesCulpritIsKeptWhenRunTwoDoesNotFault) {
  ProcessResult r = localize(
      changing_fault(::testing::TempDir() + "localize_no_fault_crumbs", "stencil:13", "", kStaticApp), {});
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(contains(r.err, "run 2 (--block 'stencil#13 block-alone') ran without a CUDA error")) << r.err;
  EXPECT_TRUE(
      contains(r.err,
               "localize: culprit: kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), "
               "(256,1,1), 0, 0x0>>>, launch #38 (stencil#13)\n"))
      << r.err;
  EXPECT_TRUE(
      contains(r.err, "found in run 1 by breadcrumbs (its call site is the caller of the CUDA entry point"))
      << r.err;
}

TEST(Localize, ASecondRunFailingDifferentlyIsSaidAndTheFirstKept) {
  ProcessResult r =
      localize(changing_fault(::testing::TempDir() + "localize_diverged", "stencil:13", "stencil:13:assert"),
               {}, {"--breadcrumbs=0"});
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(contains(r.err, "localize: run 2 diverged")) << r.err;
  EXPECT_TRUE(contains(r.err, "error: cudaErrorAssert")) << r.err;
  EXPECT_TRUE(contains(r.err, "localize: the culprit is among the launches not known to have completed"))
      << r.err;
  EXPECT_EQ(count(r.err, "localize: culprit:"), 0u) << r.err;
}

// One bad memory access coded another way in run 2: the H200 gave tests/gpu/callsite_oob.cu's scatter 717 in
// run 1 and 700 in a run 2 that blocked the launches before it (--breadcrumb-every 8). The launch run 2
// pinned is the verdict, and the verdict says what run 1 saw.
TEST(Localize, ABadAccessCodedAnotherWayInRunTwoIsPinnedAndSaidSo) {
  ProcessResult r = localize(changing_fault(::testing::TempDir() + "localize_recoded",
                                            "stencil:13:invalid-address-space", "stencil:13"),
                             {kSurfaceAtSync}, {"--breadcrumb-every", "4"});
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(
      contains(r.err, "localize: run 1: cudaErrorInvalidAddressSpace surfaced at cudaMemcpy, not pinned"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] localize: culprit: kernel stencil(float*, float const*, int, long "
                       "long)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #38 (stencil#13)\n"
                       "[cuda-blockrun]   error: cudaErrorIllegalAddress (an illegal memory access was "
                       "encountered), returned by cudaStreamSynchronize\n"))
      << r.err;
  EXPECT_TRUE(
      contains(r.err,
               "[cuda-blockrun]   found in run 2, which blocked 'fill#13 block-alone,stencil#13 "
               "block-alone,scale#13 block-alone,fill#14 block-alone'; "
               "run 1 failed unpinned\n[cuda-blockrun]   run 1 saw it as cudaErrorInvalidAddressSpace: a "
               "bad memory access both times, and the GPU does not always give one the same code\n"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "diverged")) << r.err;
  EXPECT_EQ(count(r.err, "localize: culprit:"), 1u) << r.err;
}

// ---- Concurrent programs (issue 38): suspects named so that run 2 finds them again, and launches alone ----

// The sim's fault in the third worker thread's 31st launch, whatever the order the threads take (each run of
// the program interleaves them differently: CONCURRENT_SEED_FILE counts the runs); the device stops at the
// fault, so every thread's stream has work in flight and run 1 has one candidate per thread.
Env worker_fault(const std::string& seed_file) {
  std::remove(seed_file.c_str());
  return {{"CUDA_SIM_FAULT", "accumulate:31"},
          {"CUDA_SIM_FAULT_THREAD", "worker2"},
          {"CUDA_SIM_FAULT_STOPS_DEVICE", "1"},
          {"CONCURRENT_SEED_FILE", seed_file},
          kSurfaceAtSync};
}

// Run 2 blocks each candidate by its number among its own thread's launches (accumulate thread#31), which
// names the same launch in a run whose threads interleave otherwise: by process-wide numbers
// (accumulate#155) it blocked other launches, and the fault came elsewhere.
TEST(Localize, ThreadsThatInterleaveOtherwiseInRunTwoArePinnedByTheirThreadsLaunchNumbers) {
  ProcessResult r =
      localize({kConcurrentApp, "threads", "4", "64"}, worker_fault(::testing::TempDir() + "localize_seed"));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "concurrent_app: seed 0\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "concurrent_app: seed 1\n")) << "run 2 interleaves otherwise: " << r.err;
  EXPECT_TRUE(contains(r.err, "not pinned to a launch; run 2: --block 'accumulate thread#")) << r.err;
  EXPECT_TRUE(contains(r.err, "accumulate thread#31 block-alone")) << r.err;
  // The third worker's launches have a grid of its own (12288 blocks): the culprit is its launch, exactly.
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] localize: culprit: kernel accumulate(float*, int)<<<(12288,1,1), "
                       "(256,1,1), 0, per-thread default (thread "))
      << r.err;
  EXPECT_TRUE(contains(r.err, "launched at " + kConcurrentAppSource + ":" +
                                  std::to_string(marker_line(kConcurrentAppSource, "FAULT-LINE accumulate"))))
      << r.err;
  EXPECT_TRUE(contains(r.err, "  found in run 2, which blocked 'accumulate thread#")) << r.err;
  EXPECT_EQ(count(r.err, "localize: culprit:"), 1u) << r.err;
  EXPECT_FALSE(contains(r.err, "run 3")) << r.err;
}

// Two streams joined by an event, a host function on the consumer; the producer's 5th launch faults and the
// error surfaces at the consumer's synchronize, while the consumer's launches lag. Blocked on its own, the
// producer's launch fails at its synchronize with the consumer's launches not known complete: not exact.
// Blocked alone (a wait on the whole device before it, other launches held until its synchronize returns),
// the same launch is exact, and --localize's run 2 pins it so.
TEST(Localize, ALaunchBlockedAloneIsExactWhateverTheOtherStreamsQueued) {
  Env fault = {{"CUDA_SIM_FAULT", "produce:5"},
               {"CUDA_SIM_FAULT_STOPS_DEVICE", "1"},
               {"CUDA_SIM_KERNEL_LAG", "consume=1"},
               kSurfaceAtSync};
  std::vector<std::string> command = {kConcurrentApp, "streams", "8"};
  ProcessResult blocked = run_wrapped({"--block", "produce#5"}, command, fault);
  EXPECT_TRUE(contains(blocked.err, "launch #9 (produce#5), blocked\n")) << blocked.err;
  EXPECT_TRUE(contains(blocked.err, "  not exact: these launches had not completed")) << blocked.err;
  ProcessResult alone = run_wrapped({"--block", "produce#5 block-alone"}, command, fault);
  EXPECT_TRUE(contains(alone.err, "launch #9 (produce#5), blocked\n")) << alone.err;
  EXPECT_FALSE(contains(alone.err, "not exact")) << alone.err;
  // The launch returns the error its synchronize found either way. (The wait before it lets the consumer's
  // lagging work finish first, its host function included, as any wait on the device would.)
  EXPECT_EQ(alone.status, blocked.status);
  EXPECT_TRUE(contains(alone.out, "produce launch returned 700\n")) << alone.out;
  EXPECT_TRUE(contains(blocked.out, "produce launch returned 700\n")) << blocked.out;

  ProcessResult r = localize(command, fault);
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] localize: culprit: kernel produce(float*, int)<<<(256,1,1), "
                       "(128,1,1), 0, 0x"))
      << r.err;
  EXPECT_TRUE(contains(r.err, ">>>, launch #9 (produce#5)\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "launched at " + kConcurrentAppSource + ":" +
                                  std::to_string(marker_line(kConcurrentAppSource, "FAULT-LINE produce"))))
      << r.err;
  EXPECT_FALSE(contains(r.err, "not at a blocked launch")) << r.err;
  EXPECT_EQ(count(r.err, "localize: culprit:"), 1u) << r.err;
}

// The run a user makes first, with no mode flag: the faulting kernel ran first and 300 launches of another
// came after it before the error surfaced. Breadcrumbs name it exactly; the bare shim cannot, says how many
// could have faulted, offers no rule it cannot show covers them, and its hint, run as printed, pins it.
TEST(Localize, TheFirstTryNamesALateCulpritOrPrintsAHintThatPinsIt) {
  Env fault = {
      {"CUDA_SIM_FAULT", "lookup:1"}, kSurfaceAtSync, {"PATH", CUDA_BLOCKRUN_BIN_DIR ":/usr/bin:/bin"}};
  ProcessResult first_try = run_wrapped({}, {kConcurrentApp, "many", "300"}, fault);
  EXPECT_TRUE(contains(first_try.err,
                       "[cuda-blockrun]   in kernel lookup(float*, int const*, int)<<<(256,1,1), "
                       "(128,1,1), 0, 0x0>>>, launch #1 (lookup#1)\n"))
      << first_try.err;
  EXPECT_FALSE(contains(first_try.err, "suspects")) << first_try.err;

  ProcessResult bare = run_wrapped({"--breadcrumbs=0"}, {kConcurrentApp, "many", "300"}, fault);
  EXPECT_TRUE(contains(bare.err,
                       "  more than 8 launches since the last completed synchronize could have faulted "
                       "(the older ones were not kept); the newest 8 are shown\n"))
      << bare.err;
  EXPECT_FALSE(contains(bare.err, "--block 'scale'")) << "a rule that cannot pin it: " << bare.err;
  std::string hint = "[cuda-blockrun]   to pin it: ";
  size_t at = bare.err.find(hint);
  ASSERT_NE(at, std::string::npos) << bare.err;
  std::string command = bare.err.substr(at + hint.size(), bare.err.find('\n', at) - at - hint.size());
  EXPECT_EQ(command, "cuda-blockrun --localize -- " + kConcurrentApp + " many 300");
  fault["TMPDIR"] = ::testing::TempDir();
  fault["LD_LIBRARY_PATH"] = kSimLib;
  ProcessResult followed = run_process({"/bin/sh", "-c", command}, fault);
  EXPECT_TRUE(contains(followed.err,
                       "[cuda-blockrun] localize: culprit: kernel lookup(float*, int const*, "
                       "int)<<<(256,1,1), (128,1,1), 0, 0x0>>>, launch #1 (lookup#1)\n"))
      << followed.err;
  EXPECT_TRUE(
      contains(followed.err, "launched at " + kConcurrentAppSource + ":" +
                                 std::to_string(marker_line(kConcurrentAppSource, "FAULT-LINE lookup"))))
      << followed.err;
}

// Where run 2 cannot pin it (here: the fault moved to a launch run 1 did not suspect of its own, fill#15),
// run 3 blocks every launch alone; --max-runs 2 stops before it and says so.
TEST(Localize, ARunTwoThatCannotPinIsSettledByARunThreeUnlessCapped) {
  std::string marker = ::testing::TempDir() + "localize_third";
  ProcessResult r = localize(changing_fault(marker, "stencil:13", "fill:15"), {kSurfaceAtSync},
                             {"--breadcrumb-every", "4"});
  EXPECT_TRUE(contains(r.err,
                       "failed with cudaErrorIllegalAddress but not at a blocked launch: it surfaced at "
                       "cudaMemcpy\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] localize: run 3: --block 'all block-alone' (every launch waits "
                       "for all before it and runs alone: slow, and it settles it)\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "[cuda-blockrun] localize: run 3 ended (exit status ")) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] localize: culprit: kernel fill(float*, int, float)<<<(4096,1,1), "
                       "(256,1,1), 0, 0x0>>>, launch #43 (fill#15)\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "  found in run 3, which blocked 'all block-alone'")) << r.err;

  ProcessResult capped = localize(changing_fault(marker + "_capped", "stencil:13", "fill:15"),
                                  {kSurfaceAtSync}, {"--breadcrumb-every", "4", "--max-runs", "2"});
  EXPECT_TRUE(contains(capped.err, "localize: --max-runs 2: no third run")) << capped.err;
  EXPECT_FALSE(contains(capped.err, "localize: run 3")) << capped.err;
  EXPECT_EQ(run_wrapped({"--max-runs", "2"}, {kApp, "steps"}, {}).status, 2) << "only with --localize";
  EXPECT_EQ(run_wrapped({"--localize", "--max-runs", "4"}, {kApp, "steps"}, {}).status, 2);
}

TEST(Localize, RefusesAPolicyOrReportOfItsOwn) {
  for (const char* option : {"--block=all", "--report=x.jsonl"}) {
    ProcessResult r =
        run_process({kWrapper, "--localize", option, "--", kApp, "steps"}, {{"LD_LIBRARY_PATH", kSimLib}});
    EXPECT_EQ(r.status, 2) << option;
    EXPECT_TRUE(contains(r.err, "--localize chooses what to block and writes its own reports")) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
