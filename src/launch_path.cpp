// The launch path's work off its inline part: naming a new kernel, the policy's decision where it has rules,
// a failed launch's stack, a launch kept for a capture's graph.
#include "launch_path.h"

#include <algorithm>

#include "cuda/names.h"
#include "util/power_of_two.h"

namespace blockrun {

namespace {

constexpr size_t kKernelCapacity = 1 << 16;
constexpr size_t kCapturedFrames = 32;  // of a captured launch's stack, kept to name its capture line

}  // namespace

// Launches kept per stream: 8 (StreamState::kRing), Config::ring with breadcrumbs (rounded up to a power of
// two, as the rings are).
size_t LaunchPath::ring_capacity_for(const Config& config) {
  return round_up_to_power_of_two(config.breadcrumbs ? std::max(config.ring, StreamState::kRing)
                                                     : StreamState::kRing);
}

LaunchPath::LaunchPath(Config config)
    : config_(std::move(config)),
      start_ms_(steady_now_ms()),
      kernels_(kKernelCapacity),
      ledger_(ring_capacity_for(config_), config_.callsites == Callsites::All),
      breadcrumbs_(config_.breadcrumbs, static_cast<uint64_t>(config_.breadcrumb_every),
                   config_.graph_breadcrumbs),
      call_sites_(config_) {}

LaunchPath::~LaunchPath() = default;

void LaunchPath::start(bool time_calls) {
  time_calls_ = time_calls;
  skip_policy_and_stack_ =
      config_.block.blocks_nothing() && !(call_sites_.walks() && call_sites_.wants_stack(Decision{}));
}

const KernelInfo* LaunchPath::new_kernel(const void* handle,
                                         const std::function<const char*()>& resolve_mangled_name) {
  // Names the kernel and caches what depends only on its names; where the rules look only at names,
  // the decision itself is made once per kernel (`keep`: the record lives as long as the process).
  auto classify = [&](KernelInfo* info, const char* fallback_name, bool keep) {
    const char* mangled = resolve_mangled_name();
    info->name = make_kernel_name(mangled ? mangled : fallback_name);
    info->rule_mask = config_.block.name_mask(info->name);
    info->nccl = is_nccl_kernel(info->name);
    info->collective = nccl_collective(info->name);
    info->decided = keep && config_.block.per_kernel();
    if (info->decided) {
      LaunchFacts facts;
      facts.kernel = &info->name;
      info->decision = config_.block.decide(facts);
    }
  };
  KernelInfo* info = kernels_.find_or_insert(kernel_key(handle), [&] {
    auto* created = new KernelInfo;
    classify(created, "(unnamed kernel)", true);
    return created;
  });
  if (info) return info;
  // Past the bound: one shared record, decided per launch from the name resolved now (documented).
  // Never destroyed (a launch can come after the thread's destructors ran, during exit).
  thread_local KernelInfo* overflow = new KernelInfo;
  overflow->past_table = true;
  classify(overflow, "(kernel table full)", false);
  return overflow;
}

Decision LaunchPath::decide(const LaunchRecord& record, LaunchFamily family) const {
  if (record.kernel && record.kernel->decided) return record.kernel->decision;
  LaunchFacts facts;
  facts.kernel = record.kernel ? &record.kernel->name : nullptr;
  if (record.kernel) {
    facts.name_mask = &record.kernel->rule_mask;
    facts.nccl = record.kernel->nccl ? 1 : 0;
  }
  facts.family = family;
  facts.library_api = record.graph ? "cuGraphLaunch" : record.library_api;
  facts.library_unit = !record.kernel && facts.library_api;
  facts.sequence = record.sequence;
  facts.kernel_ordinal = record.kernel_ordinal;
  facts.stream = record.stream.handle;
  facts.thread = record.thread;
  facts.thread_launch = record.thread_launch;
  if (config_.block.uses_time()) facts.elapsed_ms = steady_now_ms() - start_ms_;
  return config_.block.decide(facts);
}

void LaunchPath::take_stack_now(Launch& launch) {
  if (launch.record.has_stack || !call_sites_.walks()) return;
  call_sites_.take_stack(&launch.stack);
  launch.record.has_stack = true;
}

Decision LaunchPath::decide_library_unit(const char* api) const {
  if (config_.block.blocks_nothing()) return Decision{};
  LaunchFacts facts;
  facts.family = LaunchFamily::Cublas;
  facts.library_api = api;
  facts.library_unit = true;
  facts.sequence = ledger_.mark();
  facts.thread = current_thread_number();
  if (config_.block.uses_time()) facts.elapsed_ms = steady_now_ms() - start_ms_;
  return config_.block.decide(facts);
}

void LaunchPath::keep_captured_launch(Launch& launch, uint64_t capture_id) {
  const LaunchRecord& record = launch.record;
  CapturedLaunch kept;
  kept.sequence = record.sequence;
  kept.kernel = record.kernel;
  kept.library_api = record.library_api;
  kept.stream = record.stream;
  kept.caller = record.caller;
  kept.python_site = record.python_site;
  kept.python_innermost = record.python_innermost;
  if (record.has_stack) {
    const NativeStack& stack = launch.stack.native;
    kept.frames.assign(stack.frames, stack.frames + std::min<size_t>(stack.depth, kCapturedFrames));
  }
  CapturePlace place = graphs_.keep_launch(capture_id, kept, breadcrumbs_.graph() ? &breadcrumbs_ : nullptr);
  launch.graph_slot = place.graph_slot;
  launch.capture_position = place.position;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
