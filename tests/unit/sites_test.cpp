// Tests of how the call site is chosen (src/callsites/sites.h): the program's own line, not a library's.
// Native frames of the CUDA Toolkit's headers (thrust, CUB, libcu++) are passed over for the program's frame
// that called them, by their source file, also where they are inlined into the program's function; Python
// frames of generated code (exec'd "<string>", torch.compile's cache) and of torch.compile's machinery are
// passed over for the program's line. Every frame stays in the stack.
#include "callsites/sites.h"

#include <cstdio>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "callsites/callsite.h"
#include "callsites/symbolize.h"

// Outside any anonymous namespace, with external linkage, as in symbolize_test.cpp: plain functions, no
// local clones.
namespace sites_test {

__attribute__((noinline)) void* own_return_address() {
  void* address = __builtin_return_address(0);
  asm volatile("" : : "r"(address) : "memory");
  return address;
}

}  // namespace sites_test

#include "sites_test_toolkit.h"

namespace sites_test {

// The program's code that calls the toolkit's: a function of the toolkit's, then the toolkit's code inlined.
__attribute__((noinline)) void user_calls_toolkit(blockrun::NativeStack* stack) {
  toolkit_launch(stack);  // USER_CALL_MARKER
  asm volatile("" : : "r"(stack) : "memory");
}

__attribute__((noinline)) uintptr_t user_calls_inlined_toolkit() {
  uintptr_t address = toolkit_inlined();  // USER_INLINED_CALL_MARKER
  asm volatile("" : : "r"(address) : "memory");
  return address;
}

}  // namespace sites_test

namespace blockrun {
namespace {

const char* const kSourceFile = CUDA_BLOCKRUN_SOURCE_DIR "/tests/unit/sites_test.cpp";
const char* const kToolkitHeader =
    "/usr/local/cuda/targets/x86_64-linux/include/cccl/thrust/system/cuda/detail/core/"
    "triple_chevron_launch.h";

// The line of this file holding the comment "// " + `name` (0 unless exactly one).
int marker_line(const std::string& name) {
  const std::string marker = "// " + name;
  std::ifstream source(kSourceFile);
  std::string text;
  int number = 0, found = 0;
  while (std::getline(source, text)) {
    ++number;
    if (text.find(marker) == std::string::npos) continue;
    if (found != 0) return 0;
    found = number;
  }
  return found;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Frame frame(std::string module, std::string function, std::string file = "", int line = 0) {
  Frame f;
  f.module = std::move(module);
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  return f;
}

std::string describe(const std::vector<Frame>& frames) {
  std::string text;
  for (const Frame& f : frames)
    text += fmt::format("\n  '{}' at '{}':{} in {}", f.function, f.file, f.line, f.module);
  return text;
}

// ---- native frames ----

TEST(SitesTest, ToolkitHeadersAreRecognisedByTheirFile) {
  for (const char* file : {
           "/usr/local/cuda/include/thrust/system/cuda/detail/transform.h",
           "/usr/local/cuda-13.0/include/cccl/cub/device/dispatch/dispatch_for.cuh",
           "/usr/local/cuda-12.4/targets/x86_64-linux/include/cub/device/device_for.cuh",
           // nvcc's include path goes through bin/..
           "/usr/local/cuda/bin/../targets/x86_64-linux/include/cccl/thrust/detail/transform.inl",
           "/usr/local/cuda/include/cuda_fp16.hpp",
           // The toolkit's layout elsewhere: conda, the HPC SDK.
           "/opt/conda/targets/x86_64-linux/include/cuda/std/__algorithm/copy.h",
           "/opt/nvidia/hpc_sdk/Linux_x86_64/24.5/cuda/12.4/targets/sbsa-linux/include/nv/target",
           // CCCL's headers wherever they are installed: Debian's packages, pip's nvidia-cuda-cccl, a
           // checkout.
           "/usr/include/thrust/transform.h",
           "/opt/venv/lib/python3.12/site-packages/nvidia/cuda_cccl/include/cub/util_device.cuh",
           "/home/me/cccl/libcudacxx/include/cuda/std/__memory/addressof.h",
           "/home/me/cccl/include/cccl/thrust/for_each.h",
           "include/thrust/transform.h",
       }) {
    EXPECT_EQ(classify_source_file(file), SourceKind::CudaLibrary) << file;
  }
  for (const char* file : {
           "/tmp/tmpxft_0001_00000000-6_app.cudafe1.stub.c",
           "/tmp/tmpxft_0001_00000000-6_app.cudafe1.cpp",
           "/usr/local/cuda/include/crt/host_runtime.h",
           "/usr/local/cuda/targets/x86_64-linux/include/cuda_runtime.h",
           "/usr/include/cuda_runtime_api.h",
       }) {
    EXPECT_EQ(classify_source_file(file), SourceKind::CudaLaunch) << file;
  }
  for (const char* file : {
           "",
           "/home/me/app.cu",
           "/home/me/thrust/app.cu",  // a directory named thrust, not an include/thrust
           "/home/me/project/include/mylib/cuda_helpers.h",
           "/home/me/targets/x86_64-linux/app.cu",
           "/usr/local/include/cudnn_frontend.h",
           "/usr/include/c++/13/bits/std_function.h",
       }) {
    EXPECT_EQ(classify_source_file(file), SourceKind::Program) << file;
  }
}

TEST(SitesTest, ToolkitFramesAreNotCudasButNotTheProgramsEither) {
  const Frame thrust = frame("/app", "void thrust::cuda_cub::parallel_for<...>(...)",
                             "/usr/local/cuda/include/thrust/system/cuda/detail/parallel_for.h", 120);
  EXPECT_TRUE(is_toolkit_frame(thrust));
  EXPECT_FALSE(is_cuda_frame(thrust, nullptr));
  // What counts is the file of the frame's line, not its function: the user's function with a toolkit
  // header's code inlined at that line is the toolkit's frame there.
  EXPECT_TRUE(is_toolkit_frame(
      frame("/app", "run_step(int)", "/usr/local/cuda-13.0/include/cccl/cub/util_device.cuh", 7)));
  EXPECT_FALSE(is_toolkit_frame(frame("/app", "thrust_like_name()", "/home/me/app.cu", 7)));
  // nvcc's generated host code is CUDA's, as its stubs are.
  EXPECT_TRUE(is_cuda_frame(frame("/app", "f", "/tmp/tmpxft_0001_00000000-6_app.cudafe1.cpp", 3), nullptr));
  // A frame the symbolizer classified is taken at its word (no string work on the file again).
  Frame classified = frame("/app", "main", "/home/me/app.cu", 42);
  classified.source = SourceKind::CudaLibrary;
  EXPECT_TRUE(is_toolkit_frame(classified));
}

// A kernel launched by thrust::transform called at app.cu:42, as libdw expands it (innermost first).
std::vector<Frame> thrust_transform_stack() {
  const std::string toolkit = "/usr/local/cuda/targets/x86_64-linux/include/cccl/";
  return {
      frame("/usr/local/cuda/lib64/libcudart.so.13", "cudaLaunchKernel"),
      frame("/app", "__device_stub__ZN3cub6detail8for_each13static_kernelEv()",
            "/tmp/tmpxft_0001_00000000-6_app.cudafe1.stub.c", 12),
      frame("/app", "thrust::cuda_cub::launcher::triple_chevron::doit_host<...>(...) const",
            toolkit + "thrust/system/cuda/detail/core/triple_chevron_launch.h", 87),
      frame("/app", "cub::detail::for_each::dispatch_t<...>::Invoke()",
            toolkit + "cub/device/dispatch/dispatch_for.cuh", 231),
      frame("/app", "thrust::cuda_cub::transform<...>(...)",
            "/usr/local/cuda/include/thrust/system/cuda/detail/transform.h", 264),
      frame("/app", "thrust::transform<...>(...)", "/usr/local/cuda/include/thrust/detail/transform.inl", 51),
      frame("/app", "main", "/home/me/app.cu", 42),
      frame("/usr/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_call_main"),
  };
}

TEST(SitesTest, ThrustsCallSiteIsTheProgramsCallOfThrust) {
  const std::vector<Frame> frames = thrust_transform_stack();
  const int site = choose_call_site(frames, nullptr);
  ASSERT_EQ(site, 6) << describe(frames);
  EXPECT_EQ(short_location(frames[site]), "/home/me/app.cu:42");
}

TEST(SitesTest, AUserFunctionWhoseLineIsInAToolkitHeaderIsPassedOverForItsCaller) {
  // thrust's code inlined into run_step: the frame named run_step has the header's line; the call site is
  // the line of run_step's caller in the user's file.
  const std::vector<Frame> frames = {
      frame("/usr/local/cuda/lib64/libcudart.so.13", "cudaLaunchKernel"),
      frame("/app", "run_step(int)", "/usr/local/cuda/include/thrust/system/cuda/detail/transform.h", 264),
      frame("/app", "main", "/home/me/app.cu", 42),
  };
  EXPECT_EQ(choose_call_site(frames, nullptr), 2) << describe(frames);
}

TEST(SitesTest, OnlyToolkitFramesGiveTheInnermostOfThemAndOnlyCudasNone) {
  std::vector<Frame> frames = thrust_transform_stack();
  frames.resize(6);  // no frame of the program's own: thrust's launch, innermost
  EXPECT_EQ(choose_call_site(frames, nullptr), 2) << describe(frames);
  frames.resize(2);  // the runtime and the stub: none, as before
  EXPECT_EQ(choose_call_site(frames, nullptr), -1) << describe(frames);
  EXPECT_EQ(choose_call_site({}, nullptr), -1);
}

// The whole path: frames symbolized from this process, whose toolkit-header code (sites_test_toolkit.h, at a
// toolkit path by #line) is called by, or inlined into, this file's functions.
TEST(SitesTest, ResolvedStackNamesTheProgramsCallOfToolkitCode) {
  const int call_line = marker_line("USER_CALL_MARKER");
  ASSERT_GT(call_line, 0);
  Symbolizer symbolizer("");
  NativeStack stack;
  sites_test::user_calls_toolkit(&stack);
  const Site site = resolve_site(symbolizer, stack, "", nullptr);
  if (!symbolizer.has_libdw()) GTEST_SKIP() << symbolizer.libdw_status();
  ASSERT_EQ(site.frames.size(), 2u) << describe(site.frames);
  EXPECT_EQ(site.frames[0].file, kToolkitHeader) << describe(site.frames);  // kept in the stack
  EXPECT_EQ(site.frames[0].source, SourceKind::CudaLibrary);
  ASSERT_EQ(site.call_site, 1) << describe(site.frames);
  EXPECT_TRUE(ends_with(site.frames[1].file, "tests/unit/sites_test.cpp")) << describe(site.frames);
  EXPECT_EQ(site.frames[1].line, call_line) << describe(site.frames);
  EXPECT_EQ(site.frames[1].source, SourceKind::Program);
  // Stopping at the call site (a logged launch) finds the same.
  EXPECT_EQ(resolve_site(symbolizer, stack, "", nullptr, false).call_site, 1);
}

TEST(SitesTest, ResolvedStackNamesTheProgramsLineAroundInlinedToolkitCode) {
  const int call_line = marker_line("USER_INLINED_CALL_MARKER");
  ASSERT_GT(call_line, 0);
  Symbolizer symbolizer("");
  NativeStack stack;
  stack.depth = 1;
  stack.frames[0] = sites_test::user_calls_inlined_toolkit();
  const Site site = resolve_site(symbolizer, stack, "", nullptr);
  if (!symbolizer.has_libdw()) GTEST_SKIP() << symbolizer.libdw_status();
  ASSERT_EQ(site.frames.size(), 2u) << describe(site.frames);
  EXPECT_EQ(site.frames[0].file, kToolkitHeader) << describe(site.frames);
  ASSERT_EQ(site.call_site, 1) << describe(site.frames);
  EXPECT_EQ(site.frames[1].function, "sites_test::user_calls_inlined_toolkit()") << describe(site.frames);
  EXPECT_TRUE(ends_with(site.frames[1].file, "tests/unit/sites_test.cpp")) << describe(site.frames);
  EXPECT_EQ(site.frames[1].line, call_line) << describe(site.frames);
}

// ---- Python frames ----

PythonStack python_stack(std::initializer_list<const char*> files) {
  PythonStack stack;
  stack.status = PythonStatus::Captured;
  for (const char* file : files) {
    PythonFrame& f = stack.frames[stack.count++];
    std::snprintf(f.file, sizeof(f.file), "%s", file);
    f.function[0] = '\0';
    f.line = 1;
  }
  return stack;
}

TEST(SitesTest, PythonLineSkipsExecdFrozenAndInductorCacheFrames) {
  EXPECT_EQ(python_call_site(python_stack({"<string>", "<frozen importlib._bootstrap>",
                                           "/tmp/torchinductor_root/ab/cabc.py", "/home/me/train.py"})),
            3);
}

TEST(SitesTest, PythonLineOfACompiledFunctionIsTheProgramsCall) {
  // torch.compile, innermost first: Triton's driver, Inductor's launcher exec'd from a string, its
  // heuristics, the generated module in the cache, the compiled graph's wrappers, torch.fx's generated
  // forward, dynamo's frame: the line is train.py's call of the compiled function.
  EXPECT_EQ(python_call_site(python_stack({
                "/opt/venv/lib/python3.12/site-packages/triton/backends/nvidia/driver.py",
                "<string>",
                "/opt/venv/lib/python3.12/site-packages/torch/_inductor/runtime/triton_heuristics.py",
                "/tmp/torchinductor_root/xy/cxyz2kq3bnd.py",
                "/opt/venv/lib/python3.12/site-packages/torch/_inductor/output_code.py",
                "<eval_with_key>.5",
                "/usr/lib/python3/dist-packages/torch/_dynamo/eval_frame.py",
                "/home/me/train.py",
            })),
            7);
}

TEST(SitesTest, PythonFileKinds) {
  for (const char* file : {"<string>", "<eval_with_key>.5", "<fx>", "/tmp/torchinductor_root/ab/cabc.py",
                           "/var/tmp/torchinductor_me/triton/0/launcher.py"}) {
    EXPECT_EQ(classify_python_file(file), PythonFileKind::Generated) << file;
  }
  for (const char* file :
       {"<frozen importlib._bootstrap>", "<frozen runpy>",
        "/opt/venv/lib/python3.12/site-packages/torch/nn/functional.py",
        "/usr/lib/python3/dist-packages/numpy/core.py", "/usr/lib/python3.12/threading.py",
        "/usr/lib64/python3.9/runpy.py",
        // torch.compile's and Triton's machinery in a source checkout
        "/home/me/pytorch/torch/_inductor/utils.py", "/home/me/pytorch/torch/_dynamo/eval_frame.py",
        "/home/me/triton/python/triton/runtime/jit.py",
        "/home/me/triton/python/triton/backends/nvidia/driver.py"}) {
    EXPECT_EQ(classify_python_file(file), PythonFileKind::Library) << file;
  }
  for (const char* file :
       {"", "/home/me/train.py", "train.py", "<stdin>", "<console>", "<ipython-input-3-1f2e>",
        "/home/me/lib/python/tools.py", "/home/me/my_torchinductor/x.py", "/home/me/torch/utils.py",
        "/home/me/triton_kernels/runtime/run.py"}) {
    EXPECT_EQ(classify_python_file(file), PythonFileKind::Program) << file;
  }
}

TEST(SitesTest, PythonLineSkipsInductorsCacheDirectoryAsConfigured) {
  set_torchinductor_cache_dir("/data/cache/inductor/");
  EXPECT_EQ(classify_python_file("/data/cache/inductor/ab/cabc.py"), PythonFileKind::Generated);
  EXPECT_EQ(classify_python_file("/data/cache/inductor"), PythonFileKind::Program);
  EXPECT_EQ(classify_python_file("/data/cache/inductor_old/ab/cabc.py"), PythonFileKind::Program);
  EXPECT_EQ(python_call_site(python_stack({"<string>", "/data/cache/inductor/ab/cabc.py", "/srv/step.py"})),
            2);
  set_torchinductor_cache_dir("/");  // the root is no cache directory
  EXPECT_EQ(classify_python_file("/srv/step.py"), PythonFileKind::Program);
  set_torchinductor_cache_dir("");
  EXPECT_EQ(classify_python_file("/data/cache/inductor/ab/cabc.py"), PythonFileKind::Program);
}

TEST(SitesTest, PythonStackOfOnlySkippedFramesGivesTheInnermost) {
  EXPECT_EQ(python_call_site(python_stack(
                {"<string>", "/tmp/torchinductor_root/ab/cabc.py",
                 "/opt/venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py", "<frozen runpy>"})),
            0);
  EXPECT_EQ(python_call_site(python_stack({"<string>"})), 0);
  EXPECT_EQ(python_call_site(PythonStack{}), -1);
}

TEST(SitesTest, PythonLineRulesOfBeforeStillHold) {
  EXPECT_EQ(python_call_site(python_stack({"/home/me/train.py"})), 0);
  EXPECT_EQ(python_call_site(python_stack({"/opt/venv/lib/python3.12/site-packages/torch/nn/functional.py",
                                           "/home/me/model.py", "/home/me/train.py"})),
            1);
  EXPECT_EQ(
      python_call_site(python_stack({"/usr/lib/python3/dist-packages/numpy/core.py",
                                     "/usr/lib/python3.12/threading.py", "<frozen runpy>", "/srv/app.py"})),
      3);
  EXPECT_EQ(python_call_site(python_stack({"/home/me/lib/python/tools.py"})), 0);
  EXPECT_EQ(
      python_call_site(python_stack({"/usr/lib/python3.12/threading.py", "<frozen importlib._bootstrap>"})),
      0);
}

// What the choice depended on (PythonSiteCache remembers a launch's line under those frames of its walk).
PythonChoiceExtent extent_of(const PythonStack& stack, int* chosen = nullptr) {
  PythonChoiceExtent extent;
  int user = python_call_site(stack, &extent);
  if (chosen) *chosen = user;
  return extent;
}

TEST(SitesTest, PythonChoiceDependsOnTheFramesUpToTheOneAfterTheProgramsFirst) {
  const char* torch = "/opt/venv/lib/python3.12/site-packages/torch/nn/functional.py";
  int chosen = -1;
  // The program's frame and its caller (is it Dynamo's?), not what is further out.
  PythonChoiceExtent extent =
      extent_of(python_stack({torch, "/home/me/model.py", "/home/me/train.py"}), &chosen);
  EXPECT_EQ(chosen, 1);
  EXPECT_EQ(extent.frames, 3u);
  EXPECT_FALSE(extent.to_end);
  extent = extent_of(python_stack({"/home/me/train.py", torch, torch, torch}));
  EXPECT_EQ(extent.frames, 2u);
  EXPECT_FALSE(extent.to_end);
  // The program's frame is the outermost: that there is no caller mattered.
  extent = extent_of(python_stack({torch, "/home/me/train.py"}));
  EXPECT_EQ(extent.frames, 2u);
  EXPECT_TRUE(extent.to_end);
  // ... unless the walk stopped at a bound there, which the frames before decided.
  PythonStack full = python_stack({torch, "/home/me/train.py"});
  full.truncated = true;
  extent = extent_of(full);
  EXPECT_EQ(extent.frames, 2u);
  EXPECT_FALSE(extent.to_end);
  // No frames: only that the stack ended.
  extent = extent_of(python_stack({}), &chosen);
  EXPECT_EQ(chosen, -1);
  EXPECT_EQ(extent.frames, 0u);
  EXPECT_TRUE(extent.to_end);
}

TEST(SitesTest, PythonChoiceExtentCountsTheFramesPassedOverInTheGap) {
  const char* library = "/usr/lib/python3/dist-packages/framework/layer.py";
  // 4 innermost kept, 5 passed over, then the program's frame and its caller: walked frames 0-3, 4-8, 9, 10.
  PythonStack stack =
      python_stack({library, library, library, library, "/home/me/train.py", "/home/me/main.py"});
  stack.skipped = 5;
  stack.skipped_at = 4;
  int chosen = -1;
  PythonChoiceExtent extent = extent_of(stack, &chosen);
  EXPECT_EQ(chosen, 4);
  EXPECT_EQ(extent.frames, 11u);
  EXPECT_FALSE(extent.to_end);
  // None of the program's: every frame read, and whether the walk found the end.
  stack = python_stack({library, library, library, library});
  stack.skipped = 7;
  stack.skipped_at = 4;
  extent = extent_of(stack, &chosen);
  EXPECT_EQ(chosen, 0);
  EXPECT_EQ(extent.frames, 11u);
  EXPECT_TRUE(extent.to_end);
  stack.truncated = true;
  EXPECT_FALSE(extent_of(stack).to_end);
}

TEST(SitesTest, PythonChoiceBehindDynamoDependsOnTheFramesUpToTheCall) {
  const char* dynamo = "/opt/venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py";
  const char* library = "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py";
  int chosen = -1;
  PythonChoiceExtent extent = extent_of(
      python_stack({"<string>", "/home/me/model.py", dynamo, library, "/home/me/train.py", library}),
      &chosen);
  EXPECT_EQ(chosen, 4);
  EXPECT_EQ(extent.frames, 5u);
  EXPECT_FALSE(extent.to_end);
  // No caller of the program's behind Dynamo: the compiled function's frame, having looked to the end.
  extent = extent_of(python_stack({"<string>", "/home/me/model.py", dynamo, library}), &chosen);
  EXPECT_EQ(chosen, 1);
  EXPECT_EQ(extent.frames, 4u);
  EXPECT_TRUE(extent.to_end);
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
