// One launch in the report and the log (launch_writer.h).
#include "report/launch_writer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "cuda/names.h"
#include "report/keys.h"

namespace blockrun {

namespace {

void write_dim3(JsonWriter& json, const char* name, const Dim3& dim) {
  json.key(name).begin_array().value(dim.x).value(dim.y).value(dim.z).end_array();
}

void write_library_call(JsonWriter& json, const LaunchRecord& record) {
  json.key(key::library_call);
  if (!record.library_api) {
    json.null();
    return;
  }
  json.begin_object().field(key::api, record.library_api);
  const LibraryCall& call = record.library;
  if (call.m || call.n || call.k) {
    json.field(key::m, static_cast<int64_t>(call.m))
        .field(key::n, static_cast<int64_t>(call.n))
        .field(key::k, static_cast<int64_t>(call.k))
        .field(key::transa, std::string(1, call.transa ? call.transa : '?'))
        .field(key::transb, std::string(1, call.transb ? call.transb : '?'));
  }
  if (call.batch) json.field(key::batch, static_cast<int64_t>(call.batch));
  json.end_object();
}

void write_python_line(JsonWriter& json, const PythonFrame* line) {
  if (!line) {
    json.null();
    return;
  }
  json.begin_object()
      .field(key::file, line->file)
      .field(key::line, line->line)
      .field(key::function, line->function)
      .end_object();
}

// The call site and Python line of a captured launch, or of where a capture began.
void write_site_fields(JsonWriter& json, const Site& site, const PythonFrame* python) {
  json.key(key::callsite);
  if (site.call_site >= 0) {
    write_frame(json, site.frames[site.call_site]);
  } else {
    json.null();
  }
  json.key(key::python_callsite);
  write_python_line(json, python);
}

void write_graph_capture(JsonWriter& json, const GraphCaptureView& view) {
  const CaptureRecord& capture = *view.capture;
  json.begin_object()
      .field(key::how, capture.id ? "captured" : "built node by node")
      .field(key::id, capture.id);
  json.key(key::begun_at).begin_object();
  write_site_fields(json, view.begun_at, view.begun_python);
  json.end_object();
  json.field(key::launches, static_cast<uint64_t>(capture.launches.size() + capture.launches_dropped));
  json.key(key::captured).begin_array();
  for (size_t i = 0; i < capture.launches.size() && i < kCapturedLaunchesReported; ++i) {
    const CapturedLaunch& launch = capture.launches[i];
    const CapturedLaunchView* told = view.launch(i);
    json.begin_object().field(key::position, static_cast<uint64_t>(i + 1)).field(key::seq, launch.sequence);
    json.key(key::kernel).value(launch.kernel ? launch.kernel->name.demangled.c_str() : nullptr);
    json.key(key::kernel_base).value(launch.kernel ? launch.kernel->name.base.c_str() : nullptr);
    json.key(key::library_api).value(launch.library_api);
    write_site_fields(json, told ? told->site : Site{}, told ? told->python : nullptr);
    json.end_object();
  }
  json.end_array();
  // Which node failed, where the graph breadcrumbs tell: exact (one), candidates (parallel branches) or
  // none (every captured kernel completed); null where they cannot tell.
  json.key(key::failed_node);
  const NodeView& nodes = view.nodes;
  if (nodes.known) {
    json.begin_object()
        .field(key::method, "breadcrumbs")
        .field(key::certainty, nodes.unfinished.size() == 1 ? "exact"
                               : nodes.unfinished.empty()   ? "none"
                                                            : "candidates");
    json.key(key::positions).begin_array();
    for (size_t index : nodes.unfinished) json.value(static_cast<uint64_t>(index + 1));
    json.end_array().end_object();
  } else {
    json.null();
  }
  json.end_object();
}

void write_graph(JsonWriter& json, const LaunchView& launch) {
  const LaunchRecord& record = *launch.record;
  json.key(key::graph);
  if (!record.graph) {
    json.null();
    return;
  }
  json.begin_object().field(key::exec, hex(reinterpret_cast<uintptr_t>(record.graph->exec)));
  json.key(key::nodes);
  if (record.graph->nodes) {
    json.value(record.graph->nodes);
  } else {
    json.null();
  }
  json.field(key::replay, static_cast<uint64_t>(record.graph_replay));
  json.key(key::capture);
  if (launch.graph) {
    write_graph_capture(json, *launch.graph);
  } else {
    json.null();
  }
  json.end_object();
}

// Where it was launched from (`site`: symbolized once, for the report and the log).
void write_native_site(JsonWriter& json, const LaunchView& launch) {
  const LaunchRecord& record = *launch.record;
  const Site& site = launch.site;
  json.key(key::callsite);
  if (site.call_site >= 0) {
    write_frame(json, site.frames[site.call_site]);
  } else {
    json.null();
  }
  // "full": the stack was walked; "caller": only the return address into the code that called CUDA is
  // known (a launch nobody asked to capture); "none".
  json.field(key::stack, launch.stack ? "full" : record.caller ? "caller" : "none");
  json.key(key::frames);
  if (launch.stack || record.caller) {
    json.begin_array();
    for (const Frame& frame : site.frames) write_frame(json, frame);
    json.end_array();
    json.field(key::frames_truncated, launch.stack ? launch.stack->native.truncated : true);
  } else {
    json.null();
  }
}

void write_python_frames(JsonWriter& json, const CallStack* stack) {
  json.key(key::python);
  if (!stack || stack->python.status != PythonStatus::Captured) {
    json.null();
    return;
  }
  const PythonStack& python = stack->python;
  json.begin_array();
  for (uint8_t i = 0; i < python.count; ++i) write_python_line(json, &python.frames[i]);
  json.end_array();
  // The gap in `python` (frames of libraries and generated code passed over) and whether frames were left.
  json.field(key::python_frames_skipped, static_cast<int>(python.skipped));
  json.key(key::python_frames_skipped_at);
  if (python.skipped) {
    json.value(static_cast<int>(python.skipped_at));
  } else {
    json.null();
  }
  json.field(key::python_frames_truncated, python.truncated);
}

const char* python_status_name(PythonStatus status) {
  switch (status) {
    case PythonStatus::NotCaptured:
      return "not captured";
    case PythonStatus::NoPython:
      return "no python";
    case PythonStatus::NoThreadState:
      return "no python thread state";
    case PythonStatus::Captured:
      return "captured";
    case PythonStatus::Unavailable:
      return "unavailable";
  }
  return "unavailable";
}

std::string python_status_text(const LaunchView& launch) {
  const LaunchRecord& record = *launch.record;
  const CallStack* stack = launch.stack;
  if (!stack) {
    // Breadcrumbs kept the line of every launch (python_callsite), not its frames.
    if (record.python_status == PythonStatus::Captured)
      return launch.python.user ? "line kept for every launch" : "line not kept (too many distinct lines)";
    return python_status_name(record.python_status);
  }
  const PythonStack& python = stack->python;
  if (python.status == PythonStatus::Captured)
    return python.gil_held ? "captured, GIL held" : "captured, GIL released";
  if (python.status == PythonStatus::Unavailable)
    return fmt::format("unavailable: {}", python.reason ? python.reason : "unknown");
  return python_status_name(python.status);
}

}  // namespace

std::string hex(uint64_t value) {
  return fmt::format("{:#x}", value);
}

std::string describe_stream(const StreamId& id) {
  if (id.per_thread_owner != 0) return fmt::format("per-thread default (thread {})", id.per_thread_owner);
  return fmt::format("{}", id.handle);
}

std::string launch_configuration(const Dim3& grid, const Dim3& block, uint64_t shared_memory,
                                 const std::string& stream) {
  return fmt::format("<<<({},{},{}), ({},{},{}), {}, {}>>>", grid.x, grid.y, grid.z, block.x, block.y,
                     block.z, shared_memory, stream);
}

std::string kernel_launch_text(const std::string& base, uint64_t ordinal) {
  return fmt::format("{}#{}", printable(base), ordinal);
}

std::string launch_name(const LaunchRecord& record) {
  const char* name = record.kernel        ? record.kernel->name.base.c_str()
                     : record.library_api ? record.library_api
                     : record.graph       ? "a graph"
                                          : "(unknown)";
  return fmt::format("{} (launch #{})", printable(name), record.sequence);
}

void write_frame(JsonWriter& json, const Frame& frame) {
  json.begin_object()
      .field(key::address, hex(frame.address))
      .field(key::module, frame.module)
      .field(key::offset, hex(frame.module_offset));
  json.key(key::function).value(frame.function.empty() ? nullptr : frame.function.c_str());
  json.key(key::file).value(frame.file.empty() ? nullptr : frame.file.c_str());
  json.key(key::line);
  if (frame.line > 0) {
    json.value(frame.line);
  } else {
    json.null();
  }
  json.end_object();
}

void write_launch(JsonWriter& json, const LaunchView& launch) {
  const LaunchRecord& record = *launch.record;
  json.begin_object().field(key::seq, record.sequence).field(key::api, record.api);
  json.key(key::driver_api).value(record.driver_api);
  if (record.kernel) {
    json.field(key::kernel, record.kernel->name.demangled)
        .field(key::kernel_mangled, record.kernel->name.mangled)
        .field(key::kernel_base, record.kernel->name.base)
        .field(key::kernel_launch, record.kernel_ordinal);
  } else {
    json.key(key::kernel).null().key(key::kernel_mangled).null();
  }
  json.key(key::collective).value(record.kernel ? record.kernel->collective : nullptr);
  json.field(key::stream, describe_stream(record.stream)).field(key::thread, record.thread);
  json.field(key::thread_launch, record.thread_launch);
  write_dim3(json, key::grid, record.grid);
  write_dim3(json, key::block, record.block);
  json.field(key::shared_memory, record.shared_memory).field(key::blocked, record.blocked);
  write_library_call(json, record);
  write_graph(json, launch);
  write_native_site(json, launch);
  json.key(key::python_callsite);
  write_python_line(json, launch.python.user);
  write_python_frames(json, launch.stack);
  json.field(key::python_status, python_status_text(launch));
  json.end_object();
}

}  // namespace blockrun

namespace blockrun {

namespace {

spdlog::level::level_enum level_of(const SiteLog& log) {
  return log.error ? spdlog::level::err : spdlog::level::info;
}

std::string python_text(const PythonFrame& frame) {
  return fmt::format("{}:{} in {}", printable(frame.file), frame.line, printable(frame.function));
}

// `file:line, python file:line in function`, or "an unknown place".
std::string place(const Site& site, const PythonFrame* python) {
  std::string text;
  if (site.call_site >= 0) text = short_location(site.frames[site.call_site]);
  if (python) text += fmt::format("{}python {}", text.empty() ? "" : ", ", python_text(*python));
  return text.empty() ? std::string("an unknown place") : text;
}

std::string what_was_captured(const CapturedLaunch& launch) {
  return launch.kernel ? "kernel " + printable(launch.kernel->name.demangled)
                       : printable(launch.library_api ? launch.library_api : "a library call");
}

// The stack walked, and the Python frames with the gap of library frames passed over.
void log_stack(const SiteLog& log, const LaunchView& launch) {
  auto level = level_of(log);
  const Site& site = launch.site;
  const CallStack& stack = *launch.stack;
  for (size_t i = 0; i < site.frames.size(); ++i) {
    const Frame& frame = site.frames[i];
    log.logger.log(
        level, "{}  #{:<2} {}{} {}", log.indent, i, static_cast<int>(i) == site.call_site ? "*" : " ",
        printable(frame.function.empty() ? "??" : frame.function), printable(short_location(frame)));
  }
  if (stack.native.truncated) log.logger.log(level, "{}  ... (more frames)", log.indent);
  const PythonStack& python = stack.python;
  if (python.status != PythonStatus::Captured) return;
  auto gap = [&] {
    log.logger.log(level, "{}  py   ... {} frame{} of library or generated code ...", log.indent,
                   static_cast<int>(python.skipped), python.skipped == 1 ? "" : "s");
  };
  for (uint8_t i = 0; i < python.count; ++i) {
    if (python.skipped && i == python.skipped_at) gap();
    log.logger.log(level, "{}  py#{} {}", log.indent, i, python_text(python.frames[i]));
  }
  if (python.skipped && python.skipped_at >= python.count) gap();
  if (python.truncated) log.logger.log(level, "{}  py   ... (more frames)", log.indent);
}

void log_call_site(const SiteLog& log, const LaunchView& launch) {
  const PythonCallSite& python_site = launch.python;
  if (!launch.stack && !launch.record->caller && !python_site.user) return;
  auto level = level_of(log);
  const Site& site = launch.site;
  if (site.call_site >= 0) {
    const Frame& frame = site.frames[site.call_site];
    std::string where = short_location(frame);
    if (!frame.function.empty() && frame.line > 0) where += " in " + frame.function;
    log.logger.log(level, "{}launched at {}", log.indent, printable(where));
  } else if (!site.frames.empty() && launch.stack) {
    log.logger.log(level, "{}launched from CUDA's own code (no frame of the program on the stack)",
                   log.indent);
  }
  if (python_site.user) {
    // The program's own line first; the framework's innermost frame after it, when they differ.
    std::string through;
    if (const PythonFrame* top = python_site.innermost)
      through = fmt::format(" (innermost: {})", python_text(*top));
    log.logger.log(level, "{}python: {}{}", log.indent, python_text(*python_site.user), through);
  }
  if (!launch.stack) return;
  const PythonStack& python = launch.stack->python;
  if (!python_site.user && python.status == PythonStatus::Unavailable) {
    log.logger.log(level, "{}python: frames unavailable: {}", log.indent,
                   python.reason ? python.reason : "unknown reason");
  }
  if (log.stack) log_stack(log, launch);
}

// What the log says of the node that failed, when the graph breadcrumbs do not name one.
std::string among_text(const SiteLog& log, const LaunchView& launch) {
  const NodeView& nodes = launch.graph->nodes;
  if (!log.error) return "";
  if (!launch.failed) return " (if this replay failed, the node that failed is among them)";
  if (!nodes.known) return " (the node that failed is among them)";
  if (nodes.unfinished.empty())
    return " (the breadcrumbs say every one completed in this replay: the error is not one of these "
           "kernels')";
  return fmt::format(
      " (the node that failed is one of the {} marked: parallel branches, each stopped there, breadcrumbs)",
      nodes.unfinished.size());
}

// A graph launch whose graph the shim saw captured: where the capture began and what it took, in capture
// order, each with where it was captured; for a failed replay, which node failed where the graph breadcrumbs
// tell (else the node is among those listed).
void log_graph_capture(const SiteLog& log, const LaunchView& launch) {
  const GraphCaptureView& view = *launch.graph;
  const CaptureRecord& capture = *view.capture;
  auto level = level_of(log);
  bool built = capture.id == 0;  // node by node, not by stream capture
  const char* verb = built ? "added" : "captured";
  const char* order = built ? "the order added" : "capture order";
  size_t count = capture.launches.size();
  size_t all = count + capture.launches_dropped;
  const NodeView& nodes = view.nodes;
  bool exact = nodes.known && nodes.unfinished.size() == 1;
  std::string graph = built ? std::string("a graph built node by node")
                            : "the graph captured at " + place(view.begun_at, view.begun_python);
  auto where = [&](size_t i) {
    const CapturedLaunchView* told = view.launch(i);
    return told ? place(told->site, told->python) : place(Site{}, nullptr);
  };
  std::string noun = built ? (all == 1 ? "kernel node" : "kernel nodes")
                           : (all == 1 ? "captured launch" : "captured launches");
  uint32_t replay = launch.record->graph_replay;
  if (exact) {
    size_t failed = nodes.unfinished.front();
    log.logger.log(level, "{}replay {} of {}, node {} of {}: {}, {} at {}", log.indent, replay, graph,
                   failed + 1, all, what_was_captured(capture.launches[failed]), verb, where(failed));
    log.logger.log(level,
                   "{}(found by the breadcrumbs in the graph: the first node that did not complete); its {} "
                   "{}, in {}:",
                   log.indent, all, noun, order);
  } else {
    log.logger.log(level, "{}replay {} of {}", log.indent, replay, graph);
    log.logger.log(level, "{}its {} {}, in {}{}:", log.indent, all, noun, order, among_text(log, launch));
  }
  auto log_line = [&](size_t i) {
    bool marked = std::find(nodes.unfinished.begin(), nodes.unfinished.end(), i) != nodes.unfinished.end();
    log.logger.log(level, "{}  {}. {}, {} at {}{}", log.indent, i + 1, what_was_captured(capture.launches[i]),
                   verb, where(i),
                   !marked ? ""
                   : exact ? "  <- failed"
                           : "  <- candidate");
  };
  size_t shown = std::min(count, kCapturedLaunchesLogged);
  for (size_t i = 0; i < shown; ++i) log_line(i);
  // A failed or candidate node past those is shown too (nodes.unfinished is in capture order).
  size_t more = all - shown;
  for (size_t i : nodes.unfinished) {
    if (i < shown) continue;
    log_line(i);
    --more;
  }
  if (more > 0)
    log.logger.log(level, "{}  ... and {} more (the report lists up to {})", log.indent, more,
                   kCapturedLaunchesReported);
}

}  // namespace

void log_launch_site(const SiteLog& log, const LaunchView& launch) {
  log_call_site(log, launch);
  if (launch.graph) log_graph_capture(log, launch);
}

bool call_site_without_line(const LaunchView& launch) {
  const Site& site = launch.site;
  return site.call_site >= 0 && site.frames[site.call_site].file.empty();
}

void log_missing_libdw(spdlog::logger& logger, const std::string& problem) {
  logger.info(
      "note: no file:line for call sites: libdw could not be loaded ({}); they are told by module offset, "
      "with the function's name where the dynamic symbol table has it",
      printable(problem));
  logger.info(
      "  for file:line install elfutils' libdw (Debian/Ubuntu: apt-get install libdw1; Fedora/RHEL: dnf "
      "install elfutils-libs), or name it with --libdw PATH (CUDA_BLOCKRUN_LIBDW); --libdw off goes without "
      "it and without this note");
}

const CapturedLaunchView* GraphCaptureView::launch(size_t index) const {
  auto found =
      std::lower_bound(launches.begin(), launches.end(), index,
                       [](const CapturedLaunchView& view, size_t wanted) { return view.index < wanted; });
  return found != launches.end() && found->index == index ? &*found : nullptr;
}

const char* found_by_name(FoundBy found_by) {
  static const char* const kNames[] = {"launch", "blocking", "breadcrumbs", "host"};
  return kNames[static_cast<int>(found_by)];
}

std::string describe(const LaunchRecord& record) {
  auto library_call = [&] {
    std::string text = printable(record.library_api);
    const LibraryCall& call = record.library;
    if (call.m || call.n || call.k)
      text += fmt::format(" m={} n={} k={} transa={} transb={}", call.m, call.n, call.k, call.transa,
                          call.transb);
    if (call.batch) text += fmt::format(" batch={}", call.batch);
    return text;
  };
  std::string out;
  if (record.kernel) {
    // The configuration right after the kernel's name, as the program wrote it.
    out =
        "kernel " + printable(record.kernel->name.demangled) +
        launch_configuration(record.grid, record.block, record.shared_memory, describe_stream(record.stream));
    if (record.kernel->collective) out += fmt::format(" (NCCL {})", record.kernel->collective);
    if (record.library_api) out += ", launched by " + library_call();
    out += fmt::format(", launch #{}", record.sequence);
    if (record.kernel_ordinal)
      out += " (" + kernel_launch_text(record.kernel->name.base, record.kernel_ordinal) + ")";
    return record.blocked ? out + ", blocked" : out;
  }
  if (record.graph) {
    out = fmt::format("graph {}", record.graph->exec);
    if (record.graph->nodes) out += fmt::format(" ({} nodes)", record.graph->nodes);
  } else {
    out = record.library_api ? library_call() : std::string("(unknown launch)");
  }
  out += fmt::format(", launch #{}, stream {}", record.sequence, describe_stream(record.stream));
  if (record.blocked) out += ", blocked";
  return out;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
