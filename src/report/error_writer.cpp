// The first error, blocked launches that failed and logged launches, in the report and the log
// (error_writer.h).
#include "report/error_writer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "cuda/names.h"
#include "report/keys.h"

namespace blockrun {

namespace {

// The fields every error record starts with.
void begin_error_record(JsonWriter& json, const char* type, long pid, const ErrorText& text, ErrorCode code,
                        const char* api) {
  json.begin_object()
      .field(key::type, type)
      .field(key::time, epoch_seconds())
      .field(key::pid, static_cast<int64_t>(pid))
      .field(key::error, text.name)
      .field(key::code, code.code)
      .field(key::layer, layer_name(code.layer))
      .field(key::message, text.text)
      .field(key::surfaced_api, api);
}

void write_launch_or_null(JsonWriter& json, const char* name, const LaunchView* launch) {
  json.key(name);
  if (launch) {
    write_launch(json, *launch);
  } else {
    json.null();
  }
}

// What returned the error, for the log's first line.
std::string returned_by(const Finding& finding) {
  if (finding.launch_told) return fmt::format("returned by {} ({})", finding.api, finding.how);
  if (finding.at_exit)
    return fmt::format("seen only at exit, by the shim's own check ({}): no call of the program returned it",
                       finding.api);
  return fmt::format("returned by {}", finding.api);
}

// The first `print_limit` of `launches` (0: all), and how many more there are.
void log_launches(spdlog::logger& logger, const std::vector<LaunchView>& launches, bool stack,
                  size_t print_limit) {
  size_t shown = print_limit == 0 ? launches.size() : std::min(launches.size(), print_limit);
  for (size_t i = 0; i < shown; ++i) {
    logger.error("    {}", describe(*launches[i].record));
    log_launch_site(SiteLog{logger, "      ", true, stack}, launches[i]);
  }
  if (shown < launches.size())
    logger.error("    ... and {} more (--print-limit 0 prints all; --report lists every one)",
                 launches.size() - shown);
}

// How many launches could have faulted where the suspects listed are fewer (the ledger keeps the newest).
void log_cut(spdlog::logger& logger, const Finding& finding) {
  const SuspectTally& tally = finding.tally;
  if (!tally.cut()) return;
  if (tally.more_not_kept) {
    logger.error(
        "  more than {} launches since the last completed synchronize could have faulted (the older ones "
        "were "
        "not kept); the newest {} are shown",
        tally.could_have_faulted, tally.listed);
  } else {
    logger.error(
        "  {} launches since the last completed synchronize could have faulted; the newest {} are shown",
        tally.could_have_faulted, tally.listed);
  }
}

// The hint: first the command that pins it (--localize on this very command), then the --block rule where it
// blocks every launch that could have faulted, or --block all. A hint that, followed, pins nothing is a
// defect: a rule made from a cut list of suspects is not offered.
void log_pin_hint(spdlog::logger& logger, const Finding& finding, bool or_all) {
  const PinAdvice& advice = finding.advice;
  // Made from kernel names: escaped as they are (issue 40, N9).
  const std::string rule = printable(finding.pin_rule);
  if (!advice.localize_command.empty()) {
    logger.error("  to pin it: {}", printable(advice.localize_command));
  } else if (advice.in_job) {
    logger.error(
        "  to pin it: run the job's command again under cuda-blockrun --localize (docs/distributed.md)");
  } else {
    logger.error("  to pin it: run the program again under cuda-blockrun --localize");
  }
  if (advice.rule_covers && rule != "all") {
    logger.error("  or run again with --block {} (or CUDA_BLOCKRUN_BLOCK={}){}", single_quoted(rule),
                 single_quoted(rule), or_all ? ", or --block all" : "");
  } else {
    logger.error("  or run again with --block all");
  }
}

// What the log says when the culprit is not exact: the candidates or suspects, and how to pin it.
void log_suspects(spdlog::logger& logger, const Finding& finding, bool stack, size_t print_limit) {
  bool by_breadcrumbs = finding.found_by == FoundBy::Breadcrumbs;
  if (by_breadcrumbs && !finding.culprit) {
    bool unwritten = std::any_of(finding.suspects.begin(), finding.suspects.end(),
                                 [](const LaunchView& launch) { return !launch.record->breadcrumb; });
    if (unwritten)  // BreadcrumbView: a launch without its write does not end its stream's candidates
      logger.error(
          "  culprit among the launches the breadcrumbs do not show complete, oldest first (each stream's "
          "first unfinished one; where no breadcrumb write followed it, those after it through one that "
          "had):");
    else
      logger.error("  culprit among the first unfinished launch of each stream (breadcrumbs), oldest first:");
    log_launches(logger, finding.suspects, stack, print_limit);
    for (const auto& [stream, after] : finding.breadcrumbs_lost)
      logger.error(
          "    stream {}: its first unfinished launch (after #{}) is older than the {} launches kept",
          describe_stream(stream), after, finding.ring);
    log_pin_hint(logger, finding, false);
  } else if (!finding.suspects.empty()) {
    logger.error(
        finding.culprit
            ? "  not exact: these launches had not completed and may have faulted instead, newest last:"
            : "  culprit unknown (no blocked launch failed); suspects: launches not known to "
              "have completed, newest last:");
    log_launches(logger, finding.suspects, stack, print_limit);
    log_cut(logger, finding);
    log_pin_hint(logger, finding, true);
  } else if (!finding.culprit) {
    logger.error(
        "  no launch is on record as unfinished: the error comes from the call itself or from work "
        "the shim did not see");
  }
}

// A time in nanoseconds since the start record, null where not known (0).
void write_nanoseconds(JsonWriter& json, const char* name, uint64_t nanoseconds) {
  json.key(name);
  if (nanoseconds) {
    json.value(nanoseconds);
  } else {
    json.null();
  }
}

}  // namespace

double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool tells_call_site_without_line(const Finding& finding) {
  if (finding.culprit && call_site_without_line(*finding.culprit)) return true;
  if (finding.refused && call_site_without_line(*finding.refused)) return true;
  for (const LaunchView& suspect : finding.suspects)
    if (call_site_without_line(suspect)) return true;
  return false;
}

std::string first_error_json(const Finding& finding, long pid) {
  JsonWriter json;
  begin_error_record(json, "first_error", pid, finding.text, finding.result, finding.api);
  json.field(key::how, finding.how)
      .field(key::certainty, finding.culprit && finding.exact ? "exact" : "suspects");
  json.field(key::method, found_by_name(finding.found_by))
      .field(key::meaning, error_meaning_name(finding.meaning));
  write_launch_or_null(json, key::launch, finding.culprit.get());
  write_launch_or_null(json, key::surfaced_at_launch, finding.refused.get());
  json.key(key::suspects).begin_array();
  for (const LaunchView& suspect : finding.suspects) write_launch(json, suspect);
  json.end_array();
  json.key(key::pin_rule);
  if (finding.pin_rule_useful) {
    json.value(finding.pin_rule);
  } else {
    json.null();
  }
  json.field(key::unfinished_launches, finding.tally.could_have_faulted)
      .field(key::suspects_cut, finding.tally.cut());
  json.key(key::pin_rule_covers).value(finding.pin_rule_useful && finding.advice.rule_covers);
  json.key(key::localize_command);
  if (finding.pin_rule_useful && !finding.advice.localize_command.empty()) {
    json.value(finding.advice.localize_command);
  } else {
    json.null();
  }
  if (finding.breadcrumbs_read) {
    json.key(key::breadcrumbs_lost).begin_array();
    for (const auto& [stream, after] : finding.breadcrumbs_lost)
      json.begin_object()
          .field(key::stream, describe_stream(stream))
          .field(key::completed_through, after)
          .end_object();
    json.end_array();
  }
  if (finding.meaning == ErrorMeaning::Environment)
    json.key(key::environment)
        .begin_object()
        .field(key::problem, finding.environment.problem)
        .field(key::fix, finding.environment.fix)
        .end_object();
  json.key(key::driver_log).begin_array();
  for (const std::string& line : finding.driver_logs) json.value(line);
  json.end_array();
  json.field(key::thread, static_cast<uint64_t>(finding.thread));
  write_nanoseconds(json, key::surfaced_began_ns, finding.surfaced_began_ns);
  write_nanoseconds(json, key::surfaced_ns, finding.surfaced_ns);
  json.end_object();
  return json.text();
}

void log_first_error(spdlog::logger& logger, const Finding& finding, bool stack, size_t print_limit) {
  logger.error("first error: {} ({}), {}", finding.text.name, finding.text.text, returned_by(finding));
  if (const LaunchView* refused = finding.refused.get()) {
    logger.error("  surfaced at {}: the context refused it (it never ran); the fault is an earlier kernel's",
                 describe(*refused->record));
    log_launch_site(SiteLog{logger, "    ", true, stack}, *refused);
  }
  // The log keeps the driver's explanations; its "Returning 700 (...) from cuX" lines repeat the error above
  // (the report keeps every line).
  for (const std::string& line : finding.driver_logs) {
    if (line.rfind("Returning ", 0) != 0) logger.error("  driver log: {}", printable(line));
  }
  if (finding.meaning == ErrorMeaning::Environment) {
    // Not a kernel's fault: what is wrong with the machine, and what to do; no launch, no hint to pin one.
    logger.error("  not a kernel's fault: {}", finding.environment.problem);
    logger.error("  to fix it: {}", finding.environment.fix);
    logger.flush();
    return;
  }
  if (const LaunchView* culprit = finding.culprit.get()) {
    logger.error("  in {}", describe(*culprit->record));
    log_launch_site(SiteLog{logger, "  ", true, stack}, *culprit);
    if (finding.found_by == FoundBy::Breadcrumbs && finding.advice.localize_command.empty())
      logger.error(
          "  found by breadcrumbs: the first launch on its stream that did not complete; for its full call "
          "site run again with --block {}",
          single_quoted(printable(finding.pin_rule)));
    else if (finding.found_by == FoundBy::Breadcrumbs)
      logger.error(
          "  found by breadcrumbs: the first launch on its stream that did not complete; for its full call "
          "site: {} (or run again with --block {})",
          printable(finding.advice.localize_command), single_quoted(printable(finding.pin_rule)));
  }
  log_suspects(logger, finding, stack, print_limit);
  logger.flush();
}

std::string first_error_summary(const Finding& finding) {
  std::string summary = finding.text.name;
  if (finding.at_exit) summary += ", surfaced only at exit";
  if (finding.culprit) summary += fmt::format(" at launch #{}", finding.culprit->record->sequence);
  return summary;
}

std::string blocked_error_json(const LaunchView& launch, const ErrorText& text, const char* sync_api,
                               ErrorCode code, long pid) {
  JsonWriter json;
  begin_error_record(json, "blocked_error", pid, text, code, sync_api);
  write_launch_or_null(json, key::launch, &launch);
  json.end_object();
  return json.text();
}

std::string launch_json(const LaunchView& launch, const char* outcome, const std::string* result, long pid,
                        const LaunchTimes& times) {
  JsonWriter json;
  json.begin_object().field(key::type, "launch").field(key::time, epoch_seconds());
  json.field(key::pid, static_cast<int64_t>(pid));
  json.field(key::outcome, *outcome ? outcome : "launched");
  json.key(key::result);
  if (result) {
    json.value(*result);
  } else {
    json.null();
  }
  write_nanoseconds(json, key::began_ns, times.began_ns);
  write_nanoseconds(json, key::ended_ns, times.ended_ns);
  write_nanoseconds(json, key::wait_began_ns, times.wait_began_ns);
  json.key(key::gpu_ns);
  if (times.gpu_ns >= 0) {
    json.value(times.gpu_ns);
  } else {
    json.null();
  }
  write_launch_or_null(json, key::launch, &launch);
  json.end_object();
  return json.text();
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
