// Tests of the symbolizer (src/symbolize.h): file:line and function of a known call with libdw, exported
// names and modules without it, degraded answers, no debuginfod traffic, and concurrent use.
//
// This file is also built, with SYMBOLIZE_TEST_LIBRARY defined, as libsymbolize_test_library.so
// (tests/CMakeLists.txt): the shared library whose exported function the tests symbolize.
#ifdef SYMBOLIZE_TEST_LIBRARY

namespace blockrun_test {

// A body of some length, so that an address a few bytes into it is still inside it.
__attribute__((noinline, visibility("default"))) int exported_function(int count) {
  volatile int sum = 0;
  for (int i = 0; i < count; ++i) sum = sum + i * count;
  return sum;
}

}  // namespace blockrun_test

// C linkage: the test finds the C++ function through it without spelling its mangled name.
extern "C" __attribute__((visibility("default"))) void* symbolize_test_library_function() {
  return reinterpret_cast<void*>(&blockrun_test::exported_function);
}

#else

#include "symbolize.h"

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

}  // namespace symbolize_test

namespace {

using blockrun::Frame;
using blockrun::Symbolizer;
using symbolize_test::call_at_marker;

const char* const kSourceFile = CUDA_BLOCKRUN_SOURCE_DIR "/tests/unit/symbolize_test.cpp";
const char* const kLibraryFunction = "blockrun_test::exported_function(int)";

// The line of this file that holds the marker comment, found at run time so that edits above it need no
// test change; 0 when there is not exactly one. The marker is spelled in two pieces so this line lacks it.
int marker_line() {
  const std::string marker = std::string("// SYMBOLIZE_") + "MARKER";
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
      {call_at_marker(), true}, {libstdcxx_function(), false}, {0x10, true}, {UINTPTR_MAX, false}};
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
        results[thread][index] =
            describe(symbolizer.symbolize(requests[index].first, requests[index].second));
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
