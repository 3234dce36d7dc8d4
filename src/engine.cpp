// The engine: launch records, policy decisions, per-stream suspects, the first error and the log.
#include "engine.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "names.h"

namespace blockrun {

// Per stream: the newest launches (the suspects when an error surfaces) and how far the stream is
// known to have completed. The ring is guarded by a spinlock held for a copy of one record: CUDA
// serializes launches into one stream anyway, so threads rarely meet here.
struct StreamState {
  static constexpr size_t kRing = 8;  // "up to 8 suspects, newest last"
  StreamId id;
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  uint64_t written = 0;
  LaunchRecord ring[kRing];
  std::atomic<uint64_t> synced_through{0};

  void push(const LaunchRecord& record) {
    while (lock.test_and_set(std::memory_order_acquire)) {
    }
    ring[written++ % kRing] = record;
    lock.clear(std::memory_order_release);
  }
  // Records newer than `after`, oldest first.
  void collect(uint64_t after, uint64_t exclude, std::vector<LaunchRecord>* out) {
    while (lock.test_and_set(std::memory_order_acquire)) {
    }
    uint64_t first = written > kRing ? written - kRing : 0;
    for (uint64_t i = first; i < written; ++i) {
      const LaunchRecord& record = ring[i % kRing];
      if (record.sequence > after && record.sequence != exclude) out->push_back(record);
    }
    lock.clear(std::memory_order_release);
  }
};

namespace {

constexpr size_t kKernelCapacity = 1 << 16;
constexpr size_t kStreamCapacity = 1 << 12;
constexpr size_t kGraphCapacity = 1 << 12;
const void* const kLegacyStream = reinterpret_cast<const void*>(0x1);     // cudaStreamLegacy
const void* const kPerThreadStream = reinterpret_cast<const void*>(0x2);  // cudaStreamPerThread

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

void atomic_max(std::atomic<uint64_t>& target, uint64_t value) {
  uint64_t current = target.load(std::memory_order_relaxed);
  while (current < value && !target.compare_exchange_weak(current, value, std::memory_order_acq_rel)) {
  }
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
      streams_(kStreamCapacity),
      graphs_(kGraphCapacity) {
  if (!terminate_) terminate_ = default_terminate;
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
  thread_local KernelInfo overflow;
  classify(&overflow, "(kernel table full)", false);
  return &overflow;
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

StreamState* Engine::stream_state(StreamId id) {
  uint64_t key =
      (reinterpret_cast<uint64_t>(id.handle) + 1) ^ (static_cast<uint64_t>(id.per_thread_owner) << 48);
  // Threads mostly launch into the stream they launched into last: skip the table for that one.
  // Keyed by the engine's serial number, not its address: a new engine may reuse a freed one's address.
  struct LastStream {
    uint64_t engine;
    uint64_t key;
    StreamState* state;
  };
  thread_local LastStream last{0, 0, nullptr};
  if (last.engine == serial_ && last.key == key) return last.state;
  StreamState* state = streams_.find_or_insert(key, [&] {
    auto* created = new StreamState;
    created->id = id;
    return created;
  });
  if (state) last = LastStream{serial_, key, state};
  return state;
}

void Engine::begin_launch(const LaunchRequest& request, Launch* out) {
  Launch& launch = *out;
  LaunchRecord& record = launch.record;
  record.sequence = next_sequence_.fetch_add(1, std::memory_order_acq_rel);
  record.api = request.api;
  record.driver_api = request.driver_api;
  record.kernel = request.kernel;
  record.graph = request.graph;
  record.library_api = request.library_api;
  record.library = request.library;
  record.grid = request.grid;
  record.block = request.block;
  record.shared_memory = request.shared_memory;
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
  launch.stream = stream_state(record.stream);
  if (launch.stream) launch.stream->push(record);
}

void Engine::end_launch(Launch& launch, ErrorCode launch_result, BlockOutcome outcome, ErrorCode sync_result,
                        const char* sync_api) {
  const LaunchRecord& record = launch.record;
  if (!launch_result.ok()) {
    if (config_.log_launches) log_launch(launch, "failed");
    // A launch error is synchronous (a bad configuration, a dead context): it is this launch's own.
    first_error(record.api, launch_result, &record, true, "the launch itself failed", {});
    return;
  }
  switch (outcome) {
    case BlockOutcome::NotBlocked:
      if (launch.decision.action == Action::Log) {
        log_launch(launch, fmt::format("logged by rule {}", launch.decision.rule + 1).c_str());
      } else if (config_.log_launches) {
        log_launch(launch, "");
      }
      return;
    case BlockOutcome::Synchronized: {
      blocked_.fetch_add(1, std::memory_order_relaxed);
      if (config_.log_launches) log_launch(launch, sync_result.ok() ? "blocked" : "blocked, failed");
      if (sync_result.ok()) {
        if (launch.stream) atomic_max(launch.stream->synced_through, record.sequence);
        return;
      }
      // Exact when everything earlier on this stream was known complete; otherwise the earlier
      // unsynchronized launches on the stream are suspects as well.
      std::vector<LaunchRecord> earlier =
          launch.stream ? suspects(launch.stream, record.sequence) : std::vector<LaunchRecord>{};
      bool exact = earlier.empty();
      first_error(sync_api, sync_result, &record, exact, "blocking synchronize after the launch",
                  std::move(earlier));
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
      if (config_.log_launches) log_launch(launch, "not blocked: stream capturing");
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
      if (config_.log_launches) log_launch(launch, "not blocked: capture state unknown");
      report_shim_problem(
          "could not tell whether a stream is capturing (the CUDA query failed or is missing); launches on "
          "such streams are not blocked");
      return;
  }
}

void Engine::end_sync(const char* api, bool device_wide, const void* stream, bool per_thread_default_stream,
                      uint64_t mark, ErrorCode result) {
  // Only launches numbered before the synchronize began are known complete.
  uint64_t through = mark - 1;
  if (result.ok()) {
    if (device_wide) {
      atomic_max(device_synced_through_, through);
    } else if (StreamState* state = stream_state(stream_id(stream, per_thread_default_stream))) {
      atomic_max(state->synced_through, through);
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
  StreamState* state = nullptr;
  if (stream || per_thread_default_stream) state = stream_state(stream_id(stream, per_thread_default_stream));
  std::vector<LaunchRecord> found = suspects(state, 0);
  if (found.empty() && state) found = suspects(nullptr, 0);  // a sticky fault from another stream
  first_error(api, result, nullptr, false, "", std::move(found));
}

std::vector<LaunchRecord> Engine::suspects(const StreamState* only_stream, uint64_t exclude_sequence) const {
  std::vector<LaunchRecord> found;
  uint64_t device_synced = device_synced_through_.load(std::memory_order_acquire);
  auto visit = [&](StreamState& state) {
    uint64_t after = std::max(device_synced, state.synced_through.load(std::memory_order_acquire));
    state.collect(after, exclude_sequence, &found);
  };
  if (only_stream) {
    visit(*const_cast<StreamState*>(only_stream));
  } else {
    streams_.for_each(visit);
  }
  std::sort(found.begin(), found.end(),
            [](const LaunchRecord& a, const LaunchRecord& b) { return a.sequence < b.sequence; });
  if (found.size() > StreamState::kRing) found.erase(found.begin(), found.end() - StreamState::kRing);
  return found;
}

bool Engine::take_first_error() {
  bool expected = false;
  if (first_error_taken_.compare_exchange_strong(expected, true)) return true;
  later_errors_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void Engine::first_error(const char* api, ErrorCode result, const LaunchRecord* culprit, bool culprit_exact,
                         const char* how, std::vector<LaunchRecord> suspects_found) {
  if (!take_first_error()) return;
  ErrorText text = describe_error_(result);
  std::lock_guard<std::mutex> guard(report_mutex_);
  std::string returned_by = fmt::format("returned by {}", api ? api : "(unknown call)");
  if (*how) returned_by += fmt::format(" ({})", how);
  logger_->error("first error: {} ({}), {}", text.name, text.text, returned_by);
  first_error_summary_ = text.name;
  if (culprit) {
    logger_->error("  in {}", describe(*culprit));
    first_error_summary_ += fmt::format(" at launch #{}", culprit->sequence);
  }
  if (!suspects_found.empty()) {
    logger_->error(
        culprit ? "  not exact: these earlier launches on its stream were not synchronized and may have "
                  "faulted instead, newest last:"
                : "  culprit unknown (no blocked launch failed); suspects: launches not known to "
                  "have completed, newest last:");
    // The kernels to block in a second run, so that each suspect is synchronized on its own.
    std::vector<std::string> names;
    auto add_name = [&](const LaunchRecord& record) {
      std::string name = record.kernel        ? record.kernel->name.base
                         : record.library_api ? record.library_api
                                              : "";
      if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    };
    if (culprit) add_name(*culprit);
    for (const LaunchRecord& suspect : suspects_found) {
      logger_->error("    {}", describe(suspect));
      add_name(suspect);
    }
    std::string rule = fmt::format("{}", fmt::join(names, ","));
    logger_->error("  to pin it: run again with --block '{}' (or CUDA_BLOCKRUN_BLOCK='{}'), or --block all",
                   rule, rule);
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

void Engine::log_launch(const Launch& launch, const char* what) {
  LaunchRecord record = launch.record;
  record.blocked = false;  // `what` says what happened; the record says only what the policy wanted
  logger_->info("launch: {}{}{} via {}{}{}", describe(record), *what ? " -> " : "", what, record.api,
                record.driver_api ? " > " : "", record.driver_api ? record.driver_api : "");
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
  facts.sequence = next_sequence_.load(std::memory_order_relaxed);
  facts.thread = current_thread_number();
  if (config_.block.uses_time()) facts.elapsed_ms = now_ms() - start_ms_;
  return config_.block.decide(facts);
}

const GraphInfo* Engine::graph(const void* exec) {
  uint64_t key = reinterpret_cast<uint64_t>(exec) + 1;
  if (GraphInfo* known = graphs_.find(key)) return known;
  return note_graph(exec, 0);
}

const GraphInfo* Engine::note_graph(const void* exec, uint64_t nodes) {
  GraphInfo* info = graphs_.find_or_insert(reinterpret_cast<uint64_t>(exec) + 1, [&] {
    auto* created = new GraphInfo;
    created->exec = exec;
    return created;
  });
  if (!info) return &overflow_graph_;
  // An executable graph's address can be reused after it is destroyed: the latest count wins.
  if (nodes) info->nodes = nodes;
  return info;
}

void Engine::finish() {
  // A child forked from the process inherits the engine and its counts: the summary is the parent's to
  // write (a forked child that exits normally must not repeat it).
  if (getpid() != owner_pid_) return;
  std::lock_guard<std::mutex> guard(report_mutex_);
  uint64_t launches = next_sequence_.load() - 1;
  bool used = launches > 0 || first_error_taken_.load();
  if (config_.summary && used && !finished_.exchange(true)) {
    std::string errors = first_error_taken_.load()
                             ? fmt::format("first error {}, {} later error{}", first_error_summary_,
                                           later_errors_.load(), later_errors_.load() == 1 ? "" : "s")
                             : std::string("no CUDA errors");
    std::string skips = capture_skips_.load()
                            ? fmt::format(", {} not blocked during stream capture", capture_skips_.load())
                            : std::string();
    logger_->info("summary: {} launch{}, {} blocked{}; {}", launches, launches == 1 ? "" : "es",
                  blocked_.load(), skips, errors);
  }
  logger_->flush();
}

}  // namespace blockrun
