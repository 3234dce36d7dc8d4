// The shim's log and report files (see output_file.h).
#include "report/output_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

namespace blockrun {

namespace {

// One component at a time from / (or the working directory), each directory opened with O_NOFOLLOW.
int open_walking_components(const char* path, int flags, mode_t mode) {
  char copy[PATH_MAX];
  size_t length = std::strlen(path);
  if (length == 0 || length >= sizeof copy) {
    errno = length == 0 ? ENOENT : ENAMETOOLONG;
    return -1;
  }
  std::memcpy(copy, path, length + 1);
  int directory = ::open(copy[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (directory < 0) return -1;
  char* component = copy;
  while (true) {
    while (*component == '/') ++component;
    char* slash = std::strchr(component, '/');
    char* rest = slash;
    while (rest && *rest == '/') ++rest;
    if (!slash || !*rest) {  // the last component (a trailing slash makes it a directory: open refuses it)
      if (slash) *slash = '\0';
      int fd = openat(directory, *component ? component : ".", flags | O_NOFOLLOW, mode);
      int error = errno;
      close(directory);
      errno = error;
      return fd;
    }
    *slash = '\0';
    int next = openat(directory, component, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      int error = errno;
      struct stat info {};
      if (error == ENOTDIR && fstatat(directory, component, &info, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(info.st_mode))
        error = ELOOP;
      close(directory);
      errno = error;
      return -1;
    }
    close(directory);
    directory = next;
    component = slash + 1;
  }
}

}  // namespace

int open_refusing_symlinks(const char* path, int flags, mode_t mode, bool walk_components) {
#ifdef SYS_openat2
  if (!walk_components) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
    // Linux before 5.6 has no openat2 (ENOSYS), and some sandboxes refuse system calls they do not know
    // (EPERM): then one component at a time.
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM && errno != E2BIG)) return static_cast<int>(fd);
  }
#else
  (void)walk_components;
#endif
  return open_walking_components(path, flags, mode);
}

namespace {

// For the message: which component of `path` is a symbolic link, and where it leads.
std::string describe_symlink(const std::string& path) {
  for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    std::string prefix = path.substr(0, end);
    struct stat info {};
    if (!prefix.empty() && lstat(prefix.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
      if (end == std::string::npos) return "it is a symbolic link, which the shim never follows";
      char resolved[PATH_MAX];
      std::string target =
          realpath(prefix.c_str(), resolved) ? "; without links it is " + (resolved + path.substr(end)) : "";
      return "its directory " + prefix + " is a symbolic link, which the shim never follows" + target;
    }
    if (end == std::string::npos) break;
  }
  return "a component of it is a symbolic link, which the shim never follows";
}

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

// The descriptor moved to the shim's range (high_descriptor_floor() and above), close-on-exec; the old one
// closed. -1 (and `fd` closed) where no number is free there and `fd` is one of the standard streams'.
int move_high(int fd) {
  int high = fcntl(fd, F_DUPFD_CLOEXEC, high_descriptor_floor());
  if (high >= 0) {
    close(fd);
    return high;
  }
  if (fd <= STDERR_FILENO) {
    close(fd);
    return -1;
  }
  return fd;
}

// Clears O_NONBLOCK, which the open only needed so that a FIFO could not block it.
void make_blocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

}  // namespace

int high_descriptor_floor() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1000;
  rlim_t floor = limit.rlim_cur / 2 < 1000 ? limit.rlim_cur / 2 : 1000;
  return floor < 3 ? 3 : static_cast<int>(floor);
}

bool is_null_device(const struct stat& info) {
  return S_ISCHR(info.st_mode) && major(info.st_rdev) == 1 && minor(info.st_rdev) == 3;
}

bool is_null_device(const char* path) {
  struct stat info {};
  return stat(path, &info) == 0 && is_null_device(info);
}

std::unique_ptr<OutputFile> OutputFile::open(const std::string& given, bool private_file,
                                             std::string* problem) {
  std::string path = given;
  if (!path.empty() && path[0] != '/') {  // absolute, so that it can be opened again after a chdir
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) path = std::string(cwd) + "/" + path;
  }
  int fd = open_refusing_symlinks(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC,
                                  private_file ? 0600 : 0644, false);
  if (fd < 0) {
    int error = errno;
    *problem = error == ELOOP ? describe_symlink(path)
               : error == ENXIO
                   ? std::string("it is a FIFO (named pipe) that nobody reads, not a regular file")
                   : std::string(std::strerror(error));
    return nullptr;
  }
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    *problem = std::strerror(errno);
    close(fd);
    return nullptr;
  }
  std::string refusal;
  if (!S_ISREG(info.st_mode) && !S_ISCHR(info.st_mode)) {
    refusal = std::string("it is ") + kind_of(info.st_mode) + ", not a regular file";
  } else if (S_ISREG(info.st_mode) && info.st_uid != geteuid()) {
    refusal = "it belongs to another user (uid " + std::to_string(info.st_uid) + "), not to this one (uid " +
              std::to_string(geteuid()) + ")";
  } else if (S_ISREG(info.st_mode) && private_file && (info.st_mode & 077)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    refusal = std::string("other users may read or write it (mode ") + mode +
              ") and private files were asked for; remove it or make it private (chmod 600)";
  }
  if (!refusal.empty()) {
    *problem = refusal;
    close(fd);
    return nullptr;
  }
  make_blocking(fd);
  fd = move_high(fd);
  if (fd < 0) {
    *problem = "no descriptor is free for it";
    return nullptr;
  }
  std::unique_ptr<OutputFile> file(new OutputFile);
  file->fd_.store(fd);
  file->device_ = info.st_dev;
  file->inode_ = info.st_ino;
  file->null_device_ = is_null_device(info);
  if (path.size() < sizeof file->path_) std::memcpy(file->path_, path.c_str(), path.size() + 1);
  return file;
}

std::unique_ptr<OutputFile> OutputFile::standard_error() {
  struct stat info {};
  if (fstat(STDERR_FILENO, &info) != 0) return nullptr;
  std::unique_ptr<OutputFile> file(new OutputFile);
  file->fd_.store(STDERR_FILENO);
  file->owned_ = false;
  file->device_ = info.st_dev;
  file->inode_ = info.st_ino;
  file->null_device_ = is_null_device(info);
  return file;
}

OutputFile::~OutputFile() {
  int fd = fd_.load();
  if (owned_ && fd >= 0 && still_ours(fd)) close(fd);
}

bool OutputFile::still_ours(int fd) const {
  struct stat info {};
  return fstat(fd, &info) == 0 && info.st_dev == device_ && info.st_ino == inode_;
}

int OutputFile::open_again() const {
  if (!path_[0]) return -1;
  int fd = open_refusing_symlinks(path_, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0, false);
  if (fd < 0) return -1;
  if (!still_ours(fd)) {
    close(fd);
    return -1;
  }
  make_blocking(fd);
  return move_high(fd);
}

int OutputFile::usable_descriptor() {
  if (lost_.load(std::memory_order_relaxed)) return -1;
  int fd = fd_.load(std::memory_order_acquire);
  if (fd < 0 || still_ours(fd)) return fd;
  // The program closed it, and perhaps opened a file of its own at that number: never write there.
  // Standard error comes back where the program puts the same file there again (it silenced it a while).
  if (!owned_) return -1;
  int again = open_again();
  if (again < 0) {
    lost_.store(true, std::memory_order_relaxed);
    return -1;
  }
  if (!fd_.compare_exchange_strong(fd, again)) close(again);  // another thread opened it again first
  return fd_.load(std::memory_order_acquire);
}

bool OutputFile::truncate() {
  int saved_errno = errno;
  int fd = usable_descriptor();
  bool emptied = fd >= 0 && ftruncate(fd, 0) == 0;
  errno = saved_errno;
  return emptied;
}

bool OutputFile::write_record(const char* data, size_t size) {
  if (size == 0) return false;
  int saved_errno = errno;
  int fd = usable_descriptor();
  if (fd < 0) {
    errno = saved_errno;
    return false;
  }
  ssize_t written;
  {
    FileSizeSignalHeld held;  // past RLIMIT_FSIZE the write fails (EFBIG) rather than end the program
    do {
      written = write(fd, data, size);
    } while (written < 0 && errno == EINTR);
    if (written > 0 && static_cast<size_t>(written) < size) {
      // Cut back to the record's start, where nothing was appended after it since (another process sharing
      // the path): a record is on disk whole or not at all.
      off_t end = lseek(fd, 0, SEEK_CUR);
      struct stat info {};
      if (end >= written && fstat(fd, &info) == 0 && info.st_size == end) {
        int ignored = ftruncate(fd, end - written);
        (void)ignored;
      }
      written = -1;
    }
  }
  errno = saved_errno;
  return written == static_cast<ssize_t>(size);
}

FileSizeSignalHeld::FileSizeSignalHeld() {
  rlimit limit{};
  limited_ = getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  if (!limited_) return;
  sigemptyset(&xfsz_);
  sigaddset(&xfsz_, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &xfsz_, &saved_);
  sigset_t pending;
  was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ);
}

FileSizeSignalHeld::~FileSizeSignalHeld() {
  if (!limited_) return;
  sigset_t pending;
  if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ)) {
    timespec now{};
    sigtimedwait(&xfsz_, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
