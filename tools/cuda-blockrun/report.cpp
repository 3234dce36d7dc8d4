// `cuda-blockrun report`: merges the reports of a job's processes into one verdict (docs/distributed.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "cli.h"
#include "job_report.h"
#include "job_trace.h"
#include "cuda/names.h"
#include "report_json.h"
#include "config/suggest.h"

namespace blockrun::cli {

// `cuda-blockrun report [--json] [--trace OUT.json] FILE...|DIR`'s exit status, so that a CI job fails with
// the job it reports on (docs/distributed.md): 0 every process ran clean, 1 a process failed, 3 none failed
// but a report was cut short (how that process ended is unknown); 2 (kUsageError) when nothing could be read.
int report_exit_status(blockrun::JobOutcome outcome) {
  switch (outcome) {
    case blockrun::JobOutcome::Clean:
      return 0;
    case blockrun::JobOutcome::Failed:
      return 1;
    case blockrun::JobOutcome::CutShort:
      return 3;
  }
  return 1;
}

namespace {

// The start of every trace this command writes (trace::TraceWriter::begin with its producer): a file that
// begins otherwise is not overwritten without --force.
constexpr std::string_view kOurTrace =
    "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"cuda-blockrun report --trace\"";

// A path or a name as it may be printed: control bytes escaped (issue 40, N9: a terminal must not take a
// kernel's or a file's name as commands).
std::string shown(const std::string& text) {
  return blockrun::printable(text, std::string::npos);
}

// A report file to read: its path, and what it is (the same file given twice is read once: issue 40, N10).
struct Input {
  std::string path;
  dev_t device = 0;
  ino_t inode = 0;
  bool regular = false;   // else read once only (a pipe): its launches are kept for a trace
  std::string directory;  // the directory argument it was found in ("" for a file named)
};

// Where the first `prefix.size()` bytes of the file at `path` are `prefix`.
bool starts_with(const std::string& path, std::string_view prefix) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  std::string head(prefix.size(), '\0');
  ssize_t got = ::pread(fd, head.data(), head.size(), 0);
  ::close(fd);
  return got == static_cast<ssize_t>(prefix.size()) && head == prefix;
}

// --trace OUT must not destroy a report (issue 40, N1: `report --trace crash.*.jsonl` made rank 0's report
// the trace): OUT is refused where it is one of the inputs, by identity (a link, another spelling of the
// path), and, unless --force, where it holds something other than a trace this command wrote. `status` is
// OUT's (stat, following links), `inputs` the reports.
void check_trace_output(const std::string& path, const struct stat& status, const std::vector<Input>& inputs,
                        bool force) {
  for (const Input& input : inputs) {
    if (input.device == status.st_dev && input.inode == status.st_ino)
      usage_error("report: the trace's file '" + shown(path) + "' is the report '" + shown(input.path) +
                  "', which it would overwrite: give the trace a file of its own (--trace OUT.json FILE...)");
  }
  if (force || !S_ISREG(status.st_mode) || status.st_size == 0 || starts_with(path, kOurTrace)) return;
  usage_error("report: '" + shown(path) +
              "' exists and is not a trace written by `cuda-blockrun report --trace`: not overwritten (give "
              "another file, or --force to overwrite it)");
}

// --trace OUT: the job's timeline, from the launch records of reports written with --log-launches.
void write_trace(const std::vector<blockrun::ProcessOutcome>& processes, const std::string& path,
                 const std::vector<Input>& inputs, bool force) {
  std::string problem;
  std::unique_ptr<blockrun::OutputFile> file = blockrun::OutputFile::open(path, false, &problem);
  if (!file) usage_error("report: cannot write the trace to '" + shown(path) + "': " + problem);
  // Checked again on the file opened, which may have been made or replaced since.
  struct stat status {};
  if (fstat(file->descriptor(), &status) == 0) check_trace_output(path, status, inputs, force);
  blockrun::JobTrace trace = blockrun::write_job_trace(processes, *file);
  if (!trace.written) usage_error("report: writing the trace to '" + shown(path) + "' failed");
  std::fprintf(stderr,
               "cuda-blockrun: trace: %zu launch%s of %zu process%s written to %s (open it in "
               "ui.perfetto.dev or chrome://tracing)\n",
               trace.launches, trace.launches == 1 ? "" : "es", trace.processes,
               trace.processes == 1 ? "" : "es", shown(path).c_str());
  if (trace.without_launches)
    std::fprintf(stderr,
                 "cuda-blockrun: trace: %zu of the processes have no launch records: run them with "
                 "--log-launches for their launches to be in the trace\n",
                 trace.without_launches);
  if (trace.not_read_again)
    std::fprintf(stderr,
                 "cuda-blockrun: trace: the launches of %zu of the processes are missing: their report could "
                 "not be read again (%s)\n",
                 trace.not_read_again, shown(trace.problem).c_str());
}

// The report files named (a directory: its *.jsonl files), each once.
std::vector<Input> inputs_named(const std::vector<std::string>& paths) {
  std::vector<Input> inputs;
  auto add = [&](const std::string& path, const std::string& directory) {
    struct stat status {};
    if (::stat(path.c_str(), &status) != 0)
      usage_error("report: cannot read '" + shown(path) + "': " + std::strerror(errno));
    for (const Input& input : inputs) {
      if (input.device == status.st_dev && input.inode == status.st_ino) {
        std::fprintf(stderr, "cuda-blockrun: report: '%s' is the same file as '%s': read once\n",
                     shown(path).c_str(), shown(input.path).c_str());
        return;
      }
    }
    inputs.push_back({path, status.st_dev, status.st_ino, S_ISREG(status.st_mode), directory});
  };
  for (const std::string& path : paths) {
    std::error_code error;
    std::filesystem::file_status status = std::filesystem::status(path, error);
    if (!std::filesystem::exists(status))
      usage_error("report: no such file or directory: '" + shown(path) + "'");
    if (!std::filesystem::is_directory(status)) {
      add(path, "");
      continue;
    }
    std::vector<std::filesystem::path> found = files_in(path, "", ".jsonl");
    if (found.empty()) usage_error("report: no *.jsonl report files in '" + shown(path) + "'");
    for (const std::filesystem::path& file : found) add(file.string(), path);
  }
  return inputs;
}

// Files that are not reports of this tool (issue 42: a training job's metrics.jsonl beside the reports) are
// left out, and said so: a line for each file named, a line for each directory's.
void say_skipped(const std::map<std::string, std::vector<std::string>>& skipped) {
  for (const auto& [directory, files] : skipped) {
    if (directory.empty()) {
      for (const std::string& file : files)
        std::fprintf(stderr,
                     "cuda-blockrun: report: skipped '%s': not a report of cuda-blockrun (it has no start "
                     "record)\n",
                     shown(file).c_str());
      continue;
    }
    std::string names;
    for (size_t i = 0; i < files.size() && i < 3; ++i)
      names += (i ? ", " : "") + std::filesystem::path(files[i]).filename().string();
    if (files.size() > 3) names += ", ...";
    std::fprintf(
        stderr,
        "cuda-blockrun: report: skipped %zu file%s of '%s' that %s not a report of cuda-blockrun (no "
        "start record): %s\n",
        files.size(), files.size() == 1 ? "" : "s", shown(directory).c_str(),
        files.size() == 1 ? "is" : "are", shown(names).c_str());
  }
}

// The flag of report_flags.def that `argument` is (`--trace=OUT` too), or nullptr.
const ReportFlagSpec* report_flag(const std::string& argument) {
  for (const ReportFlagSpec& spec : report_flag_specs()) {
    std::string flag = spec.flag;
    if (argument == flag || (*spec.value && argument.rfind(flag + "=", 0) == 0)) return &spec;
  }
  if (argument == "-h") return &report_flag_specs().back();
  return nullptr;
}

}  // namespace

int report_command(int argc, char** argv) {
  bool as_json = false, force = false;
  std::string trace_path;
  std::vector<std::string> paths;
  std::vector<std::string> known;
  std::string accepted;  // "--json, --trace OUT.json, ..."
  for (const ReportFlagSpec& spec : report_flag_specs()) {
    known.push_back(spec.flag);
    accepted += std::string(accepted.empty() ? "" : ", ") + spec.flag + (*spec.value ? " " : "") + spec.value;
  }
  for (int index = 0; index < argc; ++index) {
    std::string argument = argv[index];
    const ReportFlagSpec* flag = argument.rfind("-", 0) == 0 ? report_flag(argument) : nullptr;
    if (!flag && argument.rfind("--", 0) == 0 && argument != "--") {
      usage_error("report: unknown option '" + shown(argument) + "'" +
                  blockrun::did_you_mean(argument, known) + " (accepted: " + accepted + ")");
    }
    if (!flag) {
      if (argument != "--") paths.push_back(argument);
      continue;
    }
    switch (flag->id) {
      case ReportFlag::json:
        as_json = true;
        break;
      case ReportFlag::force:
        force = true;
        break;
      case ReportFlag::trace:
        if (argument == flag->flag) {
          if (index + 1 == argc || std::string(argv[index + 1]).rfind("-", 0) == 0)
            usage_error(
                "report: --trace needs a value: the file to write the timeline to (--trace OUT.json)");
          trace_path = argv[++index];
        } else {
          trace_path = argument.substr(std::strlen(flag->flag) + 1);
        }
        break;
      case ReportFlag::help:
        print_usage(stdout, false);
        return 0;
    }
  }
  if (paths.empty()) usage_error("report: give the report files, or a directory of them (*.jsonl)");
  if (force && trace_path.empty())
    usage_error("report: --force is for --trace OUT: it lets OUT be overwritten");
  std::vector<Input> inputs = inputs_named(paths);
  if (!trace_path.empty()) {
    struct stat status {};
    if (::stat(trace_path.c_str(), &status) == 0) check_trace_output(trace_path, status, inputs, force);
  }
  // One line at a time: memory holds what the verdict needs, not the reports (issue 40, N4).
  blockrun::JobReader reader;
  std::map<std::string, std::vector<std::string>> skipped;  // by directory ("": files named)
  for (const Input& input : inputs) {
    reader.begin_file(input.path, !trace_path.empty() && !input.regular);
    std::string problem;
    if (!blockrun::for_each_line_in_file(
            input.path, [&](std::string_view line) { reader.add_line(line); }, &problem))
      usage_error("report: cannot read '" + shown(input.path) + "': " + problem);
    if (!reader.end_file()) skipped[input.directory].push_back(input.path);
  }
  say_skipped(skipped);
  std::vector<blockrun::ProcessOutcome> processes = reader.take();
  if (processes.empty())
    usage_error("report: none of the files given is a report of cuda-blockrun (each lacks its start record)");
  if (!trace_path.empty()) write_trace(processes, trace_path, inputs, force);
  if (as_json) {
    std::printf("%s\n", blockrun::job_json(processes).c_str());
  } else {
    for (const std::string& line : blockrun::describe_job(processes))
      std::printf("%s\n", shown(line).c_str());
  }
  return report_exit_status(blockrun::job_outcome(processes));
}

}  // namespace blockrun::cli
// SPDX-License-Identifier: MIT
