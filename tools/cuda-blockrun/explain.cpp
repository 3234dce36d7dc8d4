// --explain: how the policy treats a described launch, and which rule decides, without running anything.
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "cli.h"
#include "config.h"
#include "names.h"
#include "policy.h"

namespace blockrun::cli {

// --explain: how the configured policy (flags, else CUDA_BLOCKRUN_BLOCK) treats a described launch:
// a kernel name (mangled or demangled), and any of #N, ordinal=N, family=, library=, stream=, thread=,
// after=.
int explain_launch(const std::map<std::string, std::string>& settings, const std::string& description) {
  std::string policy_text = "none";
  if (auto found = settings.find(blockrun::variable::block); found != settings.end()) {
    policy_text = found->second;
  } else if (const char* variable = std::getenv(blockrun::variable::block)) {
    policy_text = variable;
  }
  std::string error;
  std::optional<blockrun::Policy> policy = blockrun::Policy::parse(policy_text, &error);
  if (!policy) usage_error("invalid CUDA_BLOCKRUN_BLOCK='" + policy_text + "': " + error);

  blockrun::LaunchFacts facts;
  blockrun::KernelName kernel;
  std::string library;
  bool have_kernel = false;
  facts.sequence = 1;
  facts.kernel_ordinal = 1;
  facts.thread = 1;
  for (const std::string& term : blockrun::split_top_level(description, " \t")) {
    if (term.empty()) continue;
    // A whole number, decimal or 0x hexadecimal, nothing else (issue 17, F18: '#zzz' and 'ordinal=-1' were
    // read as 0 and 2^64-1).
    auto number_after = [&](size_t prefix) -> uint64_t {
      const std::string digits = term.substr(prefix);
      bool hex = digits.rfind("0x", 0) == 0 || digits.rfind("0X", 0) == 0;
      const std::string body = hex ? digits.substr(2) : digits;
      errno = 0;
      char* end = nullptr;
      unsigned long long value = std::strtoull(body.c_str(), &end, hex ? 16 : 10);
      if (body.empty() || !std::isxdigit(static_cast<unsigned char>(body[0])) || *end || errno == ERANGE)
        usage_error("--explain: '" + term + "' needs a whole number after '" + term.substr(0, prefix) + "'");
      return value;
    };
    if (term[0] == '#') {
      facts.sequence = number_after(1);
    } else if (term.rfind("ordinal=", 0) == 0) {
      facts.kernel_ordinal = number_after(8);
    } else if (term.rfind("thread=", 0) == 0) {
      facts.thread = static_cast<uint32_t>(number_after(7));
    } else if (term.rfind("stream=", 0) == 0) {
      facts.stream = reinterpret_cast<const void*>(static_cast<uintptr_t>(number_after(7)));
    } else if (term.rfind("after=", 0) == 0) {
      facts.elapsed_ms = number_after(6) * 1000;
    } else if (term.rfind("library=", 0) == 0) {
      library = term.substr(8);
    } else if (term.rfind("family=", 0) == 0) {
      std::string family = term.substr(7);
      bool known = false;
      for (int f = 0; f < 4; ++f) {
        if (family == blockrun::launch_family_name(static_cast<blockrun::LaunchFamily>(f))) {
          facts.family = static_cast<blockrun::LaunchFamily>(f);
          known = true;
        }
      }
      if (!known)
        usage_error("--explain: family must be runtime, driver, cublas or graph, not '" + family + "'");
    } else {
      kernel = blockrun::make_kernel_name(term.c_str());
      have_kernel = true;
    }
  }
  if (have_kernel) facts.kernel = &kernel;
  if (!library.empty()) {
    facts.library_api = library.c_str();
    facts.library_unit = !have_kernel;
  }
  if (!have_kernel && library.empty()) usage_error("--explain: name a kernel (or library=CALL) to explain");

  blockrun::Decision decision = policy->decide(facts);
  std::vector<std::string> rules = policy->describe_rules();
  std::string what = have_kernel ? "kernel " + kernel.demangled : "library call " + library;
  std::printf("%s, launch #%llu (its launch %llu), family %s", what.c_str(),
              static_cast<unsigned long long>(facts.sequence),
              static_cast<unsigned long long>(facts.kernel_ordinal),
              blockrun::launch_family_name(facts.family));
  if (have_kernel && !library.empty()) std::printf(", launched by %s", library.c_str());
  std::printf(":\n");
  static const char* const kActions[] = {"not blocked", "blocked (its stream is synchronized after it)",
                                         "blocked (the device is synchronized after it)",
                                         "logged, not blocked"};
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
                rules[static_cast<size_t>(decision.rule)].c_str());
  } else if (have_kernel && blockrun::is_nccl_kernel(kernel) && !rules.empty()) {
    std::printf("  decided by the NCCL default: NCCL kernels are blocked only by a rule that names them\n");
  } else {
    std::printf("  no rule matches (policy: %s)\n", policy->describe().c_str());
  }
  return 0;
}

}  // namespace blockrun::cli
