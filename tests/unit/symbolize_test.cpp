// Tests of the symbolizer (src/callsites/symbolize.h): file:line and function of a known call with libdw,
// exported names and modules without it, chains of inlined functions, degraded answers, no debuginfod
// traffic, and concurrent use.
//
// This file is also built, with SYMBOLIZE_TEST_LIBRARY defined, as libsymbolize_test_library.so
// (tests/CMakeLists.txt): the shared library whose exported function the tests symbolize.
#ifdef SYMBOLIZE_TEST_LIBRARY

#include <cstdint>

namespace blockrun_test {

// A body of some length, so that an address a few bytes into it is still inside it.
__attribute__((noinline, visibility("default"))) int exported_function(int count) {
  volatile int sum = 0;
  for (int i = 0; i < count; ++i) sum = sum + i * count;
  return sum;
}

__attribute__((noinline)) void* library_return_address() {
  void* address = __builtin_return_address(0);
  asm volatile("" : : "r"(address) : "memory");
  return address;
}

// A call inlined in a library without .debug_aranges (see symbolize_test's inlined functions below).
static inline __attribute__((always_inline)) uintptr_t library_inlined() {
  void* address = library_return_address();  // LIBRARY_INNER_MARKER
  asm volatile("" : : "r"(address) : "memory");
  return reinterpret_cast<uintptr_t>(address);
}

__attribute__((noinline)) uintptr_t library_call_inlined() {
  uintptr_t address = library_inlined();  // LIBRARY_CALL_MARKER
  asm volatile("" : : "r"(address) : "memory");
  return address;
}

}  // namespace blockrun_test

// C linkage: the test finds the C++ functions through them without spelling their mangled names.
extern "C" __attribute__((visibility("default"))) void* symbolize_test_library_function() {
  return reinterpret_cast<void*>(&blockrun_test::exported_function);
}

extern "C" __attribute__((visibility("default"))) uintptr_t symbolize_test_library_inlined_call() {
  return blockrun_test::library_call_inlined();
}

#else

#include "callsites/symbolize.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <link.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

// Outside any anonymous namespace, with external linkage: the compiler keeps them as the plain functions
// whose names the test expects (no local clones with suffixed names).
namespace symbolize_test {

// Returns its own return address: the instruction after the call in call_at_marker.
__attribute__((noinline)) void* own_return_address() {
  void* address = __builtin_return_address(0);
  asm volatile("" : : "r"(address) : "memory");
  return address;
}

// The call whose file, line and function the symbolizer must name. The asm after the call keeps it a call
// (a tail jump would return to our caller instead), whatever the optimization level.
__attribute__((noinline)) uintptr_t call_at_marker() {
  void* address = own_return_address();  // SYMBOLIZE_MARKER
  asm volatile("" : : "r"(address) : "memory");
  return reinterpret_cast<uintptr_t>(address);
}

// Inlined into every caller at every optimization level (always_inline): the return address of the call
// below lies in the caller's copy, inside the inlined subroutine. Internal linkage, as a helper in a header
// or a generated launch stub often has: GCC then writes DW_AT_name and no DW_AT_linkage_name for it.
static inline __attribute__((always_inline)) uintptr_t inlined_inner() {
  void* address = own_return_address();  // INLINE_INNER_MARKER
  asm volatile("" : : "r"(address) : "memory");
  return reinterpret_cast<uintptr_t>(address);
}

static inline __attribute__((always_inline)) uintptr_t inlined_middle() {
  uintptr_t address = inlined_inner();  // INLINE_MIDDLE_MARKER
  asm volatile("" : : "r"(address) : "memory");
  return address;
}

// The user's code that calls the inlined functions: one level, then two.
__attribute__((noinline)) uintptr_t call_inlined_inner() {
  uintptr_t address = inlined_inner();  // INLINE_CALL_MARKER
  asm volatile("" : : "r"(address) : "memory");
  return address;
}

__attribute__((noinline)) uintptr_t call_inlined_middle() {
  uintptr_t address = inlined_middle();  // INLINE_OUTER_MARKER
  asm volatile("" : : "r"(address) : "memory");
  return address;
}

}  // namespace symbolize_test

namespace {

using blockrun::Frame;
using blockrun::Symbolizer;
using symbolize_test::call_at_marker;
using symbolize_test::call_inlined_inner;
using symbolize_test::call_inlined_middle;

const char* const kSourceFile = CUDA_BLOCKRUN_SOURCE_DIR "/tests/unit/symbolize_test.cpp";
const char* const kLibraryFunction = "blockrun_test::exported_function(int)";

// The line of this file that holds the comment "// " + `name`, found at run time so that edits above it need
// no test change; 0 when there is not exactly one. The lines that call this one name it without the "// ".
int marker_line(const std::string& name = "SYMBOLIZE_MARKER") {
  const std::string marker = "// " + name;
  std::ifstream source(kSourceFile);
  std::string text;
  int number = 0;
  int found = 0;
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

std::string real_path(const std::string& path) {
  char buffer[PATH_MAX];
  return realpath(path.c_str(), buffer) ? buffer : path;
}

std::string executable_path() {
  return real_path("/proc/self/exe");
}

// The load base of a loaded object, from its program headers (the main program's name is ""): the
// address of its first loaded byte, independently of how the symbolizer finds it.
uintptr_t load_base(const std::string& name) {
  struct Search {
    std::string name;
    uintptr_t base = 0;
  } search{name};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* search = static_cast<Search*>(data);
        if (search->name != (info->dlpi_name ? info->dlpi_name : "")) return 0;
        uintptr_t lowest = UINTPTR_MAX;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_phdr[i].p_vaddr < lowest) {
            lowest = info->dlpi_phdr[i].p_vaddr;
          }
        }
        search->base = (info->dlpi_addr + lowest) & ~uintptr_t{4095};
        return 1;
      },
      &search);
  return search.base;
}

std::string describe(const Frame& frame) {
  return fmt::format("{:#x} in [{}]+{:#x} function '{}' at '{}':{}", frame.address, frame.module,
                     frame.module_offset, frame.function, frame.file, frame.line);
}

std::string describe(const std::vector<Frame>& frames) {
  std::string text = fmt::format("{} frames", frames.size());
  for (const Frame& frame : frames) text += "\n  " + describe(frame);
  return text;
}

// A function of internal linkage is named from DW_AT_name, without parameters, where the compiler writes no
// linkage name for it (GCC); clang writes one, which demangles with the parameters.
bool names_inlined_function(const std::string& function, const std::string& qualified_name) {
  return function == qualified_name || function == qualified_name + "()";
}

// libsymbolize_test_library.so, loaded for one test's duration.
class TestLibrary {
 public:
  TestLibrary() : handle_(dlopen(SYMBOLIZE_TEST_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL)) {}
  ~TestLibrary() {
    if (handle_) dlclose(handle_);
  }
  TestLibrary(const TestLibrary&) = delete;
  TestLibrary& operator=(const TestLibrary&) = delete;

  static bool is_loaded() { return dlopen(SYMBOLIZE_TEST_LIBRARY_PATH, RTLD_NOW | RTLD_NOLOAD) != nullptr; }
  bool loaded() const { return handle_ != nullptr; }
  uintptr_t function() const {
    auto get = reinterpret_cast<void* (*)()>(dlsym(handle_, "symbolize_test_library_function"));
    return get ? reinterpret_cast<uintptr_t>(get()) : 0;
  }
  // A return address inside an inlined function of the library.
  uintptr_t inlined_call() const {
    auto call = reinterpret_cast<uintptr_t (*)()>(dlsym(handle_, "symbolize_test_library_inlined_call"));
    return call ? call() : 0;
  }

 private:
  void* handle_;
};

// An address inside libstdc++, which has a build ID and no local debug file on the machines that run the
// tests (no -dbg package): the case where elfutils' standard finder asks debuginfod servers.
uintptr_t libstdcxx_function() {
  return reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "_ZSt9terminatev"));
}

TEST(SymbolizeTest, NamesTheCallersFileLineAndFunctionWithLibdw) {
  const int line = marker_line();
  ASSERT_GT(line, 0) << "no single marker line in " << kSourceFile;
  Symbolizer symbolizer("");
  EXPECT_FALSE(symbolizer.has_libdw()) << "nothing is loaded before the first symbolize()";

  const uintptr_t address = call_at_marker();
  const Frame frame = symbolizer.symbolize(address);
  ASSERT_TRUE(symbolizer.has_libdw()) << symbolizer.libdw_status();
  EXPECT_EQ(frame.address, address);
  EXPECT_TRUE(ends_with(frame.file, "tests/unit/symbolize_test.cpp")) << describe(frame);
  EXPECT_EQ(frame.line, line) << describe(frame);
  EXPECT_EQ(frame.function, "symbolize_test::call_at_marker()") << describe(frame);
  EXPECT_EQ(frame.module, executable_path());
  EXPECT_EQ(frame.module_offset, address - load_base("")) << describe(frame);

  const std::string status = symbolizer.libdw_status();
  EXPECT_NE(status.find("libdw.so"), std::string::npos) << status;
  EXPECT_NE(status.find("(elfutils 0."), std::string::npos) << status;
  EXPECT_EQ(describe(symbolizer.symbolize(address)), describe(frame)) << "the cached answer";
}

TEST(SymbolizeTest, NamesAnExportedLibraryFunctionWithoutLibdw) {
  TestLibrary library;
  ASSERT_TRUE(library.loaded()) << dlerror();
  const uintptr_t function = library.function();
  ASSERT_NE(function, 0u);
  Symbolizer symbolizer("off");
  // The entry, and an address inside the body; neither is a return address.
  for (uintptr_t address : {function, function + 4}) {
    const Frame frame = symbolizer.symbolize(address, false);
    EXPECT_TRUE(ends_with(frame.module, "/libsymbolize_test_library.so")) << describe(frame);
    EXPECT_EQ(frame.module, real_path(SYMBOLIZE_TEST_LIBRARY_PATH));
    EXPECT_EQ(frame.module_offset, address - load_base(frame.module)) << describe(frame);
    EXPECT_EQ(frame.function, kLibraryFunction) << describe(frame);
    EXPECT_EQ(frame.file, "");
    EXPECT_EQ(frame.line, 0);
  }
  EXPECT_FALSE(symbolizer.has_libdw());
  EXPECT_NE(symbolizer.libdw_status().find("off"), std::string::npos) << symbolizer.libdw_status();
}

TEST(SymbolizeTest, FindsALibraryLoadedAfterTheFirstUseWithLibdw) {
  Symbolizer symbolizer("");
  symbolizer.symbolize(call_at_marker());  // libdw reads the process's modules now
  ASSERT_TRUE(symbolizer.has_libdw()) << symbolizer.libdw_status();
  ASSERT_FALSE(TestLibrary::is_loaded()) << "the library must be loaded after the first symbolize()";

  TestLibrary library;
  ASSERT_TRUE(library.loaded()) << dlerror();
  const uintptr_t function = library.function();
  const Frame frame = symbolizer.symbolize(function + 4, false);
  EXPECT_EQ(frame.module, real_path(SYMBOLIZE_TEST_LIBRARY_PATH)) << describe(frame);
  EXPECT_EQ(frame.function, kLibraryFunction) << describe(frame);
  EXPECT_TRUE(ends_with(frame.file, "tests/unit/symbolize_test.cpp")) << describe(frame);
  EXPECT_GT(frame.line, 0) << describe(frame);

  // The module and offset agree with what dladdr says.
  const Frame without_libdw = Symbolizer("off").symbolize(function + 4, false);
  EXPECT_EQ(frame.module_offset, without_libdw.module_offset);
  EXPECT_EQ(frame.module, without_libdw.module);
}

TEST(SymbolizeTest, NamesASystemLibraryAlikeWithAndWithoutLibdw) {
  // libstdc++ is opened as /lib/x86_64-linux-gnu/... on merged-/usr systems, and mapped from /usr/lib/...
  const uintptr_t address = libstdcxx_function();
  ASSERT_NE(address, 0u);
  const Frame with_libdw = Symbolizer("").symbolize(address, false);
  const Frame without_libdw = Symbolizer("off").symbolize(address, false);
  EXPECT_EQ(with_libdw.function, "std::terminate()") << describe(with_libdw);
  EXPECT_EQ(with_libdw.module, without_libdw.module);
  EXPECT_EQ(with_libdw.module, real_path(with_libdw.module));
  EXPECT_EQ(with_libdw.module_offset, without_libdw.module_offset);
  EXPECT_EQ(with_libdw.function, without_libdw.function);
}

TEST(SymbolizeTest, NamesTheMainProgramByItsRealPathWithoutLibdw) {
  const uintptr_t address = call_at_marker();
  Symbolizer symbolizer("off");
  const Frame frame = symbolizer.symbolize(address);
  EXPECT_EQ(frame.address, address);
  EXPECT_EQ(frame.module, executable_path()) << describe(frame);
  EXPECT_EQ(frame.module_offset, address - load_base("")) << describe(frame);
  EXPECT_EQ(frame.file, "");
  EXPECT_EQ(frame.line, 0);

  const Frame with_libdw = Symbolizer("").symbolize(address);
  EXPECT_EQ(with_libdw.module, frame.module);
  EXPECT_EQ(with_libdw.module_offset, frame.module_offset);
}

TEST(SymbolizeTest, SaysWhyALibdwCannotBeUsed) {
  const std::string missing_path = "/nonexistent/libdw.so.1";
  Symbolizer missing(missing_path);
  EXPECT_FALSE(missing.has_libdw());
  EXPECT_NE(missing.libdw_status().find("not loaded yet"), std::string::npos) << missing.libdw_status();
  const Frame frame = missing.symbolize(call_at_marker());
  EXPECT_EQ(frame.module, executable_path()) << "dladdr answers instead";
  EXPECT_FALSE(missing.has_libdw());
  const std::string status = missing.libdw_status();
  EXPECT_NE(status.find(missing_path + " not found: "), std::string::npos) << status;
  EXPECT_NE(status.find("function names from dynamic symbols only"), std::string::npos) << status;

  // A library that loads but is not libdw.
  Symbolizer not_libdw(SYMBOLIZE_TEST_LIBRARY_PATH);
  not_libdw.symbolize(call_at_marker());
  EXPECT_FALSE(not_libdw.has_libdw());
  EXPECT_NE(not_libdw.libdw_status().find(SYMBOLIZE_TEST_LIBRARY_PATH), std::string::npos)
      << not_libdw.libdw_status();
  EXPECT_NE(not_libdw.libdw_status().find("dwfl_begin"), std::string::npos) << not_libdw.libdw_status();
}

TEST(SymbolizeTest, AnAddressInNoModuleGivesOnlyTheAddress) {
  for (const char* libdw : {"", "off"}) {
    Symbolizer symbolizer(libdw);
    for (uintptr_t address : {uintptr_t{0x10}, uintptr_t{0}, UINTPTR_MAX}) {
      for (bool return_address : {true, false}) {
        Frame expected;
        expected.address = address;
        EXPECT_EQ(describe(symbolizer.symbolize(address, return_address)), describe(expected))
            << "libdw '" << libdw << "'";
      }
    }
  }
}

TEST(SymbolizeTest, InlinedNamesTheInlinedFunctionThenItsCaller) {
  const int inner_line = marker_line("INLINE_INNER_MARKER");
  const int call_line = marker_line("INLINE_CALL_MARKER");
  ASSERT_GT(inner_line, 0);
  ASSERT_GT(call_line, 0);
  Symbolizer symbolizer("");
  const uintptr_t address = call_inlined_inner();
  const std::vector<Frame> frames = symbolizer.symbolize_inlined(address);
  ASSERT_TRUE(symbolizer.has_libdw()) << symbolizer.libdw_status();
  ASSERT_EQ(frames.size(), 2u) << describe(frames);

  // The innermost frame is where symbolize() is, named after the inlined function.
  const Frame physical = symbolizer.symbolize(address);
  EXPECT_TRUE(names_inlined_function(frames[0].function, "symbolize_test::inlined_inner"))
      << describe(frames);
  EXPECT_EQ(frames[0].line, inner_line) << describe(frames);
  EXPECT_EQ(frames[0].file, physical.file) << describe(frames);
  EXPECT_EQ(frames[0].line, physical.line) << describe(frames);
  EXPECT_TRUE(ends_with(frames[0].file, "tests/unit/symbolize_test.cpp")) << describe(frames);
  // The caller: the line where the function was inlined, and the name symbolize() gives.
  EXPECT_EQ(frames[1].function, "symbolize_test::call_inlined_inner()") << describe(frames);
  EXPECT_EQ(frames[1].function, physical.function);
  EXPECT_EQ(frames[1].file, frames[0].file) << describe(frames);
  EXPECT_EQ(frames[1].line, call_line) << describe(frames);
  for (const Frame& frame : frames) {
    EXPECT_EQ(frame.address, address);
    EXPECT_EQ(frame.module, executable_path());
    EXPECT_EQ(frame.module_offset, address - load_base("")) << describe(frame);
  }
  EXPECT_EQ(describe(symbolizer.symbolize_inlined(address)), describe(frames)) << "the cached answer";
}

TEST(SymbolizeTest, InlinedNamesEachLevelOfATwoLevelChain) {
  const int inner_line = marker_line("INLINE_INNER_MARKER");
  const int middle_line = marker_line("INLINE_MIDDLE_MARKER");
  const int outer_line = marker_line("INLINE_OUTER_MARKER");
  ASSERT_GT(inner_line, 0);
  ASSERT_GT(middle_line, 0);
  ASSERT_GT(outer_line, 0);
  Symbolizer symbolizer("");
  const uintptr_t address = call_inlined_middle();
  const std::vector<Frame> frames = symbolizer.symbolize_inlined(address);
  ASSERT_EQ(frames.size(), 3u) << describe(frames) << "\n" << symbolizer.libdw_status();
  EXPECT_TRUE(names_inlined_function(frames[0].function, "symbolize_test::inlined_inner"))
      << describe(frames);
  EXPECT_EQ(frames[0].line, inner_line) << describe(frames);
  EXPECT_TRUE(names_inlined_function(frames[1].function, "symbolize_test::inlined_middle"))
      << describe(frames);
  EXPECT_EQ(frames[1].line, middle_line) << describe(frames);
  EXPECT_EQ(frames[2].function, "symbolize_test::call_inlined_middle()") << describe(frames);
  EXPECT_EQ(frames[2].line, outer_line) << describe(frames);
  for (const Frame& frame : frames) {
    EXPECT_TRUE(ends_with(frame.file, "tests/unit/symbolize_test.cpp")) << describe(frames);
    EXPECT_EQ(frame.address, address);
    EXPECT_EQ(frame.module, executable_path());
    EXPECT_EQ(frame.module_offset, address - load_base(""));
  }
}

TEST(SymbolizeTest, InlinedFindsInlinedFunctionsInALibraryWithoutDebugAranges) {
  const int inner_line = marker_line("LIBRARY_INNER_MARKER");
  const int call_line = marker_line("LIBRARY_CALL_MARKER");
  ASSERT_GT(inner_line, 0);
  ASSERT_GT(call_line, 0);
  TestLibrary library;
  ASSERT_TRUE(library.loaded()) << dlerror();
  const uintptr_t address = library.inlined_call();
  ASSERT_NE(address, 0u);
  Symbolizer symbolizer("");
  const std::vector<Frame> frames = symbolizer.symbolize_inlined(address);
  ASSERT_EQ(frames.size(), 2u) << describe(frames) << "\n" << symbolizer.libdw_status();
  EXPECT_TRUE(names_inlined_function(frames[0].function, "blockrun_test::library_inlined"))
      << describe(frames);
  EXPECT_EQ(frames[0].line, inner_line) << describe(frames);
  EXPECT_EQ(frames[1].function, "blockrun_test::library_call_inlined()") << describe(frames);
  EXPECT_EQ(frames[1].line, call_line) << describe(frames);
  for (const Frame& frame : frames) {
    EXPECT_TRUE(ends_with(frame.file, "tests/unit/symbolize_test.cpp")) << describe(frames);
    EXPECT_EQ(frame.module, real_path(SYMBOLIZE_TEST_LIBRARY_PATH));
  }
}

TEST(SymbolizeTest, InlinedGivesTheOneFrameOfSymbolizeWhereNothingIsInlined) {
  const uintptr_t address = call_at_marker();
  Symbolizer symbolizer("");
  const std::vector<Frame> frames = symbolizer.symbolize_inlined(address);
  ASSERT_TRUE(symbolizer.has_libdw()) << symbolizer.libdw_status();
  ASSERT_EQ(frames.size(), 1u) << describe(frames);
  EXPECT_EQ(describe(frames[0]), describe(symbolizer.symbolize(address)));
  EXPECT_EQ(frames[0].line, marker_line()) << describe(frames);

  // Not a return address: the entry of a function that inlines nothing there.
  const auto entry = reinterpret_cast<uintptr_t>(&symbolize_test::own_return_address);
  const std::vector<Frame> at_entry = symbolizer.symbolize_inlined(entry, false);
  ASSERT_EQ(at_entry.size(), 1u) << describe(at_entry);
  EXPECT_EQ(describe(at_entry[0]), describe(symbolizer.symbolize(entry, false)));
}

TEST(SymbolizeTest, InlinedGivesOneFrameWithoutLibdw) {
  for (uintptr_t address : {call_inlined_inner(), call_inlined_middle(), call_at_marker()}) {
    Symbolizer symbolizer("off");
    const std::vector<Frame> frames = symbolizer.symbolize_inlined(address);
    ASSERT_EQ(frames.size(), 1u) << describe(frames);
    EXPECT_EQ(describe(frames[0]), describe(symbolizer.symbolize(address)));
    EXPECT_EQ(frames[0].module, executable_path());
  }
}

TEST(SymbolizeTest, InlinedGivesOneEmptyFrameForAnAddressInNoModule) {
  for (const char* libdw : {"", "off"}) {
    Symbolizer symbolizer(libdw);
    for (uintptr_t address : {uintptr_t{0x10}, uintptr_t{0}, UINTPTR_MAX}) {
      for (bool return_address : {true, false}) {
        Frame expected;
        expected.address = address;
        const std::vector<Frame> frames = symbolizer.symbolize_inlined(address, return_address);
        ASSERT_EQ(frames.size(), 1u) << describe(frames);
        EXPECT_EQ(describe(frames[0]), describe(expected)) << "libdw '" << libdw << "'";
      }
    }
  }
}

TEST(SymbolizeTest, NeverAsksDebuginfodServers) {
  // A server that accepts connections and never answers: a client that asked it shows in the accept
  // queue, and would wait for the answer (DEBUGINFOD_TIMEOUT, 90 s by default).
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in server{};
  server.sin_family = AF_INET;
  server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof server;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&server), sizeof server), 0);
  ASSERT_EQ(listen(listener, 16), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&server), &length), 0);
  char cache[] = "/tmp/blockrun-symbolize-debuginfod-XXXXXX";
  ASSERT_NE(mkdtemp(cache), nullptr);
  const int line = marker_line();
  ASSERT_GT(line, 0);
  ASSERT_NE(libstdcxx_function(), 0u);

  // In a new process: libdwfl reads DEBUGINFOD_URLS once per process, so no earlier test may have used it.
  // The variables are set by the test; the symbolizer never changes the environment.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("DEBUGINFOD_URLS", fmt::format("http://127.0.0.1:{}", ntohs(server.sin_port)).c_str(), 1);
    setenv("DEBUGINFOD_CACHE_PATH", cache, 1);  // no answer remembered from an earlier run
    Symbolizer symbolizer("");
    const Frame library = symbolizer.symbolize(libstdcxx_function(), false);
    const Frame marker = symbolizer.symbolize(call_at_marker());
    int failures = 0;
    if (!symbolizer.has_libdw()) failures |= 1;
    if (library.function != "std::terminate()") failures |= 2;
    if (marker.line != line || marker.function != "symbolize_test::call_at_marker()") failures |= 4;
    _exit(failures);
  }

  bool contacted = false;
  bool finished = false;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!contacted && !finished && std::chrono::steady_clock::now() < deadline) {
    pollfd pending{listener, POLLIN, 0};
    contacted = poll(&pending, 1, 20) > 0;
    finished = waitpid(child, &status, WNOHANG) == child;
  }
  if (finished) {
    pollfd pending{listener, POLLIN, 0};
    contacted = contacted || poll(&pending, 1, 0) > 0;
  } else {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  close(listener);
  std::error_code ignored;
  std::filesystem::remove_all(cache, ignored);

  EXPECT_FALSE(contacted) << "the symbolizer connected to the DEBUGINFOD_URLS server";
  ASSERT_TRUE(finished) << "the symbolizer did not finish within 60 s";
  ASSERT_TRUE(WIFEXITED(status));
  const int failures = WEXITSTATUS(status);
  EXPECT_EQ(failures & 1, 0) << "libdw was not used";
  EXPECT_EQ(failures & 2, 0) << "libstdc++'s std::terminate was not named";
  EXPECT_EQ(failures & 4, 0) << "the marker call was not found at line " << line;
}

TEST(SymbolizeTest, ConcurrentCallsAgree) {
  TestLibrary library;
  ASSERT_TRUE(library.loaded()) << dlerror();
  std::vector<std::pair<uintptr_t, bool> > requests = {
      {call_at_marker(), true},      {libstdcxx_function(), false}, {0x10, true},
      {UINTPTR_MAX, false},          {call_inlined_inner(), true},  {call_inlined_middle(), true},
      {library.inlined_call(), true}};
  // Many distinct addresses, so that the threads compute (not only read the cache) at the same time.
  for (uintptr_t offset = 0; offset < 64; ++offset) {
    requests.emplace_back(library.function() + offset, offset % 2 == 0);
    requests.emplace_back(call_at_marker() - 32 + offset, offset % 2 == 1);
  }

  constexpr int kThreads = 4;
  Symbolizer symbolizer("");
  std::atomic<int> ready{0};
  std::vector<std::vector<std::string> > results(kThreads, std::vector<std::string>(requests.size()));
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&, thread] {
      // All start together, so that even the first symbolize(), which loads libdw, is contended.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      // Each thread begins at a different place in the list.
      for (size_t step = 0; step < requests.size(); ++step) {
        const size_t index = (step + thread * requests.size() / kThreads) % requests.size();
        // symbolize() and symbolize_inlined() in both orders, as each thread meets the request first.
        const auto [address, return_address] = requests[index];
        if ((index + thread) % 2 == 0) {
          results[thread][index] = describe(symbolizer.symbolize(address, return_address)) + "\n" +
                                   describe(symbolizer.symbolize_inlined(address, return_address));
        } else {
          const std::string inlined = describe(symbolizer.symbolize_inlined(address, return_address));
          results[thread][index] = describe(symbolizer.symbolize(address, return_address)) + "\n" + inlined;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  ASSERT_TRUE(symbolizer.has_libdw()) << symbolizer.libdw_status();
  EXPECT_NE(results[0][0].find("symbolize_test::call_at_marker()"), std::string::npos) << results[0][0];
  for (int thread = 1; thread < kThreads; ++thread) {
    for (size_t index = 0; index < requests.size(); ++index) {
      EXPECT_EQ(results[thread][index], results[0][index]) << "thread " << thread << ", request " << index;
    }
  }
}

}  // namespace

#endif  // SYMBOLIZE_TEST_LIBRARY
// SPDX-License-Identifier: MIT
