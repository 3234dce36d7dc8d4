// Jobs of several processes on the simulated stack: one report per rank (%r), `cuda-blockrun report` naming
// the rank that failed first and its culprit, and --ranks leaving the other ranks untouched; with the ranks
// given by hand (RANK, as torchrun sets it) and under Open MPI's mpirun (OMPI_COMM_WORLD_RANK), as
// `mpirun -n N cuda-blockrun -- ./app` (docs/distributed.md).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "sim_programs.h"
#include "../sanitized_build.h"

namespace blockrun::testing {
namespace {

const std::string kMpirun = CUDA_BLOCKRUN_MPIRUN;  // "" where Open MPI is not installed
const std::string kAppSource = CUDA_BLOCKRUN_SOURCE_DIR "/tests/programs/cuda_app.cpp";

// Nothing of a launcher the test itself may run under.
Env clean(Env env) {
  for (const char* variable : {"RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})
    env.emplace(variable, "<unset>");
  // Nor a job of the machine's that runs the tests: each invocation here is a run of its own unless told.
  for (const char* variable :
       {"CUDA_BLOCKRUN_RUN_ID", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid"})
    env.emplace(variable, "<unset>");
  env["LD_LIBRARY_PATH"] = kSimLib;
  return env;
}

std::string fresh_directory(const std::string& name) {
  std::string directory = ::testing::TempDir() + name;
  run_process({"/bin/rm", "-rf", directory}, {});
  mkdir(directory.c_str(), 0755);
  return directory;
}

std::string launch_line() {
  return kAppSource + ":" + std::to_string(marker_line(kAppSource, "LAUNCH_DEFAULT"));
}

// mpirun as the test's user (root in CI: Open MPI refuses root unless told), more ranks than cores allowed;
// `env`: more for every rank.
ProcessResult mpirun(int ranks, const std::vector<std::string>& command, Env env = {}) {
  std::vector<std::string> argv = {kMpirun, "--oversubscribe", "-n", std::to_string(ranks)};
  argv.insert(argv.end(), command.begin(), command.end());
  env.insert({{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}});
  return run_process(argv, clean(std::move(env)));
}

// A shell command for each rank: `by_rank` maps a rank to its CUDA_SIM_FAULT (none for the others);
// `wait_for` makes that rank start only once the file holds a first error (so that it fails after the other).
// Each rank then exits 0 whatever the program did: mpirun ends the whole job as soon as one rank exits
// otherwise, and the test needs every rank to run to its end.
std::string rank_script(const std::string& directory, const std::map<int, std::string>& by_rank,
                        const std::map<int, std::string>& wait_for = {}) {
  std::string script = "r=$OMPI_COMM_WORLD_RANK; ";
  for (const auto& [rank, file] : wait_for) {
    script += "if [ $r = " + std::to_string(rank) +
              " ]; then for i in $(seq 200); do grep -qs first_error '" + file +
              "' && break; sleep 0.05; done; fi; ";
  }
  for (const auto& [rank, fault] : by_rank)
    script += "if [ $r = " + std::to_string(rank) + " ]; then export CUDA_SIM_FAULT='" + fault + "'; fi; ";
  return script + "'" + kApp + "' steps > '" + directory + "/out.'$r; exit 0";
}

TEST(Distributed, TheReportNamesTheRankThatFailedFirst) {
  // Ranks as torchrun gives them (RANK), run one after the other: rank 1 faults (found by breadcrumbs), rank
  // 2 faults later in another kernel, rank 0 runs clean. The faults are first seen by the final cudaMemcpy.
  std::string directory = fresh_directory("job_by_hand");
  std::string pattern = directory + "/r.%r.jsonl";
  for (const auto& [rank, fault] :
       std::vector<std::pair<int, std::string>>{{0, ""}, {1, "stencil:13"}, {2, "scale:15"}}) {
    Env env = clean({{"RANK", std::to_string(rank)}, kSurfaceAtSync});
    if (!fault.empty()) env["CUDA_SIM_FAULT"] = fault;
    ProcessResult r = run_process({kWrapper, "--breadcrumbs", "--report", pattern, "--", kApp, "steps"}, env);
    EXPECT_EQ(r.status, fault.empty() ? 0 : 1) << r.err;
  }
  ProcessResult merged = run_process({kWrapper, "report", directory}, {});
  EXPECT_EQ(merged.status, 1) << merged.err;  // a process failed: the job fails
  EXPECT_TRUE(contains(merged.out, "3 processes (3 report files) on ")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "\nfirst to fail: rank 1 (pid ")) << merged.out;
  EXPECT_TRUE(
      contains(merged.out,
               "  kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, "
               "launch #38 (stencil#13)\n"
               "  error: cudaErrorIllegalAddress (an illegal memory access was encountered), returned by "
               "cudaMemcpy\n"
               "  launched at " +
                   launch_line()))
      << merged.out;
  EXPECT_TRUE(contains(merged.out, "\nafter it:\n  rank 2 (pid ")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "in kernel scale(float*, int, float), launch #45")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "\nwithout a failure of their own:\n  rank 0 (pid ")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "exited without a CUDA error (60 launches)")) << merged.out;

  ProcessResult json =
      run_process({kWrapper, "report", "--json", directory + "/r.1.jsonl", directory + "/r.0.jsonl"}, {});
  EXPECT_EQ(json.status, 1) << json.err;
  // Only the clean rank: 0.
  EXPECT_EQ(run_process({kWrapper, "report", directory + "/r.0.jsonl"}, {}).status, 0);
  EXPECT_TRUE(contains(json.out, "{\"type\":\"job\",\"processes\":2,")) << json.out;
  EXPECT_TRUE(contains(json.out, "\"first_failure\":0,")) << json.out;
}

// The job verdict's next step, followed as printed: without breadcrumbs rank 1's fault has only suspects, and
// `report` says to run the job again with `--ranks 1 --block RULE` added; pasted into a shell before the
// job's own options, it blocks in rank 1 only, and rank 1's log then names the culprit exactly, with its call
// site.
TEST(Distributed, TheVerdictsNextStepFollowedAsPrintedPinsTheCulpritInItsRank) {
  std::string directory = fresh_directory("job_next_step");
  std::string pattern = directory + "/r.%r.jsonl";
  auto job = [&](const std::string& added, int rank) {
    Env env = clean({{"RANK", std::to_string(rank)}, kSurfaceAtSync});
    if (rank == 1) env["CUDA_SIM_FAULT"] = "stencil:13";
    return run_process(
        {"/bin/sh", "-c", "exec \"$0\" " + added + " --breadcrumbs=0 --report \"$1\" -- \"$2\" steps",
         kWrapper, pattern, kApp},
        env);
  };
  for (int rank : {0, 1}) job("", rank);
  ProcessResult verdict = run_process({kWrapper, "report", "--json", directory}, {});
  const std::string key = "\"pin_command\":\"";
  size_t at = verdict.out.find(key);
  ASSERT_NE(at, std::string::npos) << verdict.out;
  std::string next =
      verdict.out.substr(at + key.size(), verdict.out.find('"', at + key.size()) - at - key.size());
  ASSERT_EQ(next.rfind("--ranks 1 --block ", 0), 0u) << verdict.out;
  ProcessResult pinned = job(next, 1);
  EXPECT_TRUE(contains(pinned.err, "launch #38 (stencil#13), blocked")) << pinned.err;
  EXPECT_TRUE(contains(pinned.err, "  launched at " + launch_line())) << pinned.err;
  ProcessResult other = job(next, 0);
  EXPECT_EQ(other.status, 0) << other.err;
  EXPECT_FALSE(contains(other.err, "blocked")) << other.err;
}

// Issue 19: running again with the same --report path appended to the file, and the merger called the first
// run's process the first to fail. Each wrapper invocation is a run of its own.
TEST(Distributed, ARunIsNotMergedWithTheRunBeforeItInTheSameFile) {
  std::string directory = fresh_directory("job_again");
  std::string report = directory + "/crash.jsonl";
  Env faulty = clean({{"CUDA_SIM_FAULT", "stencil:13"}, kSurfaceAtSync});
  EXPECT_EQ(run_process({kWrapper, "--report", report, "--", kApp, "steps"}, faulty).status, 1);
  EXPECT_EQ(run_process({kWrapper, "--report", report, "--", kApp, "steps"}, clean({})).status, 0);
  ProcessResult merged = run_process({kWrapper, "report", report}, {});
  EXPECT_EQ(merged.status, 0) << merged.out;
  EXPECT_TRUE(contains(merged.out, "1 process (1 report file) on ")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "note: " + report +
                                       " also holds 1 process of earlier runs, left out (the report path was "
                                       "used again)\n"))
      << merged.out;
  EXPECT_FALSE(contains(merged.out, "first to fail")) << merged.out;
  // A run id given to both (one job) keeps both.
  Env same_run = clean({{"CUDA_BLOCKRUN_RUN_ID", "job-1"}});
  std::string shared = directory + "/shared.jsonl";
  EXPECT_EQ(run_process({kWrapper, "--report", shared, "--", kApp, "steps"}, same_run).status, 0);
  EXPECT_EQ(run_process({kWrapper, "--report", shared, "--", kApp, "steps"}, same_run).status, 0);
  merged = run_process({kWrapper, "report", shared}, {});
  EXPECT_TRUE(contains(merged.out, "2 processes (1 report file) on ")) << merged.out;
  EXPECT_TRUE(contains(read_file(shared), "\"run\":\"job-1\"")) << read_file(shared);
}

TEST(Distributed, ReportRefusesWhatItCannotRead) {
  std::string directory = fresh_directory("job_empty");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"report"},
                                               {"report", directory},
                                               {"report", directory + "/none.jsonl"},
                                               {"report", "--yaml", directory}}) {
    std::vector<std::string> argv = {kWrapper};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = run_process(argv, {});
    EXPECT_EQ(r.status, 2) << args.back();
    EXPECT_TRUE(contains(r.err, "cuda-blockrun: report: ")) << r.err;
  }
  ProcessResult misspelt = run_process({kWrapper, "report", "--jsno", directory}, {});
  EXPECT_EQ(misspelt.status, 2);
  EXPECT_TRUE(contains(
      misspelt.err,
      "cuda-blockrun: report: unknown option '--jsno' (did you mean '--json'?) (accepted: --json, --trace "
      "OUT.json, --force, --help)\n"))
      << misspelt.err;
}

// In the sanitizer builds (kSanitizedBuild) the programs' own sanitizer takes over the fatal signals (see
// lifecycle_test.cpp).
TEST(Distributed, ARankStuckInACollectiveIsToldApartFromTheRankThatFaulted) {
  if (kSanitizedBuild) GTEST_SKIP() << "the test program's own sanitizer handles its signals";
  std::string directory = fresh_directory("job_stuck");
  std::string pattern = directory + "/r.%r.jsonl";
  // Rank 0 faults; rank 1 waits in its all-reduce until its watchdog aborts it (the injected fault models the
  // all-reduce that never completes: nothing may see it, so it surfaces only at a wait).
  ProcessResult faulted =
      run_process({kWrapper, "--breadcrumbs", "--report", pattern, "--", kApp, "steps"},
                  clean({{"RANK", "0"}, {"CUDA_SIM_FAULT", "stencil:13"}, kSurfaceAtSync}));
  ProcessResult stuck = run_process(
      {kWrapper, "--breadcrumbs", "--report", pattern, "--", kApp, "stuck-collective"},
      clean(
          {{"RANK", "1"}, {"CUDA_SIM_FAULT", "ncclDevKernel_AllReduce_Sum_f32_RING_LL:1"}, kSurfaceAtSync}));
  EXPECT_EQ(stuck.status, 128 + SIGABRT) << stuck.err;
  // RANK is set: each line carries the process id and the rank, the signal handler's too.
  EXPECT_TRUE(std::regex_search(
      stuck.err,
      std::regex("\\[cuda-blockrun [0-9]+ rank 1\\]   not completed \\(breadcrumbs\\): kernel "
                 "ncclDevKernel_AllReduce_Sum_f32_RING_LL\\(ncclDevKernelArgsStorage<4096ul>\\)"
                 "<<<\\(8,1,1\\), \\(512,1,1\\), 0, 0x[0-9a-f]+>>> \\(NCCL AllReduce\\), launch #3 "
                 "\\(ncclDevKernel_AllReduce_Sum_f32_RING_LL#1\\)\n")))
      << stuck.err;
  std::string record = read_file(directory + "/r.1.jsonl");
  EXPECT_TRUE(contains(record,
                       "\"first_error_seen\":false,\"in_flight\":[{\"seq\":3,\"kernel\":"
                       "\"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
                       "\"collective\":\"AllReduce\",\"stream\":\"0x"))
      << record;
  EXPECT_TRUE(contains(record, "\"collective\":\"AllReduce\",\"stream\":\"0x")) << record;
  EXPECT_TRUE(contains(record, "\"unfinished\":true}")) << "its own breadcrumb not written: " << record;
  ProcessResult merged = run_process({kWrapper, "report", directory}, {});
  EXPECT_TRUE(contains(merged.out, "\nfirst to fail: rank 0 (pid ")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "\nafter it:\n  rank 1 (pid ")) << merged.out;
  EXPECT_TRUE(
      contains(merged.out,
               "fatal signal SIGABRT sent to it (a watchdog's abort(), the launcher, a kill), no CUDA error "
               "seen; stuck in NCCL AllReduce (launch #3 had not completed)\n"))
      << merged.out;

  // With one write per 4 launches the all-reduce had none of its own: it is listed, with the launches before
  // it on its stream and the other stream's, as not known to have completed, and said so.
  std::string every_directory = fresh_directory("job_stuck_every_4");
  ProcessResult every = run_process(
      {kWrapper, "--breadcrumbs", "--breadcrumb-every", "4", "--report", every_directory + "/r.%r.jsonl",
       "--", kApp, "stuck-collective"},
      clean(
          {{"RANK", "1"}, {"CUDA_SIM_FAULT", "ncclDevKernel_AllReduce_Sum_f32_RING_LL:1"}, kSurfaceAtSync}));
  EXPECT_EQ(every.status, 128 + SIGABRT) << every.err;
  EXPECT_TRUE(contains(every.err,
                       "]   not known to have completed (breadcrumbs): kernel "
                       "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"))
      << every.err;
  EXPECT_FALSE(contains(every.err, "]   not completed (breadcrumbs)")) << every.err;
  ProcessResult every_merged = run_process({kWrapper, "report", every_directory}, {});
  EXPECT_TRUE(
      contains(every_merged.out,
               "no CUDA error seen; maybe in NCCL AllReduce (launch #3 not known to have completed)\n"))
      << every_merged.out;

  // torchrun ends the other ranks with SIGTERM when one fails (as on the 2-GPU machine): the stuck rank's
  // record is written then too, and it dies of the signal as without the shim.
  std::string term_directory = fresh_directory("job_stuck_term");
  std::string term_pattern = term_directory + "/r.%r.jsonl";
  Env stuck_env =
      clean({{"RANK", "1"}, {"CUDA_SIM_FAULT", "ncclDevKernel_AllReduce_Sum_f32_RING_LL:1"}, kSurfaceAtSync});
  ProcessResult alone = run_process({kApp, "stuck-collective-term"}, stuck_env);
  ProcessResult terminated = run_process(
      {kWrapper, "--breadcrumbs", "--report", term_pattern, "--", kApp, "stuck-collective-term"}, stuck_env);
  EXPECT_EQ(alone.status, 128 + SIGTERM);
  EXPECT_EQ(terminated.status, alone.status) << terminated.err;
  EXPECT_EQ(terminated.out, alone.out);
  EXPECT_TRUE(std::regex_search(
      terminated.err, std::regex("\\[cuda-blockrun [0-9]+ rank 1\\] fatal signal SIGTERM \\(sent to the "
                                 "process\\) after 4 launches, 0 blocked; no CUDA error had been seen\n")))
      << terminated.err;
  std::string term_record = read_file(term_directory + "/r.1.jsonl");
  EXPECT_TRUE(contains(term_record, "\"signal\":\"SIGTERM\"")) << term_record;
  EXPECT_TRUE(contains(term_record, "\"collective\":\"AllReduce\"")) << term_record;
}

class Mpirun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kMpirun.empty()) GTEST_SKIP() << "mpirun (Open MPI) is not installed: apt-get install openmpi-bin";
  }
};

TEST_F(Mpirun, TwoRanksOneFaults) {
  std::string directory = fresh_directory("job_mpi2");
  ProcessResult job =
      mpirun(2,
             {kWrapper, "--breadcrumbs", "--report", directory + "/r.%r.jsonl", "--log",
              directory + "/log.%r", "--", "/bin/sh", "-c", rank_script(directory, {{1, "stencil:13"}})},
             {kSurfaceAtSync});  // the program's output: the fault first seen by the final cudaMemcpy
  EXPECT_EQ(job.status, 0) << job.err;
  EXPECT_EQ(read_file(directory + "/out.1"),
            "cudaMemcpy returned 700\ncudaGetLastError returned 700\ndone\n");
  EXPECT_EQ(read_file(directory + "/out.0"), "done\n");
  ProcessResult merged = run_process({kWrapper, "report", directory}, {});
  EXPECT_TRUE(contains(merged.out, "2 processes (2 report files) on ")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "\nfirst to fail: rank 1 (pid ")) << merged.out;
  EXPECT_TRUE(contains(merged.out,
                       "  kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), (256,1,1), 0, "
                       "0x0>>>, launch #38 (stencil#13)\n"))
      << merged.out;
  EXPECT_TRUE(contains(merged.out, "  launched at " + launch_line())) << merged.out;
  EXPECT_TRUE(contains(merged.out, "\nwithout a failure of their own:\n  rank 0 (pid ")) << merged.out;
}

TEST_F(Mpirun, FourRanksTheFirstFaultIsNamedAndTheLaterOneFollows) {
  std::string directory = fresh_directory("job_mpi4");
  // Rank 2 faults; rank 0 faults in another kernel, starting only once rank 2's error is in its report.
  ProcessResult job = mpirun(
      4, {kWrapper, "--breadcrumbs", "--report", directory + "/r.%r.jsonl", "--log", directory + "/log.%r",
          "--", "/bin/sh", "-c",
          rank_script(directory, {{2, "stencil:13"}, {0, "scale:15"}}, {{0, directory + "/r.2.jsonl"}})});
  EXPECT_EQ(job.status, 0) << job.err;
  ProcessResult merged = run_process({kWrapper, "report", directory}, {});
  EXPECT_TRUE(contains(merged.out, "4 processes (4 report files) on ")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "\nfirst to fail: rank 2 (pid ")) << merged.out;
  EXPECT_TRUE(contains(merged.out,
                       "  kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), (256,1,1), 0, "
                       "0x0>>>, launch #38 (stencil#13)\n"))
      << merged.out;
  EXPECT_TRUE(contains(merged.out, "\nafter it:\n  rank 0 (pid ")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "in kernel scale(float*, int, float), launch #45")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "\nwithout a failure of their own:\n  rank 1 (pid ")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "\n  rank 3 (pid ")) << merged.out;
}

// Every rank logging to mpirun's one terminal: each line says which process and rank wrote it.
TEST_F(Mpirun, RanksSharingOneTerminalAreToldApartLineByLine) {
  std::string directory = fresh_directory("job_mpi_terminal");
  ProcessResult job = mpirun(
      2, {kWrapper, "--block", "all", "--", "/bin/sh", "-c", rank_script(directory, {{1, "stencil:13"}})});
  EXPECT_EQ(job.status, 0) << job.err;
  std::map<std::string, std::set<std::string>> pids_by_rank;
  std::istringstream lines(job.err);
  const std::regex prefixed("^\\[cuda-blockrun ([0-9]+) rank ([01])\\] .*");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("[cuda-blockrun", 0) != 0) continue;  // mpirun's own
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, prefixed)) << line;
    pids_by_rank[match[2]].insert(match[1]);
  }
  ASSERT_EQ(pids_by_rank.size(), 2u) << job.err;
  EXPECT_EQ(pids_by_rank["0"].size(), 1u) << job.err;
  EXPECT_EQ(pids_by_rank["1"].size(), 1u) << job.err;
  EXPECT_NE(*pids_by_rank["0"].begin(), *pids_by_rank["1"].begin());
  std::string rank1 = "[cuda-blockrun " + *pids_by_rank["1"].begin() + " rank 1]";
  // Rank 1's own lines, in its order: the other rank's lines may come between them on the shared terminal
  // (seen once in the ASan tree: rank 0's summary between rank 1's first two lines).
  std::string rank1_lines;
  std::istringstream all_lines(job.err);
  for (std::string line; std::getline(all_lines, line);)
    if (line.rfind(rank1, 0) == 0) rank1_lines += line + "\n";
  EXPECT_TRUE(
      contains(rank1_lines, rank1 +
                                " first error: cudaErrorIllegalAddress (an illegal memory access was "
                                "encountered), returned by cudaStreamSynchronize (blocking synchronize "
                                "after the launch)\n" +
                                rank1 + "   in kernel stencil(float*, float const*, int, long long)"))
      << job.err;
  EXPECT_TRUE(contains(job.err, "[cuda-blockrun " + *pids_by_rank["0"].begin() +
                                    " rank 0] summary: 60 launches, 60 blocked; no CUDA errors\n"))
      << job.err;
}

TEST_F(Mpirun, ARankFilterLeavesTheOtherRanksUntouched) {
  std::string directory = fresh_directory("job_mpi_ranks");
  // Every launch blocked, in rank 1 only; both ranks fault at the same launch.
  ProcessResult job =
      mpirun(2, {kWrapper, "--ranks", "1", "--block", "all", "--report", directory + "/r.%r.jsonl", "--log",
                 directory + "/log.%r", "--", "/bin/sh", "-c",
                 "export CUDA_SIM_STATS='" + directory + "/stats.'$OMPI_COMM_WORLD_RANK; " +
                     rank_script(directory, {{0, "stencil:13"}, {1, "stencil:13"}})});
  EXPECT_EQ(job.status, 0) << job.err;
  // Rank 1: blocked at the culprit, which returns the error itself.
  EXPECT_EQ(read_file(directory + "/out.1").substr(0, 23), "launch 38 returned 700\n");
  EXPECT_TRUE(contains(read_file(directory + "/log.1"), "summary: 60 launches, 38 blocked;"));
  // Rank 0: as without the shim: no report, no log, its own output, and no synchronize the program did not
  // make.
  struct stat info {};
  EXPECT_NE(stat((directory + "/r.0.jsonl").c_str(), &info), 0);
  EXPECT_NE(stat((directory + "/log.0").c_str(), &info), 0);
  ProcessResult alone =
      run_process({kApp, "steps"},
                  clean({{"CUDA_SIM_FAULT", "stencil:13"}, {"CUDA_SIM_STATS", directory + "/stats.alone"}}));
  EXPECT_EQ(read_file(directory + "/out.0"), alone.out);
  EXPECT_EQ(read_file(directory + "/stats.0"), read_file(directory + "/stats.alone"));
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
