// The report's JSON writer (any text stays valid JSON) and the call-site rules (which frames are CUDA's).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "report/report_file.h"
#include "callsites/sites.h"

namespace blockrun {
namespace {

TEST(Json, EscapesQuotesBackslashesAndControlBytes) {
  EXPECT_EQ(json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_string("line\nnext\ttab\r"), "\"line\\nnext\\ttab\\r\"");
  EXPECT_EQ(json_string(std::string("nul\0end", 7)), "\"nul\\u0000end\"");
  EXPECT_EQ(json_string("\x1b[31m\x7f"), "\"\\u001b[31m\\u007f\"");
}

TEST(Json, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(json_string("gr\xC3\xB6\xC3\x9F"
                        "e \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\"gr\xC3\xB6\xC3\x9F"
            "e \xE2\x82\xAC \xF0\x9F\x98\x80\"");
  EXPECT_EQ(json_string("bad \xFF byte"), "\"bad \xEF\xBF\xBD byte\"");
  EXPECT_EQ(json_string("cut \xE2\x82"), "\"cut \xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(json_string("overlong \xC0\xAF"), "\"overlong \xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(json_string("surrogate \xED\xA0\x80"), "\"surrogate \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

TEST(Json, CutsVeryLongStringsWithoutSplittingACharacter) {
  std::string name(JsonWriter::kMaxString + 100, 'x');
  std::string quoted = json_string(name);
  EXPECT_EQ(quoted.size(), JsonWriter::kMaxString + 5);  // quotes and "..."
  EXPECT_EQ(quoted.substr(quoted.size() - 4), "...\"");
  std::string euro(JsonWriter::kMaxString - 1, 'x');
  euro += "\xE2\x82\xAC";  // the cut falls inside the last character
  std::string cut = json_string(euro);
  EXPECT_EQ(cut.find("\xEF\xBF\xBD"), std::string::npos);
  EXPECT_EQ(cut.substr(cut.size() - 5), "x...\"");
}

TEST(Json, ABadByteJustBeforeTheCutIsReplacedNotDropped) {
  // Found by json_fuzz: only a sequence the cut split may be dropped.
  EXPECT_EQ(json_string("ab\xFF"
                        "cd",
                        3),
            "\"ab\xEF\xBF\xBD...\"");
  EXPECT_EQ(json_string("ab\xE2\x82\xAC", 4), "\"ab...\"");
}

TEST(Json, WriterSeparatesAndNests) {
  JsonWriter json;
  json.begin_object().field("a", 1).field("b", "two").key("c").begin_array().value(true).null().value(2.5);
  json.begin_object().end_object().end_array().field("d", static_cast<const char*>(nullptr)).end_object();
  EXPECT_EQ(json.text(), "{\"a\":1,\"b\":\"two\",\"c\":[true,null,2.5,{}],\"d\":null}");
}

TEST(Json, NumbersKeepTimesToTheMicrosecondAndNeverWriteNaN) {
  JsonWriter json;
  json.begin_array()
      .value(1795980000.123456)
      .value(0.0 / 0.0)
      .value(static_cast<uint64_t>(1) << 63)
      .end_array();
  EXPECT_EQ(json.text(), "[1795980000.123456,null,9223372036854775808]");
}

Frame frame(std::string module, std::string function, std::string file = "", int line = 0) {
  Frame f;
  f.module = std::move(module);
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  return f;
}

TEST(CallSite, CudaModulesAreRecognisedByFileName) {
  EXPECT_TRUE(is_cuda_module("/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06"));
  EXPECT_TRUE(is_cuda_module("/usr/local/cuda/lib64/libcudart.so.13"));
  EXPECT_TRUE(is_cuda_module("/opt/torch/lib/python3.12/site-packages/nvidia/cublas/lib/libcublasLt.so.13"));
  EXPECT_TRUE(is_cuda_module("/x/libnccl.so.2"));
  EXPECT_FALSE(is_cuda_module("/opt/torch/lib/libtorch_cuda.so"));
  EXPECT_FALSE(is_cuda_module("/home/me/app"));
  EXPECT_FALSE(is_cuda_module(""));
}

TEST(CallSite, StaticRuntimeStubsAndHeadersAreCudas) {
  KernelName kernel{"_Z7stencilPfPKfix", "stencil(float*, float const*, int, long long)", "stencil"};
  EXPECT_TRUE(is_cuda_frame(frame("/app", "cudaLaunchKernel"), &kernel));
  EXPECT_TRUE(is_cuda_frame(frame("/app", "__cudaLaunchKernel"), &kernel));
  EXPECT_TRUE(is_cuda_frame(frame("/app", "cudart::cudaApiLaunchKernel(void const*, dim3)"), &kernel));
  EXPECT_TRUE(is_cuda_frame(frame("/app", "__cudart1234"), &kernel));
  EXPECT_TRUE(
      is_cuda_frame(frame("/app", "libcudart_static_4d8b33a106dceb3c07a56e26de61f2d53bb62a68"), &kernel));
  EXPECT_TRUE(is_cuda_frame(
      frame("/app", "__device_stub__Z7stencilPfPKfix(float*, float const*, int, long long)"), &kernel));
  EXPECT_TRUE(is_cuda_frame(frame("/app", "stencil(float*, float const*, int, long long)"), &kernel));
  EXPECT_TRUE(
      is_cuda_frame(frame("/app", "f", "/tmp/tmpxft_0001_00000000-6_app.cudafe1.stub.c", 3), &kernel));
  EXPECT_TRUE(is_cuda_frame(frame("/app", "cudaError cudaLaunchKernel<char>(char const*, dim3)",
                                  "/usr/local/cuda/include/cuda_runtime.h", 216),
                            &kernel));
  EXPECT_FALSE(is_cuda_frame(frame("/app", "run_step(int)", "/src/app.cu", 42), &kernel));
  EXPECT_FALSE(is_cuda_frame(frame("/app", "curand_setup()"), &kernel));  // lower case after the prefix
  EXPECT_FALSE(is_cuda_frame(frame("/app", ""), &kernel));
}

PythonStack python_stack(std::initializer_list<const char*> files) {
  PythonStack stack;
  stack.status = PythonStatus::Captured;
  for (const char* file : files) {
    PythonFrame& frame = stack.frames[stack.count++];
    std::snprintf(frame.file, sizeof(frame.file), "%s", file);
    frame.function[0] = '\0';
    frame.line = 1;
  }
  return stack;
}

TEST(CallSite, PythonLineIsTheProgramsOwnFrame) {
  EXPECT_EQ(python_call_site(python_stack({"/home/me/train.py"})), 0);
  EXPECT_EQ(python_call_site(python_stack({"/opt/venv/lib/python3.12/site-packages/torch/nn/functional.py",
                                           "/home/me/model.py", "/home/me/train.py"})),
            1);
  EXPECT_EQ(
      python_call_site(python_stack({"/usr/lib/python3/dist-packages/numpy/core.py",
                                     "/usr/lib/python3.12/threading.py", "<frozen runpy>", "/srv/app.py"})),
      3);
  // A user's own directory named lib/python is not the standard library.
  EXPECT_EQ(python_call_site(python_stack({"/home/me/lib/python/tools.py"})), 0);
  // Only library frames: the innermost.
  EXPECT_EQ(
      python_call_site(python_stack({"/usr/lib/python3.12/threading.py", "<frozen importlib._bootstrap>"})),
      0);
  EXPECT_EQ(python_call_site(PythonStack{}), -1);
}

// A function torch.compile runs: Dynamo's frame in its place carries the function's file but its first line,
// under Dynamo's wrapper; the program's line is the call of the compiled function (the stack measured on the
// H200 with PyTorch 2.11, innermost first).
TEST(CallSite, PythonLineOfACompiledFunctionIsItsCall) {
  const char* venv = "/opt/torch/.venv/lib/python3.12/site-packages/";
  std::string launcher = std::string(venv) + "torch/_inductor/runtime/static_triton_launcher.py";
  std::string wrapper = std::string(venv) + "torch/_dynamo/eval_frame.py";
  std::string module = std::string(venv) + "torch/nn/modules/module.py";
  EXPECT_EQ(python_call_site(python_stack({launcher.c_str(), "<string>", "/tmp/torchinductor_root/ab/cab.py",
                                           "/home/me/fault.py", wrapper.c_str(), "/home/me/fault.py"})),
            5);
  // A compiled module: its forward under Dynamo's wrapper under nn.Module's call, then the training loop.
  EXPECT_EQ(python_call_site(python_stack({launcher.c_str(), "/home/me/model.py", wrapper.c_str(),
                                           module.c_str(), "/home/me/train.py"})),
            4);
  // No frame of the program's own beyond Dynamo's: the compiled function's frame is kept.
  EXPECT_EQ(python_call_site(python_stack({launcher.c_str(), "/home/me/fault.py", wrapper.c_str()})), 1);
  // A program frame called by a library (nn.Module's call of the user's forward) stays the line.
  EXPECT_EQ(python_call_site(python_stack({"/home/me/model.py", module.c_str(), "/home/me/train.py"})), 0);
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
