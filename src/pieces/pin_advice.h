// What a first error that is not pinned offers the user (issue 38, "a hint that works, or none"): the
// command to copy first, `cuda-blockrun --localize` on the process's own command line, and whether the
// --block rule may be offered as well, which it may only where it blocks every launch that could have
// faulted. Values in, values out: the engine decides with it, the writers under report/ tell it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace blockrun {

// How many launches could have faulted, against the suspects a finding lists.
struct SuspectTally {
  uint64_t could_have_faulted = 0;  // launches on record not known to have completed (besides a culprit)
  bool more_not_kept = false;       // and older ones, never proved, that were no longer kept
  size_t listed = 0;                // of them, the suspects listed
  // The list shows fewer launches than could have faulted.
  bool cut() const { return more_not_kept || could_have_faulted > listed; }
};

struct PinAdvice {
  // `cuda-blockrun --localize -- ARGUMENTS`, shell-quoted, to run in the directory the program ran in; ""
  // for a rank of a job, whose job command this process does not know (the advice then names the job).
  std::string localize_command;
  bool in_job = false;
  // The --block rule blocks every launch that could have faulted: it was made from all of them (the
  // suspects listed and those the list leaves out), none was lost from the record, or the rule is `all`.
  bool rule_covers = false;
};

// `argv`: the process's command line (empty: not known); `in_job`: a launcher's rank variable is set;
// `rule`: the pin rule, made from every launch on record that could have faulted; `tally`: how many.
PinAdvice pin_advice(const std::vector<std::string>& argv, bool in_job, const std::string& rule,
                     const SuspectTally& tally);

// One argument as a POSIX shell reads it back: as it is where it holds only characters no shell treats
// specially, else in single quotes (a quote inside written '\'').
std::string shell_quoted(std::string_view argument);
// The same, always in single quotes, as the log's `--block '...'` hints write a rule: a kernel name with a
// quote in it (`pick<'a'>`) must still be one argument when the hint is pasted into a shell.
std::string single_quoted(std::string_view argument);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
