// The block policy: an ordered list of rules deciding, per launch, whether to make it blocking and
// what to do when a blocked launch fails. Every decision goes through Policy::decide. The language is
// documented in docs/policy.md; the parser reports the position of what it cannot read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace blockrun {

// The names a kernel is known by. `base` is the demangled name without parameter list and return
// type (`stencil`, `ns::kernel<float>`): what users type.
struct KernelName {
  std::string mangled;
  std::string demangled;
  std::string base;
};

// Shell-style glob: `*`, `?`, `[abc]`, `[!a-z]`, backslash escapes the next character.
bool glob_match(std::string_view pattern, std::string_view text);

// Splits at any of `separators` outside (), <>, [] and {}; trims blanks around each piece.
std::vector<std::string> split_top_level(std::string_view text, std::string_view separators);

// What a launch unit is, for the `family=` term: how the program reached it.
enum class LaunchFamily : uint8_t { Runtime, Driver, Cublas, Graph };
const char* launch_family_name(LaunchFamily family);
// The family of that name (runtime, driver, cublas, graph), or nullopt: for the policy's `family=` and
// --explain.
std::optional<LaunchFamily> launch_family_named(std::string_view name);

// What to do with a launch a rule selects.
enum class Action : uint8_t {
  Run,          // not blocked (no rule matched, or an exclusion did)
  Block,        // synchronize the launch's stream after it
  BlockDevice,  // synchronize the whole device after it
  Log,          // record it with its details in the log, without blocking
  // Wait until everything launched before it has completed (on every stream), run it while other threads'
  // launches wait at a gate, and synchronize its stream: an error at that synchronize is then its own,
  // whatever else the program had queued (docs/policy.md: the gate and its caveats).
  BlockAlone,
};

// What to do when a launch the rule blocked turns out to have failed.
enum class OnError : uint8_t { Return, Abort, Exit };

struct Decision {
  Action action = Action::Run;
  OnError on_error = OnError::Return;
  int exit_status = 0;  // for OnError::Exit
  int rule = -1;        // index of the deciding rule, -1: none (or the NCCL default)
  bool named = false;   // the deciding rule names what it matched (not just `all` or numbers)
  bool blocks() const {
    return action == Action::Block || action == Action::BlockDevice || action == Action::BlockAlone;
  }
};

// Everything a rule can look at. The static part (kernel names, family, library call) is the same for
// every launch of one kernel through one path; the rest changes per launch.
struct LaunchFacts {
  const KernelName* kernel = nullptr;  // null for library units and graph launches
  LaunchFamily family = LaunchFamily::Runtime;
  const char* library_api = nullptr;  // the library call the launch belongs to, or the unit's name
  bool library_unit = false;          // the library call itself, blocked as a whole
  uint64_t sequence = 0;
  uint64_t kernel_ordinal = 0;
  const void* stream = nullptr;
  uint32_t thread = 0;
  uint64_t thread_launch = 0;  // its number among its host thread's launches (thread#N)
  uint64_t elapsed_ms = 0;
  // Per-kernel answers cached by the caller (Policy::name_mask, is_nccl_kernel), so that deciding a
  // launch does no string matching: null where not cached.
  const uint64_t* name_mask = nullptr;
  int nccl = -1;  // 1, 0, or -1: not known
};

class Policy {
 public:
  Policy();
  ~Policy();
  Policy(const Policy&);
  Policy& operator=(const Policy&);

  // Parses `none`, `all` or rules separated by `;` or `,` (outside brackets). On failure returns
  // nullopt and sets *error to a message that names the position ("at 9: ...").
  static std::optional<Policy> parse(std::string_view text, std::string* error);

  bool blocks_nothing() const { return rules_.empty(); }
  // Whether every rule looks only at kernel names: then one decision per kernel serves all its launches.
  bool per_kernel() const { return per_kernel_; }
  // Whether some rule looks at the time since start (then each launch reads the clock).
  bool uses_time() const { return uses_time_; }
  // Whether some rule's action is block-alone: then every launch passes the gate (shim/launch_gate.h).
  bool blocks_alone() const { return blocks_alone_; }

  Decision decide(const LaunchFacts& facts) const;

  // Bit i set: rule i's kernel-name terms all match this kernel (or it has none). Up to 64 rules;
  // where there are more, every bit is set and decide() matches names itself.
  uint64_t name_mask(const KernelName& name) const;

  // Convenience for tests and tools that know only a kernel's names.
  bool blocks_kernel(const KernelName& name) const;

  // The rules as text, one per line, numbered as Decision::rule counts them.
  std::vector<std::string> describe_rules() const;
  std::string describe() const;

  struct Rule;

 private:
  std::vector<std::shared_ptr<const Rule>> rules_;
  bool per_kernel_ = true;
  bool uses_time_ = false;
  bool blocks_alone_ = false;
  bool names_nccl_ = false;  // some rule names NCCL kernels explicitly: the NCCL default steps aside
};

// The rule that pins a first error in a second run ("to pin it: run again with --block RULE"): each target
// blocked on its own, so that it fails at its own synchronize. A target is a kernel's base name, a library
// call's or cuGraphLaunch's API name; with its per-kernel launch number (`ordinal`, NAME#N) where that one
// launch is known, else (0) every launch of it. A kernel that several host threads launch is numbered among
// its own thread's launches instead (`thread_launch`, NAME thread#N): its per-kernel number depends on how
// the threads interleaved, which another run changes, while a thread's own order does not. Duplicates are
// written once; `lost` (a launch no longer known) gives "all", which alone pins it.
struct PinTarget {
  std::string name;
  uint64_t ordinal = 0;
  uint64_t thread_launch = 0;  // used instead of `ordinal` where not 0
};
std::string pin_rule(const std::vector<PinTarget>& targets, bool lost);

// How much of a subject a regular expression sees: the first bytes of a kernel's name, of the process's name
// and of its command line. A search costs at most (window + 1) x Regex::kMaxInstructions steps
// (linear_regex.h).
constexpr size_t kRegexSubjectWindow = 8192;

// Whether a kernel is one of NCCL's (by name): blocking a collective can deadlock the job.
bool is_nccl_kernel(const KernelName& name);

// The NCCL collective a kernel of NCCL's runs, where its name tells
// (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`: "AllReduce"; NCCL before 2.19:
// `ncclKernel_AllGather_RING_LL_Sum_int8_t`, `ncclAllReduceRingLLKernel_sum_f32`), as a static string;
// nullptr for other kernels and for NCCL's generic kernels, which run whatever work they are given.
const char* nccl_collective(const KernelName& name);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
