// libFuzzer target: the policy parser, the rank-list parser and every option's value checker get
// arbitrary bytes. They must answer (a policy or a positioned error) without crashing, hanging or
// reading out of bounds; a parsed policy must then decide a launch without trouble.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "cuda/names.h"
#include "config/policy.h"

// The input is a policy, then optionally a NUL byte and the kernel's (mangled or plain) name that the policy
// decides: its rules' globs and regular expressions meet names the fuzzer chose, not one fixed name (a
// pattern that took exponential time on some name would time out here).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  size_t split = input.find('\0');
  std::string text = input.substr(0, split);
  std::string subject = split == std::string::npos ? "_Z7stencilPfPKfix" : input.substr(split + 1);
  std::string error;
  if (std::optional<blockrun::Policy> policy = blockrun::Policy::parse(text, &error)) {
    const blockrun::KernelName kernel = blockrun::make_kernel_name(subject.c_str());
    blockrun::LaunchFacts facts;
    facts.kernel = &kernel;
    facts.sequence = size;
    facts.kernel_ordinal = size / 2;
    policy->decide(facts);
    facts.kernel = nullptr;
    facts.library_api = subject.c_str();
    facts.library_unit = true;
    policy->decide(facts);
    policy->describe();
  } else if (error.empty()) {
    __builtin_trap();  // a refusal must say why
  }
  blockrun::parse_ranks(text, &error);
  for (const blockrun::OptionSpec& spec : blockrun::option_specs()) blockrun::check_value(spec, text);
  blockrun::make_kernel_name(text.c_str());
  return 0;
}
// SPDX-License-Identifier: MIT
