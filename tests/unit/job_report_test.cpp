// `cuda-blockrun report`: the reports of a job's processes merged into one verdict
// (src/readers/job_report.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "job_report.h"
#include "cuda/names.h"
#include "report_json.h"

namespace blockrun {
namespace {

std::string start(int rank, int pid, const char* host = "gpu7", const char* run = nullptr) {
  return "{\"type\":\"start\",\"time\":100,\"host\":\"" + std::string(host) +
         "\",\"pid\":" + std::to_string(pid) + ",\"rank\":" + std::to_string(rank) +
         (run ? ",\"run\":\"" + std::string(run) + "\"" : std::string(",\"run\":null")) +
         ",\"process\":\"python3\"}\n";
}

// A first error at `time` pinned to `kernel` (launch #seq), or (collective set) to an NCCL kernel.
std::string first_error(double time, const char* kernel, int seq, const char* collective = nullptr,
                        const char* error = "cudaErrorIllegalAddress") {
  return "{\"type\":\"first_error\",\"time\":" + std::to_string(time) + ",\"error\":\"" + error +
         "\",\"message\":\"m\",\"surfaced_api\":\"cudaStreamSynchronize\",\"how\":\"surfaced at a later "
         "call\",\"certainty\":\"exact\",\"method\":\"breadcrumbs\",\"launch\":{\"seq\":" +
         std::to_string(seq) + ",\"kernel\":\"" + kernel + "\",\"kernel_base\":\"" + kernel +
         "\",\"kernel_launch\":3,\"stream\":\"0x0\",\"grid\":[64,1,1],\"block\":[128,1,1],\"shared_memory\":"
         "0,\"collective\":" +
         (collective ? "\"" + std::string(collective) + "\"" : std::string("null")) +
         ",\"callsite\":{\"function\":\"f\",\"file\":\"/src/"
         "model.cu\",\"line\":17},\"python_callsite\":{\"file\":"
         "\"train.py\",\"line\":42,\"function\":\"forward\"}},\"suspects\":[],\"pin_rule\":null}\n";
}

std::string fatal(double time, const char* signal, bool sent) {
  return "{\"type\":\"fatal_signal\",\"time\":" + std::to_string(time) + ",\"signal\":\"" + signal +
         "\",\"number\":6,\"sent\":" + (sent ? "true" : "false") + ",\"handed_to\":\"default action\"}\n";
}

const std::string kSummary = "{\"type\":\"summary\",\"time\":300,\"launches\":1200}\n";

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

TEST(JobReport, TheFirstCudaErrorWinsAndTheOthersFollowInOrder) {
  std::vector<std::pair<std::string, std::string>> reports = {
      // rank 0: stuck in the all-reduce, then its NCCL kernel fails (a peer died), 2 s after rank 1's fault.
      {"r.0.jsonl", start(0, 10) + first_error(1002.5, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 900,
                                               "AllReduce", "cudaErrorLaunchFailure")},
      // rank 1: the culprit.
      {"r.1.jsonl", start(1, 11) + first_error(1000.25, "lookup", 38) + kSummary},
      // rank 2: killed by a watchdog's abort() before rank 0's error, but a reaction all the same.
      {"r.2.jsonl", start(2, 12) + fatal(1001.0, "SIGABRT", true)},
      // rank 3: ran to the end; rank 4: its report stops (SIGKILL).
      {"r.3.jsonl", start(3, 13) + kSummary},
      {"r.4.jsonl", start(4, 14) + "{\"type\":\"first_er"},
  };
  std::vector<ProcessOutcome> job = read_job(reports);
  ASSERT_EQ(job.size(), 5u);
  EXPECT_EQ(first_failure(job), 1);
  EXPECT_EQ(job[0].kind(), ProcessOutcome::Kind::Collective);
  EXPECT_EQ(job[0].collective(), "AllReduce");
  EXPECT_EQ(job[2].kind(), ProcessOutcome::Kind::Killed);
  EXPECT_EQ(job[3].kind(), ProcessOutcome::Kind::Clean);
  EXPECT_EQ(job[4].kind(), ProcessOutcome::Kind::CutShort);
  EXPECT_EQ(job[4].unreadable, 1u);
  EXPECT_EQ(
      joined(describe_job(job)),
      "5 processes (5 report files) on gpu7\n"
      "first to fail: rank 1 (pid 11 on gpu7, python3), at 1970-01-01 00:16:40.250000 UTC\n"
      "  kernel lookup<<<(64,1,1), (128,1,1), 0, 0x0>>>, launch #38 (lookup#3)\n"
      "  error: cudaErrorIllegalAddress (m), returned by cudaStreamSynchronize\n"
      "  launched at /src/model.cu:17 in f\n"
      "  python: train.py:42 in forward\n"
      "  found by breadcrumbs: the first launch on its stream that did not complete; the error surfaced at "
      "a later call\n"
      "after it:\n"
      "  rank 2 (pid 12 on gpu7, python3): +0.750 s: fatal signal SIGABRT sent to it (a watchdog's abort(), "
      "the launcher, a kill), no CUDA error seen\n"
      "  rank 0 (pid 10 on gpu7, python3): +2.250 s: cudaErrorLaunchFailure returned by "
      "cudaStreamSynchronize, in kernel ncclDevKernel_AllReduce_Sum_f32_RING_LL (NCCL AllReduce), launch "
      "#900\n"
      "without a failure of their own:\n"
      "  rank 3 (pid 13 on gpu7, python3): exited without a CUDA error (1200 launches)\n"
      "  rank 4 (pid 14 on gpu7, python3): no end record: the process ended without the shim writing its end "
      "(killed by SIGKILL or the out-of-memory killer, an exit that skipped the shim's exit code) or is "
      "still "
      "running; how it ended is unknown\n");
}

TEST(JobReport, AnErrorInACollectiveOrASignalSentIsAReactionEvenWhenEarlier) {
  // Clocks of several hosts differ, and a peer can see the collective fail before the culprit's own error
  // surfaces: the process's own failure is named first all the same.
  std::vector<ProcessOutcome> job = read_job({
      {"a", start(0, 10, "gpu1") + first_error(99.0, "ncclDevKernel_AllGather_RING_LL", 5, "AllGather")},
      {"b", start(1, 11, "gpu2") + fatal(98.0, "SIGABRT", true)},
      {"c", start(2, 12, "gpu3") + first_error(100.0, "lookup", 7)},
  });
  EXPECT_EQ(first_failure(job), 2);
  std::string text = joined(describe_job(job));
  EXPECT_NE(text.find("after it:\n  rank 1 (pid 11 on gpu2, python3): -2.000 s: fatal signal SIGABRT"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  rank 0 (pid 10 on gpu1, python3): -1.000 s: cudaErrorIllegalAddress"),
            std::string::npos)
      << text;
  // Without a failure of a process's own, the collective error comes before the signal.
  job.pop_back();
  EXPECT_EQ(first_failure(job), 0);
}

TEST(JobReport, AFaultOfTheProgramsOwnCountsAsAFailureByTime) {
  std::vector<ProcessOutcome> job = read_job({
      {"a", start(0, 10) + first_error(50.0, "stencil", 5)},
      {"b", start(1, 11) + fatal(40.0, "SIGSEGV", false)},
  });
  EXPECT_EQ(first_failure(job), 1);
  EXPECT_EQ(job[1].kind(), ProcessOutcome::Kind::Fault);
  EXPECT_NE(joined(describe_job(job))
                .find("first to fail: rank 1 (pid 11 on gpu7, python3), at 1970-01-01 "
                      "00:00:40.000000 UTC\n  fatal signal SIGSEGV (a fault in the program)"),
            std::string::npos)
      << joined(describe_job(job));
}

// A signal sent to a rank whose breadcrumbs show launches in flight: "stuck in" a collective only where its
// own breadcrumb was not written (`unfinished`); a record from before that key counts as unfinished.
TEST(JobReport, WhatWasInFlightAtASignalIsSaidAsFarAsItIsKnown) {
  auto killed = [](const std::string& in_flight) {
    std::string record = fatal(50.0, "SIGABRT", true);
    record.insert(record.rfind('}'), ",\"in_flight\":[" + in_flight + "]");
    std::vector<ProcessOutcome> job = read_job({{"a", start(0, 10) + record}});
    return joined(describe_job(job));
  };
  const std::string fill = R"j({"seq":1,"kernel":"fill(float*)","collective":null,"stream":"0x0")j";
  const std::string reduce =
      R"j({"seq":3,"kernel":"ncclDevKernel_AllReduce(...)","collective":"AllReduce","stream":"0x5")j";
  std::string text = killed(fill + R"j(,"unfinished":false},)j" + reduce + R"j(,"unfinished":true})j");
  EXPECT_NE(text.find("; stuck in NCCL AllReduce (launch #3 had not completed)\n"), std::string::npos)
      << text;
  text = killed(fill + R"j(,"unfinished":false},)j" + reduce + R"j(,"unfinished":false})j");
  EXPECT_NE(text.find("; maybe in NCCL AllReduce (launch #3 not known to have completed)\n"),
            std::string::npos)
      << text;
  text = killed(fill + R"j(,"unfinished":false})j");
  EXPECT_NE(text.find("; not known to have completed: kernel fill(float*), launch #1\n"), std::string::npos)
      << text;
  text = killed(fill + "}");  // written before `unfinished` was
  EXPECT_NE(text.find("; not completed: kernel fill(float*), launch #1\n"), std::string::npos) << text;
}

TEST(JobReport, NoFailureIsSaid) {
  std::vector<ProcessOutcome> job =
      read_job({{"a", start(0, 10) + kSummary}, {"b", start(1, 11) + kSummary}});
  EXPECT_EQ(first_failure(job), -1);
  EXPECT_EQ(joined(describe_job(job)),
            "2 processes (2 report files) on gpu7\n"
            "no process failed\n"
            "without a failure of their own:\n"
            "  rank 0 (pid 10 on gpu7, python3): exited without a CUDA error (1200 launches)\n"
            "  rank 1 (pid 11 on gpu7, python3): exited without a CUDA error (1200 launches)\n");
}

TEST(JobReport, AFileSeveralProcessesWroteIsSplitAndSaidSo) {
  std::vector<ProcessOutcome> job = read_job(
      {{"shared.jsonl", start(0, 10) + kSummary + start(0, 20, "gpu8") + first_error(7.0, "fill", 2)}});
  ASSERT_EQ(job.size(), 2u);
  EXPECT_EQ(job[1].host, "gpu8");
  EXPECT_EQ(first_failure(job), 1);
  std::string text = joined(describe_job(job));
  EXPECT_NE(text.find("2 processes (1 report file) on gpu7, gpu8\n"), std::string::npos) << text;
  EXPECT_NE(text.find("note: several processes wrote shared.jsonl; give each its own file with %p or %r"),
            std::string::npos)
      << text;
}

TEST(JobReport, InAFileSeveralProcessesWroteAtOnceEachRecordGoesToItsPid) {
  // Two processes append to one file at the same time: pid 20 starts after pid 10, then pid 10 fails, pid 20
  // ends cleanly, and pid 10's summary comes last.
  auto with_pid = [](std::string record, int pid) {
    return record.insert(record.find(",\"time\""), ",\"pid\":" + std::to_string(pid));
  };
  std::vector<ProcessOutcome> job =
      read_job({{"shared.jsonl", start(0, 10) + start(1, 20) + with_pid(first_error(7.0, "fill", 2), 10) +
                                     with_pid(kSummary, 20) + with_pid(kSummary, 10)}});
  ASSERT_EQ(job.size(), 2u);
  EXPECT_EQ(job[0].pid, 10);
  EXPECT_TRUE(job[0].first_error);
  EXPECT_TRUE(job[0].summary);
  EXPECT_EQ(job[1].pid, 20);
  EXPECT_FALSE(job[1].first_error);
  EXPECT_TRUE(job[1].summary);
  EXPECT_EQ(first_failure(job), 0);
}

TEST(JobReport, JsonGivesTheOrderAndEveryRecord) {
  std::vector<ProcessOutcome> job = read_job({
      {"r.0.jsonl", start(0, 10) + kSummary},
      {"r.1.jsonl", start(1, 11) + first_error(20.5, "lookup", 38)},
  });
  std::optional<Json> parsed = parse_json(job_json(job));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(string_member(*parsed, "type"), "job");
  EXPECT_EQ(number_member(*parsed, "first_failure"), 1);
  const Json* order = member(*parsed, "order");
  ASSERT_TRUE(order && order->size() == 2);
  EXPECT_EQ(number_member((*order)[0], "rank"), 1);
  EXPECT_EQ(string_member((*order)[0], "outcome"), "cuda_error");
  EXPECT_EQ(number_member((*order)[0], "after_first_s", -1), 0);
  EXPECT_EQ(string_member(*member(*member((*order)[0], "first_error"), "launch"), "kernel"), "lookup");
  EXPECT_EQ(string_member((*order)[1], "outcome"), "clean");
  EXPECT_TRUE(member((*order)[1], "time")->is_null());
}

// Issue 19: a report path used again appended the new run to the old one, and the old run's failure was
// called the first.
TEST(JobReport, OfAFileUsedAgainOnlyItsLastRunIsRead) {
  std::vector<std::pair<std::string, std::string>> reports = {
      {"crash.jsonl", start(0, 10, "gpu7", "run-a") + first_error(1000, "lookup", 38) + kSummary +
                          start(0, 20, "gpu7", "run-b") + kSummary + start(1, 21, "gpu7", "run-b") +
                          kSummary},
  };
  std::vector<ProcessOutcome> job = read_job(reports);
  ASSERT_EQ(job.size(), 2u);
  EXPECT_EQ(job[0].pid, 20);
  EXPECT_EQ(job[1].pid, 21);
  EXPECT_EQ(job[0].earlier_runs, 1u);
  EXPECT_EQ(first_failure(job), -1);
  EXPECT_EQ(job_outcome(job), JobOutcome::Clean);
  std::string text = joined(describe_job(job));
  EXPECT_NE(text.find("note: crash.jsonl also holds 1 process of earlier runs, left out (the report path was "
                      "used again)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("note: crash.jsonl also holds", text.find("note: crash.jsonl also holds") + 1),
            std::string::npos)
      << text;
  // Processes of one run that share a file are all read; reports without run ids are read as one run.
  reports = {{"job.jsonl", start(0, 10, "gpu7", "run-b") + kSummary + start(1, 11, "gpu7", "run-b") +
                               first_error(1000, "lookup", 38)},
             {"old.jsonl", start(0, 30) + kSummary + start(1, 31) + kSummary}};
  job = read_job(reports);
  ASSERT_EQ(job.size(), 4u);
  EXPECT_EQ(job[0].earlier_runs + job[3].earlier_runs, 0u);
  EXPECT_EQ(job_outcome(job), JobOutcome::Failed);
}

TEST(JobReport, TheOutcomeIsFailedThenCutShortThenClean) {
  std::vector<std::pair<std::string, std::string>> reports = {{"r.0.jsonl", start(0, 10) + kSummary}};
  EXPECT_EQ(job_outcome(read_job(reports)), JobOutcome::Clean);
  reports.push_back({"r.1.jsonl", start(1, 11)});  // no end record: how it ended is unknown
  EXPECT_EQ(job_outcome(read_job(reports)), JobOutcome::CutShort);
  reports.push_back({"r.2.jsonl", start(2, 12) + fatal(1001.0, "SIGABRT", true)});
  EXPECT_EQ(job_outcome(read_job(reports)), JobOutcome::Failed);
}

// Issue 40, N4: the verdict reads launch records without keeping them, and still counts a cut one (and one
// nested past the parser's limit) as unreadable, as parse_json would.
TEST(JobReport, LaunchRecordsAreCheckedNotKept) {
  const std::string launch = "{\"type\":\"launch\",\"time\":1,\"pid\":10,\"launch\":{\"seq\":1}}\n";
  const std::string deep =
      "{\"type\":\"launch\",\"x\":" + std::string(70, '[') + std::string(70, ']') + "}\n";
  const std::string cut = "{\"type\":\"launch\",\"time\":1,\"pi\n";
  std::string report = start(0, 10) + launch + launch + deep + cut + kSummary;
  std::vector<ProcessOutcome> job = read_job({{"r.0.jsonl", report}});
  ASSERT_EQ(job.size(), 1u);
  EXPECT_TRUE(job[0].launches.empty());
  EXPECT_FALSE(job[0].launches_kept);
  EXPECT_EQ(job[0].unreadable, 2u);
  EXPECT_TRUE(job[0].summary.has_value());
  job = read_job({{"r.0.jsonl", report}}, true);
  EXPECT_EQ(job[0].launches.size(), 2u);
  EXPECT_EQ(job[0].unreadable, 2u);
  EXPECT_TRUE(valid_json("{\"a\":[1,2,{\"b\":null}]}"));
  EXPECT_FALSE(valid_json("{\"a\":1} x"));
  EXPECT_FALSE(valid_json("\xEF\xBB\xBF{}"));
  EXPECT_TRUE(valid_json(std::string(64, '[') + std::string(64, ']')));
  EXPECT_EQ(valid_json(std::string(66, '[') + "1" + std::string(66, ']')),
            parse_json(std::string(66, '[') + "1" + std::string(66, ']')).has_value());
}

// A report read again for a trace: each process of a shared file gets its own launch records.
TEST(JobReport, AProcessesLaunchesAreReadAgainFromItsFile) {
  char name[] = "/tmp/job_report_test.XXXXXX";
  int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  close(fd);
  auto launch = [](int pid, int seq) {
    return "{\"type\":\"launch\",\"time\":1,\"pid\":" + std::to_string(pid) +
           ",\"launch\":{\"seq\":" + std::to_string(seq) + "}}\n";
  };
  std::string text = start(0, 10) + launch(10, 1) + start(1, 20) + launch(20, 1) + launch(10, 2) + kSummary;
  std::ofstream(name) << text;
  JobReader reader;
  reader.begin_file(name);
  ASSERT_TRUE(for_each_line_in_file(name, [&](std::string_view line) { reader.add_line(line); }));
  reader.end_file();
  std::vector<ProcessOutcome> job = reader.take();
  ASSERT_EQ(job.size(), 2u);
  std::vector<std::vector<double>> seen(2);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(for_each_launch(
        job[i], [&](const Json& record) { seen[i].push_back(number_member(record, "pid")); }));
  }
  EXPECT_EQ(seen[0], (std::vector<double>{10, 10}));
  EXPECT_EQ(seen[1], (std::vector<double>{20}));
  std::remove(name);
  std::string problem;
  EXPECT_FALSE(for_each_launch(
      job[0], [](const Json&) {}, &problem));
  EXPECT_EQ(problem, "No such file or directory");
}

// Lines are read a piece at a time: one across the pieces' boundary, one longer than a piece, a last one
// without its newline.
TEST(JobReport, AFileIsReadLineByLine) {
  char name[] = "/tmp/job_report_lines.XXXXXX";
  int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  close(fd);
  std::vector<std::string> lines = {std::string((1 << 20) - 3, 'a'), "bcdef", std::string(3 << 20, 'g'), "",
                                    "last"};
  {
    std::ofstream file(name, std::ios::binary);
    for (size_t i = 0; i < lines.size(); ++i) file << lines[i] << (i + 1 < lines.size() ? "\n" : "");
  }
  std::vector<std::string> read;
  ASSERT_TRUE(for_each_line_in_file(name, [&](std::string_view line) { read.emplace_back(line); }));
  std::remove(name);
  lines.erase(lines.begin() + 3);  // empty lines are skipped
  EXPECT_EQ(read, lines);
}

// Issue 40, N9: the C1 controls (U+0080..U+009F, CSI among them) are escaped as C0 and DEL are; other UTF-8
// is kept.
TEST(JobReport, PrintableEscapesC1ControlsAndKeepsUtf8) {
  EXPECT_EQ(printable("a\xc2\x9b"
                      "2J\x1b\x7f"),
            "a\\xc2\\x9b2J\\x1b\\x7f");
  EXPECT_EQ(printable("caf\xc3\xa9 \xc2\xa0\xe2\x82\xac"), "caf\xc3\xa9 \xc2\xa0\xe2\x82\xac");
  // A byte of no well-formed UTF-8 sequence, a lone C1 byte (0x9B: CSI to an 8-bit terminal) among them, is
  // escaped; so is a sequence cut at the limit.
  EXPECT_EQ(printable("\xc2"), "\\xc2");
  EXPECT_EQ(printable("a\x9b"
                      "2Jb\x80\xff\xe2\x82"),
            "a\\x9b2Jb\\x80\\xff\\xe2\\x82");
  EXPECT_EQ(printable("\xe0\x9b\xbf \xed\xa0\x80"),
            "\\xe0\\x9b\\xbf \\xed\\xa0\\x80");                                  // overlong, surrogate
  EXPECT_EQ(printable("\xf0\x9f\x98\x80\xc4\x80"), "\xf0\x9f\x98\x80\xc4\x80");  // U+1F600, U+0100: kept
  EXPECT_EQ(printable("ab\xc3\xa9", 3), "ab\\xc3...(4 bytes)");
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
