// Telling the process as a whole: its `start` record, and at the end its `summary` record and the log's
// summary line with the table of blocked launches, from plain values. Decides nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "records.h"
#include "report/process_info.h"

namespace spdlog {
class logger;
}

namespace blockrun {

std::string start_json(const ProcessInfo& process);

// One row of the per-kernel table. Names point into the records, which live as long as the process (graphs
// are named when printed): sorting 65,536 kernels at exit then copies no names.
struct UnitRow {
  const std::string* name = nullptr;     // kernel or library call; null for a graph
  const std::string* mangled = nullptr;  // kernels only
  const void* graph = nullptr;
  uint64_t launches = 0;
  const BlockStats* stats = nullptr;
  std::string display() const;
};

// The process's counts at the end. `units`: every kernel, library call and graph launched, most wall time
// blocked first, then most launches.
struct Summary {
  uint64_t launches = 0;
  std::vector<std::pair<std::string, uint64_t>> launches_by_api;  // sorted by API
  uint64_t blocked = 0;
  uint64_t blocking_ns = 0;
  uint64_t capture_skips = 0;
  bool first_error = false;
  std::string first_error_summary;
  uint64_t later_errors = 0;
  std::vector<UnitRow> units;
  bool gpu_time = false;                  // --gpu-time was on
  const DriverSupport* driver = nullptr;  // the driver as last known (version 0: none was seen)
};

// Sorts `rows` as Summary::units are.
void sort_units(std::vector<UnitRow>& rows);
// `pid`: the process's (error_writer.h).
std::string summary_json(const Summary& summary, long pid);
// The summary line and, when launches were blocked, a header and the `print_limit` kernels (0: all) that
// blocked longest, with a last line counting the rest where there are more.
void log_summary(spdlog::logger& logger, const Summary& summary, size_t print_limit);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
