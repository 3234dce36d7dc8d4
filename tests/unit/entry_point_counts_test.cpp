// Launches by entry point alone (src/pieces/entry_point_counts.h): each thread counts in words of its own
// (a load and a store, no atomic add), so the point of the piece is threads: threads counting at once lose
// none, past kMaxTallies words the rest count in a shared, atomic count, and an instance made where another
// was is not handed that one's cached words.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pieces/entry_point_counts.h"

namespace blockrun {
namespace {

using Totals = std::vector<std::pair<std::string, uint64_t>>;

// Entry points as the shim names them: constant strings, counted by their address.
const char* const kRuntime = "cudaLaunchKernel";
const char* const kStub = "__cudaLaunchKernel";
const char* const kDriver = "cuLaunchKernel";

TEST(EntryPointCounts, CountsEachEntryPointSortedByName) {
  EntryPointCounts counts;
  EXPECT_TRUE(counts.totals().empty());
  for (int i = 0; i < 3; ++i) counts.count(kRuntime);
  counts.count(kDriver);
  counts.count(kStub);
  counts.count(kStub);
  counts.count(nullptr);  // no entry point: not counted
  EXPECT_EQ(counts.totals(),
            (Totals{{"__cudaLaunchKernel", 2}, {"cuLaunchKernel", 1}, {"cudaLaunchKernel", 3}}));
}

// A thread keeps the words of a few entry points at hand; one cycling through more finds its own words again
// rather than losing or doubling counts.
TEST(EntryPointCounts, AThreadCyclingThroughManyEntryPointsCountsEachOnce) {
  static const char* const kApis[] = {"a", "b", "c", "d", "e", "f", "g"};
  EntryPointCounts counts;
  for (int round = 0; round < 10; ++round)
    for (const char* api : kApis) counts.count(api);
  Totals expected;
  for (const char* api : kApis) expected.emplace_back(api, 10);
  EXPECT_EQ(counts.totals(), expected);
}

// The words a thread keeps at hand belong to one instance: another made at the same address afterwards (a
// test's second engine) starts from nothing and counts into its own.
TEST(EntryPointCounts, AnInstanceMadeWhereAnotherWasStartsAfresh) {
  alignas(EntryPointCounts) unsigned char storage[sizeof(EntryPointCounts)];
  auto* first = new (storage) EntryPointCounts;
  first->count(kRuntime);
  first->count(kRuntime);
  EXPECT_EQ(first->totals(), (Totals{{"cudaLaunchKernel", 2}}));
  first->~EntryPointCounts();
  auto* second = new (storage) EntryPointCounts;
  ASSERT_EQ(static_cast<void*>(second), static_cast<void*>(first));
  second->count(kRuntime);
  EXPECT_EQ(second->totals(), (Totals{{"cudaLaunchKernel", 1}}));
  second->~EntryPointCounts();
}

// Two instances alive at once (two engines in one test), one thread counting into each in turn: each keeps
// its own counts.
TEST(EntryPointCounts, OneThreadCountingIntoTwoInstancesInTurnKeepsThemApart) {
  EntryPointCounts first, second;
  for (int i = 0; i < 5; ++i) {
    first.count(kRuntime);
    second.count(kRuntime);
    second.count(kRuntime);
  }
  EXPECT_EQ(first.totals(), (Totals{{"cudaLaunchKernel", 5}}));
  EXPECT_EQ(second.totals(), (Totals{{"cudaLaunchKernel", 10}}));
}

// Threads counting through one entry point at once, each in its own word: none of their launches is lost,
// and those of threads that have exited are still in the totals.
TEST(EntryPointCounts, ThreadsCountingAtOnceLoseNone) {
  constexpr int kThreads = 4;
  constexpr uint64_t kLaunches = 20000;
  EntryPointCounts counts;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counts] {
      for (uint64_t i = 0; i < kLaunches; ++i) counts.count(kRuntime);
      counts.count(kDriver);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counts.totals(),
            (Totals{{"cuLaunchKernel", kThreads}, {"cudaLaunchKernel", kThreads * kLaunches}}));
}

// Past kMaxTallies per-thread words (many short-lived launching threads) a thread's launches go to the entry
// point's shared count, which threads add to atomically: still none lost, whatever the threads interleave.
TEST(EntryPointCounts, PastTheWordsThreadsShareOneAtomicCount) {
  // Entry points of their own, one word each per thread: far fewer than the piece's table holds.
  constexpr int kApis = 64;
  static char names[kApis][8];
  for (int i = 0; i < kApis; ++i) std::snprintf(names[i], sizeof names[i], "api%02d", i);
  EntryPointCounts counts;
  // Threads one after another, each taking a word per entry point, until the words are spent.
  constexpr uint32_t kFillingThreads = EntryPointCounts::kMaxTallies / kApis;
  static_assert(EntryPointCounts::kMaxTallies % kApis == 0, "the filling threads spend the words exactly");
  for (uint32_t t = 0; t < kFillingThreads; ++t) {
    std::thread([&counts] {
      for (const auto& name : names) counts.count(name);
    }).join();
  }
  // Then threads at once, with no word left to them: all on the shared counts.
  constexpr int kThreads = 4;
  constexpr uint64_t kLaunches = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counts] {
      for (uint64_t i = 0; i < kLaunches; ++i) counts.count(names[0]);
      counts.count(names[1]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  Totals totals = counts.totals();
  ASSERT_EQ(totals.size(), static_cast<size_t>(kApis));
  EXPECT_EQ(totals[0], (std::pair<std::string, uint64_t>{"api00", kFillingThreads + kThreads * kLaunches}));
  EXPECT_EQ(totals[1], (std::pair<std::string, uint64_t>{"api01", kFillingThreads + kThreads}));
  for (int i = 2; i < kApis; ++i) EXPECT_EQ(totals[i].second, kFillingThreads) << totals[i].first;
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
