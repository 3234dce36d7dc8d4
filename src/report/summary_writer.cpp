// The start and summary records, and the log's summary (summary_writer.h).
#include "report/summary_writer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "pieces/duration_histogram.h"
#include "cuda/names.h"
#include "report/report_file.h"
#include "report/error_writer.h"
#include "report/keys.h"

namespace blockrun {

namespace {

// At most this many rows in the report's summary (most blocked wall time, then most launches, first); the
// rest are counted in kernels_omitted. Keeps the last record of a process that JIT-compiled 100,000 kernels
// to a few hundred kilobytes.
constexpr size_t kSummaryRows = 1000;

double to_ms(uint64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

// `12.3` for CUDA's 12030, null for unknown.
void write_version(JsonWriter& json, const char* name, int number) {
  json.key(name);
  if (number > 0) {
    json.value(fmt::format("{}.{}", number / 1000, (number % 1000) / 10));
  } else {
    json.null();
  }
}

// The distributions of a kernel's blocked launch times, where they were made (null: nothing of that kind
// was timed).
const DurationHistogram* wall_times(const BlockStats& stats) {
  const BlockTimes* times = stats.times.load(std::memory_order_acquire);
  return times ? &times->wall : nullptr;
}
const DurationHistogram* gpu_times(const BlockStats& stats) {
  const BlockTimes* times = stats.times.load(std::memory_order_acquire);
  return times ? times->gpu.load(std::memory_order_acquire) : nullptr;
}

// A quantile of blocked launch times in milliseconds (DurationHistogram: within 1/32); 0 where none were
// timed.
double quantile_ms(const DurationHistogram* times, double q) {
  return times ? to_ms(times->quantile(q)) : 0;
}

void write_unit(JsonWriter& json, const UnitRow& row) {
  const BlockStats& stats = *row.stats;
  json.begin_object().field(key::kernel, row.display());
  json.key(key::kernel_mangled).value(row.mangled ? row.mangled->c_str() : nullptr);
  json.field(key::launches, row.launches).field(key::blocked, stats.blocked.load());
  json.field(key::gpu_timed, stats.gpu_timed.load())
      .field(key::gpu_ms_total, to_ms(stats.gpu_ns_total.load()))
      .field(key::gpu_ms_median, quantile_ms(gpu_times(stats), 0.5))
      .field(key::gpu_ms_p90, quantile_ms(gpu_times(stats), 0.9))
      .field(key::gpu_ms_max, to_ms(stats.gpu_ns_max.load()))
      .field(key::wall_ms_total, to_ms(stats.wall_ns_total.load()))
      .field(key::wall_ms_median, quantile_ms(wall_times(stats), 0.5))
      .field(key::wall_ms_p90, quantile_ms(wall_times(stats), 0.9))
      .field(key::wall_ms_max, to_ms(stats.wall_ns_max.load()))
      .end_object();
}

void log_blocked_times(spdlog::logger& logger, const Summary& summary, size_t print_limit) {
  std::string top = print_limit ? fmt::format("top {}", print_limit) : std::string("all");
  logger.info(summary.gpu_time ? "blocked launches by wall time ({}; GPU time from events around the kernel):"
                               : "blocked launches by wall time ({}; --gpu-time adds their GPU time):",
              top);
  size_t shown = 0, more = 0;
  for (const UnitRow& row : summary.units) {
    const BlockStats& stats = *row.stats;
    uint64_t blocked = stats.blocked.load();
    if (blocked == 0) continue;
    if (print_limit && shown == print_limit) {
      ++more;
      continue;
    }
    ++shown;
    std::string gpu = stats.gpu_timed.load()
                          ? fmt::format("GPU {:.3f} ms (median {:.3f}, p90 {:.3f}, max {:.3f})",
                                        to_ms(stats.gpu_ns_total.load()), quantile_ms(gpu_times(stats), 0.5),
                                        quantile_ms(gpu_times(stats), 0.9), to_ms(stats.gpu_ns_max.load()))
                          : std::string(summary.gpu_time ? "GPU time not measured" : "no GPU time");
    logger.info(
        "  {:>9.3f} ms wall (median {:.3f}, p90 {:.3f}, max {:.3f}), {}; {} of {} launches blocked: {}",
        to_ms(stats.wall_ns_total.load()), quantile_ms(wall_times(stats), 0.5),
        quantile_ms(wall_times(stats), 0.9), to_ms(stats.wall_ns_max.load()), gpu, blocked, row.launches,
        printable(row.display(), 200));
  }
  if (more)
    logger.info("  ... and {} more (--print-limit 0 prints all; --report's summary lists up to {})", more,
                kSummaryRows);
}

}  // namespace

std::string UnitRow::display() const {
  return name ? *name : fmt::format("graph {}", graph);
}

namespace {

// What the driver lacks of the shim's newer entry points and what that costs (issue 42); null where no driver
// was loaded (yet).
void write_driver_missing(JsonWriter& json, const DriverSupport& driver) {
  json.key(key::driver_missing);
  if (!driver.version) {
    json.null();
    return;
  }
  json.begin_array();
  for (const DriverFeature* feature : driver.missing) {
    json.begin_object()
        .field(key::entry_point, feature->entry_point)
        .field(key::feature, feature->feature)
        .field(key::cost, feature->cost)
        .key(key::fallback);
    if (*feature->fallback) {
      json.value(feature->fallback);
    } else {
      json.null();
    }
    json.end_object();
  }
  json.end_array();
}

}  // namespace

std::string start_json(const ProcessInfo& process) {
  JsonWriter json;
  json.begin_object()
      .field(key::type, "start")
      .field(key::schema, kReportSchemaVersion)
      .field(key::time, epoch_seconds())
      .field(key::host, process.host)
      .field(key::pid, static_cast<int64_t>(process.pid))
      .field(key::rank, static_cast<int64_t>(process.rank));
  if (process.run.empty()) {
    json.key(key::run).null();
  } else {
    json.field(key::run, process.run);
  }
  json.field(key::process, process.name);
  json.key(key::argv).begin_array();
  for (const std::string& argument : process.argv) json.value(argument);
  json.end_array();
  json.field(key::shim_version, process.shim_version);
  write_version(json, key::cuda_driver_version, process.driver_version);
  write_version(json, key::cuda_runtime_version, process.runtime_version);
  write_driver_missing(json, process.driver);
  json.key(key::configuration).begin_object();
  for (const auto& [variable, value] : process.configuration) json.field(variable, value);
  json.end_object().end_object();
  return json.text();
}

void sort_units(std::vector<UnitRow>& rows) {
  std::sort(rows.begin(), rows.end(), [](const UnitRow& a, const UnitRow& b) {
    uint64_t wall_a = a.stats->wall_ns_total.load(), wall_b = b.stats->wall_ns_total.load();
    if (wall_a != wall_b) return wall_a > wall_b;
    if (a.launches != b.launches) return a.launches > b.launches;
    if (a.name && b.name) return *a.name < *b.name;
    return a.graph < b.graph;
  });
}

std::string summary_json(const Summary& summary, long pid) {
  JsonWriter json;
  json.begin_object()
      .field(key::type, "summary")
      .field(key::time, epoch_seconds())
      .field(key::pid, static_cast<int64_t>(pid))
      .field(key::launches, summary.launches);
  json.key(key::launches_by_api).begin_object();
  for (const auto& [api, count] : summary.launches_by_api) json.field(api, count);
  json.end_object();
  json.field(key::blocked, summary.blocked)
      .field(key::blocking_ms, to_ms(summary.blocking_ns))
      .field(key::capture_skips, summary.capture_skips);
  json.key(key::first_error);
  if (summary.first_error) {
    json.value(summary.first_error_summary);
  } else {
    json.null();
  }
  json.field(key::later_errors, summary.later_errors);
  if (summary.driver) {
    write_version(json, key::cuda_driver_version, summary.driver->version);
    write_driver_missing(json, *summary.driver);
  }
  size_t rows = std::min(summary.units.size(), kSummaryRows);
  json.field(key::kernels_omitted, static_cast<uint64_t>(summary.units.size() - rows));
  json.key(key::kernels).begin_array();
  for (size_t i = 0; i < rows; ++i) write_unit(json, summary.units[i]);
  json.end_array().end_object();
  return json.text();
}

void log_summary(spdlog::logger& logger, const Summary& summary, size_t print_limit) {
  std::string errors = summary.first_error
                           ? fmt::format("first error {}, {} later error{}", summary.first_error_summary,
                                         summary.later_errors, summary.later_errors == 1 ? "" : "s")
                           : std::string("no CUDA errors");
  std::string skips = summary.capture_skips
                          ? fmt::format(", {} not blocked during stream capture", summary.capture_skips)
                          : std::string();
  logger.info("summary: {} launch{}, {} blocked{}; {}", summary.launches, summary.launches == 1 ? "" : "es",
              summary.blocked, skips, errors);
  if (summary.blocked > 0) log_blocked_times(logger, summary, print_limit);
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
