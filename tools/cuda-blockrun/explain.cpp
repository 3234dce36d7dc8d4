// --explain: how the policy treats a described launch, and which rule decides, without running anything.
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "config/config.h"
#include "cuda/names.h"
#include "config/policy.h"
#include "report/launch_writer.h"

namespace blockrun::cli {

namespace {

// What the user described, or the policy made of it, as it may be printed: control bytes escaped (issue 40,
// N9), whole.
std::string shown(const std::string& text) {
  return blockrun::printable(text, std::string::npos);
}

// The policy the shim would run with: the flags and the environment through the configuration parser, as the
// program would get them (an invalid or unknown variable is refused as before a run).
blockrun::Policy configured_policy(const std::map<std::string, std::string>& settings) {
  return checked_configuration(settings, "nothing was explained").block;
}

// The number after `term`'s first `prefix` characters: a whole number, decimal or 0x hexadecimal, nothing
// else (issue 17, F18: '#zzz' and 'ordinal=-1' were read as 0 and 2^64-1).
uint64_t number_after(const std::string& term, size_t prefix) {
  const std::string digits = term.substr(prefix);
  bool hex = digits.rfind("0x", 0) == 0 || digits.rfind("0X", 0) == 0;
  const std::string body = hex ? digits.substr(2) : digits;
  errno = 0;
  char* end = nullptr;
  unsigned long long value = std::strtoull(body.c_str(), &end, hex ? 16 : 10);
  if (body.empty() || !std::isxdigit(static_cast<unsigned char>(body[0])) || *end || errno == ERANGE)
    usage_error("--explain: '" + shown(term) + "' needs a whole number after '" +
                shown(term.substr(0, prefix)) + "'");
  return value;
}

blockrun::LaunchFamily family_named(const std::string& family) {
  std::optional<blockrun::LaunchFamily> named = blockrun::launch_family_named(family);
  if (!named)
    usage_error("--explain: family must be runtime, driver, cublas or graph, not '" + shown(family) + "'");
  return *named;
}

// The launch a description tells of. `facts` points into `kernel` and `library`: it stays where it is made.
struct DescribedLaunch {
  blockrun::LaunchFacts facts;
  blockrun::KernelName kernel;
  std::string library;
  bool have_kernel = false;
  bool have_family = false;
  bool have_thread_launch = false;
};

// A kernel-name term: NAME, or NAME#N for its N-th launch, as the policy reads it (the number follows the
// last '#' outside brackets and braces: `{lambda()#1}` is part of a name).
void read_kernel_term(const std::string& term, DescribedLaunch* launch) {
  std::vector<std::string> pieces = blockrun::split_top_level(term, "#");
  std::string name = term;
  if (pieces.size() > 1) {
    name = term.substr(0, term.size() - pieces.back().size() - 1);
    launch->facts.kernel_ordinal = number_after(term, name.size() + 1);
  }
  launch->kernel = blockrun::make_kernel_name(name.c_str());
  launch->have_kernel = true;
}

// One term of the description: #N, NAME#N, thread#N, thread=, stream=, after=, library=, family=, or a kernel
// name.
void read_term(const std::string& term, DescribedLaunch* launch) {
  blockrun::LaunchFacts& facts = launch->facts;
  if (term[0] == '#') {
    facts.sequence = number_after(term, 1);
  } else if (term.rfind("thread#", 0) == 0) {
    facts.thread_launch = number_after(term, 7);
    launch->have_thread_launch = true;
  } else if (term.rfind("ordinal=", 0) == 0) {
    usage_error("--explain: '" + shown(term) +
                "': write a kernel's N-th launch as NAME#N, as in the policy (e.g. --explain 'stencil#13')");
  } else if (term.rfind("thread=", 0) == 0) {
    facts.thread = static_cast<uint32_t>(number_after(term, 7));
  } else if (term.rfind("stream=", 0) == 0) {
    facts.stream = reinterpret_cast<const void*>(static_cast<uintptr_t>(number_after(term, 7)));
  } else if (term.rfind("after=", 0) == 0) {
    facts.elapsed_ms = number_after(term, 6) * 1000;
  } else if (term.rfind("library=", 0) == 0) {
    launch->library = term.substr(8);
  } else if (term.rfind("family=", 0) == 0) {
    facts.family = family_named(term.substr(7));
    launch->have_family = true;
  } else {
    read_kernel_term(term, launch);
  }
}

void read_description(const std::string& description, DescribedLaunch* launch) {
  launch->facts.sequence = 1;
  launch->facts.kernel_ordinal = 1;
  launch->facts.thread = 1;
  launch->facts.thread_launch = 1;
  for (const std::string& term : blockrun::split_top_level(description, " \t")) {
    if (!term.empty()) read_term(term, launch);
  }
  if (launch->have_kernel) launch->facts.kernel = &launch->kernel;
  // As the engine records a cuBLAS call: family cublas (unless family= says otherwise); the call itself,
  // blocked as a unit, has no kernel and so no per-kernel launch number (Engine::decide_library_unit).
  if (!launch->library.empty()) {
    launch->facts.library_api = launch->library.c_str();
    launch->facts.library_unit = !launch->have_kernel;
    if (!launch->have_family) launch->facts.family = blockrun::LaunchFamily::Cublas;
    if (!launch->have_kernel) launch->facts.kernel_ordinal = 0;
  }
  if (!launch->have_kernel && launch->library.empty())
    usage_error("--explain: name a kernel (or library=CALL) to explain");
}

// The launch, what the policy does with it, and which rule decides.
void print_decision(const DescribedLaunch& launch, const blockrun::Policy& policy) {
  const blockrun::LaunchFacts& facts = launch.facts;
  blockrun::Decision decision = policy.decide(facts);
  std::vector<std::string> rules = policy.describe_rules();
  std::string what =
      launch.have_kernel ? "kernel " + launch.kernel.demangled : "library call " + launch.library;
  std::string number = fmt::format("launch #{}", facts.sequence);
  std::string thread_launch =
      launch.have_thread_launch ? fmt::format("thread#{}", facts.thread_launch) : std::string();
  if (launch.have_kernel)
    number += " (" + blockrun::kernel_launch_text(launch.kernel.base, facts.kernel_ordinal) +
              (thread_launch.empty() ? "" : ", " + thread_launch) + ")";
  else if (!thread_launch.empty())
    number += " (" + thread_launch + ")";
  std::printf("%s, %s, family %s", shown(what).c_str(), shown(number).c_str(),
              blockrun::launch_family_name(facts.family));
  if (launch.have_kernel && !launch.library.empty())
    std::printf(", launched by %s", shown(launch.library).c_str());
  std::printf(":\n");
  static const char* const kActions[] = {
      "not blocked", "blocked (its stream is synchronized after it)",
      "blocked (the device is synchronized after it)", "logged, not blocked",
      "blocked alone (everything before it completes first, other threads' "
      "launches wait until its stream is synchronized)"};
  static_assert(std::size(kActions) == static_cast<size_t>(blockrun::Action::BlockAlone) + 1);
  std::printf("  %s", kActions[static_cast<int>(decision.action)]);
  if (decision.blocks()) {
    if (decision.on_error == blockrun::OnError::Abort) std::printf("; on error: report, then abort");
    if (decision.on_error == blockrun::OnError::Exit)
      std::printf("; on error: report, then exit %d", decision.exit_status);
    if (decision.on_error == blockrun::OnError::Return) std::printf("; on error: returned to the program");
  }
  std::printf("\n");
  if (decision.rule >= 0) {
    std::printf("  decided by rule %d: '%s'\n", decision.rule + 1,
                shown(rules[static_cast<size_t>(decision.rule)]).c_str());
  } else if (launch.have_kernel && blockrun::is_nccl_kernel(launch.kernel) && !rules.empty()) {
    std::printf("  decided by the NCCL default: NCCL kernels are blocked only by a rule that names them\n");
  } else {
    std::printf("  no rule matches (policy: %s)\n", shown(policy.describe()).c_str());
  }
}

}  // namespace

// --explain: how the configured policy (flags, else CUDA_BLOCKRUN_BLOCK) treats a described launch:
// a kernel name (mangled or demangled) or NAME#N (its N-th launch), and any of #N (the N-th launch of the
// process), thread#N (of its thread), family=, library=, stream=, thread=, after=.
int explain_launch(const std::map<std::string, std::string>& settings, const std::string& description) {
  blockrun::Policy policy = configured_policy(settings);
  DescribedLaunch launch;
  read_description(description, &launch);
  print_decision(launch, policy);
  return 0;
}

}  // namespace blockrun::cli
// SPDX-License-Identifier: MIT
