// Fatal signals (see signals.h). Everything on the signal path is async-signal-safe: no allocation, no lock,
// no stdio; numbers are formatted by hand into a stack buffer and written with write(2).
#include "signals.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>

#include "config/config.h"
#include "engine.h"
#include "pieces/in_flight.h"
#include "records.h"
#include "trace/tracer.h"
#include "util/fixed_text.h"
#include "report/keys.h"

namespace blockrun::shim {

namespace {

struct Watched {
  int number;
  const char* name;
  struct sigaction previous;
  // Watched only where it ends the process as things stand (its default action): SIGTERM, which launchers
  // (torchrun, mpirun, Slurm) send to the other ranks when one fails, is a request a program may handle.
  bool only_if_default = false;
};

Watched g_watched[] = {{SIGSEGV, "SIGSEGV", {}}, {SIGBUS, "SIGBUS", {}},   {SIGFPE, "SIGFPE", {}},
                       {SIGILL, "SIGILL", {}},   {SIGABRT, "SIGABRT", {}}, {SIGTERM, "SIGTERM", {}, true}};

std::atomic<Engine*> g_signal_engine{nullptr};
std::atomic<OutputFile*> g_log_file{nullptr};
// What starts each line, as in the engine's log; written before g_log_file is published, read by the handler.
char g_log_prefix[64] = "[cuda-blockrun]";
std::atomic<OutputFile*> g_report_file{nullptr};
std::atomic<bool> g_reported{false};
std::atomic<bool> g_installed{false};

using Line = Text<512>;

constexpr size_t kInFlightShown = 4;      // streams' first unfinished launches in the record
constexpr int kFirstErrorWaitMs = 10000;  // for another thread to finish the first error's record
constexpr size_t kKernelNameBytes = 240;  // of each one's demangled name

// Whether the program had its own handler for the signal (which may deal with it and carry on: a runtime that
// uses SIGSEGV on purpose), rather than the default action (the process dies).
bool has_program_handler(const struct sigaction& action) {
  if (action.sa_flags & SA_SIGINFO) return action.sa_sigaction != nullptr;
  return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN;
}

// Whether the program ignores the signal (SIG_IGN): one sent to it then changes nothing (issue 17, F15).
bool ignored(const struct sigaction& action) {
  return !(action.sa_flags & SA_SIGINFO) && action.sa_handler == SIG_IGN;
}

// What the report of a signal says about the process, read from the engine (nullptr: none yet).
struct SignalFacts {
  uint64_t launches = 0;
  uint64_t blocked = 0;
  bool first_error = false;
  bool sent = false;     // kill(), raise(), abort(): not a fault of an instruction
  bool handled = false;  // handed to the program's own handler
};

SignalFacts signal_facts(const Engine* engine, const Watched& watched, const siginfo_t* info) {
  SignalFacts facts;
  facts.launches = engine ? engine->launches() : 0;
  facts.blocked = engine ? engine->blocked_launches() : 0;
  facts.first_error = engine && engine->has_first_error();
  facts.sent = info && info->si_code <= 0;
  facts.handled = has_program_handler(watched.previous);
  return facts;
}

void write_signal_line(const Watched& watched, const SignalFacts& facts) {
  Line log;
  log.add(g_log_prefix);
  log.add(facts.handled ? " signal " : " fatal signal ");
  log.add(watched.name);
  log.add(facts.sent ? " (sent to the process)" : " (a fault in the program)");
  if (facts.handled) log.add(", handed to the program's own handler,");
  log.add(" after ");
  log.add(facts.launches);
  log.add(facts.launches == 1 ? " launch, " : " launches, ");
  log.add(facts.blocked);
  log.add(" blocked; ");
  log.add(facts.first_error ? "the first CUDA error is reported above" : "no CUDA error had been seen");
  log.add("\n");
  log.write_to(g_log_file.load(std::memory_order_acquire));
}

// A kernel launch as the engine's log writes it (describe, launch_writer.h), without allocating:
// `kernel NAME<<<(grid), (block), SHARED, STREAM>>> (NCCL X), launch #S (BASE#K)`.
template <size_t kBytes>
void add_kernel_launch(Text<kBytes>& out, const Engine::InFlight& launch) {
  const KernelInfo& kernel = *launch.kernel;
  out.add("kernel ");
  out.add_json(kernel.name.demangled.c_str(), kKernelNameBytes);
  out.add("<<<");
  add_dim3(out, launch.grid);
  out.add(", ");
  add_dim3(out, launch.block);
  out.add(", ");
  out.add(launch.shared_memory);
  out.add(", ");
  add_stream(out, launch.stream);
  out.add(">>>");
  if (kernel.collective) {
    out.add(" (NCCL ");
    out.add(kernel.collective);
    out.add(")");
  }
  out.add(", launch #");
  out.add(launch.sequence);
  if (launch.kernel_ordinal == 0) return;  // a kernel past the kernel table: its number is not known
  out.add(" (");
  out.add_json(kernel.name.base.c_str(), kKernelNameBytes);
  out.add("#");
  out.add(launch.kernel_ordinal);
  out.add(")");
}

// With breadcrumbs: what each stream was still running (a rank stuck in a collective shows it here).
void write_in_flight_lines(const Engine::InFlight* in_flight, size_t flying) {
  for (size_t i = 0; i < flying; ++i) {
    Text<1024> line;  // two names of up to kKernelNameBytes each, and the rest
    line.add(g_log_prefix);
    const Engine::InFlight& launch = in_flight[i];
    line.add(launch.unfinished ? "   not completed (breadcrumbs): "
                               : "   not known to have completed (breadcrumbs): ");
    if (launch.kernel) {
      add_kernel_launch(line, launch);
    } else {
      line.add("a library call or graph, launch #");
      line.add(launch.sequence);
      line.add(", stream ");
      add_stream(line, launch.stream);
    }
    line.add("\n");
    line.write_to(g_log_file.load(std::memory_order_acquire));
  }
}

// The record's "in_flight" array: the launches not known to have completed, as the breadcrumbs name them.
template <size_t kBytes>
void add_in_flight(Text<kBytes>& record, const Engine::InFlight* in_flight, size_t flying) {
  record.key(key::in_flight);
  record.add("[");
  for (size_t i = 0; i < flying; ++i) {
    const KernelInfo* kernel = in_flight[i].kernel;
    record.add(i ? ",{" : "{");
    record.key(key::seq, true);
    record.add(in_flight[i].sequence);
    record.key(key::kernel);
    if (kernel) {
      record.add("\"");
      record.add_json(kernel->name.demangled.c_str(), kKernelNameBytes);
      record.add("\"");
    } else {
      record.add("null");
    }
    record.key(key::collective);
    record.word(kernel ? kernel->collective : nullptr);
    record.key(key::stream);
    record.add("\"");
    add_stream(record, in_flight[i].stream);
    record.add("\"");
    record.key(key::unfinished);
    record.add(in_flight[i].unfinished ? "true}" : "false}");
  }
  record.add("]");
}

void write_signal_record(const Watched& watched, const SignalFacts& facts, bool breadcrumbs,
                         const Engine::InFlight* in_flight, size_t flying) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  Text<2048> record;
  record.add("{");
  record.key(key::type, true);
  record.word("fatal_signal");
  record.key(key::time);
  record.add(static_cast<uint64_t>(now.tv_sec));
  record.add(".");
  record.add(static_cast<uint64_t>(now.tv_nsec / 1000), 6);
  record.key(key::pid);  // whose record, in a report file several processes share
  record.add(static_cast<uint64_t>(getpid()));
  record.key(key::signal);
  record.word(watched.name);
  record.key(key::number);
  record.add(static_cast<uint64_t>(watched.number));
  record.key(key::sent);
  record.add(facts.sent ? "true" : "false");
  record.key(key::handed_to);
  record.word(facts.handled ? "program handler" : "default action");
  record.key(key::launches);
  record.add(facts.launches);
  record.key(key::blocked);
  record.add(facts.blocked);
  record.key(key::first_error_seen);
  record.add(facts.first_error ? "true" : "false");
  if (breadcrumbs) add_in_flight(record, in_flight, flying);
  record.add("}\n");
  record.write_to(g_report_file.load(std::memory_order_acquire));
}

// --trace: the timeline, marked with the signal, written now (the process may not reach its exit).
void write_trace(Engine& engine, const Watched& watched) {
  trace::TraceWritten written = engine.trace_at_fatal_signal(watched.name);
  if (written.outcome == trace::TraceWritten::Outcome::Nothing) return;  // no trace in this process
  if (written.written && written.again) return;  // said when it was written at exit (an `abort` rule)
  // Not written, or not whole: said too (issue 40, N5), the reader must not take the file for a trace.
  trace::WrittenLine line;
  line.add(g_log_prefix);
  line.add(" ");
  trace::written_line(line, engine.trace_path(), written, engine.config().trace_events);
  line.add("\n");
  line.write_to(g_log_file.load(std::memory_order_acquire));
}

void report_signal(const Watched& watched, const siginfo_t* info) {
  Engine* engine = g_signal_engine.load(std::memory_order_acquire);
  SignalFacts facts = signal_facts(engine, watched, info);
  write_signal_line(watched, facts);
  Engine::InFlight in_flight[kInFlightShown];
  size_t flying = engine ? engine->in_flight_now(in_flight, kInFlightShown) : 0;
  write_in_flight_lines(in_flight, flying);
  write_signal_record(watched, facts, engine && engine->config().breadcrumbs, in_flight, flying);
  if (engine) write_trace(*engine, watched);
}

void on_fatal_signal(int number, siginfo_t* info, void* context) {
  int saved_errno = errno;
  Watched* watched = nullptr;
  for (Watched& candidate : g_watched) {
    if (candidate.number == number) watched = &candidate;
  }
  if (!watched) return;
  // A signal the program ignores, sent to it, is no death: nothing to tell, nothing to hand on. (A fault
  // the program ignores still kills it: the kernel forces the default action when its instruction runs
  // again.)
  bool sent = info && info->si_code <= 0;
  if (sent && ignored(watched->previous)) {
    errno = saved_errno;
    return;
  }
  // No engine: no CUDA call was made in this process (a forked child before its first), nothing to tell.
  if (g_signal_engine.load(std::memory_order_acquire) && !g_reported.exchange(true)) {
    // Another thread may still be writing the first error's record (a watchdog that saw the same error
    // aborts meanwhile): it comes first, and the process must not die before it is out.
    if (Engine* engine = g_signal_engine.load(std::memory_order_acquire))
      engine->wait_for_first_error_record(kFirstErrorWaitMs);
    report_signal(*watched, info);
  }
  // Hand on: the program's own handler, as it asked to be called, or the action it had set.
  const struct sigaction& previous = watched->previous;
  if (has_program_handler(previous)) {
    // With the signals blocked that the kernel blocks for it without the shim (its sa_mask, and the signal
    // itself unless SA_NODEFER): the shim's own handler runs SA_NODEFER with an empty mask, and a handler
    // that ends the process with `_exit` must be seen to be in a handler (shim/process.cpp), as a second
    // fault in it must wait as it would.
    sigset_t blocked = previous.sa_mask, before;
    if (!(previous.sa_flags & SA_NODEFER)) sigaddset(&blocked, number);
    pthread_sigmask(SIG_BLOCK, &blocked, &before);
    if (previous.sa_flags & SA_RESETHAND) sigaction(number, &previous, nullptr);
    errno = saved_errno;
    if (previous.sa_flags & SA_SIGINFO)
      previous.sa_sigaction(number, info, context);
    else
      previous.sa_handler(number);
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    return;
  }
  errno = saved_errno;
  // The default action (or ignoring): restore it. A fault re-executes its instruction on return and gets
  // the default action there (the core shows the real place); a sent signal must be raised again.
  sigaction(number, &previous, nullptr);
  if (info && info->si_code <= 0 && previous.sa_handler == SIG_DFL) raise(number);
}

}  // namespace

void forget_fatal_signal_reports_after_fork() {
  // The parent's engine and files are not the child's: a child that dies before its first CUDA call (a
  // DataLoader worker) writes nothing into the parent's log and report (issue 17, F3). Its own engine, if it
  // makes one, installs them again.
  g_signal_engine.store(nullptr, std::memory_order_release);
  g_log_file.store(nullptr, std::memory_order_release);
  g_report_file.store(nullptr, std::memory_order_release);
  g_reported.store(false);
}

void install_fatal_signal_reports(Engine* engine, OutputFile* log_file, OutputFile* report_file,
                                  const char* log_prefix) {
  std::snprintf(g_log_prefix, sizeof(g_log_prefix), "%s", log_prefix);
  g_log_file.store(log_file, std::memory_order_release);
  g_report_file.store(report_file, std::memory_order_release);
  g_signal_engine.store(engine, std::memory_order_release);
  g_reported.store(false);
  if (g_installed.exchange(true)) return;  // a forked child's new engine: the handlers are there already
  for (Watched& watched : g_watched) {
    struct sigaction current {};
    if (sigaction(watched.number, nullptr, &current) != 0) continue;
    // Ignored: left so (an ignored disposition is inherited across exec, a handler is not).
    if (ignored(current)) continue;
    if (watched.only_if_default && ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL))
      continue;  // the program handles it: not a death to record
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(watched.number, &action, &watched.previous);
  }
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
