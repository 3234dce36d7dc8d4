// The log's prefix (log_file.h): a process alone writes `[cuda-blockrun]` as it always has; processes that
// may share a terminal or a file are told apart by pid and, in a job, rank.
#include <gtest/gtest.h>

#include "report/log_file.h"

namespace blockrun {
namespace {

TEST(LogPrefix, AProcessAloneKeepsThePlainPrefix) {
  EXPECT_EQ(log_prefix(LogAuthor{12345, std::nullopt, false, false}), "[cuda-blockrun]");
}

TEST(LogPrefix, ARankOrAForkedChildCarriesItsPid) {
  EXPECT_EQ(log_prefix(LogAuthor{12345, 3, false, false}), "[cuda-blockrun 12345 rank 3]");
  EXPECT_EQ(log_prefix(LogAuthor{12345, 0, false, false}), "[cuda-blockrun 12345 rank 0]");
  EXPECT_EQ(log_prefix(LogAuthor{678, std::nullopt, true, false}), "[cuda-blockrun 678]");
  EXPECT_EQ(log_prefix(LogAuthor{678, 2, true, false}), "[cuda-blockrun 678 rank 2]");
}

TEST(LogPrefix, AFileOfItsOwnNeedsNoPid) {
  EXPECT_EQ(log_prefix(LogAuthor{12345, 3, true, true}), "[cuda-blockrun]");
  EXPECT_TRUE(path_names_process("/tmp/log.%p"));
  EXPECT_TRUE(path_names_process("%h/%r.%p.log"));
  EXPECT_FALSE(path_names_process("/tmp/log.%r"));
  EXPECT_FALSE(path_names_process("/tmp/100%%p"));  // a literal "%p"
  EXPECT_TRUE(path_names_process("/tmp/100%%%p"));
  EXPECT_FALSE(path_names_process("/tmp/log%"));
  EXPECT_FALSE(path_names_process(""));
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
