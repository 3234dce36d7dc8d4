// Telling one launch: its JSON object in the report and its lines in the log (call site, Python line, stack,
// and a graph launch's capture), from a LaunchView (views.h). Decides nothing.
#pragma once

#include <spdlog/common.h>

#include <cstdint>
#include <string>

#include "records.h"
#include "report/report_file.h"
#include "report/views.h"

namespace spdlog {
class logger;
}

namespace blockrun {

std::string hex(uint64_t value);
// `0x7f..`, or `per-thread default (thread 3)`.
std::string describe_stream(const StreamId& id);
// A launch in a few words, for one line of text: `stencil (launch #39)`.
std::string launch_name(const LaunchRecord& record);
// A launch's configuration as CUDA's <<<>>> writes it: grid, block, dynamic shared memory bytes, stream
// (`<<<(4,1,1), (256,1,1), 0, 0x0>>>`).
std::string launch_configuration(const Dim3& grid, const Dim3& block, uint64_t shared_memory,
                                 const std::string& stream);
// A kernel's `ordinal`-th launch as the policy names it (NAME#N, docs/policy.md): `stencil#13`. The one name
// of the per-kernel launch number, in the log, in --explain and in the report's `kernel_launch`.
std::string kernel_launch_text(const std::string& base, uint64_t ordinal);
// A launch in one line: `kernel stencil(float*, int)<<<(4,1,1), (256,1,1), 0, 0x0>>>, launch #51
// (stencil#3)`; a graph or a library call blocked as a unit, which have no configuration of their own: `graph
// 0x5000 (3 nodes), launch #7, stream 0x0`.
std::string describe(const LaunchRecord& record);

// A frame of a call site in the report: {address, module, offset, function, file, line}.
void write_frame(JsonWriter& json, const Frame& frame);
// The report's view of a launch: a JSON object (docs/report.md, "launch").
void write_launch(JsonWriter& json, const LaunchView& launch);

// Where the log says a launch came from, each line with `indent` at `level`; `stack`: its frames too
// (CUDA_BLOCKRUN_STACK); `error`: the launch is part of an error's account.
struct SiteLog {
  spdlog::logger& logger;
  const char* indent;
  bool error;
  bool stack;
};
void log_launch_site(const SiteLog& log, const LaunchView& launch);
// Whether the log tells `launch`'s call site without file:line (its frame has no source file).
bool call_site_without_line(const LaunchView& launch);
// The note for call sites told without file:line because libdw could not be loaded (`problem`, as
// Symbolizer::libdw_problem says it): what is missing, how to install it, what the log gives instead.
void log_missing_libdw(spdlog::logger& logger, const std::string& problem);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
