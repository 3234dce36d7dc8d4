// The log file (see log_file.h).
#include "log_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace blockrun {

LogFileSink::~LogFileSink() {
  if (fd_ >= 0) close(fd_);
}

void LogFileSink::sink_it_(const spdlog::details::log_msg& message) {
  spdlog::memory_buf_t line;
  formatter_->format(message, line);
  write_fully(fd_, line.data(), line.size());
}

void write_fully(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t written = write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;  // a full disk must not disturb the program: the data is lost, nothing else
    data += written;
    size -= static_cast<size_t>(written);
  }
}

int open_output_file(const std::string& path, const char* what, const char* instead, bool private_file,
                     std::string* problem) {
  // The mode applies to a file this creates (the process's umask may remove more); an existing file keeps its
  // own.
  int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, private_file ? 0600 : 0644);
  if (fd < 0) {
    int error = errno;
    *problem = std::string("cannot open the ") + what + " file '" + path + "' (" +
               (error == ELOOP ? std::string("it is a symbolic link, which the shim never follows")
                               : std::string(std::strerror(error))) +
               "); " + instead;
  }
  return fd;
}

std::shared_ptr<LogFileSink> open_log_file(const std::string& path, bool private_file, std::string* problem) {
  int fd = open_output_file(path, "log", "logging to standard error", private_file, problem);
  return fd < 0 ? nullptr : std::make_shared<LogFileSink>(fd);
}

}  // namespace blockrun
