// Device-side breadcrumbs (--breadcrumbs) on the simulated stack, whose stream writes run in stream order and
// never behind a fault: the culprit named exactly without blocking, the candidates when several streams have
// work in flight, the host's view where the device cannot write them, never a write into a capture, and the
// program's behaviour unchanged.
#include <gtest/gtest.h>

#include "sim_programs.h"

namespace blockrun::testing {
namespace {

const std::string kThreadsApp = CUDA_BLOCKRUN_THREADS_APP;

ProcessResult run(const std::vector<std::string>& options, const std::vector<std::string>& command, Env env) {
  return run_wrapped(options, command, std::move(env));
}

ProcessResult plain(const std::string& scenario, Env env) {
  return run_alone({kApp, scenario}, std::move(env));
}

TEST(Breadcrumbs, NameTheCulpritLongAfterItFaultedWithoutBlocking) {
  std::string report = ::testing::TempDir() + "breadcrumbs_exact.jsonl";
  std::string stats = ::testing::TempDir() + "breadcrumbs_exact_stats";
  // Still in flight behind 22 more launches when the final cudaMemcpy waits.
  Env fault = {{"CUDA_SIM_FAULT", "stencil:13"}, {"CUDA_SIM_STATS", stats}, kSurfaceAtSync};
  ProcessResult alone = plain("steps", fault);
  std::string alone_stats = read_file(stats);
  std::remove(report.c_str());
  ProcessResult r = run({"--breadcrumbs", "--report", report}, {kApp, "steps"}, fault);
  EXPECT_EQ(r.status, alone.status);
  EXPECT_EQ(r.out, alone.out);
  EXPECT_TRUE(contains(
      r.err,
      "[cuda-blockrun] first error: cudaErrorIllegalAddress (an illegal memory access was "
      "encountered), returned by cudaMemcpy\n"
      "[cuda-blockrun]   in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), (256,1,1), 0, "
      "0x0>>>, launch #38 (stencil#13)\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "found by breadcrumbs: the first launch on its stream that did not complete; for its "
                       "full call site: cuda-blockrun --localize -- " CUDA_BLOCKRUN_APP " steps (or run "
                       "again with --block 'stencil#13')"))
      << r.err;
  EXPECT_TRUE(
      contains(r.err, "summary: 60 launches, 0 blocked; first error cudaErrorIllegalAddress at launch #38"))
      << r.err;
  std::string text = read_file(report);
  EXPECT_TRUE(contains(text, "\"certainty\":\"exact\",\"method\":\"breadcrumbs\"")) << text;
  EXPECT_TRUE(contains(text, "\"pin_rule\":\"stencil#13\"")) << text;
  // A C++ program: the launch wrapper said so, and the engine kept no Python line.
  EXPECT_TRUE(contains(text, "\"python_status\":\"no python\"")) << text;
  // Nothing was synchronized that the program did not synchronize itself.
  std::string counts = read_file(stats);
  EXPECT_EQ(counts.substr(counts.find("synchronizes="), 16),
            alone_stats.substr(alone_stats.find("synchronizes="), 16));
}

// nvcc's default static runtime (CUDA 13) synchronizes the device with cuCtxSynchronize_v2, fetched through
// cuGetProcAddress: the error it returns is the one the breadcrumbs explain.
TEST(Breadcrumbs, AStaticRuntimeProgramsDeviceSynchronizeSurfacesTheError) {
  Env fault = {{"CUDA_SIM_FAULT", "stencil:13"}, kSurfaceAtSync};  // first seen by that synchronize
  ProcessResult alone = run_alone({CUDA_BLOCKRUN_STATIC_APP, "sync"}, fault);
  ProcessResult r = run({"--breadcrumbs"}, {CUDA_BLOCKRUN_STATIC_APP, "sync"}, fault);
  EXPECT_EQ(r.status, alone.status);
  EXPECT_EQ(r.out, alone.out);
  EXPECT_TRUE(contains(r.out, "cudaDeviceSynchronize returned 700\n")) << r.out;
  EXPECT_TRUE(contains(
      r.err,
      "[cuda-blockrun] first error: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered), "
      "returned by cuCtxSynchronize_v2\n"
      "[cuda-blockrun]   in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), (256,1,1), 0, "
      "0x0>>>, launch #38 (stencil#13)\n"))
      << r.err;
}

// An event query is often the first call to see a fault (PyTorch's NCCL watchdog, which then aborts).
TEST(Breadcrumbs, AnEventQueryThatSeesTheFaultIsTheFirstError) {
  Env fault = {{"CUDA_SIM_FAULT", "stencil:1"}, kSurfaceAtSync};  // still running at the launch after it
  ProcessResult alone = plain("event-query", fault);
  ProcessResult r = run({"--breadcrumbs"}, {kApp, "event-query"}, fault);
  EXPECT_EQ(r.status, alone.status);
  EXPECT_EQ(r.out, alone.out);
  EXPECT_TRUE(contains(r.out, "cudaEventQuery returned 700\n")) << r.out;
  EXPECT_TRUE(
      contains(r.err,
               "[cuda-blockrun] first error: cudaErrorIllegalAddress (an illegal memory access was "
               "encountered), returned by cudaEventQuery\n"
               "[cuda-blockrun]   in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), "
               "(256,1,1), 0, 0x"))
      << r.err;
  EXPECT_TRUE(contains(r.err, ">>>, launch #2 (stencil#1)\n")) << r.err;
}

TEST(Breadcrumbs, OneStreamFaultingAmongOthersIsNamedExactly) {
  ProcessResult r = run({"--breadcrumbs"}, {kApp, "streams"}, {{"CUDA_SIM_FAULT", "stencil:2"}});
  EXPECT_TRUE(
      contains(r.err, "in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), (256,1,1), 0, "))
      << r.err;
  EXPECT_TRUE(contains(r.err, ">>>, launch #7 (stencil#2)\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "run again with --block 'stencil#2'")) << r.err;
}

TEST(Breadcrumbs, SeveralStreamsInFlightGiveTheirFirstUnfinishedLaunches) {
  // The fault at launch #3 (stream 2) stops the device: #4 (stream 3), #5 and #6 (streams 0, 1) never finish.
  ProcessResult r =
      run({"--breadcrumbs"}, {kApp, "streams"},
          {{"CUDA_SIM_FAULT", "stencil:1"}, {"CUDA_SIM_FAULT_STOPS_DEVICE", "1"}, kSurfaceAtSync});
  EXPECT_TRUE(contains(
      r.err, "culprit among the first unfinished launch of each stream (breadcrumbs), oldest first:"))
      << r.err;
  size_t third = r.err.find("launch #3 (stencil#1)"), fourth = r.err.find("launch #4 (fill#3)"),
         fifth = r.err.find("launch #5 (fill#4)"), sixth = r.err.find("launch #6 (fill#5)");
  ASSERT_NE(sixth, std::string::npos) << r.err;
  EXPECT_LT(third, fourth);
  EXPECT_LT(fourth, fifth);
  EXPECT_LT(fifth, sixth);
  EXPECT_EQ(r.err.find("launch #7 ("), std::string::npos)
      << "only the first unfinished launch of each stream";
  EXPECT_TRUE(contains(r.err, "run again with --block 'stencil#1,fill#3,fill#4,fill#5'")) << r.err;
}

// --breadcrumb-every 4: a write after every 4th launch of the stream (#4, #8, ..., #36, #40): the fault at
// #38 leaves #37-#40 as the candidates, none exact, and the rule that blocks just them.
TEST(Breadcrumbs, OneWritePerFourLaunchesPinsTheFaultToFourOfThem) {
  std::string report = ::testing::TempDir() + "breadcrumbs_every_4.jsonl";
  std::string stats = ::testing::TempDir() + "breadcrumbs_every_4_stats";
  std::remove(report.c_str());
  Env fault = {{"CUDA_SIM_FAULT", "stencil:13"}, {"CUDA_SIM_STATS", stats}, kSurfaceAtSync};
  ProcessResult alone = plain("steps", fault);
  ProcessResult r =
      run({"--breadcrumbs", "--breadcrumb-every", "4", "--report", report}, {kApp, "steps"}, fault);
  EXPECT_EQ(r.status, alone.status);
  EXPECT_EQ(r.out, alone.out);
  EXPECT_FALSE(contains(r.err, "[cuda-blockrun]   in kernel ")) << "named exactly: " << r.err;
  EXPECT_TRUE(contains(r.err, "culprit among the launches the breadcrumbs do not show complete")) << r.err;
  EXPECT_TRUE(contains(r.err, "run again with --block 'fill#13,stencil#13,scale#13,fill#14'")) << r.err;
  EXPECT_FALSE(contains(r.err, "launch #36 (")) << r.err;
  EXPECT_FALSE(contains(r.err, "launch #41 (")) << r.err;
  std::string text = read_file(report);
  EXPECT_TRUE(contains(text, "\"certainty\":\"suspects\",\"method\":\"breadcrumbs\"")) << text;
  EXPECT_FALSE(contains(text, "\"certainty\":\"exact\"")) << text;
  // 60 launches, 15 writes.
  EXPECT_TRUE(contains(read_file(stats), "stream_writes=15")) << read_file(stats);
}

TEST(Breadcrumbs, ADeviceWithoutStreamWritesFallsBackToTheHostsView) {
  ProcessResult r = run({"--breadcrumbs"}, {kApp, "steps"},
                        {{"CUDA_SIM_FAULT", "stencil:13"}, {"CUDA_SIM_NO_STREAM_MEM_OPS", "1"}});
  EXPECT_TRUE(contains(r.err,
                       "[cuda-blockrun] shim problem: breadcrumbs unavailable: the device does not support "
                       "64-bit stream memory operations"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "culprit unknown (no blocked launch failed); suspects:")) << r.err;
}

// The program's first launch goes into a global-mode capture, so the breadcrumbs' pinned memory is allocated
// then (an unsafe call, made in relaxed mode). The capture is never invalidated; breadcrumbs go into it only
// as graph breadcrumbs: 3 nodes, and around the one replay a reset and the launch's own breadcrumb.
TEST(Breadcrumbs, NeverInvalidateACaptureAndWriteIntoItOnlyAsGraphBreadcrumbs) {
  std::string stats = ::testing::TempDir() + "breadcrumbs_capture_stats";
  ProcessResult alone = plain("capture", {});
  for (const char* graph : {"1", "0"}) {
    for (const char* block : {"none", "all"}) {
      ProcessResult r = run({"--breadcrumbs", std::string("--graph-breadcrumbs=") + graph, "--block", block},
                            {kApp, "capture"}, {{"CUDA_SIM_STATS", stats}});
      EXPECT_EQ(r.status, alone.status) << block;
      EXPECT_EQ(r.out, alone.out) << block;
      std::string counts = read_file(stats);
      EXPECT_TRUE(contains(counts, "captures_invalidated=0\n")) << counts;
      EXPECT_TRUE(contains(counts, "synchronizes_during_capture=0\n")) << counts;
      EXPECT_TRUE(contains(counts, std::string(graph) == "0" ? "stream_writes=1\n" : "stream_writes=5\n"))
          << graph << " " << block << "\n"
          << counts;
    }
  }
}

// Launches into a capture become graph nodes and do not run: a fault in the graph's replay is the graph
// launch's, never a captured kernel's (a captured launch is no unfinished launch of its stream), with
// breadcrumbs and without.
TEST(Breadcrumbs, AFaultInAGraphReplayIsTheGraphLaunchsNotACapturedKernels) {
  Env fault = {{"CUDA_SIM_FAULT", "stencil:1"}};  // the graph's second node, in its first replay
  ProcessResult crumbs = run({"--breadcrumbs"}, {kApp, "capture"}, fault);
  EXPECT_TRUE(contains(crumbs.err,
                       "first error: cudaErrorIllegalAddress (an illegal memory access was "
                       "encountered), returned by cudaStreamSynchronize\n"
                       "[cuda-blockrun]   in graph 0x"))
      << crumbs.err;
  EXPECT_TRUE(contains(crumbs.err, " (3 nodes), launch #4, stream 0x")) << crumbs.err;
  EXPECT_TRUE(contains(crumbs.err, "run again with --block 'cuGraphLaunch'")) << crumbs.err;
  EXPECT_FALSE(contains(crumbs.err, "in kernel")) << crumbs.err;

  ProcessResult host = run({"--breadcrumbs=0"}, {kApp, "capture"}, fault);
  EXPECT_TRUE(contains(host.err,
                       "suspects: launches not known to have completed, newest last:\n"
                       "[cuda-blockrun]     graph 0x"))
      << host.err;
  EXPECT_FALSE(contains(host.err, "    kernel ")) << "captured kernels are no suspects: " << host.err;
  EXPECT_TRUE(contains(host.err, "or run again with --block 'cuGraphLaunch'")) << host.err;
}

// The graph of a faulting replay is told with where it was captured, which replay it was, the launches the
// capture took, each with its own capture line, and which of them failed: the breadcrumb nodes captured into
// the graph say how far the replay got.
TEST(Breadcrumbs, AFaultingReplayIsToldWithWhereItsGraphWasCaptured) {
  const std::string source = CUDA_BLOCKRUN_SOURCE_DIR "/tests/programs/cuda_app.cpp";
  const std::string begin = source + ":" + std::to_string(marker_line(source, "CAPTURE_BEGIN"));
  const std::string launch = source + ":" + std::to_string(marker_line(source, "CAPTURE_LAUNCH"));
  std::string report = ::testing::TempDir() + "graph_capture.jsonl";
  std::remove(report.c_str());
  // Stencil's second run is in the second replay (captured launches do not run).
  ProcessResult r = run({"--breadcrumbs", "--graph-breadcrumbs", "--report", report}, {kApp, "capture", "3"},
                        {{"CUDA_SIM_FAULT", "stencil:2"}});
  EXPECT_TRUE(contains(r.out, "cudaStreamSynchronize returned 700\n")) << r.out;
  // The program's 3 nodes (the graph has 3 more: the breadcrumbs).
  EXPECT_TRUE(contains(r.err, " (3 nodes), launch #5, stream 0x")) << r.err;
  EXPECT_TRUE(contains(
      r.err, "\n[cuda-blockrun]   replay 2 of the graph captured at " + begin +
                 ", node 2 of 3: kernel stencil(float*, float const*, int, long long), captured at " +
                 launch +
                 "\n"
                 "[cuda-blockrun]   (found by the breadcrumbs in the graph: the first node that did not "
                 "complete); its 3 captured launches, in capture order:\n"
                 "[cuda-blockrun]     1. kernel fill(float*, int, float), captured at " +
                 launch +
                 "\n"
                 "[cuda-blockrun]     2. kernel stencil(float*, float const*, int, long long), "
                 "captured at " +
                 launch +
                 "  <- failed\n"
                 "[cuda-blockrun]     3. kernel scale(float*, int, float), captured at " +
                 launch + "\n"))
      << r.err;
  std::string text = read_file(report);
  EXPECT_TRUE(contains(text, "\"replay\":2,\"capture\":{\"how\":\"captured\",\"id\":")) << text;
  EXPECT_TRUE(
      contains(text,
               "\"launches\":3,\"captured\":[{\"position\":1,\"seq\":1,\"kernel\":\"fill(float*, int, "
               "float)\",\"kernel_base\":\"fill\",\"library_api\":null,\"callsite\":{"))
      << text;
  EXPECT_TRUE(contains(text, "\"line\":" + std::to_string(marker_line(source, "CAPTURE_LAUNCH")) + "}"))
      << text;
  EXPECT_TRUE(contains(text,
                       "\"failed_node\":{\"method\":\"breadcrumbs\",\"certainty\":\"exact\","
                       "\"positions\":[2]}"))
      << text;

  // Without graph breadcrumbs the graph is left as the program made it, and the node is among those listed.
  ProcessResult off = run({"--breadcrumbs"}, {kApp, "capture", "3"}, {{"CUDA_SIM_FAULT", "stencil:2"}});
  EXPECT_TRUE(contains(off.err, "\n[cuda-blockrun]   replay 2 of the graph captured at " + begin +
                                    "\n[cuda-blockrun]   its 3 captured launches, in capture order (the node "
                                    "that failed is among them):\n"))
      << off.err;
}

// The debug mode for graphs: graph breadcrumbs without stream breadcrumbs, and every graph launch blocked.
// The replay that faults is known from blocking, and its node from the breadcrumbs in the graph; nothing
// else is changed (no breadcrumb after the program's other launches).
TEST(Breadcrumbs, GraphDebugModeNamesTheFailedNodeOfABlockedReplay) {
  std::string stats = ::testing::TempDir() + "graph_debug_stats";
  ProcessResult r = run({"--graph-breadcrumbs", "--block", "cuGraphLaunch"}, {kApp, "capture", "3"},
                        {{"CUDA_SIM_FAULT", "scale:3"}, {"CUDA_SIM_STATS", stats}});
  EXPECT_TRUE(contains(r.err, "blocking synchronize after the launch)\n[cuda-blockrun]   in graph 0x"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "replay 3 of the graph captured at ")) << r.err;
  EXPECT_TRUE(contains(r.err, ", node 3 of 3: kernel scale(float*, int, float), captured at ")) << r.err;
  std::string counts = read_file(stats);
  // 3 breadcrumb nodes captured, and one reset before each of the 3 replays: nothing else.
  EXPECT_TRUE(contains(counts, "stream_writes=6\n")) << counts;

  // Launches before the replay that were not blocked would be suspects of its error; but a replay whose
  // breadcrumbs show it began ran after them (its reset is queued behind them), so the culprit is exact.
  Env fault = {{"CUDA_SIM_FAULT", "stencil:1"}};
  ProcessResult earlier =
      run({"--graph-breadcrumbs", "--block", "cuGraphLaunch"}, {kApp, "blocked-then-capture"}, fault);
  EXPECT_TRUE(contains(earlier.err,
                       ", node 1 of 2: kernel stencil(float*, float const*, int, long long), "
                       "captured at "))
      << earlier.err;
  EXPECT_FALSE(contains(earlier.err, "not exact")) << earlier.err;
  ProcessResult without = run({"--block", "cuGraphLaunch"}, {kApp, "blocked-then-capture"}, fault);
  EXPECT_TRUE(
      contains(without.err, "not exact: these launches had not completed and may have faulted instead"))
      << without.err;
}

// A graph built node by node (cuGraphAddKernelNode, reached through dlsym as CuPy and Triton reach the
// driver): its kernel nodes are told in the order added, each with where it was added.
TEST(Breadcrumbs, AGraphBuiltNodeByNodeIsToldWithWhereEachNodeWasAdded) {
  const std::string source = CUDA_BLOCKRUN_SOURCE_DIR "/tests/programs/driver_app.cpp";
  std::string report = ::testing::TempDir() + "graph_nodes.jsonl";
  std::remove(report.c_str());
  ProcessResult r = run({"--breadcrumbs=0", "--report", report}, {CUDA_BLOCKRUN_DRIVER_APP, "graph"},
                        {{"CUDA_SIM_FAULT", "oob_kernel:2"}});
  EXPECT_TRUE(contains(r.out, "cuStreamSynchronize returned 700\n")) << r.out;
  EXPECT_TRUE(contains(r.err,
                       "\n[cuda-blockrun]       replay 2 of a graph built node by node\n"
                       "[cuda-blockrun]       its 3 kernel nodes, in the order added (if this replay failed, "
                       "the node that failed is among them):\n"
                       "[cuda-blockrun]         1. kernel add_array(float*, float*, int), added at " +
                           source + ":" + std::to_string(marker_line(source, "ADD_FIRST_NODE")) +
                           "\n"
                           "[cuda-blockrun]         2. kernel oob_kernel, added at " +
                           source + ":" + std::to_string(marker_line(source, "ADD_SECOND_NODE")) + "\n"))
      << r.err;
  std::string text = read_file(report);
  EXPECT_TRUE(contains(text, "\"replay\":2,\"capture\":{\"how\":\"built node by node\",\"id\":0,")) << text;
}

// A graph captured on two streams (a fork through an event, and a join back): each stream is a branch with a
// breadcrumb slot of its own. The sim replays the nodes in capture order (fill, stencil, scale, fill), so
// when stencil (branch B) faults, branch A has finished fill and nothing more: the first unfinished node of
// each branch, stencil and scale, are the candidates. A fault in the last fill (after both branches joined)
// is exact. The program sees nothing of it.
TEST(Breadcrumbs, AFaultInAParallelBranchGivesTheFirstUnfinishedNodeOfEachBranch) {
  const std::string source = CUDA_BLOCKRUN_SOURCE_DIR "/tests/programs/cuda_app.cpp";
  auto at = [&](const char* marker) { return source + ":" + std::to_string(marker_line(source, marker)); };
  const std::string fill = "kernel fill(float*, int, float), captured at ";
  const std::string stencil = "kernel stencil(float*, float const*, int, long long), captured at ";
  const std::string scale = "kernel scale(float*, int, float), captured at ";
  std::string report = ::testing::TempDir() + "graph_branches.jsonl";
  std::string stats = ::testing::TempDir() + "graph_branches_stats";

  // Stencil's first run is the graph's second node in the first replay.
  Env fault = {{"CUDA_SIM_FAULT", "stencil:1"}, {"CUDA_SIM_STATS", stats}};
  ProcessResult alone = run_alone({kApp, "capture_branches"}, fault);
  EXPECT_TRUE(contains(alone.out, "graph captured\ncudaStreamSynchronize returned 700\ndone\n")) << alone.out;
  std::remove(report.c_str());
  ProcessResult r =
      run({"--breadcrumbs", "--graph-breadcrumbs", "--report", report}, {kApp, "capture_branches"}, fault);
  EXPECT_EQ(r.status, alone.status);
  EXPECT_EQ(r.out, alone.out);
  std::string counts = read_file(stats);
  EXPECT_TRUE(contains(counts, "captures_invalidated=0\n")) << counts;
  EXPECT_TRUE(contains(counts, "synchronizes_during_capture=0\n")) << counts;
  EXPECT_TRUE(contains(r.err, " (4 nodes), launch #5, stream 0x")) << r.err;
  EXPECT_TRUE(contains(
      r.err, "\n[cuda-blockrun]   replay 1 of the graph captured at " + at("BRANCHES_BEGIN") +
                 "\n[cuda-blockrun]   its 4 captured launches, in capture order (the node that failed "
                 "is one of the 2 marked: parallel branches, each stopped there, breadcrumbs):\n"
                 "[cuda-blockrun]     1. " +
                 fill + at("BRANCHES_FIRST_FILL") +
                 "\n"
                 "[cuda-blockrun]     2. " +
                 stencil + at("BRANCHES_STENCIL") +
                 "  <- candidate\n"
                 "[cuda-blockrun]     3. " +
                 scale + at("BRANCHES_SCALE") +
                 "  <- candidate\n"
                 "[cuda-blockrun]     4. " +
                 fill + at("BRANCHES_LAST_FILL") + "\n"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "<- failed")) << r.err;
  std::string text = read_file(report);
  EXPECT_TRUE(contains(text, "\"replay\":1,\"capture\":{\"how\":\"captured\",\"id\":")) << text;
  EXPECT_TRUE(contains(text, "\"launches\":4,\"captured\":[")) << text;
  EXPECT_TRUE(contains(text,
                       "\"failed_node\":{\"method\":\"breadcrumbs\",\"certainty\":\"candidates\","
                       "\"positions\":[2,3]}"))
      << text;

  // Fill runs twice per replay: its second run is the graph's last node in the first replay. Both branches
  // completed (their slots say 3 and 2): the node is exact.
  fault = {{"CUDA_SIM_FAULT", "fill:2"}, {"CUDA_SIM_STATS", stats}};
  alone = run_alone({kApp, "capture_branches"}, fault);
  std::remove(report.c_str());
  r = run({"--breadcrumbs", "--graph-breadcrumbs", "--report", report}, {kApp, "capture_branches"}, fault);
  EXPECT_EQ(r.status, alone.status);
  EXPECT_EQ(r.out, alone.out);
  EXPECT_TRUE(contains(read_file(stats), "captures_invalidated=0\n"));
  EXPECT_TRUE(
      contains(r.err, "\n[cuda-blockrun]   replay 1 of the graph captured at " + at("BRANCHES_BEGIN") +
                          ", node 4 of 4: " + fill + at("BRANCHES_LAST_FILL") +
                          "\n[cuda-blockrun]   (found by the breadcrumbs in the graph: the first node "
                          "that did not complete); its 4 captured launches, in capture order:\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "[cuda-blockrun]     4. " + fill + at("BRANCHES_LAST_FILL") + "  <- failed\n"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "<- candidate")) << r.err;
  EXPECT_TRUE(
      contains(read_file(report),
               "\"failed_node\":{\"method\":\"breadcrumbs\",\"certainty\":\"exact\",\"positions\":[4]}"))
      << read_file(report);
}

TEST(Breadcrumbs, ManyThreadsOnManyStreams) {
  ProcessResult alone = run_process({kThreadsApp, "8", "2000"}, {{"LD_LIBRARY_PATH", kSimLib}});
  ProcessResult r = run({"--breadcrumbs"}, {kThreadsApp, "8", "2000"}, {});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, alone.out);
  EXPECT_TRUE(contains(r.err, "summary: 16000 launches, 0 blocked; no CUDA errors")) << r.err;
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
