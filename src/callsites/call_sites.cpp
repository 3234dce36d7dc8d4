// Where launches came from: taking call sites on the launch path and resolving them when told
// (call_sites.h).
#include "callsites/call_sites.h"

#include "callsites/python_site_cache.h"
#include "callsites/sites.h"
#include "callsites/python_sites.h"
#include "callsites/symbolize.h"

namespace blockrun {

namespace {
// Distinct Python launch lines kept (breadcrumbs, captured launches): 1.1 MiB.
constexpr size_t kPythonSiteCapacity = 1 << 12;
}  // namespace

CallSites::CallSites(const Config& config)
    : mode_(config.callsites),
      log_launches_(config.log_launches),
      symbolizer_(std::make_unique<Symbolizer>(config.libdw)) {}

CallSites::~CallSites() = default;

void CallSites::start(StackFunction stack, PythonStackFunction python, PythonSiteFunction python_site,
                      bool every_launch_python, const std::string& shim_module) {
  shim_module_ = shim_module;
  if (mode_ == Callsites::None) return;
  take_stack_ = stack;
  if (!python) return;
  read_python_ = python;
  python_sites_ = std::make_unique<PythonSiteTable>(kPythonSiteCapacity);
  if (python_site) {
    read_python_site_ = python_site;
    python_site_cache_ = std::make_unique<PythonSiteCache>(*python_sites_);
  }
  every_launch_python_ = every_launch_python;
}

// With breadcrumbs a culprit is named long after its launch: keep the Python line of every launch (no native
// stack walk), as interned numbers. From a code location seen before it costs a walk of a few words a frame
// and one lookup (python_site_cache.h; its cost in docs/performance.md); the frames are read in full, the
// costly way, the first time only.
void CallSites::keep_python_site(LaunchRecord& record, PythonStack& python) const {
  if (!record.has_stack && read_python_site_) {
    PythonLaunchSite site;
    read_python_site_(*python_site_cache_, &python, &site);
    record.python_status = site.status;
    record.python_site = site.site;
    record.python_innermost = site.innermost;
    return;
  }
  if (!record.has_stack) read_python_(&python);
  record.python_status = python.status;
  intern(python, &record.python_site, &record.python_innermost);
}

void CallSites::read_python_site(uint32_t* site, uint32_t* innermost) const {
  if (!read_python_) return;
  PythonStack python;
  read_python_(&python);
  intern(python, site, innermost);
}

void CallSites::intern(const PythonStack& python, uint32_t* site, uint32_t* innermost) const {
  if (python_sites_) intern_python_call_site(*python_sites_, python, site, innermost);
}

PythonCallSite CallSites::python_call_site_of(const LaunchRecord& record, const CallStack* stack) const {
  PythonCallSite found;
  if (stack) {
    int user = python_call_site(stack->python);
    if (user >= 0) found.user = &stack->python.frames[user];
    if (user > 0) found.innermost = &stack->python.frames[0];
  } else if (python_sites_) {
    found.user = python_sites_->get(record.python_site);
    if (found.user) found.innermost = python_sites_->get(record.python_innermost);
  }
  return found;
}

const PythonFrame* CallSites::python_line(uint32_t site) const {
  return python_sites_ ? python_sites_->get(site) : nullptr;
}

Site CallSites::site_of(const LaunchRecord& record, const CallStack* stack, bool whole_stack) {
  return site_of(record.caller, stack, record.kernel ? &record.kernel->name : nullptr, whole_stack);
}

Site CallSites::site_of(const CapturedLaunch& launch) {
  const KernelName* kernel = launch.kernel ? &launch.kernel->name : nullptr;
  if (launch.frames.empty()) return site_of(launch.caller, nullptr, kernel, false);
  NativeStack stack;
  for (uintptr_t frame : launch.frames) stack.frames[stack.depth++] = frame;
  return resolve_site(*symbolizer_, stack, shim_module_, kernel, false);
}

Site CallSites::site_of(uintptr_t caller, const CallStack* stack, const KernelName* kernel,
                        bool whole_stack) {
  if (stack) return resolve_site(*symbolizer_, stack->native, shim_module_, kernel, whole_stack);
  // No stack was walked: the return address into the code that called CUDA is the one frame known (often
  // the program's own, or its launch stub inlined into it).
  NativeStack one;
  if (caller) one.frames[one.depth++] = caller;
  return resolve_site(*symbolizer_, one, shim_module_, kernel);
}

std::string CallSites::missing_libdw_once(bool told_without_line) {
  if (!told_without_line || libdw_noted_) return "";
  std::string problem =
      symbolizer_->libdw_problem();  // "" where libdw is used, or --libdw off asked for none
  if (!problem.empty()) libdw_noted_ = true;
  return problem;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
