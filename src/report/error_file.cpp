// CUDA_BLOCKRUN_ERROR_FILE: the line a process appends when it met a CUDA error (error_file.h).
#include "report/error_file.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <memory>
#include <utility>

#include "report/output_file.h"

namespace blockrun {

std::string note_in_error_file(const Config& config, const ProcessInfo& process, const OutputFile* report,
                               const std::string& error_name, const std::string& api) {
  if (config.error_file.empty()) return "";
  std::string path = expand_path(config.error_file, process.pid, process.rank, process.host);
  std::string problem;
  std::unique_ptr<OutputFile> file = OutputFile::open(path, config.private_files, &problem);
  // Its plain line in the report would make the report invalid JSON lines (issue 40, N12): the same path is
  // refused before the program starts, the same file by another path here.
  if (file && report && file->clashes_with(*report)) {
    file.reset();
    problem = "it is the report file";
  }
  // The log and the trace likewise, by identity as they are now (a link, `%p`): the error line in the trace
  // would be lost when it is written, and the wrapper would read the log's lines as the error file's.
  struct stat noted {};
  if (file && fstat(file->descriptor(), &noted) == 0 && !is_null_device(noted)) {
    for (const auto& [other, name] : {std::pair{&config.log, "log"}, std::pair{&config.trace, "trace"}}) {
      struct stat info {};
      std::string other_path = expand_path(*other, process.pid, process.rank, process.host);
      if (!other->empty() && stat(other_path.c_str(), &info) == 0 && info.st_dev == noted.st_dev &&
          info.st_ino == noted.st_ino) {
        file.reset();
        problem = std::string("it is the ") + name + " file";
        break;
      }
    }
  }
  std::string line = fmt::format("{} {} {}\n", process.pid, error_name, api);
  if (file && file->write_record(line.data(), line.size())) return "";
  return fmt::format("cannot note the error in {} ({}): {}", path, variable::error_file,
                     file ? "the write failed" : problem);
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
