// The files the shim writes into: its log and its report, on a path the user chose, often in a shared
// directory (/tmp/crash.%r.jsonl), in a program that owns every other descriptor. Each file is
// - opened without following a symbolic link in any component of its path (openat2 with
//   RESOLVE_NO_SYMLINKS; where the kernel lacks it, one component at a time with O_NOFOLLOW), without
//   blocking (a FIFO planted at the path cannot hang the program), and used only if it is a regular file of
//   the user's own (or a character device, such as /dev/null) and, with private files, accessible to nobody
//   else;
// - moved to a high descriptor, close-on-exec, so that it never takes the place of a standard stream the
//   program closed, nor of the number the program's next open() gets;
// - checked to be the same file before each write: a program that closed it (a daemon closing every
//   descriptor) and opened its own file at that number never gets the shim's lines; the path is opened again
//   where it still names the same file;
// - written one record (a line) at a time, with one write(2), whole or not at all: a short write (a full
//   disk, RLIMIT_FSIZE) is cut back to the record's start, and SIGXFSZ, which the kernel sends for a write
//   past the limit, is held back during the shim's own write so that it never ends the program.
// Issue 17: F5, F6, F7, F10, F12, F16.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>

namespace blockrun {

class OutputFile {
 public:
  // Opens (creating with mode 0644, 0600 if `private_file`) `path` for appending. nullptr where it cannot be
  // used, and *problem says why, in words for the user ("it is a FIFO, not a regular file").
  static std::unique_ptr<OutputFile> open(const std::string& path, bool private_file, std::string* problem);
  // Standard error as it is now (the log's default; made when the shim is loaded): written to only while
  // descriptor 2 is still that file, so that a program that closed it and opened a file of its own there gets
  // none of the shim's lines. Never duplicated (a duplicate would keep a pipe open after the program closed
  // it) nor closed. nullptr where standard error is closed.
  static std::unique_ptr<OutputFile> standard_error();
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Writes `size` bytes as one record, whole or not at all; false where nothing was written.
  // Async-signal-safe: no allocation, no lock.
  bool write_record(const char* data, size_t size);
  // Empties it (a regular file; a device is left as it is), for a document written whole at the end (the
  // trace: trace/tracer.h). False where it could not be emptied. Async-signal-safe.
  bool truncate();
  // Whether both name one file (the log and the report must not).
  bool same_file(const OutputFile& other) const { return device_ == other.device_ && inode_ == other.inode_; }
  // Whether writing both into one would mix them: the same file, unless it is the null device, which keeps
  // nothing, so that any number of outputs may be sent there (issue 40, N13).
  bool clashes_with(const OutputFile& other) const { return same_file(other) && !null_device_; }
  int descriptor() const { return fd_.load(std::memory_order_relaxed); }

 private:
  OutputFile() = default;
  bool still_ours(int fd) const;
  // The descriptor to write to: ours still, or the path opened again where the program took ours; -1 where
  // the file is lost.
  int usable_descriptor();
  int open_again() const;

  std::atomic<int> fd_{-1};
  dev_t device_ = 0;
  ino_t inode_ = 0;
  char path_[4096] = {};  // to open it again where the program took its descriptor; "" for standard error
  std::atomic<bool> lost_{false};  // no longer ours and not found again: nothing more is written
  bool owned_ = true;              // opened here (closed with it); false for standard error
  bool null_device_ = false;       // /dev/null, known by its device number (is_null_device)
};

// Whether `info` (stat's) is the null device, by its device number (1, 3) rather than its path: a container's
// /dev/null bound from the host, or another name for it, is one too.
// Past RLIMIT_FSIZE the kernel sends SIGXFSZ, whose default action ends the program: while this lives,
// SIGXFSZ is held back on this thread (a write past the limit then fails with EFBIG), and at its end one this
// thread's writes raised is taken back, so the program never sees it. Only where a limit is set;
// async-signal-safe.
class FileSizeSignalHeld {
 public:
  FileSizeSignalHeld();
  ~FileSizeSignalHeld();
  FileSizeSignalHeld(const FileSizeSignalHeld&) = delete;
  FileSizeSignalHeld& operator=(const FileSizeSignalHeld&) = delete;

 private:
  bool limited_ = false;
  bool was_pending_ = false;
  sigset_t xfsz_{}, saved_{};
};

bool is_null_device(const struct stat& info);
// The same for a path (following symbolic links, as a stat does); false where it cannot be examined.
bool is_null_device(const char* path);

// The lowest descriptor number the shim's files are moved to (or above), below RLIMIT_NOFILE.
int high_descriptor_floor();

// open(2) of `path` without following a symbolic link in any component: -1 and errno ELOOP where one is.
// With openat2's RESOLVE_NO_SYMLINKS, or one component at a time with O_NOFOLLOW where the kernel lacks it
// (or `walk_components`: the tests take that way too). Async-signal-safe.
int open_refusing_symlinks(const char* path, int flags, mode_t mode, bool walk_components);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
