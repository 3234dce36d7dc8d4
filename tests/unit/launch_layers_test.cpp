// Which layer owns a launch (src/cuda/launch_layers.h): a driver launch on its own, inside a runtime launch
// (the first is the runtime's, a second one the driver's own), inside a library call and inside both; the
// runtime's own record and a library call's unit; and when a library call is a unit of its own.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>

#include "engine.h"
#include "launch_path.h"
#include "cuda/launch_layers.h"
#include "config/policy.h"

namespace blockrun {
namespace {

constexpr uintptr_t kDriverCaller = 0xd000;
constexpr uintptr_t kRuntimeCaller = 0xa000;
constexpr uintptr_t kLibraryCaller = 0xc000;

// The layers inside a runtime launch of cudaLaunchKernel (`launch`: the record the driver wrapper fills).
void enter_runtime_launch(ThreadLayers* layers, Launch* launch) {
  layers->runtime_api = "cudaLaunchKernel";
  layers->runtime_launch = launch;
  layers->driver_recorded = false;
  layers->runtime_caller = kRuntimeCaller;
}

// The layers inside a cublasSgemm_v2 call.
void enter_library_call(ThreadLayers* layers) {
  layers->library_api = "cublasSgemm_v2";
  layers->library.transa = 'N';
  layers->library.transb = 'T';
  layers->library.m = 512;
  layers->library.n = 256;
  layers->library.k = 128;
  layers->library_depth = 1;
  layers->library_kernels = 0;
  layers->library_caller = kLibraryCaller;
}

std::string name(const char* text) {
  return text ? text : "-";
}

std::string hex(uintptr_t address) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%lx", static_cast<unsigned long>(address));
  return text;
}

// An owner in one line: "runtime cudaLaunchKernel > cuLaunchKernel from 0xa000 [into runtime launch]".
std::string describe(const LaunchOwner& owner) {
  std::string text = std::string(launch_family_name(owner.family)) + " " + name(owner.api);
  if (owner.driver_api) text += std::string(" > ") + owner.driver_api;
  text += " from " + hex(owner.caller);
  if (owner.into_runtime_launch) text += " [into runtime launch]";
  if (owner.in_library_call) text += " [in library call]";
  return text;
}

// What set_owner writes into a request, in one line: "cublas cuLaunchKernel from 0xc000, library
// cublasSgemm_v2 m=512 n=256 k=128 transb=T".
std::string request_of(const LaunchOwner& owner, const ThreadLayers& layers) {
  LaunchRequest request;
  set_owner(owner, layers, &request);
  LaunchOwner written;
  written.family = request.family;
  written.api = request.api;
  written.driver_api = request.driver_api;
  written.caller = request.caller;
  std::string text = describe(written);
  if (request.library_api) {
    text += ", library " + name(request.library_api) + " m=" + std::to_string(request.library.m) +
            " n=" + std::to_string(request.library.n) + " k=" + std::to_string(request.library.k) +
            " transb=" + std::string(1, request.library.transb);
  }
  return text;
}

TEST(LaunchLayers, APlainDriverLaunchIsTheDrivers) {
  ThreadLayers layers;
  LaunchOwner owner = driver_launch_owner(layers, "cuLaunchKernel", kDriverCaller);
  EXPECT_EQ(describe(owner), "driver cuLaunchKernel from 0xd000");
  EXPECT_EQ(request_of(owner, layers), "driver cuLaunchKernel from 0xd000");
}

TEST(LaunchLayers, TheFirstDriverLaunchInsideARuntimeLaunchIsTheRuntimes) {
  ThreadLayers layers;
  Launch launch;
  enter_runtime_launch(&layers, &launch);
  // Named by the runtime's entry point, and by the code that called the runtime, not the runtime's own.
  LaunchOwner first = driver_launch_owner(layers, "cuLaunchKernel_ptsz", kDriverCaller);
  EXPECT_EQ(describe(first),
            "runtime cudaLaunchKernel > cuLaunchKernel_ptsz from 0xa000 [into runtime launch]");
  EXPECT_EQ(request_of(first, layers), "runtime cudaLaunchKernel > cuLaunchKernel_ptsz from 0xa000");

  // Once the driver wrapper recorded the runtime launch, a further driver launch in it is the driver's own.
  layers.driver_recorded = true;
  EXPECT_EQ(describe(driver_launch_owner(layers, "cuLaunchKernel", kDriverCaller)),
            "driver cuLaunchKernel from 0xd000");
}

TEST(LaunchLayers, ARuntimeLaunchWithoutARecordToFillIsNotTheRuntimes) {
  ThreadLayers layers;
  enter_runtime_launch(&layers, nullptr);
  EXPECT_EQ(describe(driver_launch_owner(layers, "cuLaunchKernel", kDriverCaller)),
            "driver cuLaunchKernel from 0xd000");
}

TEST(LaunchLayers, ADriverLaunchInsideALibraryCallIsOneOfItsKernels) {
  ThreadLayers layers;
  enter_library_call(&layers);
  // Called from the code that called the library.
  LaunchOwner owner = driver_launch_owner(layers, "cuLaunchKernel", kDriverCaller);
  EXPECT_EQ(describe(owner), "cublas cuLaunchKernel from 0xc000 [in library call]");
  EXPECT_EQ(request_of(owner, layers),
            "cublas cuLaunchKernel from 0xc000, library cublasSgemm_v2 m=512 n=256 k=128 transb=T");
}

TEST(LaunchLayers, ARuntimeLaunchInsideALibraryCall) {
  ThreadLayers layers;
  enter_library_call(&layers);
  Launch launch;
  enter_runtime_launch(&layers, &launch);
  // A library call's kernel, whichever door it took; named by the runtime launch that reached the driver.
  LaunchOwner first = driver_launch_owner(layers, "cuLaunchKernel", kDriverCaller);
  EXPECT_EQ(describe(first),
            "cublas cudaLaunchKernel > cuLaunchKernel from 0xa000 [into runtime launch] [in library call]");
  EXPECT_EQ(request_of(first, layers),
            "cublas cudaLaunchKernel > cuLaunchKernel from 0xa000, library cublasSgemm_v2 m=512 n=256 k=128 "
            "transb=T");

  layers.driver_recorded = true;
  EXPECT_EQ(describe(driver_launch_owner(layers, "cuLaunchKernel", kDriverCaller)),
            "cublas cuLaunchKernel from 0xc000 [in library call]");

  // A runtime launch the driver did not see is the runtime's own, even inside a library call.
  LaunchOwner unseen = runtime_launch_owner(layers);
  EXPECT_EQ(describe(unseen), "runtime cudaLaunchKernel from 0xa000");
  EXPECT_EQ(request_of(unseen, layers), "runtime cudaLaunchKernel from 0xa000");
}

TEST(LaunchLayers, ALibraryCallsUnitIsNamedByTheCall) {
  ThreadLayers layers;
  enter_library_call(&layers);
  layers.library_depth = 0;  // the call has returned: its unit is recorded after it
  LaunchOwner owner = library_unit_owner(layers);
  EXPECT_EQ(describe(owner), "cublas cublasSgemm_v2 from 0xc000 [in library call]");
  EXPECT_EQ(request_of(owner, layers),
            "cublas cublasSgemm_v2 from 0xc000, library cublasSgemm_v2 m=512 n=256 k=128 transb=T");
}

Decision decision(Action action, bool named) {
  Decision result;
  result.action = action;
  result.named = named;
  return result;
}

TEST(LaunchLayers, ALibraryCallIsAUnitWhereARuleNamesItOrTheDriverSawNoKernel) {
  // The driver saw none of its kernels: the call is the only record of them, whatever the policy says.
  EXPECT_EQ(library_call_record(Decision{}, 0), LibraryCallRecord::Unit);
  EXPECT_EQ(library_call_record(decision(Action::Block, false), 0), LibraryCallRecord::Unit);
  // Its kernels were recorded: a unit only where a rule that names it decides something other than Run.
  EXPECT_EQ(library_call_record(Decision{}, 3), LibraryCallRecord::ErrorOnly);
  EXPECT_EQ(library_call_record(decision(Action::Block, true), 3), LibraryCallRecord::Unit);
  EXPECT_EQ(library_call_record(decision(Action::BlockDevice, true), 1), LibraryCallRecord::Unit);
  EXPECT_EQ(library_call_record(decision(Action::Log, true), 1), LibraryCallRecord::Unit);
  EXPECT_EQ(library_call_record(decision(Action::Block, false), 3), LibraryCallRecord::ErrorOnly)
      << "`all` blocks its kernels, not the call as well";
  EXPECT_EQ(library_call_record(decision(Action::Run, true), 3), LibraryCallRecord::ErrorOnly)
      << "an exclusion that names the call";
}

TEST(LaunchLayers, TheRulesOfAPolicyDecideTheUnit) {
  LaunchFacts unit;
  unit.family = LaunchFamily::Cublas;
  unit.library_api = "cublasSgemm_v2";
  unit.library_unit = true;
  std::string error;
  auto decide = [&](const char* text) {
    std::optional<Policy> policy = Policy::parse(text, &error);
    EXPECT_TRUE(policy) << text << ": " << error;
    return policy ? policy->decide(unit) : Decision{};
  };
  EXPECT_EQ(library_call_record(decide("library=cublasSgemm*"), 2), LibraryCallRecord::Unit);
  EXPECT_EQ(library_call_record(decide("cublasSgemm_v2"), 2), LibraryCallRecord::Unit);
  EXPECT_EQ(library_call_record(decide("all"), 2), LibraryCallRecord::ErrorOnly);
  EXPECT_EQ(library_call_record(decide("library=cublasDgemm*"), 2), LibraryCallRecord::ErrorOnly);
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
