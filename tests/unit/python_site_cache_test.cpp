// The cache of launches' Python lines by the words of their frames (src/callsites/python_site_cache.h): a
// walk seen before gives the numbers its full read gave, one that differs in a frame the choice looked at
// does not, a full bucket or site table never gives a wrong line, and threads remembering and finding at once
// never read an entry half written.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <initializer_list>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "callsites/python_site_cache.h"
#include "callsites/sites.h"

namespace blockrun {
namespace {

constexpr const char* kTorch = "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py";
constexpr const char* kModule = "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py";

struct FakeFrame {
  const char* file;
  int line;
  uint64_t code;      // the code object's "address"
  uint64_t identity;  // what tells it from another code object at its address
};

// A walk as the shim would read it: the full read (frames kept as the shim keeps them, no gap here) and the
// key of the same frames, with the end marker where the stack ends there.
struct Walk {
  PythonStack stack;
  PythonWalkKey key;
};

Walk walk(std::initializer_list<FakeFrame> frames, bool ends = true) {
  Walk made;
  made.stack.status = PythonStatus::Captured;
  for (const FakeFrame& frame : frames) {
    PythonFrame& kept = made.stack.frames[made.stack.count++];
    std::snprintf(kept.file, sizeof kept.file, "%s", frame.file);
    std::snprintf(kept.function, sizeof kept.function, "f%d", frame.line);
    kept.line = frame.line;
    made.key.add_frame(frame.code, frame.identity << 32 | static_cast<uint64_t>(frame.line) * 2);
  }
  if (ends) made.key.add_end();
  return made;
}

// The key's first `frames` frames, as a lookup walk builds it.
PythonWalkKey prefix(const PythonWalkKey& key, size_t frames) {
  PythonWalkKey made;
  for (size_t i = 0; i < frames; ++i) {
    const uint64_t* words = key.words() + i * PythonWalkKey::kWordsPerFrame;
    made.add_frame(words[0], words[1]);
  }
  return made;
}

// What the shim does: the first prefix the cache knows.
bool look_up(const PythonSiteCache& cache, const PythonWalkKey& key, PythonLaunchSite* out) {
  for (size_t frames = 1; frames <= key.frames(); ++frames) {
    if (cache.find(prefix(key, frames), out)) return true;
  }
  return false;
}

TEST(PythonSiteCache, AWalkSeenBeforeGivesTheNumbersOfItsFullRead) {
  PythonSiteTable sites(64);
  PythonSiteCache cache(sites, 64);
  Walk launch = walk({{kTorch, 125, 0x1000, 1},
                      {kModule, 1527, 0x2000, 2},
                      {"/home/me/model.py", 40, 0x3000, 3},
                      {"/home/me/train.py", 12, 0x4000, 4},
                      {"/home/me/train.py", 90, 0x5000, 5}});
  PythonLaunchSite found;
  EXPECT_FALSE(look_up(cache, launch.key, &found)) << "nothing remembered yet";
  PythonLaunchSite kept = cache.keep(launch.stack, &launch.key);
  EXPECT_EQ(kept.status, PythonStatus::Captured);
  EXPECT_FALSE(kept.cached);
  ASSERT_NE(kept.site, 0u);
  ASSERT_NE(kept.innermost, 0u);
  EXPECT_EQ(sites.get(kept.site)->line, 40);
  EXPECT_STREQ(sites.get(kept.site)->file, "/home/me/model.py");
  EXPECT_EQ(sites.get(kept.innermost)->line, 125);

  // The choice looked at 4 frames (model.py and its caller): remembered under those, found by the same 4.
  for (size_t frames = 1; frames <= launch.key.frames(); ++frames) {
    EXPECT_EQ(cache.find(prefix(launch.key, frames), &found), frames == 4) << frames << " frames";
  }
  ASSERT_TRUE(look_up(cache, launch.key, &found));
  EXPECT_EQ(found.status, PythonStatus::Captured);
  EXPECT_TRUE(found.cached);
  EXPECT_EQ(found.site, kept.site);
  EXPECT_EQ(found.innermost, kept.innermost);

  // Called from elsewhere further out: the same line, from the cache.
  Walk elsewhere = walk({{kTorch, 125, 0x1000, 1},
                         {kModule, 1527, 0x2000, 2},
                         {"/home/me/model.py", 40, 0x3000, 3},
                         {"/home/me/train.py", 12, 0x4000, 4},
                         {"/home/me/eval.py", 7, 0x6000, 6}});
  ASSERT_TRUE(look_up(cache, elsewhere.key, &found));
  EXPECT_EQ(found.site, kept.site);
}

TEST(PythonSiteCache, AnotherLineOrCodeObjectInAFrameTheChoiceLookedAtIsNotFound) {
  PythonSiteTable sites(64);
  PythonSiteCache cache(sites, 64);
  Walk launch = walk(
      {{kTorch, 125, 0x1000, 1}, {"/home/me/model.py", 40, 0x3000, 3}, {"/home/me/train.py", 12, 0x4000, 4}});
  cache.keep(launch.stack, &launch.key);
  PythonLaunchSite found;
  ASSERT_TRUE(look_up(cache, launch.key, &found));
  // Each differs from the launch in one word of a frame the choice looked at.
  const std::vector<std::pair<const char*, Walk>> others = {
      {"another line of the program's frame (another instruction)",
       walk({{kTorch, 125, 0x1000, 1},
             {"/home/me/model.py", 41, 0x3000, 3},
             {"/home/me/train.py", 12, 0x4000, 4}})},
      {"another line of the innermost frame", walk({{kTorch, 126, 0x1000, 1},
                                                    {"/home/me/model.py", 40, 0x3000, 3},
                                                    {"/home/me/train.py", 12, 0x4000, 4}})},
      {"the program's code object freed and another made at its address: the same code word, another "
       "identity",
       walk({{kTorch, 125, 0x1000, 1},
             {"/home/me/model.py", 40, 0x3000, 33},
             {"/home/me/train.py", 12, 0x4000, 4}})},
      {"the same for the innermost frame's code object", walk({{kTorch, 125, 0x1000, 11},
                                                               {"/home/me/model.py", 40, 0x3000, 3},
                                                               {"/home/me/train.py", 12, 0x4000, 4}})},
      {"another line of the caller the choice looked at (is it Dynamo's?)",
       walk({{kTorch, 125, 0x1000, 1},
             {"/home/me/model.py", 40, 0x3000, 3},
             {"/home/me/train.py", 13, 0x4000, 4}})},
  };
  for (const auto& [what, other] : others) EXPECT_FALSE(look_up(cache, other.key, &found)) << what;
}

TEST(PythonSiteCache, WhereTheEndOfTheStackMatteredTheKeyMustEndThere) {
  PythonSiteTable sites(64);
  PythonSiteCache cache(sites, 64);
  // The program's frame is the outermost: remembered with the end marker.
  Walk outermost = walk({{kTorch, 125, 0x1000, 1}, {"/home/me/train.py", 12, 0x4000, 4}});
  cache.keep(outermost.stack, &outermost.key);
  PythonLaunchSite found;
  EXPECT_FALSE(cache.find(prefix(outermost.key, 2), &found)) << "not without the end marker";
  ASSERT_TRUE(cache.find(outermost.key, &found));
  EXPECT_EQ(sites.get(found.site)->line, 12);
  // The same frames with a caller: the caller may be Dynamo's, so the key above must not be taken for it.
  Walk called = walk(
      {{kTorch, 125, 0x1000, 1}, {"/home/me/train.py", 12, 0x4000, 4}, {"/home/me/main.py", 3, 0x5000, 5}});
  EXPECT_FALSE(look_up(cache, called.key, &found));
  // A walk that stopped before the end it needed (the key full, or the lookup's walk bounded) is not
  // remembered.
  Walk unended = walk({{"/usr/lib/python3.12/threading.py", 1, 0x7000, 7}}, /*ends=*/false);
  PythonLaunchSite kept = cache.keep(unended.stack, &unended.key);
  EXPECT_NE(kept.site, 0u) << "the line is still given";
  EXPECT_FALSE(look_up(cache, unended.key, &found));
  // Nor one whose key ends before the frames the choice looked at (not the same walk).
  PythonWalkKey early;
  early.add_frame(0x1000, uint64_t{1} << 32 | 250);
  early.add_end();
  early.add_frame(0x4000, uint64_t{4} << 32 | 24);
  cache.keep(outermost.stack, &early);
  EXPECT_FALSE(cache.find(early, &found));
}

TEST(PythonSiteCache, NoKeyOrAReadThatWasNotCapturedIsNotRemembered) {
  PythonSiteTable sites(64);
  PythonSiteCache cache(sites, 64);
  Walk launch = walk({{"/home/me/train.py", 12, 0x4000, 4}});
  PythonLaunchSite kept = cache.keep(launch.stack, nullptr);
  EXPECT_EQ(sites.get(kept.site)->line, 12);
  PythonLaunchSite found;
  EXPECT_FALSE(look_up(cache, launch.key, &found));
  launch.stack.status = PythonStatus::Unavailable;
  kept = cache.keep(launch.stack, &launch.key);
  EXPECT_EQ(kept.status, PythonStatus::Unavailable);
  EXPECT_EQ(kept.site, 0u);
  EXPECT_FALSE(look_up(cache, launch.key, &found));
}

TEST(PythonSiteCache, AFullSiteTableIsNotRememberedSoItIsCountedEachTime) {
  PythonSiteTable sites(1);
  PythonSiteCache cache(sites, 64);
  Walk first = walk({{"/home/me/train.py", 12, 0x4000, 4}});
  EXPECT_NE(cache.keep(first.stack, &first.key).site, 0u);
  Walk second = walk({{"/home/me/train.py", 13, 0x4000, 4}});
  for (int launch = 0; launch < 3; ++launch) {
    PythonLaunchSite found;
    EXPECT_FALSE(look_up(cache, second.key, &found));
    PythonLaunchSite kept = cache.keep(second.stack, &second.key);
    EXPECT_EQ(kept.status, PythonStatus::Captured);
    EXPECT_EQ(kept.site, 0u) << "line not kept, never another's";
  }
  EXPECT_EQ(sites.dropped(), 3u);
}

TEST(PythonSiteCache, WalksSharingABucketReplaceEachOtherButNeverAnswerForEachOther) {
  PythonSiteTable sites(256);
  PythonSiteCache cache(sites, PythonSiteCache::kWays);  // one bucket: every walk collides
  std::vector<Walk> walks;
  for (int line = 1; line <= 12; ++line) walks.push_back(walk({{"/home/me/train.py", line, 0x4000, 4}}));
  std::vector<uint32_t> numbers;
  for (Walk& launch : walks) numbers.push_back(cache.keep(launch.stack, &launch.key).site);
  int found_count = 0;
  for (size_t i = 0; i < walks.size(); ++i) {
    PythonLaunchSite found;
    if (!look_up(cache, walks[i].key, &found)) continue;
    ++found_count;
    EXPECT_EQ(found.site, numbers[i]) << "walk " << i;
  }
  constexpr size_t kWays = PythonSiteCache::kWays;
  EXPECT_EQ(found_count, static_cast<int>(kWays)) << "the bucket's entries hold the last walks";
  for (size_t i = walks.size() - kWays; i < walks.size(); ++i) {
    PythonLaunchSite found;
    EXPECT_TRUE(look_up(cache, walks[i].key, &found)) << "walk " << i;
  }
  // Remembering a walk already there takes no other entry.
  cache.keep(walks.back().stack, &walks.back().key);
  for (size_t i = walks.size() - kWays; i < walks.size(); ++i) {
    PythonLaunchSite found;
    EXPECT_TRUE(look_up(cache, walks[i].key, &found)) << "walk " << i;
  }
}

TEST(PythonSiteCache, KeysCoverTheBoundedWalkAndChoicesNeedingMoreFramesAreNotRemembered) {
  PythonSiteTable sites(64);
  PythonSiteCache cache(sites, 64);
  PythonWalkKey key;
  for (size_t i = 0; i < PythonWalkKey::kMaxFrames; ++i) EXPECT_TRUE(key.add_frame(0x1000 + 8 * i, 2));
  EXPECT_FALSE(key.add_frame(0x9000, 2));
  EXPECT_FALSE(key.add_end());
  EXPECT_EQ(key.frames(), PythonWalkKey::kMaxFrames);
  EXPECT_EQ(PythonWalkKey::kMaxFrames, kMaxPythonFramesScanned + 1)
      << "every frame the walk reads, and the end";
  // None of the program's in more frames than a walk reads (not a stack the shim gives): the choice needs the
  // end, which the key does not reach.
  Walk deep;
  deep.stack.status = PythonStatus::Captured;
  for (size_t i = 0; i < kPythonInnermostKept; ++i) {
    PythonFrame& frame = deep.stack.frames[deep.stack.count++];
    std::snprintf(frame.file, sizeof frame.file, "%s", kTorch);
    frame.function[0] = '\0';
    frame.line = 1;
  }
  deep.stack.skipped = static_cast<uint8_t>(PythonWalkKey::kMaxFrames);
  deep.stack.skipped_at = static_cast<uint8_t>(kPythonInnermostKept);
  EXPECT_NE(cache.keep(deep.stack, &key).site, 0u);
  PythonLaunchSite found;
  EXPECT_FALSE(look_up(cache, key, &found));
  // The program's frame as the last the walk reads (the 64th, after 59 passed over): remembered.
  Walk bound = deep;
  bound.stack.skipped = static_cast<uint8_t>(kMaxPythonFramesScanned - kPythonInnermostKept - 1);
  PythonFrame& program = bound.stack.frames[bound.stack.count++];
  std::snprintf(program.file, sizeof program.file, "%s", "/home/me/train.py");
  program.function[0] = '\0';
  program.line = 7;
  bound.stack.truncated = true;
  for (size_t i = 0; i < kMaxPythonFramesScanned; ++i) bound.key.add_frame(0x1000 + 8 * i, 2);
  PythonLaunchSite kept = cache.keep(bound.stack, &bound.key);
  EXPECT_EQ(sites.get(kept.site)->line, 7);
  ASSERT_TRUE(look_up(cache, bound.key, &found));
  EXPECT_EQ(found.site, kept.site);
}

// The cache compares hashes, not words (python_site_cache.h): walks that differ in one word must never share
// a hash, and walks as a program makes them (code objects 16 bytes apart, small offsets, few frames) must not
// meet.
TEST(PythonSiteCache, WalksThatDifferNeverShareAHash) {
  std::unordered_set<uint64_t> seen;
  size_t made = 0;
  for (uint64_t code = 0; code < 64; ++code) {
    for (uint64_t offset = 0; offset < 64; ++offset) {
      for (size_t frames = 1; frames <= 4; ++frames) {
        PythonWalkKey key;
        for (size_t i = 0; i < frames; ++i) {
          // The innermost frame varies; the outer ones are the same few code objects.
          key.add_frame(i == 0 ? 0x7f0000001000 + 16 * code : 0x7f0000100000 + 16 * i,
                        i == 0 ? uint64_t{7} << 32 | 2 * offset : uint64_t{9} << 32 | 40);
        }
        seen.insert(key.hash(frames));
        ++made;
      }
    }
  }
  EXPECT_EQ(seen.size(), made);
  // One word changed by one bit, anywhere in a deep walk: never the same hash.
  PythonWalkKey base;
  for (size_t i = 0; i < 12; ++i) base.add_frame(0x7f0000200000 + 48 * i, uint64_t{i + 1} << 32 | 2 * i);
  for (size_t word = 0; word < 24; ++word) {
    for (int bit = 0; bit < 64; ++bit) {
      PythonWalkKey changed;
      for (size_t i = 0; i < 12; ++i) {
        uint64_t code = base.words()[2 * i], detail = base.words()[2 * i + 1];
        if (word == 2 * i) code ^= uint64_t{1} << bit;
        if (word == 2 * i + 1) detail ^= uint64_t{1} << bit;
        changed.add_frame(code, detail);
      }
      EXPECT_NE(changed.hash(12), base.hash(12)) << "word " << word << " bit " << bit;
    }
  }
}

TEST(PythonSiteCache, ThreadsRememberingAndFindingAtOnceNeverReadAHalfWrittenEntry) {
  PythonSiteTable sites(1024);
  PythonSiteCache cache(sites, 16);  // far fewer entries than walks: entries are replaced all the time
  constexpr int kWalks = 96;
  constexpr int kThreads = 8;
  std::vector<Walk> walks;
  std::vector<uint32_t> expected;
  for (int i = 0; i < kWalks; ++i) {
    // Walks that share their first frame and differ in the second, so that prefixes collide too.
    walks.push_back(walk({{kTorch, 1, 0x1000, 1},
                          {"/home/me/model.py", i + 1, 0x3000 + 64 * uint64_t(i % 5), 3},
                          {"/home/me/train.py", 7, 0x4000, 4}}));
    expected.push_back(sites.intern(walks.back().stack.frames[1]));
  }
  std::atomic<int> wrong{0};
  std::atomic<int> hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 300; ++round) {
        for (int n = 0; n < kWalks; ++n) {
          int i = (n * 7 + t * 13 + round) % kWalks;
          PythonLaunchSite found;
          if (look_up(cache, walks[i].key, &found)) {
            hits.fetch_add(1, std::memory_order_relaxed);
            if (found.site != expected[i]) wrong.fetch_add(1, std::memory_order_relaxed);
          } else if (cache.keep(walks[i].stack, &walks[i].key).site != expected[i]) {
            wrong.fetch_add(1, std::memory_order_relaxed);
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(hits.load(), 0);
  EXPECT_EQ(sites.dropped(), 0u);
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
