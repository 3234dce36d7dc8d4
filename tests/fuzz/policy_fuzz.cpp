// libFuzzer target: the policy parser, the rank-list parser and every option's value checker get
// arbitrary bytes. They must answer (a policy or a positioned error) without crashing, hanging or
// reading out of bounds; a parsed policy must then decide a launch without trouble.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config.h"
#include "names.h"
#include "policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;
  if (std::optional<blockrun::Policy> policy = blockrun::Policy::parse(text, &error)) {
    static const blockrun::KernelName kernel = blockrun::make_kernel_name("_Z7stencilPfPKfix");
    blockrun::LaunchFacts facts;
    facts.kernel = &kernel;
    facts.sequence = size;
    facts.kernel_ordinal = size / 2;
    policy->decide(facts);
    facts.kernel = nullptr;
    facts.library_api = "cublasSgemm_v2";
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
