// Fatal signals: the log and the report say that the process died, and of what, before it does.
#pragma once

namespace blockrun {
class Engine;
class OutputFile;
}  // namespace blockrun

namespace blockrun::shim {

// Installs handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT (once per process; again in a forked
// child's new engine) that write one line to the log (`log_file`, or null) and one `fatal_signal` record to
// the report (`report_file`, or null) with write(2) alone (OutputFile::write_record), then hand the signal
// on: to the handler the program had installed, or to the default action (the faulting instruction is
// re-executed, or the signal raised again), so the exit status and core dumps are what they are without the
// shim. `log_prefix` starts each line, as it starts the engine's (log_prefix in log_file.h; cut at 63 bytes).
void install_fatal_signal_reports(Engine* engine, OutputFile* log_file, OutputFile* report_file,
                                  const char* log_prefix);
// In a forked child (pthread_atfork): the parent's engine and files are forgotten until the child's own.
void forget_fatal_signal_reports_after_fork();

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
