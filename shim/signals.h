// Fatal signals: the log and the report say that the process died, and of what, before it does.
#pragma once

#include "engine.h"

namespace blockrun::shim {

// Installs handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT (once per process; again in a forked
// child's new engine) that write one line to the log (`log_fd`) and one `fatal_signal` record to the report
// (`report_fd`, or -1) with write(2) alone, then hand the signal on: to the handler the program had
// installed, or to the default action (the faulting instruction is re-executed, or the signal raised again),
// so the exit status and core dumps are what they are without the shim.
void install_fatal_signal_reports(Engine* engine, int log_fd, int report_fd);

}  // namespace blockrun::shim
