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
  const char* data = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t written = write(fd_, data, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;  // a full disk must not disturb the program: the line is lost, nothing else
    data += written;
    left -= static_cast<size_t>(written);
  }
}

std::shared_ptr<LogFileSink> open_log_file(const std::string& path, std::string* problem) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    int error = errno;
    *problem = "cannot open the log file '" + path + "' (" +
               (error == ELOOP ? std::string("it is a symbolic link, which the shim never follows")
                               : std::string(std::strerror(error))) +
               "); logging to standard error";
    return nullptr;
  }
  return std::make_shared<LogFileSink>(fd);
}

}  // namespace blockrun
