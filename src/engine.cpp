// The engine: numbers launches, asks the policy, follows what completed, and decides the first error's
// culprit; the pieces it uses own their state (engine.h's head names them) and the writers under report/ tell
// what it decided.
#include "engine.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <type_traits>

#include "callsites/sites.h"
#include "config/config.h"
#include "cuda/cuda_errors.h"
#include "cuda/names.h"
#include "launch_path.h"
#include "report/error_file.h"
#include "report/error_writer.h"
#include "report/launch_writer.h"
#include "report/report_file.h"
#include "report/summary_writer.h"
#include "report/views.h"
#include "trace/trace_entries.h"
#include "trace/tracer.h"
#include "util/power_of_two.h"

namespace blockrun {

namespace {

void default_terminate(OnError on_error, int exit_status) {
  std::fflush(nullptr);
  if (on_error == OnError::Abort) std::abort();  // a core dump holds the host state at the faulting launch
  _exit(exit_status);
}

// What a second run blocks to synchronize each suspect on its own: with breadcrumbs the launches are known,
// not only their kernels (NAME#N, or NAME thread#N for a kernel several threads launch: PinTarget); a graph
// launch by its API name, as the policy knows graph launches (every one: there is no per-graph ordinal).
PinTarget pin_target(const LaunchRecord& record, bool by_breadcrumbs) {
  if (record.kernel && by_breadcrumbs && record.thread_launch && record.kernel->launched_by_many_threads())
    return {record.kernel->name.base, 0, record.thread_launch};
  if (record.kernel) return {record.kernel->name.base, by_breadcrumbs ? record.kernel_ordinal : 0};
  return {record.library_api ? record.library_api : record.graph ? "cuGraphLaunch" : "", 0};
}

// Where an error that is no launch's own surfaced, in the words of the record's `how`.
std::string surfaced_how(const Surfacing& where) {
  if (where.at_exit) return "surfaced only at exit: no call of the program returned it";
  if (where.refused_launch)
    return fmt::format("surfaced at the launch of {}, which the context refused (it never ran)",
                       launch_name(where.refused_launch->record));
  return "surfaced at a later call";
}

}  // namespace

const char* layer_name(Layer layer) {
  switch (layer) {
    case Layer::Runtime:
      return "runtime";
    case Layer::Driver:
      return "driver";
    case Layer::Cublas:
      return "cublas";
    case Layer::CublasLt:
      return "cublasLt";
  }
  return "unknown";
}

// The first error: `culprit` (nullptr: unknown) and `suspects`.
struct Engine::Accused {
  const Launch* culprit = nullptr;
  bool exact = false;
  std::vector<ReportedLaunch> suspects;
  FoundBy found_by = FoundBy::Host;
  const BreadcrumbView* breadcrumbs = nullptr;
  // How many launches could have faulted (the ledger's count before it cut the suspects to the newest);
  // where not set, the suspects are all of them.
  std::optional<LaunchLedger::SuspectCount> count;
};

Engine::Engine(Config config, std::shared_ptr<spdlog::logger> logger, ErrorDescriber describe,
               Terminate terminate)
    : path_(std::make_unique<LaunchPath>(std::move(config))),
      config_(path_->config()),
      ledger_(path_->ledger()),
      breadcrumbs_(path_->breadcrumbs()),
      graphs_(path_->graphs()),
      call_sites_(path_->call_sites()),
      logger_(std::move(logger)),
      describe_error_(std::move(describe)),
      terminate_(std::move(terminate)),
      owner_pid_(static_cast<long>(getpid())) {
  if (!terminate_) terminate_ = default_terminate;
}

void Engine::set_trace_file(std::unique_ptr<OutputFile> file, const std::string& path) {
  tracer_ = std::make_unique<trace::Tracer>(config_.trace_events, std::move(file), path);
}

const char* Engine::trace_path() const {
  return tracer_ ? tracer_->path() : "";
}

OutputFile* Engine::report_file() const {
  return report_ ? report_->file() : nullptr;
}

void Engine::start(ProcessInfo info, std::unique_ptr<ReportFile> report, StackFunction stack,
                   PythonStackFunction python, PythonSiteFunction python_site) {
  process_ = std::move(info);
  report_ = std::move(report);
  // With breadcrumbs a culprit is named long after its launch; in a trace every slice says its line.
  call_sites_.start(stack, python, python_site, config_.breadcrumbs || tracer_, process_.shim_module);
  if (tracer_) {
    tracer_->set_process(process_.pid, process_.has_rank ? process_.rank : -1, process_.name,
                         call_sites_.python_sites());
  }
  path_->start(tracer_ || config_.log_launches);
  start_steady_ns_ = steady_now_ns();
  if (report_) report_->write_record(start_json(process_));
  // Once a process: what the driver lacks of the shim's newer entry points (driver_features.def).
  if (std::string notice = driver_notice(process_.driver); !notice.empty()) logger_->warn("{}", notice);
}

void Engine::note_driver(const DriverSupport& driver) {
  std::lock_guard<std::mutex> guard(report_mutex_);
  if (process_.driver.version || !driver.version) return;  // known at start (and told), or still none
  process_.driver = driver;
  process_.driver_version = driver.version;
  if (std::string notice = driver_notice(process_.driver); !notice.empty()) logger_->warn("{}", notice);
}

Engine::~Engine() = default;

uint64_t Engine::call_clock() const {
  return path_->call_clock();
}

uint64_t Engine::launches() const {
  return ledger_.launches();
}

void Engine::end_launch(Launch& launch, ErrorCode launch_result, BlockOutcome outcome, ErrorCode sync_result,
                        const char* sync_api) {
  launch.ended_ns = path_->call_clock();
  if (tracer_) trace(trace::launch_entry(launch, launch_result, outcome, sync_result), launch.record.thread);
  if (!launch_result.ok()) {
    launch_failed(launch, launch_result);
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
    case BlockOutcome::Synchronized:
      launch_blocked(launch, sync_result, sync_api);
      return;
    case BlockOutcome::SkippedCapture:
      blocking_skipped(launch, launch_result);
      return;
    case BlockOutcome::SkippedUnknown:
      if (config_.log_launches) log_launch(launch, "not blocked: capture state unknown", launch_result);
      report_shim_problem(
          "could not tell whether a stream is capturing (the CUDA query failed or is missing); launches on "
          "such streams are not blocked");
      return;
  }
}

void Engine::launch_failed(Launch& launch, ErrorCode launch_result) {
  const LaunchRecord& record = launch.record;
  // The thread is still in the launch call, so its call site can be taken now.
  path_->take_stack_now(launch);
  if (config_.log_launches) log_launch(launch, "failed", launch_result);
  ClassifiedError error(launch_result);
  // An unknown code may have come after the launch was enqueued: it stays a suspect.
  if (error.meaning != ErrorMeaning::Unknown) refuse(launch);
  if (error.meaning == ErrorMeaning::Environment) {
    // No usable driver or device: the launch never ran, and no launch is at fault (issue 42).
    first_error(record.api, error, "", Accused{});
  } else if (error.meaning == ErrorMeaning::Own) {
    // A bad configuration, a missing image: the launch's own error, and it is the culprit.
    first_error(record.api, error, "the launch itself failed", Accused{&launch, true, {}, FoundBy::Launch});
  } else {
    // An earlier kernel's error surfacing here (the context refuses every launch once a kernel faulted):
    // this launch never ran, so the culprit is found as at any other call.
    Surfacing where;
    where.refused_launch = &launch;
    surfaced(record.api, error, record.stream, where);
  }
}

void Engine::launch_blocked(Launch& launch, ErrorCode sync_result, const char* sync_api) {
  blocking_.note_blocked(launch.record, launch.timing);
  if (config_.log_launches) log_launch(launch, sync_result.ok() ? "blocked" : "blocked, failed", sync_result);
  if (sync_result.ok()) {
    ledger_.synced(launch.stream, launch.record.sequence);
    return;
  }
  ClassifiedError error(sync_result);
  if (error.meaning == ErrorMeaning::Environment) {
    first_error(sync_api, error, "", Accused{});
    return;
  }
  // The launching thread is still inside the launch call: its call site is taken now.
  path_->take_stack_now(launch);
  Accused accused{&launch, false, {}, FoundBy::Blocking};
  may_have_faulted_instead(launch, &accused);
  accused.exact = accused.suspects.empty() && error.meaning != ErrorMeaning::Unknown;
  first_error(sync_api, error, "blocking synchronize after the launch", std::move(accused));
  if (report_) {
    ErrorText text = describe_error_(sync_result);
    std::lock_guard<std::mutex> guard(report_mutex_);
    if (blocking_.take_error_record()) {
      LaunchView view = view_of(launch.record, launch.taken_stack(), true, true, kCapturedLaunchesReported);
      report_->write_record(blocked_error_json(view, text, sync_api, sync_result, process_.pid));
    }
  }
  if (launch.decision.on_error != OnError::Return) end_process_as_rule_says(launch.decision);
}

void Engine::end_process_as_rule_says(const Decision& decision) {
  {
    std::lock_guard<std::mutex> guard(report_mutex_);
    logger_->error("  ending the process as rule {} says ({})", decision.rule + 1,
                   decision.on_error == OnError::Abort ? std::string("abort")
                                                       : fmt::format("exit {}", decision.exit_status));
    logger_->flush();
  }
  finish();
  terminate_(decision.on_error, decision.exit_status);
}

void Engine::blocking_skipped(Launch& launch, ErrorCode launch_result) {
  bool first = blocking_.note_capture_skip();
  if (config_.log_launches) log_launch(launch, "not blocked: stream capturing", launch_result);
  if (!first) return;
  std::lock_guard<std::mutex> guard(report_mutex_);
  LaunchRecord not_blocked = launch.record;
  not_blocked.blocked = false;
  logger_->info(
      "blocking skipped for {}: the stream is capturing a CUDA graph, and a synchronize would "
      "invalidate the capture (further skips are counted in the summary)",
      blockrun::describe(not_blocked));
}

void Engine::end_sync(const char* api, bool device_wide, const void* stream, bool per_thread_default_stream,
                      uint64_t mark, ErrorCode result, CallSpan span) {
  StreamId id = path_->stream_id(stream, per_thread_default_stream);
  if (tracer_ && span.own_slice) {
    trace::TraceEntry entry = trace::call_entry(trace::EntryKind::Synchronize, api, span, id);
    entry.device_wide = device_wide;
    entry.result = result;
    trace(entry, current_thread_number());
  }
  // Only launches numbered before the synchronize began are known complete.
  uint64_t through = mark - 1;
  if (result.ok()) {
    if (device_wide) {
      ledger_.device_synced(through);
    } else {
      ledger_.synced(ledger_.stream(id), through);
    }
    return;
  }
  surfaced_at_call(api, ClassifiedError(result),
                   path_->stream_id(device_wide ? nullptr : stream, per_thread_default_stream), span);
}

void Engine::observe_error(const char* api, ErrorCode result, const void* stream,
                           bool per_thread_default_stream, CallSpan span) {
  if (!result.ok())
    surfaced_at_call(api, ClassifiedError(result), path_->stream_id(stream, per_thread_default_stream), span);
}

void Engine::watch_error(const char* api, ErrorCode result, const void* stream,
                         bool per_thread_default_stream, CallSpan span) {
  // Out of memory, an invalid value: the program's own business (PyTorch's allocator frees its cache and
  // tries again), and never a kernel's fault. No usable driver or device is told where the program's own
  // calls meet it (launches, synchronizes, calls), not at these (a runtime's internal module load).
  ClassifiedError error(result);
  if (error.may_have_surfaced())
    surfaced_at_call(api, error, path_->stream_id(stream, per_thread_default_stream), span);
}

void Engine::surfaced_at_call(const char* api, const ClassifiedError& error, StreamId stream, CallSpan span) {
  if (first_error_.counted_as_later()) return;
  Surfacing where;
  where.call = span;
  surfaced(api, error, stream, where);
}

void Engine::note_event_record(const void* event, const void* stream, bool per_thread_default_stream,
                               uint64_t mark) {
  ledger_.note_event_record(event, ledger_.stream(path_->stream_id(stream, per_thread_default_stream)), mark);
}

void Engine::forget_event(const void* event) {
  ledger_.forget_event(event);
}

void Engine::note_stream_wait(const void* stream, bool per_thread_default_stream, const EventPoint& awaited) {
  if (awaited.stream)
    ledger_.note_stream_wait(ledger_.stream(path_->stream_id(stream, per_thread_default_stream)), awaited);
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
  ClassifiedError error(result);
  if (!error.may_have_surfaced() || first_error_.taken()) return;
  if (!in_owner_process()) return;
  Surfacing where;
  where.at_exit = true;
  where.call.began_ns = where.call.returned_ns = path_->call_clock();
  surfaced(api, error, StreamId{}, where);
}

void Engine::refuse(Launch& launch) {
  launch.record.refused = true;
  if (launch.stream && !launch.record.in_capture) launch.stream->refuse(launch.record.sequence);
}

void Engine::may_have_faulted_instead(const Launch& launch, Accused* accused) {
  const LaunchRecord& record = launch.record;
  // A sticky error is the context's, not the stream's: any launch not known to have completed, on any
  // stream, may be the one that faulted. Breadcrumbs say how far each stream got.
  if (breadcrumbs_.stream_ready()) {
    BreadcrumbView view = breadcrumbs_.read(ledger_);
    std::vector<ReportedLaunch> others;
    for (ReportedLaunch& head : view.heads)
      if (head.record.sequence != record.sequence) others.push_back(std::move(head));
    // A head not known (pushed out of the ring) may be the culprit: then everything unfinished is listed.
    if (view.lost.empty()) {
      accused->suspects = std::move(others);
      return;
    }
  }
  LaunchLedger::SuspectCount counted;
  std::vector<ReportedLaunch> others = ledger_.suspects(nullptr, record.sequence, &counted);
  accused->count = counted;
  // A graph whose breadcrumbs show a node of this replay unfinished: the replay began, so its reset, queued
  // behind everything earlier on the stream, ran, and those earlier launches on its stream completed.
  if (record.graph && !others.empty()) {
    NodeView nodes = GraphCaptures::nodes(record, breadcrumbs_.slots());
    if (nodes.known && !nodes.unfinished.empty()) {
      others.erase(std::remove_if(others.begin(), others.end(),
                                  [&](const ReportedLaunch& other) {
                                    return other.record.stream == record.stream &&
                                           other.record.sequence < record.sequence;
                                  }),
                   others.end());
      accused->count = std::nullopt;  // the list is what is left of the ledger's, all of it (below its cut)
      if (counted.unfinished > StreamState::kRing || counted.more) accused->count = counted;
    }
  }
  accused->suspects = std::move(others);
}

void Engine::surfaced(const char* api, const ClassifiedError& error, StreamId stream, Surfacing where) {
  ErrorMeaning meaning = error.meaning;
  // No usable driver or device: neither breadcrumbs nor the ledger are asked; no launch is a suspect.
  if (meaning == ErrorMeaning::Environment) {
    first_error(api, error, "", Accused{}, where);
    return;
  }
  // A call's own error (an invalid value, a copy in the wrong direction) is no kernel's: breadcrumbs are not
  // asked, and the host's view lists what was in flight on its stream, never exactly.
  if (meaning != ErrorMeaning::Own && breadcrumbs_.stream_ready() &&
      surfaced_by_breadcrumbs(api, error, where))
    return;
  std::vector<ReportedLaunch> found;
  LaunchLedger::SuspectCount count;
  if (meaning == ErrorMeaning::Own) {
    // The breadcrumbs still say what completed (reading them raises each stream's mark).
    if (breadcrumbs_.stream_ready()) breadcrumbs_.read(ledger_);
    StreamState* state = stream.handle || stream.per_thread_owner ? ledger_.stream(stream) : nullptr;
    found = ledger_.suspects(state, 0, &count);
    if (found.empty() && state) found = ledger_.suspects(nullptr, 0, &count);
  } else {
    found = ledger_.suspects(nullptr, 0, &count);  // sticky: the fault may be on any stream
  }
  Accused accused{nullptr, false, std::move(found), FoundBy::Host};
  accused.count = count;
  first_error(api, error, "", std::move(accused), where);
}

bool Engine::surfaced_by_breadcrumbs(const char* api, const ClassifiedError& error, Surfacing where) {
  BreadcrumbView view = breadcrumbs_.read(ledger_);
  // One stream stopped short of a launch whose breadcrumb was enqueued: the fault was that launch's, however
  // long ago it ran. Exact only for a known asynchronous error: an unknown code may not be a kernel's at all.
  if (view.heads.size() == 1 && view.heads.front().record.breadcrumb && view.lost.empty() &&
      error.meaning == ErrorMeaning::Asynchronous) {
    Launch culprit;
    culprit.record = view.heads.front().record;
    if (const CallStack* stack = view.heads.front().stack.get()) culprit.stack = *stack;
    first_error(api, error, "", Accused{&culprit, true, {}, FoundBy::Breadcrumbs}, where);
    return true;
  }
  if (view.heads.empty() && view.lost.empty()) {
    // No stream has an unfinished launch: the error is not a kernel's (or came from work the shim did not
    // see).
    return false;
  }
  std::vector<ReportedLaunch> candidates = std::move(view.heads);
  view.heads.clear();
  first_error(api, error, "", Accused{nullptr, false, std::move(candidates), FoundBy::Breadcrumbs, &view},
              where);
  return true;
}

void Engine::set_breadcrumbs(volatile uint64_t* slots, uint32_t count) {
  breadcrumbs_.set(slots, count);
}

size_t Engine::in_flight_now(InFlight* out, size_t max) const {
  return breadcrumbs_.in_flight_now(ledger_, out, max);
}

bool Engine::wait_for_first_error_record(int max_ms) const {
  return first_error_.wait_for_record(max_ms);
}

void Engine::first_error(const char* api, const ClassifiedError& error, const char* how, Accused accused,
                         Surfacing where) {
  if (!first_error_.take()) return;
  FirstErrorLatch::Writing writing(first_error_);
  ErrorText text = describe_error_(error.code);
  std::vector<std::string> driver_logs = driver_log_.recent(current_thread_number(), steady_now_ms());
  std::lock_guard<std::mutex> guard(report_mutex_);
  Finding finding = find(api, error, how, accused, where);
  finding.text = std::move(text);
  finding.driver_logs = std::move(driver_logs);
  trace::SurfacingCall call = surfacing_call(accused, where);
  finding.thread = current_thread_number();
  finding.surfaced_began_ns = since_start(call.began_ns);
  finding.surfaced_ns = since_start(call.returned_ns);
  // The report first: a process that dies right after this still leaves a complete record.
  if (report_) report_->write_record(first_error_json(finding, process_.pid));
  if (tracer_) tracer_->first_error(trace::error_facts(finding, call));
  first_error_summary_ = first_error_summary(finding);
  log_first_error(*logger_, finding, config_.stack, config_.print_limit);
  note_missing_libdw(tells_call_site_without_line(finding));
  std::string unnoted = note_in_error_file(config_, process_, report_ ? report_->file() : nullptr,
                                           finding.text.name, finding.api);
  if (!unnoted.empty()) logger_->warn("{}", unnoted);
}

Finding Engine::find(const char* api, const ClassifiedError& error, const char* how, const Accused& accused,
                     Surfacing where) {
  Finding finding;
  finding.api = api ? api : "(unknown call)";
  finding.result = error.code;
  finding.meaning = error.meaning;
  finding.found_by = accused.found_by;
  finding.launch_told = *how != 0;
  finding.how = *how ? how
                : finding.meaning == ErrorMeaning::Environment
                    ? "no usable CUDA driver or device: the environment's error, no kernel's"
                    : surfaced_how(where);
  finding.environment = environment_advice(error);
  finding.at_exit = where.at_exit;
  finding.exact = accused.exact;
  finding.ring = LaunchPath::ring_capacity_for(config_);
  // Each launch's stack is symbolized once, for the report and the log (the whole stack where either shows
  // it; a graph's captured launches as many as either tells).
  bool whole_stack = report_ || config_.stack;
  size_t told = report_ ? kCapturedLaunchesReported : kCapturedLaunchesLogged;
  if (const Launch* culprit = accused.culprit) {
    finding.culprit = std::make_unique<LaunchView>(
        view_of(culprit->record, culprit->taken_stack(), whole_stack, true, told));
  }
  // A launch the context refused: where the error surfaced, with its own call site.
  if (const Launch* refused = where.refused_launch) {
    finding.refused = std::make_unique<LaunchView>(
        view_of(refused->record, refused->taken_stack(), whole_stack, false, told));
  }
  bool by_breadcrumbs = accused.found_by == FoundBy::Breadcrumbs;
  for (const ReportedLaunch& suspect : accused.suspects)
    finding.suspects.push_back(view_of(suspect, whole_stack, by_breadcrumbs, told));
  if (accused.breadcrumbs) {
    finding.breadcrumbs_read = true;
    finding.breadcrumbs_lost = accused.breadcrumbs->lost;
  }
  pin(accused, &finding);
  return finding;
}

SuspectTally Engine::tally(const Accused& accused) {
  SuspectTally tally;
  tally.listed = accused.suspects.size();
  tally.could_have_faulted = accused.count ? accused.count->unfinished : tally.listed;
  tally.more_not_kept = accused.count && accused.count->more;
  // Breadcrumbs: a stream whose first unfinished launch is no longer kept (its rule is `all`).
  if (accused.breadcrumbs && !accused.breadcrumbs->lost.empty()) tally.more_not_kept = true;
  return tally;
}

void Engine::pin(const Accused& accused, Finding* finding) const {
  bool by_breadcrumbs = accused.found_by == FoundBy::Breadcrumbs;
  std::vector<PinTarget> targets;
  if (accused.culprit) targets.push_back(pin_target(accused.culprit->record, by_breadcrumbs));
  // The suspects the finding leaves out are pinned too: a rule must block every launch that could have
  // faulted, or it is not offered (pin_advice.h).
  if (accused.count)
    for (const LaunchRecord& older : accused.count->cut) targets.push_back(pin_target(older, by_breadcrumbs));
  for (const ReportedLaunch& suspect : accused.suspects)
    targets.push_back(pin_target(suspect.record, by_breadcrumbs));
  bool lost = !finding->breadcrumbs_lost.empty();
  finding->pin_rule = pin_rule(targets, lost);
  // A rule is useful where the culprit is not exact, or was found without its full call site (breadcrumbs).
  finding->pin_rule_useful = !accused.suspects.empty() || lost || (accused.culprit && by_breadcrumbs);
  finding->tally = tally(accused);
  finding->advice = pin_advice(process_.argv, process_.has_rank, finding->pin_rule, finding->tally);
}

void Engine::report_shim_problem(const std::string& text) {
  std::lock_guard<std::mutex> guard(report_mutex_);
  if (!reported_problems_.first_time(text)) return;
  logger_->warn("shim problem: {}", text);
  logger_->flush();
}

void Engine::note_driver_log(const char* message, size_t length) {
  driver_log_.note(message, length, current_thread_number(), steady_now_ms());
}

void Engine::log_launch(const Launch& launch, const char* what, ErrorCode result) {
  LaunchRecord record = launch.record;
  record.blocked = false;  // `what` says what happened; the record says only what the policy wanted
  const CallStack* stack = launch.taken_stack();
  std::lock_guard<std::mutex> guard(report_mutex_);
  logger_->info("launch: {}{}{} via {}{}{}", blockrun::describe(record), *what ? " -> " : "", what,
                record.api, record.driver_api ? " > " : "", record.driver_api ? record.driver_api : "");
  bool write_record = report_ && config_.log_launches;
  size_t told = write_record ? kCapturedLaunchesReported : kCapturedLaunchesLogged;
  LaunchView view = view_of(record, stack, write_record || config_.stack, false, told);
  log_launch_site(SiteLog{*logger_, "  ", false, config_.stack}, view);
  note_missing_libdw(call_site_without_line(view));
  if (!write_record) return;
  view.record = &launch.record;  // the report keeps what the policy wanted
  std::string error_name = result.ok() ? std::string() : describe_error_(result).name;
  LaunchTimes times;
  times.began_ns = since_start(launch.began_ns);
  times.ended_ns = since_start(launch.ended_ns);
  times.wait_began_ns = since_start(launch.wait_began_ns);
  times.gpu_ns = launch.timing.gpu_ns;
  report_->write_record(launch_json(view, what, result.ok() ? nullptr : &error_name, process_.pid, times));
}

// Called with report_mutex_ held, right after the log told call sites; `told_without_line`: one had no
// file:line.
void Engine::note_missing_libdw(bool told_without_line) {
  std::string problem = call_sites_.missing_libdw_once(told_without_line);
  if (!problem.empty()) log_missing_libdw(*logger_, problem);
}

LaunchView Engine::view_of(const ReportedLaunch& launch, bool whole_stack, bool failed, size_t told) {
  return view_of(launch.record, launch.stack.get(), whole_stack, failed, told);
}

LaunchView Engine::view_of(const LaunchRecord& record, const CallStack* stack, bool whole_stack, bool failed,
                           size_t told) {
  LaunchView view;
  view.record = &record;
  view.stack = stack;
  view.site = call_sites_.site_of(record, stack, whole_stack);
  view.python = call_sites_.python_call_site_of(record, stack);
  view.failed = failed;
  view.graph = graph_view(record, failed, told);
  return view;
}

std::unique_ptr<GraphCaptureView> Engine::graph_view(const LaunchRecord& record, bool failed, size_t told) {
  const CaptureRecord* capture =
      record.graph ? record.graph->capture.load(std::memory_order_acquire) : nullptr;
  if (!capture) return nullptr;
  auto view = std::make_unique<GraphCaptureView>();
  view->capture = capture;
  view->begun_at = call_sites_.site_of(capture->begun_by, capture->begun_at.get(), nullptr, false);
  view->begun_python = call_sites_.python_line(capture->python_site);
  if (failed) view->nodes = GraphCaptures::nodes(record, breadcrumbs_.slots());
  auto resolve = [&](size_t i) {
    const CapturedLaunch& launch = capture->launches[i];
    view->launches.push_back(
        CapturedLaunchView{i, call_sites_.site_of(launch), call_sites_.python_line(launch.python_site)});
  };
  size_t first = std::min(capture->launches.size(), told);
  for (size_t i = 0; i < first; ++i) resolve(i);
  // A failed or candidate node past those is told too (nodes.unfinished is in capture order).
  for (size_t i : view->nodes.unfinished)
    if (i >= first) resolve(i);
  return view;
}

std::string Engine::describe(const LaunchRecord& record) const {
  return blockrun::describe(record);
}

const GraphInfo* Engine::graph(const void* exec) {
  return graphs_.graph(exec);
}

const GraphInfo* Engine::note_graph(const void* exec, uint64_t nodes, const void* graph) {
  return graphs_.note_graph(exec, nodes, graph);
}

void Engine::begin_capture(uint64_t id, uintptr_t caller) {
  auto record = std::make_unique<CaptureRecord>();
  record->id = id;
  record->begun_by = caller;
  if (call_sites_.walks()) {
    record->begun_at = std::make_unique<CallStack>();
    call_sites_.take_stack(record->begun_at.get());
    call_sites_.intern(record->begun_at->python, &record->python_site, &record->python_innermost);
  }
  graphs_.begin(id, std::move(record));
}

void Engine::note_graph_kernel_node(const void* graph, const KernelInfo* kernel, uintptr_t caller) {
  CapturedLaunch kept;
  kept.kernel = kernel;
  kept.caller = caller;
  call_sites_.read_python_site(&kept.python_site, &kept.python_innermost);
  graphs_.keep_kernel_node(graph, kept);
}

void Engine::end_capture(uint64_t id, const void* graph) {
  graphs_.end(id, graph);
}

void Engine::trace(const trace::TraceEntry& entry, uint32_t thread) {
  // The error's name now, where describing it may call CUDA: the trace is written where nothing may be.
  tracer_->name_error(entry.result, [&](ErrorCode code) { return describe_error_(code).name; });
  tracer_->record(entry, thread);
}

void Engine::note_library_call(const char* api, const LibraryCall& call, const void* stream, CallSpan span) {
  if (!tracer_ || !span.began_ns) return;
  trace::TraceEntry entry =
      trace::call_entry(trace::EntryKind::LibraryCall, api, span, path_->stream_id(stream, false));
  entry.library_api = api;
  entry.library = call;
  trace(entry, current_thread_number());
}

trace::SurfacingCall Engine::surfacing_call(const Accused& accused, const Surfacing& where) const {
  trace::SurfacingCall call;
  const Launch* launch = where.refused_launch ? where.refused_launch
                         : accused.found_by == FoundBy::Launch || accused.found_by == FoundBy::Blocking
                             ? accused.culprit
                             : nullptr;
  if (launch) {
    // A blocked launch's error came from its blocking wait.
    call.began_ns = accused.found_by == FoundBy::Blocking && launch->wait_began_ns ? launch->wait_began_ns
                                                                                   : launch->began_ns;
    call.returned_ns = launch->ended_ns;
    call.has_slice = true;
  } else {
    call.began_ns = where.call.began_ns;
    call.returned_ns = where.call.returned_ns;
    call.has_slice = where.call.own_slice;
  }
  if (!call.returned_ns) call.returned_ns = path_->call_clock();
  return call;
}

trace::TraceWritten Engine::trace_at_fatal_signal(const char* signal) {
  if (!tracer_ || !in_owner_process()) return {};
  return tracer_->write_at_signal(signal, current_thread_number());
}

void Engine::finish() {
  // A child forked from the process inherits the engine and its counts: the summary is the parent's to
  // write (a forked child that exits normally must not repeat it).
  if (getpid() != owner_pid_) return;
  std::lock_guard<std::mutex> guard(report_mutex_);
  // The log's summary line is for a process that launched or met an error. A report that has its `start`
  // always gets its `summary`, whatever the process did with CUDA (only cudaMalloc and cudaFree, a forked
  // worker whose calls failed): a report without one reads as a process killed outright (issue 40, N2).
  bool used = ledger_.launches() > 0 || first_error_.taken();
  bool log_it = used && config_.summary;
  if ((log_it || report_) && !finished_.exchange(true)) {
    // The table of every kernel is built only where it is told: in the report, or in the log when launches
    // were blocked (at exit it is the shim's largest allocation, docs/memory.md).
    Summary counts = summary(report_ || blocking_.blocked() > 0);
    if (log_it) log_summary(*logger_, counts, config_.print_limit);
    if (report_) report_->write_record(summary_json(counts, process_.pid));
  }
  // Whether or not it launched: a trace file, once opened, is a JSON document when the process ends.
  if (tracer_ && tracer_->take_exit_write()) {
    trace::WrittenLine line;
    trace::written_line(line, tracer_->path(), tracer_->write(), config_.trace_events);
    logger_->info("{}", std::string_view(line.text, line.size));
  }
  logger_->flush();
}

Summary Engine::summary(bool with_units) {
  Summary counts;
  counts.launches = ledger_.launches();
  counts.launches_by_api = path_->entry_points().totals();
  counts.blocked = blocking_.blocked();
  counts.blocking_ns = blocking_.blocking_ns();
  counts.capture_skips = blocking_.capture_skips();
  counts.first_error = first_error_.taken();
  counts.first_error_summary = first_error_summary_;
  counts.later_errors = first_error_.later();
  counts.gpu_time = config_.gpu_time;
  counts.driver = &process_.driver;
  if (!with_units) return counts;
  path_->kernels().for_each([&](KernelInfo& kernel) {
    counts.units.push_back(
        {&kernel.name.demangled, &kernel.name.mangled, nullptr, kernel.launches.load(), &kernel.stats});
  });
  graphs_.for_each_graph([&](GraphInfo& graph) {
    counts.units.push_back({nullptr, nullptr, graph.exec, graph.launches.load(), &graph.stats});
  });
  blocking_.for_each_unit([&](const std::string& name, BlockStats& stats) {
    counts.units.push_back({&name, nullptr, nullptr, stats.blocked.load(), &stats});
  });
  sort_units(counts.units);
  return counts;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
