// The timeline (--trace) without any CUDA: the per-thread rings keep the newest entries and say how many they
// let go, and the engine's trace is one JSON document whose slices nest per thread, whose first error is
// marked where it surfaced, and whose arrows start in the slices of the launches the error was pinned to.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <dirent.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "engine.h"
#include "launch_path.h"
#include "report/output_file.h"
#include "report/report_file.h"
#include "trace/trace_recorder.h"
#include "trace/trace_writer.h"
#include "trace/tracer.h"

namespace blockrun {
namespace {

using nlohmann::json;
using trace::TraceEntry;
using trace::TraceRecorder;

const void* const kStreamA = reinterpret_cast<const void*>(0xa000);

// The sequences a recorder holds, by host thread number, and what each thread let go.
struct Held {
  std::map<uint32_t, std::vector<uint64_t>> sequences;
  std::map<uint32_t, uint64_t> dropped;
};

Held read_all(const TraceRecorder& recorder) {
  Held held;
  uint32_t thread = 0;
  recorder.for_each_thread(
      [&](const trace::ThreadEntries& entries) {
        thread = entries.thread;
        held.dropped[thread] = entries.dropped;
        held.sequences[thread];
      },
      [&](const TraceEntry& entry) { held.sequences[thread].push_back(entry.sequence); });
  return held;
}

TEST(TraceRecorder, KeepsTheNewestEntriesOfEachThreadAndCountsTheOlderOnes) {
  TraceRecorder recorder(2500);  // not a whole number of chunks: the last one is used in part
  TraceEntry entry;
  for (uint64_t i = 1; i <= 10000; ++i) {
    entry.sequence = i;
    recorder.record(entry, 1);
  }
  Held held = read_all(recorder);
  ASSERT_EQ(held.sequences.size(), 1u);
  const std::vector<uint64_t>& kept = held.sequences[1];
  ASSERT_EQ(kept.size(), 2500u);
  EXPECT_EQ(kept.front(), 7501u);
  EXPECT_EQ(kept.back(), 10000u);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  EXPECT_EQ(held.dropped[1], 7500u);
  EXPECT_EQ(recorder.dropped(), 7500u);
}

// Threads alive at once each keep their own (one that exited hands its ring on: the next test).
TEST(TraceRecorder, EachThreadKeepsItsOwnEntries) {
  TraceRecorder recorder(64);
  std::vector<std::thread> threads;
  std::atomic<int> recorded{0};
  for (uint32_t thread = 1; thread <= 4; ++thread) {
    threads.emplace_back([&recorder, &recorded, thread] {
      TraceEntry entry;
      for (uint64_t i = 1; i <= 100; ++i) {
        entry.sequence = thread * 1000 + i;
        recorder.record(entry, thread);
      }
      ++recorded;
      while (recorded < 4) std::this_thread::yield();
    });
  }
  for (std::thread& t : threads) t.join();
  Held held = read_all(recorder);
  ASSERT_EQ(held.sequences.size(), 4u);
  for (uint32_t thread = 1; thread <= 4; ++thread) {
    const std::vector<uint64_t>& kept = held.sequences[thread];
    ASSERT_EQ(kept.size(), 64u) << thread;
    EXPECT_EQ(kept.front(), thread * 1000 + 37) << thread;
    EXPECT_EQ(kept.back(), thread * 1000 + 100) << thread;
    EXPECT_EQ(held.dropped[thread], 36u);
  }
}

// Runs `body` in a thread of its own and returns once the kernel has ended that thread (join() returns a
// moment before: its id is still taken), as a thread of a pool that churns would have.
template <typename Body>
void in_a_thread_that_exits(Body body) {
  std::atomic<long> id{0};
  std::thread([&] {
    id = syscall(SYS_gettid);
    body();
  }).join();
  while (syscall(SYS_tgkill, getpid(), id.load(), 0) == 0) std::this_thread::yield();
}

// Threads 1..`threads`, one after another, each recording two entries (thread * 10 + 1 and + 2) and exiting.
void churn(TraceRecorder& recorder, uint32_t threads) {
  for (uint32_t thread = 1; thread <= threads; ++thread) {
    in_a_thread_that_exits([&recorder, thread] {
      TraceEntry entry;
      for (uint64_t i = 1; i <= 2; ++i) {
        entry.sequence = thread * 10 + i;
        recorder.record(entry, thread);
      }
    });
  }
}

// A program that starts thread after thread, each launching a little (a pool that churns), holds one ring,
// not one per thread it ever had (a 200 KiB chunk each: 3,000 threads took 614 MB): a thread that exited
// hands its ring to the next, whose entries follow its own, each under its own thread (issue 40, N3).
TEST(TraceRecorder, AThreadThatExitedHandsItsRingToTheNext) {
  TraceRecorder recorder(1000);
  churn(recorder, 100);
  EXPECT_EQ(recorder.rings(), 1u);
  Held held = read_all(recorder);
  ASSERT_EQ(held.sequences.size(), 100u);
  for (uint32_t thread = 1; thread <= 100; ++thread)
    EXPECT_EQ(held.sequences[thread], (std::vector<uint64_t>{thread * 10 + 1, thread * 10 + 2})) << thread;
  EXPECT_EQ(recorder.dropped(), 0u);
}

// A ring that passed between threads keeps its newest entries under the same bound, and the older ones are
// counted where its oldest kept thread starts.
TEST(TraceRecorder, APassedRingKeepsItsNewestEntriesUnderTheSameBound) {
  TraceRecorder recorder(10);
  churn(recorder, 20);
  EXPECT_EQ(recorder.rings(), 1u);
  std::vector<trace::ThreadEntries> begun;
  std::vector<uint64_t> kept;
  recorder.for_each_thread([&](const trace::ThreadEntries& entries) { begun.push_back(entries); },
                           [&](const TraceEntry& entry) { kept.push_back(entry.sequence); });
  ASSERT_EQ(begun.size(), 5u);  // threads 16 to 20, the newest 10 entries
  EXPECT_EQ(begun[0].thread, 16u);
  EXPECT_EQ(begun[0].dropped, 30u);
  EXPECT_TRUE(begun[0].inherited);
  EXPECT_EQ(begun[1].dropped, 0u);
  EXPECT_EQ(kept.size(), 10u);
  EXPECT_EQ(kept.front(), 161u);
  EXPECT_EQ(kept.back(), 202u);
  EXPECT_EQ(recorder.dropped(), 30u);
}

// A thread that found no ring (more threads alive at once than the recorder has rings for) has its entries
// counted among those left out, which the trace's `dropped_events` says (issue 40, N6).
TEST(TraceRecorder, EntriesOfAThreadWithoutARingAreCountedAsLeftOut) {
  TraceRecorder recorder(64, 1);
  std::atomic<bool> recorded{false}, done{false};
  std::thread holder([&] {
    TraceEntry entry;
    for (int i = 0; i < 3; ++i) recorder.record(entry, 1);
    recorded = true;
    while (!done) std::this_thread::yield();  // alive: its ring is not passed on
  });
  while (!recorded) std::this_thread::yield();
  std::thread([&] {
    TraceEntry entry;
    for (int i = 0; i < 5; ++i) recorder.record(entry, 2);
  }).join();
  done = true;
  holder.join();
  EXPECT_EQ(recorder.untracked(), 5u);
  EXPECT_EQ(recorder.dropped(), 5u);
  Held held = read_all(recorder);
  EXPECT_EQ(held.sequences.size(), 1u);
}

// Many threads alive at once, each launching more than its bound, are held to one total (16 rings' worth),
// not to a ring each (issue 40, N3: 500 live threads, each launching, held 500 rings of 13 MiB): rings stop
// growing where the total is spent and keep their newest entries in the chunks they have; threads that find
// no room are counted. Every entry is kept, let go by a bound, or counted as without a ring.
TEST(TraceRecorder, ThreadsAliveAtOnceShareOneTotal) {
  constexpr uint32_t kThreads = 40;
  constexpr uint64_t kEach = 3000;
  TraceRecorder recorder(1024);  // 16 x 1,024 entries in all: 16 chunks
  std::vector<std::thread> threads;
  std::atomic<uint32_t> recorded{0};
  for (uint32_t thread = 1; thread <= kThreads; ++thread) {
    threads.emplace_back([&recorder, &recorded, thread] {
      TraceEntry entry;
      for (uint64_t i = 1; i <= kEach; ++i) {
        entry.sequence = thread * 100000 + i;
        recorder.record(entry, thread);
      }
      ++recorded;
      while (recorded < kThreads) std::this_thread::yield();  // alive: no ring is handed on
    });
  }
  for (std::thread& t : threads) t.join();
  Held held = read_all(recorder);
  uint64_t kept = 0, let_go = 0;
  for (const auto& [thread, sequences] : held.sequences) {
    kept += sequences.size();
    let_go += held.dropped[thread];
    ASSERT_FALSE(sequences.empty()) << thread;
    // Its newest, in order, up to its last.
    EXPECT_EQ(sequences.back(), thread * 100000 + kEach) << thread;
    EXPECT_EQ(sequences.front(), thread * 100000 + kEach - sequences.size() + 1) << thread;
    EXPECT_TRUE(std::is_sorted(sequences.begin(), sequences.end())) << thread;
    EXPECT_EQ(held.dropped[thread], kEach - sequences.size()) << thread;
  }
  EXPECT_LE(kept, 16u * 1024u);
  EXPECT_LE(recorder.rings(), 16u);
  EXPECT_EQ(kept + let_go + recorder.untracked(), kThreads * kEach);
  EXPECT_EQ(recorder.dropped(), let_go + recorder.untracked());
}

// A recorder's memory is its total, whatever the threads do; a thread that starts launching after others grew
// their rings still gets one (a quarter of the total is kept for first chunks).
TEST(TraceRecorder, TheTotalBoundsTheMemoryAndLeavesRoomForLaterThreads) {
  TraceRecorder recorder(8192, TraceRecorder::kMaxThreads, 8 * 1024);
  EXPECT_EQ(recorder.total(), 8u * 1024u);
  std::atomic<bool> grown{false}, done{false};
  std::thread early([&] {
    TraceEntry entry;
    for (uint64_t i = 1; i <= 20000; ++i) {
      entry.sequence = i;
      recorder.record(entry, 1);
    }
    grown = true;
    while (!done) std::this_thread::yield();
  });
  while (!grown) std::this_thread::yield();
  // Grown to three quarters of the total, then wrapped: its newest 6,143 (a spare slot).
  EXPECT_EQ(recorder.entries_allocated(), 6u * 1024u);
  std::thread late([&] {
    TraceEntry entry;
    for (uint64_t i = 1; i <= 5000; ++i) {
      entry.sequence = 100000 + i;
      recorder.record(entry, 2);
    }
  });
  late.join();
  done = true;
  early.join();
  EXPECT_LE(recorder.entries_allocated(), recorder.total());
  Held held = read_all(recorder);
  ASSERT_EQ(held.sequences[1].size(), 6143u);
  EXPECT_EQ(held.sequences[1].front(), 20000u - 6143u + 1u);
  EXPECT_EQ(held.sequences[1].back(), 20000u);
  ASSERT_FALSE(held.sequences[2].empty());
  EXPECT_EQ(held.sequences[2].back(), 105000u);
  EXPECT_EQ(held.sequences[2].size() + held.dropped[2], 5000u);
}

// The fatal-signal handler reads the rings while other threads still record: an entry their thread overwrote
// during the copy is left out, never read torn (each entry's three fields agree).
TEST(TraceRecorder, AReaderLeavesOutWhatItsThreadOverwroteMeanwhile) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the reader's copy races with the writer by design (a sequence lock's reader); "
                  "ThreadSanitizer reports that race";
#endif
  TraceRecorder recorder(64);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    TraceEntry entry;
    for (uint64_t i = 1; i <= 2'000'000; ++i) {
      entry.sequence = entry.began_ns = entry.ended_ns = i;
      recorder.record(entry, 1);
    }
    done = true;
  });
  uint64_t reads = 0, torn = 0;
  while (!done) {
    uint64_t last = 0;
    recorder.for_each_thread(
        [](const trace::ThreadEntries&) {},
        [&](const TraceEntry& entry) {
          if (entry.began_ns != entry.sequence || entry.ended_ns != entry.sequence || entry.sequence <= last)
            ++torn;
          last = entry.sequence;
        });
    ++reads;
  }
  writer.join();
  EXPECT_GT(reads, 0u);
  EXPECT_EQ(torn, 0u);
}

// A slice as the checks below read it: its track and its span in nanoseconds.
struct Slice {
  int64_t pid, tid;
  int64_t begin, end;
  json event;
};

int64_t nanoseconds(const json& microseconds) {
  return static_cast<int64_t>(std::llround(microseconds.get<double>() * 1000));
}

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "blockrun_trace_XXXXXX";
    directory_ = mkdtemp(pattern.data());
    path_ = directory_ + "/trace.json";
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(directory_.c_str());
  }

  std::unique_ptr<Engine> make(const char* policy, size_t events_per_thread = 65536) {
    Config config;
    std::string error;
    config.block = *Policy::parse(policy, &error);
    config.trace = path_;
    config.trace_events = events_per_thread;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    auto logger = std::make_shared<spdlog::logger>("test", sink);
    logger->set_pattern("%v");
    auto engine = std::make_unique<Engine>(config, logger, [](ErrorCode code) {
      if (code.code == 700)
        return ErrorText{"cudaErrorIllegalAddress", "an illegal memory access was encountered"};
      return ErrorText{"error " + std::to_string(code.code), "?"};
    });
    std::string problem;
    std::unique_ptr<OutputFile> file = OutputFile::open(path_, false, &problem);
    EXPECT_TRUE(file) << problem;
    engine->set_trace_file(std::move(file), path_);
    ProcessInfo process;
    process.pid = 4242;
    process.name = "app";
    engine->start(process, nullptr, nullptr);
    return engine;
  }

  const KernelInfo* kernel(Engine& engine, uintptr_t handle, const char* mangled) {
    return engine.launch_path().kernel(reinterpret_cast<const void*>(handle), [=] { return mangled; });
  }

  Launch begin(Engine& engine, const KernelInfo* kernel) {
    LaunchRequest request;
    request.api = "cudaLaunchKernel";
    request.kernel = kernel;
    request.stream = kStreamA;
    request.grid = {4096, 1, 1};
    request.block = {256, 1, 1};
    return engine.launch_path().begin_launch(request);
  }

  // A launch that was blocked: its wait began after the launch call, and the synchronize returned `result`.
  void blocked(Engine& engine, const KernelInfo* kernel, ErrorCode result, int64_t gpu_ns = -1) {
    Launch launch = begin(engine, kernel);
    launch.wait_began_ns = steady_now_ns();
    launch.timing.gpu_ns = gpu_ns;
    // The wait takes longer than the GPU time (as it must: the kernel ran within it).
    uint64_t until = launch.wait_began_ns + (gpu_ns > 0 ? 2 * static_cast<uint64_t>(gpu_ns) : 1000);
    while (steady_now_ns() < until) {
    }
    engine.end_launch(launch, ErrorCode{}, BlockOutcome::Synchronized, result, "cudaStreamSynchronize");
  }

  void launched(Engine& engine, const KernelInfo* kernel) {
    Launch launch = begin(engine, kernel);
    engine.end_launch(launch, ErrorCode{}, BlockOutcome::NotBlocked, ErrorCode{}, nullptr);
  }

  json written(Engine& engine) {
    engine.finish();
    std::ifstream file(path_);
    std::stringstream text;
    text << file.rdbuf();
    text_ = text.str();
    return json::parse(text_);  // throws, failing the test, where the trace is not JSON
  }

  static std::vector<Slice> slices(const json& trace) {
    std::vector<Slice> found;
    for (const json& event : trace["traceEvents"])
      if (event["ph"] == "X")
        found.push_back({event["pid"], event["tid"], nanoseconds(event["ts"]),
                         nanoseconds(event["ts"]) + nanoseconds(event["dur"]), event});
    return found;
  }

  // On each track, a slice that begins inside another ends inside it.
  static void expect_nested(const json& trace) {
    std::map<std::pair<int64_t, int64_t>, std::vector<Slice>> tracks;
    for (Slice& slice : slices(trace)) tracks[{slice.pid, slice.tid}].push_back(slice);
    for (auto& [track, list] : tracks) {
      std::sort(list.begin(), list.end(), [](const Slice& a, const Slice& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
      });
      std::vector<const Slice*> open;
      for (const Slice& slice : list) {
        while (!open.empty() && (open.back()->end < slice.begin ||
                                 (open.back()->end == slice.begin && slice.end > slice.begin)))
          open.pop_back();
        if (!open.empty())
          EXPECT_LE(slice.end, open.back()->end)
              << slice.event.dump() << " overlaps " << open.back()->event.dump();
        open.push_back(&slice);
      }
    }
  }

  // The innermost slice of track (pid, tid) that holds `at`.
  static const Slice* enclosing(const std::vector<Slice>& all, int64_t pid, int64_t tid, int64_t at) {
    const Slice* found = nullptr;
    for (const Slice& slice : all)
      if (slice.pid == pid && slice.tid == tid && slice.begin <= at && at <= slice.end &&
          (!found || slice.end - slice.begin < found->end - found->begin))
        found = &slice;
    return found;
  }

  struct Arrow {
    const Slice* from = nullptr;
    const Slice* to = nullptr;
  };
  // Each flow arrow named `name`, by the slices its two ends bind to.
  static std::vector<Arrow> arrows(const json& trace, const std::vector<Slice>& all,
                                   const std::string& name) {
    std::map<int64_t, Arrow> by_id;
    for (const json& event : trace["traceEvents"]) {
      if ((event["ph"] != "s" && event["ph"] != "f") || event["name"] != name) continue;
      const Slice* bound = enclosing(all, event["pid"], event["tid"], nanoseconds(event["ts"]));
      EXPECT_NE(bound, nullptr) << event.dump();
      Arrow& arrow = by_id[event["id"].get<int64_t>()];
      (event["ph"] == "s" ? arrow.from : arrow.to) = bound;
    }
    std::vector<Arrow> found;
    for (auto& [id, arrow] : by_id) found.push_back(arrow);
    return found;
  }

  static std::vector<json> events(const json& trace, const char* phase, const char* category) {
    std::vector<json> found;
    for (const json& event : trace["traceEvents"])
      if (event["ph"] == phase && event.value("cat", "") == category) found.push_back(event);
    return found;
  }

  std::string directory_, path_, text_;
  std::ostringstream log_;
};

TEST_F(TraceTest, ABlockedCulpritIsMarkedAndItsArrowStartsInItsSlice) {
  auto engine = make("all");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfPKfix");
  blocked(*engine, fill, ErrorCode{});
  blocked(*engine, stencil, ErrorCode{});
  blocked(*engine, fill, ErrorCode{});
  blocked(*engine, stencil, ErrorCode{Layer::Runtime, 700});
  json trace = written(*engine);
  expect_nested(trace);
  std::vector<Slice> all = slices(trace);

  // Every launch is a slice of host thread 1 with its launch number and NAME#N; each blocked one holds its
  // blocking wait.
  std::vector<const Slice*> launches, waits;
  for (const Slice& slice : all) (slice.event["cat"] == "blocking wait" ? waits : launches).push_back(&slice);
  ASSERT_EQ(launches.size(), 4u);
  ASSERT_EQ(waits.size(), 4u);
  EXPECT_EQ(launches[3]->event["name"], "stencil(float*, float const*, int, long long)");
  EXPECT_EQ(launches[3]->event["args"]["kernel_launch"], "stencil#2");
  EXPECT_EQ(launches[3]->event["args"]["configuration"], "<<<(4096,1,1), (256,1,1), 0, 0xa000>>>");
  EXPECT_EQ(launches[3]->event["args"]["outcome"], "blocked, failed");
  EXPECT_EQ(launches[3]->event["args"]["result"], "cudaErrorIllegalAddress");
  EXPECT_EQ(launches[3]->event["args"]["verdict"], "the first error's culprit (exact)");
  // No other launch is called anything.
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(launches[i]->event["args"].contains("verdict")) << i;

  std::vector<json> marks = events(trace, "i", "error");
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0]["name"], "first error: cudaErrorIllegalAddress at cudaStreamSynchronize");
  EXPECT_EQ(marks[0]["args"]["certainty"], "exact");
  EXPECT_EQ(marks[0]["args"]["method"], "blocking");
  EXPECT_EQ(marks[0]["args"]["culprit"], "stencil#2, launch #4");
  std::vector<Arrow> culprit = arrows(trace, all, "culprit");
  ASSERT_EQ(culprit.size(), 1u);
  ASSERT_TRUE(culprit[0].from && culprit[0].to);
  EXPECT_EQ(culprit[0].from->event["args"]["launch"], 4);
  EXPECT_EQ(culprit[0].from->event["cat"], "blocked launch");  // its slice, not its wait
  // It surfaced in the culprit's own blocking wait.
  EXPECT_EQ(culprit[0].to->event["cat"], "blocking wait");
  EXPECT_EQ(culprit[0].to->event["args"]["launch"], 4);
}

TEST_F(TraceTest, AnErrorAtASynchronizeIsMarkedThereWithArrowsFromEverySuspect) {
  auto engine = make("none");
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfPKfix");
  launched(*engine, fill);
  launched(*engine, stencil);
  CallSpan span;
  span.began_ns = steady_now_ns();
  span.returned_ns = steady_now_ns();
  span.own_slice = true;
  engine->end_sync("cudaDeviceSynchronize", true, nullptr, false, engine->launch_path().begin_sync(),
                   ErrorCode{Layer::Runtime, 700}, span);
  json trace = written(*engine);
  expect_nested(trace);
  std::vector<Slice> all = slices(trace);
  const Slice* sync = nullptr;
  for (const Slice& slice : all)
    if (slice.event["cat"] == "synchronize") sync = &slice;
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->event["name"], "cudaDeviceSynchronize");
  EXPECT_EQ(sync->event["args"]["stream"], "the whole device");
  EXPECT_EQ(sync->event["args"]["result"], "cudaErrorIllegalAddress");
  EXPECT_TRUE(arrows(trace, all, "culprit").empty());  // nothing is pinned: no culprit
  std::vector<Arrow> suspects = arrows(trace, all, "suspect");
  ASSERT_EQ(suspects.size(), 2u);
  for (const Arrow& arrow : suspects) {
    ASSERT_TRUE(arrow.from && arrow.to);
    EXPECT_EQ(arrow.to, sync);
    EXPECT_EQ(arrow.from->event["args"]["verdict"],
              "a suspect of the first error: not known to have completed when it surfaced");
  }
  std::vector<json> marks = events(trace, "i", "error");
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0]["args"]["certainty"], "suspects");
  EXPECT_EQ(marks[0]["args"]["method"], "host");
}

// An error that surfaced at a call with no slice of its own (an allocation): the call gets one, for the
// arrows to end in.
TEST_F(TraceTest, AnErrorAtACallWithoutASliceGetsOne) {
  auto engine = make("none");
  launched(*engine, kernel(*engine, 0x10, "_Z4fillPfif"));
  CallSpan span;
  span.began_ns = steady_now_ns();
  span.returned_ns = span.began_ns + 1500;
  engine->watch_error("cudaMalloc", ErrorCode{Layer::Runtime, 700}, nullptr, false, span);
  json trace = written(*engine);
  expect_nested(trace);
  std::vector<Slice> all = slices(trace);
  std::vector<Arrow> suspects = arrows(trace, all, "suspect");
  ASSERT_EQ(suspects.size(), 1u);
  ASSERT_TRUE(suspects[0].to);
  EXPECT_EQ(suspects[0].to->event["name"], "cudaMalloc");
  EXPECT_EQ(suspects[0].to->event["cat"], "error");
  EXPECT_EQ(suspects[0].to->end - suspects[0].to->begin, 1500);
}

TEST_F(TraceTest, ABlockedLaunchTimedOnTheGpuHasASpanOnItsStreamsTrack) {
  auto engine = make("stencil");
  const KernelInfo* stencil = kernel(*engine, 0x20, "_Z7stencilPfPKfix");
  blocked(*engine, stencil, ErrorCode{}, 5000);
  json trace = written(*engine);
  std::vector<Slice> all = slices(trace);
  std::vector<json> gpu = events(trace, "X", "gpu");
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0]["tid"], trace::kStreamTrackBase);
  EXPECT_EQ(nanoseconds(gpu[0]["dur"]), 5000);
  EXPECT_EQ(gpu[0]["args"]["gpu_us"], 5.0);
  // It ends where the launch's slice ends (when the blocking wait saw the stream complete).
  const Slice* launch = nullptr;
  for (const Slice& slice : all)
    if (slice.event["cat"] == "blocked launch") launch = &slice;
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(nanoseconds(gpu[0]["ts"]) + 5000, launch->end);
  bool named = false;
  for (const json& event : trace["traceEvents"])
    if (event["ph"] == "M" && event["name"] == "thread_name" && event["tid"] == trace::kStreamTrackBase)
      named = event["args"]["name"] == "stream 0xa000 (GPU time of blocked launches)";
  EXPECT_TRUE(named);
}

TEST_F(TraceTest, ALibraryCallHoldsTheKernelsItLaunched) {
  auto engine = make("none");
  const KernelInfo* gemm = kernel(*engine, 0x30, "_Z9sgemm_nn1Pf");
  CallSpan span;
  span.began_ns = steady_now_ns();
  LaunchRequest request;
  request.api = "cuLaunchKernel";
  request.kernel = gemm;
  request.library_api = "cublasSgemm_v2";
  request.library = LibraryCall{'N', 'N', 512, 512, 512, 0};
  for (int i = 0; i < 2; ++i) {
    Launch launch = engine->launch_path().begin_launch(request);
    engine->end_launch(launch, ErrorCode{}, BlockOutcome::NotBlocked, ErrorCode{}, nullptr);
  }
  span.returned_ns = steady_now_ns();
  engine->note_library_call("cublasSgemm_v2", request.library, nullptr, span);
  json trace = written(*engine);
  expect_nested(trace);
  std::vector<Slice> all = slices(trace);
  ASSERT_EQ(all.size(), 3u);
  std::vector<json> calls = events(trace, "X", "library call");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["args"]["library_call"], "cublasSgemm_v2 m=512 n=512 k=512 transa=N transb=N");
  for (const Slice& slice : all) {
    if (slice.event["cat"] != "launch") continue;
    const Slice* outer = nullptr;
    for (const Slice& other : all)
      if (other.event["cat"] == "library call") outer = &other;
    EXPECT_LE(outer->begin, slice.begin);
    EXPECT_GE(outer->end, slice.end);
  }
}

TEST_F(TraceTest, TheBoundKeepsTheNewestLaunchesAndSaysHowManyWereLeftOut) {
  auto engine = make("none", 100);
  const KernelInfo* fill = kernel(*engine, 0x10, "_Z4fillPfif");
  for (int i = 0; i < 10000; ++i) launched(*engine, fill);
  json trace = written(*engine);
  EXPECT_EQ(trace["otherData"]["dropped_events"], 9900);
  EXPECT_EQ(trace["otherData"]["events_per_thread"], 100);
  std::vector<Slice> all = slices(trace);
  ASSERT_EQ(all.size(), 100u);
  EXPECT_EQ(all.front().event["args"]["launch"], 9901);
  EXPECT_EQ(all.back().event["args"]["launch"], 10000);
  std::vector<json> notes = events(trace, "i", "trace");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0]["name"], "the trace leaves out this thread's first 9900 launches and calls");
  EXPECT_EQ(notes[0]["args"]["detail"], "it keeps the newest 100 of each thread (--trace-events)");
  EXPECT_LT(text_.size(), 100u * 400);  // a few hundred bytes a launch, however many launched
  EXPECT_NE(
      log_.str().find("trace: 100 launches and calls of 1 thread written to " + path_ +
                      " (open it in ui.perfetto.dev or chrome://tracing); the first 9900 were left out: "
                      "it keeps the newest 100 of each thread (--trace-events)\n"),
      std::string::npos)
      << log_.str();
}

// The trace and the log say what threads without a ring launched (issue 40, N6): `dropped_events` counts them
// with the rest, `dropped_threads_without_buffer` alone.
TEST_F(TraceTest, WhatThreadsWithoutABufferLaunchedIsCountedInTheTraceAndTheLog) {
  std::string problem;
  trace::Tracer tracer(64, OutputFile::open(path_, false, &problem), path_, 1);
  std::atomic<bool> recorded{false}, done{false};
  std::thread holder([&] {
    TraceEntry entry;
    entry.began_ns = entry.ended_ns = steady_now_ns();
    for (int i = 0; i < 3; ++i) tracer.record(entry, 1);
    recorded = true;
    while (!done) std::this_thread::yield();
  });
  while (!recorded) std::this_thread::yield();
  std::thread([&] {
    TraceEntry entry;
    for (int i = 0; i < 5; ++i) tracer.record(entry, 2);
  }).join();
  trace::TraceWritten written = tracer.write();
  done = true;
  holder.join();
  ASSERT_TRUE(written.written);
  std::ifstream file(path_);
  json trace = json::parse(file);
  EXPECT_EQ(trace["otherData"]["dropped_events"], 5);
  EXPECT_EQ(trace["otherData"]["dropped_threads_without_buffer"], 5);
  EXPECT_EQ(slices(trace).size(), 3u);
  trace::WrittenLine line;
  trace::written_line(line, path_.c_str(), written, 64);
  EXPECT_NE(std::string(line.text, line.size)
                .find("; 5 of threads that found no buffer were left out (at most 4096 threads alive at "
                      "once have one, and all buffers together keep at most 975)"),
            std::string::npos)
      << line.text;
}

// Written into a file beside it and renamed into place: the trace's directory holds the trace alone after
// (issue 40, N5).
TEST_F(TraceTest, TheTraceIsWrittenBesideAndRenamedIntoPlace) {
  auto engine = make("none");
  launched(*engine, kernel(*engine, 0x10, "_Z4fillPfif"));
  json trace = written(*engine);
  EXPECT_EQ(slices(trace).size(), 1u);
  EXPECT_EQ(trace["otherData"]["dropped_events"], 0);
  std::vector<std::string> names;
  if (DIR* directory = opendir(directory_.c_str())) {
    while (dirent* entry = readdir(directory))
      if (entry->d_name[0] != '.') names.push_back(entry->d_name);
    closedir(directory);
  }
  EXPECT_EQ(names, std::vector<std::string>{"trace.json"});
}

// The file was opened at the first CUDA call: it is a JSON document at exit even where nothing was launched.
TEST_F(TraceTest, AProcessThatLaunchedNothingStillWritesADocument) {
  auto engine = make("none");
  CallSpan span;
  span.began_ns = steady_now_ns();
  span.returned_ns = span.began_ns + 700;
  span.own_slice = true;
  engine->end_sync("cudaMemcpy", false, nullptr, false, engine->launch_path().begin_sync(), ErrorCode{},
                   span);
  json trace = written(*engine);
  std::vector<Slice> all = slices(trace);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].event["name"], "cudaMemcpy");
  EXPECT_EQ(all[0].event["cat"], "synchronize");
  EXPECT_EQ(all[0].end - all[0].begin, 700);
}

TEST_F(TraceTest, AnyKernelNameMakesValidJson) {
  auto engine = make("none");
  // A quote, a backslash, a control byte and bytes that are not UTF-8, as a JIT may name a kernel.
  launched(*engine, kernel(*engine, 0x10, "odd\"name\\with\x01tab\tand\xff\xfe bytes"));
  json trace = written(*engine);
  std::vector<Slice> all = slices(trace);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].event["name"], "odd\"name\\withtaband\xef\xbf\xbd\xef\xbf\xbd bytes");
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
