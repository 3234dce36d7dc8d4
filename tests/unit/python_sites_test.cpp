// The interned Python launch lines of breadcrumbs mode (src/callsites/python_sites.h): one number per
// distinct line, nothing wrong when full, and threads interning at once agree.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "callsites/python_sites.h"

namespace blockrun {
namespace {

PythonFrame frame(const char* file, int line, const char* function) {
  PythonFrame made;
  std::memset(&made, 0x5a, sizeof made);  // the bytes after each text's NUL are garbage, as captured
  made.line = line;
  std::snprintf(made.file, sizeof made.file, "%s", file);
  std::snprintf(made.function, sizeof made.function, "%s", function);
  return made;
}

TEST(PythonSites, EachDistinctLineGetsOneNumber) {
  PythonSiteTable table(64);
  EXPECT_EQ(table.get(1), nullptr) << "nothing allocated before the first line";
  uint32_t forward = table.intern(frame("train.py", 42, "forward"));
  uint32_t again = table.intern(frame("train.py", 42, "forward"));
  uint32_t other_line = table.intern(frame("train.py", 43, "forward"));
  uint32_t other_function = table.intern(frame("train.py", 42, "step"));
  uint32_t other_file = table.intern(frame("model.py", 42, "forward"));
  EXPECT_NE(forward, 0u);
  EXPECT_EQ(again, forward);
  EXPECT_NE(other_line, forward);
  EXPECT_NE(other_function, forward);
  EXPECT_NE(other_file, forward);
  const PythonFrame* kept = table.get(forward);
  ASSERT_NE(kept, nullptr);
  EXPECT_STREQ(kept->file, "train.py");
  EXPECT_EQ(kept->line, 42);
  EXPECT_STREQ(kept->function, "forward");
  EXPECT_EQ(table.get(0), nullptr);
  EXPECT_EQ(table.get(65), nullptr);
}

TEST(PythonSites, AFullTableKeepsNoNumberRatherThanAWrongOne) {
  PythonSiteTable table(8);
  std::vector<uint32_t> ids;
  for (int line = 1; line <= 8; ++line) ids.push_back(table.intern(frame("train.py", line, "loop")));
  for (uint32_t id : ids) EXPECT_NE(id, 0u);
  EXPECT_EQ(table.intern(frame("train.py", 9, "loop")), 0u);
  EXPECT_EQ(table.dropped(), 1u);
  EXPECT_EQ(table.intern(frame("train.py", 3, "loop")), ids[2]) << "known lines are still found";
  for (int line = 1; line <= 8; ++line) EXPECT_EQ(table.get(ids[line - 1])->line, line);
}

TEST(PythonSites, ThreadsInterningAtOnceAgree) {
  PythonSiteTable table(1024);
  constexpr int kThreads = 8;
  constexpr int kLines = 200;
  std::vector<std::vector<uint32_t>> seen(kThreads, std::vector<uint32_t>(kLines));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (int line = 0; line < kLines; ++line) {
          uint32_t id = table.intern(frame("model.py", line, "forward"));
          if (round == 0) seen[t][line] = id;
          EXPECT_EQ(id, seen[t][line]);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int line = 0; line < kLines; ++line) {
    ASSERT_NE(seen[0][line], 0u);
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t][line], seen[0][line]) << "line " << line;
    EXPECT_EQ(table.get(seen[0][line])->line, line);
  }
  EXPECT_EQ(table.dropped(), 0u);
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
