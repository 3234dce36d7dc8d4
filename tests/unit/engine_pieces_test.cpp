// The engine's pieces alone, without an engine: what blocking cost and skipped (src/pieces/block_tally.h),
// which launches get their call site taken and how Python lines are kept and told
// (src/callsites/call_sites.h), and a launch, a call and the first error in the trace's terms
// (src/trace/trace_entries.h). One thread throughout: EntryPointCounts, whose point is threads, has its own
// file (entry_point_counts_test.cpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "callsites/call_sites.h"
#include "callsites/python_site_cache.h"
#include "callsites/python_sites.h"
#include "config/config.h"
#include "pieces/block_tally.h"
#include "pieces/told_once.h"
#include "report/views.h"
#include "trace/trace_entries.h"

namespace blockrun {
namespace {

// ---- BlockTally ----

BlockTiming timing(uint64_t wall_ns, int64_t gpu_ns = -1) {
  BlockTiming made;
  made.wall_ns = wall_ns;
  made.gpu_ns = gpu_ns;
  return made;
}

TEST(BlockTally, AKernelsBlockedLaunchesGoIntoItsOwnStats) {
  BlockTally tally;
  KernelInfo kernel;
  LaunchRecord record;
  record.kernel = &kernel;
  record.library_api = "cublasSgemm_v2";  // a kernel a library call launched: still the kernel's
  tally.note_blocked(record, timing(1000, 400));
  tally.note_blocked(record, timing(3000));  // no GPU time: counted in wall time only
  EXPECT_EQ(kernel.stats.blocked.load(), 2u);
  EXPECT_EQ(kernel.stats.wall_ns_total.load(), 4000u);
  EXPECT_EQ(kernel.stats.wall_ns_max.load(), 3000u);
  EXPECT_EQ(kernel.stats.gpu_timed.load(), 1u);
  EXPECT_EQ(kernel.stats.gpu_ns_total.load(), 400u);
  EXPECT_EQ(kernel.stats.gpu_ns_max.load(), 400u);
  const BlockTimes* times = kernel.stats.times.load();
  ASSERT_NE(times, nullptr);
  EXPECT_EQ(times->wall.count(), 2u);
  EXPECT_EQ(times->wall.max(), 3000u);
  const DurationHistogram* gpu = times->gpu.load();
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->count(), 1u);
  EXPECT_EQ(tally.blocked(), 2u);
  EXPECT_EQ(tally.blocking_ns(), 4000u);
  size_t units = 0;
  tally.for_each_unit([&](const std::string&, const BlockStats&) { ++units; });
  EXPECT_EQ(units, 0u) << "a kernel's launches are no library unit's";
}

TEST(BlockTally, WithoutAGpuTimeNoGpuDistributionIsMade) {
  BlockTally tally;
  GraphInfo graph;
  LaunchRecord record;
  record.graph = &graph;
  tally.note_blocked(record, timing(500));
  EXPECT_EQ(graph.stats.blocked.load(), 1u);
  EXPECT_EQ(graph.stats.wall_ns_total.load(), 500u);
  EXPECT_EQ(graph.stats.gpu_timed.load(), 0u);
  ASSERT_NE(graph.stats.times.load(), nullptr);
  EXPECT_EQ(graph.stats.times.load()->gpu.load(), nullptr);
}

// Library calls blocked as units are kept by name: two pointers to the same text are one unit.
TEST(BlockTally, LibraryUnitsAreKeptByName) {
  BlockTally tally;
  char same_name[] = "cublasSgemm_v2";
  LaunchRecord sgemm, sgemm_again, dgemm;
  sgemm.library_api = "cublasSgemm_v2";
  sgemm_again.library_api = same_name;
  dgemm.library_api = "cublasDgemm_v2";
  tally.note_blocked(sgemm, timing(100, 50));
  tally.note_blocked(sgemm_again, timing(300, 70));
  tally.note_blocked(dgemm, timing(20));
  std::vector<std::pair<std::string, uint64_t>> units;
  uint64_t sgemm_gpu = 0;
  tally.for_each_unit([&](const std::string& name, const BlockStats& stats) {
    units.emplace_back(name, stats.blocked.load());
    if (name == "cublasSgemm_v2") sgemm_gpu = stats.gpu_ns_total.load();
  });
  EXPECT_EQ(units,
            (std::vector<std::pair<std::string, uint64_t>>{{"cublasDgemm_v2", 1}, {"cublasSgemm_v2", 2}}));
  EXPECT_EQ(sgemm_gpu, 120u);
  EXPECT_EQ(tally.blocked(), 3u);
  EXPECT_EQ(tally.blocking_ns(), 420u);
}

// A unit the shim could not name (no kernel, graph or library call) still counts in the totals.
TEST(BlockTally, ALaunchOfNoKnownUnitCountsInTheTotalsOnly) {
  BlockTally tally;
  tally.note_blocked(LaunchRecord{}, timing(250));
  EXPECT_EQ(tally.blocked(), 1u);
  EXPECT_EQ(tally.blocking_ns(), 250u);
  size_t units = 0;
  tally.for_each_unit([&](const std::string&, const BlockStats&) { ++units; });
  EXPECT_EQ(units, 0u);
}

TEST(BlockTally, OnlyTheFirstCaptureSkipIsTold) {
  BlockTally tally;
  EXPECT_EQ(tally.capture_skips(), 0u);
  EXPECT_TRUE(tally.note_capture_skip());
  EXPECT_FALSE(tally.note_capture_skip());
  EXPECT_FALSE(tally.note_capture_skip());
  EXPECT_EQ(tally.capture_skips(), 3u);
}

TEST(BlockTally, ErrorRecordsStopAtTheBudget) {
  BlockTally tally;
  for (uint64_t i = 0; i < BlockTally::kMaxErrorRecords; ++i) ASSERT_TRUE(tally.take_error_record()) << i;
  EXPECT_FALSE(tally.take_error_record());
  EXPECT_FALSE(tally.take_error_record());
}

// ---- CallSites ----

Decision decision(Action action) {
  Decision made;
  made.action = action;
  return made;
}

Config config_with(Callsites callsites, bool log_launches = false, const std::string& libdw = "off") {
  Config config;
  config.callsites = callsites;
  config.log_launches = log_launches;
  config.libdw = libdw;
  return config;
}

PythonFrame python_frame(const char* file, int line, const char* function) {
  PythonFrame made;
  std::memset(&made, 0x5a, sizeof made);  // the bytes after each text's NUL are garbage, as captured
  made.line = line;
  std::snprintf(made.file, sizeof made.file, "%s", file);
  std::snprintf(made.function, sizeof made.function, "%s", function);
  return made;
}

// The frames the test's Python readers hand out (innermost first: a library's frame, then the program's),
// and how often each reader was asked.
PythonStack g_python;
int g_stack_walks = 0;
int g_python_reads = 0;
int g_python_site_reads = 0;

void set_python_frames() {
  g_python = PythonStack{};
  g_python.status = PythonStatus::Captured;
  g_python.frames[0] =
      python_frame("/usr/lib/python3.12/site-packages/torch/nn/functional.py", 2000, "linear");
  g_python.frames[1] = python_frame("/home/me/train.py", 42, "forward");
  g_python.count = 2;
  g_python.skipped_at = 2;
}

void walk_stack(CallStack* out) {
  ++g_stack_walks;
  out->native.depth = 0;
  out->python = g_python;
}
void read_python(PythonStack* out) {
  ++g_python_reads;
  *out = g_python;
}
void read_python_site(PythonSiteCache& cache, PythonStack* scratch, PythonLaunchSite* out) {
  ++g_python_site_reads;
  *scratch = g_python;
  *out = cache.keep(*scratch, nullptr);
}

class CallSitesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_python_frames();
    g_stack_walks = g_python_reads = g_python_site_reads = 0;
  }
};

TEST_F(CallSitesTest, AutoTakesTheStacksOfLoggedLaunchesOnly) {
  CallSites sites(config_with(Callsites::Auto));
  EXPECT_TRUE(sites.wants_stack(decision(Action::Log)));
  EXPECT_FALSE(sites.wants_stack(decision(Action::Run)));
  // A blocked launch's stack is taken only if its synchronize fails (the engine asks again then).
  EXPECT_FALSE(sites.wants_stack(decision(Action::Block)));
  CallSites logging(config_with(Callsites::Auto, true));
  EXPECT_TRUE(logging.wants_stack(decision(Action::Run)));
  EXPECT_TRUE(logging.wants_stack(decision(Action::Block)));
}

TEST_F(CallSitesTest, AllTakesEveryStackAndNoneNone) {
  CallSites all(config_with(Callsites::All));
  EXPECT_TRUE(all.wants_stack(decision(Action::Run)));
  EXPECT_TRUE(all.wants_stack(decision(Action::Block)));
  CallSites none(config_with(Callsites::None, true));
  EXPECT_FALSE(none.wants_stack(decision(Action::Log)));
  EXPECT_FALSE(none.wants_stack(decision(Action::Run))) << "not even with --log-launches";
}

TEST_F(CallSitesTest, NothingIsWalkedOrKeptBeforeStart) {
  CallSites sites(config_with(Callsites::All));
  EXPECT_FALSE(sites.walks());
  EXPECT_FALSE(sites.keeps_python(true));
  EXPECT_EQ(sites.python_sites(), nullptr);
  sites.start(walk_stack, read_python, nullptr, false, "");
  EXPECT_TRUE(sites.walks());
  CallStack stack;
  sites.take_stack(&stack);
  EXPECT_EQ(g_stack_walks, 1);
  EXPECT_NE(sites.python_sites(), nullptr);
}

// Without every launch keeping its line (no breadcrumbs, no trace), only launches into a capture keep theirs.
TEST_F(CallSitesTest, PythonLinesAreKeptForCapturesOrEveryLaunchAsAsked) {
  CallSites captures_only(config_with(Callsites::Auto));
  captures_only.start(walk_stack, read_python, nullptr, false, "");
  EXPECT_FALSE(captures_only.keeps_python(false));
  EXPECT_TRUE(captures_only.keeps_python(true));
  CallSites every(config_with(Callsites::Auto));
  every.start(walk_stack, read_python, nullptr, true, "");
  EXPECT_TRUE(every.keeps_python(false));
  EXPECT_TRUE(every.keeps_python(true));
  CallSites no_python(config_with(Callsites::Auto));
  no_python.start(walk_stack, nullptr, nullptr, true, "");
  EXPECT_TRUE(no_python.walks());
  EXPECT_FALSE(no_python.keeps_python(true)) << "no Python reader: nothing to keep";
  EXPECT_EQ(no_python.python_sites(), nullptr);
}

TEST_F(CallSitesTest, NoneTakesNothingItIsGiven) {
  CallSites none(config_with(Callsites::None));
  none.start(walk_stack, read_python, read_python_site, true, "");
  EXPECT_FALSE(none.walks());
  EXPECT_FALSE(none.keeps_python(true));
  EXPECT_EQ(none.python_sites(), nullptr);
  EXPECT_EQ(none.python_line(1), nullptr);
  uint32_t site = 77, innermost = 78;
  none.read_python_site(&site, &innermost);
  EXPECT_EQ(site, 77u) << "left as it was";
  EXPECT_EQ(innermost, 78u);
  EXPECT_EQ(g_python_reads, 0);
  EXPECT_EQ(g_stack_walks, 0);
}

// The program's own line and the library's innermost frame, interned, and told back from the numbers alone.
TEST_F(CallSitesTest, AKeptPythonLineIsToldFromItsNumbers) {
  CallSites sites(config_with(Callsites::Auto));
  sites.start(walk_stack, read_python, nullptr, true, "");
  LaunchRecord record;
  PythonStack scratch;
  sites.keep_python_site(record, scratch);
  EXPECT_EQ(g_python_reads, 1);
  EXPECT_EQ(record.python_status, PythonStatus::Captured);
  ASSERT_NE(record.python_site, 0u);
  ASSERT_NE(record.python_innermost, 0u);
  EXPECT_NE(record.python_site, record.python_innermost);
  PythonCallSite told = sites.python_call_site_of(record, nullptr);
  ASSERT_NE(told.user, nullptr);
  EXPECT_STREQ(told.user->file, "/home/me/train.py");
  EXPECT_EQ(told.user->line, 42);
  ASSERT_NE(told.innermost, nullptr);
  EXPECT_STREQ(told.innermost->function, "linear");
  EXPECT_EQ(sites.python_line(record.python_site), told.user);
  EXPECT_EQ(sites.python_line(0), nullptr);
  // intern() gives the same numbers for the same frames.
  uint32_t site = 0, innermost = 0;
  sites.intern(g_python, &site, &innermost);
  EXPECT_EQ(site, record.python_site);
  EXPECT_EQ(innermost, record.python_innermost);
}

// A launch whose stack was walked keeps the line from that stack's frames: Python is not read again.
TEST_F(CallSitesTest, ALaunchWithItsStackKeepsTheLineOfThoseFrames) {
  CallSites sites(config_with(Callsites::All));
  sites.start(walk_stack, read_python, read_python_site, true, "");
  LaunchRecord record;
  record.has_stack = true;
  CallStack stack;
  sites.take_stack(&stack);
  sites.keep_python_site(record, stack.python);
  EXPECT_EQ(g_python_reads, 0);
  EXPECT_EQ(g_python_site_reads, 0);
  const PythonFrame* user = sites.python_line(record.python_site);
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(user->line, 42);
  // Told from the stack itself where there is one: its frames, not the table's copies.
  PythonCallSite told = sites.python_call_site_of(record, &stack);
  EXPECT_EQ(told.user, &stack.python.frames[1]);
  EXPECT_EQ(told.innermost, &stack.python.frames[0]);
}

// With a Python site reader the line comes through it (and its cache), into the table CallSites tells from.
TEST_F(CallSitesTest, ALaunchWithoutItsStackKeepsItsLineThroughTheSiteReader) {
  CallSites sites(config_with(Callsites::Auto));
  sites.start(walk_stack, read_python, read_python_site, true, "");
  LaunchRecord record;
  PythonStack scratch;
  sites.keep_python_site(record, scratch);
  EXPECT_EQ(g_python_site_reads, 1);
  EXPECT_EQ(g_python_reads, 0);
  EXPECT_EQ(record.python_status, PythonStatus::Captured);
  const PythonFrame* user = sites.python_line(record.python_site);
  ASSERT_NE(user, nullptr);
  EXPECT_STREQ(user->file, "/home/me/train.py");
  ASSERT_NE(sites.python_line(record.python_innermost), nullptr);
  EXPECT_EQ(sites.python_line(record.python_innermost)->line, 2000);
}

TEST_F(CallSitesTest, ReadingTheLineNowInternsIt) {
  CallSites sites(config_with(Callsites::Auto));
  sites.start(walk_stack, read_python, nullptr, false, "");
  uint32_t site = 0, innermost = 0;
  sites.read_python_site(&site, &innermost);
  EXPECT_EQ(g_python_reads, 1);
  ASSERT_NE(sites.python_line(site), nullptr);
  EXPECT_EQ(sites.python_line(site)->line, 42);
  EXPECT_NE(innermost, 0u);
}

// Where nothing was kept the report tells no Python line.
TEST_F(CallSitesTest, ARecordWithoutAKeptLineTellsNone) {
  CallSites sites(config_with(Callsites::Auto));
  sites.start(walk_stack, read_python, nullptr, true, "");
  PythonCallSite told = sites.python_call_site_of(LaunchRecord{}, nullptr);
  EXPECT_EQ(told.user, nullptr);
  EXPECT_EQ(told.innermost, nullptr);
}

int a_function_of_this_program() {
  return 7;
}

uintptr_t address_in_this_program() {
  return reinterpret_cast<uintptr_t>(&a_function_of_this_program) + 1;
}

TEST_F(CallSitesTest, WithLibdwOffNothingIsMissing) {
  CallSites sites(config_with(Callsites::Auto, false, "off"));
  Site site = sites.site_of(address_in_this_program(), nullptr, nullptr, false);  // loads the symbolizer
  EXPECT_FALSE(site.frames.empty());
  EXPECT_EQ(sites.missing_libdw_once(true), "");
  EXPECT_EQ(sites.missing_libdw_once(true), "");
}

// A libdw that cannot be loaded is noted once, and only once the symbolizer tried it and a call site was told
// without file:line.
TEST_F(CallSitesTest, AMissingLibdwIsNotedOnce) {
  const std::string path = "/nonexistent/libdw.so.1";
  CallSites sites(config_with(Callsites::Auto, false, path));
  EXPECT_EQ(sites.missing_libdw_once(true), "") << "not tried yet";
  sites.site_of(address_in_this_program(), nullptr, nullptr, false);
  EXPECT_EQ(sites.missing_libdw_once(false), "") << "every call site had its line";
  std::string problem = sites.missing_libdw_once(true);
  EXPECT_NE(problem.find(path + " not found"), std::string::npos) << problem;
  EXPECT_EQ(sites.missing_libdw_once(true), "");
}

// ---- trace entries ----

using trace::EntryOutcome;
using trace::TraceEntry;

constexpr ErrorCode kOk{};
constexpr ErrorCode kIllegalAddress{Layer::Runtime, 700};  // asynchronous: an earlier kernel's
constexpr ErrorCode kInvalidValue{Layer::Runtime, 1};      // the call's own

class TraceEntriesTest : public ::testing::Test {
 protected:
  TraceEntriesTest() {
    kernel.name.base = "stencil";
    launch.record.sequence = 38;
    launch.record.kernel_ordinal = 13;
    launch.record.kernel = &kernel;
    launch.record.api = "cudaLaunchKernel";
    launch.record.stream.handle = reinterpret_cast<const void*>(0xa000);
    launch.record.grid.x = 4;
    launch.record.block.x = 256;
    launch.record.shared_memory = 128;
    launch.record.python_site = 5;
    launch.began_ns = 1000;
    launch.wait_began_ns = 1500;
    launch.ended_ns = 2000;
    launch.timing.gpu_ns = 300;
  }
  KernelInfo kernel;
  Launch launch;
};

TEST_F(TraceEntriesTest, ALaunchSliceCarriesItsRecord) {
  TraceEntry entry = trace::launch_entry(launch, kOk, BlockOutcome::NotBlocked, kOk);
  EXPECT_EQ(entry.kind, trace::EntryKind::Launch);
  EXPECT_EQ(entry.outcome, EntryOutcome::Launched);
  EXPECT_EQ(entry.began_ns, 1000u);
  EXPECT_EQ(entry.ended_ns, 2000u);
  EXPECT_EQ(entry.wait_began_ns, 0u) << "not blocked: no wait";
  EXPECT_EQ(entry.gpu_ns, -1);
  EXPECT_EQ(entry.sequence, 38u);
  EXPECT_EQ(entry.kernel_ordinal, 13u);
  EXPECT_EQ(entry.kernel, &kernel);
  EXPECT_STREQ(entry.api, "cudaLaunchKernel");
  EXPECT_EQ(entry.stream, launch.record.stream);
  EXPECT_EQ(entry.grid.x, 4u);
  EXPECT_EQ(entry.block.x, 256u);
  EXPECT_EQ(entry.shared_memory, 128u);
  EXPECT_EQ(entry.python_site, 5u);
  EXPECT_TRUE(entry.result.ok());
}

TEST_F(TraceEntriesTest, ALaunchIntoACaptureIsCaptured) {
  launch.record.in_capture = true;
  EXPECT_EQ(trace::launch_entry(launch, kOk, BlockOutcome::NotBlocked, kOk).outcome, EntryOutcome::Captured);
}

TEST_F(TraceEntriesTest, ABlockedLaunchCarriesItsWaitAndItsSynchronizesResult) {
  TraceEntry blocked = trace::launch_entry(launch, kOk, BlockOutcome::Synchronized, kOk);
  EXPECT_EQ(blocked.outcome, EntryOutcome::Blocked);
  EXPECT_EQ(blocked.wait_began_ns, 1500u);
  EXPECT_EQ(blocked.gpu_ns, 300);
  TraceEntry failed = trace::launch_entry(launch, kOk, BlockOutcome::Synchronized, kIllegalAddress);
  EXPECT_EQ(failed.outcome, EntryOutcome::BlockedFailed);
  EXPECT_EQ(failed.result.code, 700);
}

TEST_F(TraceEntriesTest, ASkippedBlockSaysWhy) {
  EXPECT_EQ(trace::launch_entry(launch, kOk, BlockOutcome::SkippedCapture, kOk).outcome,
            EntryOutcome::CaptureSkipped);
  EXPECT_EQ(trace::launch_entry(launch, kOk, BlockOutcome::SkippedUnknown, kOk).outcome,
            EntryOutcome::NotBlockedUnknown);
}

// A launch that returned an earlier kernel's error was refused; one that returned its own failed. Either way
// nothing ran, so no blocking wait is shown, whatever the outcome says.
TEST_F(TraceEntriesTest, AFailedLaunchIsRefusedOrFailedByItsCode) {
  TraceEntry refused = trace::launch_entry(launch, kIllegalAddress, BlockOutcome::NotBlocked, kOk);
  EXPECT_EQ(refused.outcome, EntryOutcome::Refused);
  EXPECT_EQ(refused.result.code, 700);
  TraceEntry failed = trace::launch_entry(launch, kInvalidValue, BlockOutcome::Synchronized, kOk);
  EXPECT_EQ(failed.outcome, EntryOutcome::Failed);
  EXPECT_EQ(failed.result.code, 1);
  EXPECT_EQ(failed.wait_began_ns, 0u);
  EXPECT_EQ(failed.gpu_ns, -1);
}

TEST(TraceEntries, ACallSliceIsItsSpan) {
  CallSpan span;
  span.began_ns = 10;
  span.returned_ns = 90;
  StreamId stream;
  stream.handle = reinterpret_cast<const void*>(0xb000);
  TraceEntry entry = trace::call_entry(trace::EntryKind::Synchronize, "cudaStreamSynchronize", span, stream);
  EXPECT_EQ(entry.kind, trace::EntryKind::Synchronize);
  EXPECT_STREQ(entry.api, "cudaStreamSynchronize");
  EXPECT_EQ(entry.began_ns, 10u);
  EXPECT_EQ(entry.ended_ns, 90u);
  EXPECT_EQ(entry.stream, stream);
  EXPECT_EQ(entry.sequence, 0u);
}

class ErrorFactsTest : public ::testing::Test {
 protected:
  ErrorFactsTest() {
    kernel.name.base = "stencil";
    culprit.sequence = 38;
    culprit.kernel_ordinal = 13;
    culprit.kernel = &kernel;
    finding.api = "cudaDeviceSynchronize";
    finding.text.name = "cudaErrorIllegalAddress";
    finding.how = "its blocking synchronize failed";
    finding.thread = 3;
  }
  std::unique_ptr<LaunchView> view_of(const LaunchRecord& record) {
    auto view = std::make_unique<LaunchView>();
    view->record = &record;
    return view;
  }
  KernelInfo kernel;
  LaunchRecord culprit;
  Finding finding;
  trace::SurfacingCall call;
};

TEST_F(ErrorFactsTest, AnExactCulpritIsNamedByItsKernelLaunch) {
  finding.found_by = FoundBy::Blocking;
  finding.exact = true;
  finding.culprit = view_of(culprit);
  call.began_ns = 100;
  call.returned_ns = 200;
  call.has_slice = true;
  trace::ErrorFacts facts = trace::error_facts(finding, call);
  EXPECT_STREQ(facts.certainty, "exact");
  EXPECT_STREQ(facts.method, "blocking");
  EXPECT_STREQ(facts.culprit, "stencil#13, launch #38");
  EXPECT_EQ(facts.culprit_sequence, 38u);
  EXPECT_STREQ(facts.api, "cudaDeviceSynchronize");
  EXPECT_STREQ(facts.error, "cudaErrorIllegalAddress");
  EXPECT_STREQ(facts.how, "its blocking synchronize failed");
  EXPECT_EQ(facts.thread, 3u);
  EXPECT_EQ(facts.began_ns, 100u);
  EXPECT_EQ(facts.returned_ns, 200u);
  EXPECT_TRUE(facts.call_has_slice);
  EXPECT_EQ(facts.other_count, 0u);
  EXPECT_STREQ(facts.failed_node, "");
}

TEST_F(ErrorFactsTest, ExactNeedsACulpritAndACulpritNeedsExact) {
  finding.exact = true;
  EXPECT_STREQ(trace::error_facts(finding, call).certainty, "suspects") << "exact without a culprit";
  finding.exact = false;
  finding.culprit = view_of(culprit);
  trace::ErrorFacts facts = trace::error_facts(finding, call);
  EXPECT_STREQ(facts.certainty, "suspects");
  EXPECT_STREQ(facts.culprit, "stencil#13, launch #38") << "named all the same";
}

// A launch with no per-kernel number (past the kernel table) or of no kernel is named as launch_name does.
TEST_F(ErrorFactsTest, ACulpritWithoutAKernelNumberIsNamedByItsLaunch) {
  culprit.kernel_ordinal = 0;
  finding.culprit = view_of(culprit);
  EXPECT_STREQ(trace::error_facts(finding, call).culprit, "stencil (launch #38)");
  LaunchRecord unit;
  unit.sequence = 7;
  unit.library_api = "cublasSgemm_v2";
  finding.culprit = view_of(unit);
  EXPECT_STREQ(trace::error_facts(finding, call).culprit, "cublasSgemm_v2 (launch #7)");
}

TEST_F(ErrorFactsTest, OthersAreCappedAndAreCandidatesOnlyFromBreadcrumbs) {
  std::vector<LaunchRecord> records(trace::ErrorFacts::kOthers + 3);
  for (size_t i = 0; i < records.size(); ++i) {
    records[i].sequence = 100 + i;
    LaunchView view;
    view.record = &records[i];
    finding.suspects.push_back(std::move(view));
  }
  finding.found_by = FoundBy::Host;
  trace::ErrorFacts suspects = trace::error_facts(finding, call);
  ASSERT_EQ(suspects.other_count, trace::ErrorFacts::kOthers);
  for (size_t i = 0; i < trace::ErrorFacts::kOthers; ++i) EXPECT_EQ(suspects.others[i], 100 + i);
  EXPECT_FALSE(suspects.others_are_candidates);
  EXPECT_STREQ(suspects.method, "host");
  finding.found_by = FoundBy::Breadcrumbs;
  trace::ErrorFacts candidates = trace::error_facts(finding, call);
  EXPECT_TRUE(candidates.others_are_candidates);
  EXPECT_STREQ(candidates.method, "breadcrumbs");
}

TEST_F(ErrorFactsTest, ARefusedLaunchIsMarked) {
  LaunchRecord refused;
  refused.sequence = 41;
  finding.refused = view_of(refused);
  EXPECT_EQ(trace::error_facts(finding, call).refused_sequence, 41u);
}

// Texts longer than the facts' buffers are cut, never overrun.
TEST_F(ErrorFactsTest, LongTextsAreCutToTheirBuffers) {
  finding.how = std::string(1000, 'h');
  trace::ErrorFacts facts = trace::error_facts(finding, call);
  EXPECT_EQ(std::strlen(facts.how), sizeof facts.how - 1);
}

// A graph replay whose breadcrumbs left exactly one node unfinished names it (1-based, by its kernel or its
// library call); with more than one, or none known, it names none.
TEST_F(ErrorFactsTest, AGraphReplaysOneUnfinishedNodeIsNamed) {
  KernelInfo reduce;
  reduce.name.base = "reduce";
  CaptureRecord capture;
  capture.launches.resize(3);
  capture.launches[0].kernel = &kernel;
  capture.launches[1].kernel = &reduce;
  capture.launches[2].library_api = "cublasSgemm_v2";
  GraphInfo graph;
  LaunchRecord replay;
  replay.sequence = 50;
  replay.graph = &graph;
  finding.culprit = view_of(replay);
  finding.culprit->graph = std::make_unique<GraphCaptureView>();
  GraphCaptureView& view = *finding.culprit->graph;
  view.capture = &capture;
  view.nodes.known = true;
  view.nodes.unfinished = {1};
  EXPECT_STREQ(trace::error_facts(finding, call).failed_node, "node 2: reduce");
  view.nodes.unfinished = {2};
  EXPECT_STREQ(trace::error_facts(finding, call).failed_node, "node 3: cublasSgemm_v2");
  view.nodes.unfinished = {1, 2};
  EXPECT_STREQ(trace::error_facts(finding, call).failed_node, "");
  view.nodes.unfinished = {1};
  view.nodes.known = false;
  EXPECT_STREQ(trace::error_facts(finding, call).failed_node, "");
}

// The shim's troubles: each distinct text is told the first time only, however often it comes back.
TEST(ToldOnce, EachDistinctTextIsToldTheFirstTimeOnly) {
  ToldOnce told;
  EXPECT_TRUE(told.first_time("cuLaunchKernelEx missing"));
  EXPECT_FALSE(told.first_time("cuLaunchKernelEx missing"));
  EXPECT_TRUE(told.first_time("cuLogsRegisterCallback missing"));
  EXPECT_FALSE(told.first_time("cuLaunchKernelEx missing"));
  EXPECT_FALSE(told.first_time("cuLogsRegisterCallback missing"));
  EXPECT_TRUE(told.first_time(""));
  EXPECT_FALSE(told.first_time(""));
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
