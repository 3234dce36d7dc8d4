// The engine: launch records, policy decisions, per-stream suspects, the first error and the log.
#include "engine.h"

#include <signal.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cuda_errors.h"
#include "names.h"
#include "sites.h"

namespace blockrun {

namespace {

constexpr size_t kKernelCapacity = 1 << 16;
constexpr size_t kGraphCapacity = 1 << 12;
// Distinct Python launch lines kept (breadcrumbs, captured launches): 1.1 MiB.
constexpr size_t kPythonSiteCapacity = 1 << 12;
constexpr size_t kCapturedFrames = 32;  // of a captured launch's stack, kept to name its capture line
constexpr uint64_t kGraphNotStarted = ~uint64_t{0};  // a graph branch slot before any replay began
constexpr uint64_t kMaxCapturedLaunches = 1 << 20;   // launch records kept for graphs' replays (56 MiB)
constexpr size_t kCapturedLaunchesLogged = 16;       // of a graph, in the log
constexpr size_t kCapturedLaunchesReported = 1024;   // of a graph, in the report
constexpr size_t kApiCapacity = 1 << 7;              // launch entry points: a few dozen exist
constexpr size_t kDriverLogs = 16;                   // newest driver log messages kept
constexpr uint64_t kDriverLogWindowMs = 10000;       // attached to an error this soon after, same thread
constexpr uint64_t kMaxBlockedErrorRecords = 64;     // later ones are counted in the summary
const void* const kLegacyStream = reinterpret_cast<const void*>(0x1);     // cudaStreamLegacy
const void* const kPerThreadStream = reinterpret_cast<const void*>(0x2);  // cudaStreamPerThread

// Wall-clock time for records, seconds since the epoch with microseconds: what merges the reports of
// several processes.
double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The fields every error record starts with.
void begin_error_record(JsonWriter& json, const char* type, const ErrorText& text, ErrorCode code,
                        const char* api) {
  json.begin_object()
      .field("type", type)
      .field("time", epoch_seconds())
      .field("error", text.name)
      .field("code", code.code)
      .field("family", family_name(code.family))
      .field("message", text.text)
      .field("surfaced_api", api);
}

std::string hex(uint64_t value) {
  return fmt::format("{:#x}", value);
}

uint64_t now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void default_terminate(OnError on_error, int exit_status) {
  std::fflush(nullptr);
  if (on_error == OnError::Abort) std::abort();  // a core dump holds the host state at the faulting launch
  _exit(exit_status);
}

// A frame of a call site in the report: {address, module, offset, function, file, line}.
void write_frame(JsonWriter& json, const Frame& frame) {
  json.begin_object()
      .field("address", hex(frame.address))
      .field("module", frame.module)
      .field("offset", hex(frame.module_offset));
  json.key("function").value(frame.function.empty() ? nullptr : frame.function.c_str());
  json.key("file").value(frame.file.empty() ? nullptr : frame.file.c_str());
  json.key("line");
  if (frame.line > 0) {
    json.value(frame.line);
  } else {
    json.null();
  }
  json.end_object();
}

// A launch in a few words, for one line of text: `stencil (launch #39)`.
std::string launch_name(const LaunchRecord& record) {
  const char* name = record.kernel        ? record.kernel->name.base.c_str()
                     : record.library_api ? record.library_api
                     : record.graph       ? "a graph"
                                          : "(unknown)";
  return fmt::format("{} (launch #{})", printable(name), record.sequence);
}

std::string describe_stream(const StreamId& id) {
  if (id.per_thread_owner != 0) return fmt::format("per-thread default (thread {})", id.per_thread_owner);
  return fmt::format("{}", id.handle);
}

}  // namespace

const char* family_name(Family family) {
  switch (family) {
    case Family::Runtime:
      return "runtime";
    case Family::Driver:
      return "driver";
    case Family::Cublas:
      return "cublas";
    case Family::CublasLt:
      return "cublasLt";
  }
  return "unknown";
}

uint32_t current_thread_number() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t number = 0;
  if (number == 0) number = next.fetch_add(1, std::memory_order_relaxed);
  return number;
}

Engine::Engine(Config config, std::shared_ptr<spdlog::logger> logger, ErrorDescriber describe,
               Terminate terminate)
    : config_(std::move(config)),
      logger_(std::move(logger)),
      describe_error_(std::move(describe)),
      terminate_(std::move(terminate)),
      start_ms_(now_ms()),
      owner_pid_(static_cast<long>(getpid())),
      kernels_(kKernelCapacity),
      ledger_(ring_capacity_for(config_), config_.callsites == "all"),
      graphs_(kGraphCapacity),
      api_counts_(kApiCapacity) {
  if (!terminate_) terminate_ = default_terminate;
  capture_all_ = config_.callsites == "all";
  capture_auto_ = config_.callsites == "auto";
  stream_breadcrumbs_ = config_.breadcrumbs;
  graph_breadcrumbs_ = config_.graph_breadcrumbs;
  symbolizer_ = std::make_unique<Symbolizer>(config_.libdw);
}

void Engine::start(ProcessInfo info, std::unique_ptr<ReportFile> report, CaptureFunction capture,
                   PythonCaptureFunction python) {
  process_ = std::move(info);
  report_ = std::move(report);
  capture_ = config_.callsites == "none" ? nullptr : capture;
  if (config_.callsites != "none" && python) {
    python_capture_ = python;
    python_sites_ = std::make_unique<PythonSiteTable>(kPythonSiteCapacity);
    python_every_launch_ = config_.breadcrumbs;
  }
  if (!report_) return;
  JsonWriter json;
  json.begin_object()
      .field("type", "start")
      .field("schema", kReportSchemaVersion)
      .field("time", epoch_seconds())
      .field("host", process_.host)
      .field("pid", static_cast<int64_t>(process_.pid))
      .field("rank", static_cast<int64_t>(process_.rank))
      .field("process", process_.name);
  json.key("argv").begin_array();
  for (const std::string& argument : process_.argv) json.value(argument);
  json.end_array();
  json.field("shim_version", process_.shim_version);
  auto version = [&](const char* name, int number) {
    json.key(name);
    if (number > 0) {
      json.value(fmt::format("{}.{}", number / 1000, (number % 1000) / 10));
    } else {
      json.null();
    }
  };
  version("cuda_driver_version", process_.driver_version);
  version("cuda_runtime_version", process_.runtime_version);
  json.key("configuration").begin_object();
  for (const auto& [variable, value] : process_.configuration) json.field(variable, value);
  json.end_object().end_object();
  report_->write_record(json.text());
}

Engine::~Engine() = default;

const KernelInfo* Engine::new_kernel(const void* handle,
                                     const std::function<const char*()>& resolve_mangled_name) {
  // Names the kernel and caches what depends only on its names; where the rules look only at names,
  // the decision itself is made once per kernel (`keep`: the record lives as long as the process).
  auto classify = [&](KernelInfo* info, const char* fallback_name, bool keep) {
    const char* mangled = resolve_mangled_name();
    info->name = make_kernel_name(mangled ? mangled : fallback_name);
    info->rule_mask = config_.block.name_mask(info->name);
    info->nccl = is_nccl_kernel(info->name);
    info->collective = nccl_collective(info->name);
    info->decided = keep && config_.block.per_kernel();
    if (info->decided) {
      LaunchFacts facts;
      facts.kernel = &info->name;
      info->decision = config_.block.decide(facts);
    }
  };
  KernelInfo* info = kernels_.find_or_insert(kernel_key(handle), [&] {
    auto* created = new KernelInfo;
    classify(created, "(unnamed kernel)", true);
    return created;
  });
  if (info) return info;
  // Past the bound: one shared record, decided per launch from the name resolved now (documented).
  // Never destroyed (a launch can come after the thread's destructors ran, during exit).
  thread_local KernelInfo* overflow = new KernelInfo;
  classify(overflow, "(kernel table full)", false);
  return overflow;
}

StreamId Engine::stream_id(const void* handle, bool per_thread_default_stream) const {
  StreamId id;
  if (handle == kLegacyStream) handle = nullptr;
  if (handle == kPerThreadStream || (handle == nullptr && per_thread_default_stream)) {
    id.handle = kPerThreadStream;
    id.per_thread_owner = current_thread_number();
    return id;
  }
  id.handle = handle;
  return id;
}

void Engine::begin_launch(const LaunchRequest& request, Launch* out) {
  Launch& launch = *out;
  LaunchRecord& record = launch.record;
  record.sequence = ledger_.number_launch();
  record.api = request.api;
  record.driver_api = request.driver_api;
  record.kernel = request.kernel;
  record.graph = request.graph;
  record.library_api = request.library_api;
  record.library = request.library;
  record.grid = request.grid;
  record.block = request.block;
  record.shared_memory = request.shared_memory;
  record.caller = request.caller;
  record.thread = current_thread_number();
  record.stream = stream_id(request.stream, request.per_thread_default_stream);
  if (request.kernel)
    record.kernel_ordinal = const_cast<KernelInfo*>(request.kernel)->launches.fetch_add(1) + 1;
  if (config_.block.blocks_nothing()) {
    launch.decision = Decision{};
  } else if (request.kernel && request.kernel->decided) {
    launch.decision = request.kernel->decision;
  } else {
    LaunchFacts facts;
    facts.kernel = request.kernel ? &request.kernel->name : nullptr;
    if (request.kernel) {
      facts.name_mask = &request.kernel->rule_mask;
      facts.nccl = request.kernel->nccl ? 1 : 0;
    }
    facts.family = request.family;
    facts.library_api = request.graph ? "cuGraphLaunch" : request.library_api;
    facts.library_unit = !request.kernel && facts.library_api;
    facts.sequence = record.sequence;
    facts.kernel_ordinal = record.kernel_ordinal;
    facts.stream = record.stream.handle;
    facts.thread = record.thread;
    if (config_.block.uses_time()) facts.elapsed_ms = now_ms() - start_ms_;
    launch.decision = config_.block.decide(facts);
  }
  record.blocked = launch.decision.blocks();
  record.captured = false;
  record.refused = false;
  // A launch into a capture is where the user wrote a graph node: its stack is walked (captures are rare and
  // not a hot path), since a C++ program's own frame is often below the CUDA runtime's.
  if (capture_ && (wants_capture(launch.decision) || request.in_capture)) {
    capture_(&launch.capture);
    record.captured = true;
  }
  record.python_site = record.python_innermost = 0;
  record.python_status = PythonStatus::NotCaptured;
  if (python_capture_ && (python_every_launch_ || request.in_capture)) keep_python_site(launch);
  count_api(record.api);
  record.graph_replay = 0;
  if (record.graph)
    record.graph_replay = static_cast<uint32_t>(
        const_cast<GraphInfo*>(record.graph)->launches.fetch_add(1, std::memory_order_relaxed) + 1);
  launch.graph_slot = -1;
  launch.capture_position = 0;
  if (request.in_capture && request.capture_id) keep_captured_launch(launch, request.capture_id);
  record.in_capture = request.in_capture;
  launch.stream = stream_state(record.stream);
  // A launch into a capture becomes a graph node and runs only when the graph does (as that graph launch's
  // work): it is never one of its stream's unfinished launches.
  if (launch.stream && !record.in_capture) launch.stream->push(record, &launch.capture);
}

// With breadcrumbs a culprit is named long after its launch: keep the Python line of every launch (the frames
// alone, about 0.6 us without the GIL; no native stack walk), as interned numbers.
void Engine::keep_python_site(Launch& launch) {
  LaunchRecord& record = launch.record;
  PythonStack& python = launch.capture.python;  // a full capture's frames, else a scratch (record.captured)
  if (!record.captured) python_capture_(&python);
  record.python_status = python.status;
  intern_python_sites(python, &record.python_site, &record.python_innermost);
}

void Engine::intern_python_sites(const PythonStack& python, uint32_t* site, uint32_t* innermost) {
  int user = python_call_site(python);
  if (user >= 0) *site = python_sites_->intern(python.frames[user]);
  if (user > 0) *innermost = python_sites_->intern(python.frames[0]);
}

Engine::PythonCallSite Engine::python_call_site_of(const LaunchRecord& record, const Capture* capture) const {
  PythonCallSite found;
  if (capture) {
    int user = python_call_site(capture->python);
    if (user >= 0) found.user = &capture->python.frames[user];
    if (user > 0) found.innermost = &capture->python.frames[0];
  } else if (python_sites_) {
    found.user = python_sites_->get(record.python_site);
    if (found.user) found.innermost = python_sites_->get(record.python_innermost);
  }
  return found;
}

void Engine::count_api(const char* api) {
  if (!api) return;
  struct Last {
    uint64_t engine;
    const char* api;
    ApiCount* count;
  };
  thread_local Last last{0, nullptr, nullptr};
  if (last.engine != serial_ || last.api != api) {
    ApiCount* count = api_counts_.find_or_insert(reinterpret_cast<uint64_t>(api), [&] {
      auto* created = new ApiCount;
      created->api = api;
      return created;
    });
    if (!count) return;
    last = Last{serial_, api, count};
  }
  last.count->launches.fetch_add(1, std::memory_order_relaxed);
}

void Engine::capture_now(Launch& launch) {
  if (launch.record.captured || !capture_) return;
  capture_(&launch.capture);
  launch.record.captured = true;
}

void Engine::end_launch(Launch& launch, ErrorCode launch_result, BlockOutcome outcome, ErrorCode sync_result,
                        const char* sync_api) {
  const LaunchRecord& record = launch.record;
  if (!launch_result.ok()) {
    // The thread is still in the launch call, so its call site can be taken now.
    capture_now(launch);
    if (config_.log_launches) log_launch(launch, "failed", launch_result);
    ErrorMeaning meaning = error_meaning(launch_result);
    // An unknown code may have come after the launch was enqueued: it stays a suspect.
    if (meaning != ErrorMeaning::Unknown) refuse(launch);
    if (meaning == ErrorMeaning::Own) {
      // A bad configuration, a missing image: the launch's own error, and it is the culprit.
      first_error(record.api, launch_result, &launch, true, "the launch itself failed", {}, FoundBy::Launch);
    } else {
      // An earlier kernel's error surfacing here (the context refuses every launch once a kernel faulted):
      // this launch never ran, so the culprit is found as at any other call.
      surfaced(record.api, launch_result, record.stream, &launch);
    }
    return;
  }
  switch (outcome) {
    case BlockOutcome::NotBlocked:
      if (launch.decision.action == Action::Log) {
        log_launch(launch, fmt::format("logged by rule {}", launch.decision.rule + 1).c_str(), launch_result);
      } else if (config_.log_launches) {
        log_launch(launch, "", launch_result);
      }
      return;
    case BlockOutcome::Synchronized: {
      blocked_.fetch_add(1, std::memory_order_relaxed);
      note_blocked(launch);
      if (config_.log_launches)
        log_launch(launch, sync_result.ok() ? "blocked" : "blocked, failed", sync_result);
      if (sync_result.ok()) {
        ledger_.synced(launch.stream, record.sequence);
        return;
      }
      // The launching thread is still inside the launch call: its call site is taken now.
      capture_now(launch);
      std::vector<ReportedLaunch> others = may_have_faulted_instead(launch);
      bool exact = others.empty() && error_meaning(sync_result) != ErrorMeaning::Unknown;
      first_error(sync_api, sync_result, &launch, exact, "blocking synchronize after the launch",
                  std::move(others), FoundBy::Blocking);
      if (report_) {
        ErrorText text = describe_error_(sync_result);
        std::lock_guard<std::mutex> guard(report_mutex_);
        write_blocked_error(launch, text, sync_api, sync_result);
      }
      if (launch.decision.on_error != OnError::Return) {
        {
          std::lock_guard<std::mutex> guard(report_mutex_);
          logger_->error("  ending the process as rule {} says ({})", launch.decision.rule + 1,
                         launch.decision.on_error == OnError::Abort
                             ? std::string("abort")
                             : fmt::format("exit {}", launch.decision.exit_status));
          logger_->flush();
        }
        finish();
        terminate_(launch.decision.on_error, launch.decision.exit_status);
      }
      return;
    }
    case BlockOutcome::SkippedCapture: {
      capture_skips_.fetch_add(1, std::memory_order_relaxed);
      if (config_.log_launches) log_launch(launch, "not blocked: stream capturing", launch_result);
      std::lock_guard<std::mutex> guard(report_mutex_);
      if (!capture_skip_logged_) {
        capture_skip_logged_ = true;
        LaunchRecord not_blocked = record;
        not_blocked.blocked = false;
        logger_->info(
            "blocking skipped for {}: the stream is capturing a CUDA graph, and a synchronize would "
            "invalidate the capture (further skips are counted in the summary)",
            describe(not_blocked));
      }
      return;
    }
    case BlockOutcome::SkippedUnknown:
      if (config_.log_launches) log_launch(launch, "not blocked: capture state unknown", launch_result);
      report_shim_problem(
          "could not tell whether a stream is capturing (the CUDA query failed or is missing); launches on "
          "such streams are not blocked");
      return;
  }
}

void Engine::note_blocked(Launch& launch) {
  const LaunchRecord& record = launch.record;
  BlockStats* stats = nullptr;
  if (record.kernel) {
    stats = &const_cast<KernelInfo*>(record.kernel)->stats;
  } else if (record.graph) {
    stats = &const_cast<GraphInfo*>(record.graph)->stats;
  } else if (record.library_api) {
    std::lock_guard<std::mutex> guard(report_mutex_);  // the blocked path only: it synchronizes anyway
    std::unique_ptr<BlockStats>& slot = unit_stats_[record.library_api];
    if (!slot) slot = std::make_unique<BlockStats>();
    stats = slot.get();
  }
  blocking_ns_.fetch_add(launch.timing.wall_ns, std::memory_order_relaxed);
  if (!stats) return;
  stats->blocked.fetch_add(1, std::memory_order_relaxed);
  stats->wall_ns_total.fetch_add(launch.timing.wall_ns, std::memory_order_relaxed);
  atomic_max(stats->wall_ns_max, launch.timing.wall_ns);
  if (launch.timing.gpu_ns >= 0) {
    uint64_t gpu = static_cast<uint64_t>(launch.timing.gpu_ns);
    stats->gpu_timed.fetch_add(1, std::memory_order_relaxed);
    stats->gpu_ns_total.fetch_add(gpu, std::memory_order_relaxed);
    atomic_max(stats->gpu_ns_max, gpu);
  }
}

void Engine::write_blocked_error(const Launch& launch, const ErrorText& text, const char* sync_api,
                                 ErrorCode code) {
  if (++blocked_error_records_ > kMaxBlockedErrorRecords) return;
  JsonWriter json;
  begin_error_record(json, "blocked_error", text, code, sync_api);
  json.key("launch");
  const Capture* capture = launch.record.captured ? &launch.capture : nullptr;
  launch_json(json, launch.record, capture, site_of(launch.record, capture), true);
  json.end_object();
  report_->write_record(json.text());
}

void Engine::end_sync(const char* api, bool device_wide, const void* stream, bool per_thread_default_stream,
                      uint64_t mark, ErrorCode result) {
  // Only launches numbered before the synchronize began are known complete.
  uint64_t through = mark - 1;
  if (result.ok()) {
    if (device_wide) {
      ledger_.device_synced(through);
    } else {
      ledger_.synced(stream_state(stream_id(stream, per_thread_default_stream)), through);
    }
    return;
  }
  observe_error(api, result, device_wide ? nullptr : stream, per_thread_default_stream);
}

void Engine::observe_error(const char* api, ErrorCode result, const void* stream,
                           bool per_thread_default_stream) {
  if (result.ok()) return;
  if (first_error_taken_.load(std::memory_order_relaxed)) {
    later_errors_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  surfaced(api, result, stream_id(stream, per_thread_default_stream), nullptr);
}

void Engine::watch_error(const char* api, ErrorCode result, const void* stream,
                         bool per_thread_default_stream) {
  // Out of memory, an invalid value: the program's own business (PyTorch's allocator frees its cache and
  // tries again), and never a kernel's fault.
  if (!may_have_surfaced(result)) return;
  observe_error(api, result, stream, per_thread_default_stream);
}

void Engine::note_event_record(const void* event, const void* stream, bool per_thread_default_stream,
                               uint64_t mark) {
  ledger_.note_event_record(event, stream_state(stream_id(stream, per_thread_default_stream)), mark);
}

void Engine::forget_event(const void* event) {
  ledger_.forget_event(event);
}

void Engine::note_stream_wait(const void* stream, bool per_thread_default_stream, const EventPoint& awaited) {
  if (awaited.stream)
    ledger_.note_stream_wait(stream_state(stream_id(stream, per_thread_default_stream)), awaited);
}

EventPoint Engine::event_point(const void* event) {
  return ledger_.event_point(event);
}

void Engine::event_completed(const EventPoint& point) {
  ledger_.event_completed(point);
}

bool Engine::has_unfinished_launches() const {
  return !ledger_.suspects(nullptr, 0).empty();
}

void Engine::check_at_exit(const char* api, ErrorCode result) {
  if (!may_have_surfaced(result) || first_error_taken_.load(std::memory_order_acquire)) return;
  if (!in_owner_process()) return;
  surfaced(api, result, StreamId{}, nullptr, true);
}

void Engine::refuse(Launch& launch) {
  launch.record.refused = true;
  if (launch.stream && !launch.record.in_capture) launch.stream->refuse(launch.record.sequence);
}

std::vector<ReportedLaunch> Engine::may_have_faulted_instead(const Launch& launch) {
  const LaunchRecord& record = launch.record;
  // A sticky error is the context's, not the stream's: any launch not known to have completed, on any
  // stream, may be the one that faulted. Breadcrumbs say how far each stream got.
  if (stream_breadcrumbs_ && breadcrumb_slots_.load(std::memory_order_acquire)) {
    BreadcrumbView view = read_breadcrumbs();
    std::vector<ReportedLaunch> others;
    for (ReportedLaunch& head : view.heads)
      if (head.record.sequence != record.sequence) others.push_back(std::move(head));
    // A head not known (pushed out of the ring) may be the culprit: then everything unfinished is listed.
    if (view.lost.empty()) return others;
  }
  std::vector<ReportedLaunch> others = ledger_.suspects(nullptr, record.sequence);
  // A graph whose breadcrumbs show a node of this replay unfinished: the replay began, so its reset, queued
  // behind everything earlier on the stream, ran, and those earlier launches on its stream completed.
  if (record.graph && !others.empty()) {
    NodeView nodes = graph_nodes(record);
    if (nodes.known && !nodes.unfinished.empty()) {
      others.erase(std::remove_if(others.begin(), others.end(),
                                  [&](const ReportedLaunch& other) {
                                    return other.record.stream == record.stream &&
                                           other.record.sequence < record.sequence;
                                  }),
                   others.end());
    }
  }
  return others;
}

void Engine::surfaced(const char* api, ErrorCode result, StreamId stream, const Launch* refused_launch,
                      bool at_exit) {
  ErrorMeaning meaning = error_meaning(result);
  Surfacing where{refused_launch, at_exit};
  // A call's own error (an invalid value, a copy in the wrong direction) is no kernel's: breadcrumbs are not
  // asked, and the host's view lists what was in flight on its stream, never exactly.
  if (meaning != ErrorMeaning::Own && stream_breadcrumbs_ &&
      breadcrumb_slots_.load(std::memory_order_acquire)) {
    BreadcrumbView view = read_breadcrumbs();
    // One stream stopped short of a launch: the fault was that launch's, however long ago it ran. Exact only
    // for a known asynchronous error: an unknown code may not be a kernel's at all.
    if (view.heads.size() == 1 && view.lost.empty() && meaning == ErrorMeaning::Asynchronous) {
      Launch culprit;
      culprit.record = view.heads.front().record;
      if (const Capture* capture = view.heads.front().capture.get()) culprit.capture = *capture;
      first_error(api, result, &culprit, true, "", {}, FoundBy::Breadcrumbs, nullptr, where);
      return;
    }
    if (!view.heads.empty() || !view.lost.empty()) {
      std::vector<ReportedLaunch> candidates = std::move(view.heads);
      view.heads.clear();
      first_error(api, result, nullptr, false, "", std::move(candidates), FoundBy::Breadcrumbs, &view, where);
      return;
    }
    // No stream has an unfinished launch: the error is not a kernel's (or came from work the shim did not
    // see).
  }
  std::vector<ReportedLaunch> found;
  if (meaning == ErrorMeaning::Own) {
    // The breadcrumbs still say what completed (read_breadcrumbs raises each stream's mark).
    if (stream_breadcrumbs_ && breadcrumb_slots_.load(std::memory_order_acquire)) read_breadcrumbs();
    StreamState* state = stream.handle || stream.per_thread_owner ? stream_state(stream) : nullptr;
    found = ledger_.suspects(state, 0);
    if (found.empty() && state) found = ledger_.suspects(nullptr, 0);
  } else {
    found = ledger_.suspects(nullptr, 0);  // sticky: the fault may be on any stream
  }
  first_error(api, result, nullptr, false, "", std::move(found), FoundBy::Host, nullptr, where);
}

void Engine::set_breadcrumbs(volatile uint64_t* slots, uint32_t count) {
  breadcrumb_count_ = slots ? count : 0;
  breadcrumb_slots_.store(slots, std::memory_order_release);
}

int32_t Engine::new_breadcrumb_slot() {
  if (!breadcrumb_slots_.load(std::memory_order_acquire)) return -1;
  uint32_t next = next_breadcrumb_.fetch_add(1, std::memory_order_relaxed);
  return next < breadcrumb_count_ ? static_cast<int32_t>(next) : -1;  // used up: this one goes without
}

int32_t Engine::breadcrumb_slot(const Launch& launch) {
  if (!stream_breadcrumbs_ || !launch.stream) return -1;
  int32_t slot = launch.stream->breadcrumb.load(std::memory_order_acquire);
  if (slot >= 0) return slot;
  int32_t next = new_breadcrumb_slot();
  if (next < 0) return -1;
  int32_t expected = -1;
  // Another thread may have given this stream a slot meanwhile: then that one stays (and `next` is unused).
  if (!launch.stream->breadcrumb.compare_exchange_strong(expected, next)) return expected;
  return next;
}

size_t Engine::in_flight_now(InFlight* out, size_t max) const {
  const volatile uint64_t* slots = breadcrumb_slots_.load(std::memory_order_acquire);
  if (!slots || max == 0) return 0;
  uint64_t device_synced = ledger_.device_synced_through();
  size_t count = 0;
  ledger_.for_each_stream([&](StreamState& state) {
    int32_t slot = state.breadcrumb.load(std::memory_order_acquire);
    if (slot < 0) return;  // no breadcrumbs on it: how far it got is unknown
    uint64_t after =
        std::max({device_synced, state.synced_through.load(std::memory_order_acquire), slots[slot]});
    if (state.lock.test_and_set(std::memory_order_acquire)) return;  // held by the interrupted code
    const LaunchRecord* first = nullptr;
    uint64_t oldest = state.written > state.capacity ? state.written - state.capacity : 0;
    for (uint64_t i = oldest; i < state.written; ++i) {
      const LaunchRecord& record = state.ring[i % state.capacity];
      if (record.sequence > after && !record.refused && (!first || record.sequence < first->sequence))
        first = &record;
    }
    InFlight found{};
    if (first) found = InFlight{first->sequence, first->kernel, first->stream};
    state.lock.clear(std::memory_order_release);
    if (!first) return;
    // Keep the oldest `max`, in order (insertion into a short array).
    size_t at = count < max ? count++ : max;
    if (at == max) {
      if (found.sequence >= out[max - 1].sequence) return;
      at = max - 1;
    }
    while (at > 0 && out[at - 1].sequence > found.sequence) {
      out[at] = out[at - 1];
      --at;
    }
    out[at] = found;
  });
  return count;
}

Engine::BreadcrumbView Engine::read_breadcrumbs() {
  BreadcrumbView view;
  const volatile uint64_t* slots = breadcrumb_slots_.load(std::memory_order_acquire);
  // Written by the GPU after each launch on the stream: every launch up to it completed.
  ledger_.for_each_stream([&](StreamState& state) {
    int32_t slot = state.breadcrumb.load(std::memory_order_acquire);
    if (slot >= 0 && slots) ledger_.synced(&state, slots[slot]);
  });
  ledger_.settle_waits();
  uint64_t device_synced = ledger_.device_synced_through();
  ledger_.for_each_stream([&](StreamState& state) {
    uint64_t after = std::max(device_synced, state.synced_through.load(std::memory_order_acquire));
    // The first unfinished launch was pushed out of the ring: it exists, but who it was is lost.
    if (state.evicted() > after) {
      view.lost.emplace_back(state.id, after);
      return;
    }
    // The lowest-numbered unfinished one: threads launching into one stream at once may have pushed their
    // records out of order.
    std::vector<ReportedLaunch> unfinished;
    state.collect(after, 0, &unfinished);
    auto first = std::min_element(unfinished.begin(), unfinished.end(),
                                  [](const ReportedLaunch& a, const ReportedLaunch& b) {
                                    return a.record.sequence < b.record.sequence;
                                  });
    if (first != unfinished.end()) view.heads.push_back(std::move(*first));
  });
  std::sort(view.heads.begin(), view.heads.end(), [](const ReportedLaunch& a, const ReportedLaunch& b) {
    return a.record.sequence < b.record.sequence;
  });
  return view;
}

bool Engine::take_first_error() {
  bool expected = false;
  if (first_error_taken_.compare_exchange_strong(expected, true)) return true;
  later_errors_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool Engine::wait_for_first_error_record(int max_ms) const {
  if (first_error_writer_.load(std::memory_order_acquire) == static_cast<long>(syscall(SYS_gettid)))
    return !first_error_writing_.load(std::memory_order_acquire);
  // Taken but its writer not yet registered: a few instructions away from writing.
  auto busy = [&] {
    return first_error_writing_.load(std::memory_order_acquire) ||
           (first_error_taken_.load(std::memory_order_acquire) &&
            first_error_writer_.load(std::memory_order_acquire) == 0);
  };
  for (int waited = 0; busy(); ++waited) {
    if (waited >= max_ms) return false;
    timespec millisecond{0, 1000000};
    nanosleep(&millisecond, nullptr);
  }
  return true;
}

void Engine::first_error(const char* api, ErrorCode result, const Launch* culprit, bool culprit_exact,
                         const char* how, std::vector<ReportedLaunch> suspects_found, FoundBy found_by,
                         const BreadcrumbView* breadcrumbs, Surfacing where) {
  if (!take_first_error()) return;
  first_error_writer_.store(static_cast<long>(syscall(SYS_gettid)), std::memory_order_release);
  first_error_writing_.store(true, std::memory_order_release);
  // Termination signals sent meanwhile wait on this thread until the record is out (issue 17, F4): in a
  // single-threaded program the fatal-signal handler would run here, in the middle of it, and the process
  // die without its first_error record (writing it takes 20-100 ms, symbolizing). Where another thread can
  // take the signal, its handler waits for the record (wait_for_first_error_record).
  class Written {
   public:
    explicit Written(std::atomic<bool>& writing) : writing_(writing) {
      sigset_t termination;
      sigemptyset(&termination);
      for (int number : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&termination, number);
      pthread_sigmask(SIG_BLOCK, &termination, &saved_);
    }
    ~Written() {
      writing_.store(false, std::memory_order_release);
      pthread_sigmask(SIG_SETMASK, &saved_, nullptr);  // a signal held back is delivered now
    }

   private:
    std::atomic<bool>& writing_;
    sigset_t saved_;
  } written(first_error_writing_);
  ErrorText text = describe_error_(result);
  std::vector<std::string> driver_logs = recent_driver_logs();
  std::lock_guard<std::mutex> guard(report_mutex_);
  const LaunchRecord* culprit_record = culprit ? &culprit->record : nullptr;
  const Capture* culprit_capture = culprit && culprit->record.captured ? &culprit->capture : nullptr;

  // The launches to block in a second run, so that each suspect is synchronized on its own: with breadcrumbs
  // the launches are known, not only their kernels (NAME#N); a graph launch by its API name, as the policy
  // knows graph launches (every one: there is no per-graph ordinal).
  bool by_breadcrumbs = found_by == FoundBy::Breadcrumbs;
  std::vector<PinTarget> targets;
  auto add = [&](const LaunchRecord& record) {
    if (record.kernel) {
      targets.push_back({record.kernel->name.base, by_breadcrumbs ? record.kernel_ordinal : 0});
    } else {
      targets.push_back({record.library_api ? record.library_api : record.graph ? "cuGraphLaunch" : "", 0});
    }
  };
  if (culprit_record) add(*culprit_record);
  for (const ReportedLaunch& suspect : suspects_found) add(suspect.record);
  bool lost = breadcrumbs && !breadcrumbs->lost.empty();
  std::string pin_rule = blockrun::pin_rule(targets, lost);
  // A rule is useful where the culprit is not exact, or was found without its full call site (breadcrumbs).
  bool want_pin_rule = !suspects_found.empty() || lost || (culprit_record && by_breadcrumbs);

  // Each launch's stack is symbolized once, for the report and the log (the whole stack where either shows
  // it).
  bool whole_stack = report_ || config_.stack;
  Site culprit_site = culprit_record ? site_of(*culprit_record, culprit_capture, whole_stack) : Site{};
  // A launch the context refused: where the error surfaced, with its own call site.
  const LaunchRecord* refused_record = where.refused_launch ? &where.refused_launch->record : nullptr;
  const Capture* refused_capture =
      refused_record && refused_record->captured ? &where.refused_launch->capture : nullptr;
  Site refused_site = refused_record ? site_of(*refused_record, refused_capture, whole_stack) : Site{};
  ErrorMeaning meaning = error_meaning(result);
  std::string surfaced_how = where.at_exit ? "surfaced only at exit: no call of the program returned it"
                             : refused_record
                                 ? fmt::format(
                                       "surfaced at the launch of {}, which the context refused (it "
                                       "never ran)",
                                       launch_name(*refused_record))
                                 : std::string("surfaced at a later call");
  std::vector<Site> suspect_sites;
  for (const ReportedLaunch& suspect : suspects_found)
    suspect_sites.push_back(site_of(suspect.record, suspect.capture.get(), whole_stack));

  // The report first: a process that dies right after this still leaves a complete record.
  if (report_) {
    JsonWriter json;
    begin_error_record(json, "first_error", text, result, api ? api : "(unknown call)");
    json.field("how", *how ? how : surfaced_how.c_str())
        .field("certainty", culprit_record && culprit_exact ? "exact" : "suspects");
    static const char* const kFoundBy[] = {"launch", "blocking", "breadcrumbs", "host"};
    json.field("method", kFoundBy[static_cast<int>(found_by)]).field("meaning", error_meaning_name(meaning));
    json.key("launch");
    if (culprit_record) {
      launch_json(json, *culprit_record, culprit_capture, culprit_site, true);
    } else {
      json.null();
    }
    json.key("surfaced_at_launch");
    if (refused_record) {
      launch_json(json, *refused_record, refused_capture, refused_site);
    } else {
      json.null();
    }
    json.key("suspects").begin_array();
    for (size_t i = 0; i < suspects_found.size(); ++i)
      launch_json(json, suspects_found[i].record, suspects_found[i].capture.get(), suspect_sites[i],
                  by_breadcrumbs);
    json.end_array();
    json.key("pin_rule");
    if (want_pin_rule) {
      json.value(pin_rule);
    } else {
      json.null();
    }
    if (breadcrumbs) {
      json.key("breadcrumbs_lost").begin_array();
      for (const auto& [stream, after] : breadcrumbs->lost) {
        json.begin_object()
            .field("stream", describe_stream(stream))
            .field("completed_through", after)
            .end_object();
      }
      json.end_array();
    }
    json.key("driver_log").begin_array();
    for (const std::string& line : driver_logs) json.value(line);
    json.end_array().end_object();
    report_->write_record(json.text());
  }

  std::string returned_by = fmt::format("returned by {}", api ? api : "(unknown call)");
  if (*how) {
    returned_by += fmt::format(" ({})", how);
  } else if (where.at_exit) {
    returned_by =
        fmt::format("seen only at exit, by the shim's own check ({}): no call of the program returned it",
                    api ? api : "(unknown call)");
  }
  logger_->error("first error: {} ({}), {}", text.name, text.text, returned_by);
  if (refused_record) {
    logger_->error(
        "  surfaced at {}: the context refused it (it never ran); the fault is an earlier kernel's",
        describe(*refused_record));
    log_site(*refused_record, refused_capture, refused_site, "    ", true);
  }
  // The log keeps the driver's explanations; its "Returning 700 (...) from cuX" lines repeat the error above
  // (the report keeps every line).
  for (const std::string& line : driver_logs) {
    if (line.rfind("Returning ", 0) != 0) logger_->error("  driver log: {}", printable(line));
  }
  first_error_summary_ = text.name;
  if (where.at_exit) first_error_summary_ += ", surfaced only at exit";
  if (culprit_record) {
    logger_->error("  in {}", describe(*culprit_record));
    log_site(*culprit_record, culprit_capture, culprit_site, "  ", true, true);
    first_error_summary_ += fmt::format(" at launch #{}", culprit_record->sequence);
  }
  if (culprit_record && by_breadcrumbs) {
    logger_->error(
        "  found by breadcrumbs: the first launch on its stream that did not complete; for its full call "
        "site run again with --block '{}'",
        pin_rule);
  }
  if (by_breadcrumbs && !culprit_record) {
    logger_->error("  culprit among the first unfinished launch of each stream (breadcrumbs), oldest first:");
    for (size_t i = 0; i < suspects_found.size(); ++i) {
      logger_->error("    {}", describe(suspects_found[i].record));
      log_site(suspects_found[i].record, suspects_found[i].capture.get(), suspect_sites[i], "      ", true,
               true);
    }
    if (breadcrumbs) {
      for (const auto& [stream, after] : breadcrumbs->lost)
        logger_->error(
            "    stream {}: its first unfinished launch (after #{}) is older than the {} launches kept",
            describe_stream(stream), after, ring_capacity_for(config_));
    }
    logger_->error("  to pin it: run again with --block '{}' (or CUDA_BLOCKRUN_BLOCK='{}')", pin_rule,
                   pin_rule);
  } else if (!suspects_found.empty()) {
    logger_->error(
        culprit ? "  not exact: these launches had not completed and may have faulted instead, newest last:"
                : "  culprit unknown (no blocked launch failed); suspects: launches not known to "
                  "have completed, newest last:");
    for (size_t i = 0; i < suspects_found.size(); ++i) {
      logger_->error("    {}", describe(suspects_found[i].record));
      log_site(suspects_found[i].record, suspects_found[i].capture.get(), suspect_sites[i], "      ", true);
    }
    logger_->error("  to pin it: run again with --block '{}' (or CUDA_BLOCKRUN_BLOCK='{}'), or --block all",
                   pin_rule, pin_rule);
  } else if (!culprit) {
    logger_->error(
        "  no launch is on record as unfinished: the error comes from the call itself or from work "
        "the shim did not see");
  }
  logger_->flush();
}

void Engine::report_shim_problem(const std::string& text) {
  std::lock_guard<std::mutex> guard(report_mutex_);
  if (!reported_problems_.insert(text).second) return;
  logger_->warn("shim problem: {}", text);
  logger_->flush();
}

void Engine::note_driver_log(const char* message, size_t length) {
  if (!message) return;
  DriverLog entry;
  entry.thread = current_thread_number();
  entry.time_ms = now_ms();
  entry.text.assign(message, std::min<size_t>(length, 4096));
  while (!entry.text.empty() && (entry.text.back() == '\n' || entry.text.back() == '\0'))
    entry.text.pop_back();
  std::lock_guard<std::mutex> guard(driver_log_mutex_);
  if (driver_logs_.size() == kDriverLogs) driver_logs_.erase(driver_logs_.begin());
  driver_logs_.push_back(std::move(entry));
}

std::vector<std::string> Engine::recent_driver_logs() {
  // The driver writes its explanation during the failing call, on the calling thread.
  uint32_t thread = current_thread_number();
  uint64_t now = now_ms();
  std::vector<std::string> found;
  std::lock_guard<std::mutex> guard(driver_log_mutex_);
  for (const DriverLog& entry : driver_logs_) {
    if (entry.thread == thread && now - entry.time_ms <= kDriverLogWindowMs) found.push_back(entry.text);
  }
  return found;
}

void Engine::log_launch(const Launch& launch, const char* what, ErrorCode result) {
  LaunchRecord record = launch.record;
  record.blocked = false;  // `what` says what happened; the record says only what the policy wanted
  const Capture* capture = launch.record.captured ? &launch.capture : nullptr;
  std::lock_guard<std::mutex> guard(report_mutex_);
  logger_->info("launch: {}{}{} via {}{}{}", describe(record), *what ? " -> " : "", what, record.api,
                record.driver_api ? " > " : "", record.driver_api ? record.driver_api : "");
  bool write_record = report_ && config_.log_launches;
  Site site = site_of(record, capture, write_record || config_.stack);
  log_site(record, capture, site, "  ", false);
  if (write_record) {
    JsonWriter json;
    json.begin_object().field("type", "launch").field("time", epoch_seconds());
    json.field("outcome", *what ? what : "launched");
    json.key("result");
    if (result.ok()) {
      json.null();
    } else {
      json.value(describe_error_(result).name);
    }
    json.key("launch");
    launch_json(json, launch.record, capture, site);
    json.end_object();
    report_->write_record(json.text());
  }
}

Site Engine::site_of(const LaunchRecord& record, const Capture* capture, bool whole_stack) {
  return site_of(record.caller, capture, record.kernel ? &record.kernel->name : nullptr, whole_stack);
}

Site Engine::site_of(const CapturedLaunch& launch) {
  const KernelName* kernel = launch.kernel ? &launch.kernel->name : nullptr;
  if (launch.frames.empty()) return site_of(launch.caller, nullptr, kernel, false);
  NativeStack stack;
  for (uintptr_t frame : launch.frames) stack.frames[stack.depth++] = frame;
  return resolve_site(*symbolizer_, stack, process_.shim_module, kernel, false);
}

Site Engine::site_of(uintptr_t caller, const Capture* capture, const KernelName* kernel, bool whole_stack) {
  if (capture) return resolve_site(*symbolizer_, capture->native, process_.shim_module, kernel, whole_stack);
  // No stack was walked: the return address into the code that called CUDA is the one frame known (often
  // the program's own, or its launch stub inlined into it).
  NativeStack one;
  if (caller) one.frames[one.depth++] = caller;
  return resolve_site(*symbolizer_, one, process_.shim_module, kernel);
}

void Engine::log_site(const LaunchRecord& record, const Capture* capture, const Site& site,
                      const char* indent, bool error, bool failed) {
  log_call_site(record, capture, site, indent, error);
  log_graph_capture(record, indent, error, failed);
}

// A graph launch whose graph the shim saw captured: where the capture began and what it took, in capture
// order, each with where it was captured; for a failed replay, which node failed where the graph breadcrumbs
// tell (else the node is among those listed).
void Engine::log_graph_capture(const LaunchRecord& record, const char* indent, bool error, bool failed) {
  const CaptureRecord* capture =
      record.graph ? record.graph->capture.load(std::memory_order_acquire) : nullptr;
  if (!capture) return;
  spdlog::level::level_enum level = error ? spdlog::level::err : spdlog::level::info;
  auto where = [&](const Site& site, uint32_t python_site) {
    std::string text;
    if (site.call_site >= 0) text = short_location(site.frames[site.call_site]);
    const PythonFrame* line = python_sites_ ? python_sites_->get(python_site) : nullptr;
    if (line)
      text += fmt::format("{}python {}:{} in {}", text.empty() ? "" : ", ", printable(line->file), line->line,
                          printable(line->function));
    return text.empty() ? std::string("an unknown place") : text;
  };
  auto what = [&](const CapturedLaunch& launch) {
    return launch.kernel ? "kernel " + printable(launch.kernel->name.demangled)
                         : printable(launch.library_api ? launch.library_api : "a library call");
  };
  bool built = capture->id == 0;  // node by node, not by stream capture
  const char* verb = built ? "added" : "captured";
  size_t count = capture->launches.size();
  size_t all = count + capture->launches_dropped;
  NodeView nodes = failed ? graph_nodes(record) : NodeView{};
  bool exact = nodes.known && nodes.unfinished.size() == 1;
  std::string graph = built ? std::string("a graph built node by node")
                            : "the graph captured at " +
                                  where(site_of(capture->begun_by, capture->begun_at.get(), nullptr, false),
                                        capture->python_site);
  auto where_launch = [&](const CapturedLaunch& launch) {
    return where(site_of(launch), launch.python_site);
  };
  std::string noun = built ? (all == 1 ? "kernel node" : "kernel nodes")
                           : (all == 1 ? "captured launch" : "captured launches");
  if (exact) {
    const CapturedLaunch& failed = capture->launches[nodes.unfinished.front()];
    logger_->log(level, "{}replay {} of {}, node {} of {}: {}, {} at {}", indent, record.graph_replay, graph,
                 nodes.unfinished.front() + 1, all, what(failed), verb, where_launch(failed));
    logger_->log(
        level,
        "{}(found by the breadcrumbs in the graph: the first node that did not complete); its {} {}, "
        "in {}:",
        indent, all, noun, built ? "the order added" : "capture order");
  } else {
    logger_->log(level, "{}replay {} of {}", indent, record.graph_replay, graph);
    std::string among = !error         ? ""
                        : !failed      ? " (if this replay failed, the node that failed is among them)"
                        : !nodes.known ? " (the node that failed is among them)"
                        : nodes.unfinished.empty()
                            ? " (the breadcrumbs say every one completed in this replay: the error is not "
                              "one of these kernels')"
                            : fmt::format(
                                  " (the node that failed is one of the {} marked: parallel branches, "
                                  "each stopped there, breadcrumbs)",
                                  nodes.unfinished.size());
    logger_->log(level, "{}its {} {}, in {}{}:", indent, all, noun,
                 built ? "the order added" : "capture order", among);
  }
  auto log_launch_line = [&](size_t i) {
    bool marked = std::find(nodes.unfinished.begin(), nodes.unfinished.end(), i) != nodes.unfinished.end();
    const CapturedLaunch& launch = capture->launches[i];
    logger_->log(level, "{}  {}. {}, {} at {}{}", indent, i + 1, what(launch), verb, where_launch(launch),
                 !marked ? ""
                 : exact ? "  <- failed"
                         : "  <- candidate");
  };
  size_t shown = std::min(count, kCapturedLaunchesLogged);
  for (size_t i = 0; i < shown; ++i) log_launch_line(i);
  // A failed or candidate node past those is shown too (nodes.unfinished is in capture order).
  size_t more = all - shown;
  for (size_t i : nodes.unfinished) {
    if (i < shown) continue;
    log_launch_line(i);
    --more;
  }
  if (more > 0)
    logger_->log(level, "{}  ... and {} more (the report lists up to {})", indent, more,
                 kCapturedLaunchesReported);
}

void Engine::log_call_site(const LaunchRecord& record, const Capture* capture, const Site& site,
                           const char* indent, bool error) {
  PythonCallSite python_site = python_call_site_of(record, capture);
  if (!capture && !record.caller && !python_site.user) return;
  spdlog::level::level_enum level = error ? spdlog::level::err : spdlog::level::info;
  if (site.call_site >= 0) {
    const Frame& frame = site.frames[site.call_site];
    std::string where = short_location(frame);
    if (!frame.function.empty() && frame.line > 0) where += " in " + frame.function;
    logger_->log(level, "{}launched at {}", indent, printable(where));
  } else if (!site.frames.empty()) {
    if (capture)
      logger_->log(level, "{}launched from CUDA's own code (no frame of the program on the stack)", indent);
  }
  if (python_site.user) {
    // The program's own line first; the framework's innermost frame after it, when they differ.
    const PythonFrame& frame = *python_site.user;
    std::string through;
    if (const PythonFrame* top = python_site.innermost) {
      through =
          fmt::format(" (innermost: {}:{} in {})", printable(top->file), top->line, printable(top->function));
    }
    logger_->log(level, "{}python: {}:{} in {}{}", indent, printable(frame.file), frame.line,
                 printable(frame.function), through);
  }
  if (!capture) return;
  const PythonStack& python = capture->python;
  if (!python_site.user && python.status == PythonStatus::Unavailable) {
    logger_->log(level, "{}python: frames unavailable: {}", indent,
                 python.reason ? python.reason : "unknown reason");
  }
  if (!config_.stack) return;
  for (size_t i = 0; i < site.frames.size(); ++i) {
    const Frame& frame = site.frames[i];
    logger_->log(level, "{}  #{:<2} {}{} {}", indent, i, static_cast<int>(i) == site.call_site ? "*" : " ",
                 printable(frame.function.empty() ? "??" : frame.function), printable(short_location(frame)));
  }
  if (capture->native.truncated) logger_->log(level, "{}  ... (more frames)", indent);
  if (python.status == PythonStatus::Captured) {
    // The frames passed over between the innermost and the program's own (PythonStack.skipped) show as a gap.
    auto gap = [&] {
      logger_->log(level, "{}  py   ... {} frame{} of library or generated code ...", indent,
                   static_cast<int>(python.skipped), python.skipped == 1 ? "" : "s");
    };
    for (uint8_t i = 0; i < python.count; ++i) {
      if (python.skipped && i == python.skipped_at) gap();
      const PythonFrame& frame = python.frames[i];
      logger_->log(level, "{}  py#{} {}:{} in {}", indent, i, printable(frame.file), frame.line,
                   printable(frame.function));
    }
    if (python.skipped && python.skipped_at >= python.count) gap();
    if (python.truncated) logger_->log(level, "{}  py   ... (more frames)", indent);
  }
}

void Engine::launch_json(JsonWriter& json, const LaunchRecord& record, const Capture* capture,
                         const Site& site, bool failed) {
  json.begin_object().field("seq", record.sequence).field("api", record.api);
  json.key("driver_api").value(record.driver_api);
  if (record.kernel) {
    json.field("kernel", record.kernel->name.demangled)
        .field("kernel_mangled", record.kernel->name.mangled)
        .field("kernel_base", record.kernel->name.base)
        .field("kernel_launch", record.kernel_ordinal);
  } else {
    json.key("kernel").null().key("kernel_mangled").null();
  }
  json.key("collective").value(record.kernel ? record.kernel->collective : nullptr);
  json.field("stream", describe_stream(record.stream)).field("thread", record.thread);
  json.key("grid").begin_array().value(record.grid.x).value(record.grid.y).value(record.grid.z).end_array();
  json.key("block")
      .begin_array()
      .value(record.block.x)
      .value(record.block.y)
      .value(record.block.z)
      .end_array();
  json.field("shared_memory", record.shared_memory).field("blocked", record.blocked);
  json.key("library_call");
  if (record.library_api) {
    json.begin_object().field("api", record.library_api);
    const LibraryCall& call = record.library;
    if (call.m || call.n || call.k) {
      json.field("m", static_cast<int64_t>(call.m))
          .field("n", static_cast<int64_t>(call.n))
          .field("k", static_cast<int64_t>(call.k))
          .field("transa", std::string(1, call.transa ? call.transa : '?'))
          .field("transb", std::string(1, call.transb ? call.transb : '?'));
    }
    if (call.batch) json.field("batch", static_cast<int64_t>(call.batch));
    json.end_object();
  } else {
    json.null();
  }
  json.key("graph");
  if (record.graph) {
    json.begin_object().field("exec", hex(reinterpret_cast<uintptr_t>(record.graph->exec)));
    json.key("nodes");
    if (record.graph->nodes) {
      json.value(record.graph->nodes);
    } else {
      json.null();
    }
    json.field("replay", static_cast<uint64_t>(record.graph_replay));
    json.key("capture");
    if (const CaptureRecord* capture = record.graph->capture.load(std::memory_order_acquire)) {
      graph_capture_json(json, *capture, failed ? graph_nodes(record) : NodeView{});
    } else {
      json.null();
    }
    json.end_object();
  } else {
    json.null();
  }
  // Where it was launched from (`site`: symbolized by the caller, once for the report and the log).
  auto frame_json = [&](const Frame& frame) { write_frame(json, frame); };
  json.key("callsite");
  if (site.call_site >= 0) {
    frame_json(site.frames[site.call_site]);
  } else {
    json.null();
  }
  // "full": the stack was walked; "caller": only the return address into the code that called CUDA is
  // known (a launch nobody asked to capture); "none".
  json.field("stack", capture ? "full" : record.caller ? "caller" : "none");
  json.key("frames");
  if (capture || record.caller) {
    json.begin_array();
    for (const Frame& frame : site.frames) frame_json(frame);
    json.end_array();
    json.field("frames_truncated", capture ? capture->native.truncated : true);
  } else {
    json.null();
  }
  json.key("python_callsite");
  PythonCallSite python_site = python_call_site_of(record, capture);
  if (python_site.user) {
    const PythonFrame& frame = *python_site.user;
    json.begin_object()
        .field("file", frame.file)
        .field("line", frame.line)
        .field("function", frame.function)
        .end_object();
  } else {
    json.null();
  }
  json.key("python");
  if (capture && capture->python.status == PythonStatus::Captured) {
    json.begin_array();
    for (uint8_t i = 0; i < capture->python.count; ++i) {
      const PythonFrame& frame = capture->python.frames[i];
      json.begin_object()
          .field("file", frame.file)
          .field("line", frame.line)
          .field("function", frame.function)
          .end_object();
    }
    json.end_array();
    // The gap in `python` (frames of libraries and generated code passed over) and whether frames were left.
    json.field("python_frames_skipped", static_cast<int>(capture->python.skipped));
    json.key("python_frames_skipped_at");
    if (capture->python.skipped) {
      json.value(static_cast<int>(capture->python.skipped_at));
    } else {
      json.null();
    }
    json.field("python_frames_truncated", capture->python.truncated);
  } else {
    json.null();
  }
  json.key("python_status");
  if (!capture && record.python_status == PythonStatus::Captured) {
    // Breadcrumbs kept the line of every launch (python_callsite), not its frames.
    json.value(python_site.user ? "line kept for every launch" : "line not kept (too many distinct lines)");
  } else if (!capture && record.python_status != PythonStatus::NotCaptured) {
    json.value(record.python_status == PythonStatus::NoPython        ? "no python"
               : record.python_status == PythonStatus::NoThreadState ? "no python thread state"
                                                                     : "unavailable");
  } else if (!capture) {
    json.value("not captured");
  } else {
    switch (capture->python.status) {
      case PythonStatus::NotCaptured:
        json.value("not captured");
        break;
      case PythonStatus::NoPython:
        json.value("no python");
        break;
      case PythonStatus::NoThreadState:
        json.value("no python thread state");
        break;
      case PythonStatus::Captured:
        json.value(capture->python.gil_held ? "captured, GIL held" : "captured, GIL released");
        break;
      case PythonStatus::Unavailable:
        json.value(
            fmt::format("unavailable: {}", capture->python.reason ? capture->python.reason : "unknown"));
        break;
    }
  }
  json.end_object();
}

void Engine::graph_capture_json(JsonWriter& json, const CaptureRecord& capture, const NodeView& nodes) {
  auto site_json = [&](const Site& site, uint32_t python_site) {
    json.key("callsite");
    if (site.call_site >= 0) {
      write_frame(json, site.frames[site.call_site]);
    } else {
      json.null();
    }
    json.key("python_callsite");
    const PythonFrame* line = python_sites_ ? python_sites_->get(python_site) : nullptr;
    if (line) {
      json.begin_object()
          .field("file", line->file)
          .field("line", line->line)
          .field("function", line->function);
      json.end_object();
    } else {
      json.null();
    }
  };
  json.begin_object().field("how", capture.id ? "captured" : "built node by node").field("id", capture.id);
  json.key("begun_at").begin_object();
  site_json(site_of(capture.begun_by, capture.begun_at.get(), nullptr, false), capture.python_site);
  json.end_object();
  json.field("launches", static_cast<uint64_t>(capture.launches.size() + capture.launches_dropped));
  json.key("captured").begin_array();
  for (size_t i = 0; i < capture.launches.size() && i < kCapturedLaunchesReported; ++i) {
    const CapturedLaunch& launch = capture.launches[i];
    json.begin_object().field("position", static_cast<uint64_t>(i + 1)).field("seq", launch.sequence);
    json.key("kernel").value(launch.kernel ? launch.kernel->name.demangled.c_str() : nullptr);
    json.key("kernel_base").value(launch.kernel ? launch.kernel->name.base.c_str() : nullptr);
    json.key("library_api").value(launch.library_api);
    site_json(site_of(launch), launch.python_site);
    json.end_object();
  }
  json.end_array();
  // Which node failed, where the graph breadcrumbs tell: exact (one), candidates (parallel branches) or
  // none (every captured kernel completed); null where they cannot tell.
  json.key("failed_node");
  if (nodes.known) {
    json.begin_object()
        .field("method", "breadcrumbs")
        .field("certainty", nodes.unfinished.size() == 1 ? "exact"
                            : nodes.unfinished.empty()   ? "none"
                                                         : "candidates");
    json.key("positions").begin_array();
    for (size_t index : nodes.unfinished) json.value(static_cast<uint64_t>(index + 1));
    json.end_array().end_object();
  } else {
    json.null();
  }
  json.end_object();
}

std::string Engine::describe(const LaunchRecord& record) const {
  auto library_call = [&] {
    std::string text = printable(record.library_api);
    const LibraryCall& call = record.library;
    if (call.m || call.n || call.k) {
      text += fmt::format(" m={} n={} k={} transa={} transb={}", call.m, call.n, call.k, call.transa,
                          call.transb);
    }
    if (call.batch) text += fmt::format(" batch={}", call.batch);
    return text;
  };
  std::string head;
  if (record.kernel) {
    head = "kernel " + printable(record.kernel->name.demangled);
    if (record.kernel->collective) head += fmt::format(" (NCCL {})", record.kernel->collective);
    if (record.library_api) head += ", launched by " + library_call();
  } else if (record.graph) {
    head = fmt::format("graph {}", record.graph->exec);
    if (record.graph->nodes) head += fmt::format(" ({} nodes)", record.graph->nodes);
  } else if (record.library_api) {
    head = library_call();
  } else {
    head = "(unknown launch)";
  }
  std::string out =
      fmt::format("{}, launch #{}, stream {}", head, record.sequence, describe_stream(record.stream));
  if (record.kernel) {
    out += fmt::format(", grid ({},{},{}) block ({},{},{})", record.grid.x, record.grid.y, record.grid.z,
                       record.block.x, record.block.y, record.block.z);
  }
  if (record.blocked) out += ", blocked";
  return out;
}

Decision Engine::decide_library_unit(const char* api) const {
  if (config_.block.blocks_nothing()) return Decision{};
  LaunchFacts facts;
  facts.family = LaunchFamily::Cublas;
  facts.library_api = api;
  facts.library_unit = true;
  facts.sequence = ledger_.mark();
  facts.thread = current_thread_number();
  if (config_.block.uses_time()) facts.elapsed_ms = now_ms() - start_ms_;
  return config_.block.decide(facts);
}

const GraphInfo* Engine::graph(const void* exec) {
  uint64_t key = reinterpret_cast<uint64_t>(exec) + 1;
  if (GraphInfo* known = graphs_.find(key)) return known;
  return note_graph(exec, 0);
}

const GraphInfo* Engine::note_graph(const void* exec, uint64_t nodes, const void* graph) {
  GraphInfo* info = graphs_.find_or_insert(reinterpret_cast<uint64_t>(exec) + 1, [&] {
    auto* created = new GraphInfo;
    created->exec = exec;
    return created;
  });
  if (!info) return &overflow_graph_;
  // An executable graph's address can be reused after it is destroyed: the latest count and capture win.
  const CaptureRecord* capture = nullptr;
  if (graph) {
    std::lock_guard<std::mutex> guard(captures_mutex_);
    auto made = graph_captures_.find(graph);
    if (made != graph_captures_.end()) {
      capture = made->second;
      const_cast<CaptureRecord*>(capture)->linked = true;
    }
  }
  // The nodes the program made: without the breadcrumb nodes the shim added.
  if (nodes && capture) nodes -= std::min(nodes, capture->breadcrumb_nodes);
  if (nodes) info->nodes = nodes;
  if (graph) info->capture.store(capture, std::memory_order_release);
  return info;
}

void Engine::begin_capture(uint64_t id, uintptr_t caller) {
  auto record = std::make_unique<CaptureRecord>();
  record->id = id;
  record->begun_by = caller;
  if (capture_) {
    record->begun_at = std::make_unique<Capture>();
    capture_(record->begun_at.get());
    if (python_sites_)
      intern_python_sites(record->begun_at->python, &record->python_site, &record->python_innermost);
  }
  std::lock_guard<std::mutex> guard(captures_mutex_);
  open_captures_[id] = std::move(record);
}

void Engine::keep_captured_launch(Launch& launch, uint64_t capture_id) {
  const LaunchRecord& record = launch.record;
  CapturedLaunch kept;
  kept.sequence = record.sequence;
  kept.kernel = record.kernel;
  kept.library_api = record.library_api;
  kept.stream = record.stream;
  kept.caller = record.caller;
  kept.python_site = record.python_site;
  kept.python_innermost = record.python_innermost;
  if (record.captured) {
    const NativeStack& stack = launch.capture.native;
    kept.frames.assign(stack.frames, stack.frames + std::min<size_t>(stack.depth, kCapturedFrames));
  }
  std::lock_guard<std::mutex> guard(captures_mutex_);
  auto open = open_captures_.find(capture_id);
  if (open == open_captures_.end()) return;  // began before the shim was active
  CaptureRecord& capture = *open->second;
  if (graph_breadcrumbs_ && capture.launches_dropped == 0) {
    // Its branch: the capturing stream it went into (a slot of its own for each).
    auto branch = std::find_if(capture.branches.begin(), capture.branches.end(),
                               [&](const GraphBranch& known) { return known.stream == record.stream; });
    if (branch == capture.branches.end() && capture.branches.size() < CapturedLaunch::kNoBranch) {
      int32_t slot = new_breadcrumb_slot();
      // Until a replay's reset writes 0, the slot says no replay began (a fresh slot holds 0, which would
      // read as "began, nothing completed"). No GPU write to it can be pending: it was never handed out.
      if (slot >= 0) breadcrumb_slots_.load(std::memory_order_acquire)[slot] = kGraphNotStarted;
      capture.branches.push_back(GraphBranch{record.stream, slot});
      branch = capture.branches.end() - 1;
    }
    if (branch != capture.branches.end())
      kept.branch = static_cast<uint16_t>(branch - capture.branches.begin());
  }
  if (!keep_within_bound(capture, kept) || kept.branch == CapturedLaunch::kNoBranch) return;
  launch.graph_slot = capture.branches[kept.branch].slot;
  launch.capture_position = static_cast<uint32_t>(capture.launches.size());
  if (launch.graph_slot >= 0) ++capture.breadcrumb_nodes;
}

bool Engine::keep_within_bound(CaptureRecord& record, const CapturedLaunch& launch) {
  if (captured_launches_kept_ >= kMaxCapturedLaunches) {
    ++record.launches_dropped;
    return false;
  }
  ++captured_launches_kept_;
  record.launches.push_back(launch);
  return true;
}

const std::vector<GraphBranch>* Engine::graph_branches(const LaunchRecord& record) const {
  const CaptureRecord* capture =
      record.graph ? record.graph->capture.load(std::memory_order_acquire) : nullptr;
  return capture && !capture->branches.empty() ? &capture->branches : nullptr;
}

Engine::NodeView Engine::graph_nodes(const LaunchRecord& record) const {
  NodeView view;
  const volatile uint64_t* slots = breadcrumb_slots_.load(std::memory_order_acquire);
  const CaptureRecord* capture =
      record.graph ? record.graph->capture.load(std::memory_order_acquire) : nullptr;
  // The slots hold the progress of the replay that ran last: the caller asks only of a replay that failed
  // (later replays of a graph are queued behind it and never run). A dropped record has no breadcrumb.
  if (!slots || !capture || capture->branches.empty() || capture->launches_dropped > 0) return view;
  std::vector<uint64_t> reached;  // per branch: the capture position its last breadcrumb wrote (0: none)
  for (const GraphBranch& branch : capture->branches) {
    if (branch.slot < 0) return view;  // a branch without a slot: how far it got is unknown
    uint64_t value = slots[branch.slot];
    if (value == kGraphNotStarted) return view;  // no replay's reset ran: none began
    reached.push_back(value);
  }
  // On each branch, the first captured launch past its breadcrumb did not complete; the others after it on
  // that branch cannot have started.
  std::vector<bool> seen(capture->branches.size(), false);
  for (size_t i = 0; i < capture->launches.size(); ++i) {
    uint16_t branch = capture->launches[i].branch;
    if (branch == CapturedLaunch::kNoBranch) return view;  // captured before breadcrumbs were set up
    if (seen[branch] || i + 1 <= reached[branch]) continue;
    seen[branch] = true;
    view.unfinished.push_back(i);
  }
  view.known = true;
  return view;
}

void Engine::note_graph_kernel_node(const void* graph, const KernelInfo* kernel, uintptr_t caller) {
  CapturedLaunch kept;
  kept.kernel = kernel;
  kept.caller = caller;
  if (python_capture_) {
    PythonStack python;
    python_capture_(&python);
    intern_python_sites(python, &kept.python_site, &kept.python_innermost);
  }
  std::lock_guard<std::mutex> guard(captures_mutex_);
  auto made = graph_captures_.find(graph);
  const CaptureRecord* before = made == graph_captures_.end() ? nullptr : made->second;
  CaptureRecord* record = const_cast<CaptureRecord*>(before);
  if (!record || record->linked) {
    // A new graph, or one an executable graph was made from (which keeps what it was made of): a record of
    // its own.
    kept_captures_.push_back(std::make_unique<CaptureRecord>());
    record = kept_captures_.back().get();
    if (before) {
      record->launches = before->launches;
      record->launches_dropped = before->launches_dropped;
      captured_launches_kept_ += before->launches.size();
    }
    graph_captures_[graph] = record;
  }
  keep_within_bound(*record, kept);
}

void Engine::end_capture(uint64_t id, const void* graph) {
  std::lock_guard<std::mutex> guard(captures_mutex_);
  auto open = open_captures_.find(id);
  if (open == open_captures_.end()) return;
  std::unique_ptr<CaptureRecord> record = std::move(open->second);
  open_captures_.erase(open);
  if (!graph) {  // an invalidated capture makes no graph: its launches are not kept
    captured_launches_kept_ -= record->launches.size();
    return;
  }
  graph_captures_[graph] = record.get();
  kept_captures_.push_back(std::move(record));
}

void Engine::finish() {
  // A child forked from the process inherits the engine and its counts: the summary is the parent's to
  // write (a forked child that exits normally must not repeat it).
  if (getpid() != owner_pid_) return;
  std::lock_guard<std::mutex> guard(report_mutex_);
  uint64_t launches = ledger_.launches();
  bool used = launches > 0 || first_error_taken_.load();
  if (used && !finished_.exchange(true)) {
    if (config_.summary) {
      std::string errors = first_error_taken_.load()
                               ? fmt::format("first error {}, {} later error{}", first_error_summary_,
                                             later_errors_.load(), later_errors_.load() == 1 ? "" : "s")
                               : std::string("no CUDA errors");
      std::string skips = capture_skips_.load()
                              ? fmt::format(", {} not blocked during stream capture", capture_skips_.load())
                              : std::string();
      logger_->info("summary: {} launch{}, {} blocked{}; {}", launches, launches == 1 ? "" : "es",
                    blocked_.load(), skips, errors);
      if (blocked_.load() > 0) log_blocked_times();
    }
    if (report_) write_summary_record();
  }
  logger_->flush();
}

namespace {

// One row of the per-kernel table. Names point into the records, which live as long as the process (graphs
// are named when printed): sorting 65,536 kernels at exit then copies no names.
struct UnitRow {
  const std::string* name = nullptr;     // kernel or library call; null for a graph
  const std::string* mangled = nullptr;  // kernels only
  const void* graph = nullptr;
  uint64_t launches = 0;
  const BlockStats* stats = nullptr;
  std::string display() const { return name ? *name : fmt::format("graph {}", graph); }
};

// At most this many rows in the report's summary (most blocked wall time, then most launches, first); the
// rest are counted in kernels_omitted. Keeps the last record of a process that JIT-compiled 100,000 kernels
// to a few hundred kilobytes.
constexpr size_t kSummaryRows = 1000;

double to_ms(uint64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

}  // namespace

// Every kernel, library call and graph launched, most wall time blocked first, then most launches.
static std::vector<UnitRow> unit_rows(const HandleTable<KernelInfo>& kernels,
                                      const HandleTable<GraphInfo>& graphs,
                                      const std::map<std::string, std::unique_ptr<BlockStats>>& units) {
  std::vector<UnitRow> rows;
  kernels.for_each([&](KernelInfo& kernel) {
    rows.push_back(
        {&kernel.name.demangled, &kernel.name.mangled, nullptr, kernel.launches.load(), &kernel.stats});
  });
  graphs.for_each([&](GraphInfo& graph) {
    rows.push_back({nullptr, nullptr, graph.exec, graph.launches.load(), &graph.stats});
  });
  for (const auto& [name, stats] : units)
    rows.push_back({&name, nullptr, nullptr, stats->blocked.load(), stats.get()});
  std::sort(rows.begin(), rows.end(), [](const UnitRow& a, const UnitRow& b) {
    uint64_t wall_a = a.stats->wall_ns_total.load(), wall_b = b.stats->wall_ns_total.load();
    if (wall_a != wall_b) return wall_a > wall_b;
    if (a.launches != b.launches) return a.launches > b.launches;
    if (a.name && b.name) return *a.name < *b.name;
    return a.graph < b.graph;
  });
  return rows;
}

void Engine::log_blocked_times() {
  std::vector<UnitRow> rows = unit_rows(kernels_, graphs_, unit_stats_);
  logger_->info(config_.gpu_time
                    ? "blocked launches by wall time (top 10; GPU time from events around the kernel):"
                    : "blocked launches by wall time (top 10; --gpu-time adds their GPU time):");
  size_t shown = 0;
  for (const UnitRow& row : rows) {
    const BlockStats& stats = *row.stats;
    uint64_t blocked = stats.blocked.load();
    if (blocked == 0 || shown == 10) continue;
    ++shown;
    std::string gpu = stats.gpu_timed.load()
                          ? fmt::format("GPU {:.3f} ms total, {:.3f} max", to_ms(stats.gpu_ns_total.load()),
                                        to_ms(stats.gpu_ns_max.load()))
                          : std::string(config_.gpu_time ? "GPU time not measured" : "no GPU time");
    logger_->info("  {:>9.3f} ms wall ({:.3f} max), {}; {} of {} launches blocked: {}",
                  to_ms(stats.wall_ns_total.load()), to_ms(stats.wall_ns_max.load()), gpu, blocked,
                  row.launches, printable(row.display(), 200));
  }
}

void Engine::write_summary_record() {
  JsonWriter json;
  json.begin_object()
      .field("type", "summary")
      .field("time", epoch_seconds())
      .field("launches", ledger_.launches());
  json.key("launches_by_api").begin_object();
  std::vector<std::pair<std::string, uint64_t>> apis;
  api_counts_.for_each([&](ApiCount& count) { apis.emplace_back(count.api, count.launches.load()); });
  std::sort(apis.begin(), apis.end());
  for (const auto& [api, count] : apis) json.field(api, count);
  json.end_object();
  json.field("blocked", blocked_.load())
      .field("blocking_ms", to_ms(blocking_ns_.load()))
      .field("capture_skips", capture_skips_.load());
  json.key("first_error");
  if (first_error_taken_.load()) {
    json.value(first_error_summary_);
  } else {
    json.null();
  }
  json.field("later_errors", later_errors_.load());
  std::vector<UnitRow> rows = unit_rows(kernels_, graphs_, unit_stats_);
  size_t omitted = rows.size() > kSummaryRows ? rows.size() - kSummaryRows : 0;
  if (omitted) rows.resize(kSummaryRows);
  json.field("kernels_omitted", static_cast<uint64_t>(omitted));
  json.key("kernels").begin_array();
  for (const UnitRow& row : rows) {
    const BlockStats& stats = *row.stats;
    json.begin_object().field("kernel", row.display());
    json.key("kernel_mangled").value(row.mangled ? row.mangled->c_str() : nullptr);
    json.field("launches", row.launches).field("blocked", stats.blocked.load());
    json.field("gpu_timed", stats.gpu_timed.load())
        .field("gpu_ms_total", to_ms(stats.gpu_ns_total.load()))
        .field("gpu_ms_max", to_ms(stats.gpu_ns_max.load()))
        .field("wall_ms_total", to_ms(stats.wall_ns_total.load()))
        .field("wall_ms_max", to_ms(stats.wall_ns_max.load()))
        .end_object();
  }
  json.end_array().end_object();
  report_->write_record(json.text());
}

}  // namespace blockrun
