// Where launches came from, as the engine takes and tells it: which launches get their call site captured
// on the launch path (CUDA_BLOCKRUN_CALLSITES), the shim's readers of the native stack and the Python frames,
// the Python lines kept as interned numbers (python_sites.h, python_site_cache.h), and the symbolizer that
// resolves a call site only when it is told.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "callsites/callsite.h"
#include "config/config.h"
#include "records.h"

namespace blockrun {

class PythonSiteTable;
class PythonSiteCache;
class Symbolizer;
struct PythonLaunchSite;
struct Site;  // sites.h: what a report tells, included where told
struct PythonCallSite;

class CallSites {
 public:
  explicit CallSites(const Config& config);
  ~CallSites();
  CallSites(const CallSites&) = delete;
  CallSites& operator=(const CallSites&) = delete;

  // How to take call sites (nullptr: not at all): `stack` the whole stack, `python` the Python frames alone,
  // `python_site` the Python line alone, read in full only the first time. `every_launch_python`: every
  // launch keeps its Python line (breadcrumbs name a culprit long after its launch; a trace says each
  // slice's line), else only launches into a capture. `shim_module`: the shim's file, whose frames are not
  // told.
  void start(StackFunction stack, PythonStackFunction python, PythonSiteFunction python_site,
             bool every_launch_python, const std::string& shim_module);

  // Whether a launch with this decision gets its call site captured as it is launched. With `auto`, only
  // launches that are logged: a blocked launch is captured only if its synchronize fails, and a launch that
  // fails itself when it returns, both still on the launching thread inside the call, so a blocked launch
  // that succeeds costs no stack walk.
  bool wants_stack(const Decision& decision) const {
    return mode_ == Callsites::All ||
           (mode_ == Callsites::Auto && (decision.action == Action::Log || log_launches_));
  }
  // Whether stacks are walked at all (not with `none`, nor before start()).
  bool walks() const { return take_stack_ != nullptr; }
  void take_stack(CallStack* out) const { take_stack_(out); }
  // Whether a launch keeps its Python line: every launch, or (`in_capture`) a launch into a capture.
  bool keeps_python(bool in_capture) const { return read_python_ && (every_launch_python_ || in_capture); }
  // The launch's Python line kept as numbers in `record`: from its call stack's frames where `has_stack`,
  // else read now into `python` (a scratch).
  void keep_python_site(LaunchRecord& record, PythonStack& python) const;
  // The calling thread's Python line, read now, as numbers (left as they are where there is no frame).
  void read_python_site(uint32_t* site, uint32_t* innermost) const;
  // The program's own Python line and the innermost frame of `python`, as numbers.
  void intern(const PythonStack& python, uint32_t* site, uint32_t* innermost) const;
  // The Python lines kept (nullptr: none: call sites are off, or no Python reader).
  const PythonSiteTable* python_sites() const { return python_sites_.get(); }

  // What a report tells, with `symbolizer` not shared: callers hold the engine's report lock.
  PythonCallSite python_call_site_of(const LaunchRecord& record, const CallStack* stack) const;
  const PythonFrame* python_line(uint32_t site) const;
  Site site_of(const LaunchRecord& record, const CallStack* stack, bool whole_stack = true);
  // The same from its parts: the stack walked, else the one return address `caller`.
  Site site_of(uintptr_t caller, const CallStack* stack, const KernelName* kernel, bool whole_stack);
  // Where a launch into a capture was made: its stack walked then, else its caller.
  Site site_of(const CapturedLaunch& launch);
  // Once per process, where a call site was told without file:line (`told_without_line`) and libdw could not
  // be loaded (never with --libdw off): why, for the log; "" otherwise.
  std::string missing_libdw_once(bool told_without_line);

 private:
  Callsites mode_;
  bool log_launches_ = false;
  StackFunction take_stack_ = nullptr;
  PythonStackFunction read_python_ = nullptr;
  PythonSiteFunction read_python_site_ = nullptr;
  bool every_launch_python_ = false;
  std::unique_ptr<PythonSiteTable> python_sites_;
  std::unique_ptr<PythonSiteCache> python_site_cache_;  // with read_python_site_
  std::unique_ptr<Symbolizer> symbolizer_;
  std::string shim_module_;
  bool libdw_noted_ = false;
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
