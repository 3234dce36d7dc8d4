// The shim's files (src/report/output_file.h): no symbolic link followed in any component, by openat2 and by
// the walk one component at a time that kernels without openat2 get; records whole or absent.
#include "report/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace blockrun {
namespace {

struct Directory {
  std::string path;
  Directory() {
    std::string pattern = ::testing::TempDir() + "blockrun_output_XXXXXX";
    path = mkdtemp(pattern.data());
  }
  ~Directory() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

std::string read(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class OpenRefusingSymlinks : public ::testing::TestWithParam<bool> {};

TEST_P(OpenRefusingSymlinks, RefusesALinkInAnyComponent) {
  const bool walk = GetParam();
  Directory directory;
  ASSERT_EQ(mkdir((directory / "real").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((directory / "real/deeper").c_str(), 0700), 0);
  ASSERT_EQ(symlink((directory / "real").c_str(), (directory / "link").c_str()), 0);
  ASSERT_EQ(symlink("r.jsonl", (directory / "real/deeper/last").c_str()), 0);
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
  for (const std::string& refused : {directory / "link/deeper/r.jsonl", directory / "link/r.jsonl",
                                     directory / "real/deeper/last", directory / "real/../link/r.jsonl"}) {
    errno = 0;
    EXPECT_EQ(open_refusing_symlinks(refused.c_str(), flags, 0644, walk), -1) << refused;
    EXPECT_EQ(errno, ELOOP) << refused;
  }
  for (const std::string& opened : {directory / "real/deeper/r.jsonl", directory / "real//./deeper/s.jsonl",
                                    directory / "real/deeper/../t.jsonl"}) {
    int fd = open_refusing_symlinks(opened.c_str(), flags, 0644, walk);
    EXPECT_GE(fd, 0) << opened << ": " << std::strerror(errno);
    if (fd >= 0) close(fd);
  }
  EXPECT_EQ(open_refusing_symlinks((directory / "real/").c_str(), flags, 0644, walk), -1);  // a directory
  EXPECT_EQ(open_refusing_symlinks((directory / "missing/r").c_str(), flags, 0644, walk), -1);
  EXPECT_EQ(errno, ENOENT);
}

INSTANTIATE_TEST_SUITE_P(BothWays, OpenRefusingSymlinks, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "WalkingComponents" : "Openat2"; });

// Issue 40, N13: two outputs on one file clash, unless that file is the null device (known by its number).
TEST(OutputFile, OnlyTheNullDeviceMayTakeTwoOutputs) {
  Directory directory;
  std::string problem;
  auto first = OutputFile::open(directory / "same", false, &problem);
  auto second = OutputFile::open(directory.path + "/./same", false, &problem);
  ASSERT_TRUE(first && second) << problem;
  EXPECT_TRUE(first->clashes_with(*second));
  auto null_log = OutputFile::open("/dev/null", false, &problem);
  auto null_report = OutputFile::open("/dev/null", false, &problem);
  ASSERT_TRUE(null_log && null_report) << problem;
  EXPECT_TRUE(null_log->same_file(*null_report));
  EXPECT_FALSE(null_log->clashes_with(*null_report));
  EXPECT_TRUE(is_null_device("/dev/null"));
  EXPECT_FALSE(is_null_device("/dev/zero"));
  EXPECT_FALSE(is_null_device((directory / "same").c_str()));
}

TEST(OutputFile, RecordsAreWholeAndTheFileMustStayTheSame) {
  Directory directory;
  std::string problem;
  std::unique_ptr<OutputFile> file = OutputFile::open(directory / "r.jsonl", false, &problem);
  ASSERT_TRUE(file) << problem;
  EXPECT_GE(file->descriptor(), high_descriptor_floor());
  EXPECT_EQ(fcntl(file->descriptor(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  EXPECT_TRUE(file->write_record("one\n", 4));
  // Another file at its descriptor: nothing written there; the path is opened again.
  int fd = file->descriptor();
  int other = open((directory / "other").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_EQ(dup2(other, fd), fd);
  close(other);
  EXPECT_TRUE(file->write_record("two\n", 4));
  EXPECT_EQ(read(directory / "other"), "");
  EXPECT_EQ(read(directory / "r.jsonl"), "one\ntwo\n");
  close(fd);
  // Removed and replaced by another file: abandoned, never written into the new one.
  ASSERT_EQ(unlink((directory / "r.jsonl").c_str()), 0);
  std::ofstream(directory / "r.jsonl") << "planted\n";
  int reopened = file->descriptor();
  ASSERT_EQ(dup2(open("/dev/null", O_WRONLY), reopened), reopened);
  EXPECT_FALSE(file->write_record("three\n", 6));
  EXPECT_EQ(read(directory / "r.jsonl"), "planted\n");
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
