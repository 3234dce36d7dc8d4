// CUDA_BLOCKRUN_ERROR_FILE (--error-exitcode): one line per process that met a CUDA error, appended, so that
// the wrapper or a job's script learns of errors that the program swallowed and exited 0 after.
#pragma once

#include <string>

#include "config/config.h"
#include "report/process_info.h"

namespace blockrun {

class OutputFile;

// Appends "<pid> <error name> <api>" to config.error_file (expanded for `process`), unless that file is the
// report (`report`, nullptr without one), the log or the trace. Returns "" when it was written or no error
// file is configured, else the warning to log: which file, and why the line is not in it.
std::string note_in_error_file(const Config& config, const ProcessInfo& process, const OutputFile* report,
                               const std::string& error_name, const std::string& api);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
