// The engine without any CUDA: launch numbering, policy decisions, suspects, first-error bookkeeping
// and the exact lines users read. A capturing sink stands in for the log.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "callsites/python_site_cache.h"
#include "engine.h"
#include "launch_path.h"
#include "report/report_file.h"

namespace blockrun {
namespace {

const void* const kStreamA = reinterpret_cast<const void*>(0xa000);
const void* const kStreamB = reinterpret_cast<const void*>(0xb000);

class EngineTest : public ::testing::Test {
 protected:
  // `breadcrumb_ring`: launches kept per stream with breadcrumbs on (0: breadcrumbs off).
  std::unique_ptr<Engine> make(const char* policy, size_t breadcrumb_ring = 0) {
    Config config;
    std::string error;
    config.block = *Policy::parse(policy, &error);
    config.breadcrumbs = breadcrumb_ring != 0;
    config.ring = breadcrumb_ring;
    config.print_limit = print_limit_;
    config.gpu_time = gpu_time_;
    config.breadcrumb_every = breadcrumb_every_;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    auto logger = std::make_shared<spdlog::logger>("test", sink);
    logger->set_pattern("%v");
    return std::make_unique<Engine>(config, logger, [](ErrorCode code) {
      if (code.code == 700)
        return ErrorText{"cudaErrorIllegalAddress", "an illegal memory access was encountered"};
      if (code.code == 1) return ErrorText{"cudaErrorInvalidValue", "invalid argument"};
      return ErrorText{"error " + std::to_string(code.code), "?"};
    });
  }

  const KernelInfo* kernel(Engine& engine, uintptr_t handle, const char* mangled) {
    return engine.launch_path().kernel(reinterpret_cast<const void*>(handle), [=] { return mangled; });
  }

  Launch launch(Engine& engine, const KernelInfo* kernel, const void* stream, bool per_thread = false) {
    LaunchRequest request;
    request.api = "cudaLaunchKernel";
    request.kernel = kernel;
    request.stream = stream;
    request.per_thread_default_stream = per_thread;
    request.grid = {4096, 1, 1};
    request.block = {256, 1, 1};
    return engine.launch_path().begin_launch(request);
  }

  // Launch and finish without blocking: the launch returned success.
  void run(Engine& engine, const KernelInfo* kernel, const void* stream) {
    Launch l = launch(engine, kernel, stream);
    engine.end_launch(l, ErrorCode{}, BlockOutcome::NotBlocked, ErrorCode{}, nullptr);
  }

  std::string log() const { return log_.str(); }

  std::ostringstream log_;
  size_t print_limit_ = 10;                                  // CUDA_BLOCKRUN_PRINT_LIMIT's default
  bool gpu_time_ = false;                                    // CUDA_BLOCKRUN_GPU_TIME's default
  BreadcrumbEvery breadcrumb_every_ = BreadcrumbEvery::One;  // CUDA_BLOCKRUN_BREADCRUMB_EVERY's default
};

TEST_F(EngineTest, NamesEachKernelOnceAndDecidesByPolicy) {
  auto engine = make("stencil");
  int calls = 0;
  auto resolve = [&] {
    ++calls;
    return "_Z7stencilPfix";
  };
  const KernelInfo* first = engine->launch_path().kernel(reinterpret_cast<const void*>(0x10), resolve);
  const KernelInfo* again = engine->launch_path().kernel(reinterpret_cast<const void*>(0x10), resolve);
  EXPECT_EQ(first, again);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(first->name.demangled, "stencil(float*, int, long long)");
  EXPECT_TRUE(first->decided && first->decision.blocks());
  EXPECT_FALSE(kernel(*engine, 0x20, "_Z4fillPfif")->decision.blocks());
  Launch l = launch(*engine, first, nullptr);
  EXPECT_TRUE(l.block());
  EXPECT_EQ(l.record.sequence, 1u);
  EXPECT_EQ(l.record.kernel_ordinal, 1u);
}

TEST_F(EngineTest, BlockedLaunchThatFailsIsTheExactCulprit) {
  auto engine = make("all");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfix");
  Launch first = launch(*engine, fill, nullptr);
  engine->end_launch(first, ErrorCode{}, BlockOutcome::Synchronized, ErrorCode{}, "cudaStreamSynchronize");
  Launch second = launch(*engine, stencil, nullptr);
  engine->end_launch(second, ErrorCode{}, BlockOutcome::Synchronized, ErrorCode{Layer::Runtime, 700},
                     "cudaStreamSynchronize");
  EXPECT_EQ(log(),
            "first error: cudaErrorIllegalAddress (an illegal memory access was encountered), returned by "
            "cudaStreamSynchronize (blocking synchronize after the launch)\n"
            "  in kernel stencil(float*, int, long long)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #2 "
            "(stencil#1), "
            "blocked\n");
  EXPECT_TRUE(engine->has_first_error());
  EXPECT_EQ(engine->blocked_launches(), 2u);
}

// A kernel's fault is the context's sticky error: a synchronize of stream A returns it when the kernel that
// faulted ran on stream B, so every stream's unfinished launches are suspects.
TEST_F(EngineTest, UnblockedFaultListsUnsynchronizedLaunchesOfEveryStreamAsSuspects) {
  auto engine = make("none");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfix");
  run(*engine, fill, kStreamA);  // #1: completed by the sync below
  engine->end_sync("cudaStreamSynchronize", false, kStreamA, false, engine->launch_path().begin_sync(),
                   ErrorCode{});
  run(*engine, stencil, kStreamA);  // #2
  run(*engine, fill, kStreamB);     // #3: another stream
  run(*engine, fill, kStreamA);     // #4
  uint64_t mark = engine->launch_path().begin_sync();
  engine->end_sync("cudaStreamSynchronize", false, kStreamA, false, mark, ErrorCode{Layer::Runtime, 700});
  EXPECT_EQ(
      log(),
      "first error: cudaErrorIllegalAddress (an illegal memory access was encountered), returned by "
      "cudaStreamSynchronize\n"
      "  culprit unknown (no blocked launch failed); suspects: launches not known to have completed, newest "
      "last:\n"
      "    kernel stencil(float*, int, long long)<<<(4096,1,1), (256,1,1), 0, 0xa000>>>, launch #2 "
      "(stencil#1)\n"
      "    kernel fill(float*, int, float)<<<(4096,1,1), (256,1,1), 0, 0xb000>>>, launch #3 (fill#2)\n"
      "    kernel fill(float*, int, float)<<<(4096,1,1), (256,1,1), 0, 0xa000>>>, launch #4 (fill#3)\n"
      "  to pin it: run the program again under cuda-blockrun --localize\n"
      "  or run again with --block 'stencil,fill' (or CUDA_BLOCKRUN_BLOCK='stencil,fill'), or --block all\n");
}

TEST_F(EngineTest, SuspectsAreTheNewestEightAcrossStreamsForDeviceWideCalls) {
  auto engine = make("none");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  for (int i = 0; i < 12; ++i) run(*engine, fill, i % 2 ? kStreamA : kStreamB);
  engine->end_sync("cudaMemcpy", true, nullptr, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  std::string text = log();
  EXPECT_EQ(text.find("launch #4 "), std::string::npos);
  EXPECT_NE(text.find("launch #5 (fill#5)"), std::string::npos);
  EXPECT_LT(text.find("launch #5 (fill#5)"), text.find("launch #12 (fill#12)"));
  // Twelve could have faulted, eight are listed: the log says so, and the rule still blocks all twelve (every
  // launch of fill: the rule is made from the launches left out too).
  EXPECT_NE(
      text.find("  12 launches since the last completed synchronize could have faulted; the newest 8 are "
                "shown\n"
                "  to pin it: run the program again under cuda-blockrun --localize\n"
                "  or run again with --block 'fill' (or CUDA_BLOCKRUN_BLOCK='fill'), or --block all\n"),
      std::string::npos)
      << text;
  size_t lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_EQ(lines, 1u + 1u + 8u + 1u + 2u);
}

// CUDA_BLOCKRUN_PRINT_LIMIT: the log tells the first N suspects and counts the rest; nothing else changes.
TEST_F(EngineTest, ThePrintLimitCutsTheSuspectsInTheLogAndSaysHowManyMore) {
  print_limit_ = 3;
  auto engine = make("none");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  for (int i = 0; i < 12; ++i) run(*engine, fill, i % 2 ? kStreamA : kStreamB);
  engine->end_sync("cudaMemcpy", true, nullptr, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  std::string text = log();
  EXPECT_NE(
      text.find("    kernel fill(float*, int, float)<<<(4096,1,1), (256,1,1), 0, 0xa000>>>, launch #6 "
                "(fill#6)\n"
                "    kernel fill(float*, int, float)<<<(4096,1,1), (256,1,1), 0, 0xb000>>>, launch #7 "
                "(fill#7)\n"
                "    ... and 5 more (--print-limit 0 prints all; --report lists every one)\n"
                "  12 launches since the last completed synchronize could have faulted; the newest 8 are "
                "shown\n"
                "  to pin it: run the program again under cuda-blockrun --localize\n"
                "  or run again with --block 'fill'"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("launch #8 "), std::string::npos) << text;
}

// Past the kernel table's bound a thread's kernels share one record: its launch count is no kernel's own, so
// the log gives no NAME#N for them rather than a wrong one.
TEST_F(EngineTest, AKernelPastTheTableHasNoPerKernelNumber) {
  auto engine = make("none");
  const KernelInfo* past = nullptr;
  for (uintptr_t handle = 1; handle <= 70000 && !past; ++handle) {
    const KernelInfo* info = kernel(*engine, handle * 16, "_Z4fillPfif");
    if (info->past_table) past = info;
  }
  ASSERT_NE(past, nullptr) << "the table took 70,000 kernels";
  launch(*engine, past, nullptr);
  Launch second = launch(*engine, past, nullptr);
  EXPECT_EQ(second.record.kernel_ordinal, 0u);
  EXPECT_EQ(engine->describe(second.record),
            "kernel fill(float*, int, float)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #2");
  Launch kept = launch(*engine, kernel(*engine, 16, "_Z4fillPfif"), nullptr);
  EXPECT_EQ(kept.record.kernel_ordinal, 1u);
}

TEST_F(EngineTest, TheLaunchConfigurationIsWrittenAsCudaWritesIt) {
  auto engine = make("all");
  LaunchRequest request;
  request.api = "cudaLaunchKernel";
  request.kernel = kernel(*engine, 0x10, "_Z4fillPfif");
  request.stream = kStreamA;
  request.grid = {8, 2, 1};
  request.block = {32, 4, 2};
  request.shared_memory = 4096;
  Launch l = engine->launch_path().begin_launch(request);
  EXPECT_EQ(
      engine->describe(l.record),
      "kernel fill(float*, int, float)<<<(8,2,1), (32,4,2), 4096, 0xa000>>>, launch #1 (fill#1), blocked");
}

TEST_F(EngineTest, DeviceSynchronizeClearsSuspectsOfEveryStream) {
  auto engine = make("none");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  run(*engine, fill, kStreamA);
  run(*engine, fill, kStreamB);
  engine->end_sync("cudaDeviceSynchronize", true, nullptr, false, engine->launch_path().begin_sync(),
                   ErrorCode{});
  run(*engine, fill, kStreamB);
  engine->end_sync("cudaDeviceSynchronize", true, nullptr, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  EXPECT_NE(log().find("launch #3 (fill#3)"), std::string::npos);
  EXPECT_EQ(log().find("launch #1 "), std::string::npos);
  EXPECT_EQ(log().find("launch #2 "), std::string::npos);
}

TEST_F(EngineTest, LaunchErrorReturnedAtOnceNamesTheLaunch) {
  auto engine = make("none");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  run(*engine, fill, nullptr);  // an earlier launch is no suspect of a synchronous launch error
  Launch l = launch(*engine, fill, nullptr);
  engine->end_launch(l, ErrorCode{Layer::Runtime, 1}, BlockOutcome::NotBlocked, ErrorCode{}, nullptr);
  EXPECT_EQ(log(),
            "first error: cudaErrorInvalidValue (invalid argument), returned by cudaLaunchKernel (the launch "
            "itself "
            "failed)\n"
            "  in kernel fill(float*, int, float)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #2 (fill#2)\n");
}

TEST_F(EngineTest, LaterErrorsAreCountedNotRepeated) {
  auto engine = make("none");
  engine->observe_error("cudaMemcpy", ErrorCode{Layer::Runtime, 700}, nullptr, false);
  std::string first = log();
  engine->observe_error("cudaMemcpy", ErrorCode{Layer::Runtime, 700}, nullptr, false);
  engine->observe_error("cudaGetLastError", ErrorCode{Layer::Runtime, 700}, nullptr, false);
  EXPECT_EQ(log(), first);
  EXPECT_EQ(engine->later_errors(), 2u);
  engine->finish();
  EXPECT_NE(log().find("summary: 0 launches, 0 blocked; first error cudaErrorIllegalAddress, 2 later errors"),
            std::string::npos)
      << log();
}

TEST_F(EngineTest, BlockedFailureWithUnfinishedEarlierWorkIsNotExact) {
  auto engine = make("stencil");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfix");
  run(*engine, fill, nullptr);
  Launch l = launch(*engine, stencil, nullptr);
  engine->end_launch(l, ErrorCode{}, BlockOutcome::Synchronized, ErrorCode{Layer::Runtime, 700},
                     "cudaStreamSynchronize");
  EXPECT_EQ(
      log(),
      "first error: cudaErrorIllegalAddress (an illegal memory access was encountered), returned by "
      "cudaStreamSynchronize (blocking synchronize after the launch)\n"
      "  in kernel stencil(float*, int, long long)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #2 "
      "(stencil#1), "
      "blocked\n"
      "  not exact: these launches had not completed and may have faulted instead, newest last:\n"
      "    kernel fill(float*, int, float)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #1 (fill#1)\n"
      "  to pin it: run the program again under cuda-blockrun --localize\n"
      "  or run again with --block 'stencil,fill' (or CUDA_BLOCKRUN_BLOCK='stencil,fill'), or --block all\n");
}

TEST_F(EngineTest, CaptureSkipIsLoggedOnceAndCounted) {
  auto engine = make("all");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  for (int i = 0; i < 3; ++i) {
    Launch l = launch(*engine, fill, kStreamA);
    engine->end_launch(l, ErrorCode{}, BlockOutcome::SkippedCapture, ErrorCode{}, nullptr);
  }
  engine->finish();
  std::string text = log();
  EXPECT_EQ(text.find("blocking skipped"), text.rfind("blocking skipped"));
  EXPECT_NE(text.find("summary: 3 launches, 0 blocked, 3 not blocked during stream capture; no CUDA errors"),
            std::string::npos)
      << text;
}

// The summary's per-kernel distribution of blocked launch times, from times the shim would have measured:
// stencil blocked 10 times, 1 to 10 ms of wall time, the first 8 with 0.1 to 0.8 ms of GPU time (the last two
// had no events); fill blocked twice, wall time only. Medians and p90s are the middles of the buckets (a
// sixteenth of their power of two wide) that hold the sample of rank ceil(q x n), brought within the smallest
// and largest.
TEST_F(EngineTest, SummaryGivesTheMedianP90AndMaxOfEachBlockedKernel) {
  char path[] = "/tmp/engine_test_summary.XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  gpu_time_ = true;
  auto engine = make("all");
  std::string problem;
  engine->start(ProcessInfo{}, ReportFile::open(path, false, &problem), nullptr);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfix");
  auto blocked = [&](const KernelInfo* kernel, uint64_t wall_ns, int64_t gpu_ns) {
    Launch l = launch(*engine, kernel, kStreamA);
    l.timing.wall_ns = wall_ns;
    l.timing.gpu_ns = gpu_ns;
    engine->end_launch(l, ErrorCode{}, BlockOutcome::Synchronized, ErrorCode{}, "cudaStreamSynchronize");
  };
  for (int64_t k = 10; k >= 1; --k) blocked(stencil, k * 1'000'000, k <= 8 ? k * 100'000 : -1);
  blocked(fill, 3'000, -1);
  blocked(fill, 1'000, -1);
  engine->finish();

  // stencil's wall times: the median (rank 5) 5 ms is in [4,980,736, 5,242,880) ns, middle 5,111,807; the p90
  // (rank 9) 9 ms in [8,912,896, 9,437,184), middle 9,175,039. GPU times: the median (rank 4) 0.4 ms is in
  // [393,216, 409,600), middle 401,407; the p90 (rank 8 of 8) 0.8 ms in [786,432, 819,200), whose middle
  // 802,815 is above the largest, so 0.8 ms. fill: 1,000 ns in [992, 1,024), middle 1,007; 3,000 ns is the
  // largest.
  std::ifstream in(path);
  std::stringstream report;
  report << in.rdbuf();
  std::remove(path);
  EXPECT_NE(
      report.str().find(
          "{\"kernel\":\"stencil(float*, int, long long)\",\"kernel_mangled\":\"_Z7stencilPfix\","
          "\"launches\":10,\"blocked\":10,\"gpu_timed\":8,\"gpu_ms_total\":3.6,\"gpu_ms_median\":0.401407,"
          "\"gpu_ms_p90\":0.8,\"gpu_ms_max\":0.8,\"wall_ms_total\":55,\"wall_ms_median\":5.111807,"
          "\"wall_ms_p90\":9.175039,\"wall_ms_max\":10}"),
      std::string::npos)
      << report.str();
  EXPECT_NE(report.str().find("{\"kernel\":\"fill(float*, int, float)\",\"kernel_mangled\":\"_Z4fillPfif\","
                              "\"launches\":2,\"blocked\":2,\"gpu_timed\":0,\"gpu_ms_total\":0,"
                              "\"gpu_ms_median\":0,\"gpu_ms_p90\":0,\"gpu_ms_max\":0,\"wall_ms_total\":0.004,"
                              "\"wall_ms_median\":0.001007,\"wall_ms_p90\":0.003,\"wall_ms_max\":0.003}"),
            std::string::npos)
      << report.str();
  EXPECT_EQ(
      log(),
      "summary: 12 launches, 12 blocked; no CUDA errors\n"
      "blocked launches by wall time (top 10; GPU time from events around the kernel):\n"
      "     55.000 ms wall (median 5.112, p90 9.175, max 10.000), GPU 3.600 ms (median 0.401, p90 0.800, "
      "max 0.800); 10 of 10 launches blocked: stencil(float*, int, long long)\n"
      "      0.004 ms wall (median 0.001, p90 0.003, max 0.003), GPU time not measured; 2 of 2 launches "
      "blocked: fill(float*, int, float)\n");
}

// Threads that block the same kernel at once, its first blocked launches among them, race to make its
// histograms: one is kept, and every launch is counted in it. A kernel never blocked has none.
TEST_F(EngineTest, ThreadsBlockingOneKernelAtOnceShareOneHistogram) {
  auto engine = make("all");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  constexpr int kThreads = 4, kEach = 500;
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ++ready;
      while (ready < kThreads) std::this_thread::yield();
      for (int i = 0; i < kEach; ++i) {
        Launch l = launch(*engine, fill, nullptr, true);
        l.timing.wall_ns = 1'000 * static_cast<uint64_t>(t + 1);
        l.timing.gpu_ns = 100;
        engine->end_launch(l, ErrorCode{}, BlockOutcome::Synchronized, ErrorCode{}, "cudaStreamSynchronize");
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const BlockTimes* times = fill->stats.times.load();
  ASSERT_TRUE(times);
  const DurationHistogram* wall = &times->wall;
  const DurationHistogram* gpu = times->gpu.load();
  ASSERT_TRUE(gpu);
  EXPECT_EQ(wall->count(), static_cast<uint64_t>(kThreads * kEach));
  EXPECT_EQ(gpu->count(), static_cast<uint64_t>(kThreads * kEach));
  EXPECT_EQ(wall->min(), 1'000u);
  EXPECT_EQ(wall->max(), 4'000u);
  EXPECT_EQ(gpu->quantile(0.9), 100u);
  const KernelInfo* scale = kernel(*engine, 0x30, "_Z5scalePfif");
  run(*engine, scale, kStreamA);
  EXPECT_EQ(scale->stats.times.load(), nullptr);
}

TEST_F(EngineTest, PerThreadDefaultStreamIsDistinctPerThread) {
  auto engine = make("none");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  Launch here = launch(*engine, fill, nullptr, true);
  Launch there;
  std::thread([&] { there = launch(*engine, fill, nullptr, true); }).join();
  EXPECT_NE(here.record.stream.per_thread_owner, there.record.stream.per_thread_owner);
  EXPECT_NE(here.stream, there.stream);
  EXPECT_NE(engine->describe(here.record).find(", 0, per-thread default (thread "), std::string::npos);
}

TEST_F(EngineTest, LibraryCallIsDescribedByItsArguments) {
  auto engine = make("cublasSgemm*");
  LaunchRequest request;
  request.api = "cublasSgemm_v2";
  request.library_api = "cublasSgemm_v2";
  request.library.m = 512;
  request.library.n = 256;
  request.library.k = 128;
  request.library.transa = 'N';
  request.library.transb = 'T';
  Launch l = engine->launch_path().begin_launch(request);
  EXPECT_TRUE(l.block());
  EXPECT_EQ(engine->describe(l.record),
            "cublasSgemm_v2 m=512 n=256 k=128 transa=N transb=T, launch #1, stream 0x0, blocked");
}

TEST_F(EngineTest, UntrustedNamesStayOnOneLine) {
  auto engine = make("all");
  std::string long_name(10000, 'k');
  const KernelInfo* evil = kernel(*engine, 0x10, "evil\nkernel\x1b[31m");
  const KernelInfo* huge =
      engine->launch_path().kernel(reinterpret_cast<const void*>(0x20), [&] { return long_name.c_str(); });
  Launch l = launch(*engine, evil, nullptr);
  EXPECT_EQ(engine->describe(l.record).substr(0, 33), "kernel evil\\x0akernel\\x1b[31m<<<(");
  Launch h = launch(*engine, huge, nullptr);
  std::string text = engine->describe(h.record);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_NE(text.find("...(10000 bytes)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #2 (kkk"),
            std::string::npos)
      << text.substr(4000, 200);
}

TEST_F(EngineTest, ConcurrentLaunchesAreNumberedExactlyOnce) {
  auto engine = make("none");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) run(*engine, fill, reinterpret_cast<const void*>(0x1000 * (t + 1)));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(engine->launches(), 40000u);
  EXPECT_EQ(fill->launches.load(), 40000u);
}

// Launches by entry point are counted per thread without atomic read-modify-writes (Engine::count_api); the
// summary's totals must still be exact, for threads that cycle through more entry points than a thread keeps
// at hand, and across engines (a thread's tallies are its engine's).
TEST_F(EngineTest, LaunchesByEntryPointAreExactAcrossThreadsAndEngines) {
  static const char* const kApis[] = {"cudaLaunchKernel",   "cuLaunchKernel",
                                      "cuLaunchKernelEx",   "cudaLaunchKernelExC",
                                      "__cudaLaunchKernel", "cuLaunchCooperativeKernel"};
  for (int round = 0; round < 2; ++round) {
    char path[] = "/tmp/engine_test_apis.XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    auto engine = make("none");
    std::string problem;
    engine->start(ProcessInfo{}, ReportFile::open(path, false, &problem), nullptr);
    const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 6000; ++i) {
          LaunchRequest request;
          request.api = kApis[(i + t) % 6];
          request.kernel = fill;
          request.stream = kStreamA;
          Launch l = engine->launch_path().begin_launch(request);
          engine->end_launch(l, ErrorCode{}, BlockOutcome::NotBlocked, ErrorCode{}, nullptr);
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    engine->finish();
    std::ifstream in(path);
    std::stringstream report;
    report << in.rdbuf();
    std::remove(path);
    EXPECT_NE(report.str().find(
                  "\"launches_by_api\":{\"__cudaLaunchKernel\":4000,\"cuLaunchCooperativeKernel\":4000,"
                  "\"cuLaunchKernel\":4000,\"cuLaunchKernelEx\":4000,\"cudaLaunchKernel\":4000,"
                  "\"cudaLaunchKernelExC\":4000}"),
              std::string::npos)
        << report.str();
  }
}

// Device-side breadcrumbs (Engine::set_breadcrumbs): the slots stand in for the pinned memory the GPU writes.
class BreadcrumbTest : public EngineTest {
 protected:
  void launch_with_crumb(Engine& engine, const KernelInfo* kernel, const void* stream, bool completes) {
    Launch l = launch(engine, kernel, stream);
    int32_t slot = engine.launch_path().breadcrumb_slot(l);
    // As the shim does: a write only for the launches that take one, noted once its call succeeded.
    bool written = slot >= 0 && engine.launch_path().takes_breadcrumb(l);
    if (written) engine.launch_path().breadcrumb_enqueued(l);
    engine.end_launch(l, ErrorCode{}, BlockOutcome::NotBlocked, ErrorCode{}, nullptr);
    ASSERT_GE(slot, 0);
    // The stream write after the launch ran (it completed) or not (it, or work before it, faulted or still
    // runs).
    if (completes && written) slots_[slot] = l.record.sequence;
  }
  // 60 launches of fill, stencil, scale on one stream; #38 (stencil's 13th) faults: its breadcrumb and every
  // later one never run. The final cudaMemcpy returns the error.
  void sixty_launches_the_38th_faults() {
    engine_ = make("none", 256);
    engine_->set_breadcrumbs(slots_, 4);
    const KernelInfo* kernels[] = {kernel(*engine_, 0x10, "_Z4fillPfif"),
                                   kernel(*engine_, 0x20, "_Z7stencilPfix"),
                                   kernel(*engine_, 0x30, "_Z5scalePfif")};
    for (int n = 1; n <= 60; ++n) launch_with_crumb(*engine_, kernels[(n - 1) % 3], kStreamA, n < 38);
    engine_->end_sync("cudaMemcpy", true, nullptr, false, engine_->launch_path().begin_sync(),
                      ErrorCode{Layer::Runtime, 700});
  }
  uint64_t slots_[4] = {};
  std::unique_ptr<Engine> engine_;
};

TEST_F(BreadcrumbTest, NameTheCulpritExactlyLongAfterItFaulted) {
  sixty_launches_the_38th_faults();
  EXPECT_EQ(
      log(),
      "first error: cudaErrorIllegalAddress (an illegal memory access was encountered), returned by "
      "cudaMemcpy\n"
      "  in kernel stencil(float*, int, long long)<<<(4096,1,1), (256,1,1), 0, 0xa000>>>, launch #38 "
      "(stencil#13)\n"
      "  found by breadcrumbs: the first launch on its stream that did not complete; for its full call site "
      "run again with --block 'stencil#13'\n");
}

TEST_F(BreadcrumbTest, SeveralStreamsInFlightGiveTheirFirstUnfinishedLaunchesOldestFirst) {
  auto engine = make("none", 256);
  engine->set_breadcrumbs(slots_, 4);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfix");
  const void* streamC = reinterpret_cast<const void*>(0xc000);
  for (int n = 1; n <= 3; ++n) launch_with_crumb(*engine, fill, kStreamA, true);      // #1-#3 done
  for (int n = 4; n <= 6; ++n) launch_with_crumb(*engine, stencil, kStreamB, n < 5);  // #5 first unfinished
  for (int n = 7; n <= 8; ++n) launch_with_crumb(*engine, fill, kStreamA, false);     // #7 first unfinished
  launch_with_crumb(*engine, stencil, streamC, true);                                 // #9 done
  engine->end_sync("cudaDeviceSynchronize", true, nullptr, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  EXPECT_EQ(log(),
            "first error: cudaErrorIllegalAddress (an illegal memory access was encountered), returned by "
            "cudaDeviceSynchronize\n"
            "  culprit among the first unfinished launch of each stream (breadcrumbs), oldest first:\n"
            "    kernel stencil(float*, int, long long)<<<(4096,1,1), (256,1,1), 0, 0xb000>>>, launch #5 "
            "(stencil#2)\n"
            "    kernel fill(float*, int, float)<<<(4096,1,1), (256,1,1), 0, 0xa000>>>, launch #7 (fill#4)\n"
            "  to pin it: run the program again under cuda-blockrun --localize\n"
            "  or run again with --block 'stencil#2,fill#4' (or CUDA_BLOCKRUN_BLOCK='stencil#2,fill#4')\n");
}

// Two threads launch into one stream at once: #2 is numbered first, but #3's launch and write reach the
// driver first, so the GPU runs #3, its write, then #2. #3 faults: the slot stays at #1, and #2 (which never
// ran) is the first unfinished launch by number. Neither may be named exactly.
TEST_F(BreadcrumbTest, TwoLaunchesIntoOneStreamAtOnceAreNeverNamedExactly) {
  auto engine = make("none", 256);
  engine->set_breadcrumbs(slots_, 4);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfix");
  launch_with_crumb(*engine, fill, kStreamA, true);  // #1 completed
  Launch first = launch(*engine, fill, kStreamA);    // #2, its launch call still on its way
  Launch second =
      launch(*engine, stencil, kStreamA);  // #3, from another thread, enqueued with its write first
  ASSERT_GE(engine->launch_path().breadcrumb_slot(second), 0);
  engine->launch_path().breadcrumb_enqueued(second);
  engine->end_launch(second, ErrorCode{}, BlockOutcome::NotBlocked, ErrorCode{}, nullptr);
  engine->launch_path().breadcrumb_enqueued(first);
  engine->end_launch(first, ErrorCode{}, BlockOutcome::NotBlocked, ErrorCode{}, nullptr);
  engine->end_sync("cudaStreamSynchronize", false, kStreamA, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  std::string text = log();
  EXPECT_EQ(text.find("  in kernel "), std::string::npos) << "named exactly: " << text;
  EXPECT_NE(text.find("launch #3 (stencil#1)\n"), std::string::npos) << "the culprit is not among: " << text;
  EXPECT_NE(text.find("or run again with --block 'fill#2,stencil#1'"), std::string::npos) << text;
}

// One thread: each launch's write is enqueued before the next launch is numbered, so the first unfinished one
// is named exactly (the check above costs the common case nothing).
TEST_F(BreadcrumbTest, LaunchesOneAfterAnotherKeepTheirWrites) {
  auto engine = make("none", 256);
  engine->set_breadcrumbs(slots_, 4);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfix");
  launch_with_crumb(*engine, fill, kStreamA, true);
  launch_with_crumb(*engine, stencil, kStreamA, false);
  launch_with_crumb(*engine, fill, kStreamA, false);
  engine->end_sync("cudaStreamSynchronize", false, kStreamA, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  EXPECT_NE(
      log().find("  in kernel stencil(float*, int, long long)<<<(4096,1,1), (256,1,1), 0, 0xa000>>>, launch "
                 "#2 (stencil#1)\n"),
      std::string::npos)
      << log();
}

// CUDA_BLOCKRUN_BREADCRUMB_EVERY=4: a write after every 4th launch of a stream, so the last one seen written
// (#36) leaves the 4 launches through the next written one (#40) as candidates, none of them exact.
TEST_F(BreadcrumbTest, OneWritePerFourLaunchesGivesTheFourAfterTheLastWrittenOne) {
  breadcrumb_every_ = BreadcrumbEvery::Four;
  sixty_launches_the_38th_faults();
  std::string text = log();
  EXPECT_EQ(text.find("  in kernel "), std::string::npos) << "named exactly: " << text;
  for (const char* candidate : {"launch #37 (fill#13)\n", "launch #38 (stencil#13)\n",
                                "launch #39 (scale#13)\n", "launch #40 (fill#14)\n"})
    EXPECT_NE(text.find(candidate), std::string::npos) << candidate << " is not among: " << text;
  EXPECT_EQ(text.find("launch #36 "), std::string::npos) << text;
  EXPECT_EQ(text.find("launch #41 "), std::string::npos) << text;
  EXPECT_NE(text.find("or run again with --block 'fill#13,stencil#13,scale#13,fill#14'"), std::string::npos)
      << text;
}

TEST_F(BreadcrumbTest, AFirstUnfinishedLaunchOlderThanTheRingIsSaidToBeLost) {
  auto engine = make("none", 8);
  engine->set_breadcrumbs(slots_, 4);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  for (int n = 1; n <= 20; ++n)
    launch_with_crumb(*engine, fill, kStreamA, n <= 5);  // #6 faulted, 14 more after it
  engine->end_sync("cudaMemcpy", true, nullptr, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  std::string text = log();
  EXPECT_NE(
      text.find("stream 0xa000: its first unfinished launch (after #5) is older than the 8 launches kept"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  to pin it: run the program again under cuda-blockrun --localize\n"
                      "  or run again with --block all\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("launch #13 "), std::string::npos)
      << "the oldest launch kept is not the culprit: " << text;
}

// A stream past the last slot goes without breadcrumbs: how far it got is the host's view alone, so its first
// unfinished launch is not the culprit for certain (it may have completed, and a later one faulted).
TEST_F(BreadcrumbTest, AStreamWithoutASlotIsNeverNamedExactly) {
  auto engine = make("none", 256);
  engine->set_breadcrumbs(slots_, 1);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfix");
  launch_with_crumb(*engine, fill, kStreamA, true);  // #1, stream A takes the only slot; it completed
  for (int n = 2; n <= 3; ++n) {                     // #2 completed, #3 faulted: nothing on the GPU says so
    Launch l = launch(*engine, stencil, kStreamB);
    EXPECT_EQ(engine->launch_path().breadcrumb_slot(l), -1);
    engine->end_launch(l, ErrorCode{}, BlockOutcome::NotBlocked, ErrorCode{}, nullptr);
  }
  engine->end_sync("cudaDeviceSynchronize", true, nullptr, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  std::string text = log();
  EXPECT_EQ(text.find("  in kernel stencil"), std::string::npos) << "named exactly: " << text;
  EXPECT_NE(text.find("launch #2 (stencil#1)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("launch #3 (stencil#2)\n"), std::string::npos) << "the culprit is not among: " << text;
  EXPECT_NE(text.find("or run again with --block 'stencil#1,stencil#2'"), std::string::npos) << text;
}

// A launch whose breadcrumb write was not enqueued (the breadcrumbs were being set up on another thread, the
// write failed) may have completed with its slot still short of it: the launches after it are candidates too,
// through the first one whose write was enqueued.
TEST_F(BreadcrumbTest, ALaunchWithoutItsWriteIsNeverNamedExactly) {
  auto engine = make("none", 256);
  engine->set_breadcrumbs(slots_, 4);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfix");
  const KernelInfo* scale = kernel(*engine, 0x30, "_Z5scalePfif");
  launch_with_crumb(*engine, fill, kStreamA, true);       // #1 completed
  Launch unwritten = launch(*engine, stencil, kStreamA);  // #2 completed, but no write says so
  ASSERT_GE(engine->launch_path().breadcrumb_slot(unwritten), 0);
  engine->end_launch(unwritten, ErrorCode{}, BlockOutcome::NotBlocked, ErrorCode{}, nullptr);
  launch_with_crumb(*engine, scale, kStreamA, false);  // #3 faulted
  launch_with_crumb(*engine, fill, kStreamA, false);   // #4 never ran
  engine->end_sync("cudaStreamSynchronize", false, kStreamA, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  std::string text = log();
  EXPECT_EQ(text.find("  in kernel "), std::string::npos) << "named exactly: " << text;
  EXPECT_NE(text.find("  culprit among the launches the breadcrumbs do not show complete, oldest first (each "
                      "stream's first unfinished one; where no breadcrumb write followed it, those after it "
                      "through one that had):\n    kernel stencil"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("or run again with --block 'stencil#1,scale#1'"), std::string::npos) << text;
  EXPECT_EQ(text.find("launch #4 "), std::string::npos) << "#3's write shows #4 never ran first: " << text;
}

TEST_F(BreadcrumbTest, NothingUnfinishedFallsBackToTheHostsView) {
  auto engine = make("none", 256);
  engine->set_breadcrumbs(slots_, 4);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  for (int n = 1; n <= 3; ++n) launch_with_crumb(*engine, fill, kStreamA, true);
  engine->observe_error("cudaMalloc", ErrorCode{Layer::Runtime, 1}, nullptr, false);
  EXPECT_NE(log().find("no launch is on record as unfinished"), std::string::npos) << log();
}

// The Python line of every launch is kept (interned) with breadcrumbs: the fake capture below says which line
// launched, innermost first, as the shim's read_python_stack would.
int g_python_line = 0;
void fake_python(PythonStack* out) {
  out->status = PythonStatus::Captured;
  out->count = 2;
  out->frames[0].line = 2;
  std::snprintf(out->frames[0].file, kPythonFileBytes, "/usr/lib/python3/site-packages/torch/functional.py");
  std::snprintf(out->frames[0].function, kPythonFunctionBytes, "stencil");
  out->frames[1].line = g_python_line;
  std::snprintf(out->frames[1].file, kPythonFileBytes, "/home/me/train.py");
  std::snprintf(out->frames[1].function, kPythonFunctionBytes, "forward");
}

TEST_F(BreadcrumbTest, TheCulpritsPythonLineIsKeptWithoutAStackWalk) {
  auto engine = make("none", 256);
  engine->start(ProcessInfo{}, nullptr, nullptr, fake_python);
  engine->set_breadcrumbs(slots_, 4);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfix");
  for (int n = 1; n <= 20; ++n) {
    g_python_line = 100 + n;
    launch_with_crumb(*engine, n % 2 ? fill : stencil, kStreamA, n < 8);  // #8 (stencil's 4th) faulted
  }
  engine->end_sync("cudaMemcpy", true, nullptr, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  EXPECT_NE(log().find("  in kernel stencil(float*, int, long long)<<<(4096,1,1), (256,1,1), 0, 0xa000>>>, "
                       "launch #8 (stencil#4)\n"),
            std::string::npos)
      << log();
  EXPECT_NE(log().find("  python: /home/me/train.py:108 in forward (innermost: "
                       "/usr/lib/python3/site-packages/torch/functional.py:2 in stencil)\n"),
            std::string::npos)
      << log();
}

// The same through the engine's site cache, as the shim's read_python_site does it: the walk's words (here:
// the two frames' code objects and lines, and the end of the stack) looked up, the frames read in full only
// for a walk not seen before.
int g_full_reads = 0;
void fake_python_site(PythonSiteCache& cache, PythonStack* scratch, PythonLaunchSite* out) {
  PythonWalkKey key;
  key.add_frame(0x1000, 2);
  key.add_frame(0x2000, static_cast<uint64_t>(g_python_line));
  key.add_end();
  if (cache.find(key, out)) return;
  ++g_full_reads;
  fake_python(scratch);
  *out = cache.keep(*scratch, &key);
}

TEST_F(BreadcrumbTest, TheCulpritsPythonLineComesFromTheSiteCacheOnceSeen) {
  auto engine = make("none", 256);
  engine->start(ProcessInfo{}, nullptr, nullptr, fake_python, fake_python_site);
  engine->set_breadcrumbs(slots_, 4);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfix");
  g_full_reads = 0;
  for (int n = 1; n <= 20; ++n) {
    g_python_line = 100 + n % 5;                                          // five lines in turn
    launch_with_crumb(*engine, n % 2 ? fill : stencil, kStreamA, n < 8);  // #8 (stencil's 4th) faulted
  }
  EXPECT_EQ(g_full_reads, 5) << "each line read in full once";
  engine->end_sync("cudaMemcpy", true, nullptr, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  EXPECT_NE(log().find("  python: /home/me/train.py:103 in forward (innermost: "
                       "/usr/lib/python3/site-packages/torch/functional.py:2 in stencil)\n"),
            std::string::npos)
      << log();
}

// The shim knows there is no CPython in the process (LaunchRequest::no_python): the launch's line is NoPython
// without a call for it; a request that does not say so is asked as before.
TEST_F(BreadcrumbTest, ALaunchKnownToHaveNoPythonIsNotAskedForItsLine) {
  auto engine = make("none", 256);
  engine->start(ProcessInfo{}, nullptr, nullptr, fake_python, fake_python_site);
  engine->set_breadcrumbs(slots_, 4);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  g_full_reads = 0;
  g_python_line = 9;
  LaunchRequest request;
  request.api = "cuLaunchKernel";
  request.kernel = fill;
  request.stream = kStreamA;
  request.no_python = true;
  Launch without = engine->launch_path().begin_launch(request);
  EXPECT_EQ(without.record.python_status, PythonStatus::NoPython);
  EXPECT_EQ(without.record.python_site, 0u);
  EXPECT_EQ(g_full_reads, 0);
  request.no_python = false;
  Launch with = engine->launch_path().begin_launch(request);
  EXPECT_EQ(with.record.python_status, PythonStatus::Captured);
  EXPECT_NE(with.record.python_site, 0u);
  EXPECT_EQ(g_full_reads, 1);
}

TEST_F(BreadcrumbTest, NoPythonLinesAreKeptWithoutBreadcrumbs) {
  auto engine = make("none");
  engine->start(ProcessInfo{}, nullptr, nullptr, fake_python);
  g_python_line = 7;
  Launch l = launch(*engine, kernel(*engine, 0x10, "_Z4fillPfif"), kStreamA);
  EXPECT_EQ(l.record.python_site, 0u);
  EXPECT_EQ(l.record.python_status, PythonStatus::NotCaptured);
}

// Threads interleave differently in another run, so a candidate's process-wide numbers (#N, NAME#N) name
// another launch there; its number among its own thread's launches does not change. Two threads launch the
// same kernel, each on a stream of its own; both stop short (the device stopped at the fault): the rule
// names each candidate by its thread's launch number.
TEST_F(BreadcrumbTest, CandidatesOfAKernelSeveralThreadsLaunchArePinnedByTheirThreadsLaunchNumber) {
  auto engine = make("none", 256);
  engine->set_breadcrumbs(slots_, 4);
  const KernelInfo* accumulate = kernel(*engine, 0x30, "_Z10accumulatePfi");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  launch_with_crumb(*engine, fill, kStreamA, true);  // this thread's #1, one thread's kernel
  std::thread other([&] {
    for (int n = 1; n <= 3; ++n)
      launch_with_crumb(*engine, accumulate, kStreamB, n < 3);  // its #3 unfinished
  });
  other.join();
  for (int n = 2; n <= 6; ++n) launch_with_crumb(*engine, accumulate, kStreamA, n < 5);  // this one's #5
  engine->end_sync("cudaDeviceSynchronize", true, nullptr, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700});
  std::string text = log();
  EXPECT_NE(text.find("launch #4 (accumulate#3)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("launch #8 (accumulate#7)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  or run again with --block 'accumulate thread#3,accumulate thread#5' "),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("  in kernel "), std::string::npos) << "named exactly: " << text;
}

// A launch's number among its thread's launches counts that thread's only, from 1.
TEST_F(EngineTest, EachThreadNumbersItsOwnLaunches) {
  auto engine = make("none");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  EXPECT_EQ(launch(*engine, fill, kStreamA).record.thread_launch, 1u);
  uint32_t in_other = 0;
  std::thread other([&] {
    launch(*engine, fill, kStreamA);
    in_other = launch(*engine, fill, kStreamA).record.thread_launch;
  });
  other.join();
  EXPECT_EQ(in_other, 2u);
  Launch third = launch(*engine, fill, kStreamA);
  EXPECT_EQ(third.record.thread_launch, 2u);
  EXPECT_EQ(third.record.sequence, 4u);
  EXPECT_TRUE(fill->launched_by_many_threads());
  auto again = make("none");  // a new engine (a forked child's) counts from 1 again
  EXPECT_EQ(launch(*again, kernel(*again, 0x10, "_Z4fillPfif"), kStreamA).record.thread_launch, 1u);
}

TEST_F(BreadcrumbTest, EachStreamGetsItsOwnSlotWhileSlotsLast) {
  auto engine = make("none", 256);
  engine->set_breadcrumbs(slots_, 2);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  Launch a = launch(*engine, fill, kStreamA);
  Launch a_again = launch(*engine, fill, kStreamA);
  Launch b = launch(*engine, fill, kStreamB);
  Launch c = launch(*engine, fill, reinterpret_cast<const void*>(0xc000));
  EXPECT_EQ(engine->launch_path().breadcrumb_slot(a), 0);
  EXPECT_EQ(engine->launch_path().breadcrumb_slot(a_again), 0);
  EXPECT_EQ(engine->launch_path().breadcrumb_slot(b), 1);
  EXPECT_EQ(engine->launch_path().breadcrumb_slot(c), -1);  // two slots, three streams
  auto without = make("none");
  Launch d = launch(*without, kernel(*without, 0x10, "_Z4fillPfif"), kStreamA);
  EXPECT_EQ(without->launch_path().breadcrumb_slot(d), -1);
}

// The fatal-signal path waits for a first error's record that another thread is still writing (the NCCL
// watchdog aborts while the thread that saw the error first names its suspects), and only for that long.
TEST_F(EngineTest, AFirstErrorRecordBeingWrittenIsWaitedFor) {
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  logger->set_pattern("%v");
  std::atomic<bool> describing{false};
  Engine engine(Config{}, logger, [&](ErrorCode) {
    describing = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // slow, as symbolizing libtorch can be
    return ErrorText{"cudaErrorAssert", "device-side assert triggered"};
  });
  EXPECT_TRUE(engine.wait_for_first_error_record(0));  // nothing being written
  std::thread first([&] {
    engine.observe_error("cudaStreamSynchronize", ErrorCode{Layer::Runtime, 710}, nullptr, false);
  });
  while (!describing) std::this_thread::yield();
  EXPECT_FALSE(engine.wait_for_first_error_record(10));  // still writing: gives up after 10 ms
  EXPECT_TRUE(engine.wait_for_first_error_record(5000));
  EXPECT_NE(log().find("first error: cudaErrorAssert"), std::string::npos) << log();
  first.join();
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
