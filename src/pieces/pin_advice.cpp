// What a first error that is not pinned offers the user (pin_advice.h).
#include "pieces/pin_advice.h"

namespace blockrun {

namespace {

bool needs_no_quotes(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("_-./=:,+@%").find(c) != std::string_view::npos;
}

}  // namespace

std::string shell_quoted(std::string_view argument) {
  bool plain = !argument.empty();
  for (char c : argument) plain = plain && needs_no_quotes(c);
  if (plain) return std::string(argument);
  return single_quoted(argument);
}

std::string single_quoted(std::string_view argument) {
  std::string quoted = "'";
  for (char c : argument) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

PinAdvice pin_advice(const std::vector<std::string>& argv, bool in_job, const std::string& rule,
                     const SuspectTally& tally) {
  PinAdvice advice;
  advice.in_job = in_job;
  // The rule is made from every launch on record that could have faulted (the listed and the cut), so it
  // covers them all unless older ones were no longer kept.
  advice.rule_covers = rule == "all" || (!rule.empty() && !tally.more_not_kept);
  if (!in_job && !argv.empty()) {
    advice.localize_command = "cuda-blockrun --localize --";
    for (const std::string& argument : argv) advice.localize_command += " " + shell_quoted(argument);
  }
  return advice;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
