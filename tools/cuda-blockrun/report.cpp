// `cuda-blockrun report`: merges the reports of a job's processes into one verdict (docs/distributed.md).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cli.h"
#include "job_report.h"
#include "job_trace.h"
#include "suggest.h"

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

// --trace OUT: the job's timeline, from the launch records of reports written with --log-launches.
void write_trace(const std::vector<blockrun::ProcessOutcome>& processes, const std::string& path) {
  std::string problem;
  std::unique_ptr<blockrun::OutputFile> file = blockrun::OutputFile::open(path, false, &problem);
  if (!file) usage_error("report: cannot write the trace to '" + path + "': " + problem);
  blockrun::JobTrace trace = blockrun::write_job_trace(processes, *file);
  if (!trace.written) usage_error("report: writing the trace to '" + path + "' failed");
  std::fprintf(stderr,
               "cuda-blockrun: trace: %zu launch%s of %zu process%s written to %s (open it in "
               "ui.perfetto.dev or chrome://tracing)\n",
               trace.launches, trace.launches == 1 ? "" : "es", trace.processes,
               trace.processes == 1 ? "" : "es", path.c_str());
  if (trace.without_launches)
    std::fprintf(stderr,
                 "cuda-blockrun: trace: %zu of the processes have no launch records: run them with "
                 "--log-launches for their launches to be in the trace\n",
                 trace.without_launches);
}

int report_command(int argc, char** argv) {
  bool as_json = false;
  std::string trace_path;
  std::vector<std::string> paths;
  for (int index = 0; index < argc; ++index) {
    std::string argument = argv[index];
    if (argument == "--json") {
      as_json = true;
    } else if (argument == "--trace" || argument.rfind("--trace=", 0) == 0) {
      if (argument == "--trace") {
        if (index + 1 == argc || std::string(argv[index + 1]).rfind("-", 0) == 0)
          usage_error("report: --trace needs a value: the file to write the timeline to (--trace OUT.json)");
        trace_path = argv[++index];
      } else {
        trace_path = argument.substr(8);
      }
    } else if (argument == "--help" || argument == "-h") {
      print_usage(stdout, false);
      return 0;
    } else if (argument.rfind("--", 0) == 0 && argument != "--") {
      usage_error("report: unknown option '" + argument + "'" +
                  blockrun::did_you_mean(argument, {"--json", "--trace", "--help"}) +
                  " (accepted: --json, --trace FILE)");
    } else if (argument != "--") {
      paths.push_back(argument);
    }
  }
  if (paths.empty()) usage_error("report: give the report files, or a directory of them (*.jsonl)");
  std::vector<std::pair<std::string, std::string>> reports;
  auto read = [&](const std::filesystem::path& path) {
    std::optional<std::string> contents = read_file(path);
    if (!contents) usage_error("report: cannot read '" + path.string() + "': " + std::strerror(errno));
    reports.emplace_back(path.string(), std::move(*contents));
  };
  for (const std::string& path : paths) {
    std::error_code error;
    std::filesystem::file_status status = std::filesystem::status(path, error);
    if (!std::filesystem::exists(status)) usage_error("report: no such file or directory: '" + path + "'");
    if (!std::filesystem::is_directory(status)) {
      read(path);
      continue;
    }
    std::vector<std::filesystem::path> found = files_in(path, "", ".jsonl");
    if (found.empty()) usage_error("report: no *.jsonl report files in '" + path + "'");
    for (const std::filesystem::path& file : found) read(file);
  }
  std::vector<blockrun::ProcessOutcome> processes = blockrun::read_job(reports, !trace_path.empty());
  if (!trace_path.empty()) write_trace(processes, trace_path);
  if (as_json) {
    std::printf("%s\n", blockrun::job_json(processes).c_str());
  } else {
    for (const std::string& line : blockrun::describe_job(processes)) std::printf("%s\n", line.c_str());
  }
  return report_exit_status(blockrun::job_outcome(processes));
}

}  // namespace blockrun::cli
// SPDX-License-Identifier: MIT
